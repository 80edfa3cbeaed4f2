// The tfjs twins of test/helpers/torch_models.py: each the same computation as its PyTorch model,
// built as a tfjs user would (channels-last, PyTorch's epsilons and gates stated), without names
// unless the model is functional with parallel branches (the attention block names its layers after
// PyTorch's modules, which is how layout 'pytorch' pairs them).
import * as tfl from '@tensorflow/tfjs-layers';

const lstm = (units, more = {}) => tfl.layers.lstm({ units, recurrentActivation: 'sigmoid', recurrentInitializer: 'zeros', ...more });

export const twins = {
  mlp: () => tfl.sequential({ layers: [tfl.layers.dense({ units: 16, activation: 'relu', inputShape: [8] }), tfl.layers.dense({ units: 3 })] }),
  // With `named`, the weighted layers are named after their PyTorch modules (features.0 → features_0).
  cnn: ({ epsilon = 1e-5, named = false } = {}) => {
    const as = (name) => (named ? { name } : {});
    return tfl.sequential({
      layers: [
        tfl.layers.conv2d({ filters: 8, kernelSize: 3, padding: 'same', inputShape: [12, 8, 3], ...as('features_0') }),
        tfl.layers.batchNormalization({ epsilon, ...as('features_1') }),
        tfl.layers.reLU(),
        tfl.layers.maxPooling2d({ poolSize: 2 }),
        tfl.layers.conv2d({ filters: 4, kernelSize: 3, padding: 'same', ...as('features_4') }),
        tfl.layers.batchNormalization({ epsilon, ...as('features_5') }),
        tfl.layers.reLU(),
        tfl.layers.maxPooling2d({ poolSize: 2 }),
        tfl.layers.flatten(),
        tfl.layers.dense({ units: 5, ...as('fc') }),
      ],
    });
  },
  text: () =>
    tfl.sequential({
      layers: [
        tfl.layers.embedding({ inputDim: 40, outputDim: 8, inputLength: 12, inputShape: [12] }),
        tfl.layers.conv1d({ filters: 6, kernelSize: 3, activation: 'relu' }),
        tfl.layers.globalMaxPooling1d(),
        tfl.layers.dense({ units: 2 }),
      ],
    }),
  lstm: ({ recurrentActivation = 'sigmoid' } = {}) =>
    tfl.sequential({
      layers: [
        tfl.layers.embedding({ inputDim: 30, outputDim: 6, inputShape: [7] }),
        lstm(5, { returnSequences: true, recurrentActivation }),
        lstm(5, { recurrentActivation }),
        tfl.layers.dense({ units: 3 }),
      ],
    }),
  bilstm: () =>
    tfl.sequential({
      layers: [
        tfl.layers.embedding({ inputDim: 30, outputDim: 6, inputShape: [7] }),
        tfl.layers.bidirectional({ layer: lstm(4, { returnSequences: true }), mergeMode: 'concat' }),
        tfl.layers.globalAveragePooling1d(),
        tfl.layers.dense({ units: 2 }),
      ],
    }),
  attention: ({ d = 8 } = {}) => {
    const x = tfl.input({ shape: [5, d] });
    const norm = (name) => tfl.layers.layerNormalization({ epsilon: 1e-5, name });
    const dense = (name, units = d, activation = 'linear') => tfl.layers.dense({ units, activation, name });
    const h = norm('ln1').apply(x);
    const [q, k, v] = ['q', 'k', 'v'].map((n) => dense(n).apply(h));
    const scores = tfl.layers.rescaling({ scale: d ** -0.5 }).apply(tfl.layers.dot({ axes: -1 }).apply([q, k]));
    const att = tfl.layers.activation({ activation: 'softmax' }).apply(scores);
    const x2 = tfl.layers.add().apply([x, dense('proj').apply(tfl.layers.dot({ axes: [2, 1] }).apply([att, v]))]);
    const f = dense('fc2').apply(dense('fc1', 16, 'relu').apply(norm('ln2').apply(x2)));
    return tfl.model({ inputs: x, outputs: tfl.layers.add().apply([x2, f]) });
  },
  upsampler: () =>
    tfl.sequential({
      layers: [
        tfl.layers.depthwiseConv2d({ kernelSize: 3, depthMultiplier: 2, inputShape: [7, 6, 3] }),
        tfl.layers.prelu({ sharedAxes: [1, 2] }),
        tfl.layers.conv2dTranspose({ filters: 2, kernelSize: 2, strides: 2 }),
      ],
    }),
};
