/**
 * One tensor fed more than once to one layer call (`MultiHeadAttention()(x, x)`, `Multiply()([x, x])`):
 * tfjs-layers 4.22's `execute()` (predict, evaluate) counts such a call once among the tensor's
 * recipients but releases the tensor once per input, so the tensor is disposed before its other
 * consumers run (`Tensor is disposed.` in the residual's `Add`). The models kerasHandler builds are
 * given, for every repeat after the first, a layer of their own ({@link REPEAT_CLASS}: a copy of its
 * input) between the tensor and the call, so that no call takes one tensor twice and every tensor is
 * released exactly once, after its last consumer. Saving as `.keras` takes these layers out again.
 */
import * as tf from '@tensorflow/tfjs-core';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The class name of the layers put in for repeated inputs. */
export const REPEAT_CLASS = 'NpytsRepeatedInput';

/** Registers {@link REPEAT_CLASS} (once; tfjs-layers is loaded only when a Keras model is). */
export function registerRepeat(layers: typeof import('@tensorflow/tfjs-layers')): void {
  if (Object.hasOwn(tf.serialization.SerializationMap.getMap().classNameMap, REPEAT_CLASS)) return;
  /** A tensor of its own with its input's values (and mask): `tf.clone` shares the data, not the tensor. */
  class RepeatedInput extends layers.layers.Layer {
    static readonly className = REPEAT_CLASS;
    constructor(args: ConstructorParameters<typeof layers.layers.Layer>[0]) {
      super(args);
      this.supportsMasking = true;
    }
    override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
      return tf.clone(Array.isArray(inputs) ? inputs[0]! : inputs);
    }
  }
  tf.serialization.registerClass(RepeatedInput);
}

/** The graph entries of a functional model config (`{ layers, … }` with inbound nodes), or null. */
const graphOf = (config: unknown): Json[] | null =>
  isObject(config) && Array.isArray(config.layers) && Array.isArray(config.input_layers) ? (config.layers as Json[]) : null;

/** Every model config in `topology` (it and the models nested in it, Sequential ones included). */
function* modelConfigs(entry: unknown, depthLeft = 64): Generator<Json> {
  if (!isObject(entry) || !isObject(entry.config) || !Array.isArray(entry.config.layers) || depthLeft === 0) return;
  yield entry.config;
  for (const layer of entry.config.layers) yield* modelConfigs(layer, depthLeft - 1);
}

/**
 * `topology` (tfjs's model JSON, Keras 2's form) with no layer call given one tensor twice: each repeat
 * after the first comes through a {@link REPEAT_CLASS} layer of its own (named after the call), in
 * every functional model of it, nested ones included, each just before the layer it feeds.
 * Changed in place, and returned.
 */
export function separateRepeatedInputs<T>(topology: T): T {
  for (const config of modelConfigs(topology)) {
    const layers = graphOf(config);
    if (!layers) continue;
    const names = new Set(layers.map((l) => (isObject(l.config) ? l.config.name : l.name)));
    const arranged: Json[] = [];
    for (const layer of layers) {
      if (!Array.isArray(layer.inbound_nodes)) {
        arranged.push(layer);
        continue;
      }
      const owner = String(isObject(layer.config) ? layer.config.name : layer.name);
      for (const node of layer.inbound_nodes as unknown[][]) {
        if (!Array.isArray(node)) continue;
        const seen = new Set<string>();
        node.forEach((ref, i) => {
          if (!Array.isArray(ref)) return;
          const key = JSON.stringify(ref.slice(0, 3));
          if (!seen.has(key)) {
            seen.add(key);
            return;
          }
          let name = `${owner}_repeat`;
          for (let k = 1; names.has(name); k++) name = `${owner}_repeat_${k}`;
          names.add(name);
          arranged.push({ class_name: REPEAT_CLASS, name, config: { name, trainable: true }, inbound_nodes: [[[...ref.slice(0, 3), {}]]] });
          node[i] = [name, 0, 0, ...ref.slice(3)];
        });
      }
      arranged.push(layer); // after the layers put in for it
    }
    config.layers = arranged;
  }
  return topology;
}

/**
 * A copy of `topology` without the {@link REPEAT_CLASS} layers {@link separateRepeatedInputs} put in:
 * each call takes the repeated tensor itself again, as the model was written.
 */
export function joinRepeatedInputs<T>(topology: T): T {
  if (!isObject(topology) || topology instanceof ArrayBuffer) return topology; // not a layers model's JSON: the saver says so
  const copy = JSON.parse(JSON.stringify(topology)) as T;
  for (const config of modelConfigs(copy)) {
    const layers = graphOf(config);
    if (!layers) continue;
    const sources = new Map<string, unknown[]>();
    for (const layer of layers) {
      const node = Array.isArray(layer.inbound_nodes) ? (layer.inbound_nodes as unknown[][])[0] : undefined;
      if (layer.class_name === REPEAT_CLASS && Array.isArray(node?.[0])) sources.set(String(isObject(layer.config) ? layer.config.name : layer.name), node[0]);
    }
    if (sources.size === 0) continue;
    config.layers = layers.filter((l) => l.class_name !== REPEAT_CLASS);
    for (const layer of config.layers as Json[]) {
      for (const node of (Array.isArray(layer.inbound_nodes) ? layer.inbound_nodes : []) as unknown[][]) {
        node.forEach((ref, i) => {
          const source = Array.isArray(ref) && typeof ref[0] === 'string' ? sources.get(ref[0]) : undefined;
          if (source && Array.isArray(ref)) node[i] = [...source.slice(0, 3), ...ref.slice(3)];
        });
      }
    }
  }
  return copy;
}
