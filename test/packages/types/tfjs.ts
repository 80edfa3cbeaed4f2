// The tfjs bridge as a strict TypeScript user writes it, with tfjs-layers' own types: no casts.
import { expectTypeOf } from 'expect-type';
import * as tf from '@tensorflow/tfjs-core';
import * as tfl from '@tensorflow/tfjs-layers';
import { loadGraphModel, type GraphModel } from '@tensorflow/tfjs-converter';
import {
  assignWeights,
  saveWeights,
  npzHandler,
  kerasHandler,
  browserDownload,
  loadTensors,
  planWeights,
  checkModel,
  type NamedTensorMap,
  type PlannedWeight,
  type CheckResult,
} from '@npyts/tfjs';
import { NpyError } from '@npyts/core';

declare const file: File;
declare const bytes: Uint8Array;

export async function typed(): Promise<void> {
  const model = tfl.sequential({ layers: [tfl.layers.dense({ units: 2, inputShape: [3] })] });
  // A model, its LayerVariables (shape (number | null)[]), tf.Variables: all accepted as they are.
  await assignWeights(model, 'weights.npz');
  await assignWeights(model, 'model.safetensors', { mmap: 'r' });
  await assignWeights(model.weights, 'weights.npz');
  await assignWeights([tf.variable(tf.zeros([2]))], bytes);
  await assignWeights(model, file, { names: { 'dense/kernel': { key: 'fc.weight', transpose: true } } });
  await assignWeights(model, 'torch.npz', { names: (name) => name.replace('/kernel', '.weight') });

  expectTypeOf(saveWeights(model)).toEqualTypeOf<Promise<Uint8Array>>();
  expectTypeOf(saveWeights(model, 'weights.npz')).toEqualTypeOf<Promise<void>>();
  expectTypeOf(saveWeights(model, 'weights.npz', { durable: true })).toEqualTypeOf<Promise<void>>();
  await saveWeights(model.weights, browserDownload('weights.npz'));

  // IOHandlers where tfjs takes them.
  const loaded: tfl.LayersModel = await tfl.loadLayersModel(npzHandler('model.npz'));
  await loaded.save(npzHandler('copy.npz', { compress: true }));
  await loaded.save(
    npzHandler((npz) => {
      expectTypeOf(npz).toEqualTypeOf<Uint8Array>();
    }),
  );
  await tfl.loadLayersModel(npzHandler(file, { modelTopology: model }));
  // A .keras file: saved to a path, a function given the bytes, or a download in a page.
  await loaded.save(kerasHandler('out.keras'));
  await loaded.save(
    kerasHandler((bytes) => {
      expectTypeOf(bytes).toEqualTypeOf<Uint8Array>();
    }),
  );
  await loaded.save(kerasHandler(browserDownload('model.keras')));
  const graph: GraphModel = await loadGraphModel(npzHandler(new URL('https://example.com/graph.npz')));
  expectTypeOf(graph).toEqualTypeOf<GraphModel>();
  expectTypeOf(await loadTensors('weights.npz')).toEqualTypeOf<NamedTensorMap>();

  // The PyTorch layout: Sequential and functional models, as tfjs-layers types them.
  const functional: tfl.LayersModel = loaded;
  await assignWeights(model, 'state_dict.npz', { layout: 'pytorch', epsilon: { bn1: 1e-3 }, rtol: 1e-4 });
  await assignWeights(functional, 'state_dict.npz', { layout: 'pytorch', flattenLayout: 'channelsLast', check: false });
  expectTypeOf(await planWeights(model, 'state_dict.npz', { layout: 'pytorch' })).toEqualTypeOf<PlannedWeight[]>();
  expectTypeOf(await checkModel(functional, 'state_dict.npz', { atol: 1e-6 })).toEqualTypeOf<CheckResult>();
  await saveWeights(model, 'out.npz', { layout: 'pytorch', like: 'state_dict.npz' });
  await tfl.loadLayersModel(npzHandler('state_dict.npz', { layout: 'pytorch', modelTopology: model }));
  try {
    await checkModel(loaded, 'state_dict.npz');
  } catch (e) {
    if (e instanceof NpyError && e.code === 'CHECK_FAILED') console.log(e.message);
  }
  // @ts-expect-error: the layouts are 'tfjs' and 'pytorch'
  await assignWeights(model, 'w.npz', { layout: 'keras' });
  // @ts-expect-error: a number is not a source
  npzHandler(42);
  // @ts-expect-error: a names table maps to keys, not numbers
  await assignWeights(model, 'w.npz', { names: { 'dense/kernel': 3 } });
}

