// Keras 3 models into tfjs: tf.loadLayersModel(kerasHandler(...)) on .keras files and legacy .h5 files, and
// assignWeights on a .weights.h5, against models built, saved and run by Keras 3 itself (test/helpers/keras_models.py,
// KERAS_BACKEND=torch). Tolerance: 1e-5 relative to max(1, |Keras's value|); what float32 gives here is about 3e-7
// (the same float32 math in another order), a wrong pairing or layout is off by 1e-1 and more.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import * as tfl from '@tensorflow/tfjs-layers';
import { kerasHandler, assignWeights } from '@npyts/tfjs';
import { scratch } from '../helpers/numpy.mjs';
import { useCpuBackend } from '../helpers/tfjs.mjs';
import { kerasTruth, worstRelativeError } from '../helpers/keras-truth.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';
import { serveFiles } from '../helpers/serve-files.mjs';

await useCpuBackend();

const TOLERANCE = 1e-5;
const dir = scratch();
// One Python process builds, saves and runs every model of this file.
const keras = kerasTruth('keras_models.py', dir, { KERAS_BACKEND: 'torch' });
const at = (name) => join(dir, name);

/** The largest difference between tfjs's predictions and Keras's, relative to max(1, |Keras's|). */
const worst = (model, name) => worstRelativeError(model, keras[name]);

test('a Sequential CNN with BatchNormalization (.keras) predicts what Keras predicts, its layer names kept', async () => {
  const model = await tfl.loadLayersModel(kerasHandler(at('cnn.keras')));
  assert.equal(
    model.layers.map((l) => l.name),
    ['input_layer', 'conv2d', 'batch_normalization', 'max_pooling2d', 'conv2d_1', 'flatten', 'dropout', 'dense'],
  );
  const err = worst(model, 'cnn');
  assert.ok(err < TOLERANCE, `largest relative difference from Keras ${err}`);
});

test('a Functional model with two inputs and outputs, a shared layer, Add, Concatenate and a nested Sequential, compiled (its optimizer state is not a weight)', async () => {
  const model = await tfl.loadLayersModel(kerasHandler(at('fn.keras')));
  assert.equal(
    model.inputs.map((t) => t.sourceLayer.name),
    ['a', 'b'],
  );
  assert.is(model.outputs.length, 2);
  const err = worst(model, 'fn');
  assert.ok(err < TOLERANCE, `largest relative difference from Keras ${err}`);
});

test('a text model: Embedding, Bidirectional(LSTM) and LSTM', async () => {
  const model = await tfl.loadLayersModel(kerasHandler(at('text.keras')));
  const err = worst(model, 'text');
  assert.ok(err < TOLERANCE, `largest relative difference from Keras ${err}`);
});

test('a bfloat16 model: its weights become float32 exactly (Keras on the same weights in float32 agrees)', async () => {
  const model = await tfl.loadLayersModel(kerasHandler(at('bf16.keras')));
  assert.ok(model.weights.every((w) => w.dtype === 'float32'));
  const err = worst(model, 'bf16');
  assert.ok(err < TOLERANCE, `largest relative difference from Keras ${err}`);
});

test("a bfloat16 model saved as a legacy .h5 (weights as opaque |V2, their dtype only in the layers' policies): float32 exactly, as from the .keras", async () => {
  const model = await tfl.loadLayersModel(kerasHandler(at('bf16.h5')));
  assert.ok(model.weights.every((w) => w.dtype === 'float32'));
  const err = worst(model, 'bf16');
  assert.ok(err < TOLERANCE, `largest relative difference from Keras ${err}`);
});

test("keras.applications' MobileNetV2 (weights=None, 32×32) predicts what Keras predicts", async () => {
  const model = await tfl.loadLayersModel(kerasHandler(at('mobilenetv2.keras')));
  const err = worst(model, 'mobilenetv2');
  assert.ok(err < TOLERANCE, `largest relative difference from Keras ${err}`);
});

test("activations by name and as layers, Keras 3's option names translated (LeakyReLU's negative_slope is tfjs's alpha)", async () => {
  const model = await tfl.loadLayersModel(kerasHandler(at('acts.keras')));
  const err = worst(model, 'acts');
  assert.ok(err < TOLERANCE, `largest relative difference from Keras ${err}`);
});

