// Runs every uvu suite in test/ in one process and ends with the line `N passed, N failed`.
// Usage: node test/run.mjs [path-fragment...]   (only files whose path, e.g. `npz/npz`, contains a fragment)
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));

// Debian packages the tests drive: unzip (checks our archives), nginx (HTTP range reads),
// chromium (the viewer) and python3-torch (real PyTorch models, with Debian's numpy 1.24).
// Install what is missing, so that `npm ci && npm test` is the whole set-up.
const missing = [
  ['unzip', 'command -v unzip'],
  ['nginx-light', 'command -v nginx || test -x /usr/sbin/nginx'],
  ['chromium', 'test -x /usr/bin/chromium'],
  ['python3-torch', "/usr/bin/python3 -c 'import torch'"],
]
  .filter(([, check]) => spawnSync('sh', ['-c', check], { stdio: 'ignore' }).status !== 0)
  .map(([pkg]) => pkg);
if (missing.length) {
  console.log(`installing Debian packages the tests need: ${missing.join(' ')}`);
  const r = spawnSync('sh', ['-c', `apt-get update -qq && apt-get install -y -qq ${missing.join(' ')}`], { stdio: 'inherit' });
  if (r.status !== 0) console.log(`could not install ${missing.join(' ')}; the tests that need them will fail`);
}
const only = process.argv.slice(2);
// Suites live in folders that mirror packages/core/src (format/, array/, npy/, io/, npz/, pickle/,
// ragged/, node/) plus adapters/, cli/, packages/, apps/ and safety/.
const files = readdirSync(here, { recursive: true })
  .filter((f) => f.endsWith('.test.mjs'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();

// Deferred mode: uvu queues the suites of each imported file and runs them all in `exec`.
globalThis.UVU_DEFER = 1;
const uvu = await import('uvu');
for (const [i, f] of files.entries()) {
  globalThis.UVU_INDEX = i;
  globalThis.UVU_QUEUE.push([f]);
  await import(pathToFileURL(join(here, f)).href);
}

// uvu reports its totals only as text: keep a copy of what it prints to count them.
let printed = '';
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, ...rest) => {
  printed += String(chunk);
  if (printed.length > 1 << 20) printed = printed.slice(-4096);
  return write(chunk, ...rest);
};
await uvu.exec(false);
process.stdout.write = write;

// eslint-disable-next-line no-control-regex
const plain = printed.replace(/\x1b\[[0-9;]*m/g, '');
// uvu's own totals are the last ones printed (a failure message may quote another run's).
const last = (label) => Number([...plain.matchAll(new RegExp(`${label}:\\s+(\\d+)`, 'g'))].at(-1)?.[1] ?? 0);
const total = last('Total');
const passed = last('Passed');
const skipped = last('Skipped');
const failed = total - passed - skipped;
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exitCode = failed > 0 || total === 0 ? 1 : 0;
