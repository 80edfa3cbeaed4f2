// The build: type-check every package (tsc --noEmit), then bundle them and the viewer (rollup). It
// records a digest of what it was built from; `--if-changed` (npm test's pretest) skips the build
// when the sources, the build's configuration and the lock are exactly those of the last build that
// succeeded, and every output folder is there. `npm ci` builds (prepare), so `npm ci && npm test`
// builds once; an edited source builds again.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stamp = join(root, 'node_modules', '.cache', 'npyts-build', 'inputs.sha256');
const packages = readdirSync(join(root, 'packages')).filter((p) => existsSync(join(root, 'packages', p, 'src')));

/** Every file under `dir` (relative to the root), sorted. */
function filesUnder(dir) {
  if (!existsSync(join(root, dir))) return [];
  return readdirSync(join(root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath ?? e.path, e.name).slice(root.length + 1))
    .sort();
}

/** A digest of what the build reads: sources, the build's configuration, package manifests and the lock. */
function inputsDigest() {
  const files = [
    ...packages.flatMap((p) => [...filesUnder(`packages/${p}/src`), `packages/${p}/package.json`]),
    ...filesUnder('viewer/src'),
    'rollup.config.mjs',
    'tsconfig.json',
    'package.json',
    'package-lock.json',
    'scripts/build.mjs',
  ];
  const hash = createHash('sha256');
  for (const f of files)
    hash
      .update(`${f}\0`)
      .update(readFileSync(join(root, f)))
      .update('\0');
  return hash.digest('hex');
}

// The folders rollup writes: each package whose manifest names its dist folder ("dist", "./dist/…"), and the viewer's.
const outputs = [
  ...packages.filter((p) => readFileSync(join(root, 'packages', p, 'package.json'), 'utf8').match(/["/]dist["/]/)).map((p) => `packages/${p}/dist`),
  'viewer/dist',
];
const digest = inputsDigest();
if (process.argv.includes('--if-changed')) {
  const last = existsSync(stamp) ? readFileSync(stamp, 'utf8') : '';
  if (last === digest && outputs.every((o) => existsSync(join(root, o)))) {
    console.log('build: up to date (the sources are those of the last build)');
    process.exit(0);
  }
}

const bin = (name) => join(root, 'node_modules', name);
for (const [what, args] of [
  ['tsc', [bin('typescript/bin/tsc'), '-p', 'tsconfig.json', '--noEmit']],
  ['rollup', [bin('rollup/dist/bin/rollup'), '-c', 'rollup.config.mjs']],
]) {
  const r = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) {
    console.error(`build: ${what} failed`);
    process.exit(r.status ?? 1);
  }
}
mkdirSync(dirname(stamp), { recursive: true });
writeFileSync(stamp, digest);
