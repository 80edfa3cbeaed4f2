// @npyts/tfjs/keras-layers (issue 56): the Keras 3 layers and activations tfjs-layers 4.22 lacks or
// cannot build as Keras configures them. Keras 3 itself (test/helpers/keras_layers.py, one process,
// KERAS_BACKEND=torch) builds each layer with a non-trivial config and random weights and saves its
// config, inputs, get_weights() and inference output; here tfjs builds the layer from that config
// through its own deserializer (tfl.models.modelFromJSON, which camel-cases Keras's keys as for any
// Keras JSON), takes Keras's weights in Keras's order (their shapes checked one by one), predicts,
// and agrees within float32 rounding: |tfjs − keras| ≤ 2e-5 + 2e-5·|keras| (the worst seen is
// below 3e-6; a wrong gate order, bias row, scale or axis is off by more than 1e-2).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs-core';
import * as tfl from '@tensorflow/tfjs-layers';
import { decodeNpz } from '@npyts/core';
import { kerasHandler } from '@npyts/tfjs';
import { KERAS_ACTIVATION_CLASSES, KERAS_INFERENCE_IDENTITIES, KERAS_LAYER_CLASSES, kerasActivation } from '@npyts/tfjs/keras-layers';
import { python, scratch } from '../helpers/numpy.mjs';
import { useCpuBackend } from '../helpers/tfjs.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';

await useCpuBackend();
const dir = scratch('npyts-keras-layers-');
const script = join(dirname(fileURLToPath(import.meta.url)), '..', 'helpers', 'keras_layers.py');
execFileSync('python3', ['-W', 'ignore', script, dir], { env: { ...process.env, KERAS_BACKEND: 'torch' }, stdio: ['ignore', 'ignore', 'inherit'] });
const meta = JSON.parse(readFileSync(join(dir, 'cases.json'), 'utf8'));
const truth = decodeNpz(readFileSync(join(dir, 'cases.npz')));

const ATOL = 2e-5;
const RTOL = 2e-5;
const tensorOf = (a) => tf.tensor(a.data, a.shape, a.data instanceof Int32Array ? 'int32' : 'float32');
/** The worst |got − want| / (ATOL + RTOL·|want|): at most 1 within tolerance. */
function worst(got, want) {
  assert.equal(got.shape, want.shape, 'shape');
  const g = got.dataSync();
  let bad = 0;
  for (let i = 0; i < g.length; i++) bad = Math.max(bad, Math.abs(g[i] - want.data[i]) / (ATOL + RTOL * Math.abs(want.data[i])));
  return Number.isNaN(bad) ? Number.POSITIVE_INFINITY : bad;
}

/** Keras's layer config as a translator gives it to tfjs: no dtype policy objects or initializers, activations by their tfjs names. */
function tfjsConfig(config) {
  const out = {};
  for (const [key, value] of Object.entries(config)) {
    if (key === 'dtype' || /_(initializer|regularizer|constraint)$/.test(key)) continue;
    out[key] = key === 'activation' || key === 'recurrent_activation' ? kerasActivation(value) : value;
  }
  return out;
}

/** A one-layer functional model JSON (Keras 2's form, as tfjs reads it) around the case's layer. */
function topologyOf(c) {
  const inputs = Array.from({ length: c.inputs }, (_, i) => {
    const shape = truth.getSync(`${c.name}__in${i}`).shape;
    return {
      class_name: 'InputLayer',
      name: `in${i}`,
      config: { name: `in${i}`, batch_input_shape: [null, ...shape.slice(1)], dtype: 'float32' },
      inbound_nodes: [],
    };
  });
  const name = c.config.name;
  const layer = { class_name: c.class_name, name, config: tfjsConfig(c.config), inbound_nodes: [inputs.map((i) => [i.name, 0, 0, c.kwargs])] };
  return {
    class_name: 'Model',
    config: { name: 'm', layers: [...inputs, layer], input_layers: inputs.map((i) => [i.name, 0, 0]), output_layers: [[name, 0, 0]] },
  };
}

