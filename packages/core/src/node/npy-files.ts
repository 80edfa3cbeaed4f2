/**
 * .npy files on disk: the header of a file, whole loads straight into their buffer, saves.
 * The plain names are async (off the event loop, cancellable); the `…Sync` names block.
 */
import { allocateBuffer } from '../array/memory.js';
import { swapBytes } from '../array/memory.js';
import {
  DECODE_KEYS,
  DECODE_KEY_SET,
  ENCODE_KEYS,
  arrayOverNative,
  checkDataPresent,
  encodeNpyPieces,
  hasObject,
  toNdArray,
  type DecodeOptions,
  type EncodeOptions,
  type ArraySpec,
  type Expecting,
} from '../npy.js';
import type { DescrInput } from '../format/descr-types.js';
import { checkFormatVersion, type NpyHeader } from '../format/header.js';
import { byteSwapUnit } from '../array/layout.js';
import { NpyError } from '../errors.js';
import type { NdArray } from '../array/ndarray.js';
import { loadCodec, saveCodec, type PickleOptions } from '../pickle/options.js';
import { mapNpy, type MapMode, type MappedArray } from './mmap.js';
import type { AsyncOptions } from './fd.js';
import { run, runSync } from './drive.js';
import { writingBeside, type ReplaceOptions } from './beside.js';
import { perform, type FileStep, type Operation } from '../io/steps.js';
import { readingHeader } from '../io/header-read.js';
import { checkOptions, knownKeys, pickOptions } from '../options.js';
import { loadNpy as loadNpyIn, saveNpy as saveNpyIn } from '../store/entries.js';
import { refuseBesideStore } from '../store/key.js';
import type { ReadStore, WriteStore } from '../store/types.js';

/** The steps that read the header of the .npy file at `path`. */
export function* readingNpyHeader(path: string, options: DecodeOptions = {}): Operation<NpyHeader, FileStep> {
  // Not through withFile: see loadingNpy.
  const file = yield* perform({ op: 'open', path, mode: 'r' });
  try {
    return yield* readingHeader(file, options);
  } finally {
    yield { op: 'close', file };
  }
}

const HEADER_KEYS = knownKeys<DecodeOptions & AsyncOptions>({ ...DECODE_KEYS, signal: true });

/**
 * The header of a .npy file, reading only its first bytes.
 * @example
 * const { shape, dtype } = await readNpyHeader('big.npy');
 */
export function readNpyHeader(path: string, options: DecodeOptions & AsyncOptions = {}): Promise<NpyHeader> {
  checkOptions('readNpyHeader', options, HEADER_KEYS);
  return run(readingNpyHeader(path, options), options.signal, path);
}

/**
 * {@link readNpyHeader}, blocking.
 * @example
 * const { shape } = readNpyHeaderSync('big.npy');
 */
export function readNpyHeaderSync(path: string, options: DecodeOptions = {}): NpyHeader {
  checkOptions('readNpyHeaderSync', options, DECODE_KEY_SET);
  return runSync(readingNpyHeader(path, options), path);
}

/** Options of {@link loadNpySync} (and, with `signal`, {@link loadNpy}). */
export interface LoadOptions extends DecodeOptions, PickleOptions {
  /**
   * Memory-map the data instead of reading it (numpy's `mmap_mode`; needs @npyts/native): `'r'`
   * reads, `'r+'` reads and writes the file, `'c'` is copy-on-write. The result is a
   * {@link MappedArray}; the data must be in native byte order.
   */
  mmap?: MapMode | undefined;
}

/** Options of the async {@link loadNpy}. */
export interface LoadOptionsAsync extends LoadOptions, AsyncOptions {
  /** The store the file is in, given by its key (`loadNpy('w.npy', { store })`): read there, not from disk. */
  store?: ReadStore | undefined;
}

