/**
 * What this package reads of a tfjs-layers model: its layers, their class, configuration, weights and
 * inputs. Structural, so that @tensorflow/tfjs-layers stays out of the dependencies; a `LayersModel`
 * (from `tf.sequential`, `tf.model` or `tf.loadLayersModel`) fits without a cast.
 */
import type * as tf from '@tensorflow/tfjs-core';
import type { WeightLike } from './weights.js';

/** A shape with `null` for the batch (or any unknown) axis, as tfjs-layers gives it. */
export type LayerShape = readonly (number | null)[];

/** A tfjs-layers node: the layers a call of a layer took its inputs from, and their shapes. */
export interface NodeLike {
  readonly inboundLayers: readonly LayerLike[];
  readonly inputShapes: LayerShape | readonly LayerShape[];
}

/** A tfjs-layers layer. */
export interface LayerLike {
  readonly name: string;
  getClassName(): string;
  getConfig(): object;
  readonly weights: readonly WeightLike[];
  readonly inboundNodes: readonly NodeLike[];
  /** The tensor the layer's call made in the model's graph (tfjs-layers' `layer.output`). */
  readonly output?: SymbolicLike | readonly SymbolicLike[];
}

/** A tensor of a model's graph: its shape, with the batch axis as null. */
export interface SymbolicLike {
  /** Its name in the graph (what `LayersModel.execute` is asked for). */
  readonly name?: string;
  readonly shape: LayerShape;
  /** The layer that makes it (an input's InputLayer). */
  readonly sourceLayer?: LayerLike;
}

/** A tfjs-layers model: its layers in order, its inputs and outputs, and a way to predict. */
export interface LayersModelLike {
  readonly layers: readonly LayerLike[];
  readonly weights: readonly WeightLike[];
  readonly inputs: readonly SymbolicLike[];
  readonly outputs: readonly SymbolicLike[];
  predict(x: tf.Tensor | tf.Tensor[]): tf.Tensor | tf.Tensor[];
  /** The values of named tensors of the graph for an input (tfjs-layers' `LayersModel.execute`). */
  execute?(inputs: tf.Tensor | tf.Tensor[], outputs: string[]): tf.Tensor | tf.Tensor[];
}

/** True for a model that lists its layers (rather than a plain list of weights). */
export function hasLayers(x: unknown): x is LayersModelLike {
  return typeof x === 'object' && x !== null && Array.isArray((x as { layers?: unknown }).layers);
}

/** A configuration value by key. */
export function configOf(layer: LayerLike): Record<string, unknown> {
  return layer.getConfig() as Record<string, unknown>;
}

/** The layers a layer's first call took its inputs from (empty for an input layer). */
export function inputsOf(layer: LayerLike): readonly LayerLike[] {
  return layer.inboundNodes[0]?.inboundLayers ?? [];
}

/** The shape of a layer's (single) input, or null when it has several or none. */
export function inputShapeOf(layer: LayerLike): LayerShape | null {
  const shapes = layer.inboundNodes[0]?.inputShapes;
  if (!shapes || shapes.length === 0) return null;
  if (Array.isArray(shapes[0])) return shapes.length === 1 ? (shapes[0] as LayerShape) : null;
  return shapes as LayerShape;
}

/**
 * Layers that neither mix nor move a feature map's axes: a Flatten's input keeps the layout of the
 * layer before them.
 */
/** The class names of @npyts/tfjs/torch-layers' layers (here, so that this module needs no tfjs-layers). */
export const TORCH_LAYER_CLASS = {
  hardsigmoid: 'TorchHardsigmoid',
  hardswish: 'TorchHardswish',
  adaptiveAvgPool2d: 'TorchAdaptiveAvgPool2d',
  conv2d: 'TorchConv2D',
  gru: 'TorchGRU',
  multiheadAttention: 'TorchMultiheadAttention',
  channelShuffle: 'TorchChannelShuffle',
  channelChunk: 'TorchChannelChunk',
} as const;

/** Layers that act on each value alone: what feeds them is what the check compares them with. */
const ELEMENTWISE = new Set([
  'Activation',
  'ReLU',
  'LeakyReLU',
  'ELU',
  'Dropout',
  'AlphaDropout',
  'GaussianDropout',
  'GaussianNoise',
  TORCH_LAYER_CLASS.hardsigmoid,
  TORCH_LAYER_CLASS.hardswish,
]);

const LAYOUT_KEEPING = new Set([
  ...ELEMENTWISE,
  'Activation',
  'ReLU',
  'LeakyReLU',
  'ELU',
  'ThresholdedReLU',
  'Softmax',
  'PReLU',
  'Dropout',
  'AlphaDropout',
  'GaussianDropout',
  'GaussianNoise',
  'SpatialDropout1D',
  'SpatialDropout2D',
  'BatchNormalization',
  'LayerNormalization',
  'Masking',
]);

/**
 * Whether a layer's output is channels-last (tfjs's convolutions and pooling; PyTorch's are
 * channels-first), channels-first, the same in both frameworks (an Embedding's or an LSTM's
 * sequences), or not known (an input, a Reshape or Permute).
 */
export type Layout = 'channelsLast' | 'channelsFirst' | 'same' | 'unknown';

/** The layout of a layer's output, walking back through layers that keep it. */
export function layoutOf(layer: LayerLike): Layout {
  for (let at: LayerLike | undefined = layer, steps = 0; at && steps < 10_000; steps++) {
    const cls = at.getClassName();
    const format = configOf(at).dataFormat;
    if (format === 'channelsLast' || format === 'channelsFirst') return format;
    if (['Embedding', 'LSTM', 'GRU', 'SimpleRNN', 'Bidirectional', 'Dense', TORCH_LAYER_CLASS.gru, TORCH_LAYER_CLASS.multiheadAttention].includes(cls))
      return 'same';
    if (!LAYOUT_KEEPING.has(cls)) return 'unknown';
    const before = inputsOf(at);
    if (before.length !== 1) return 'unknown';
    at = before[0];
  }
  return 'unknown';
}

/** The layer feeding `layer` through layers that only act on values elementwise (Dropout, Activation…). */
export function producerOf(layer: LayerLike): LayerLike | null {
  let before = inputsOf(layer);
  for (let steps = 0; before.length === 1 && steps < 10_000; steps++) {
    const cls = before[0]!.getClassName();
    if (!ELEMENTWISE.has(cls)) return before[0]!;
    before = inputsOf(before[0]!);
  }
  return null;
}

/** The layers holding weights, a nested model's layers in its place. */
export function weightedLayers(model: { readonly layers: readonly LayerLike[] }): LayerLike[] {
  const out: LayerLike[] = [];
  const stack: LayerLike[] = [...model.layers].reverse();
  while (stack.length) {
    const layer = stack.pop()!;
    if (hasLayers(layer)) {
      const inner = layer.layers;
      for (let i = inner.length - 1; i >= 0; i--) stack.push(inner[i]!);
      continue;
    }
    if (layer.weights.length > 0) out.push(layer);
  }
  return out;
}
