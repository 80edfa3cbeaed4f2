/**
 * Whole-file entries over a store, in every runtime (a worker has no `@npyts/core/node`): `saveNpy`,
 * `loadNpy`, `saveNpz` and `saveSafetensors` take a key and `{ store }`. `@npyts/core/node`'s
 * entries of the same names take paths, and hand a call with `{ store }` to these.
 */
import type { NdArray } from '../array/ndarray.js';
import type { DescrInput } from '../format/descr-types.js';
import { isPromise } from '../io/byte-source.js';
import { sourceOf } from '../io/open.js';
import { NPZ_WRITE_KEYS, checkNpzWriteOptions, npzWriting, type NpzInput, type NpzWriteOptions } from '../npz/archive.js';
import type { ZipSink } from '../npz/zip.js';
import {
  DECODE_KEYS,
  ENCODE_KEYS,
  decodeNpy,
  encodeNpyPieces,
  toNdArray,
  type ArraySpec,
  type DecodeOptions,
  type EncodeOptions,
  type Expecting,
} from '../npy.js';
import { checkOptions, knownKeys, pickOptions } from '../options.js';
import type { SafetensorsInput, SafetensorsWriteOptions } from '../safetensors/encode.js';
import { saveSafetensorsTo, type SafetensorsSource } from '../safetensors/save.js';
import { checkFormatVersion } from '../format/header.js';
import { checkStore } from './key.js';
import type { ReadStore, WriteStore } from './types.js';
import { writeInOrder, writeKey } from './write.js';

/** What every entry over a store takes beside its own options: the store, and `signal`. */
export interface InStore<S> {
  /** Where the key is (see `ReadStore`, `WriteStore`). */
  store: S;
  /** Stops the work: a write in progress leaves the key as it was. */
  signal?: AbortSignal | undefined;
}

/** Options of {@link saveNpy} in a store: numpy's header options. */
export interface StoreSaveOptions extends EncodeOptions, InStore<WriteStore> {}
/** Options of {@link loadNpy} from a store: the decode options. */
export interface StoreLoadOptions extends DecodeOptions, InStore<ReadStore> {}
/** Options of {@link saveNpz} in a store: the archive's. */
export interface StoreSaveNpzOptions extends NpzWriteOptions, InStore<WriteStore> {}
/** Options of {@link saveSafetensors} in a store: the file's metadata, and a shard size. */
export interface StoreSaveSafetensorsOptions extends SafetensorsWriteOptions, InStore<WriteStore> {
  /**
   * Write Hugging Face's sharded layout, as `huggingface_hub`'s `save_torch_state_dict` does, with
   * shards of at most this many bytes (a number, or `'5GB'`, `'500MB'`: decimal units): the key is
   * then a folder (`model-0000k-of-0000n.safetensors` and `model.safetensors.index.json` in it) or
   * `DIR/NAME.safetensors` (NAME in place of `model`), as `saveSafetensors` of `@npyts/core/node`
   * writes on disk. Every shard is written beside before any replaces its key, the old index removed
   * first and the new index written last.
   */
  maxShardSize?: number | string | undefined;
}

const SAVE_KEYS = knownKeys<StoreSaveOptions>({ ...ENCODE_KEYS, store: true, signal: true });
const LOAD_KEYS = knownKeys<StoreLoadOptions>({ ...DECODE_KEYS, store: true, signal: true });
const SAVE_NPZ_KEYS = knownKeys<StoreSaveNpzOptions>({ ...NPZ_WRITE_KEYS, store: true, signal: true });
const SAVE_SAFETENSORS_KEYS = knownKeys<StoreSaveSafetensorsOptions>({ metadata: true, store: true, signal: true, maxShardSize: true });

/** Refuse an entry's options: unknown ones, and a `store` that is not a write store. */
function checkWrite(entry: string, options: unknown, known: ReadonlySet<string>): void {
  checkOptions(entry, options, known);
  checkStore(entry, (options as { store?: unknown } | undefined)?.store, 'write');
}

