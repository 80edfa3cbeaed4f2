// `npm start`: NumPy-trained weights into tfjs and @stdlib, the way our users do it.
// 1. @npyts/tfjs assigns demo/digits-mlp.npz to tfjs variables (Keras-style names, shapes and dtypes
//    checked), runs the held-out digits and compares with numpy's own predictions in the archive.
// 2. @npyts/stdlib views the same weights as stdlib ndarrays (no copies) and summarises them.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs-core';
import { assignWeights, toTensor } from '@npyts/tfjs';
import { toStdlib } from '@npyts/stdlib';
import { loadNpzSync } from '@npyts/core/node';

const archivePath = join(dirname(fileURLToPath(import.meta.url)), 'digits-mlp.npz');

// tfjs's CPU backend greets Node users on its first write, recommending tfjs-node (which cannot
// install here); make that first write with warnings muted to keep the demo's output readable.
await import('@tensorflow/tfjs-backend-cpu');
await tf.setBackend('cpu');
const warn = console.warn;
console.warn = () => {};
tf.scalar(0).dispose();
console.warn = warn;

// --- tfjs -----------------------------------------------------------------------------------
const layers = { 'dense/kernel:0': [64, 32], 'dense/bias:0': [32], 'dense_1/kernel:0': [32, 10], 'dense_1/bias:0': [10] };
const variables = Object.entries(layers).map(([name, shape]) => tf.variable(tf.zeros(shape), true, name));
const archive = loadNpzSync(archivePath);
await assignWeights(variables, archive, { ignoreUnused: true }); // ':0' suffixes map to the archive's names
const [w1, b1, w2, b2] = variables;

const pixels = toTensor(archive.get('x_test'));            // uint8 → int32
const labels = toTensor(archive.get('y_test'));            // int64 → int32, range-checked
const numpyPredictions = toTensor(archive.get('numpy_predictions'));
const numpyAccuracy = archive.get('numpy_accuracy').get();
// tfjs-core alone has no chained ops (x.add(...)); its functions are the same operations.
const predictions = tf.tidy(() => {
  const x = tf.div(tf.cast(pixels, 'float32'), 16);
  const hidden = tf.relu(tf.add(tf.matMul(x, w1), b1));
  return tf.argMax(tf.add(tf.matMul(hidden, w2), b2), 1);
});
const n = labels.shape[0];
const count = async (a, b) => (await tf.sum(tf.cast(tf.equal(a, b), 'int32')).data())[0];
const correct = await count(predictions, labels);
const agree = await count(predictions, numpyPredictions);
const accuracy = correct / n;

console.log(`tfjs (${tf.getBackend()} backend): ${correct}/${n} test digits right, accuracy ${accuracy.toFixed(4)}`);
console.log(`numpy's accuracy from the archive:      ${numpyAccuracy.toFixed(4)}`);
console.log(`predictions agreeing with numpy's: ${agree}/${n}`);

// --- @stdlib --------------------------------------------------------------------------------
console.log('\nthe same weights as @stdlib/ndarray views of the decoded arrays (no further copies):');
for (const name of ['dense/kernel', 'dense/bias', 'dense_1/kernel', 'dense_1/bias']) {
  const array = archive.get(name);
  const view = toStdlib(array);
  let sum = 0, sumSq = 0, min = Infinity, max = -Infinity;
  const visit = (idx, axis) => {
    if (axis === view.shape.length) {
      const v = view.get(...idx);
      sum += v; sumSq += v * v; min = Math.min(min, v); max = Math.max(max, v);
      return;
    }
    for (let i = 0; i < view.shape[axis]; i++) visit([...idx, i], axis + 1);
  };
  visit([], 0);
  const count = view.length;
  const mean = sum / count;
  const std = Math.sqrt(sumSq / count - mean * mean);
  console.log(`  ${name.padEnd(15)} ${array.dtype.str.padEnd(4)} ${JSON.stringify(view.shape).padEnd(8)} ${view.order.padEnd(12)} mean ${mean.toFixed(4).padStart(8)}  std ${std.toFixed(4)}  min ${min.toFixed(4).padStart(8)}  max ${max.toFixed(4)}`);
}
archive.close();

const ok = agree === n && Math.abs(accuracy - numpyAccuracy) < 1e-12;
console.log(ok ? '\nOK: tfjs reproduces numpy exactly.' : '\nMISMATCH between tfjs and numpy.');
process.exitCode = ok ? 0 : 1;
