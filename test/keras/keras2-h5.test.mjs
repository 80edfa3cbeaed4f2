// Keras 2's legacy .h5 files into tfjs: tf.loadLayersModel(kerasHandler('m.h5')) on files written by Keras 2
// itself (the copy tensorflow-cpu ships as tensorflow.python.keras, its saving/hdf5_format.py; installed
// apart by test/helpers/tf2.mjs), compared with Keras 2's own predictions (test/helpers/keras2_models.py).
// Keras 2's config form: inbound_nodes as nested lists, batch_input_shape on a layer, dtype strings,
// layer_names/weight_names; its hard_sigmoid (0.2x + 0.5), its LSTM and GRU (reset_after=False).
// Tolerance: 1e-5 relative to max(1, |Keras's value|), as in test/adapters/keras.test.mjs.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import * as tfl from '@tensorflow/tfjs-layers';
import { kerasHandler, assignWeights } from '@npyts/tfjs';
import { scratch } from '../helpers/numpy.mjs';
import { useCpuBackend } from '../helpers/tfjs.mjs';
import { kerasTruth, worstRelativeError } from '../helpers/keras-truth.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';
import { installTf2 } from '../helpers/tf2.mjs';

await useCpuBackend();

const TOLERANCE = 1e-5;
const dir = scratch();
// One Python process builds, saves and runs every model of this file, with Keras 2 on its PYTHONPATH.
const keras = kerasTruth('keras2_models.py', dir, { PYTHONPATH: installTf2() });
const at = (name) => join(dir, name);

/** The largest difference between tfjs's predictions and Keras's, relative to max(1, |Keras's|). */
const worst = (model, name) => worstRelativeError(model, keras[name]);

/** The largest error seen in this file, printed at its end. */
let worstSeen = 0;

/** Loads `<name>.h5`, checks its layer names are Keras's and its predictions Keras's. */
async function loadsAndMatches(name) {
  const model = await tfl.loadLayersModel(kerasHandler(at(`${name}.h5`)));
  assert.equal(
    model.layers.filter((l) => l.getClassName() !== 'InputLayer').map((l) => l.name),
    keras[name].layers,
  );
  const err = worst(model, name);
  worstSeen = Math.max(worstSeen, err);
  assert.ok(err < TOLERANCE, `${name}: largest relative difference from Keras ${err}`);
  return model;
}

test('the fixtures are Keras 2 files: their keras_version attribute (read by h5py) is 2.x', () => {
  const versions = JSON.parse(
    execFileSync(
      'python3',
      [
        '-c',
        'import h5py, json, sys; print(json.dumps([str(h5py.File(p, "r").attrs["keras_version"]) for p in sys.argv[1:]]))',
        at('fn.h5'),
        at('conv1d.weights.h5'),
      ],
      { encoding: 'utf8' },
    ),
  );
  for (const v of versions) assert.ok(v.startsWith('2.'), `keras_version ${v}`);
});

test('a Functional model: two inputs and outputs, Conv2D, DepthwiseConv2D, SeparableConv2D, pooling, a shared Dense, Add, Concatenate', async () => {
  const model = await loadsAndMatches('fn');
  assert.equal(
    model.inputs.map((t) => t.sourceLayer.name),
    ['image', 'vector'],
  );
  assert.equal(model.outputNames, ['probs', 'score']);
});

test("a Sequential model whose first layer carries batch_input_shape: padding, cropping, upsampling, Conv2DTranspose, advanced activations, Keras 2's hard_sigmoid", async () => {
  await loadsAndMatches('seq');
});

test('a Sequential 1D model: Conv1D (dilated), pooling', async () => {
  await loadsAndMatches('conv1d');
});

test("a text model: Embedding, Keras 2's LSTM and GRU (hard_sigmoid, reset_after=False), SimpleRNN going backwards", async () => {
  await loadsAndMatches('text');
});

test('a nested Sequential with a frozen layer: Keras 2 lists its weights trainable first (the free Dense, then the frozen one, of equal shapes), as tfjs orders them', async () => {
  await loadsAndMatches('nested');
});

test("Reshape with a -1 (to (-1, 2), then to (-1,) before a Dense): its size given, which tfjs's Reshape leaves unknown", async () => {
  const model = await loadsAndMatches('reshape');
  assert.equal(
    model.layers.filter((l) => l.getClassName() !== 'InputLayer').map((l) => [l.getClassName(), l.outputShape]),
    [
      ['Reshape', [null, 6, 2]],
      ['Dense', [null, 6, 3]],
      ['Reshape', [null, 18]],
      ['Dense', [null, 2]],
    ],
  );
});

test('assignWeights: a Keras 2 save_weights .h5 into the model built by hand in tfjs', async () => {
  const model = tfl.sequential({
    name: 'conv1d',
    layers: [
      tfl.layers.conv1d({ name: 'c1', inputShape: [10, 3], filters: 4, kernelSize: 3, activation: 'relu' }),
      tfl.layers.averagePooling1d({ name: 'p1', poolSize: 2 }),
      tfl.layers.conv1d({ name: 'c2', filters: 5, kernelSize: 2, dilationRate: 2, padding: 'same' }),
      tfl.layers.globalMaxPooling1d({ name: 'g' }),
      tfl.layers.dense({ name: 'd', units: 3 }),
    ],
  });
  await assignWeights(model, at('conv1d.weights.h5'));
  const err = worst(model, 'conv1d');
  worstSeen = Math.max(worstSeen, err);
  assert.ok(err < TOLERANCE, `largest relative difference from Keras ${err}`);
});

test("bilinear UpSampling2D is refused, naming the layer (Keras 2 resizes with half-pixel centers, tfjs's layer without)", async () => {
  const e = await npyErrorOf(() => tfl.loadLayersModel(kerasHandler(at('bilinear.h5'))));
  assert.is(e.code, 'UNSUPPORTED_LAYER');
  assert.match(e.message, "'upsample_bilinear' (UpSampling2D)");
  assert.match(e.message, "interpolation='bilinear'");
});

test('layers and options of Keras 2 that tfjs cannot build are refused together, each named', async () => {
  const e = await npyErrorOf(() => tfl.loadLayersModel(kerasHandler(at('unsupported.h5'))));
  assert.is(e.code, 'UNSUPPORTED_LAYER');
  assert.match(e.message, "'attention' (Attention): tfjs has no Attention layer");
  assert.match(e.message, "'grouped' (Conv1D): groups=2");
  assert.match(e.message, "'elu_half' (ELU): alpha=0.5");
  assert.match(e.message, "'leaky_relu6' (ReLU): negative_slope=0.1");
  assert.match(e.message, "'gap_keep' (GlobalAveragePooling1D): keepdims=True");
  assert.match(e.message, "'causal' (Conv1D): padding='causal'");
  assert.match(e.message, 'tfjs cannot build 6 parts');
});

test("a GRU with reset_after=True (which tfjs's own GRU throws on) loads and matches: kerasHandler imports @npyts/tfjs/keras-layers for it", async () => {
  // Last in this file: importing the entry registers its layers for the whole process.
  await loadsAndMatches('gru_reset_after');
});

test.after(() => console.log(`largest relative difference from Keras 2 seen: ${worstSeen.toExponential(2)}`));

test.run();
