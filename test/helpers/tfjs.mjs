// tfjs's CPU backend for the tests, started quietly: its first write in Node prints a notice
// recommending tfjs-node (which cannot be installed here).
import * as tf from '@tensorflow/tfjs-core';

export async function useCpuBackend() {
  const warn = console.warn;
  console.warn = () => {};
  try {
    await import('@tensorflow/tfjs-backend-cpu');
    await tf.setBackend('cpu');
    tf.scalar(0).dispose();
  } finally {
    console.warn = warn;
  }
}
