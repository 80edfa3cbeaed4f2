// `node bench/tfjs-large.mjs DIR [--quick]`: about 1 GiB of Dense weights into a tfjs model (CPU backend;
// about 64 MiB with --quick), made by bench/tfjs_large_side.py with Keras 3 (KERAS_BACKEND=torch) and
// saved by the real writers as .keras, .safetensors and .npz, against tfjs's own loader of the same
// weights as model.json + weights.bin (written by tfjs's own `model.save`). Each case runs in a fresh
// Node process (modules loaded first, not counted), times the load and one predict, and reads the
// process's peak resident size over its resident size before the load (VmHWM, reset through
// /proc/self/clear_refs). Cases interleave over rounds, medians with their min–max. Cases:
// - safetensors, npz: `assignWeights(model, path)` into a model built in code (zeros, as
//   bench/tfjs-mapped-rss.mjs builds it), each weight read into a tensor of its own;
// - safetensors-mmap: the same with { mmap: 'r' };
// - keras: `tf.loadLayersModel(kerasHandler(path))`, the model built from the file's config;
// - tfjs: `tf.loadLayersModel` of model.json + weights.bin, read whole as tfjs-node's file:// handler
//   reads them.
// Every case's output is checked against Keras's. Prints one JSON object. Linux only (/proc).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { middleOf } from './timing.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const [mode, dir, which] = process.argv.slice(2);

/** A field of /proc/self/status in bytes (VmHWM, VmRSS). */
const status = (field) => Number(new RegExp(`^${field}:\\s*(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;

if (mode === 'child' || mode === 'save') {
  await import('@tensorflow/tfjs-backend-cpu');
  const tf = await import('@tensorflow/tfjs-core');
  const tfl = await import('@tensorflow/tfjs-layers');
  const { assignWeights, kerasHandler } = await import('@npyts/tfjs');
  const { loadNpy } = await import('@npyts/core/node');
  await tf.setBackend('cpu');
  const warn = console.warn;
  console.warn = () => {};
  tf.scalar(0).dispose(); // tfjs's notice on its first write in Node, quietly
  console.warn = warn;
  const at = (f) => join(dir, f);
  const { layers, width } = JSON.parse(readFileSync(at('made.json'), 'utf8'));
  const built = () => {
    const model = tfl.sequential();
    for (let i = 0; i < layers; i++) {
      model.add(tfl.layers.dense({ units: width, activation: 'relu', inputShape: i === 0 ? [width] : undefined, kernelInitializer: 'zeros', name: `d${i}` }));
    }
    return model;
  };
  if (mode === 'save') {
    // model.json + weights.bin of the same weights, by tfjs's own writer.
    const model = built();
    await assignWeights(model, at('big.safetensors'));
    await model.save(
      tf.io.withSaveHandler(async (artifacts) => {
        const { modelTopology, weightSpecs, weightData } = artifacts;
        for (const [i, part] of (Array.isArray(weightData) ? weightData : [weightData]).entries())
          writeFileSync(at('weights.bin'), new Uint8Array(part), { flag: i ? 'a' : 'w' });
        // model.json last: with it there, the pair is whole.
        writeFileSync(
          at('model.json'),
          JSON.stringify({ format: 'layers-model', modelTopology, weightsManifest: [{ paths: ['weights.bin'], weights: weightSpecs }] }),
        );
        return { modelArtifactsInfo: { dateSaved: new Date(), modelTopologyType: 'JSON' } };
      }),
    );
    process.exit(0);
  }
  const x = (await loadNpy(at('x.npy'))).data;
  const want = (await loadNpy(at('want.npy'))).data;
  const cases = {
    safetensors: async () => {
      const m = built();
      await assignWeights(m, at('big.safetensors'));
      return m;
    },
    'safetensors-mmap': async () => {
      const m = built();
      await assignWeights(m, at('big.safetensors'), { mmap: 'r' });
      return m;
    },
    npz: async () => {
      const m = built();
      await assignWeights(m, at('big.npz'));
      return m;
    },
    keras: () => tfl.loadLayersModel(kerasHandler(at('big.keras'))),
    tfjs: () =>
      tfl.loadLayersModel({
        load: async () => {
          const json = JSON.parse(readFileSync(at('model.json'), 'utf8'));
          const data = readFileSync(at('weights.bin'));
          const weightData =
            data.byteOffset === 0 && data.byteLength === data.buffer.byteLength
              ? data.buffer
              : data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength);
          return { modelTopology: json.modelTopology, weightSpecs: json.weightsManifest.flatMap((g) => g.weights), weightData, format: json.format };
        },
      }),
  };
  globalThis.gc();
  const base = status('VmRSS');
  writeFileSync('/proc/self/clear_refs', '5'); // VmHWM from here
  const t = process.hrtime.bigint();
  const model = await cases[which]();
  const y = model.predict(tf.tensor2d(x, [2, width]));
  const got = await y.data();
  const seconds = Number(process.hrtime.bigint() - t) / 1e9;
  const peak = status('VmHWM');
  const scale = want.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  const worst = want.reduce((m, v, i) => Math.max(m, Math.abs(v - got[i])), 0);
  if (!(worst <= 1e-4 * scale)) throw new Error(`${which}: the output differs from Keras's by ${worst} (scale ${scale})`);
  console.log(JSON.stringify({ seconds, peak: peak - base }));
  process.exit(0);
}

if (!mode) throw new Error('usage: node bench/tfjs-large.mjs DIR [--quick]');
const quick = process.argv.includes('--quick');
const rounds = quick ? 2 : 3;
const mib = quick ? 64 : 1024;
const sub = join(mode, `${mib}`);
const node = (args) =>
  execFileSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
if (!existsSync(join(sub, 'model.json'))) {
  const made = execFileSync('python3', ['-W', 'ignore', join(here, 'tfjs_large_side.py'), sub, String(Math.round((mib * 2 ** 20) / 1e6))], {
    encoding: 'utf8',
    env: { ...process.env, KERAS_BACKEND: 'torch' },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  writeFileSync(join(sub, 'made.json'), made);
  node(['save', sub]);
}
const made = JSON.parse(readFileSync(join(sub, 'made.json'), 'utf8'));
const cases = ['safetensors', 'safetensors-mmap', 'npz', 'keras', 'tfjs'];
const seen = Object.fromEntries(cases.map((k) => [k, []]));
for (let r = 0; r < rounds; r++) for (const k of r % 2 === 0 ? cases : [...cases].reverse()) seen[k].push(JSON.parse(node(['child', sub, k])));
const spread = (xs) => [Math.min(...xs), Math.max(...xs)];
const rows = cases.map((k) => {
  const overTfjs = seen[k].map((m, i) => m.peak - seen.tfjs[i].peak);
  const timeRatio = seen[k].map((m, i) => m.seconds / seen.tfjs[i].seconds);
  return {
    case: k,
    seconds: middleOf(seen[k].map((m) => m.seconds)),
    seconds_spread: spread(seen[k].map((m) => m.seconds)),
    time_vs_tfjs: middleOf(timeRatio),
    time_vs_tfjs_spread: spread(timeRatio),
    peak: middleOf(seen[k].map((m) => m.peak)),
    peak_spread: spread(seen[k].map((m) => m.peak)),
    peak_over_tfjs: middleOf(overTfjs),
    peak_over_tfjs_spread: spread(overTfjs),
  };
});
console.log(JSON.stringify({ rounds, mib, ...made, largest_tensor: made.width * made.width * 4, rows }));