async function built(c) {
  const model = await tfl.models.modelFromJSON({ modelTopology: topologyOf(c) });
  const layer = model.layers[model.layers.length - 1];
  assert.is(layer.getClassName(), c.class_name);
  // Keras's weights, in Keras's order and shapes.
  assert.equal(
    layer.weights.map((w) => w.shape),
    c.weights.map(([shape]) => shape),
    `${c.name}: weight shapes`,
  );
  layer.setWeights(c.weights.map((_, i) => tensorOf(truth.getSync(`${c.name}__w${i}`))));
  return model;
}

const predict = (model, c) => {
  const xs = Array.from({ length: c.inputs }, (_, i) => tensorOf(truth.getSync(`${c.name}__in${i}`)));
  return model.predict(xs.length === 1 ? xs[0] : xs);
};

const layerCases = meta.cases.filter((c) => !c.name.startsWith('identity_'));

for (const c of layerCases) {
  test(`${c.name}: ${c.class_name} built from Keras's config with Keras's weights predicts what Keras predicts`, async () => {
    const model = await built(c);
    const bad = worst(predict(model, c), truth.getSync(`${c.name}__out`));
    assert.ok(bad <= 1, `${c.name}: off by ${bad}× the tolerance`);
  });
}

test('every layer class this entry registers is tested against Keras here', () => {
  const tested = new Set(meta.cases.map((c) => c.class_name));
  assert.equal(
    KERAS_LAYER_CLASSES.filter((name) => !tested.has(name)),
    [],
  );
});

test("the layers save and load through tfjs's serialization (their configs rebuild the same layer)", async () => {
  for (const c of layerCases) {
    const model = await built(c);
    const again = await tfl.models.modelFromJSON({ modelTopology: model.toJSON(null, false) });
    again.setWeights(model.getWeights());
    const bad = worst(predict(again, c), truth.getSync(`${c.name}__out`));
    assert.ok(bad <= 1, `${c.name} after a round trip: off by ${bad}× the tolerance`);
  }
});

test("Keras 3's random augmentations, spatial dropouts and ActivityRegularization are the identity at inference, here as in Keras", async () => {
  const cases = new Map(meta.cases.filter((c) => c.name.startsWith('identity_')).map((c) => [c.class_name, c]));
  for (const name of KERAS_INFERENCE_IDENTITIES) {
    const c = cases.get(name);
    assert.ok(c, `${name} has a Keras case`);
    assert.ok(c.identity, `Keras's ${name} is the identity at inference`);
    const model = await built(c);
    assert.equal(Array.from(predict(model, c).dataSync()), Array.from(truth.getSync(`${c.name}__in0`).data), name);
  }
});

test('training through an inference identity is refused (Keras augments, drops or adds a loss there), naming the layer; predict still works', async () => {
  const [RandomFlip] = tf.serialization.SerializationMap.getMap().classNameMap.RandomFlip;
  const input = tfl.input({ shape: [3, 2] });
  const dense = tfl.layers.dense({ units: 2, kernelInitializer: 'identity' });
  const model = tfl.model({ inputs: input, outputs: new RandomFlip({ name: 'flip' }).apply(dense.apply(input)) });
  const x = tf.randomNormal([2, 3, 2]);
  model.compile({ optimizer: tf.train.sgd(0.1), loss: 'meanSquaredError' });
  const e = await npyErrorOf(() => model.trainOnBatch(x, x));
  assert.is(e.code, 'UNSUPPORTED_LAYER');
  assert.match(e.message, "RandomFlip 'flip' is the identity at inference only");
  assert.equal(Array.from(model.predict(x).dataSync()), Array.from(x.dataSync()));
});

test("Keras 3's activations by their Keras names, through kerasActivation(), compute Keras's values", () => {
  const x = tensorOf(truth.getSync('act__x'));
  const map = tf.serialization.SerializationMap.getMap().classNameMap;
  for (const name of meta.activations) {
    const tfName = kerasActivation(name);
    assert.ok(tfName && map[tfName], `${name} → ${tfName} is registered`);
    const [cls, fromConfig] = map[tfName];
    const bad = worst(fromConfig(cls, {}).apply(x), truth.getSync(`act__${name}`));
    assert.ok(bad <= 1, `${name} (${tfName}): off by ${bad}× the tolerance`);
  }
  // Every activation registered here is one of Keras's, tested above.
  const reached = new Set(meta.activations.map((n) => kerasActivation(n)));
  assert.equal(
    KERAS_ACTIVATION_CLASSES.filter((n) => !reached.has(n)),
    [],
  );
});