/**
 * Write an array as numpy's `np.save` would under `key` of a store: written beside the key and
 * replacing it when complete (an error or an abort leaves the old bytes). Native-endian data is
 * written straight from its memory, other byte orders a piece at a time.
 * @example
 * await saveNpy('w.npy', { data: new Float32Array([1, 2, 3]) }, { store: opfsStore(await navigator.storage.getDirectory()) });
 */
export async function saveNpy(key: string, array: NdArray | ArraySpec, options: StoreSaveOptions): Promise<void> {
  checkWrite('saveNpy', options, SAVE_KEYS);
  const input = toNdArray(array);
  checkFormatVersion(options.version); // before anything is written
  const pieces = encodeNpyPieces(input, options);
  await writeKey(options.store, key, (write) => writeInOrder(write, pieces), options.signal);
}

/**
 * Load a whole .npy held under `key` of a store.
 * @example
 * const w = await loadNpy('w.npy', { store, expect: '<f4' });
 */
export async function loadNpy<const S extends DescrInput>(key: string, options: StoreLoadOptions & Expecting<S>): Promise<NdArray<S>>;
export async function loadNpy(key: string, options: StoreLoadOptions): Promise<NdArray>;
export async function loadNpy(key: string, options: StoreLoadOptions): Promise<NdArray> {
  checkOptions('loadNpy', options, LOAD_KEYS);
  checkStore('loadNpy', options?.store, 'read');
  options.signal?.throwIfAborted();
  const source = await sourceOf(key, options, 'loadNpy');
  try {
    const reading = source.read(0, source.size, { signal: options.signal });
    // Bytes a source holds in memory (a memory store's) are copied out: the array must not alias them.
    const held = !isPromise(reading);
    return decodeNpy(await reading, { ...pickOptions(options, DECODE_KEYS), copy: options.copy || held });
  } finally {
    await source.close?.();
  }
}

/**
 * Write arrays as a .npz under `key` of a store, member by member (the archive is never built in
 * memory where the store writes as it goes), replacing the key when complete.
 * @example
 * await saveNpz('w.npz', { a, b }, { store, compress: true });
 */
export async function saveNpz(key: string, arrays: NpzInput, options: StoreSaveNpzOptions): Promise<void> {
  checkWrite('saveNpz', options, SAVE_NPZ_KEYS);
  checkNpzWriteOptions(options);
  await writeKey(
    options.store,
    key,
    async (write) => {
      // The zip writer writes in order and patches the local headers it wrote; each step's writes are made before the next step.
      let queue: [Uint8Array, number][] = [];
      let position = 0;
      const sink: ZipSink = {
        write(chunk) {
          queue.push([chunk, position]);
          position += chunk.length;
        },
        patch: (at, bytes) => void queue.push([bytes.slice(), at]),
      };
      const flush = async (): Promise<void> => {
        const pending = queue;
        queue = [];
        for (const [bytes, at] of pending) await write(bytes, at);
      };
      for (const _ of npzWriting(sink, arrays, options)) await flush();
      await flush();
    },
    options.signal,
  );
}

/**
 * Write tensors as a .safetensors file under `key` of a store (checked before anything is written),
 * replacing the key when complete; with `maxShardSize`, Hugging Face's sharded layout in the folder
 * the key names. `tensors` may be a weight file (`openWeights`): its tensors are read one at a time
 * as they are written, so memory stays near the largest tensor.
 * @example
 * await saveSafetensors('model.safetensors', { 'fc.weight': w }, { store, metadata: { format: 'pt' } });
 * await saveSafetensors('llama/', await openWeights(file), { store: opfsStore(dir), maxShardSize: '2GB' });
 */
export async function saveSafetensors(key: string, tensors: SafetensorsInput | SafetensorsSource, options: StoreSaveSafetensorsOptions): Promise<void> {
  checkWrite('saveSafetensors', options, SAVE_SAFETENSORS_KEYS);
  const { store, ...rest } = options;
  await saveSafetensorsTo(store, key, tensors, rest);
}
