/**
 * A tfjs model saved as a Keras 3 `.keras` file: Keras 3's `config.json` (keras-config-out.ts),
 * `metadata.json`, and `model.weights.h5` written by core's HDF5 writer with each weight at the path
 * Keras 3 gives it (`layers/<snake_case class>[_<n>]/vars/<i>`, `…/cell/vars/<i>`), in a zip of stored
 * members as Keras writes it.
 */
import type * as tf from '@tensorflow/tfjs-core';
import { encodeHdf5, NpyError, type Hdf5DatasetInput, type Hdf5GroupInput, type NdArray } from '@npyts/core';
import { arraysOf } from './handler.js';
import { kerasConfigOf, type TensorShapes } from './keras-config-out.js';
import { layerGroupNames, varsPaths } from './keras-weights.js';
import { writeArchive, type NpzSink } from './sources.js';

type Json = Record<string, unknown>;
type Members = Record<string, Hdf5GroupInput | Hdf5DatasetInput>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function dataset(a: NdArray, name: string): Hdf5DatasetInput {
  const d = a.data as ArrayLike<unknown> & ArrayBufferView;
  if (!ArrayBuffer.isView(d)) throw new NpyError('BAD_TARGET', `weight '${name}' (${a.dtype.str}) has no numeric bytes to save as Keras`);
  return { descr: a.dtype.str, shape: a.shape, bytes: new Uint8Array(d.buffer, d.byteOffset, d.byteLength) };
}

/** A group at `path` (`a/b/vars`) below `root`, made as needed. */
function groupAt(root: Members, path: string): { members: Members; attrs?: Record<string, string> } {
  let here = root;
  let group: { members: Members; attrs?: Record<string, string> } = { members: root };
  for (const part of path.split('/')) {
    here[part] ??= { members: {} };
    group = here[part] as { members: Members };
    here = group.members;
  }
  return group;
}

/**
 * The `model.weights.h5` tree of a tfjs topology and its weights by tfjs name: each layer's weights
 * (those named `<layer name>/…`, in tfjs's order, which is Keras's) under Keras's path for it.
 */
function weightsTree(topology: Json, arrays: Map<string, NdArray>, where: string): Hdf5GroupInput {
  const used = new Set<string>();
  const root: Members = {};
  const byLayer = new Map<string, [string, NdArray][]>();
  for (const [name, a] of arrays) {
    const layer = name.split('/')[0]!;
    if (!byLayer.has(layer)) byLayer.set(layer, []);
    byLayer.get(layer)!.push([name, a]);
  }
  const walk = (model: Json, base: Members, modelName: string): void => {
    const config = isObject(model.config) ? model.config : {};
    const layers = Array.isArray(config.layers) ? (config.layers as Json[]) : [];
    groupAt(base, 'vars').attrs = { name: modelName };
    const keys = layerGroupNames(layers.map((l) => String(l.class_name)));
    for (const [i, l] of layers.entries()) {
      const className = String(l.class_name);
      const c = isObject(l.config) ? l.config : {};
      const name = String(c.name ?? l.name);
      if (className === 'InputLayer') continue;
      const group = groupAt(base, `layers/${keys[i]}`).members;
      if (className === 'Sequential' || className === 'Model') {
        walk(l, group, name);
        continue;
      }
      const paths = varsPaths(className, c);
      // Weights live in the innermost vars groups (an RNN's `cell/vars`, a wrapper's inner layer's).
      const leaves = paths.filter((p) => !paths.some((q) => q !== p && q.startsWith(p.slice(0, -'vars'.length))));
      for (const p of paths) groupAt(group, p).attrs = { name };
      const weights = byLayer.get(name) ?? [];
      if (weights.length % leaves.length !== 0) {
        throw new NpyError(
          'WEIGHT_MISMATCH',
          `${where}: layer '${name}' (${className}) has ${weights.length} weights for ${leaves.length} Keras variable groups`,
        );
      }
      const per = weights.length / leaves.length;
      leaves.forEach((p, j) => {
        const vars = groupAt(group, p).members;
        weights.slice(j * per, (j + 1) * per).forEach(([wName, a], i) => {
          vars[String(i)] = dataset(a, wName);
          used.add(wName);
        });
      });
    }
  };
  const config = isObject(topology.config) ? topology.config : {};
  walk(topology, root, String(config.name ?? 'model'));
  const left = [...arrays.keys()].filter((k) => !used.has(k));
  if (left.length > 0) throw new NpyError('WEIGHT_MISMATCH', `${where}: weights of no layer of the topology: ${left.join(', ')}`);
  return { members: root };
}

/**
 * Save tfjs's artifacts as a `.keras` file: to a path (Node; written beside and renamed over it) or to
 * a function given the bytes.
 */
export async function saveKeras(
  artifacts: tf.io.ModelArtifacts,
  target: string | NpzSink,
  where: string,
  shapes: TensorShapes,
  options: { signal?: AbortSignal } = {},
): Promise<void> {
  const topology = artifacts.modelTopology;
  if (!isObject(topology)) throw new NpyError('BAD_TARGET', `${where}: a binary (GraphDef) topology cannot be saved as a Keras file; save a layers model`);
  const { config } = kerasConfigOf(topology, where, shapes);
  const weights = encodeHdf5(weightsTree(topology, arraysOf(artifacts), where));
  const metadata = { keras_version: '3.0.0', date_saved: new Date().toISOString().replace('T', '@').slice(0, 19), saved_by: 'npyts' };
  await writeArchive(target, new Map(), {
    ...options,
    files: { 'metadata.json': JSON.stringify(metadata), 'config.json': JSON.stringify(config), 'model.weights.h5': weights },
  });
}