test("hard_sigmoid is Keras 3's relu6(x + 3) / 6, not tfjs's hardSigmoid (Keras 2's), which kerasActivation gives for Keras 2", () => {
  const x = tensorOf(truth.getSync('act__x'));
  const map = tf.serialization.SerializationMap.getMap().classNameMap;
  const [cls, fromConfig] = map.hardSigmoid;
  assert.ok(worst(fromConfig(cls, {}).apply(x), truth.getSync('act__hard_sigmoid')) > 100);
  assert.is(kerasActivation('hard_sigmoid', 2), 'hardSigmoid');
  assert.is(kerasActivation('hard_sigmoid'), 'kerasHardSigmoid');
  assert.is(kerasActivation('glu'), null);
  assert.is(kerasActivation('toString'), null);
});

test('options these layers cannot compute are refused when built, naming the option', async () => {
  const refused = [
    ['MultiHeadAttention', { num_heads: 2, key_dim: 2, attention_axes: [1, 2] }, /attention_axes/],
    ['MultiHeadAttention', { num_heads: 2, key_dim: 2, use_gate: true }, /use_gate/],
    ['EinsumDense', { equation: '...b,bc->...c', output_shape: [4] }, /ellipsis/],
    ['Conv1DTranspose', { filters: 2, kernel_size: [3], output_padding: [1] }, /output_padding/],
    ['Conv1DTranspose', { filters: 2, kernel_size: [3], dilation_rate: [2] }, /dilation_rate/],
    ['GroupNormalization', { groups: 2, axis: 1 }, /axis/],
  ];
  for (const [className, config, pattern] of refused) {
    const c = { name: 'x', class_name: className, config: { name: 'x', ...config }, kwargs: {}, inputs: 1, weights: [] };
    const shape = className === 'EinsumDense' ? [null, 3, 5] : [null, 5, 4];
    const topology = topologyOf({ ...c, inputs: 0 });
    topology.config.layers.unshift({ class_name: 'InputLayer', name: 'in0', config: { name: 'in0', batch_input_shape: shape }, inbound_nodes: [] });
    topology.config.layers[1].inbound_nodes = [[['in0', 0, 0, {}]]];
    topology.config.input_layers = [['in0', 0, 0]];
    let error;
    try {
      await tfl.models.modelFromJSON({ modelTopology: topology });
    } catch (e) {
      error = e;
    }
    assert.ok(error && pattern.test(error.message), `${className} ${JSON.stringify(config)}: ${error?.message}`);
  }
});

// Models through kerasHandler (test/helpers/keras_layers.py saves them as .keras files).
const saveScript = join(dirname(fileURLToPath(import.meta.url)), '..', 'helpers', 'keras_save.py');
/** Keras's predictions of .keras files ({ name: { file, inputs } }, inputs as nested arrays), one Python process. */
const kerasPredicts = (spec) => {
  writeFileSync(join(dir, 'spec.json'), JSON.stringify(spec));
  return JSON.parse(
    execFileSync('python3', ['-W', 'ignore', saveScript, 'load', join(dir, 'spec.json')], {
      encoding: 'utf8',
      maxBuffer: 1 << 28,
      env: { ...process.env, KERAS_BACKEND: 'torch' },
    }),
  );
};
/** Models saved as .keras here, for Keras to load and predict at the end: { name: { file, inputs, want } }. */
const savedHere = {};
async function saveForKeras(name, model, xs) {
  const file = join(dir, `saved_${name}.keras`);
  await model.save(kerasHandler(file));
  const y = model.predict(xs.length === 1 ? xs[0] : xs);
  savedHere[name] = { file, inputs: xs.map((x) => x.arraySync()), want: y };
}

