// `node bench/gguf.mjs DIR [--quick]`: dequantizing a Q4_K GGUF file to float32 (open, then every
// tensor), against gguf-py (GGUFReader and gguf.quants.dequantize) in interleaved rounds
// (bench/paired.mjs); and against reading as many float32 bytes from the page cache (loadNpySync
// of a .npy of that size), interleaved the same way. Prints JSON.
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GgufFile } from '@npyts/core';
import { fileSource, loadNpySync } from '@npyts/core/node';
import { medianSeconds, paired, startNumpy, verdict } from './paired.mjs';
import { middleOf } from './timing.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const [dir] = process.argv.slice(2);
if (!dir) throw new Error('usage: node bench/gguf.mjs DIR [--quick]');
const quick = process.argv.includes('--quick');
const made = JSON.parse(execFileSync('python3', ['-W', 'ignore', join(here, 'gguf_side.py'), 'make', dir, quick ? '8' : '32'], { encoding: 'utf8' }));
const path = join(dir, 'q4k.gguf');
const dequantizeAll = async () => {
  const f = await GgufFile.open(fileSource(path));
  try {
    return await f.getAll();
  } finally {
    await f.close();
  }
};
const rounds = quick ? 3 : 5;
const rows = [];
const python = startNumpy(join(here, 'gguf_side.py'), dir);
try {
  const p = await paired(python, 'gguf_q4k', dequantizeAll, { rounds, repeats: quick ? 1 : 3 });
  rows.push({ op: 'GGUF Q4_K dequantized to float32 (all tensors)', baseline_case: 'gguf-py', ...p, target: 0.5, verdict: verdict(p, 0.5) });
} finally {
  await python.close();
}
// Against reading the same number of float32 bytes (page cache): interleaved rounds, ratio per round.
const f32 = join(dir, 'same-f32.npy');
const readF32 = () => loadNpySync(f32);
await medianSeconds(readF32, 1);
const ratios = [];
const ours = [];
const theirs = [];
for (let r = 0; r < rounds; r++) {
  const a = r % 2 === 0 ? await medianSeconds(dequantizeAll, 1) : null;
  const b = await medianSeconds(readF32, 1);
  const a2 = a ?? (await medianSeconds(dequantizeAll, 1));
  ours.push(a2);
  theirs.push(b);
  ratios.push(a2 / b);
}
const q = { seconds: middleOf(ours), baseline: middleOf(theirs), ratio: middleOf(ratios), spread: [Math.min(...ratios), Math.max(...ratios)], rounds };
rows.push({ op: 'GGUF Q4_K dequantized, against reading as many float32 bytes', baseline_case: 'loadNpySync', ...q, target: 3, verdict: verdict(q, 3) });
console.log(JSON.stringify({ made, rows }));
