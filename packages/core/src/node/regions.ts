/** Regions of .npy files larger than memory: region reads and writes, sparse creation, appends. */
import { DECODE_KEYS, type DecodeOptions, type ArraySpec, type Expecting } from '../npy.js';
import { checkOptions, knownKeys } from '../options.js';
import type { DescrInput } from '../format/descr-types.js';
import { encodeHeader, type NpyHeader } from '../format/header.js';
import { CREATE_KEYS, handleAsync, handleSync, newFileLayout, type CreateOptions, type NpyFileHandle, type NpyFileHandleSync } from '../io/handles.js';
import { appendingRows, droppingRowsOf, readingOpenNpy, writingNewNpy } from '../io/npy-ops.js';
import { NpyError } from '../errors.js';
import { appendLocked } from './lock.js';
import { run, runSync } from './drive.js';
import { writingBeside } from './beside.js';
import { perform, readInto, withFile, type FileRef, type FileStep, type Operation } from '../io/steps.js';
import type { NdArray } from '../array/ndarray.js';
import { tempBeside, type AsyncOptions } from './fd.js';
import { mapNpy, type MappedArray } from './mmap.js';
import { appendNpy as appendNpyIn } from '../store/append.js';
import type { EditStore } from '../store/types.js';

/** Options of {@link openNpyFile}. */
export interface OpenOptions extends DecodeOptions, AsyncOptions {
  /** Open for {@link NpyFileHandle.writeRegion} too. */
  write?: boolean;
}

const OPEN_KEYS = knownKeys<OpenOptions>({ ...DECODE_KEYS, write: true, signal: true });
const OPEN_SYNC_KEYS = knownKeys<{ write?: boolean } & DecodeOptions>({ ...DECODE_KEYS, write: true });
const CREATE_ASYNC_KEYS = knownKeys<CreateOptions & AsyncOptions & { mmap?: boolean }>({ ...CREATE_KEYS, mmap: true, signal: true });
const CREATE_SYNC_KEYS = knownKeys<CreateOptions & { mmap?: boolean }>({ ...CREATE_KEYS, mmap: true });
const SIGNAL_KEYS = knownKeys<AsyncOptions>({ signal: true });

/** Options of the async {@link appendNpy}. */
export interface AppendOptions extends AsyncOptions {
  /** The store the file is in, given by its key (`appendNpy('log.npy', x, { store })`): appended there in place, not on disk. */
  store?: EditStore | undefined;
}

const APPEND_KEYS = knownKeys<AppendOptions>({ signal: true, store: true });

/**
 * Open a .npy for region reads (and writes with `{ write: true }`). Memory is the header, then each region.
 * @example
 * await using h = await openNpyFile('big.npy');
 * const block = await h.read([1000, 0], [64, 512]);
 */
export async function openNpyFile<const S extends DescrInput>(path: string, options: OpenOptions & Expecting<S>): Promise<NpyFileHandle<S>>;
export async function openNpyFile(path: string, options?: OpenOptions): Promise<NpyFileHandle>;
export async function openNpyFile(path: string, options: OpenOptions = {}): Promise<NpyFileHandle> {
  checkOptions('openNpyFile', options, OPEN_KEYS);
  const { file, header } = await run(openingNpy(path, options), options.signal, path);
  return handleAsync(path, header, file, run);
}

/** The steps of opening a .npy for regions: the file, its header, and a check that the data is there. */
function* openingNpy(path: string, options: { write?: boolean } & DecodeOptions): Operation<{ file: FileRef; header: NpyHeader }, FileStep> {
  const file = yield* perform({ op: 'open', path, mode: options.write ? 'r+' : 'r' });
  try {
    return { file, header: yield* readingOpenNpy(file, options) };
  } catch (e) {
    yield { op: 'close', file };
    throw e;
  }
}

/**
 * {@link openNpyFile}, blocking.
 * @example
 * using h = openNpyFileSync('big.npy');
 * const block = h.read([1000, 0], [64, 512]);
 */
