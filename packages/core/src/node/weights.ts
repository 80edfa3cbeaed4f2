/** Weight files on disk: paths (and sharded sets beside their index) as well as what core opens. */
import { dirname, resolve, sep } from 'node:path';
import type { NdArray } from '../array/ndarray.js';
import { openingOver, sourceOf, type NpySource } from '../io/open.js';
import { OPEN_WEIGHTS_KEYS, openWeightsFrom, openWeightsIn, placeOf, type OpenWeightsOptions, type WeightFile } from '../weights/open.js';
import { hookStore, type Place } from '../weights/place.js';
import { checkOptions } from '../options.js';
import { zlibCodec } from './npz/codec.js';
import { folderStoreOf } from './place.js';
import { pathOf } from './sources.js';

/**
 * Where a file's siblings are in Node: the `resolve` hook (its answers may be paths too), the
 * `place` given (a path, `file:` or `http(s)` URL of the file, or of its folder ending in `/`),
 * or the file's own folder or URL.
 */
export function nodePlaceOf(input: string | NpySource, options: OpenWeightsOptions): Place | null {
  const given = options.place === undefined ? input : options.place;
  const path = pathOf(given);
  if (options.resolve) {
    const where = path ?? (typeof given === 'string' || given instanceof URL ? String(given) : null);
    // The hook's answers that are paths are mapped too, with `mmap`.
    return hookStore(options.resolve, where, (answer, o) => sourceOf(answer, { ...o, mmap: options.mmap }, 'resolve'));
  }
  if (path !== null) {
    const folder = path.endsWith('/') || path.endsWith(sep) ? path : dirname(path);
    return folderStoreOf(resolve(folder), path, options.mmap);
  }
  if (typeof given === 'string' || given instanceof URL) return placeOf(String(given), {});
  return null;
}

/**
 * Open a weight file of any kind without blocking: a path or `file:` URL, an `http(s)` URL, a
 * `Blob`, bytes or a byte source; a `.npz`, a `torch.save` file, a `.safetensors` file, or a
 * sharded set's index (`*.safetensors.index.json`, `pytorch_model.bin.index.json`: its shards are
 * opened from beside it, from `place`, or through `resolve`). The kind is told by the bytes.
 * @example
 * await using w = await openWeights('model.safetensors.index.json');
 * const { dtype, shape } = await w.info('lm_head.weight');
 */
export async function openWeights(input: string | NpySource, options: OpenWeightsOptions = {}): Promise<WeightFile> {
  checkOptions('openWeights', options, OPEN_WEIGHTS_KEYS);
  options.signal?.throwIfAborted();
  if (options.store !== undefined) return openWeightsIn(input, { codec: zlibCodec, ...options, store: options.store });
  const place = nodePlaceOf(input, options);
  // The first request of a URL learns the size with one byte: a .safetensors file is read from its
  // start, a zip's directory from its tail, each by the reads that need it.
  const source = await sourceOf(input, { ...options, tailBytes: 1 }, 'openWeights');
  return openingOver(source, input, () => openWeightsFrom(source, { codec: zlibCodec, ...options }, place));
}

/**
 * Every tensor of a weight file of any kind (see {@link openWeights}), by name in the file's order.
 * @example
 * const weights = await loadWeights('model.safetensors');   // Map { 'fc.weight' => NdArray, … }
 */
export async function loadWeights(input: string | NpySource, options: OpenWeightsOptions = {}): Promise<Map<string, NdArray>> {
  checkOptions('loadWeights', options, OPEN_WEIGHTS_KEYS);
  await using file = await openWeights(input, options);
  return await file.getAll(options);
}
