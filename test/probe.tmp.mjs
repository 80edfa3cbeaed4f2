import * as tf from '@tensorflow/tfjs-core';
import { assignWeights } from '@npyts/tfjs';
import { encodeNpz, arrayFromValues } from '@npyts/core';
import { useCpuBackend } from './helpers/tfjs.mjs';
await useCpuBackend();
  const npz = encodeNpz({
    'dense/kernel': arrayFromValues([[1, 2], [3, 4], [5, 6]], '<f8'),
    'dense/bias': arrayFromValues([0.5, -0.5], '<f4'),
    extra: arrayFromValues([1], '<f4'),
  });
  const wrongShape = tf.variable(tf.zeros([2, 3]), true, 'w_shape');
  const missing = tf.variable(tf.zeros([1]), true, 'nowhere');
  const wrongType = tf.variable(tf.zeros([2], 'int32'), true, 'w_type');
  try {
    await assignWeights([wrongShape, missing, wrongType], npz, { names: { w_shape: 'dense/kernel', nowhere: 'absent', w_type: 'dense/bias' } });
  } catch (e) { console.log(e.message); }
