/** Every array of an archive as tensors by name, and tensors by name as an archive. */
import type * as tf from '@tensorflow/tfjs-core';
import { NpyError, encodeNpz, type NdArray, type NpzWriteOptions } from '@npyts/core';
import { fromTensor, toTensor, type ToTensorOptions } from './tensors.js';
import { openArchive, type NpzSource, type SourceOptions } from './sources.js';

/** Tensors by name, as tfjs names them. */
export type NamedTensorMap = Record<string, tf.Tensor>;

/** Options of {@link loadTensors}: the archive's, the conversion's, and `fetch`/`signal` for URLs. */
export interface LoadTensorsOptions extends SourceOptions, ToTensorOptions {}

/**
 * Every array of a .npz (bytes, a Blob, a URL — relative to the page in a browser — or a path in Node) as a tensor, by name.
 * @example
 * const tensors = await loadTensors('weights.npz');
 */
export async function loadTensors(source: NpzSource, options: LoadTensorsOptions = {}): Promise<NamedTensorMap> {
  const [archive, opened] = await openArchive(source, options);
  try {
    const out: NamedTensorMap = {};
    if (!archive.entries.some((e) => e.name.endsWith('.npy'))) {
      throw new NpyError(
        'NPZ_KEY',
        `${typeof source === 'string' || source instanceof URL ? String(source) : 'the archive'} holds no .npy member, so no tensors (members: ${
          archive.entries
            .slice(0, 8)
            .map((e) => e.name)
            .join(', ') || 'none'
        })`,
      );
    }
    for (const e of archive.entries) {
      if (!e.name.endsWith('.npy')) continue; // metadata such as a model.json
      const name = e.name.slice(0, -4);
      out[name] = toTensor(await archive.get(e.name), options);
    }
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
