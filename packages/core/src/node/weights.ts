/** Weight files on disk: paths (and sharded sets beside their index) as well as what core opens. */
import { dirname, join } from 'node:path';
import type { NdArray } from '../array/ndarray.js';
import { openingOver, type NpySource } from '../io/open.js';
import { openShardSource, openWeightsFrom, type OpenWeightsOptions, type ShardOpener, type WeightFile } from '../weights/open.js';
import { zlibCodec } from './npz/codec.js';
import { nodeSourceOf, pathOf } from './sources.js';

/**
 * Open a weight file of any kind without blocking: a path or `file:` URL, an `http(s)` URL, a
 * `Blob`, bytes or a byte source; a `.npz`, a `.safetensors` file, or a sharded set's
 * `*.safetensors.index.json` (its shards are opened from beside it). The kind is told by the bytes.
 * @example
 * await using w = await openWeights('model.safetensors.index.json');
 * const { dtype, shape } = await w.info('lm_head.weight');
 */
export async function openWeights(input: string | NpySource, options: OpenWeightsOptions = {}): Promise<WeightFile> {
  const path = pathOf(input);
  const where = path ?? (typeof input === 'string' || input instanceof URL ? String(input) : null);
  // The first request of a URL learns the size with one byte: a .safetensors file is read from its
  // start, a zip's directory from its tail, each by the reads that need it.
  const source = await nodeSourceOf(input, { ...options, tailBytes: 1 });
  const openShard: ShardOpener | null =
    where === null
      ? null
      : async (file, signal) =>
          openShardSource(
            await nodeSourceOf(path !== null ? join(dirname(path), file) : new URL(file, where).href, { ...options, signal, tailBytes: 1 }),
            signal,
          );
  return openingOver(source, input, () => openWeightsFrom(source, { codec: zlibCodec, ...options }, openShard));
}

/**
 * Every tensor of a weight file of any kind (see {@link openWeights}), by name in the file's order.
 * @example
 * const weights = await loadWeights('model.safetensors');   // Map { 'fc.weight' => NdArray, … }
 */
export async function loadWeights(input: string | NpySource, options: OpenWeightsOptions = {}): Promise<Map<string, NdArray>> {
  await using file = await openWeights(input, options);
  return await file.getAll(options);
}
