// `node bench/refs.mjs DIR [--quick]`: making a reference set (referencesOf, issue 69) of many .npy
// files joined along axis 0 (10 000 files; 1 000 with --quick), against numpy reading each file's
// header, in interleaved rounds (bench/paired.mjs); and dask's sum over the set against dask's sum over
// the same files np.load'ed (Debian's /usr/bin/python3, with zarr and dask), interleaved in one
// process. Prints JSON.
import { execFileSync } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { referencesOf } from '@npyts/core/node';
import { paired, startNumpy } from './paired.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const [dir] = process.argv.slice(2);
if (!dir) throw new Error('usage: node bench/refs.mjs DIR [--quick]');
const quick = process.argv.includes('--quick');
const side = join(here, 'refs_side.py');
const count = quick ? 1000 : 10_000;
const made = JSON.parse(execFileSync('python3', [side, 'make', dir, String(count)], { encoding: 'utf8' }));
const files = readdirSync(dir)
  .filter((f) => /^part-\d+\.npy$/.test(f))
  .sort()
  .map((f) => join(dir, f));
const makeSet = () => referencesOf(files, { concat: 0, zarrFormat: 2 });
const python = startNumpy(side, dir);
let headers;
try {
  headers = await paired(python, 'headers', makeSet, { rounds: quick ? 3 : 5, repeats: 1 });
} finally {
  await python.close();
}
const refs = join(dir, 'refs.json');
writeFileSync(refs, JSON.stringify(await makeSet()));
const dask = JSON.parse(execFileSync('/usr/bin/python3', [side, 'dask', dir, refs, String(quick ? 3 : 5)], { encoding: 'utf8' }));
console.log(JSON.stringify({ made, headers, dask }));
