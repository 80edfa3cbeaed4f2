// `node bench/onnxruntime-weights.mjs DIR [--quick]`: what withWeights costs on a large state_dict (about
// 500 MB of .safetensors; 32 MB with --quick) swapped into an MLP of large Linear layers exported by
// torch.onnx.export (bench/onnxruntime_side.py makes both). Each case runs in a fresh Node process that
// has loaded the same modules (onnxruntime-node, @npyts/onnxruntime), timing only its operation and
// reporting its peak resident size (process.resourceUsage().maxRSS); cases interleave over rounds, each
// ratio taken within a round, reported as the median with its spread. Rows:
// - withWeights (the initializers pointed into the file) against reading the file once (readFileSync);
// - withWeights { inline: true } (the values copied into the model) against the same;
// - withWeights then InferenceSession.create and one run, against ORT creating a session from the
//   exported model, whose initializers it reads from beside it (the same bytes, loaded by ORT alone).
// The outputs of the swapped session are checked against PyTorch's. Prints one JSON object.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { middleOf } from './timing.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const [mode, dir, which] = process.argv.slice(2);

if (mode === 'child') {
  // One case in this fresh process: modules first (not timed), then the operation.
  const ort = await import('onnxruntime-node');
  const { withWeights, toOrtTensor, fromOrtTensor } = await import('@npyts/onnxruntime');
  const { loadNpy } = await import('@npyts/core/node');
  const at = (f) => join(dir, f);
  const x = toOrtTensor(await loadNpy(at('x.npy')));
  const want = (await loadNpy(at('want.npy'))).data;
  const check = (y) => {
    const got = fromOrtTensor(y).data;
    const scale = want.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    const worst = want.reduce((m, v, i) => Math.max(m, Math.abs(v - got[i])), 0);
    if (!(worst <= 1e-4 * scale)) throw new Error(`the session's output differs from PyTorch's by ${worst} (scale ${scale})`);
  };
  const cases = {
    read: async () => readFileSync(at('big.safetensors')).length,
    pointed: async () => (await withWeights(at('big.onnx'), at('big.safetensors'))).model.length,
    inline: async () => (await withWeights(at('big.onnx'), at('big.safetensors'), { inline: true })).model.length,
    session: async () => {
      const r = await withWeights(at('big.onnx'), at('big.safetensors'));
      const session = await ort.InferenceSession.create(r.model, r.sessionOptions);
      check((await session.run({ x })).y);
    },
    ort: async () => {
      const session = await ort.InferenceSession.create(at('big.onnx'));
      await session.run({ x });
    },
  };
  const t = process.hrtime.bigint();
  await cases[which]();
  const seconds = Number(process.hrtime.bigint() - t) / 1e9;
  console.log(JSON.stringify({ seconds, rss: process.resourceUsage().maxRSS * 1024 }));
  process.exit(0);
}

if (!mode) throw new Error('usage: node bench/onnxruntime-weights.mjs DIR [--quick]');
const quick = process.argv.includes('--quick');
const made = JSON.parse(execFileSync('python3', ['-W', 'ignore', join(here, 'onnxruntime_side.py'), mode, quick ? '32' : '500'], { encoding: 'utf8' }));
const child = (name) => JSON.parse(execFileSync(process.execPath, [fileURLToPath(import.meta.url), 'child', mode, name], { encoding: 'utf8' }));
const pairs = [
  ['withWeights, initializers pointed into the file', 'pointed', 'read', 'reading the file once'],
  ['withWeights { inline: true }', 'inline', 'read', 'reading the file once'],
  ['withWeights + InferenceSession.create + run', 'session', 'ort', "ORT's own session from the export (weights beside it)"],
];
const rounds = quick ? 3 : 5;
const seen = Object.fromEntries(pairs.flatMap(([, a, b]) => [a, b]).map((k) => [k, []]));
// One uncounted round: the page cache then holds the files for every counted one.
for (const k of Object.keys(seen)) child(k);
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? Object.keys(seen) : Object.keys(seen).reverse();
  for (const k of order) seen[k].push(child(k));
}
const rows = pairs.map(([op, a, b, baseline]) => {
  const ratio = (f) => {
    const each = seen[a].map((m, i) => f(m) / f(seen[b][i]));
    return { ratio: middleOf(each), spread: [Math.min(...each), Math.max(...each)] };
  };
  return {
    op,
    baseline,
    seconds: middleOf(seen[a].map((m) => m.seconds)),
    baseline_seconds: middleOf(seen[b].map((m) => m.seconds)),
    time: ratio((m) => m.seconds),
    peak_rss: middleOf(seen[a].map((m) => m.rss)),
    baseline_peak_rss: middleOf(seen[b].map((m) => m.rss)),
    rss: ratio((m) => m.rss),
  };
});
console.log(JSON.stringify({ ...made, rounds, rows }));
