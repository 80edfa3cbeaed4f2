// tfjs models saved as .keras files that Keras 3 itself loads (keras.saving.load_model, KERAS_BACKEND=torch)
// and predicts with: a Sequential CNN with BatchNormalization (statistics far from 0 and 1), a functional
// model with two inputs and two outputs through Add and Concatenate, a text model (Embedding, LSTM,
// Bidirectional(LSTM), GRU, TimeDistributed(Dense)), a functional model with a Sequential inside, and a model Keras
// wrote, loaded into tfjs and saved back (a CNN, and a transformer block with causal MultiHeadAttention). Keras's predictions must match tfjs's within 1e-4 (absolute and
// relative: float32 sums in another order). All models are loaded in one Python process.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs-core';
import * as tfl from '@tensorflow/tfjs-layers';
import { kerasHandler } from '@npyts/tfjs';
import '@npyts/tfjs/keras-layers';
import { unzipSync as unzip } from 'fflate';
import { bytesSource, Hdf5File } from '@npyts/core';
import { scratch } from '../helpers/numpy.mjs';
import { useCpuBackend } from '../helpers/tfjs.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';

const script = join(dirname(fileURLToPath(import.meta.url)), '..', 'helpers', 'keras_save.py');
const dir = scratch('npyts-keras-save-');
const keras = (...args) =>
  JSON.parse(
    execFileSync('python3', ['-W', 'ignore', script, ...args], { encoding: 'utf8', maxBuffer: 1 << 28, env: { ...process.env, KERAS_BACKEND: 'torch' } }),
  );
const TOL = 1e-4;

await useCpuBackend();

/** A deterministic pseudo-random float32 tensor. */
function values(shape, seed) {
  const n = shape.reduce((a, b) => a * b, 1);
  return tf.tensor(
    Float32Array.from({ length: n }, (_, i) => Math.sin(seed * 7.31 + i * 1.37) * 0.9),
    shape,
  );
}

/** Every weight of a model random, BatchNormalization's variances in [0.5, 2). */
function randomize(model, seed) {
  model.setWeights(model.weights.map((w, i) => (w.name.includes('variance') ? tf.add(tf.abs(values(w.shape, seed + i)), 0.5) : values(w.shape, seed + i))));
}

function cnn() {
  const m = tfl.sequential();
  m.add(tfl.layers.conv2d({ inputShape: [8, 8, 3], filters: 4, kernelSize: 3, activation: 'relu' }));
  m.add(tfl.layers.batchNormalization());
  m.add(tfl.layers.maxPooling2d({ poolSize: 2 }));
  m.add(tfl.layers.conv2d({ filters: 5, kernelSize: 2 }));
  m.add(tfl.layers.batchNormalization());
  m.add(tfl.layers.flatten());
  m.add(tfl.layers.dense({ units: 6, activation: 'tanh' }));
  m.add(tfl.layers.dense({ units: 3, activation: 'softmax' }));
  return m;
}

function twoInTwoOut() {
  const a = tfl.input({ shape: [5], name: 'left' });
  const b = tfl.input({ shape: [5], name: 'right' });
  const da = tfl.layers.dense({ units: 4, activation: 'relu' }).apply(a);
  const db = tfl.layers.dense({ units: 4 }).apply(b);
  const sum = tfl.layers.add().apply([da, db]);
  const cat = tfl.layers.concatenate().apply([sum, a]);
  const out1 = tfl.layers.dense({ units: 2, name: 'first' }).apply(cat);
  const out2 = tfl.layers.dense({ units: 3, activation: 'sigmoid', name: 'second' }).apply(sum);
  return tfl.model({ inputs: [a, b], outputs: [out1, out2] });
}

function text() {
  const m = tfl.sequential();
  m.add(tfl.layers.embedding({ inputDim: 20, outputDim: 6, inputLength: 7 }));
  m.add(tfl.layers.lstm({ units: 5, returnSequences: true, recurrentInitializer: 'glorotNormal', recurrentActivation: 'sigmoid' }));
  const inner = tfl.layers.lstm({ units: 3, returnSequences: true, recurrentInitializer: 'glorotNormal', recurrentActivation: 'sigmoid' });
  m.add(tfl.layers.bidirectional({ layer: inner, mergeMode: 'concat' }));
  m.add(tfl.layers.gru({ units: 3, returnSequences: true, recurrentInitializer: 'glorotNormal', recurrentActivation: 'sigmoid' }));
  m.add(tfl.layers.timeDistributed({ layer: tfl.layers.dense({ units: 3, activation: 'relu' }) }));
  m.add(tfl.layers.lstm({ units: 4, recurrentInitializer: 'glorotNormal', recurrentActivation: 'sigmoid' }));
  m.add(tfl.layers.dense({ units: 2 }));
  return m;
}

