// `node bench/onnxruntime-large.mjs DIR [--quick]`: withWeights on large models (about 256 MiB and 1 GiB
// of .safetensors; 16 and 64 MiB with --quick), made by bench/onnxruntime_side.py (an MLP of Linear
// layers exported by torch.onnx.export with its initializers in big.onnx.data). Each case runs in a
// fresh Node process (modules loaded first, not counted), times withWeights + InferenceSession.create +
// one run, and reads the process's peak resident size from /proc/self/status (VmHWM, reset after the
// modules load through /proc/self/clear_refs) and its resident size once the session exists (VmRSS after
// a GC, with withWeights' result dropped): what ORT keeps. Cases interleave over rounds, ratios taken
// within a round, reported as the median with its spread. Cases:
// - memory: the weights given as a file-backed Blob (openAsBlob: read, not mapped), each tensor read
//   handed to ORT as external data in memory (no whole-model buffer);
// - inline: the same with { inline: true }: every tensor copied into the model's bytes;
// - pointed: the weights given by path, initializers pointed into the mapped file (@npyts/native);
// - ort: ORT's own session from the exported model and its external data file (the same bytes).
// The swapped sessions' outputs are checked against PyTorch's. Prints one JSON object. Linux only (/proc).
import { execFileSync } from 'node:child_process';
import { openAsBlob, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { middleOf } from './timing.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const [mode, dir, which] = process.argv.slice(2);

/** A field of /proc/self/status in bytes (VmHWM, VmRSS). */
const status = (field) => Number(new RegExp(`^${field}:\\s*(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;

if (mode === 'child') {
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
  let calls = 0;
  const onProgress = () => calls++;
  const swapped = async (weights, options) => {
    const r = await withWeights(at('big.onnx'), weights, { ...options, onProgress });
    return ort.InferenceSession.create(r.model, r.sessionOptions);
  };
  const cases = {
    memory: async () => swapped(await openAsBlob(at('big.safetensors')), {}),
    inline: async () => swapped(await openAsBlob(at('big.safetensors')), { inline: true }),
    pointed: async () => swapped(at('big.safetensors'), {}),
    ort: async () => ort.InferenceSession.create(at('big.onnx')),
  };
  globalThis.gc();
  const base = status('VmRSS');
  writeFileSync('/proc/self/clear_refs', '5'); // VmHWM from here
  const t = process.hrtime.bigint();
  const session = await cases[which]();
  const { y } = await session.run({ x });
  // ORT's own session holds the exported weights (the same sizes), the others the state_dict's.
  if (which !== 'ort') check(y);
  const seconds = Number(process.hrtime.bigint() - t) / 1e9;
  const peak = status('VmHWM');
  globalThis.gc();
  await new Promise((wake) => setTimeout(wake, 10));
  globalThis.gc();
  console.log(JSON.stringify({ seconds, peak: peak - base, kept: status('VmRSS') - base, calls }));
  process.exit(0);
}

if (!mode) throw new Error('usage: node bench/onnxruntime-large.mjs DIR [--quick]');
const quick = process.argv.includes('--quick');
const rounds = quick ? 2 : 3;
const cases = ['memory', 'inline', 'pointed', 'ort'];
const sizes = [];
for (const mib of quick ? [16, 64] : [256, 1024]) {
  const sub = join(mode, `${mib}`);
  const made = JSON.parse(
    execFileSync('python3', ['-W', 'ignore', join(here, 'onnxruntime_side.py'), sub, String(Math.round((mib * 2 ** 20) / 1e6))], { encoding: 'utf8' }),
  );
  const child = (name) =>
    JSON.parse(
      execFileSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), 'child', sub, name], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit'],
      }),
    );
  const seen = Object.fromEntries(cases.map((k) => [k, []]));
  for (const k of cases) child(k); // uncounted: the page cache then holds the files
  for (let r = 0; r < rounds; r++) for (const k of r % 2 === 0 ? cases : [...cases].reverse()) seen[k].push(child(k));
  const rows = cases.map((k) => {
    const ratio = (f) => {
      const each = seen[k].map((m, i) => f(m) / f(seen.ort[i]));
      return { ratio: middleOf(each), spread: [Math.min(...each), Math.max(...each)] };
    };
    return {
      case: k,
      seconds: middleOf(seen[k].map((m) => m.seconds)),
      seconds_spread: [Math.min(...seen[k].map((m) => m.seconds)), Math.max(...seen[k].map((m) => m.seconds))],
      time_vs_ort: ratio((m) => m.seconds),
      peak: middleOf(seen[k].map((m) => m.peak)),
      kept: middleOf(seen[k].map((m) => m.kept)),
      beyond_kept: middleOf(seen[k].map((m) => m.peak - m.kept)),
      progress_calls: seen[k][0].calls,
    };
  });
  sizes.push({ mib, ...made, largest_tensor: made.width * made.width * 4, rows });
}
console.log(JSON.stringify({ rounds, sizes }));
