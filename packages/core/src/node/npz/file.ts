/** An archive file on disk: open it (its central directory), read members as arrays or bytes, or load them all. */
import { closeSync, fstatSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { allocateBuffer, swapBytes } from '../../array/memory.js';
import { checkDataSize, hasObject, type DecodeOptions, type Expecting } from '../../npy.js';
import type { NdArray } from '../../array/ndarray.js';
import { readHeader, type NpyHeader } from '../../format/header.js';
import { byteSwapUnit } from '../../array/layout.js';
import type { DescrInput } from '../../format/descr-types.js';
import { NpyError, withWhere } from '../../errors.js';
import { MEMBERS_IN_FLIGHT, NpzArchive, NpzIndex, decodeMember, readingMemberHeader, readingPaddedMember, type NpzOptions } from '../../npz/archive.js';
import { drive, type Operation, type PerformAsync } from '../../io/steps.js';
import { mapInParallel } from '../../io/settle.js';
import {
  DEFLATED,
  STORED,
  checkEntrySizes,
  checkZipCrc,
  checksCrc,
  readingDataOffset,
  readingZipEntries,
  readingZipEntry,
  readingZipEntryStored,
  type ZipCodec,
  type ZipEntry,
} from '../../npz/zip.js';
import type { SyncByteSource } from '../../io/byte-source.js';
import { inTurns, openFile, openFileSync, readFully, readFullyAsync, type AsyncOptions } from '../fd.js';
import { crc32 } from '../native.js';
import { arrayOverNative } from '../npy-files.js';
import { zlibCodec } from './codec.js';
import { loadCodec, type PickleOptions } from '../pickle-options.js';
import { inflatedArray, storedArray } from './direct.js';

/** Bytes read at least on a miss of an archive file's zip reads (a local header and a small member in one read). */
const MIN_WINDOW = 64 << 10;

/**
 * Positional reads from an open file: memory is what is read, never the whole file.
 * @example
 * const z = new NpzArchive(fileSource('big.npz'));
 */
export function fileSource(path: string): SyncByteSource {
  const fd = openFileSync(path);
  try {
    const size = fstatSync(fd).size;
    return {
      size,
      name: path,
      read(offset, length) {
        const out = new Uint8Array(allocateBuffer(length));
        const got = readFully(fd, out, offset);
        return got === length ? out : out.subarray(0, got);
      },
      readInto: (target, offset) => readFully(fd, target, offset),
      close: () => closeSync(fd),
    };
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** Options of {@link openNpzSync} and {@link loadNpzSync}: the archive's, and object arrays as `loadNpy` takes them (`allowPickle`). */
export interface NpzFileOptionsSync extends NpzOptions, PickleOptions {}

/** Options of {@link openNpz} and {@link loadNpz}. */
export interface NpzFileOptions extends NpzFileOptionsSync, AsyncOptions {}

/** The archive options of a file's options: object arrays decoded only when allowed, as by loadNpy. */
function archiveOptions(options: NpzFileOptionsSync): NpzOptions {
  const { allowPickle: _, ...rest } = options;
  const pickle = loadCodec(options);
  return { codec: zlibCodec, ...rest, ...(pickle ? { pickle } : {}) };
}

/**
 * An open .npz on disk, read without blocking the event loop: the central directory is read when
 * it is opened, each member when asked for (only its bytes). Close it, or `await using` it.
 * @example
 * await using z = await openNpz('model.npz');
 * for await (const [name, a] of z) console.log(name, a.shape);
 */
export class NpzFile implements AsyncIterable<[string, NdArray]>, AsyncDisposable {
  private closed = false;

  private index!: NpzIndex;

  private constructor(
    readonly path: string,
    /** @internal */
    readonly fh: FileHandle,
    readonly size: number,
    private readonly options: NpzOptions,
  ) {}

  /** Open `path` and read its central directory. */
  static async open(path: string, options: NpzFileOptions = {}): Promise<NpzFile> {
    options.signal?.throwIfAborted();
    const fh = await openFile(path);
    try {
      const { size } = await fh.stat();
      const file = new NpzFile(path, fh, size, archiveOptions(options));
      file.index = new NpzIndex(await file.run(readingZipEntries(size), options.signal));
      return file;
    } catch (e) {
      await fh.close();
      throw withWhere(e, { file: path });
    }
  }

  /** Zip members in archive order. */
  get entries(): readonly ZipEntry[] {
    return this.index.entries;
  }

  /** Keys as numpy's `NpzFile.files` lists them (`a.npy` → `a`). */
  get names(): readonly string[] {
    return this.index.names;
  }

  has(name: string): boolean {
    return this.index.has(name);
  }

  /** The zip entry a key names: the exact member name first, else the key plus `.npy` (as numpy). */
  entry(name: string): ZipEntry {
    return this.index.entry(name);
  }

  /** The codec of members this file does not inflate itself: node:zlib unless the options name another. */
  private get codec(): ZipCodec {
    return this.options.codec ?? zlibCodec;
  }

  /** Whether members' CRC-32 is checked as they are read (unless opened with `{ checkCrc: false }`). */
  get checksCrc(): boolean {
    return checksCrc(this.options);
  }

  /** `length` bytes at `offset` of the archive file (fewer at its end). */
  readRange(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array> {
    if (this.closed) return Promise.reject(new NpyError('CLOSED', `${this.path} is closed`));
    return readRange(this.fh, offset, length, signal);
  }

  /**
   * Run an operation of zip reads on this file. A read that misses reads at least 64 KiB, kept for
   * the rest of the operation: a local header and a small member come in one read.
   */
  /** @internal */
  run<T>(operation: Operation<T>, signal?: AbortSignal): Promise<T> {
    signal?.throwIfAborted();
    let window: { at: number; bytes: Uint8Array } | null = null;
    const perform: PerformAsync = async (step, live) => {
      if (step.op !== 'view') throw new NpyError('INTERNAL', `an archive file cannot perform '${step.op}'`);
      const end = Math.min(this.size, step.at + step.length);
      if (end <= step.at) return new Uint8Array(0);
      if (window && window.at <= step.at && window.at + window.bytes.length >= end) return window.bytes.subarray(step.at - window.at, end - window.at);
      const bytes = await this.readRange(step.at, Math.min(this.size - step.at, Math.max(step.length, MIN_WINDOW)), live);
      window = { at: step.at, bytes };
      return bytes.subarray(0, Math.min(step.length, bytes.length));
    };
    return drive(operation, perform, signal).catch((e: unknown) => Promise.reject(withWhere(e, { file: this.path })));
  }

  /**
   * Decode one member as an array.
   * @example
   * await using z = await openNpz('model.npz');
   * const kernel = await z.get('dense/kernel', { expect: '<f4' });
   */
  get<const S extends DescrInput>(name: string, options: DecodeOptions & AsyncOptions & Expecting<S>): Promise<NdArray<S>>;
  get(name: string, options?: DecodeOptions & AsyncOptions): Promise<NdArray>;
  async get(name: string, options: DecodeOptions & AsyncOptions = {}): Promise<NdArray> {
    try {
      return await this.member(name, options);
    } catch (e) {
      throw withWhere(e, { file: this.path });
    }
  }

  private async member(name: string, options: DecodeOptions & AsyncOptions): Promise<NdArray> {
    const entry = this.entry(name);
    const padded = await this.run(readingPaddedMember(this.size, entry, { ...this.options, ...options }), options.signal);
    if (padded) return padded;
    if (!this.memberReadAsync(entry))
      return decodeMember(entry, await this.run(readingZipEntry(this.size, entry, this.codec, this.options), options.signal), { ...this.options, ...options });
    if (!options.copy && !options.shared) {
      checkEntrySizes(entry);
      const start = await this.run(readingDataOffset(this.size, entry), options.signal);
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
  private async memberBytes(entry: ZipEntry, signal?: AbortSignal): Promise<Uint8Array> {
    const raw = await this.run(readingZipEntryStored(this.size, entry), signal);
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
      header = readHeader(bytes, options);
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

  /**
   * Every member decoded, by key in archive order (several inflate at once on libuv's threads).
   * @example
   * await using z = await openNpz('model.npz');
   * const arrays = await z.getAll();   // Map { 'dense/kernel' => NdArray, … }
   */
  async getAll(options: DecodeOptions & AsyncOptions = {}): Promise<Map<string, NdArray>> {
    // A few members at a time: 20 000 small members do not each hold a read window at once.
    const arrays = await mapInParallel(this.names, MEMBERS_IN_FLIGHT, (name) => this.get(name, options));
    return new Map(this.names.map((name, i) => [name, arrays[i]!]));
  }

  /** A member's .npy header, reading only its first bytes. */
  async header(name: string, options: AsyncOptions = {}): Promise<NpyHeader> {
    // async: an unknown name rejects, as every other failure does, rather than throwing.
    return this.run(readingMemberHeader(this.size, this.entry(name), this.options), options.signal);
  }

  /** A member's uncompressed bytes (CRC and size verified): the way to members that are not .npy. */
  async bytes(name: string, options: AsyncOptions = {}): Promise<Uint8Array> {
    const entry = this.entry(name);
    if (!this.memberReadAsync(entry)) return this.run(readingZipEntry(this.size, entry, this.codec, this.options), options.signal);
    return this.memberBytes(entry, options.signal);
  }

  /** Where a member's data starts in the file (after its local header). */
  async dataOffset(name: string, options: AsyncOptions = {}): Promise<number> {
    return this.run(readingDataOffset(this.size, this.entry(name)), options.signal);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<[string, NdArray]> {
    for (const name of this.names) yield [name, await this.get(name)];
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.fh.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

async function readRange(fh: FileHandle, offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array> {
  const out = new Uint8Array(allocateBuffer(length));
  const got = await readFullyAsync(fh, out, offset, signal);
  return got === length ? out : out.subarray(0, got);
}

/**
 * Open a .npz on disk without blocking: only the central directory is read now, members when asked
 * for. Close it, or `await using` it.
 * @example
 * await using z = await openNpz('model.npz');
 * const kernel = await z.get('dense/kernel');
 */
export function openNpz(path: string, options: NpzFileOptions = {}): Promise<NpzFile> {
  return NpzFile.open(path, options);
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
export async function loadNpz(path: string, options: NpzFileOptions = {}): Promise<Map<string, NdArray>> {
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
  const archive = openNpzSync(path, options);
  try {
    return archive.getAllSync(options);
  } catch (e) {
    throw withWhere(e, { file: path });
  } finally {
    archive.closeSync();
  }
}
