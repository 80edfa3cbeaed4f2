/** .safetensors files on disk: opened by position, written beside the target and renamed over it. */
import type { SyncByteSource } from '../io/byte-source.js';
import { openingOver, sourceOf, type NpySource } from '../io/open.js';
import type { FileStep, Operation } from '../io/steps.js';
import { HTTP_KEY_SET, type HttpOptions } from '../io/url.js';
import { SafetensorsFile } from '../safetensors/file.js';
import type { SafetensorsInput, SafetensorsWriteOptions } from '../safetensors/encode.js';
import {
  fileWriter,
  inMemory,
  saveSafetensorsTo,
  saveSafetensorsToSync,
  shardTarget,
  tensorsOf,
  type SafetensorsSource,
  type Tensors,
  AT_ONCE,
  WAITED,
  type Answers,
  type SaveStep,
} from '../safetensors/save.js';
import { resolve, sep } from 'node:path';
import { writingBeside, type ReplaceOptions } from './beside.js';
import { run, runSync } from './drive.js';
import type { AsyncOptions } from './fd.js';
import { fileSource } from './sources.js';
import { checkOptions, knownKeys } from '../options.js';
import { saveSafetensors as saveSafetensorsIn } from '../store/entries.js';
import { refuseBesideStore } from '../store/key.js';
import type { WriteStore } from '../store/types.js';
import { folderStoreOf, type FolderWriteOptions } from './place.js';
import { readdirSync, type Dirent } from 'node:fs';
import { readdir } from 'node:fs/promises';

export type { SafetensorsSource } from '../safetensors/save.js';

/**
 * Open a .safetensors file without blocking: a path or `file:` URL (positional reads), an `http(s)`
 * URL (range requests), a `Blob`, bytes or a byte source. The header is read and checked now, each
 * tensor when asked for. Close it, or `await using` it.
 * @example
 * await using f = await openSafetensors('model.safetensors');
 * f.names;                                // tensor names, in file order
 * const w = await f.get('fc.weight');
 */
export async function openSafetensors(input: string | NpySource, options: HttpOptions = {}): Promise<SafetensorsFile> {
  checkOptions('openSafetensors', options, HTTP_KEY_SET);
  const source = await sourceOf(input, { ...options, tailBytes: 1 }, 'openSafetensors');
  return openingOver(source, input, () => SafetensorsFile.open(source, options));
}

/**
 * {@link openSafetensors} of a path, blocking: `getSync` reads tensors.
 * @example
 * using f = openSafetensorsSync('model.safetensors');
 * const w = f.getSync('fc.weight');
 */
export function openSafetensorsSync(path: string): SafetensorsFile<SyncByteSource> {
  const source = fileSource(path);
  try {
    return SafetensorsFile.openSync(source);
  } catch (e) {
    source.close?.();
    throw e;
  }
}

/** Options of {@link saveSafetensorsSync}: the file's metadata, how the file is replaced, and a shard size. */
export interface SaveSafetensorsOptionsSync extends SafetensorsWriteOptions, ReplaceOptions {
  /**
   * Write Hugging Face's sharded layout, as `huggingface_hub`'s `save_torch_state_dict` does, with
   * shards of at most this many bytes (a number, or `'5GB'`, `'500MB'`: decimal units); a tensor
   * larger than this is alone in its shard. The target is then a folder (`model-0000k-of-0000n.safetensors`
   * and `model.safetensors.index.json` in it, or `model.safetensors` where one file holds all) or a
   * path `DIR/NAME.safetensors` (NAME in place of `model`). Every file gets `{ format: 'pt' }`;
   * `metadata` goes where `save_torch_state_dict` puts it (the index, or the single file). Tensors
   * given under several names with the same data (the same array, or views of the same bytes) are
   * written once, under the code-point-first name, the others recorded in the metadata as
   * `name: kept` (transformers ties them again). Files of an earlier save with the same names that
   * the new set does not have are removed once it is complete.
   */
  maxShardSize?: number | string;
}

/** Options of {@link saveSafetensors}. */
export interface SaveSafetensorsOptions extends SaveSafetensorsOptionsSync, AsyncOptions {
  /** The store to write the key into (`saveSafetensors('m.safetensors', tensors, { store })`): written there, not to disk. */
  store?: WriteStore | undefined;
}

const SAVE_SYNC_KEYS = knownKeys<SaveSafetensorsOptionsSync>({ metadata: true, durable: true, maxShardSize: true });
const SAVE_KEYS = knownKeys<SaveSafetensorsOptions>({ metadata: true, durable: true, signal: true, store: true, maxShardSize: true });