/** A functional model with a Sequential model inside it, called once. */
function nested() {
  const block = tfl.sequential({ layers: [tfl.layers.dense({ inputShape: [4], units: 3, activation: 'relu' }), tfl.layers.dense({ units: 3 })] });
  const x = tfl.input({ shape: [4] });
  const h = tfl.layers.dense({ units: 4 }).apply(x);
  const y = block.apply(h);
  return tfl.model({ inputs: x, outputs: tfl.layers.dense({ units: 2 }).apply(y) });
}

const cases = {};

/** Save a tfjs model as .keras and remember its prediction on `inputs` (nested arrays). */
async function saved(name, model, inputs) {
  const file = join(dir, `${name}.keras`);
  await model.save(kerasHandler(file));
  const ys = model.predict(inputs.length > 1 ? inputs.map((x) => tf.tensor(x)) : tf.tensor(inputs[0]));
  cases[name] = { file, inputs, want: (Array.isArray(ys) ? ys : [ys]).map((y) => y.arraySync()) };
}

const cnnModel = cnn();
randomize(cnnModel, 1);
await saved('cnn', cnnModel, [values([2, 8, 8, 3], 99).arraySync()]);
const fn = twoInTwoOut();
randomize(fn, 2);
await saved('functional', fn, [values([3, 5], 98).arraySync(), values([3, 5], 97).arraySync()]);
const lstm = text();
randomize(lstm, 3);
await saved('text', lstm, [
  [
    [1, 5, 19, 0, 3, 3, 7],
    [2, 2, 11, 12, 0, 1, 18],
  ],
]);
const inner = nested();
randomize(inner, 4);
await saved('nested', inner, [values([2, 4], 96).arraySync()]);
// A Keras model, into tfjs and back.
const made = keras('make', dir);
const fromKeras = await tfl.loadLayersModel(kerasHandler(join(dir, 'keras_cnn.keras')));
await saved('roundtrip', fromKeras, [made.input]);
const transformer = await tfl.loadLayersModel(kerasHandler(join(dir, 'keras_transformer.keras')));
await saved('transformer', transformer, [made.transformer_input]);
writeFileSync(join(dir, 'spec.json'), JSON.stringify(Object.fromEntries(Object.entries(cases).map(([k, v]) => [k, { file: v.file, inputs: v.inputs }]))));
const got = keras('load', join(dir, 'spec.json'));

function close(a, b, path) {
  if (Array.isArray(a)) {
    assert.is(a.length, b.length, `${path}: length`);
    a.forEach((x, i) => close(x, b[i], `${path}[${i}]`));
  } else if (Math.abs(a - b) > TOL + TOL * Math.abs(b)) assert.unreachable(`${path}: Keras ${a}, tfjs ${b}`);
}

for (const name of ['cnn', 'functional', 'text', 'nested', 'roundtrip', 'transformer']) {
  test(`Keras 3 loads the ${name} model saved from tfjs and predicts what tfjs predicts`, () => {
    assert.not.ok(got[name].error, got[name].error);
    assert.is(got[name].outputs.length, cases[name].want.length);
    close(got[name].outputs, cases[name].want, name);
  });
}

test('the model Keras wrote predicts the same after tfjs saved it back', () => {
  close(got.roundtrip.outputs, [made.output], 'roundtrip vs Keras');
});

test("the weights file names each layer's vars as Keras does, and npyts loads the file back", async () => {
  const h5 = await Hdf5File.open(bytesSource(unzip(readFileSync(cases.cnn.file))['model.weights.h5'], 'model.weights.h5'));
  const g = await h5.get('layers/batch_normalization_1/vars');
  assert.is((await g.attrs()).name, cnnModel.layers[4].name);
  assert.equal(await g.children(), ['0', '1', '2', '3']);
  const again = await tfl.loadLayersModel(kerasHandler(cases.functional.file));
  const x = cases.functional.inputs.map((v) => tf.tensor(v));
  close(
    again.predict(x).map((y) => y.arraySync()),
    cases.functional.want,
    'reloaded',
  );
});

test('layers Keras 3 has not are refused together, before anything is written', async () => {
  const m = tfl.sequential();
  m.add(tfl.layers.dense({ inputShape: [3], units: 2 }));
  m.add(tfl.layers.thresholdedReLU());
  m.add(tfl.layers.dense({ units: 2, activation: 'hardSigmoid' }));
  const target = join(dir, 'refused.keras');
  const e = await npyErrorOf(() => m.save(kerasHandler(target)));
  assert.is(e.code, 'UNSUPPORTED_LAYER');
  assert.match(e.message, 'ThresholdedReLU');
  assert.match(e.message, 'hardSigmoid');
  assert.throws(() => readFileSync(target));
});

test('saving to a function hands it the bytes', async () => {
  let bytes;
  await cnnModel.save(kerasHandler((b) => (bytes = b)));
  assert.equal(Object.keys(unzip(bytes)).sort(), ['config.json', 'metadata.json', 'model.weights.h5']);
});

test.run();
