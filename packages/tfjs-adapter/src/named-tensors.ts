/** Every array of an archive as tensors by name, and tensors by name as an archive. */
import type * as tf from '@tensorflow/tfjs-core';
import { NpyError, encodeNpz, type NdArray, type NpzWriteOptions } from '@npyts/core';
import { knownKeys, putOwn } from '@npyts/core/plumbing';
import { fromTensor, toTensor, type ToTensorOptions } from './tensors.js';
import { checkEntryOptions, openWeightSource, type SourceOptions, type WeightSource } from './sources.js';

/** Tensors by name, as tfjs names them. */
export type NamedTensorMap = Record<string, tf.Tensor>;

/** Options of {@link loadTensors}: the archive's, the conversion's, and `fetch`/`signal` for URLs. */
export interface LoadTensorsOptions extends SourceOptions, ToTensorOptions {}

/** The options of {@link loadTensors} beside a source's. */
const LOAD_TENSORS_KEYS = knownKeys<Omit<LoadTensorsOptions, keyof SourceOptions>>({ float64: true, int64: true });

/**
 * Every tensor of a weight file as a tfjs tensor, by name: a .npz, a torch.save file, a .safetensors
 * file or a sharded set (bytes, a Blob, a URL — relative to the page in a browser — or a path in
 * Node). bfloat16 and float8 are widened to float32 exactly.
 * @example
 * const tensors = await loadTensors('model.safetensors');
 */
export async function loadTensors(source: WeightSource, options: LoadTensorsOptions = {}): Promise<NamedTensorMap> {
  checkEntryOptions('loadTensors', options, LOAD_TENSORS_KEYS);
  const [archive, opened] = await openWeightSource(source, options);
  try {
    const out: NamedTensorMap = {};
    if (!archive.names.length) {
      throw new NpyError(
        'NPZ_KEY',
        `${typeof source === 'string' || source instanceof URL ? String(source) : 'the weight file'} holds no arrays, so no tensors`,
      );
    }
    // All at once: a remote file is then read in a few large requests (see NpzArchive.getAll).
    // putOwn: a tensor named '__proto__' is kept as a name, not taken for the object's prototype.
    for (const [name, array] of await archive.getAll({ signal: options.signal })) putOwn(out, name, toTensor(array, options));
    return out;
  } finally {
    if (opened) await archive.close();
  }
}

/**
 * Tensors as .npz bytes that numpy loads with the same names, shapes and values.
 * @example
 * const bytes = await saveTensors({ w: tf.ones([2]) });
 */
export async function saveTensors(tensors: NamedTensorMap, options: NpzWriteOptions = {}): Promise<Uint8Array> {
  const arrays = new Map<string, NdArray>();
  for (const [name, t] of Object.entries(tensors)) arrays.set(name, await fromTensor(t));
  return encodeNpz(arrays, options);
}