test('a legacy full-model .h5 (model.save("m.h5")) loads from its model_config and layer_names/weight_names', async () => {
  const model = await tfl.loadLayersModel(kerasHandler(at('cnn.h5')));
  const err = worst(model, 'cnn');
  assert.ok(err < TOLERANCE, `largest relative difference from Keras ${err}`);
});

test('a .keras file loads by URL', async () => {
  const server = await serveFiles(dir);
  try {
    const model = await tfl.loadLayersModel(kerasHandler(`${server.base}/cnn.keras`));
    const err = worst(model, 'cnn');
    assert.ok(err < TOLERANCE, `largest relative difference from Keras ${err}`);
  } finally {
    await server.close();
  }
});

test('a .keras and a legacy .h5 load from bytes as from a path', async () => {
  for (const name of ['cnn.keras', 'cnn.h5']) {
    const model = await tfl.loadLayersModel(kerasHandler(new Uint8Array(readFileSync(at(name)))));
    const err = worst(model, 'cnn');
    assert.ok(err < TOLERANCE, `${name}: largest relative difference from Keras ${err}`);
  }
});

test('a Keras model is built once: its weights are views of a few shared buffers until each takes one typed array of its own, kept by tfjs as the values (no second build, no copy)', async () => {
  // tfjs's Zeros (or any initializer) would write a buffer of each weight's size; a second build would write them again,
  // and tfjs's decoding of weight data would write a copy of every weight.
  const backend = tf.backend();
  const write = backend.write;
  const written = [];
  backend.write = function (values, ...rest) {
    if (values?.length >= 64) written.push(values);
    return write.call(this, values, ...rest);
  };
  let model;
  try {
    model = await tfl.loadLayersModel(kerasHandler(at('mobilenetv2.keras')));
  } finally {
    backend.write = write;
  }
  const big = model.weights.filter((w) => w.shape.reduce((a, b) => a * b, 1) >= 64);
  const kept = new Set(big.map((w) => backend.readSync(w.read().dataId)));
  assert.ok(big.length > 50, `${big.length} weights`);
  assert.ok(
    big.every((w) => written.includes(backend.readSync(w.read().dataId))),
    'every weight holds the very array written for it',
  );
  const built = written.filter((v) => !kept.has(v));
  assert.is(built.length, big.length, `${written.length} arrays written for ${big.length} weights: one build, one array each`);
  const buffers = new Set(built.map((v) => v.buffer));
  const largest = built.reduce((n, v) => Math.max(n, v.byteLength), 0);
  const held = [...buffers].reduce((n, b) => n + b.byteLength, 0);
  assert.ok(buffers.size * 4 < built.length && held <= 4 * largest, `${buffers.size} buffers of ${held} bytes for the build's ${built.length} weights`);
  model.dispose();
});

test('kerasHandler: the model tfjs gets predicts bit for bit what tfjs predicts from the same weights through its own loader, and saves as tfjs and Keras know it', async () => {
  for (const name of ['cnn.keras', 'fn.keras', 'text.keras']) {
    const model = await tfl.loadLayersModel(kerasHandler(at(name)));
    let saved;
    await model.save(
      tf.io.withSaveHandler(async (a) => {
        saved = a;
        return { modelArtifactsInfo: tf.io.getModelArtifactsInfoForJSON(a) };
      }),
    );
    assert.not.match(JSON.stringify(saved.modelTopology), 'Npyts', `${name}: saved with npyts's own class names`);
    const again = await tfl.loadLayersModel(tf.io.fromMemory(saved));
    const xs = keras[name.replace('.keras', '')].inputs.map((x, i) => tf.tensor(x, undefined, model.inputs[i].dtype));
    const out = (m) => [m.predict(xs.length === 1 ? xs[0] : xs)].flat().map((t) => Array.from(t.dataSync()));
    assert.equal(out(model), out(again), name);
    model.dispose();
    again.dispose();
  }
});