const LOAD_SYNC_KEYS = knownKeys<LoadOptions>({ ...DECODE_KEYS, allowPickle: true, mmap: true });
const LOAD_KEYS = knownKeys<LoadOptionsAsync>({ ...DECODE_KEYS, allowPickle: true, mmap: true, signal: true, store: true });

function truncated(header: NpyHeader, got: number): NpyError {
  return new NpyError('DATA_TRUNCATED', `file ended after ${got} of ${header.dataBytes} data bytes`, { offset: header.dataOffset + got });
}

/**
 * Load a .npy file without blocking the event loop: the data is read on libuv's threads straight
 * into its own aligned buffer (memory is the data size, not twice it), in pieces that are
 * byte-swapped as they arrive when the file is not in native order. `signal` cancels the load: the
 * file is closed and the promise rejects with the signal's reason.
 * @example
 * const w = await loadNpy('w.npy', { expect: '<f4' });   // w.data: Float32Array
 * const a = await loadNpy('big.npy', { signal: AbortSignal.timeout(5000) });
 * using m = await loadNpy('huge.npy', { mmap: 'r' });      // pages read when touched
 */
export async function loadNpy<const S extends DescrInput>(path: string, options: LoadOptionsAsync & { mmap: MapMode } & Expecting<S>): Promise<MappedArray<S>>;
export async function loadNpy(path: string, options: LoadOptionsAsync & { mmap: MapMode }): Promise<MappedArray>;
export async function loadNpy<const S extends DescrInput>(path: string, options: LoadOptionsAsync & Expecting<S>): Promise<NdArray<S>>;
export async function loadNpy(path: string, options?: LoadOptionsAsync): Promise<NdArray>;
export async function loadNpy(path: string, options: LoadOptionsAsync = {}): Promise<NdArray> {
  checkOptions('loadNpy', options, LOAD_KEYS);
  options.signal?.throwIfAborted();
  if (options.store !== undefined) {
    refuseBesideStore('loadNpy', options, ['mmap']);
    const { allowPickle: _, store, ...rest } = options;
    const pickle = loadCodec(options);
    return loadNpyIn(path, { ...rest, store, ...(pickle ? { pickle } : {}) });
  }
  if (options.mmap) return mapNpy(path, options.mmap, pickOptions(options, DECODE_KEYS));
  return run(loadingNpy(path, options), options.signal, path);
}

/**
 * The steps of a whole load: the data is read straight into its own aligned buffer (async: in
 * pieces on libuv's threads, each byte-swapped as it arrives when the file is not in native order).
 */
function* loadingNpy(path: string, options: LoadOptions): Operation<NdArray, FileStep> {
  // Open and close written out rather than through withFile, whose callback is a new generator
  // function each call: a load of a small file is a handful of system calls, and that costs ~20 % more.
  const file = yield* perform({ op: 'open', path, mode: 'r' });
  try {
    const header = yield* readingHeader(file, options);
    const fileSize = yield* perform({ op: 'size', file });
    const codec = loadCodec(options);
    if (hasObject(header.dtype) && codec) {
      const whole = new Uint8Array(fileSize);
      yield { op: 'read', file, into: whole, at: 0 };
      return codec.decode(whole, header, options);
    }
    checkDataPresent(header, fileSize - header.dataOffset);
    const buffer = allocateBuffer(header.dataBytes, options.shared);
    const swapUnit = byteSwapUnit(header.dtype);
    // Pieces are multiples of 8 MiB from the start of the buffer: no swapped group straddles two.
    const into = new Uint8Array(buffer);
    const got = (yield swapUnit
      ? { op: 'read', file, into, at: header.dataOffset, onPiece: (piece: Uint8Array) => swapBytes(piece, swapUnit) }
      : { op: 'read', file, into, at: header.dataOffset }) as number;
    if (got < header.dataBytes) throw truncated(header, got);
    return arrayOverNative(header, buffer, 0, options);
  } finally {
    yield { op: 'close', file };
  }
}

