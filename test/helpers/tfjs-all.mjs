// What `import * as tf from '@tensorflow/tfjs'` gives, made of the separate packages the tests install:
// tfjs-core, tfjs-layers and the CPU backend. README and guide code runs against it as written.
export * from '@tensorflow/tfjs-core';
export * from '@tensorflow/tfjs-layers';
import '@tensorflow/tfjs-backend-cpu';
