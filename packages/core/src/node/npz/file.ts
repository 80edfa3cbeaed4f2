import type { FileHandle } from 'node:fs/promises';
import { swapBytes } from '../../array/memory.js';
import { checkDataSize, hasObject, type DecodeOptions } from '../../npy.js';
import type { NdArray } from '../../array/ndarray.js';
import { readHeaderOf, type NpyHeader } from '../../format/header.js';
import { byteSwapUnit } from '../../array/layout.js';
import { NpyError, withWhere } from '../../errors.js';
import { openingOver, sourceOf } from '../../io/open.js';
import { orReferenceSet } from '../../refs/archive.js';
import { nodePlaceOf } from '../weights.js';
import { NPZ_KEYS, NpzArchive, type NpzIndex, decodeMember, readingPaddedMember, type NpzOptions, type NpzReadOptions } from '../../npz/archive.js';
import { openNpz as openNpzAnywhere, type NpzSource } from '../../npz/open.js';
import { HTTP_KEYS, type HttpOptions } from '../../io/url.js';
import { checkOptions, knownKeys } from '../../options.js';
import type { ReadStore } from '../../store/types.js';
import {
  DEFLATED,
  STORED,
  checkEntrySizes,
  checkZipCrc,
  readingDataOffset,
  readingZipEntry,
  readingZipEntryStored,
  type ZipCodec,
  type ZipEntry,
} from '../../npz/zip.js';
import type { AsyncByteSource, SyncByteSource } from '../../io/byte-source.js';
import { inTurns, openFile, type AsyncOptions } from '../fd.js';
import { fileHandleSource, fileSource, pathOf } from '../sources.js';
import { crc32 } from '../native.js';
import { arrayOverNative } from '../../npy.js';
import { zlibCodec } from './codec.js';
import { loadCodec, type PickleOptions } from '../../pickle/options.js';
import { inflatedArray, storedArray, type MemberFile } from './direct.js';

/** Options of {@link openNpzSync} and {@link loadNpzSync}: the archive's, and object arrays as `loadNpy` takes them (`allowPickle`). */
export interface NpzFileOptionsSync extends NpzOptions, PickleOptions {}

/** Options of {@link openNpz} and {@link loadNpz}. */
export interface NpzFileOptions extends NpzFileOptionsSync, AsyncOptions {
  /** The store the archive is in, given by its key (`openNpz('w.npz', { store })`): read there, not from disk. */
  store?: ReadStore | undefined;
}

/** The options of {@link openNpz} and {@link loadNpz}, and `onProgress` (the loads'). */
const NPZ_FILE_KEYS = knownKeys<NpzFileOptions & HttpOptions>({ ...NPZ_KEYS, ...HTTP_KEYS, allowPickle: true, store: true, onProgress: true });
/** The options of {@link openNpzSync} and {@link loadNpzSync}. */
const NPZ_FILE_SYNC_KEYS = knownKeys<NpzFileOptionsSync>({ ...NPZ_KEYS, allowPickle: true });

/** The archive options of a file's options: object arrays decoded only when allowed, as by loadNpy. */
function archiveOptions(options: NpzFileOptionsSync): NpzOptions {
  const { allowPickle: _, ...rest } = options;
  const pickle = loadCodec(options);
  return { codec: zlibCodec, ...rest, ...(pickle ? { pickle } : {}) };
}

/**
 * An archive file read without blocking the event loop: the archive over an async file handle, its
 * members read straight into their arrays' buffers (stored ones without a copy, deflated ones
 * inflated as a stream on libuv's threads). What `openNpz` gives for a path.
 * @internal
 */
export class NpzFile extends NpzArchive<AsyncByteSource> implements MemberFile {
  private constructor(
    /** @internal */
    readonly fh: FileHandle,
    source: AsyncByteSource,
    options: NpzOptions,
    index: NpzIndex,
  ) {
    super(source, options, index);
  }

