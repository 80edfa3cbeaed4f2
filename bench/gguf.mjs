// `node bench/gguf.mjs DIR [--quick] [--full]`: dequantizing a Q4_K GGUF file to float32 (open, then
// every tensor), against gguf-py (GGUFReader and gguf.quants.dequantize) in interleaved rounds
// (bench/paired.mjs); and against reading as many float32 bytes from the page cache (loadNpySync
// of a .npy of that size), interleaved the same way. Prints JSON.
//
// Then quantizing: a float32 tensor of 64 MiB (16 MiB with --quick) to Q8_0 (encodeGguf of that one
// tensor) against gguf-py's gguf.quants.quantize, interleaved the same way.
//
// `--full` (or NPYTS_BENCH_GGUF_FULL=1, for `npm run bench`) adds the size: a 1 GiB Q4_K file
// of 32 tensors (7 GiB of float32), each tensor dequantized and dropped before the next on every side
// (gguf-py's too), so memory holds one tensor; the float32 side reads a .npy of one tensor's values
// once per tensor. One run per side per round, in a rotating order (each run takes tens of seconds).
import { execFileSync } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GgufFile, encodeGguf } from '@npyts/core';
import { fileSource, loadNpySync } from '@npyts/core/node';
import { medianSeconds, paired, startNumpy, verdict } from './paired.mjs';
import { middleOf } from './timing.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const [dir] = process.argv.slice(2);
if (!dir) throw new Error('usage: node bench/gguf.mjs DIR [--quick] [--full]');
const quick = process.argv.includes('--quick');
const full = process.argv.includes('--full') || process.env.NPYTS_BENCH_GGUF_FULL === '1';
const side = join(here, 'gguf_side.py');
const make = (...args) => JSON.parse(execFileSync('python3', ['-W', 'ignore', side, 'make', dir, ...args.map(String)], { encoding: 'utf8' }));
const log = (s) => process.stderr.write(`${s}\n`);
const made = make(quick ? 8 : 32);
const madeQ8 = JSON.parse(execFileSync('python3', ['-W', 'ignore', side, 'make_q8', dir, String(quick ? 16 : 64)], { encoding: 'utf8' }));
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
const python = startNumpy(side, dir);
try {
  const p = await paired(python, 'gguf_q4k', dequantizeAll, { rounds, repeats: quick ? 1 : 3 });
  rows.push({ op: 'GGUF Q4_K dequantized to float32 (all tensors)', baseline_case: 'gguf-py', ...p, target: 0.5, verdict: verdict(p, 0.5) });
  const q8Input = loadNpySync(join(dir, madeQ8.file));
  const quantize = () => encodeGguf({ 'blk.0.weight': q8Input }, { type: 'q8_0' });
  const q8 = await paired(python, 'gguf_quantize_q8_0', quantize, { rounds, repeats: quick ? 1 : 3 });
  const mib = (madeQ8.values * 4) / 2 ** 20;
  rows.push({ op: `float32 (${mib} MiB) quantized to Q8_0 (encodeGguf)`, baseline_case: 'gguf-py quantize', ...q8, target: 0.1, verdict: verdict(q8, 0.1) });
} finally {
  await python.close();
}
// Against reading the same number of float32 bytes (page cache): interleaved rounds, ratio per round.
const f32 = join(dir, made.f32);
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

let madeFull;
if (full) {
  log('GGUF at 1 GiB: making the file (once; kept in DIR) …');
  madeFull = make(1024, 32, 'q4k-full.gguf', '--per-tensor');
  const fullPath = join(dir, 'q4k-full.gguf');
  const fullF32 = join(dir, madeFull.f32);
  const each = async () => {
    const f = await GgufFile.open(fileSource(fullPath));
    try {
      for (const name of f.names) await f.get(name);
    } finally {
      await f.close();
    }
  };
  const readEach = () => {
    for (let i = 0; i < madeFull.tensors; i++) loadNpySync(fullF32);
  };
  const seconds = async (fn) => {
    const t = process.hrtime.bigint();
    await fn();
    return Number(process.hrtime.bigint() - t) / 1e9;
  };
  // gguf-py in a process of its own per run (`once`): its time is its own measure, without the start.
  const gguf = () => Number(JSON.parse(execFileSync('python3', ['-W', 'ignore', side, 'once', dir, 'gguf_q4k_each'], { encoding: 'utf8' })));
  // Untimed: the file into the page cache, and the dequantizer and the reader warmed up.
  await new Promise((resolve, reject) =>
    createReadStream(fullPath)
      .on('data', () => {})
      .on('end', resolve)
      .on('error', reject),
  );
  await each();
  readEach();
  const fullRounds = 3;
  const t = { ours: [], py: [], f32: [] };
  for (let r = 0; r < fullRounds; r++) {
    // Each side first once in three rounds.
    const order = [
      ['ours', each],
      ['py', gguf],
      ['f32', readEach],
    ];
    for (let k = 0; k < r; k++) order.push(order.shift());
    for (const [who, fn] of order) {
      t[who].push(who === 'py' ? fn() : await seconds(fn));
      log(`  round ${r + 1}: ${who} ${t[who].at(-1).toFixed(2)} s`);
    }
  }
  const row = (baseline, baselineCase, target, op) => {
    const rs = t.ours.map((s, i) => s / baseline[i]);
    const p = { seconds: middleOf(t.ours), baseline: middleOf(baseline), ratio: middleOf(rs), spread: [Math.min(...rs), Math.max(...rs)], rounds: fullRounds };
    return { op, baseline_case: baselineCase, ...p, target, verdict: verdict(p, target) };
  };
  const what = `a 1 GiB Q4_K file (${madeFull.tensors} tensors, ${((madeFull.values * 4) / 2 ** 30).toFixed(1)} GiB of float32), tensor by tensor`;
  rows.push(row(t.py, 'gguf-py', 0.5, `GGUF Q4_K dequantized to float32, ${what}`));
  rows.push(row(t.f32, 'loadNpySync', 3, `GGUF Q4_K dequantized, ${what}, against reading as many float32 bytes`));
}
console.log(JSON.stringify(madeFull ? { made, madeQ8, madeFull, rows } : { made, madeQ8, rows }));
