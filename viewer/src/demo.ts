/**
 * The npm start classifiers in the browser. The numpy one: tfjs-layers loads the model from the .npz (weights and a
 * Keras model.json member) through @npyts/tfjs's npzHandler, by a URL relative to the page. The PyTorch
 * one: demo/train_cnn.py's CNN, its state_dict assigned to the same network built in tfjs.
 */
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { loadLayersModel, type LayersModel } from '@tensorflow/tfjs-layers';
import { loadTensors, npzHandler } from '@npyts/tfjs';
import { decodeNpz } from '@npyts/core';
import { resolveUrl } from '@npyts/core/plumbing';
import { runDigitsCnn } from '../../demo/digits-cnn.mjs';

export async function runDemo(relativeUrl: string): Promise<string> {
  await tf.setBackend('cpu');
  const model = await loadLayersModel(npzHandler(relativeUrl));
  const data = await loadTensors(relativeUrl, { int64: 'check' });
  const { x_test: pixels, y_test: labels, numpy_predictions: numpyPredictions, numpy_accuracy: numpyAccuracy } = data as Record<string, tf.Tensor>;
  const predictions = tf.tidy(() => tf.argMax(model.predict(tf.div(tf.cast(pixels!, 'float32'), 16)) as tf.Tensor, 1));
  const count = async (a: tf.Tensor, b: tf.Tensor): Promise<number> => (await tf.sum(tf.cast(tf.equal(a, b), 'int32')).data())[0]!;
  const n = labels!.shape[0]!;
  const correct = await count(predictions, labels!);
  const agree = await count(predictions, numpyPredictions!);
  const accuracy = (await numpyAccuracy!.data())[0]!;
  const again = await roundTrip(model, tf.div(tf.cast(pixels!, 'float32'), 16));
  tf.dispose([...Object.values(data), predictions]);
  return `tfjs (${tf.getBackend()} backend in the browser): ${correct}/${n} right, accuracy ${(correct / n).toFixed(4)}; numpy: ${accuracy.toFixed(4)}; predictions agreeing with numpy's: ${agree}/${n}; ${again}`;
}

/** model.save(npzHandler(sink)) in the page and back through loadLayersModel: the same outputs, bit for bit. */
async function roundTrip(model: LayersModel, x: tf.Tensor): Promise<string> {
  let saved: Uint8Array | null = null;
  await model.save(
    npzHandler((bytes) => {
      saved = bytes;
    }),
  );
  if (!saved) throw new Error('model.save wrote nothing');
  const again = await loadLayersModel(npzHandler(saved));
  const [a, b] = [await (model.predict(x) as tf.Tensor).data(), await (again.predict(x) as tf.Tensor).data()];
  const same = a.length === b.length && a.every((v, i) => Object.is(v, b[i]));
  return `saved in the page (${(saved as Uint8Array).length} bytes) and loaded back: ${same ? 'identical outputs' : 'DIFFERENT outputs'}`;
}

/** The PyTorch CNN's archive fetched once, its weights assigned with layout 'pytorch', the held-out digits classified. */
export async function runTorchDemo(relativeUrl: string): Promise<string> {
  await tf.setBackend('cpu');
  const res = await fetch(resolveUrl(relativeUrl));
  if (!res.ok) throw new Error(`fetching ${relativeUrl}: HTTP ${res.status}`);
  const r = await runDigitsCnn(decodeNpz(new Uint8Array(await res.arrayBuffer())));
  return `PyTorch CNN in tfjs (${tf.getBackend()} backend in the browser): ${r.correct}/${r.n} right (PyTorch: ${r.torchCorrect}/${r.n}); predictions agreeing with PyTorch's: ${r.agree}/${r.n}; largest logit difference ${r.maxAbsDiff.toExponential(2)}`;
}
