/** An archive file on disk: open it (its central directory), read members as arrays or bytes, or load them all. */
import { closeSync, fstatSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { crc32 as zlibCrc32 } from 'node:zlib';
import { allocateBuffer, swapBytes } from '../../array/memory.js';
import { checkDataSize, hasObject, type DecodeOptions, type Expecting } from '../../npy.js';
import type { NdArray } from '../../array/ndarray.js';
import { readHeader, type NpyHeader } from '../../format/header.js';
import { byteSwapUnit } from '../../array/layout.js';
import type { DescrInput } from '../../format/descr-types.js';
import { NpyError } from '../../errors.js';
import { NpzArchive, type NpzOptions } from '../../npz/archive.js';
import { WindowedSource } from '../../npz/windowed-source.js';
import { settleAll } from '../../io/settle.js';
import { DEFLATED, STORED, checkEntrySizes, checkZipCrc, entryDataOffset, readZipEntryStored, type ByteSource, type ZipEntry } from '../../npz/zip.js';
import { inTurns, openFile, openFileSync, readFully, readFullyAsync, type AsyncOptions } from '../fd.js';
import { arrayOverNative } from '../npy-files.js';
import { zlibCodec } from './codec.js';
import { inflatedArray, storedArray } from './direct.js';

/**
 * Positional reads from an open file: memory is what is read, never the whole file.
 * @example
 * const z = new NpzArchive(fileSource('big.npz'));
 */
export function fileSource(path: string): ByteSource {
  const fd = openFileSync(path);
  try {
    const size = fstatSync(fd).size;
    return {
      size,
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

/** Options of {@link openNpz} and {@link loadNpz}. */
export interface NpzFileOptions extends NpzOptions, AsyncOptions {}

/**
 * An open .npz on disk, read without blocking the event loop: the central directory is read when
 * it is opened, each member when asked for (only its bytes). Close it, or `await using` it.
 * @example
 * await using z = await openNpz('model.npz');
 * for await (const [name, a] of z) console.log(name, a.shape);
 */
export class NpzFile implements AsyncIterable<[string, NdArray]>, AsyncDisposable {
  private closed = false;

  private constructor(
    readonly path: string,
    /** @internal */
    readonly fh: FileHandle,
    /** The archive's logic, over the bytes each operation fetches (see WindowedSource). */
    private readonly archive: NpzArchive,
    readonly size: number,
  ) {}

  /** Open `path` and read its central directory. */
  static async open(path: string, options: NpzFileOptions = {}): Promise<NpzFile> {
    options.signal?.throwIfAborted();
    const fh = await openFile(path);
    try {
      const { size } = await fh.stat();
      const source = new WindowedSource(size);
      const archive = await source.run(
        () => new NpzArchive(source, { codec: zlibCodec, ...options }),
        (o, l) => readRange(fh, o, l, options.signal),
      );
      return new NpzFile(path, fh, archive, size);
    } catch (e) {
      await fh.close();
      throw e;
    }
  }

  /** Zip members in archive order. */
  get entries(): readonly ZipEntry[] {
    return this.archive.entries;
  }

  /** Keys as numpy's `NpzFile.files` lists them (`a.npy` → `a`). */
  get names(): readonly string[] {
    return this.archive.names;
  }

  has(name: string): boolean {
    return this.archive.has(name);
  }

  /** The zip entry a key names: the exact member name first, else the key plus `.npy` (as numpy). */
  entry(name: string): ZipEntry {
    return this.archive.entry(name);
  }

  /** `length` bytes at `offset` of the archive file (fewer at its end). */
  readRange(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array> {
    if (this.closed) return Promise.reject(new NpyError('CLOSED', `${this.path} is closed`));
    return readRange(this.fh, offset, length, signal);
  }

  /** Run one synchronous archive operation over the bytes it asks for, read asynchronously. */
  private run<T>(operation: (archive: NpzArchive) => T, signal?: AbortSignal): Promise<T> {
    signal?.throwIfAborted();
    const source = new WindowedSource(this.size);
    return source.run(
      () => operation(this.archive.withSource(source)),
      (o, l) => this.readRange(o, l, signal),
    );
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
    const entry = this.archive.entry(name);
    if (!this.memberReadAsync(entry)) return this.run((a) => a.getSync(name, options), options.signal);
    if (!options.copy && !options.shared) {
      checkEntrySizes(entry);
      const start = await this.run((a) => entryDataOffset(a.source, entry), options.signal);
      const array = await (entry.method === STORED ? storedArray : inflatedArray)(this, entry, start, options);
      if (array) return array;
    }
    return this.decodeOwned(entry, await this.memberBytes(entry, options.signal), options);
  }

  /** Whether a member's bytes are read, inflated and checked off the event loop (else by the archive's codec, blocking). */
  private memberReadAsync(entry: ZipEntry): boolean {
    return entry.method === STORED || this.archive.codec === zlibCodec;
  }

  /**
   * A member's uncompressed bytes, checked as the blocking archive checks them: read in one step with
   * its local header (the same windows), inflated on the thread pool, the CRC-32 computed in turns.
   */
  private async memberBytes(entry: ZipEntry, signal?: AbortSignal): Promise<Uint8Array> {
    const raw = await this.run((a) => readZipEntryStored(a.source, entry), signal);
    const bytes = entry.method === DEFLATED ? await zlibCodec.inflateAsync!(raw, entry.size, entry.name) : raw;
    signal?.throwIfAborted();
    let crc = 0;
    await inTurns(
      bytes,
      (piece) => {
        crc = zlibCrc32(piece, crc);
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
      return this.archive.decodeMember(entry, bytes, options); // the same checks, with the member named
    }
    if (hasObject(header.dtype) || options.copy || options.shared) return this.archive.decodeMember(entry, bytes, options);
    // A small member comes in the window read with its local header (64 KiB): a view would keep the
    // whole window alive for each small array, so it gets a buffer of its own.
    if (bytes.buffer.byteLength > 2 * header.dataBytes + 4096) return this.archive.decodeMember(entry, bytes, { ...options, copy: true });
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
    const arrays = await settleAll(this.names.map((name) => this.get(name, options)));
    return new Map(this.names.map((name, i) => [name, arrays[i]!]));
  }

  /** A member's .npy header, reading only its first bytes. */
  header(name: string, options: AsyncOptions = {}): Promise<NpyHeader> {
    return this.run((a) => a.headerSync(name), options.signal);
  }

  /** A member's uncompressed bytes (CRC and size verified): the way to members that are not .npy. */
  bytes(name: string, options: AsyncOptions = {}): Promise<Uint8Array> {
    const entry = this.archive.entry(name);
    if (!this.memberReadAsync(entry)) return this.run((a) => a.bytesSync(name), options.signal);
    return this.memberBytes(entry, options.signal);
  }

  /** Where a member's data starts in the file (after its local header). */
  dataOffset(name: string, options: AsyncOptions = {}): Promise<number> {
    return this.run((a) => entryDataOffset(a.source, a.entry(name)), options.signal);
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
export function openNpzSync(path: string, options: NpzOptions = {}): NpzArchive {
  const source = fileSource(path);
  try {
    return new NpzArchive(source, { codec: zlibCodec, ...options });
  } catch (e) {
    source.close?.();
    throw e;
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
export function loadNpzSync(path: string, options: NpzOptions = {}): Map<string, NdArray> {
  const archive = openNpzSync(path, options);
  try {
    return archive.getAllSync(options);
  } finally {
    archive.close();
  }
}