/**
 * {@link loadNpy}, blocking: the data is read straight into its own aligned buffer and
 * byte-swapped there when the file is not in native order.
 * @example
 * const w = loadNpySync('w.npy', { expect: '<f4' });   // w.data: Float32Array
 */
export function loadNpySync<const S extends DescrInput>(path: string, options: LoadOptions & { mmap: MapMode } & Expecting<S>): MappedArray<S>;
export function loadNpySync(path: string, options: LoadOptions & { mmap: MapMode }): MappedArray;
export function loadNpySync<const S extends DescrInput>(path: string, options: LoadOptions & Expecting<S>): NdArray<S>;
export function loadNpySync(path: string, options?: LoadOptions): NdArray;
export function loadNpySync(path: string, options: LoadOptions = {}): NdArray {
  checkOptions('loadNpySync', options, LOAD_SYNC_KEYS);
  if (options.mmap) return mapNpy(path, options.mmap, pickOptions(options, DECODE_KEYS));
  return runSync(loadingNpy(path, options), path);
}

/** Options of {@link saveNpySync}: numpy's header options, and how the file is replaced. */
export interface SaveOptionsSync extends EncodeOptions, ReplaceOptions {}

/** Options of the async {@link saveNpy}. */
export interface SaveOptions extends SaveOptionsSync, AsyncOptions {
  /** The store to write the key into (`saveNpy('w.npy', x, { store })`): written there, not to disk. */
  store?: WriteStore | undefined;
}

const SAVE_SYNC_KEYS = knownKeys<SaveOptionsSync>({ ...ENCODE_KEYS, durable: true });
const SAVE_KEYS = knownKeys<SaveOptions>({ ...ENCODE_KEYS, durable: true, signal: true, store: true });

/**
 * Write an array as numpy's `np.save` would, without blocking the event loop: native-endian data is
 * written straight from its memory, other byte orders a piece at a time. The file appears under its
 * name only when complete (written beside it and renamed); an aborted or failed save leaves the old file.
 * @example
 * await saveNpy('out.npy', { data: new Float32Array([1, 2, 3]) });
 */
export async function saveNpy(path: string, array: NdArray | ArraySpec, options: SaveOptions = {}): Promise<void> {
  checkOptions('saveNpy', options, SAVE_KEYS);
  if (options.store !== undefined) {
    refuseBesideStore('saveNpy', options, ['durable']);
    return saveNpyIn(path, array, { ...options, store: options.store, pickle: saveCodec(options) });
  }
  await run(savingNpy(path, array, options), options.signal, path);
}

/**
 * {@link saveNpy}, blocking.
 * @example
 * saveNpySync('out.npy', { data: new Float32Array([1, 2, 3]) });
 */
export function saveNpySync(path: string, array: NdArray | ArraySpec, options: SaveOptionsSync = {}): void {
  checkOptions('saveNpySync', options, SAVE_SYNC_KEYS);
  runSync(savingNpy(path, array, options), path);
}

/**
 * The steps of a save: numpy's header, then the data straight from its memory when native-endian
 * (other byte orders a piece at a time), into a file beside `path` renamed over it when complete.
 */
export function* savingNpy(path: string, input: NdArray | ArraySpec, options: SaveOptionsSync = {}): Operation<void, FileStep> {
  const array = toNdArray(input);
  checkFormatVersion(options.version); // before the file beside is made
  const pieces = encodeNpyPieces(array, { ...options, pickle: saveCodec(options) });
  yield* writingBeside(
    path,
    function* (file) {
      let first = true;
      for (const piece of pieces) {
        yield { op: 'write', file, bytes: piece, at: null };
        // After the header, the data's size is reserved at once where the file system can (one extent, not growth per write).
        if (first && !hasObject(array.dtype)) yield { op: 'reserve', file, at: piece.length, bytes: array.size * array.dtype.itemsize };
        first = false;
      }
    },
    options,
  );
}
