// @npyts/tfjs in a real Chromium (Debian's, through playwright-core): the model numpy built (embedding,
// conv2d, batchnorm, dense; test/helpers/models.py) loads with tf.loadLayersModel(npzHandler(URL
// relative to the page)) and predicts numpy's answers; model.save(npzHandler(function)) in the page
// gives an archive numpy reads weight by weight; a Keras 3 transformer block loads with kerasHandler
// (which imports @npyts/tfjs/keras-layers itself) and predicts Keras's answers.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleForPage, pageOverData } from '../helpers/chromium.mjs';
import { python, scratch } from '../helpers/numpy.mjs';
import { decodeNpz } from '@npyts/core';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = scratch('npyts-tfjs-browser-');
const expected = JSON.parse(execFileSync('python3', ['-W', 'ignore', join(root, 'test', 'helpers', 'models.py'), 'build', dir], { encoding: 'utf8' }));
// Real PyTorch models (Debian's python3-torch), exported as the README says: cnn.npz among them.
const hasTorch = spawnSync('/usr/bin/python3', ['-c', 'import torch'], { stdio: 'ignore' }).status === 0;
if (hasTorch) execFileSync('/usr/bin/python3', [join(root, 'test', 'helpers', 'torch_models.py'), 'build', dir]);

// Keras 3 transformer blocks (.keras) whose MultiHeadAttention takes one tensor as query and value, with
// the residual from an inner layer (test/helpers/keras_layers.py), and Keras's predictions of them.
execFileSync('python3', ['-W', 'ignore', join(root, 'test', 'helpers', 'keras_layers.py'), dir, 'blocks'], {
  env: { ...process.env, KERAS_BACKEND: 'torch' },
  stdio: ['ignore', 'ignore', 'inherit'],
});
const blocks = decodeNpz(readFileSync(join(dir, 'cases.npz')));

// The page's code: tfjs and @npyts/tfjs as a browser bundle of the built packages.
await bundleForPage(
  "import '@tensorflow/tfjs-backend-cpu'; export * as tf from '@tensorflow/tfjs-core'; export * as tfl from '@tensorflow/tfjs-layers'; export { npzHandler, kerasHandler, assignWeights, checkModel } from '@npyts/tfjs'; export { twins } from './test/helpers/torch-twins.mjs';",
  join(dir, 'bundle.js'),
);

// A page in /data/, so that 'keras.npz' is a URL relative to it.
const { page, problems, close } = await pageOverData(dir);

test('the numpy-built model loads by a relative URL in the page and predicts what numpy computes', async () => {
  const result = await page.evaluate(async (tokens) => {
    const { tf, tfl, npzHandler } = await import('/data/bundle.js');
    await tf.setBackend('cpu');
    const model = await tfl.loadLayersModel(npzHandler('keras.npz'));
    const y = model.predict(tf.tensor2d(tokens, undefined, 'float32'));
    return { layers: model.layers.map((l) => l.getClassName()), values: Array.from(await y.data()) };
  }, expected.tokens);
  assert.equal(result.layers, ['InputLayer', 'Embedding', 'Reshape', 'Conv2D', 'BatchNormalization', 'Flatten', 'Dense']);
  const want = expected.predictions.flat();
  const worst = Math.max(...result.values.map((v, i) => Math.abs(v - want[i]) / Math.max(1, Math.abs(want[i]))));
  assert.ok(worst < 1e-5, `largest relative difference from numpy ${worst}`);
});

test('model.save(npzHandler(function)) in the page: numpy reads every weight by its Keras name, exactly', async () => {
  const saved = await page.evaluate(async () => {
    const { tfl, npzHandler } = await import('/data/bundle.js');
    const model = await tfl.loadLayersModel(npzHandler('keras.npz'));
    let bytes = null;
    await model.save(
      npzHandler((b) => {
        bytes = b;
      }),
    );
    return Array.from(bytes);
  });
  const file = join(dir, 'saved-in-page.npz');
  writeFileSync(file, Uint8Array.from(saved));
  const same = python(`
a, b = np.load(${JSON.stringify(join(dir, 'keras.npz'))}), np.load(${JSON.stringify(file)})
names = sorted(k for k in a.files if k != 'model.json')
print(names == sorted(k for k in b.files if k != 'model.json') and all(np.array_equal(a[k], b[k]) and a[k].dtype == b[k].dtype for k in names))`).trim();
  assert.is(same, 'True');
  assert.equal(problems, []);
});

(hasTorch ? test : test.skip)(
  "a PyTorch CNN (Conv2d, BatchNorm2d, MaxPool, flatten, Linear) loads in the page with layout 'pytorch' and predicts what PyTorch predicts",
  async () => {
    const r = await page.evaluate(async () => {
      const { tf, twins, assignWeights, checkModel } = await import('/data/bundle.js');
      await tf.setBackend('cpu');
      const model = twins.cnn();
      await assignWeights(model, 'cnn.npz', { layout: 'pytorch' });
      return checkModel(model, 'cnn.npz');
    });
    assert.ok(r.compared === 20 && r.maxAbsDiff < 1e-4, JSON.stringify(r));
    assert.equal(problems, []);
  },
);

test('a Keras transformer block loads by kerasHandler in the page, which brings in @npyts/tfjs/keras-layers itself, and predicts what Keras predicts, twice', async () => {
  const x = blocks.getSync('block_pre_norm__x');
  const r = await page.evaluate(
    async ([data, shape]) => {
      const { tf, tfl, kerasHandler } = await import('/data/bundle.js');
      await tf.setBackend('cpu');
      const registered = () => 'MultiHeadAttention' in tf.serialization.SerializationMap.getMap().classNameMap;
      const before = registered();
      const model = await tfl.loadLayersModel(kerasHandler('block_pre_norm.keras'));
      const input = tf.tensor(data, shape);
      const runs = [];
      for (let i = 0; i < 2; i++) {
        const y = model.predict(input);
        const values = Array.from(await y.data());
        y.dispose();
        runs.push({ values, tensors: tf.memory().numTensors });
      }
      return { before, after: registered(), runs };
    },
    [Array.from(x.data), x.shape],
  );
  assert.equal([r.before, r.after], [false, true], 'MultiHeadAttention registered before and after loading');
  const want = blocks.getSync('block_pre_norm__y').data;
  for (const run of r.runs) {
    const worst = run.values.reduce((m, v, i) => Math.max(m, Math.abs(v - want[i]) / (1e-5 + Math.abs(want[i]))), 0);
    assert.ok(worst < 1, `off by ${worst}× the tolerance (1e-5, absolute and relative)`);
  }
  assert.is(r.runs[1].tensors, r.runs[0].tensors, 'tensors held after each predict');
  assert.equal(problems, []);
});

test.after(close);

test.run();
