// A throwaway nginx on 127.0.0.1 serving one directory, for HTTP range tests and the bench.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

/** The nginx binary, installing Debian's package when it is missing. */
export function ensureNginx() {
  const has = () => spawnSync('sh', ['-c', 'command -v nginx || test -x /usr/sbin/nginx']).status === 0;
  if (!has()) spawnSync('sh', ['-c', 'apt-get update -qq && apt-get install -y -qq nginx-light || apt-get install -y -qq nginx'], { stdio: 'ignore' });
  if (!has()) throw new Error('nginx is needed for the HTTP range tests and could not be installed');
  return existsSync('/usr/sbin/nginx') ? '/usr/sbin/nginx' : 'nginx';
}

export async function waitForServer(url, isOurs = () => true) {
  for (let i = 0; i < 400; i++) {
    try {
      if (isOurs(await fetch(url))) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`${url} did not come up`);
}

/** The bearer token nginx wants for files under `/private/`. */
export const TEST_TOKEN = 'npyts-test-token';

/** Start nginx serving `root`; returns its base URL and a stop function. */
export async function startNginx(root) {
  const nginx = ensureNginx();
  // The port is free when picked, but another test's server can take it before nginx binds it (then
  // nginx exits, and the other server would answer in its place): nginx's own answer is awaited,
  // and a new port tried when it exits first.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const conf = mkdtempSync(join(tmpdir(), 'npyts-nginx-'));
    mkdirSync(join(conf, 'tmp'));
    writeFileSync(
      join(conf, 'nginx.conf'),
      `user root; worker_processes 1; daemon off; pid ${conf}/nginx.pid; error_log ${conf}/error.log;
events { worker_connections 64; }
http { access_log off; client_body_temp_path ${conf}/tmp; proxy_temp_path ${conf}/tmp; fastcgi_temp_path ${conf}/tmp; uwsgi_temp_path ${conf}/tmp; scgi_temp_path ${conf}/tmp;
  types { text/javascript js mjs; text/html html; application/octet-stream npy npz; }
  server { listen 127.0.0.1:${port}; root ${root};
    # Files under /private/ need the token the tests' fetch hooks add.
    location /private/ { if ($http_authorization != "Bearer ${TEST_TOKEN}") { return 401; } } } }`,
    );
    const proc = spawn(nginx, ['-c', join(conf, 'nginx.conf'), '-p', conf], { stdio: 'ignore' });
    const exited = new Promise((resolve) => proc.once('exit', () => resolve(false)));
    const base = `http://127.0.0.1:${port}`;
    const up = await Promise.race([waitForServer(`${base}/`, (r) => /^nginx/.test(r.headers.get('server') ?? '')).then(() => true), exited]);
    if (up) return { base, stop: () => proc.kill('SIGTERM') };
    if (attempt === 5) throw new Error(`nginx did not start (see ${conf}/error.log)`);
  }
}