test('kerasHandler: onProgress as each weight arrives, never back, ending at the bytes of every weight; an abort halfway leaves no model and no tensor', async () => {
  const seen = [];
  const model = await tfl.loadLayersModel(kerasHandler(at('cnn.keras'), { onProgress: (p) => seen.push(p) }));
  const total = model.weights.reduce((n, w) => n + 4 * w.shape.reduce((a, b) => a * b, 1), 0);
  assert.ok(seen.length >= model.weights.length / 2, `${seen.length} reports for ${model.weights.length} weights`);
  assert.ok(
    seen.every((p, i) => p.total === total && (i === 0 || p.bytes > seen[i - 1].bytes)),
    JSON.stringify(seen),
  );
  assert.is(seen.at(-1).bytes, total);
  const names = new Set(model.weights.map((w) => w.originalName));
  assert.ok(
    seen.every((p) => names.has(p.tensor)),
    JSON.stringify(seen.map((p) => p.tensor)),
  );
  model.dispose();

  const before = tf.memory().numTensors;
  const controller = new AbortController();
  const err = await tfl
    .loadLayersModel(
      kerasHandler(at('cnn.keras'), {
        signal: controller.signal,
        onProgress: (p) => p.bytes >= p.total / 2 && controller.abort(),
      }),
    )
    .then(
      () => null,
      (e) => e,
    );
  assert.is(err?.name, 'AbortError', String(err));
  assert.is(tf.memory().numTensors, before, 'tensors left behind by an aborted load');
});

test('a .keras whose config.json is not a model is refused as BAD_MODEL', async () => {
  const e = await npyErrorOf(() => tfl.loadLayersModel(kerasHandler(at('not_a_model.keras'))));
  assert.is(e.code, 'BAD_MODEL');
  assert.match(e.message, 'not a Sequential or Functional model');
});

test('a .keras whose models nest 200 deep is refused (BAD_MODEL), not walked into a stack overflow', async () => {
  const e = await npyErrorOf(() => tfl.loadLayersModel(kerasHandler(at('deep.keras'))));
  assert.is(e.code, 'BAD_MODEL');
  assert.match(e.message, 'models nest more than 64 deep');
});

test("Keras's test_nested_functional_model_saving: two nested Functional models, two inputs and outputs, predict what Keras predicts", async () => {
  const model = await tfl.loadLayersModel(kerasHandler(at('nested_fn.keras')));
  const err = worst(model, 'nested_fn');
  assert.ok(err < TOLERANCE, `largest relative difference from Keras ${err}`);
});

test("LecunNormal/LecunUniform initializers (tfjs's LeCun...) and an activity_regularizer (dropped: a training loss only) load and predict as Keras", async () => {
  const model = await tfl.loadLayersModel(kerasHandler(at('lecun.keras')));
  const err = worst(model, 'lecun');
  assert.ok(err < TOLERANCE, `largest relative difference from Keras ${err}`);
});

test("a Sequential nested in a Sequential predicts as Keras, and dispose() leaves no tensor behind (as tfjs's own loader)", async () => {
  const before = tf.memory().numTensors;
  const model = await tfl.loadLayersModel(kerasHandler(at('nested_seq.keras')));
  const err = worst(model, 'nested_seq');
  assert.ok(err < TOLERANCE, `largest relative difference from Keras ${err}`);
  model.dispose();
  assert.is(tf.memory().numTensors, before, 'tensors left after dispose()');
});

test('configs nested 100 000 deep (an option, call kwargs) and a legacy model_config 30 000 deep are refused (BAD_KERAS), not a stack overflow', async () => {
  for (const name of ['deep_value.keras', 'deep_kwargs.keras', 'deep_config.h5']) {
    const e = await npyErrorOf(() => tfl.loadLayersModel(kerasHandler(at(name))));
    assert.is(e.code, 'BAD_KERAS', name);
    assert.match(e.message, 'nests deeper than 1000 levels', name);
  }
});

test('sizes no file holds (units=2**53, batch_shape 2**40) and negative units are refused before anything is allocated', async () => {
  const units = await npyErrorOf(() => tfl.loadLayersModel(kerasHandler(at('huge_units.keras'))));
  assert.is(units.code, 'BAD_MODEL');
  assert.match(units.message, 'units=9007199254740992 is not a positive integer');
  const input = await npyErrorOf(() => tfl.loadLayersModel(kerasHandler(at('huge_input.keras'))));
  assert.is(input.code, 'WEIGHT_MISMATCH');
  assert.match(input.message, 'shape [1099511627776, 8]');
  assert.match(input.message, 'larger than any tensor the file holds');
  const negative = await npyErrorOf(() => tfl.loadLayersModel(kerasHandler(at('negative_units.keras'))));
  assert.is(negative.code, 'BAD_MODEL');
  assert.match(negative.message, 'units=-3 is not a positive integer');
});

