// keras.applications and a transformer block end to end (issue 56): Keras 3 (test/helpers/keras_apps.py,
// one process, KERAS_BACKEND=torch) builds MobileNetV2, EfficientNetB0 and DenseNet121 (weights=None,
// 32x32 inputs, logits), a transformer block (causal MultiHeadAttention, LayerNormalization, gelu)
// and a text model (Embedding, Bidirectional(GRU), GRU: Keras 3's reset_after=True),
// gives every BatchNormalization and Normalization non-trivial statistics (calibrated on a batch so
// that the output still depends on the input, then perturbed), saves each as .keras and predicts;
// tfjs loads the .keras through kerasHandler with @npyts/tfjs/keras-layers imported (the Normalization,
// MultiHeadAttention and GRU layers come from it) and predicts the same within
// TOLERANCE, relative to max(1, |Keras's value|): float32 through 100-400 layers in another order of
// operations, the worst seen 5e-4 (EfficientNetB0, whose logits reach ~200; the others 2e-5 and less);
// with one BatchNormalization's (or EfficientNetB0's Normalization's) variance set to ones it is off by 3 and more.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs-core';
import * as tfl from '@tensorflow/tfjs-layers';
import { decodeNpz } from '@npyts/core';
import { kerasHandler } from '@npyts/tfjs';
import '@npyts/tfjs/keras-layers';
import { scratch } from '../helpers/numpy.mjs';
import { useCpuBackend } from '../helpers/tfjs.mjs';

await useCpuBackend();
const TOLERANCE = 2e-3;
const dir = scratch('npyts-keras-apps-');
const script = join(dirname(fileURLToPath(import.meta.url)), '..', 'helpers', 'keras_apps.py');
execFileSync('python3', ['-W', 'ignore', script, dir], { env: { ...process.env, KERAS_BACKEND: 'torch' }, stdio: ['ignore', 'ignore', 'inherit'] });

/** The largest |tfjs − Keras| / max(1, |Keras|) on the saved input. */
async function worst(name) {
  const model = await tfl.loadLayersModel(kerasHandler(join(dir, `${name}.keras`)));
  const truth = decodeNpz(readFileSync(join(dir, `${name}.npz`)));
  const x = truth.getSync('x');
  const y = truth.getSync('y');
  const got = model.predict(tf.tensor(x.data, x.shape, x.data instanceof Int32Array ? 'int32' : 'float32'));
  assert.equal(got.shape, y.shape);
  // Keras's answer depends on the input (a network whose signal died would pass with any weights).
  const half = y.data.length / 2;
  let spread = 0;
  let largest = 0;
  for (let i = 0; i < half; i++) {
    spread = Math.max(spread, Math.abs(y.data[i] - y.data[half + i]));
    largest = Math.max(largest, Math.abs(y.data[i]), Math.abs(y.data[half + i]));
  }
  assert.ok(spread > 0.1 * largest, `${name}: Keras gives about the same output for both inputs`);
  const g = got.dataSync();
  let err = 0;
  for (let i = 0; i < g.length; i++) err = Math.max(err, Math.abs(g[i] - y.data[i]) / Math.max(1, Math.abs(y.data[i])));
  return { err: Number.isNaN(err) ? Number.POSITIVE_INFINITY : err, model };
}

for (const [name, uses] of [
  ['mobilenetv2', ['DepthwiseConv2D', 'ReLU']],
  ['efficientnetb0', ['Normalization', 'Rescaling', 'Multiply']],
  ['densenet121', ['Concatenate', 'AveragePooling2D']],
  ['transformer', ['MultiHeadAttention', 'LayerNormalization']],
  ['textgru', ['Bidirectional', 'GRU']],
]) {
  test(`${name} saved by Keras 3 as .keras predicts in tfjs what Keras predicts`, async () => {
    const { err, model } = await worst(name);
    const classes = new Set(model.layers.map((l) => l.getClassName()));
    for (const c of uses) assert.ok(classes.has(c), `${name} has a ${c}`);
    assert.ok(err < TOLERANCE, `${name}: largest relative difference from Keras ${err}`);
  });
}

test.run();