  /** Open `path` and read its central directory. */
  static async openFile(path: string, options: NpzFileOptions = {}): Promise<NpzFile> {
    options.signal?.throwIfAborted();
    const fh = await openFile(path);
    try {
      const { size } = await fh.stat();
      const source = fileHandleSource(fh, path, size);
      return new NpzFile(fh, source, archiveOptions(options), await NpzArchive.readIndex(source, options.signal));
    } catch (e) {
      await fh.close();
      throw withWhere(e, { file: path });
    }
  }

  /** The codec of members this file does not inflate itself: node:zlib unless the options name another. */
  override get codec(): ZipCodec {
    return this.options.codec ?? zlibCodec;
  }

  protected override async member(name: string, options: NpzReadOptions): Promise<NdArray> {
    const entry = this.entry(name);
    const padded = await this.runAsync(readingPaddedMember(this.source.size, entry, { ...this.options, ...options }), options.signal);
    if (padded) return padded;
    if (!this.memberReadAsync(entry))
      return decodeMember(entry, await this.runAsync(readingZipEntry(this.source.size, entry, this.codec, this.options), options.signal), {
        ...this.options,
        ...options,
      });
    if (!options.copy && !options.shared) {
      checkEntrySizes(entry);
      const start = await this.runAsync(readingDataOffset(this.source.size, entry), options.signal);
      const got = await (entry.method === STORED ? storedArray : inflatedArray)(this, entry, start, { ...options, checkCrc: this.checksCrc });
      // An array; or the member's whole bytes, checked, that only the general decode can read; or nothing yet.
      if (got instanceof Uint8Array) return this.decodeOwned(entry, got, options);
      if (got) return got;
    }
    return this.decodeOwned(entry, await this.memberBytes(entry, options.signal), options);
  }

  /** Whether a member's bytes are read, inflated and checked off the event loop (else by the archive's codec, blocking). */
  private memberReadAsync(entry: ZipEntry): boolean {
    return entry.method === STORED || this.codec === zlibCodec;
  }

  /**
   * A member's uncompressed bytes, checked as the blocking archive checks them: read in one step with
   * its local header (the same windows), inflated on the thread pool, the CRC-32 computed in turns.
   */
  protected override async memberBytes(entry: ZipEntry, signal?: AbortSignal): Promise<Uint8Array> {
    if (!this.memberReadAsync(entry)) return this.runAsync(readingZipEntry(this.source.size, entry, this.codec, this.options), signal);
    const raw = await this.runAsync(readingZipEntryStored(this.source.size, entry), signal);
    const bytes = entry.method === DEFLATED ? await zlibCodec.inflateAsync!(raw, entry.size, entry.name) : raw;
    signal?.throwIfAborted();
    if (!this.checksCrc) return bytes;
    let crc = 0;
    await inTurns(
      bytes,
      (piece) => {
        crc = crc32(piece, crc);
      },
      signal,
    );
    checkZipCrc(entry, crc);
    return bytes;
  }

  /**
   * Decode member bytes this archive owns: another byte order is swapped in place, in turns of the
   * event loop (decodeNpy would swap a copy in one step).
   */
  private async decodeOwned(entry: ZipEntry, bytes: Uint8Array, options: DecodeOptions & AsyncOptions): Promise<NdArray> {
    let header: NpyHeader;
    try {
      header = readHeaderOf(bytes, options);
      checkDataSize(header, bytes.length - header.dataOffset);
    } catch {
      return decodeMember(entry, bytes, { ...this.options, ...options }); // the same checks, with the member named
    }
    if (hasObject(header.dtype) || options.copy || options.shared) return decodeMember(entry, bytes, { ...this.options, ...options });
    // A small member comes in the window read with its local header (64 KiB): a view would keep the
    // whole window alive for each small array, so it gets a buffer of its own.
    if (bytes.buffer.byteLength > 2 * header.dataBytes + 4096) return decodeMember(entry, bytes, { ...this.options, ...options, copy: true });
    const swapUnit = byteSwapUnit(header.dtype);
    if (swapUnit) {
      await inTurns(bytes.subarray(header.dataOffset, header.dataOffset + header.dataBytes), (piece) => swapBytes(piece, swapUnit), options.signal);
    }
    return arrayOverNative(header, bytes.buffer, bytes.byteOffset + header.dataOffset, options);
  }
}