export function openNpyFileSync<const S extends DescrInput>(path: string, options: { write?: boolean } & DecodeOptions & Expecting<S>): NpyFileHandleSync<S>;
export function openNpyFileSync(path: string, options?: { write?: boolean } & DecodeOptions): NpyFileHandleSync;
export function openNpyFileSync(path: string, options: { write?: boolean } & DecodeOptions = {}): NpyFileHandleSync {
  checkOptions('openNpyFileSync', options, OPEN_SYNC_KEYS);
  const { file, header } = runSync(openingNpy(path, options), path);
  return handleSync(path, header, file, runSync);
}

/**
 * Create a .npy of the given dtype and shape: numpy's header, and the file sized to hold the data
 * (sparse where the file system allows), ready for any number of processes or threads to fill
 * disjoint regions with {@link writeRegion}. Returns an open handle.
 * @example
 * await using out = await createNpy('out.npy', { dtype: '<f8', shape: [100000, 4096] });
 * await out.writeRegion([0, 0], { data: new Float64Array(4096), shape: [1, 4096] });
 * using mapped = await createNpy('m.npy', { dtype: '<f4', shape: [1000, 1000], mmap: true });
 * mapped.data[0] = 1;   // written to the file
 */
export async function createNpy(path: string, options: CreateOptions & AsyncOptions & { mmap: true }): Promise<MappedArray>;
export async function createNpy(path: string, options: CreateOptions & AsyncOptions): Promise<NpyFileHandle>;
export async function createNpy(path: string, options: CreateOptions & AsyncOptions & { mmap?: boolean }): Promise<NpyFileHandle | MappedArray> {
  checkOptions('createNpy', options, CREATE_ASYNC_KEYS);
  options.signal?.throwIfAborted();
  if (options.mmap) {
    const { mmap: _, signal: __, ...plain } = options;
    createNpySync(path, plain).close();
    return mapNpy(path, 'r+');
  }
  const { file, header } = await run(creatingNpy(path, options), options.signal, path);
  return handleAsync(path, header, file, run);
}

/**
 * The steps of a create: checked before anything is touched, then made beside the target (header
 * written, file sized) and renamed over it; a refused or failed create leaves an existing file as it was.
 */
function* creatingNpy(path: string, options: CreateOptions): Operation<{ file: FileRef; header: NpyHeader }, FileStep> {
  newFileLayout(options); // refused before anything is made
  const temp = tempBeside(path);
  const file = yield* perform({ op: 'open', path: temp, mode: 'wx+' });
  try {
    const header = yield* writingNewNpy(file, options);
    yield { op: 'rename', from: temp, to: path };
    return { file, header };
  } catch (e) {
    yield { op: 'close', file };
    yield { op: 'remove', path: temp };
    throw e;
  }
}

/**
 * {@link createNpy}, blocking.
 * @example
 * createNpySync('out.npy', { dtype: '<f8', shape: [100000, 4096] }).close();
 */
export function createNpySync(path: string, options: CreateOptions & { mmap: true }): MappedArray;
export function createNpySync(path: string, options: CreateOptions): NpyFileHandleSync;
export function createNpySync(path: string, options: CreateOptions & { mmap?: boolean }): NpyFileHandleSync | MappedArray {
  checkOptions('createNpySync', options, CREATE_SYNC_KEYS);
  if (options.mmap) {
    const { mmap: _, ...plain } = options;
    createNpySync(path, plain).close();
    return mapNpy(path, 'r+');
  }
  const { file, header } = runSync(creatingNpy(path, options), path);
  return handleSync(path, header, file, runSync);
}

/**
 * Write `data` at `start` of an existing .npy (by path, opened and closed here, or an open handle).
 * @example
 * await writeRegion('out.npy', [25000, 0], { data: rows, shape: [100, 4096] });
 */
export async function writeRegion(
  target: string | NpyFileHandle,
  start: readonly number[],
  data: NdArray | ArraySpec,
  options: AsyncOptions = {},
): Promise<void> {
  checkOptions('writeRegion', options, SIGNAL_KEYS);
  if (typeof target !== 'string') return target.writeRegion(start, data, options);
  const h = await openNpyFile(target, { write: true, signal: options.signal });
  try {
    await h.writeRegion(start, data, options);
  } finally {
    await h.close();
  }
}

