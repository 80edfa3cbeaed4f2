// The other runtimes (Node 22, the current Node, Bun, Deno: ~600 MB) live in their own small npm
// project, installed once into a cache keyed by its lockfile, so `npm ci` at the root stays light.
// `npm run runtimes` installs them ahead; the runtime test calls installRuntimes() itself.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installOnce } from '../helpers/install-once.mjs';

const here = dirname(fileURLToPath(import.meta.url));

/** The directory whose node_modules holds the runtimes, installing them first when it is not there. */
export function installRuntimes() {
  const lock = readFileSync(join(here, 'package-lock.json'));
  const key = createHash('sha256').update(lock).digest('hex').slice(0, 16);
  const cache = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'npyts-runtimes');
  const dir = join(cache, key);
  return installOnce(
    dir,
    (d) => existsSync(join(d, 'node_modules', '.package-lock.json')),
    (partial) => {
      for (const f of ['package.json', 'package-lock.json']) copyFileSync(join(here, f), join(partial, f));
      const r = spawnSync('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: partial, encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`npm ci of test/runtimes failed (status ${r.status}):\n${r.stdout}${r.stderr}`);
    },
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(installRuntimes());
