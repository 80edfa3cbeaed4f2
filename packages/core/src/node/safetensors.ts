/** .safetensors files on disk: opened by position, written beside the target and renamed over it. */
import type { SyncByteSource } from '../io/byte-source.js';
import { openingOver, type NpySource } from '../io/open.js';
import { perform, type AwaitStep, type FileRef, type FileStep, type Operation, type Step, type StepOf } from '../io/steps.js';
import { HTTP_KEY_SET, type HttpOptions } from '../io/url.js';
import { SafetensorsFile } from '../safetensors/file.js';
import {
  checkedBytes,
  checkTensorName,
  safetensorsLayout,
  type SafetensorsEntry,
  type SafetensorsInput,
  type SafetensorsWriteOptions,
} from '../safetensors/encode.js';
import { isPatternFile, planShards, type ShardPlan } from '../safetensors/shards.js';
import type { NdArray } from '../array/ndarray.js';
import { NpyError } from '../errors.js';
import { toNdArray } from '../npy.js';
import type { TensorFile } from '../weights/tensor-file.js';
import { mkdirSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { basename, dirname, join, sep } from 'node:path';
import { writingBeside, writingTogether, type ReplaceOptions } from './beside.js';
import { run, runSync } from './drive.js';
import type { AsyncOptions } from './fd.js';
import { fileSource, nodeSourceOf } from './sources.js';
import { checkOptions, knownKeys } from '../options.js';
import { refuseBesideStore, saveSafetensors as saveSafetensorsIn } from '../store/entries.js';
import type { WriteStore } from '../store/types.js';

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
  const source = await nodeSourceOf(input, { ...options, tailBytes: 1 });
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
 * Tensors read one at a time: a weight file from `openWeights` (any format), or anything with its
 * `names`, `info` and `get`. Only one tensor's data is held at a time while it is written.
 */
export type SafetensorsSource = Pick<TensorFile, 'names' | 'info' | 'get' | 'tieOf'>;

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
    refuseBesideStore('saveSafetensors', options, ['durable', 'maxShardSize']);
    if (isSource(tensors)) {
      throw new NpyError('BAD_OPTION', 'saveSafetensors: { store } takes arrays in memory; a weight file read a tensor at a time is saved to a path');
    }
    return saveSafetensorsIn(path, tensors, { ...options, store: options.store });
  }
  options.signal?.throwIfAborted();
  let source: Tensors<AwaitStep>;
  if (isSource(tensors)) {
    const entries: TensorEntry[] = [];
    for (const name of tensors.names) {
      const info = await tensors.info(name, { signal: options.signal });
      entries.push({ name, dtype: info.dtype, shape: info.shape, tie: tensors.tieOf?.(name) });
    }
    source = { entries, array: (name) => perform({ op: 'await', value: (signal) => tensors.get(name, { signal }) }) };
  } else source = inMemory(tensors);
  if (options.maxShardSize === undefined) {
    await run(savingSafetensors(path, source, options), options.signal, path);
    return;
  }
  const { folder, pattern } = shardTarget(path);
  const plan = shardPlan(pattern, source, options);
  await mkdir(folder, { recursive: true });
  await run(savingShards(folder, pattern, source, plan, options), options.signal, path);
}

/**
 * {@link saveSafetensors}, blocking (tensors held in memory).
 * @example
 * saveSafetensorsSync('model.safetensors', { w });
 */
export function saveSafetensorsSync(path: string, tensors: SafetensorsInput, options: SaveSafetensorsOptionsSync = {}): void {
  checkOptions('saveSafetensorsSync', options, SAVE_SYNC_KEYS);
  const source = inMemory(tensors);
  if (options.maxShardSize === undefined) {
    runSync(savingSafetensors(path, source, options), path);
    return;
  }
  const { folder, pattern } = shardTarget(path);
  const plan = shardPlan(pattern, source, options);
  mkdirSync(folder, { recursive: true });
  runSync(savingShards(folder, pattern, source, plan, options), path);
}

interface TensorEntry extends SafetensorsEntry {
  /** What its data is, for ties: equal keys are the same bytes. */
  readonly tie?: unknown;
}

/**
 * Tensors to write: their names, dtypes and shapes now, their data when asked, by the steps `S` (none
 * for arrays held in memory; an `await` of a weight file's read, which only the async driver performs).
 */
interface Tensors<S extends Step> {
  readonly entries: readonly TensorEntry[];
  readonly array: (name: string) => Operation<NdArray, S>;
}

function isSource(x: SafetensorsInput | SafetensorsSource): x is SafetensorsSource {
  // A tensor record's values are arrays or specs, never functions: a `get` function is a source's.
  return !(x instanceof Map) && typeof (x as { get?: unknown }).get === 'function' && Array.isArray((x as { names?: unknown }).names);
}