test("class names and an initializer named after Object's own members (constructor, __proto__) are refused as classes tfjs lacks", async () => {
  const e = await npyErrorOf(() => tfl.loadLayersModel(kerasHandler(at('own_members.keras'))));
  assert.is(e.code, 'UNSUPPORTED_LAYER');
  assert.match(e.message, '(constructor): tfjs has no constructor layer');
  assert.match(e.message, '(__proto__): tfjs has no __proto__ layer');
  assert.match(e.message, 'initializer constructor (tfjs has none)');
  assert.match(e.message, 'regularizer hasOwnProperty (tfjs has none)');
});

test('saving through kerasHandler to a URL or bytes is refused (BAD_TARGET); saving is tested in keras-save.test.mjs', async () => {
  const model = await tfl.loadLayersModel(kerasHandler(at('cnn.keras')));
  for (const target of [new URL('https://example.org/out.keras'), new Uint8Array(4)]) {
    const e = await npyErrorOf(() => model.save(kerasHandler(target)));
    assert.is(e.code, 'BAD_TARGET');
    assert.match(e.message, 'saves to a path');
  }
  const e = await npyErrorOf(() => tfl.loadLayersModel(kerasHandler(() => {})));
  assert.is(e.code, 'BAD_TARGET');
});

/** The CNN of keras_models.py built by hand in tfjs, its layers named as Keras named them. */
function handBuiltCnn({ lastUnits = 5 } = {}) {
  return tfl.sequential({
    layers: [
      tfl.layers.conv2d({ name: 'conv2d', inputShape: [8, 8, 3], filters: 4, kernelSize: 3, activation: 'relu', padding: 'same' }),
      tfl.layers.batchNormalization({ name: 'batch_normalization' }),
      tfl.layers.maxPooling2d({ name: 'max_pooling2d', poolSize: 2 }),
      tfl.layers.conv2d({ name: 'conv2d_1', filters: 6, kernelSize: 3, activation: 'swish' }),
      tfl.layers.flatten({ name: 'flatten' }),
      tfl.layers.dense({ name: 'dense', units: lastUnits, activation: 'softmax' }),
    ],
  });
}

test("assignWeights: a weights-only .weights.h5 into a tfjs model built by hand, paired by each layer's group path as Keras pairs it", async () => {
  const model = handBuiltCnn();
  await assignWeights(model, at('cnn.weights.h5'));
  const err = worst(model, 'cnn');
  assert.ok(err < TOLERANCE, `largest relative difference from Keras ${err}`);
});

test('assignWeights refuses a .weights.h5 whose shapes disagree with the model, and assigns nothing', async () => {
  const model = handBuiltCnn({ lastUnits: 7 });
  const before = model.getWeights().map((w) => w.dataSync().slice());
  const e = await npyErrorOf(() => assignWeights(model, at('cnn.weights.h5')));
  assert.is(e.code, 'WEIGHT_MISMATCH');
  assert.match(e.message, 'dense/kernel');
  model.getWeights().forEach((w, i) => assert.equal(w.dataSync(), before[i], model.weights[i].name));
});

// Keras pairs by each layer's group path (layers/<snake_case class>[_<n>], in the model's layer order) and never
// reads the vars groups' name attributes: keras_models.py swaps two Dense layers' name attributes, and loads a
// .weights.h5 into a freshly built model whose layers Keras named otherwise.
test('a .keras whose two vars groups have their name attributes swapped predicts what Keras predicts from it (the names are not read)', async () => {
  const model = await tfl.loadLayersModel(kerasHandler(at('swapped.keras')));
  const err = worst(model, 'swapped');
  assert.ok(err < TOLERANCE, `largest relative difference from Keras ${err}`);
});

/** keras_models.py's twin model built by hand in tfjs, its layers named `names` (tfjs's own names where absent). */
const handBuiltTwin = (names = [{}, {}]) =>
  tfl.sequential({
    layers: [tfl.layers.dense({ ...names[0], inputShape: [4], units: 4, activation: 'tanh' }), tfl.layers.dense({ ...names[1], units: 4 })],
  });

test('assignWeights: a .weights.h5 whose name attributes are swapped gives what Keras load_weights gives', async () => {
  const model = handBuiltTwin([{ name: 'first' }, { name: 'second' }]);
  await assignWeights(model, at('swapped.weights.h5'));
  const err = worst(model, 'swapped_weights');
  assert.ok(err < TOLERANCE, `largest relative difference from Keras ${err}`);
});

