// `node bench/ragged.mjs DIR [--quick]`: ragged data as plain .npy files (index + heap, in each
// layout) against numpy's object arrays of the same values, pickled. 1 M short strings (100 k with
// --quick) and 10 000 float32 sequences. Write: the median of 3 saves. Read 100: opening the files
// and reading 100 random elements, the median of 3 (numpy: np.load of the pickle, then 100 items).
// Size: index + heap on disk. Prints one JSON object; `npm run bench` runs it and prints the table.
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadNpySync, openRaggedSync, saveRaggedSync } from '@npyts/core/node';
import { middleOf } from './timing.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const [dir] = process.argv.slice(2);
const quick = process.argv.includes('--quick');
const file = (n) => join(dir, n);
const seconds = (t0) => Number(process.hrtime.bigint() - t0) / 1e9;

const numpy = JSON.parse(execFileSync('python3', [join(here, 'numpy_side.py'), 'ragged', dir, quick ? '1' : '0'], { encoding: 'utf8', maxBuffer: 1 << 26 }));
const strings = readFileSync(file('strings.txt'), 'utf8').split('\n');
const lengths = loadNpySync(file('seq_lengths.npy')).data;
const values = loadNpySync(file('seq_values.npy'));
const sequences = [];
for (let i = 0, at = 0; i < lengths.length; i++) {
  const k = Number(lengths[i]);
  sequences.push({ data: values.data.subarray(at, at + k), shape: [k], dtype: '<f4' });
  at += k;
}

function measure(name, elements, layout) {
  const path = file(`ragged_${name}_${layout}.npy`);
  const writes = [];
  for (let k = 0; k < 3; k++) {
    const t0 = process.hrtime.bigint();
    saveRaggedSync(path, elements, { layout });
    writes.push(seconds(t0));
  }
  let seed = 3;
  const reads = [];
  let heapPath = '';
  for (let k = 0; k < 3; k++) {
    const t0 = process.hrtime.bigint();
    const h = openRaggedSync(path);
    for (let j = 0; j < 100; j++) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      h.get(seed % h.length);
    }
    reads.push(seconds(t0));
    heapPath = h.heapPath;
    h.close();
  }
  return { layout, bytes: statSync(path).size + statSync(heapPath).size, write: middleOf(writes), read100: middleOf(reads) };
}

const out = {
  count: strings.length,
  numpy,
  strings: ['ranges', 'offsets', 'zero-terminated'].map((layout) => measure('strings', strings, layout)),
  sequences: ['ranges', 'offsets'].map((layout) => measure('sequences', sequences, layout)),
};
console.log(JSON.stringify(out));
