/**
 * Which Keras weight makes each tfjs weight, as Keras itself pairs them: in Keras 3's files
 * (`.weights.h5`, a `.keras`'s `model.weights.h5`, a sharded set) a layer's variables are
 * `layers/<snake_case class>[_<n>]/vars/<i>`, the group named by the layer's class and its place among
 * the layers of its model (Keras's `saving_lib`; the `vars` group's `name` attribute is not read); in a
 * legacy `.h5` the layers with weights are taken in order, the model's against `layer_names`' (Keras's
 * "topological" loading of `legacy_h5_format`), each group listing its variables (`weight_names`).
 */
import { NpyError } from '@npyts/core';
import { savedName } from './weights.js';
import { hasLayers, type LayerLike } from './layers.js';

/** What a Keras weight file records of its layers: a Keras 3 file its weights' paths only, a legacy `.h5` its layers too. */
export interface KerasRecords {
  /** Every weight's path in the file (`layers/dense/vars/0`, `model_weights/dense/dense/kernel:0`). */
  readonly keys: readonly string[];
  /**
   * A legacy `.h5`: its layers that have weights, in `layer_names`' order, each its name and the paths of
   * its weights in Keras's order (`weight_names`).
   */
  readonly legacy?: readonly { readonly name: string; readonly keys: readonly string[] }[];
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

/**
 * The class tfjs's builds of Keras's models give the Reshape that sizes its -1 (keras.ts); a Reshape
 * to Keras.
 */
export const SIZED_RESHAPE = 'NpytsSizedReshape';

/** Keras's `naming.to_snake_case` of a class name (`Conv2D` → `conv2d`, `BatchNormalization` → `batch_normalization`). */
export function snakeCase(name: string): string {
  return name
    .replace(/\W+/g, '')
    .replace(/(.)([A-Z][a-z]+)/g, '$1_$2')
    .replace(/([a-z])([A-Z])/g, '$1_$2')
    .toLowerCase();
}

/** The Keras class of a tfjs layer class: tfjs's functional `Model` is Keras's `Functional`, the others keep their names. */
export function kerasClassOf(className: string): string {
  return className === 'Model' ? 'Functional' : className === SIZED_RESHAPE ? 'Reshape' : className;
}

/**
 * The names Keras's `saving_lib` gives the layers of one model, in the model's order, from their tfjs
 * classes: each its Keras class in snake_case, the second of a class `_1`, the third `_2`, … (its
 * `_get_unique_name`). Their groups are `layers/<name>`; the layers' own names play no part.
 */
export function layerGroupNames(classNames: readonly string[]): string[] {
  const used = new Map<string, number>();
  return classNames.map((c) => {
    const name = snakeCase(kerasClassOf(c));
    const n = used.get(name);
    used.set(name, n === undefined ? 0 : n + 1);
    return n === undefined ? name : `${name}_${n + 1}`;
  });
}

/**
 * A Keras 3 file's variables by their `vars` group (`layers/dense/vars` → its `0`, `1`, … by index);
 * keys of other forms are left out.
 */
function varsGroups(keys: readonly string[]): Map<string, Map<number, string>> {
  const groups = new Map<string, Map<number, string>>();
  for (const key of keys) {
    const m = /^(?:(.*)\/)?(vars)\/(0|[1-9]\d*)$/.exec(key);
    if (!m) continue;
    const group = m[1] === undefined ? m[2]! : `${m[1]}/${m[2]}`;
    let vars = groups.get(group);
    if (!vars) groups.set(group, (vars = new Map()));
    vars.set(Number(m[3]), key);
  }
  return groups;
}

/**
 * The Keras key of each weight of a tfjs model (by its `originalName`), paired layer by layer as Keras
 * pairs them: a Keras 3 file by each layer's group path (its class and place, nested models below their
 * own group: {@link layerGroupNames}), a legacy `.h5` by the order of its layers. Every layer whose group is
 * missing, holds another number of variables or has gaps in their numbering is reported together
 * (`WEIGHT_MISMATCH`); shapes are checked by the plan that uses this.
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
    const saved = records.legacy;
    const layers = model.layers.filter((l) => l.weights.length > 0);
    if (layers.length !== saved.length) {
      problems.push(`the model has ${layers.length} layers with weights, the file's layer_names ${saved.length}`);
    } else {
      layers.forEach((layer, k) => pair(layer, [...saved[k]!.keys], `weight_names of '${saved[k]!.name}' (its layer ${k + 1} with weights)`));
    }
  } else {
    const groups = varsGroups(records.keys);
    // Keras saves and loads a layer once, at the first path its walk reaches it by.
    const visited = new Set<LayerLike>();
    const walk = (layers: readonly LayerLike[], base: string): void => {
      const groupNames = layerGroupNames(layers.map((l) => l.getClassName()));
      layers.forEach((layer, i) => {
        if (visited.has(layer)) return;
        visited.add(layer);
        const group = `${base}layers/${groupNames[i]}`;
        if (hasLayers(layer)) return walk(layer.layers, `${group}/`);
        if (layer.weights.length === 0) return;
        const keys: string[] = [];
        for (const v of varsPaths(layer.getClassName(), layer.getConfig() as Record<string, unknown>)) {
          const vars = groups.get(`${group}/${v}`);
          if (!vars) continue;
          // Keras reads a layer's variables as '0', '1', … of as many as the group holds: a gap is one missing.
          for (let j = 0; j < vars.size; j++) {
            const key = vars.get(j);
            if (key === undefined) {
              problems.push(`${layer.name} (${layer.getClassName()}): the file's ${group}/${v} holds ${vars.size} variables but no '${j}'`);
              return;
            }
            keys.push(key);
          }
        }
        pair(layer, keys, `group ${group}`);
      });
    };
    walk(model.layers, '');
  }
  if (problems.length) {
    const how = records.legacy
      ? "\nKeras pairs a legacy .h5's layers with weights by their order, the model's against layer_names', not by their names: the model needs Keras's layers in Keras's order."
      : "\nKeras pairs each layer with the group its class and place among its model's layers name (layers/<snake_case class>[_<n>]), not by layer names: the model needs Keras's layers in Keras's order.";
    throw new NpyError('WEIGHT_MISMATCH', `${where}: the model's layers and the Keras file's records disagree:\n  ${problems.join('\n  ')}${how}`);
  }
  return names;
}
