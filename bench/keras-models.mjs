// `node bench/keras-models.mjs DIR ROUNDS`: a Keras 3 `.keras` ResNet50 (keras.applications.ResNet50(weights=None),
// about 100 MB, made by bench/keras_side.py) loaded into tfjs with tf.loadLayersModel(kerasHandler(...)), against
// Keras's own keras.saving.load_model (KERAS_BACKEND=torch) on the same machine, and against tfjs loading the same
// model from its own format (model.json + weights.bin, written once from the loaded model, read from disk and
// handed to tf.io.fromMemory, as tfjs-node's file handler does). Each load runs in a fresh process, timed by that
// process's clock around the load alone (imports of tfjs, torch and Keras not counted). The loads alternate and
// take turns going first; each round's npyts load is divided by that round's Keras and tfjs loads, and the median
// of those ratios is reported with their spread (the smallest and largest). Each tfjs load also reports the CPU
// time its process spent in the load (user + system, process.cpuUsage), which a busy machine disturbs less than
// the wall clock; the npyts load is timed both reading the file and mapping it ({ mmap: 'r' }, with
// @npyts/native). Target (issue 68): the npyts load at most 0.8× tfjs's own. With NPYTS_BENCH_BASELINE=ROOT (another
// built checkout, say of the commit before a change), that checkout's npyts loads too, read and mapped, in the same
// interleaved rounds, and the summary's `baseline` gives this checkout's loads divided by its. Prints one JSON
// object; its `line` is the report's paragraph.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { middleOf } from './timing.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const [dir, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg ?? 3);
mkdirSync(dir, { recursive: true });
const files = { keras: join(dir, 'resnet50.keras'), json: join(dir, 'resnet50-tfjs.json'), bin: join(dir, 'resnet50-tfjs.weights.bin') };
const pythonEnv = { ...process.env, KERAS_BACKEND: 'torch', TF_CPP_MIN_LOG_LEVEL: '3' };
const python = (...args) =>
  JSON.parse(
    execFileSync('python3', ['-W', 'ignore', join(here, 'keras_side.py'), ...args], { encoding: 'utf8', env: pythonEnv, stdio: ['ignore', 'pipe', 'ignore'] }),
  );

const prelude = `
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import * as tfl from '@tensorflow/tfjs-layers';
import { readFile } from 'node:fs/promises';
import { kerasHandler } from '@npyts/tfjs';
await tf.setBackend('cpu');
{ const warn = console.warn; console.warn = () => {}; tf.scalar(0).dispose(); console.warn = warn; }
`;
const baselineRoot = process.env.NPYTS_BENCH_BASELINE;
const node = (code, cwd = here) =>
  JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', prelude + code], { cwd, encoding: 'utf8', maxBuffer: 1 << 24 }));

if (!existsSync(files.keras)) {
  process.stderr.write('making a .keras ResNet50 with Keras …\n');
  python('make', dir);
}
if (!existsSync(files.json) || !existsSync(files.bin)) {
  // tfjs's own format, as tfjs-node's file:// handler writes it: model.json and one weights.bin.
  node(`
    const model = await tfl.loadLayersModel(kerasHandler(${JSON.stringify(files.keras)}));
    await model.save(tf.io.withSaveHandler(async (a) => {
      const { writeFileSync } = await import('node:fs');
      writeFileSync(${JSON.stringify(files.bin)}, new Uint8Array(a.weightData));
      writeFileSync(${JSON.stringify(files.json)}, JSON.stringify({ modelTopology: a.modelTopology, format: a.format, generatedBy: a.generatedBy,
        weightsManifest: [{ paths: ['weights.bin'], weights: a.weightSpecs }] }));
      return { modelArtifactsInfo: tf.io.getModelArtifactsInfoForJSON(a) };
    }));
    console.log('null');
  `);
}

// Each tfjs load ends with the model's weight count read back, so that the weights are really assigned.
const tfjsLoad = (load, cwd = here) =>
  node(
    `
  const cpu = process.cpuUsage();
  const t = performance.now();
  const model = await (async () => { ${load} })();
  const seconds = (performance.now() - t) / 1000;
  const used = process.cpuUsage(cpu);
  console.log(JSON.stringify({ seconds, cpu: (used.user + used.system) / 1e6, parameters: model.countParams() }));
`,
    cwd,
  );
const loads = {
  npyts: () => tfjsLoad(`return tfl.loadLayersModel(kerasHandler(${JSON.stringify(files.keras)}));`),
  mapped: () => tfjsLoad(`return tfl.loadLayersModel(kerasHandler(${JSON.stringify(files.keras)}, { mmap: 'r' }));`),
  keras: () => python('load', files.keras),
  tfjs: () =>
    tfjsLoad(`
    const json = JSON.parse(await readFile(${JSON.stringify(files.json)}, 'utf8'));
    const weightData = (await readFile(${JSON.stringify(files.bin)})).buffer;
    return tfl.loadLayersModel(tf.io.fromMemory({ modelTopology: json.modelTopology, weightSpecs: json.weightsManifest[0].weights, weightData }));`),
  ...(baselineRoot
    ? {
        baseline: () => tfjsLoad(`return tfl.loadLayersModel(kerasHandler(${JSON.stringify(files.keras)}));`, join(baselineRoot, 'bench')),
        baseline_mapped: () =>
          tfjsLoad(`return tfl.loadLayersModel(kerasHandler(${JSON.stringify(files.keras)}, { mmap: 'r' }));`, join(baselineRoot, 'bench')),
      }
    : {}),
};