/**
 * Write tensors as a .safetensors file that Python's `safetensors` loads, without blocking: checked
 * before anything is written, written beside `path` and renamed over it when complete. `tensors`
 * may be a weight file (`openWeights`): its tensors are read one at a time as they are written, so
 * memory stays near the largest tensor. With `maxShardSize`, the sharded layout of
 * `huggingface_hub` (see {@link SaveSafetensorsOptionsSync.maxShardSize}), each shard written beside
 * and renamed, the index last.
 * @example
 * await saveSafetensors('model.safetensors', { 'fc.weight': w, 'fc.bias': b }, { metadata: { format: 'pt' } });
 * await using w = await openWeights('pytorch_model.bin');
 * await saveSafetensors('out/', w, { maxShardSize: '2GB' });   // out/model-00001-of-00003.safetensors, …
 */
export async function saveSafetensors(path: string, tensors: SafetensorsInput | SafetensorsSource, options: SaveSafetensorsOptions = {}): Promise<void> {
  checkOptions('saveSafetensors', options, SAVE_KEYS);
  if (options.store !== undefined) {
    refuseBesideStore('saveSafetensors', options, ['durable']);
    return saveSafetensorsIn(path, tensors, { ...options, store: options.store });
  }
  options.signal?.throwIfAborted();
  if (options.maxShardSize === undefined) {
    const source = await tensorsOf(tensors, options.signal);
    await run(savingSafetensors(path, source, options, WAITED), options.signal, path);
    return;
  }
  // Sharded: the save through a store (safetensors/save.ts), over the folder as a store.
  const { folder, key } = shardFolder(path);
  const { durable, store: _, ...rest } = options;
  await saveSafetensorsTo(shardStore(folder, { durable }), key, tensors, rest);
}

/**
 * {@link saveSafetensors}, blocking (tensors held in memory).
 * @example
 * saveSafetensorsSync('model.safetensors', { w });
 */
export function saveSafetensorsSync(path: string, tensors: SafetensorsInput, options: SaveSafetensorsOptionsSync = {}): void {
  checkOptions('saveSafetensorsSync', options, SAVE_SYNC_KEYS);
  if (options.maxShardSize === undefined) {
    runSync(savingSafetensors(path, inMemory(tensors), options, AT_ONCE), path);
    return;
  }
  const { folder, key } = shardFolder(path);
  const { durable, ...rest } = options;
  saveSafetensorsToSync(shardStore(folder, { durable, sync: true }), key, tensors, rest);
}

/**
 * The folder of a sharded save as a store, listing only its own files: what a save clears of an
 * earlier set is there, and a folder with much below it (a project's root) is not walked.
 */
function shardStore(folder: string, writing: FolderWriteOptions): WriteStore {
  const path = resolve(folder);
  const own = (entries: readonly Dirent[]): string[] => entries.filter((e) => e.isFile()).map((e) => e.name);
  return {
    ...folderStoreOf(path, folder, undefined, writing),
    list: () => (writing.sync ? own(readdirSync(path, { withFileTypes: true })) : readdir(path, { withFileTypes: true }).then(own)),
  };
}

/**
 * The folder of a sharded save and the key in it that names its files (see `shardTarget`):
 * `DIR/NAME.safetensors` is `NAME.safetensors` in DIR; any other path is the folder, its files `model…`.
 */
function shardFolder(path: string): { folder: string; key: string } {
  const { folder, pattern } = shardTarget(path, sep === '/' ? '/' : `/${sep}`);
  return folder === path ? { folder, key: '' } : { folder: folder === '' ? '.' : folder, key: `${pattern.prefix}${pattern.suffix}` };
}

/** One file written beside `path` (checked first) and renamed over it: the tensors' writes (safetensors/save.ts) as steps of the file. */
function* savingSafetensors<S extends SaveStep>(
  path: string,
  tensors: Tensors,
  options: SaveSafetensorsOptionsSync,
  answers: Answers<S>,
): Operation<void, S | FileStep> {
  const write = fileWriter(
    tensors,
    tensors.entries.map((e) => e.name),
    { ...(options.metadata ? { metadata: options.metadata } : {}) },
    answers,
  );
  yield* writingBeside(
    path,
    (file) =>
      write(function* (bytes, at): Operation<void, FileStep> {
        yield { op: 'write', file, bytes, at };
      }),
    options,
  );
}