/** Tensors held in memory; two names whose data is the same bytes (same buffer, offset, length, dtype, shape) are tied. */
function inMemory(input: SafetensorsInput): Tensors<never> {
  const arrays = new Map<string, NdArray>();
  const regions = new Map<ArrayBufferLike, Map<string, object>>();
  const entries = (input instanceof Map ? [...input.entries()] : Object.entries(input)).map(([name, value]): TensorEntry => {
    checkTensorName(name);
    const array = toNdArray(value);
    arrays.set(name, array);
    let tie: object | undefined;
    const data: unknown = array.data;
    if (ArrayBuffer.isView(data) && data.byteLength > 0) {
      const key = `${data.byteOffset}:${data.byteLength}:${array.dtype.str}:${array.order}:${array.shape.join(',')}`;
      let inBuffer = regions.get(data.buffer);
      if (!inBuffer) regions.set(data.buffer, (inBuffer = new Map()));
      tie = inBuffer.get(key);
      if (!tie) inBuffer.set(key, (tie = {}));
    }
    return { name, dtype: array.dtype, shape: array.shape, tie };
  });
  // biome-ignore lint/correctness/useYield: an array held in memory needs no step
  const array = function* (name: string): Operation<NdArray, never> {
    return arrays.get(name)!;
  };
  return { entries, array };
}

/** The folder and file names of a sharded save: `DIR/NAME.safetensors` names its pattern; any other path is the folder. */
function shardTarget(path: string): { folder: string; pattern: { prefix: string; suffix: string } } {
  const file = basename(path);
  if (/\.safetensors$/.test(file) && !path.endsWith('/') && !path.endsWith(sep)) {
    return { folder: dirname(path), pattern: { prefix: file.slice(0, -'.safetensors'.length), suffix: '.safetensors' } };
  }
  return { folder: path, pattern: { prefix: 'model', suffix: '.safetensors' } };
}

/** One file's tensors written: the header, then each tensor's bytes, read one at a time. */
/** How `names` of `tensors` are written as one .safetensors file (its header checked now, before any file is made). */
function fileWriter<S extends Step>(
  tensors: Tensors<S>,
  names: readonly string[],
  options: SaveSafetensorsOptionsSync,
): (file: FileRef) => Operation<void, S | StepOf<'write'>> {
  const byName = new Map(tensors.entries.map((e) => [e.name, e]));
  const { header, order } = safetensorsLayout(
    names.map((n) => byName.get(n)!),
    options,
  );
  return function* (file: FileRef) {
    yield { op: 'write', file, bytes: header, at: null };
    for (const at of order) {
      const array = yield* tensors.array(at.name);
      const bytes = checkedBytes(array, at, byName.get(at.name));
      if (bytes.length) yield { op: 'write', file, bytes, at: null };
    }
  };
}

function* savingSafetensors<S extends Step>(path: string, tensors: Tensors<S>, options: SaveSafetensorsOptionsSync): Operation<void, S | FileStep> {
  yield* writingBeside(
    path,
    fileWriter(
      tensors,
      tensors.entries.map((e) => e.name),
      options,
    ),
    options,
  );
}

/** The split of a sharded save, made (and its size option checked) before any folder or file is made. */
function shardPlan(pattern: { prefix: string; suffix: string }, tensors: Tensors<Step>, options: SaveSafetensorsOptionsSync): ShardPlan {
  return planShards(
    tensors.entries.map((e) => ({ name: e.name, bytes: e.shape.reduce((n, d) => n * d, e.dtype.itemsize), tie: e.tie })),
    options.maxShardSize,
    { pattern, ...(options.metadata ? { metadata: options.metadata } : {}) },
  );
}

function* savingShards<S extends Step>(
  folder: string,
  pattern: { prefix: string; suffix: string },
  tensors: Tensors<S>,
  plan: ShardPlan,
  options: SaveSafetensorsOptionsSync,
): Operation<void, S | FileStep> {
  // Every file's header is checked (names, dtypes) before the first is written; the shards are
  // renamed only when all are complete, the old index removed first and the new one written last.
  const writers = plan.files.map((f) => ({ path: join(folder, f.name), write: fileWriter(tensors, f.tensors, { ...options, metadata: plan.fileMetadata }) }));
  const index = plan.index;
  const indexPath = join(folder, index?.name ?? `${pattern.prefix}${pattern.suffix}.index.json`);
  yield* writingTogether(writers, options, function* () {
    yield { op: 'remove', path: indexPath };
  });
  const written = new Set(plan.files.map((f) => f.name));
  if (index) {
    written.add(index.name);
    yield* writingBeside(
      join(folder, index.name),
      function* (file: FileRef) {
        yield { op: 'write', file, bytes: index.bytes, at: null };
      },
      options,
    );
  }
  // An earlier save's files that this one does not replace (a stale index beside a single file, shards past the new count).
  const names = yield* perform({ op: 'list', path: folder });
  for (const name of names ?? []) if (!written.has(name) && isPatternFile(name, pattern)) yield { op: 'remove', path: join(folder, name) };
}
