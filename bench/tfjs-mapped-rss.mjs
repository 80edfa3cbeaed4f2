// `node bench/tfjs-mapped-rss.mjs DIR [GIB]`: resident memory of a tfjs model (CPU backend) whose
// weights come from a GIB-GiB `.safetensors` (default 2), assigned with `assignWeights(model, file,
// { mmap: 'r' })` and, for comparison, read into memory (no mmap). Each way runs in a fresh process:
// build the model (Zeros, so that its own first weights are plain allocations), assign, predict once
// (every weight's pages touched), then report the peak and the final resident set (file-backed pages,
// the map's, apart from anonymous ones). Prints JSON.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const [dir, gibArg] = process.argv.slice(2);
if (!dir) throw new Error('usage: node bench/tfjs-mapped-rss.mjs DIR [GIB]');
const gib = Number(gibArg ?? 2);
/** Dense layers of WIDTH × WIDTH float32 (256 MiB each at 8192), as many as make GIB GiB. */
const WIDTH = 8192;
const layers = Math.max(1, Math.round((gib * 2 ** 30) / (WIDTH * WIDTH * 4)));
const file = join(dir, `dense-${layers}x${WIDTH}.safetensors`);

if (process.argv[2] === '--child') {
  const [, , , path, mode, n] = process.argv;
  await import('@tensorflow/tfjs-backend-cpu');
  const tf = await import('@tensorflow/tfjs-core');
  const tfl = await import('@tensorflow/tfjs-layers');
  const { assignWeights } = await import('@npyts/tfjs');
  const { readFileSync } = await import('node:fs');
  const status = () =>
    Object.fromEntries(
      [...readFileSync('/proc/self/status', 'utf8').matchAll(/^(VmHWM|VmRSS|RssAnon|RssFile):\s+(\d+) kB/gm)].map((m) => [m[1], Number(m[2]) * 1024]),
    );
  const model = tfl.sequential();
  for (let i = 0; i < Number(n); i++) {
    model.add(tfl.layers.dense({ units: WIDTH, inputShape: i === 0 ? [WIDTH] : undefined, kernelInitializer: 'zeros', name: `d${i}` }));
  }
  const built = status();
  await assignWeights(model, path, mode === 'mmap' ? { mmap: 'r' } : {});
  const assigned = status();
  const y = model.predict(tf.ones([1, WIDTH]));
  const out = y.dataSync()[0];
  globalThis.gc?.();
  console.log(JSON.stringify({ mode, built, assigned, predicted: status(), out }));
  process.exit(0);
}

mkdirSync(dir, { recursive: true });
if (!existsSync(file)) {
  const { saveSafetensors } = await import('@npyts/core/node');
  const tensors = new Map();
  const kernel = new Float32Array(WIDTH * WIDTH).fill(1 / WIDTH);
  for (let i = 0; i < layers; i++) {
    tensors.set(`d${i}/kernel`, { data: kernel, shape: [WIDTH, WIDTH], dtype: '<f4' });
    tensors.set(`d${i}/bias`, { data: new Float32Array(WIDTH), shape: [WIDTH], dtype: '<f4' });
  }
  await saveSafetensors(file, tensors);
}
const self = fileURLToPath(import.meta.url);
const run = (mode) =>
  JSON.parse(
    execFileSync(process.execPath, ['--expose-gc', self, '--child', file, mode, String(layers)], { encoding: 'utf8', maxBuffer: 1 << 20 })
      .trim()
      .split('\n')
      .pop(),
  );
const mib = (b) => Math.round(b / 2 ** 20);
const rows = ['mmap', 'copy'].map(run);
const fileBytes = statSync(file).size;
const [mapped, copied] = rows;
const line = `A tfjs model (CPU backend) of ${layers} Dense(${WIDTH}) layers from a ${mib(fileBytes)} MiB .safetensors (bench/tfjs-mapped-rss.mjs; fresh process each, after one predict): with { mmap: 'r' } peak RSS ${mib(mapped.predicted.VmHWM)} MiB (${mib(mapped.predicted.RssFile)} MiB of it file-backed: the map's pages and Node's own code; ${mib(mapped.predicted.RssAnon)} MiB anonymous); read into memory ${mib(copied.predicted.VmHWM)} MiB (${mib(copied.predicted.RssAnon)} MiB anonymous): the weights once plus ${mib(mapped.predicted.VmHWM - fileBytes)} and ${mib(copied.predicted.VmHWM - fileBytes)} MiB.`;
console.log(
  JSON.stringify(
    {
      line,
      file_mib: mib(fileBytes),
      rows: rows.map((r) => ({
        mode: r.mode,
        model_built_rss_mib: mib(r.built.VmRSS),
        after_assign_rss_mib: mib(r.assigned.VmRSS),
        after_predict: { rss_mib: mib(r.predicted.VmRSS), anon_mib: mib(r.predicted.RssAnon), file_mib: mib(r.predicted.RssFile) },
        peak_rss_mib: mib(r.predicted.VmHWM),
        peak_over_weights: +(r.predicted.VmHWM / fileBytes).toFixed(2),
        output: r.out,
      })),
    },
    null,
    2,
  ),
);
