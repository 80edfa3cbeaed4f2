// `npm start`: NumPy-trained weights into tfjs and @stdlib, the way our users do it.
// 1. tfjs-layers loads the model in demo/digits-mlp.npz (written by numpy: weights, held-out digits,
//    numpy's predictions, and a Keras model.json) through @npyts/tfjs's npzHandler, and its
//    predictions are compared with numpy's.
// 2. A CNN trained in PyTorch (demo/train_cnn.py, exported with np.savez as the README says) runs in
//    tfjs: the same network built with tfjs layers, its state_dict assigned with layout 'pytorch'.
// 3. @npyts/stdlib views the first model's weights as stdlib ndarrays (no copies) and summarises them.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs-core';
import { loadLayersModel } from '@tensorflow/tfjs-layers';
import { npzHandler, toTensor } from '@npyts/tfjs';
import { toStdlib } from '@npyts/stdlib';
import { openNpz, openNpzSync } from '@npyts/core/node';
import { runDigitsCnn } from './digits-cnn.mjs';

const archivePath = join(dirname(fileURLToPath(import.meta.url)), 'digits-mlp.npz');

// tfjs's CPU backend greets Node users on its first write, recommending tfjs-node (which cannot
// install here); make that first write with warnings muted to keep the demo's output readable.
await import('@tensorflow/tfjs-backend-cpu');
await tf.setBackend('cpu');
const warn = console.warn;
console.warn = () => {};
tf.scalar(0).dispose();
console.warn = warn;

// --- tfjs ---------------------------------------------------------------------------------
// The archive is the whole model: weights as members under Keras' names, the topology as its
// model.json member. tfjs builds the model and takes the weights through npzHandler; arrays that
// belong to no layer (the test data) are left out.
const model = await loadLayersModel(npzHandler(archivePath));
const archive = openNpzSync(archivePath);
const pixels = toTensor(archive.getSync('x_test')); // uint8 → int32
const labels = toTensor(archive.getSync('y_test')); // int64 → int32, range-checked
const numpyPredictions = toTensor(archive.getSync('numpy_predictions'));
const numpyAccuracy = archive.getSync('numpy_accuracy').get();
const predictions = tf.tidy(() => tf.argMax(model.predict(tf.div(tf.cast(pixels, 'float32'), 16)), 1));
const n = labels.shape[0];
const count = async (a, b) => (await tf.sum(tf.cast(tf.equal(a, b), 'int32')).data())[0];
const correct = await count(predictions, labels);
const agree = await count(predictions, numpyPredictions);
const accuracy = correct / n;

console.log(`tfjs (${tf.getBackend()} backend): ${correct}/${n} test digits right, accuracy ${accuracy.toFixed(4)}`);
console.log(`numpy's accuracy from the archive:      ${numpyAccuracy.toFixed(4)}`);
console.log(`predictions agreeing with numpy's: ${agree}/${n}`);

// --- PyTorch ----------------------------------------------------------------------------------
const torchArchive = await openNpz(join(dirname(archivePath), 'digits-cnn.npz'));
const cnn = await runDigitsCnn(torchArchive);
await torchArchive.close();
console.log(
  `\nPyTorch CNN in tfjs: ${cnn.correct}/${cnn.n} test digits right (PyTorch: ${cnn.torchCorrect}/${cnn.n}); predictions agreeing with PyTorch's: ${cnn.agree}/${cnn.n}; largest logit difference ${cnn.maxAbsDiff.toExponential(2)}`,
);

// --- @stdlib --------------------------------------------------------------------------------
console.log('\nthe same weights as @stdlib/ndarray views of the decoded arrays (no further copies):');
for (const name of ['dense/kernel', 'dense/bias', 'dense_1/kernel', 'dense_1/bias']) {
  const array = archive.getSync(name);
  const view = toStdlib(array);
  let sum = 0,
    sumSq = 0,
    min = Infinity,
    max = -Infinity;
  const visit = (idx, axis) => {
    if (axis === view.shape.length) {
      const v = view.get(...idx);
      sum += v;
      sumSq += v * v;
      min = Math.min(min, v);
      max = Math.max(max, v);
      return;
    }
    for (let i = 0; i < view.shape[axis]; i++) visit([...idx, i], axis + 1);
  };
  visit([], 0);
  const count = view.length;
  const mean = sum / count;
  const std = Math.sqrt(sumSq / count - mean * mean);
  console.log(
    `  ${name.padEnd(15)} ${array.dtype.str.padEnd(4)} ${JSON.stringify(view.shape).padEnd(8)} ${view.order.padEnd(12)} mean ${mean.toFixed(4).padStart(8)}  std ${std.toFixed(4)}  min ${min.toFixed(4).padStart(8)}  max ${max.toFixed(4)}`,
  );
}
archive.close();

const ok = agree === n && Math.abs(accuracy - numpyAccuracy) < 1e-12 && cnn.agree === cnn.n;
console.log(ok ? "\nOK: tfjs reproduces numpy exactly, and PyTorch's CNN on every digit." : '\nMISMATCH between tfjs and numpy or PyTorch.');
process.exitCode = ok ? 0 : 1;