for (const name of meta.blocks) {
  test(`${name}: a tensor given twice or three times to one layer call (residual from an inner layer) predicts what Keras predicts, predict after predict, holding no tensors`, async () => {
    const model = await tfl.loadLayersModel(kerasHandler(join(dir, `${name}.keras`)));
    const x = tensorOf(truth.getSync(`${name}__x`));
    const first = model.predict(x);
    const bad = worst(first, truth.getSync(`${name}__y`));
    assert.ok(bad <= 1, `${name}: off by ${bad}× the tolerance`);
    first.dispose();
    // tfjs's predict frees every tensor it made but its output: as many tensors after each predict.
    const held = tf.memory().numTensors;
    for (let i = 0; i < 3; i++) {
      const again = model.predict(x);
      assert.ok(worst(again, truth.getSync(`${name}__y`)) <= 1, `${name}: predict ${i + 2}`);
      again.dispose();
      assert.is(tf.memory().numTensors, held, `${name}: tensors held after predict ${i + 2}`);
    }
    await saveForKeras(name, model, [x]);
  });
}

// Training: one step of SGD (learning rate 0.1, mean squared error) from the weights Keras saved, on
// Keras's batch, gives the weights Keras's step gave, within |tfjs − keras| ≤ 2e-5 + 2e-5·|keras| (the
// worst seen is below 2e-6; Keras's step moves some weight of every model by more than 1e-3).
for (const c of meta.train) {
  test(`${c.name}: a loaded model with ${c.class_name} trains one SGD step to Keras's weights`, async () => {
    const model = await tfl.loadLayersModel(kerasHandler(join(dir, `train_${c.name}.keras`)));
    model.compile({ optimizer: tf.train.sgd(0.1), loss: 'meanSquaredError' });
    const xs = Array.from({ length: c.inputs }, (_, i) => tensorOf(truth.getSync(`train_${c.name}__x${i}`)));
    const weightsOf = (layer) => model.getLayer(layer).getWeights();
    const before = Object.fromEntries(Object.keys(c.layers).map((layer) => [layer, weightsOf(layer).map((w) => w.dataSync().slice())]));
    await model.trainOnBatch(xs.length === 1 ? xs[0] : xs, tensorOf(truth.getSync(`train_${c.name}__t`)));
    let moved = 0;
    for (const [layer, count] of Object.entries(c.layers)) {
      const weights = weightsOf(layer);
      assert.is(weights.length, count, `${c.name}/${layer}: weights`);
      weights.forEach((w, i) => {
        const want = truth.getSync(`train_${c.name}__${layer}__w${i}`);
        const bad = worst(w, want);
        assert.ok(bad <= 1, `${c.name}/${layer} weight ${i}: off by ${bad}× the tolerance after one step`);
        const start = before[layer][i];
        for (let j = 0; j < start.length; j++) moved = Math.max(moved, Math.abs(want.data[j] - start[j]));
      });
    }
    assert.ok(moved > 1e-3, `${c.name}: Keras's step moved the weights by ${moved} only`);
    await saveForKeras(`train_${c.name}`, model, xs);
  });
}

test('the fine-tuned models and the blocks, saved as .keras by kerasHandler, load in Keras and predict what tfjs predicts', () => {
  const names = Object.keys(savedHere);
  assert.is(names.length, meta.blocks.length + meta.train.length);
  const got = kerasPredicts(Object.fromEntries(names.map((n) => [n, { file: savedHere[n].file, inputs: savedHere[n].inputs }])));
  for (const name of names) {
    assert.not.ok(got[name].error, `${name}: ${got[name].error}`);
    const [y] = got[name].outputs;
    const bad = worst(tf.tensor(y), { shape: savedHere[name].want.shape, data: savedHere[name].want.dataSync() });
    assert.ok(bad <= 1, `${name}: Keras's prediction off by ${bad}× the tolerance`);
  }
});

