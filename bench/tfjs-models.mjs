// `node bench/tfjs-models.mjs DIR REPEATS [PARAMS]`: loading one tfjs-layers model of about 50 M
// parameters (float32) from tfjs's own format (model.json + weights.bin, read from disk and handed to
// tf.io.fromMemory, as tfjs-node's file handler does) against tf.loadLayersModel(npzHandler(...)) from
// a stored and a deflated .npz. Each load runs in a fresh process: the time is that process's clock
// around the load alone, the memory its peak resident size (VmHWM) above the same process's size just
// before loading. The loads alternate and take turns going first; each round's npz loads are divided
// by that round's tfjs load, and the median of those ratios is reported with their spread (the
// smallest and largest). Prints one JSON object.
import { execFileSync } from 'node:child_process';
import { mkdirSync, statSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { middleOf } from './timing.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const [dir, repeatsArg, paramsArg] = process.argv.slice(2);
const repeats = Number(repeatsArg ?? 5);
const params = Number(paramsArg ?? 50e6);
mkdirSync(dir, { recursive: true });

// Three square dense layers of width w: 3·w² + 3·w parameters.
const width = Math.round(Math.sqrt(params / 3));
const files = {
  json: join(dir, `tfjs-${width}.json`),
  bin: join(dir, `tfjs-${width}.weights.bin`),
  stored: join(dir, `tfjs-${width}.npz`),
  deflated: join(dir, `tfjs-${width}-deflated.npz`),
};

const prelude = `
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import * as tfl from '@tensorflow/tfjs-layers';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { npzHandler } from '@npyts/tfjs';
await tf.setBackend('cpu');
{ const warn = console.warn; console.warn = () => {}; tf.scalar(0).dispose(); console.warn = warn; }
const hwm = () => Number(/VmHWM:\\s+(\\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;
const rss = () => Number(/VmRSS:\\s+(\\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;
`;

const run = (code) =>
  JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', prelude + code], { cwd: here, encoding: 'utf8', maxBuffer: 1 << 24 }));

if (![files.json, files.bin, files.stored, files.deflated].every(existsSync)) {
  process.stderr.write(`building a ${((3 * width * width + 3 * width) / 1e6).toFixed(1)} M-parameter model and saving it three ways …\n`);
  run(`
    const model = tfl.sequential({ layers: [
      tfl.layers.dense({ units: ${width}, inputShape: [${width}], activation: 'relu', kernelInitializer: 'randomNormal' }),
      tfl.layers.dense({ units: ${width}, activation: 'relu', kernelInitializer: 'randomNormal' }),
      tfl.layers.dense({ units: ${width}, kernelInitializer: 'randomNormal' }),
    ] });
    // tfjs's own format, as tfjs-node's file:// handler writes it: model.json and one weights.bin.
    await model.save(tf.io.withSaveHandler(async (a) => {
      const { writeFileSync } = await import('node:fs');
      writeFileSync(${JSON.stringify(files.bin)}, new Uint8Array(a.weightData));
      writeFileSync(${JSON.stringify(files.json)}, JSON.stringify({ modelTopology: a.modelTopology, format: a.format, generatedBy: a.generatedBy,
        weightsManifest: [{ paths: ['weights.bin'], weights: a.weightSpecs }] }));
      return { modelArtifactsInfo: tf.io.getModelArtifactsInfoForJSON(a) };
    }));
    await model.save(npzHandler(${JSON.stringify(files.stored)}));
    await model.save(npzHandler(${JSON.stringify(files.deflated)}, { compress: true }));
    console.log('null');
  `);
}

// Each load ends with one prediction's value read, so that the model is really usable.
const loads = {
  tfjs: `
    const json = JSON.parse(await readFile(${JSON.stringify(files.json)}, 'utf8'));
    const weightData = (await readFile(${JSON.stringify(files.bin)})).buffer;
    return tfl.loadLayersModel(tf.io.fromMemory({ modelTopology: json.modelTopology, weightSpecs: json.weightsManifest[0].weights, weightData }));`,
  npz_stored: `return tfl.loadLayersModel(npzHandler(${JSON.stringify(files.stored)}));`,
  npz_deflated: `return tfl.loadLayersModel(npzHandler(${JSON.stringify(files.deflated)}));`,
};
const once = (who) =>
  run(`
  const before = rss();
  const t = performance.now();
  const model = await (async () => { ${loads[who]} })();
  const seconds = (performance.now() - t) / 1000;
  const y = model.predict(tf.ones([1, ${width}]));
  await y.data();
  console.log(JSON.stringify({ seconds, peak: hwm() - before }));
`);

const results = Object.fromEntries(Object.keys(loads).map((k) => [k, []]));
const order = Object.keys(loads);
for (let i = 0; i < repeats; i++) {
  for (let j = 0; j < order.length; j++) {
    const who = order[(i + j) % order.length];
    results[who].push(once(who));
  }
}
const summary = Object.fromEntries(
  Object.entries(results).map(([who, rs]) => {
    const ratios = rs.map((r, i) => r.seconds / results.tfjs[i].seconds);
    return [
      who,
      {
        seconds: middleOf(rs.map((r) => r.seconds)),
        peakBytes: middleOf(rs.map((r) => r.peak)),
        ratio: middleOf(ratios),
        spread: [Math.min(...ratios), Math.max(...ratios)],
        rounds: rs.length,
      },
    ];
  }),
);
console.log(
  JSON.stringify({
    parameters: 3 * width * width + 3 * width,
    bytes: { tfjs: statSync(files.bin).size + statSync(files.json).size, npz_stored: statSync(files.stored).size, npz_deflated: statSync(files.deflated).size },
    ...summary,
  }),
);
