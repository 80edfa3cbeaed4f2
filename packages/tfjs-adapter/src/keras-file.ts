/**
 * What a Keras weight file opened by core (`openWeights` of a `.keras`, `.weights.h5` or legacy
 * `.h5`: a `KerasFile`) records of its layers, read from its metadata.
 */
import type { WeightFile } from '@npyts/core';
import type { KerasRecords } from './keras-weights.js';

/**
 * What a Keras weight file records of its layers, from its metadata, or undefined for other files:
 * a Keras 3 file its weights' paths (its `vars` groups' `name` attributes play no part, as in Keras), a
 * legacy `.h5` its layer groups too.
 */
export function kerasRecordsOf(file: WeightFile): KerasRecords | undefined {
  const layers = (file.metadata as { layers?: unknown }).layers;
  if (file.format !== 'keras' || typeof layers !== 'object' || layers === null) return undefined;
  const groups = Object.entries(layers as Record<string, unknown>).filter((e): e is [string, string] => typeof e[1] === 'string');
  const keys = file.names;
  // A legacy file's layer groups (`model_weights/dense`) are never `vars` groups; a Keras 3 file lists only
  // those, and none where no `vars` group has a `name` attribute (Keras loads it all the same).
  if (groups.length === 0 || groups.some(([g]) => g === 'vars' || g.endsWith('/vars'))) return { keys };
  // Legacy: a layer's weights are the datasets below its group, in its weight_names' order (the file's); the
  // layers with weights in layer_names' order, which is the file's order of their weights (the metadata's
  // keys are an object's, which would put a layer named '0' first).
  const index = new Map(keys.map((k, i) => [k, i]));
  const legacy = groups
    .map(([g, name]) => ({ name, keys: keys.filter((k) => k.startsWith(`${g}/`)) }))
    .filter((l) => l.keys.length > 0)
    .sort((a, b) => index.get(a.keys[0]!)! - index.get(b.keys[0]!)!);
  return { keys, legacy };
}

/** A Keras file's model config (`config.json`, a legacy `.h5`'s `model_config`), or null for weights only. */
export function kerasConfigOf(file: WeightFile): unknown {
  return (file.metadata as { config?: unknown }).config ?? null;
}

/**
 * The Keras major version that wrote `file`, where functions differ by version (Keras 3's
 * `hard_sigmoid` is not Keras 2's): 2 for a legacy `.h5` whose `keras_version` says 2.x, else 3.
 */
export function kerasMajorOf(file: WeightFile): 2 | 3 {
  const version = (file.metadata as { kerasVersion?: unknown }).kerasVersion;
  return typeof version === 'string' && /^2\./.test(version) ? 2 : 3;
}