const results = Object.fromEntries(Object.keys(loads).map((k) => [k, []]));
const order = Object.keys(loads);
for (let i = 0; i < rounds; i++) {
  for (let j = 0; j < order.length; j++) {
    const who = order[(i + j) % order.length];
    results[who].push(loads[who]());
  }
}
const params = new Set(Object.values(results).flatMap((rs) => rs.map((r) => r.parameters)));
if (params.size !== 1) throw new Error(`the loads built models of different sizes: ${[...params].join(', ')} parameters`);
const seconds = (who) => middleOf(results[who].map((r) => r.seconds));
const cpuSeconds = (who) => middleOf(results[who].map((r) => r.cpu));
const against = (who, base, key = 'seconds') => {
  const ratios = results[who].map((r, i) => r[key] / results[base][i][key]);
  return { ratio: middleOf(ratios), spread: [Math.min(...ratios), Math.max(...ratios)] };
};
const summary = {
  parameters: [...params][0],
  bytes: { keras: statSync(files.keras).size, tfjs: statSync(files.bin).size + statSync(files.json).size },
  rounds,
  seconds: { npyts: seconds('npyts'), mapped: seconds('mapped'), keras: seconds('keras'), tfjs: seconds('tfjs') },
  cpu_seconds: { npyts: cpuSeconds('npyts'), mapped: cpuSeconds('mapped'), tfjs: cpuSeconds('tfjs') },
  vs_keras: against('npyts', 'keras'),
  vs_tfjs: against('npyts', 'tfjs'),
  vs_tfjs_cpu: against('npyts', 'tfjs', 'cpu'),
  mapped_vs_tfjs: against('mapped', 'tfjs'),
  mapped_vs_tfjs_cpu: against('mapped', 'tfjs', 'cpu'),
  ...(baselineRoot
    ? {
        baseline: {
          root: baselineRoot,
          seconds: { npyts: seconds('baseline'), mapped: seconds('baseline_mapped') },
          cpu_seconds: { npyts: cpuSeconds('baseline'), mapped: cpuSeconds('baseline_mapped') },
          vs_tfjs: against('baseline', 'tfjs'),
          vs_tfjs_cpu: against('baseline', 'tfjs', 'cpu'),
          mapped_vs_tfjs: against('baseline_mapped', 'tfjs'),
          mapped_vs_tfjs_cpu: against('baseline_mapped', 'tfjs', 'cpu'),
          npyts_vs_baseline: against('npyts', 'baseline'),
          mapped_vs_baseline: against('mapped', 'baseline_mapped'),
        },
      }
    : {}),
};
const ms = (s) => `${(s * 1000).toFixed(0)} ms`;
const cell = (p, target = 1) =>
  `${p.ratio.toFixed(2)} × (spread ${p.spread[0].toFixed(2)}–${p.spread[1].toFixed(2)}; target ≤ ${target}: ${p.spread[1] <= target ? 'met' : p.spread[0] > target ? '**missed**' : '**crosses**'})`;
summary.line =
  `Keras: a .keras ResNet50 (${(summary.parameters / 1e6).toFixed(1)} M parameters, ${(summary.bytes.keras / 1e6).toFixed(0)} MB) into tfjs, ` +
  `tf.loadLayersModel(kerasHandler(file)) ${ms(summary.seconds.npyts)} (CPU ${ms(summary.cpu_seconds.npyts)}), with { mmap: 'r' } ${ms(summary.seconds.mapped)} (CPU ${ms(summary.cpu_seconds.mapped)}); ` +
  `Keras's keras.saving.load_model (torch backend) ${ms(summary.seconds.keras)}: ${cell(summary.vs_keras)}; ` +
  `tfjs from its own model.json + weights.bin ${ms(summary.seconds.tfjs)} (CPU ${ms(summary.cpu_seconds.tfjs)}): read ${cell(summary.vs_tfjs, 0.8)}, CPU ${cell(summary.vs_tfjs_cpu, 0.8)}; ` +
  `mapped ${cell(summary.mapped_vs_tfjs, 0.8)}, CPU ${cell(summary.mapped_vs_tfjs_cpu, 0.8)}. Fresh processes, ${rounds} interleaved rounds.`;
if (summary.baseline) {
  const b = summary.baseline;
  const span = (p) => `${p.ratio.toFixed(2)} × (${p.spread[0].toFixed(2)}–${p.spread[1].toFixed(2)})`;
  summary.line +=
    ` Baseline (${b.root}) in the same rounds: read ${ms(b.seconds.npyts)} (CPU ${ms(b.cpu_seconds.npyts)}), vs tfjs ${span(b.vs_tfjs)}, CPU ${span(b.vs_tfjs_cpu)}; ` +
    `mapped ${ms(b.seconds.mapped)} (CPU ${ms(b.cpu_seconds.mapped)}), vs tfjs ${span(b.mapped_vs_tfjs)}, CPU ${span(b.mapped_vs_tfjs_cpu)}; ` +
    `this checkout against it: read ${span(b.npyts_vs_baseline)}, mapped ${span(b.mapped_vs_baseline)}.`;
}
console.log(JSON.stringify(summary));
