// The PyTorch demo, shared by `npm start` and the viewer: demo/train_cnn.py's network built in tfjs
// (channels-last, PyTorch's BatchNorm epsilon), its state_dict assigned with layout 'pytorch', and the
// 360 held-out digits classified and compared with PyTorch's own answers.
import * as tf from '@tensorflow/tfjs-core';
import * as tfl from '@tensorflow/tfjs-layers';
import { assignWeights, checkModel, toTensor } from '@npyts/tfjs';

/** nn.Sequential(Conv2d(1, 8, 3, padding=1), BatchNorm2d(8), ReLU(), MaxPool2d(2), Flatten(), Linear(128, 10)) */
export function digitsCnn() {
  return tfl.sequential({
    layers: [
      tfl.layers.conv2d({ filters: 8, kernelSize: 3, padding: 'same', inputShape: [8, 8, 1] }),
      tfl.layers.batchNormalization({ epsilon: 1e-5 }),
      tfl.layers.reLU(),
      tfl.layers.maxPooling2d({ poolSize: 2 }),
      tfl.layers.flatten(),
      tfl.layers.dense({ units: 10 }),
    ],
  });
}

/**
 * Load the archive's weights into the tfjs twin (the check members are verified on the way) and
 * classify its held-out digits.
 * @param archive an opened .npz (the demo's digits-cnn.npz)
 */
export async function runDigitsCnn(archive) {
  const model = digitsCnn();
  await assignWeights(model, archive, { layout: 'pytorch' });
  const { maxAbsDiff } = await checkModel(model, archive);
  const x = toTensor(await archive.get('check/input.npy')); // NCHW, as PyTorch took it
  const labels = toTensor(await archive.get('check/labels.npy')); // int64 → int32, range-checked
  const torchLogits = toTensor(await archive.get('check/output.npy'));
  const count = (a, b) => tf.tidy(() => tf.sum(tf.cast(tf.equal(a, b), 'int32')).arraySync());
  const predicted = tf.tidy(() => tf.argMax(model.predict(tf.transpose(x, [0, 2, 3, 1])), 1));
  const torchPredicted = tf.argMax(torchLogits, 1);
  const result = {
    n: labels.shape[0],
    correct: count(predicted, labels),
    agree: count(predicted, torchPredicted),
    torchCorrect: count(torchPredicted, labels),
    maxAbsDiff,
  };
  tf.dispose([x, labels, torchLogits, predicted, torchPredicted]);
  model.dispose();
  return result;
}
