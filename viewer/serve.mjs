// `npm run viewer`: serve the viewer (and the demo's archive) on 127.0.0.1, with HTTP range support
// so that big files can be opened by URL. Options: --port N (default 8080), --data DIR (served at /data/).
import { createReadStream, existsSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const opt = (name, fallback) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : fallback; };
const data = opt('--data');
const types = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css', '.png': 'image/png', '.json': 'application/json' };

/** The file a URL path names, never outside its mount. */
function fileFor(mounts, pathname) {
  for (const [prefix, root] of mounts) {
    if (!pathname.startsWith(prefix)) continue;
    const path = normalize(join(root, decodeURIComponent(pathname.slice(prefix.length)) || 'index.html'));
    if (path !== root && !path.startsWith(root + sep)) return null;
    if (existsSync(path) && statSync(path).isDirectory()) return join(path, 'index.html');
    return path;
  }
  return null;
}

/** Serve the viewer on host:port (0 picks a free port); `dataDir` is served at /data/. */
export function startViewer({ port = 8080, host = '127.0.0.1', dataDir } = {}) {
  const mounts = [['/demo/', join(here, '..', 'demo')], ['/', here]];
  if (dataDir) mounts.unshift(['/data/', resolve(dataDir)]);
  const server = createServer((req, res) => {
    const path = fileFor(mounts, new URL(req.url, 'http://x').pathname);
    if (!path || !existsSync(path)) { res.writeHead(404).end('not found'); return; }
    const size = statSync(path).size;
    const headers = { 'content-type': types[extname(path)] ?? 'application/octet-stream', 'accept-ranges': 'bytes', 'cache-control': 'no-store' };
    const m = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? '');
    if (!m) { res.writeHead(200, { ...headers, 'content-length': size }); createReadStream(path).pipe(res); return; }
    let start = m[1] === '' ? size - Number(m[2]) : Number(m[1]);
    let end = m[1] === '' || m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
    if (start < 0) start = 0;
    if (start >= size || start > end) { res.writeHead(416, { 'content-range': `bytes */${size}` }).end(); return; }
    res.writeHead(206, { ...headers, 'content-length': end - start + 1, 'content-range': `bytes ${start}-${end}/${size}` });
    createReadStream(path, { start, end }).pipe(res);
  });
  return new Promise((ok) => server.listen(port, host, () => ok(server)));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const server = await startViewer({ port: Number(opt('--port', 8080)), dataDir: data });
  const { port } = server.address();
  console.log(`npyts viewer: http://127.0.0.1:${port}/  (Ctrl-C to stop)${data ? `; ${data} is served at /data/` : ''}`);
}