test("assignWeights: a model of the same layers under other names (a fresh build's) loads a .weights.h5, as Keras's load_weights does", async () => {
  const model = handBuiltTwin();
  assert.not.equal(
    model.layers.map((l) => l.name),
    ['first', 'second'],
  );
  await assignWeights(model, at('twin.weights.h5'));
  const err = worst(model, 'fresh');
  assert.ok(err < TOLERANCE, `largest relative difference from Keras ${err}`);
});

test("assignWeights refuses a model whose layers are not Keras's in Keras's order, naming the group it looked for", async () => {
  // The twin's second Dense is a BatchNormalization here: its group, layers/batch_normalization, is not in the file.
  const model = tfl.sequential({
    layers: [tfl.layers.dense({ inputShape: [4], units: 4 }), tfl.layers.batchNormalization()],
  });
  const e = await npyErrorOf(() => assignWeights(model, at('twin.weights.h5')));
  assert.is(e.code, 'WEIGHT_MISMATCH');
  assert.match(e.message, "4 weights in the model, 0 in the file's group layers/batch_normalization");
  assert.match(e.message, 'layers/<snake_case class>[_<n>]');
});

test('assignWeights: a .weights.h5 with no name attributes at all loads as Keras loads it; one whose variables skip a number is refused, as Keras refuses it', async () => {
  const model = handBuiltTwin();
  await assignWeights(model, at('nameless.weights.h5'));
  const err = worst(model, 'nameless');
  assert.ok(err < TOLERANCE, `largest relative difference from Keras ${err}`);
  // The second Dense's variables are numbered 1 and 2: Keras reads '0' and fails.
  assert.match(keras.gap, "'0'");
  const before = model.getWeights().map((w) => w.dataSync().slice());
  const e = await npyErrorOf(() => assignWeights(model, at('gap.weights.h5')));
  assert.is(e.code, 'WEIGHT_MISMATCH');
  assert.match(e.message, "layers/dense_1/vars holds 2 variables but no '0'");
  model.getWeights().forEach((w, i) => assert.equal(w.dataSync(), before[i], model.weights[i].name));
});

test("a legacy .h5 is paired by the order of its layers, as Keras's legacy_h5_format pairs it: a model under other names loads it, reversed layer_names load crossed as in Keras", async () => {
  const model = handBuiltTwin();
  await assignWeights(model, at('twin.h5'));
  let err = worst(model, 'fresh_h5');
  assert.ok(err < TOLERANCE, `largest relative difference from Keras ${err}`);
  const reversed = await tfl.loadLayersModel(kerasHandler(at('reversed.h5')));
  err = worst(reversed, 'reversed_h5');
  assert.ok(err < TOLERANCE, `reversed layer_names: largest relative difference from Keras ${err}`);
  const e = await npyErrorOf(() => assignWeights(tfl.sequential({ layers: [tfl.layers.dense({ inputShape: [4], units: 4 })] }), at('twin.h5')));
  assert.is(e.code, 'WEIGHT_MISMATCH');
  assert.match(e.message, "the model has 1 layers with weights, the file's layer_names 2");
});

test('a model with layers and options tfjs cannot build is refused before anything is built, every one listed', async () => {
  // Its GRU (reset_after=True), UnitNormalization, hard_silu and Keras 3's hard_sigmoid (relu6(x + 3) / 6,
  // not tfjs's 0.2x + 0.5) are built once kerasHandler has imported @npyts/tfjs/keras-layers for them
  // (keras-layers.test.mjs); what the entry cannot build is refused, every part listed.
  const e = await npyErrorOf(() => tfl.loadLayersModel(kerasHandler(at('unsupported.keras'))));
  assert.is(e.code, 'UNSUPPORTED_LAYER');
  assert.match(e.message, "(ReLU): negative_slope=0.1, threshold=0 (tfjs's ReLU has max_value only)");
  assert.match(e.message, '(GlobalAveragePooling1D): keepdims=True');
  assert.match(e.message, "(ELU): alpha=0.5 (tfjs's ELU layer has alpha=1 only)");
  assert.match(e.message, 'tfjs cannot build 3 parts');
  assert.not.match(e.message, '@npyts/tfjs/keras-layers');
});

test("Keras 3's hard_sigmoid and hard_silu load (kerasHandler imports @npyts/tfjs/keras-layers for them) and compute Keras's functions (not tfjs's Keras 2 hardSigmoid)", async () => {
  const model = await tfl.loadLayersModel(kerasHandler(at('hard.keras')));
  const err = worst(model, 'hard');
  assert.ok(err < TOLERANCE, `largest relative difference from Keras ${err}`);
});

test.run();