/**
 * {@link writeRegion}, blocking.
 * @example
 * writeRegionSync('out.npy', [25000, 0], { data: rows, shape: [100, 4096] });
 */
export function writeRegionSync(target: string | NpyFileHandleSync, start: readonly number[], data: NdArray | ArraySpec): void {
  if (typeof target !== 'string') {
    target.writeRegion(start, data);
    return;
  }
  const h = openNpyFileSync(target, { write: true });
  try {
    h.writeRegion(start, data);
  } finally {
    h.close();
  }
}

/** Bytes copied per step when an append has to rewrite the file. */
const REWRITE_CHUNK = 64 << 20;

/**
 * Append along axis 0 (the last axis of a Fortran-order file) in place. The data is written after
 * the existing data and made durable first; only then is the shape in the header rewritten, within
 * the header's padding (numpy ≥ 1.24 leaves room for it). A crash before the header write leaves the
 * old array (readers ignore trailing bytes); the header rewrite is a single small write at byte 8.
 * When the header cannot grow in place, the file is rewritten beside itself and renamed over it.
 * Appends to one file are serialised across processes; the wait for another writer does not block
 * the event loop. An abort before the header is rewritten leaves the old array. With `{ store }`,
 * `path` is a key of the store, appended there in place (the header must have room to grow).
 * @example
 * await appendNpy('log.npy', { data: new Float32Array(512), shape: [1, 512] });
 */
export async function appendNpy(path: string, input: NdArray | ArraySpec, options: AppendOptions = {}): Promise<void> {
  checkOptions('appendNpy', options, APPEND_KEYS);
  if (options.store !== undefined) return appendNpyIn(path, input, { ...options, store: options.store });
  await run(
    appendLocked(path, () => appending(path, input)),
    options.signal,
    path,
  );
}

/**
 * {@link appendNpy}, blocking.
 * @example
 * appendNpySync('log.npy', { data: new Float32Array(512), shape: [1, 512] });
 */
export function appendNpySync(path: string, input: NdArray | ArraySpec): void {
  runSync(
    appendLocked(path, () => appending(path, input)),
    path,
  );
}

/** The steps of {@link appendNpy} for a caller that holds the file's append lock already (see lock.ts). */
export function* appending(path: string, input: NdArray | ArraySpec): Operation<void, FileStep> {
  yield* withFile(path, 'r+', function* (file) {
    const plan = yield* appendingRows(file, path, input, 'return');
    if (plan === null) return;
    const { header } = plan;
    // No room: write the grown array beside the file, then rename it over (atomic on POSIX).
    yield* writingBeside(path, function* (out): Operation<void, FileStep> {
      yield { op: 'write', file: out, bytes: encodeHeader(header.dtype, plan.newShape, header.fortranOrder), at: null };
      const total = header.dataBytes + plan.bytes.length;
      const chunk = new Uint8Array(Math.min(REWRITE_CHUNK, Math.max(1, total)));
      for (let at = 0; at < total; ) {
        const n = yield* readInto(file, chunk.subarray(0, Math.min(chunk.length, total - at)), header.dataOffset + at);
        if (n === 0) throw new NpyError('DATA_TRUNCATED', `${path} ended while being rewritten`);
        yield { op: 'write', file: out, bytes: chunk.subarray(0, n), at: null };
        at += n;
      }
      yield { op: 'sync', file: out };
    });
  });
}

export type { CreateOptions, NpyFileHandle, NpyFileHandleSync } from '../io/handles.js';

/**
 * Shorten a C-order file to its first `rows` rows, for a caller holding its append lock: the header
 * is rewritten in place (made durable), then the file is cut to the data it declares. Rows past the
 * header's shape are what an interrupted writer left; only a file's owner may drop them.
 */
export function* droppingRows(path: string, rows: number): Operation<void, FileStep> {
  yield* withFile(path, 'r+', (file) => droppingRowsOf(file, path, rows));
}
