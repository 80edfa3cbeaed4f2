// keras.applications and a transformer block end to end (issue 56): Keras 3 (test/helpers/keras_apps.py,
// one process, KERAS_BACKEND=torch) builds MobileNetV2, EfficientNetB0 and DenseNet121 (weights=None,
// 32x32 inputs, logits) and a transformer block (causal MultiHeadAttention, LayerNormalization, gelu),
// gives every BatchNormalization and Normalization random statistics, saves each as .keras and
// predicts; tfjs loads the .keras through kerasHandler with @npyts/tfjs/keras-layers imported (the
// Normalization and MultiHeadAttention layers come from it) and predicts the same within
// TOLERANCE, relative to max(1, |Keras's value|) (float32 through ~100 layers in another order of
// operations: the worst seen is 4.5e-6, DenseNet121; with the Normalization variance of EfficientNetB0
// left at 1 it is off by far more).
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
const TOLERANCE = 1e-4;
const dir = scratch('npyts-keras-apps-');
const script = join(dirname(fileURLToPath(import.meta.url)), '..', 'helpers', 'keras_apps.py');
execFileSync('python3', ['-W', 'ignore', script, dir], { env: { ...process.env, KERAS_BACKEND: 'torch' }, stdio: ['ignore', 'ignore', 'inherit'] });

/** The largest |tfjs − Keras| / max(1, |Keras|) on the saved input. */
async function worst(name) {
  const model = await tfl.loadLayersModel(kerasHandler(join(dir, `${name}.keras`)));
  const truth = decodeNpz(readFileSync(join(dir, `${name}.npz`)));
  const x = truth.getSync('x');
  const y = truth.getSync('y');
  const got = model.predict(tf.tensor(x.data, x.shape, 'float32'));
  assert.equal(got.shape, y.shape);
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
]) {
  test(`${name} saved by Keras 3 as .keras predicts in tfjs what Keras predicts`, async () => {
    const { err, model } = await worst(name);
    const classes = new Set(model.layers.map((l) => l.getClassName()));
    for (const c of uses) assert.ok(classes.has(c), `${name} has a ${c}`);
    assert.ok(err < TOLERANCE, `${name}: largest relative difference from Keras ${err}`);
  });
}

test.run();