// PyTorch's modules as tfjs-layers layers: typed factories and classes, no casts.
import { type TorchAdaptiveAvgPool2d, adaptiveAvgPool2d, hardsigmoid, hardswish, type TorchHardswish } from '@npyts/tfjs/torch-layers';
expectTypeOf(hardswish({ name: 'act' })).toEqualTypeOf<TorchHardswish>();
expectTypeOf(adaptiveAvgPool2d({ outputSize: [3, 2] })).toEqualTypeOf<TorchAdaptiveAvgPool2d>();
expectTypeOf(adaptiveAvgPool2d({ outputSize: 7 }).outputSize).toEqualTypeOf<[number, number]>();
void hardsigmoid();
// @ts-expect-error: adaptive pooling needs an output size
void adaptiveAvgPool2d({});
import {
  channelChunk,
  channelShuffle,
  torchConv2d,
  torchGRU,
  torchMultiheadAttention,
  type TorchChannelChunk,
  type TorchChannelShuffle,
  type TorchConv2D,
  type TorchGRU,
  type TorchMultiheadAttention,
} from '@npyts/tfjs/torch-layers';
expectTypeOf(torchConv2d({ filters: 8, kernelSize: [3, 1], padding: 1, groups: 2 })).toEqualTypeOf<TorchConv2D>();
expectTypeOf(torchConv2d({ filters: 8, kernelSize: 3 }).padding).toEqualTypeOf<[number, number] | 'same'>();
void torchConv2d({ filters: 8, kernelSize: 3, padding: 'same' });
void torchConv2d({ filters: 8, kernelSize: 3, padding: 'valid' });
expectTypeOf(torchGRU({ units: 4, returnSequences: true })).toEqualTypeOf<TorchGRU>();
expectTypeOf(torchGRU({ units: 4, goBackwards: true }).goBackwards).toEqualTypeOf<boolean>();
expectTypeOf(torchMultiheadAttention({ numHeads: 2, causal: true })).toEqualTypeOf<TorchMultiheadAttention>();
expectTypeOf(channelShuffle({ groups: 2 })).toEqualTypeOf<TorchChannelShuffle>();
expectTypeOf(channelChunk({ chunks: 2, index: 1 })).toEqualTypeOf<TorchChannelChunk>();
// @ts-expect-error: PyTorch's padding is numbers, 'same' or 'valid'
void torchConv2d({ filters: 8, kernelSize: 3, padding: 'full' });
// A TorchGRU is an RNN: tf.layers.bidirectional takes it as the guide writes it, without a cast.
const bidirectional: tfl.layers.Layer = tfl.layers.bidirectional({ layer: torchGRU({ units: 4, returnSequences: true }), mergeMode: 'concat', name: 'gru' });
void bidirectional;
expectTypeOf(torchGRU({ units: 4 })).toMatchTypeOf<tfl.RNN>();
// @ts-expect-error: a GRU needs its hidden size
void torchGRU({});

// Keras 3's layers and activations tfjs lacks (@npyts/tfjs/keras-layers): classes and the activation table, no casts.
import { KerasGRU, KerasMultiHeadAttention, KerasEinsumDense, KerasNormalization, KERAS_LAYER_CLASSES, kerasActivation } from '@npyts/tfjs/keras-layers';
expectTypeOf(kerasActivation('hard_silu')).toEqualTypeOf<string | null>();
void kerasActivation('hard_sigmoid', 2);
// @ts-expect-error: Keras's major versions here are 2 and 3
void kerasActivation('hard_sigmoid', 4);
expectTypeOf(KERAS_LAYER_CLASSES).toEqualTypeOf<readonly string[]>();
const mha = new KerasMultiHeadAttention({ numHeads: 2, keyDim: 8, name: 'attn' });
expectTypeOf(mha.valueDim).toEqualTypeOf<number>();
expectTypeOf(new KerasGRU({ units: 4, resetAfter: true, returnSequences: true })).toMatchTypeOf<tfl.RNN>();
void new KerasEinsumDense({ equation: 'abc,cde->abde', outputShape: [null, 2, 4], biasAxes: 'de' });
void new KerasNormalization({ axis: [1, 3], mean: [0.5], variance: [0.25] });
// @ts-expect-error: MultiHeadAttention needs its key size
void new KerasMultiHeadAttention({ numHeads: 2 });
// A KerasGRU goes into tf.layers.bidirectional as tfjs's own GRU does.
void tfl.layers.bidirectional({ layer: new KerasGRU({ units: 4 }), mergeMode: 'concat' });
