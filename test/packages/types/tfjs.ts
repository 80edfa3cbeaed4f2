// The tfjs bridge as a strict TypeScript user writes it, with tfjs-layers' own types: no casts.
import { expectTypeOf } from 'expect-type';
import * as tf from '@tensorflow/tfjs-core';
import * as tfl from '@tensorflow/tfjs-layers';
import { loadGraphModel, type GraphModel } from '@tensorflow/tfjs-converter';
import { assignWeights, saveWeights, npzHandler, browserDownload, loadTensors, type NamedTensorMap } from '@npyts/tfjs';

declare const file: File;
declare const bytes: Uint8Array;

export async function typed(): Promise<void> {
  const model = tfl.sequential({ layers: [tfl.layers.dense({ units: 2, inputShape: [3] })] });
  // A model, its LayerVariables (shape (number | null)[]), tf.Variables: all accepted as they are.
  await assignWeights(model, 'weights.npz');
  await assignWeights(model.weights, 'weights.npz');
  await assignWeights([tf.variable(tf.zeros([2]))], bytes);
  await assignWeights(model, file, { names: { 'dense/kernel': { key: 'fc.weight', transpose: true } } });
  await assignWeights(model, 'torch.npz', { names: (name) => name.replace('/kernel', '.weight') });

  expectTypeOf(saveWeights(model)).toEqualTypeOf<Promise<Uint8Array>>();
  expectTypeOf(saveWeights(model, 'weights.npz')).toEqualTypeOf<Promise<void>>();
  await saveWeights(model.weights, browserDownload('weights.npz'));

  // IOHandlers where tfjs takes them.
  const loaded: tfl.LayersModel = await tfl.loadLayersModel(npzHandler('model.npz'));
  await loaded.save(npzHandler('copy.npz', { compress: true }));
  await loaded.save(npzHandler((npz) => { expectTypeOf(npz).toEqualTypeOf<Uint8Array>(); }));
  await tfl.loadLayersModel(npzHandler(file, { modelTopology: model }));
  const graph: GraphModel = await loadGraphModel(npzHandler(new URL('https://example.com/graph.npz')));
  expectTypeOf(graph).toEqualTypeOf<GraphModel>();
  expectTypeOf(await loadTensors('weights.npz')).toEqualTypeOf<NamedTensorMap>();

  // @ts-expect-error: a number is not a source
  npzHandler(42);
  // @ts-expect-error: a names table maps to keys, not numbers
  await assignWeights(model, 'w.npz', { names: { 'dense/kernel': 3 } });
}