/**
 * Open a .npz without blocking: a path (read with positional reads of the file), or anything core's
 * `openNpz` takes (an `http(s)` URL read by range, a `Blob`, bytes, a byte source). Only the central
 * directory is read now, members when asked for. Close it, or `await using` it.
 * @example
 * await using z = await openNpz('model.npz');
 * const kernel = await z.get('dense/kernel');
 * await using remote = await openNpz('https://example.org/model.npz');
 */
export function openNpz(input: ArrayBuffer | ArrayBufferView | SyncByteSource, options?: NpzFileOptions & HttpOptions): Promise<NpzArchive<SyncByteSource>>;
export function openNpz(input: string | NpzSource, options?: NpzFileOptions & HttpOptions): Promise<NpzArchive>;
export function openNpz(input: string | NpzSource, options: NpzFileOptions & HttpOptions = {}): Promise<NpzArchive> {
  try {
    checkOptions('openNpz', options, NPZ_FILE_KEYS);
  } catch (e) {
    return Promise.reject(e);
  }
  if (options.store !== undefined) return openNpzAnywhere(input, archiveOptions(options) as NpzOptions & HttpOptions);
  const path = pathOf(input);
  if (path !== null) return openPath(path, options);
  return openNpzAnywhere(input, archiveOptions(options) as NpzOptions & HttpOptions);
}

/** The archive at `path`; a reference set there opens as the archive of its arrays (refs/archive.ts), its files found beside it. */
async function openPath(path: string, options: NpzFileOptions): Promise<NpzArchive> {
  try {
    return await NpzFile.openFile(path, options);
  } catch (e) {
    if (!(e instanceof NpyError && e.code === 'ZIP_FORMAT')) throw e;
    const source = await sourceOf(path, { signal: options.signal }, 'openNpz');
    return openingOver(source, path, () =>
      orReferenceSet(
        source,
        archiveOptions(options),
        () => nodePlaceOf(path, {}),
        () => Promise.reject(e),
      ),
    );
  }
}

/**
 * {@link openNpz}, blocking: an archive over the file whose members are read with blocking reads
 * (`getSync`), or on libuv's threads (`get`). Call close().
 * @example
 * const z = openNpzSync('model.npz');
 * const kernel = z.getSync('dense/kernel');
 * z.close();
 */
export function openNpzSync(path: string, options: NpzFileOptionsSync = {}): NpzArchive<SyncByteSource> {
  checkOptions('openNpzSync', options, NPZ_FILE_SYNC_KEYS);
  const source = fileSource(path);
  try {
    return new NpzArchive(source, archiveOptions(options));
  } catch (e) {
    source.close?.();
    throw withWhere(e, { file: path });
  }
}

/**
 * Every array of a .npz on disk, by key in archive order, read without blocking (like
 * `dict(np.load(path))`). For one member, or members larger than memory, {@link openNpz}.
 * @example
 * const arrays = await loadNpz('model.npz');   // Map { 'dense/kernel' => NdArray, … }
 */
export async function loadNpz(path: string | NpzSource, options: NpzFileOptions & HttpOptions = {}): Promise<Map<string, NdArray>> {
  checkOptions('loadNpz', options, NPZ_FILE_KEYS);
  await using archive = await openNpz(path, options);
  // Awaited here, not returned: the archive closes when this scope ends.
  return await archive.getAll(options);
}

/**
 * {@link loadNpz}, blocking.
 * @example
 * const arrays = loadNpzSync('model.npz');
 * arrays.get('dense/kernel')?.shape;
 */
export function loadNpzSync(path: string, options: NpzFileOptionsSync = {}): Map<string, NdArray> {
  checkOptions('loadNpzSync', options, NPZ_FILE_SYNC_KEYS);
  const archive = openNpzSync(path, options);
  try {
    return archive.getAllSync(options);
  } catch (e) {
    throw withWhere(e, { file: path });
  } finally {
    archive.closeSync();
  }
}
