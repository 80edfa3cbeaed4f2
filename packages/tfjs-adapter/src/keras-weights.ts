/**
 * Which Keras weight makes each tfjs weight, through Keras's own records and never by order alone: in
 * Keras 3's files (`.weights.h5`, a `.keras`'s `model.weights.h5` or `.npz`) a layer's variables are
 * `layers/<group>/vars/<i>` and the group's layer is the one named by its `vars` group's `name`
 * attribute; in a legacy `.h5` a layer's group lists its variables by name (`weight_names`).
 */
import { NpyError } from '@npyts/core';
import { savedName } from './weights.js';
import { hasLayers, type LayerLike } from './layers.js';

/** What a Keras weight file records of its layers. */
export interface KerasRecords {
  /** Every weight's path in the file (`layers/dense/vars/0`, `model_weights/dense/dense/kernel:0`). */
  readonly keys: readonly string[];
  /**
   * Keras 3: the path of each group holding a `vars` group (`layers/dense`), to the layer name its `vars`
   * group's `name` attribute gives (`dense_1`). Groups without weights are listed too.
   */
  readonly layers?: ReadonlyMap<string, string>;
  /** A legacy `.h5`: each layer's name (`layer_names`), to the paths of its weights in Keras's order (`weight_names`). */
  readonly legacy?: ReadonlyMap<string, readonly string[]>;
}

/**
 * Keys of a Keras file that are training state, not the model's weights: a compiled model's file
 * holds its optimizer's variables (`optimizer/vars/0`, …) and its metrics' beside `layers/`.
 */
export function trainingState(records: KerasRecords): Set<string> {
  if (records.legacy) return new Set();
  return new Set(records.keys.filter((k) => !k.startsWith('layers/') && !k.startsWith('vars/')));
}

/** Where a layer of a class keeps its variables under its group, in the order its weights list them. */
export function varsPaths(className: string, config: Record<string, unknown>): string[] {
  const inner = (key: string): string[] => {
    const c = config[key] as { className?: string; class_name?: string; config?: Record<string, unknown> } | undefined;
    const name = c?.className ?? c?.class_name;
    return name ? varsPaths(name, c?.config ?? {}).map((p) => `${key}/${p}`) : [];
  };
  switch (className) {
    case 'LSTM':
    case 'GRU':
    case 'SimpleRNN':
    case 'ConvLSTM2D':
    case 'ConvLSTM1D':
    case 'ConvLSTM3D':
      return ['vars', 'cell/vars'];
    case 'Bidirectional':
      // tfjs lists the forward layer's weights, then the backward one's.
      return [
        'vars',
        ...inner('layer').map((p) => p.replace(/^layer\//, 'forward_layer/')),
        ...inner('layer').map((p) => p.replace(/^layer\//, 'backward_layer/')),
      ];
    case 'TimeDistributed':
      return ['vars', ...inner('layer')];
    case 'MultiHeadAttention':
      return ['vars', 'query_dense/vars', 'key_dense/vars', 'value_dense/vars', 'output_dense/vars'];
    default:
      return ['vars'];
  }
}

/** Keys of the form `<vars>/<i>`, by i. */
function varsOf(keys: readonly string[], vars: string): string[] {
  const prefix = `${vars}/`;
  return keys
    .filter((k) => k.startsWith(prefix) && /^\d+$/.test(k.slice(prefix.length)))
    .sort((a, b) => Number(a.slice(prefix.length)) - Number(b.slice(prefix.length)));
}

/**
 * The Keras key of each weight of a tfjs model (by its `originalName`), paired layer by layer through
 * the file's records. Every layer that has no record, or whose record holds another number of
 * variables, is reported together (`WEIGHT_MISMATCH`); shapes are checked by the plan that uses this.
 */
export function kerasNames(model: { readonly layers: readonly LayerLike[] }, records: KerasRecords, where: string): Record<string, string> {
  const names: Record<string, string> = {};
  const problems: string[] = [];
  const pair = (layer: LayerLike, keys: string[], record: string): void => {
    if (keys.length !== layer.weights.length) {
      problems.push(`${layer.name} (${layer.getClassName()}): ${layer.weights.length} weights in the model, ${keys.length} in the file's ${record}`);
      return;
    }
    layer.weights.forEach((w, i) => {
      names[savedName(w)] = keys[i]!;
    });
  };
  if (records.legacy) {
    for (const layer of model.layers) {
      if (layer.weights.length === 0) continue;
      const keys = records.legacy.get(layer.name);
      if (!keys) problems.push(`${layer.name} (${layer.getClassName()}): no layer of this name in the file's layer_names`);
      else pair(layer, [...keys], `weight_names of '${layer.name}'`);
    }
  } else {
    const walk = (layers: readonly LayerLike[], base: string): void => {
      // The groups directly under <base>layers/, by the layer name each records.
      const groups = new Map<string, string>();
      for (const [path, name] of records.layers ?? []) {
        const rest = path.startsWith(`${base}layers/`) ? path.slice(base.length + 'layers/'.length) : null;
        if (rest !== null && rest !== '' && !rest.includes('/')) groups.set(name, path);
      }
      for (const layer of layers) {
        if (layer.weights.length === 0) continue;
        const group = groups.get(layer.name);
        if (group === undefined) {
          problems.push(`${layer.name} (${layer.getClassName()}): no group under ${base || '/'}layers/ whose vars are named '${layer.name}'`);
          continue;
        }
        if (hasLayers(layer)) {
          walk(layer.layers, `${group}/`);
          continue;
        }
        const keys = varsPaths(layer.getClassName(), layer.getConfig() as Record<string, unknown>).flatMap((v) => varsOf(records.keys, `${group}/${v}`));
        pair(layer, keys, `group ${group}`);
      }
    };
    walk(model.layers, '');
  }
  if (problems.length) {
    throw new NpyError('WEIGHT_MISMATCH', `${where}: the model's layers and the Keras file's records disagree:\n  ${problems.join('\n  ')}`);
  }
  return names;
}