// kerasHandler imports @npyts/tfjs/keras-layers itself when a model needs it, decided from the config:
// in a fresh Node process (ESM and CommonJS), a model refused for a layer the entry does not register
// (its class name spelling the entry's, as a message would) and a model of tfjs's own layers load
// without it (tfjs's GRU left in place), then a transformer block loads and predicts what Keras predicts.
const spelled = join(dir, 'spelled.keras');
python(`
import zipfile
with zipfile.ZipFile(${JSON.stringify(join(dir, 'block_merges.keras'))}) as src, zipfile.ZipFile(${JSON.stringify(spelled)}, 'w') as out:
    for item in src.infolist():
        data = src.read(item.filename)
        if item.filename == 'config.json':
            c = json.loads(data)
            next(l for l in c['config']['layers'] if l['class_name'] == 'Multiply')['class_name'] = '@npyts/tfjs/keras-layers>Shim'
            data = json.dumps(c).encode()
        out.writestr(item, data)
`);
const freshProcess = (kind) => `
const tf = ${kind === 'esm' ? "await import('@tensorflow/tfjs-core')" : "require('@tensorflow/tfjs-core')"};
${kind === 'esm' ? "await import('@tensorflow/tfjs-backend-cpu')" : "require('@tensorflow/tfjs-backend-cpu')"};
const tfl = ${kind === 'esm' ? "await import('@tensorflow/tfjs-layers')" : "require('@tensorflow/tfjs-layers')"};
const { kerasHandler } = ${kind === 'esm' ? "await import('@npyts/tfjs')" : "require('@npyts/tfjs')"};
await tf.setBackend('cpu');
const has = () => 'MultiHeadAttention' in tf.serialization.SerializationMap.getMap().classNameMap;
const before = has();
const refused = await tfl.loadLayersModel(kerasHandler(${JSON.stringify(spelled)})).then(() => 'loaded', (e) => e.code);
const spelled = has();
await tfl.loadLayersModel(kerasHandler(${JSON.stringify(join(dir, 'block_merges.keras'))}));
const plain = has();
const model = await tfl.loadLayersModel(kerasHandler(${JSON.stringify(join(dir, 'block_post_norm.keras'))}));
const x = tf.tensor(${JSON.stringify(Array.from(truth.getSync('block_post_norm__x').data))}, ${JSON.stringify(truth.getSync('block_post_norm__x').shape)});
console.log(JSON.stringify({ before, refused, spelled, plain, after: has(), y: Array.from(model.predict(x).dataSync()) }));`;

for (const kind of ['esm', 'cjs']) {
  test(`kerasHandler imports @npyts/tfjs/keras-layers itself for a model with MultiHeadAttention, decided from the config, and never for one that does not need it (${kind === 'esm' ? 'ESM' : 'CommonJS'}, a fresh process)`, () => {
    const source = kind === 'esm' ? freshProcess(kind) : `(async () => {${freshProcess(kind)}})().catch((e) => { console.error(e); process.exit(1); });`;
    const out = execFileSync(process.execPath, ['--input-type', kind === 'esm' ? 'module' : 'commonjs', '-e', source], {
      cwd: join(dirname(fileURLToPath(import.meta.url)), '..', '..'),
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const r = JSON.parse(out.trim().split('\n').pop());
    assert.is(r.refused, 'UNSUPPORTED_LAYER');
    assert.equal(
      [r.before, r.spelled, r.plain, r.after],
      [false, false, false, true],
      'MultiHeadAttention registered: before, after the refused model, after a plain model, after the block',
    );
    const want = truth.getSync('block_post_norm__y');
    const bad = worst({ shape: want.shape, dataSync: () => r.y }, want);
    assert.ok(bad <= 1, `off by ${bad}× the tolerance`);
  });
}

test('a model kerasHandler gave repeat layers, saved as tfjs model JSON, loads again where only @npyts/tfjs/keras-layers is imported (a fresh process)', async () => {
  const model = await tfl.loadLayersModel(kerasHandler(join(dir, 'block_merges.keras')));
  const topology = model.toJSON(null, false);
  assert.match(JSON.stringify(topology), 'NpytsRepeatedInput');
  const file = join(dir, 'repeats.json');
  writeFileSync(file, JSON.stringify(topology));
  const source = `
import '@tensorflow/tfjs-backend-cpu';
import * as tfl from '@tensorflow/tfjs-layers';
import { readFileSync } from 'node:fs';
import '@npyts/tfjs/keras-layers';
const model = await tfl.models.modelFromJSON({ modelTopology: JSON.parse(readFileSync(${JSON.stringify(file)}, 'utf8')) });
console.log(model.layers.map((l) => l.getClassName()).join(','));`;
  const out = execFileSync(process.execPath, ['--input-type', 'module', '-e', source], {
    cwd: join(dirname(fileURLToPath(import.meta.url)), '..', '..'),
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  assert.match(out, 'NpytsRepeatedInput');
});

test.run();
