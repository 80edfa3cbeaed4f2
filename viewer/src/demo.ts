/** The npm start classifier in the browser: weights from the .npz through @npyts/tfjs, on tfjs's CPU backend. */
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { assignWeights, toTensor } from '@npyts/tfjs';
import { decodeNpz } from '@npyts/core';

export async function runDemo(url: string): Promise<string> {
  await tf.setBackend('cpu');
  const res = await fetch(url);
  if (!res.ok) throw new Error(`HTTP ${res.status} for ${url}`);
  const archive = decodeNpz(new Uint8Array(await res.arrayBuffer()));
  const shapes: Record<string, number[]> = { 'dense/kernel:0': [64, 32], 'dense/bias:0': [32], 'dense_1/kernel:0': [32, 10], 'dense_1/bias:0': [10] };
  const vars = Object.entries(shapes).map(([name, shape]) => tf.variable(tf.zeros(shape), true, `${name}#${Math.random()}`));
  // Variable names must be unique per page; map them back to the archive's names.
  await assignWeights(vars, archive, { ignoreUnused: true, names: (n) => n.split('#')[0]!.replace(/:0$/, '') });
  const [w1, b1, w2, b2] = vars as [tf.Variable, tf.Variable, tf.Variable, tf.Variable];
  const pixels = toTensor(archive.get('x_test'));
  const labels = toTensor(archive.get('y_test'));
  const numpyPredictions = toTensor(archive.get('numpy_predictions'));
  const numpyAccuracy = archive.get('numpy_accuracy').get() as number;
  const predictions = tf.tidy(() => {
    const x = tf.div(tf.cast(pixels, 'float32'), 16);
    return tf.argMax(tf.add(tf.matMul(tf.relu(tf.add(tf.matMul(x, w1), b1)), w2), b2), 1);
  });
  const count = async (a: tf.Tensor, b: tf.Tensor): Promise<number> => (await tf.sum(tf.cast(tf.equal(a, b), 'int32')).data())[0]!;
  const n = labels.shape[0]!;
  const correct = await count(predictions, labels);
  const agree = await count(predictions, numpyPredictions);
  vars.forEach((v) => v.dispose());
  return `tfjs (${tf.getBackend()} backend in the browser): ${correct}/${n} right, accuracy ${(correct / n).toFixed(4)}; numpy: ${numpyAccuracy.toFixed(4)}; predictions agreeing with numpy's: ${agree}/${n}`;
}
