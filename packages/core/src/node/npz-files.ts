/** .npz archives on disk: node:zlib as the codec, positional reads of members, streaming writes. */
import { closeSync, fstatSync } from 'node:fs';
import type { Writable } from 'node:stream';
import type { FileHandle } from 'node:fs/promises';
import { constants as zc, crc32 as zlibCrc32, createInflateRaw, deflateRawSync, inflateRaw, inflateRawSync } from 'node:zlib';
import { promisify } from 'node:util';
import { kMaxLength } from 'node:buffer';
import { allocateBuffer, swapBytes } from '../array/memory.js';
import { checkDataPresent, checkDataSize, hasObject, type DecodeOptions, type Expecting } from '../npy.js';
import type { NdArray } from '../array/ndarray.js';
import { readHeader, type NpyHeader, type ReadHeaderOptions } from '../format/header.js';
import { byteSwapUnit } from '../array/layout.js';
import type { DescrInput } from '../format/descr-types.js';
import { readHeaderFrom, readHeaderFromAsync } from '../io/header-read.js';
import { NpyError } from '../errors.js';
import { NpzArchive, npzWriting, type NpzInput, type NpzOptions, type NpzWriteOptions } from '../npz/archive.js';
import { WindowedSource } from '../npz/windowed-source.js';
import { DEFLATED, STORED, checkEntrySizes, checkInflatedSize, checkSupported, checkZipCrc, entryDataOffset, readZipEntryStored, type ByteSource, type ZipCodec, type ZipEntry, type ZipSink } from '../npz/zip.js';
import { inTurns, openFile, openFileSync, readFully, readFullyAsync, type AsyncOptions } from './fd.js';
import { run, runSync } from './drive.js';
import { writingBeside } from './beside.js';
import type { FileRef, Operation } from '../io/steps.js';
import { arrayOverNative } from './npy-files.js';
import { openHandle, openHandleSync, type NpyFileHandle, type NpyFileHandleSync, type PositionalIO, type PositionalIOAsync } from '../io/handles.js';

const inflateRawAsync = promisify(inflateRaw);

/** Bytes read at a stored member's start for its .npy header (longer headers take the general path). */
const STORED_HEAD = 4096;
/** Output of one step of a streamed inflate (measured: 4 MiB beats 64 KiB by a sixth on 64 MiB members). */
const INFLATE_CHUNK = 4 << 20;
/** Compressed bytes read at a time, one piece ahead of the inflater. */
const READ_AHEAD = 8 << 20;

/**
 * The header at a member's start when the member can be read straight into its array: a .npy whose
 * header is all in `head`, with its data all there, and no objects. Null otherwise (the general path
 * then reads the member, and reports what is wrong with it).
 */
function plainHeader(head: Uint8Array, entry: ZipEntry, options: DecodeOptions): NpyHeader | null {
  try {
    const header = readHeader(head, options);
    checkDataSize(header, entry.size - header.dataOffset);
    return hasObject(header.dtype) ? null : header;
  } catch {
    return null;
  }
}

/** The last steps of reading a member straight into its array's buffer: CRC, byte order, the array. */
async function finishDirect(entry: ZipEntry, header: NpyHeader, crc: number, data: Uint8Array, options: DecodeOptions & AsyncOptions): Promise<NdArray> {
  checkZipCrc(entry, crc);
  const swapUnit = byteSwapUnit(header.dtype);
  if (swapUnit) await inTurns(data, (piece) => swapBytes(piece, swapUnit), options.signal);
  return arrayOverNative(header, data.buffer, 0, options);
}

/**
 * node:zlib as the zip codec: native inflate/deflate and CRC-32, with the same size guards.
 * @example
 * const z = decodeNpz(bytes, { codec: zlibCodec });   // node:zlib instead of fflate
 */
export const zlibCodec: ZipCodec = {
  inflate(data, size, member) {
    if (size > kMaxLength) {
      throw new NpyError('TOO_LARGE', `member of ${size} bytes is larger than one buffer can hold (${kMaxLength}); read it in pieces with streamNpzMember()`, { member });
    }
    let out: Buffer;
    try {
      // maxOutputLength makes zlib stop (and throw) instead of inflating past the declared size.
      // One output chunk one byte larger than the member: zlib fills it in place, with no joining copy.
      out = inflateRawSync(data, { maxOutputLength: Math.max(1, size), chunkSize: Math.max(64, size + 1) });
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      if (err.code === 'ERR_BUFFER_TOO_LARGE') checkInflatedSize(size + 1, size, member);
      throw new NpyError('ZIP_FORMAT', `corrupt deflate stream: ${err.message}`, { member });
    }
    checkInflatedSize(out.length, size, member);
    return new Uint8Array(out.buffer, out.byteOffset, out.length);
  },
  deflater(level = 6) {
    // Each piece is deflated on its own and ended with a sync flush: the pieces join into one
    // valid raw-deflate stream, and no piece of the array is ever copied into a joined buffer.
    return {
      push(chunk, final) {
        const out = deflateRawSync(chunk, { level, finishFlush: final ? zc.Z_FINISH : zc.Z_SYNC_FLUSH });
        return [new Uint8Array(out.buffer, out.byteOffset, out.length)];
      },
    };
  },
  crc32: (bytes, crc) => zlibCrc32(bytes, crc),
};

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

/** Options of {@link loadNpz}. */
export interface NpzFileOptions extends NpzOptions, AsyncOptions {}

/**
 * An open .npz on disk, read without blocking the event loop: the central directory is read when
 * it is opened, each member when asked for (only its bytes). Close it, or `await using` it.
 * @example
 * await using z = await NpzFile.open('model.npz');
 * for await (const [name, a] of z) console.log(name, a.shape);
 */
export class NpzFile implements AsyncIterable<[string, NdArray]>, AsyncDisposable {
  private closed = false;

  private constructor(
    readonly path: string,
    private readonly fh: FileHandle,
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
      const archive = await source.run(() => new NpzArchive(source, { codec: zlibCodec, ...options }), (o, l) => readRange(fh, o, l, options.signal));
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
    if (this.closed) return Promise.reject(new NpyError('BAD_ARRAY', `${this.path} is closed`));
    return readRange(this.fh, offset, length, signal);
  }

  /** Run one synchronous archive operation over the bytes it asks for, read asynchronously. */
  private run<T>(operation: (archive: NpzArchive) => T, signal?: AbortSignal): Promise<T> {
    signal?.throwIfAborted();
    const source = new WindowedSource(this.size);
    return source.run(() => operation(this.archive.withSource(source)), (o, l) => this.readRange(o, l, signal));
  }

  /**
   * Decode one member as an array.
   * @example
   * await using z = await loadNpz('model.npz');
   * const kernel = await z.get('dense/kernel', { expect: '<f4' });
   */
  get<const S extends DescrInput>(name: string, options: DecodeOptions & AsyncOptions & Expecting<S>): Promise<NdArray<S>>;
  get(name: string, options?: DecodeOptions & AsyncOptions): Promise<NdArray>;
  async get(name: string, options: DecodeOptions & AsyncOptions = {}): Promise<NdArray> {
    const entry = this.archive.entry(name);
    if (!this.memberReadAsync(entry)) return this.run((a) => a.get(name, options), options.signal);
    if (!options.copy && !options.shared) {
      checkEntrySizes(entry);
      const array = entry.method === STORED ? await this.storedArray(entry, options) : await this.inflatedArray(entry, options);
      if (array) return array;
    }
    return this.decodeOwned(entry, await this.memberBytes(entry, options.signal), options);
  }

  /**
   * A stored member's array read straight into a buffer of exactly its data (no header bytes before
   * it, no copy after), the CRC-32 computed in order as the pieces arrive. Null when the member is
   * not a plain .npy whose header fits its first bytes: the general path then reads (and reports) it.
   */
  private async storedArray(entry: ZipEntry, options: DecodeOptions & AsyncOptions): Promise<NdArray | null> {
    const { signal } = options;
    const start = await this.run((a) => entryDataOffset(a.source, entry), signal);
    const head = await this.readRange(start, Math.min(entry.size, STORED_HEAD), signal);
    const header = plainHeader(head, entry, options);
    if (!header) return null;
    const buffer = allocateBuffer(header.dataBytes);
    const data = new Uint8Array(buffer);
    let crc = zlibCrc32(head.subarray(0, header.dataOffset));
    // Pieces complete out of order; the CRC takes them in order, each as soon as it can.
    const done = new Map<number, Uint8Array>();
    let next = 0;
    const got = await readFullyAsync(this.fh, data, start + header.dataOffset, signal, (piece) => {
      done.set(piece.byteOffset, piece);
      for (let p = done.get(next); p; p = done.get(next)) {
        crc = zlibCrc32(p, crc);
        done.delete(next);
        next += p.length;
      }
    });
    if (got < header.dataBytes) throw new NpyError('TRUNCATED', `member data ends after ${got} of ${header.dataBytes} bytes`, { member: entry.name });
    // Bytes after the data (numpy ignores them) are in the member's CRC all the same.
    for (let at = header.dataOffset + header.dataBytes; at < entry.size;) {
      const piece = await this.readRange(start + at, Math.min(READ_AHEAD, entry.size - at), signal);
      if (piece.length === 0) throw new NpyError('TRUNCATED', `member ends after ${at} of ${entry.size} bytes`, { member: entry.name });
      crc = zlibCrc32(piece, crc);
      at += piece.length;
    }
    return finishDirect(entry, header, crc, data, options);
  }

  /**
   * A deflated member's array inflated as a stream (on libuv's threads, 4 MiB of output at a time)
   * straight into a buffer of exactly its data, while the compressed bytes are read ahead in 8 MiB
   * pieces: memory is the array plus a few pieces, and several members can inflate at once. Null
   * when the member is not a plain .npy: the general path then reads (and reports) it.
   */
  private async inflatedArray(entry: ZipEntry, options: DecodeOptions & AsyncOptions): Promise<NdArray | null> {
    const { signal } = options;
    const start = await this.run((a) => entryDataOffset(a.source, entry), signal);
    const inflater = createInflateRaw({ chunkSize: INFLATE_CHUNK });
    const abort = (): void => { inflater.destroy(signal?.reason as Error); };
    signal?.addEventListener('abort', abort, { once: true });
    // Compressed pieces, each read while the previous one inflates.
    const feed = (async () => {
      const end = entry.compressedSize;
      // A read ahead is marked handled when it starts: when the feed stops early (an abort, a close,
      // corrupt data) while one is in flight, its rejection is expected and must not end the process.
      const read = (at: number): Promise<Uint8Array> => {
        const piece = this.readRange(start + at, Math.min(READ_AHEAD, end - at), signal);
        piece.catch(() => {});
        return piece;
      };
      let pending: Promise<Uint8Array> | null = end > 0 ? read(0) : null;
      for (let at = 0; pending; ) {
        const piece = await pending;
        if (piece.length === 0) throw new NpyError('TRUNCATED', `deflated data ends after ${at} of ${end} bytes`, { member: entry.name });
        at += piece.length;
        pending = at < end ? read(at) : null;
        if (!inflater.write(piece)) await drained(inflater);
      }
      inflater.end();
    })();
    feed.catch((e: unknown) => inflater.destroy(e as Error));
    let head: Uint8Array = new Uint8Array(0);
    let header: NpyHeader | null = null;
    let data: Uint8Array | null = null;
    let filled = 0;
    let produced = 0;
    let crc = 0;
    const want = Math.min(entry.size, STORED_HEAD);
    try {
      for await (const chunk of inflater as AsyncIterable<Buffer>) {
        produced += chunk.length;
        if (produced > entry.size) checkInflatedSize(produced, entry.size, entry.name);
        crc = zlibCrc32(chunk, crc);
        if (!data) {
          if (head.length === 0) head = chunk;
          else {
            const joined = new Uint8Array(head.length + chunk.length);
            joined.set(head);
            joined.set(chunk, head.length);
            head = joined;
          }
          if (head.length < want) continue;
          header = plainHeader(head, entry, options);
          if (!header) return null;
          data = new Uint8Array(allocateBuffer(header.dataBytes));
          // Bytes past the data (numpy ignores them) count in the CRC only.
          const rest = head.subarray(header.dataOffset, header.dataOffset + header.dataBytes);
          data.set(rest);
          filled = rest.length;
        } else if (filled < data.length) {
          const part = chunk.subarray(0, data.length - filled);
          data.set(part, filled);
          filled += part.length;
        }
      }
      await feed;
    } catch (e) {
      if (e instanceof NpyError) throw e;
      signal?.throwIfAborted();
      throw new NpyError('ZIP_FORMAT', `corrupt deflate stream: ${(e as Error).message}`, { member: entry.name });
    } finally {
      signal?.removeEventListener('abort', abort);
      inflater.destroy();
    }
    checkInflatedSize(produced, entry.size, entry.name);
    if (!data || !header) return null; // a member shorter than a header: the general path says why
    return finishDirect(entry, header, crc, data, options);
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
    let bytes = raw;
    if (entry.method === DEFLATED) {
      let out: Buffer;
      try {
        // One output chunk one byte larger than the member (whose size readZipEntryStored has bounded
        // by its deflated bytes): no joining copy, and an overflow is seen.
        out = await inflateRawAsync(raw, { maxOutputLength: Math.max(1, entry.size), chunkSize: Math.max(64, entry.size + 1) });
      } catch (e) {
        const err = e as NodeJS.ErrnoException;
        if (err.code === 'ERR_BUFFER_TOO_LARGE') checkInflatedSize(entry.size + 1, entry.size, entry.name);
        throw new NpyError('ZIP_FORMAT', `corrupt deflate stream: ${err.message}`, { member: entry.name });
      }
      signal?.throwIfAborted();
      checkInflatedSize(out.length, entry.size, entry.name);
      bytes = new Uint8Array(out.buffer, out.byteOffset, out.length);
    }
    let crc = 0;
    await inTurns(bytes, (piece) => { crc = zlibCrc32(piece, crc); }, signal);
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

  /** A member's .npy header, reading only its first bytes. */
  header(name: string, options: AsyncOptions = {}): Promise<NpyHeader> {
    return this.run((a) => a.header(name), options.signal);
  }

  /** A member's uncompressed bytes (CRC and size verified): the way to members that are not .npy. */
  bytes(name: string, options: AsyncOptions = {}): Promise<Uint8Array> {
    const entry = this.archive.entry(name);
    if (!this.memberReadAsync(entry)) return this.run((a) => a.bytes(name), options.signal);
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

/** Resolves when `stream` takes more input, or rejects when it is destroyed first (which `once(…, 'drain')` would wait for forever). */
function drained(stream: Writable): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (): void => { stream.off('drain', done); stream.off('close', done); if (stream.destroyed) reject(new Error('the inflater was closed')); else resolve(); };
    stream.once('drain', done);
    stream.once('close', done);
  });
}

async function readRange(fh: FileHandle, offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array> {
  const out = new Uint8Array(allocateBuffer(length));
  const got = await readFullyAsync(fh, out, offset, signal);
  return got === length ? out : out.subarray(0, got);
}

/**
 * Open a .npz on disk without blocking: only the central directory is read now, members when asked for.
 * @example
 * await using z = await loadNpz('model.npz');
 * const kernel = await z.get('dense/kernel');
 */
export function loadNpz(path: string, options: NpzFileOptions = {}): Promise<NpzFile> {
  return NpzFile.open(path, options);
}

/**
 * {@link loadNpz}, blocking: members are read with blocking reads. Call close().
 * @example
 * const z = loadNpzSync('model.npz');
 * const kernel = z.get('dense/kernel');
 * z.close();
 */
export function loadNpzSync(path: string, options: NpzOptions = {}): NpzArchive {
  const source = fileSource(path);
  try {
    return new NpzArchive(source, { codec: zlibCodec, ...options });
  } catch (e) {
    source.close?.();
    throw e;
  }
}

/** A sink that queues positional writes; the save flushes them as write steps between pieces. */
class QueuedSink implements ZipSink {
  private position = 0;
  private queue: [Uint8Array, number][] = [];
  write(chunk: Uint8Array): void {
    this.queue.push([chunk, this.position]);
    this.position += chunk.length;
  }
  patch(position: number, bytes: Uint8Array): void {
    this.queue.push([bytes.slice(), position]);
  }
  *flushing(file: FileRef): Operation<void> {
    const pending = this.queue;
    this.queue = [];
    for (const [bytes, at] of pending) yield { op: 'write', file, bytes, at };
  }
}

/** Options of {@link saveNpz}. */
export interface SaveNpzOptions extends NpzWriteOptions, AsyncOptions {}

/**
 * Write arrays as a .npz file without blocking the event loop, member by member straight to disk
 * (the archive is never built in memory). The file appears under its name only when complete: it
 * is written beside it and renamed; an aborted or failed save leaves the old file.
 * @example
 * await saveNpz('out.npz', { a: { data: new Int32Array([1, 2]) } }, { compress: true });
 */
export async function saveNpz(path: string, arrays: NpzInput, options: SaveNpzOptions = {}): Promise<void> {
  await run(savingNpz(path, arrays, options), options.signal);
}

/**
 * {@link saveNpz}, blocking.
 * @example
 * saveNpzSync('out.npz', { a: { data: new Int32Array([1, 2]) } });
 */
export function saveNpzSync(path: string, arrays: NpzInput, options: NpzWriteOptions = {}): void {
  runSync(savingNpz(path, arrays, options));
}

/** The steps of a save: members written a piece (≤ 16 MiB) at a time into a file beside `path`, renamed over it when complete. */
function* savingNpz(path: string, arrays: NpzInput, options: NpzWriteOptions): Operation<void> {
  yield* writingBeside(path, function* (file) {
    const sink = new QueuedSink();
    for (const _ of npzWriting(sink, arrays, { codec: zlibCodec, ...options })) yield* sink.flushing(file);
    yield* sink.flushing(file);
  });
}

/**
 * A member's uncompressed bytes as a stream of chunks, for members too large for one buffer.
 * Size and CRC-32 are checked at the end: the last step throws if they do not match.
 * @example
 * for await (const chunk of streamNpzMember(z, 'huge')) hash.update(chunk);
 */
export async function* streamNpzMember(archive: NpzArchive | NpzFile, name: string, chunkSize = 16 << 20): AsyncGenerator<Uint8Array> {
  const entry = archive.entry(name);
  checkSupported(entry);
  const start = archive instanceof NpzFile ? await archive.dataOffset(name) : entryDataOffset(archive.source, entry);
  const read = (offset: number, length: number): Promise<Uint8Array> | Uint8Array =>
    archive instanceof NpzFile ? archive.readRange(offset, length) : archive.source.read(offset, length);
  let crc = 0;
  let produced = 0;
  const account = (chunk: Uint8Array): Uint8Array => {
    crc = zlibCrc32(chunk, crc);
    produced += chunk.length;
    if (produced > entry.size) checkInflatedSize(produced, entry.size, entry.name);
    return chunk;
  };
  if (entry.method === 0) {
    for (let at = 0; at < entry.compressedSize; at += chunkSize) {
      yield account(await read(start + at, Math.min(chunkSize, entry.compressedSize - at)));
    }
  } else {
    const inflater = createInflateRaw();
    const feed = (async () => {
      for (let at = 0; at < entry.compressedSize; at += chunkSize) {
        const piece = await read(start + at, Math.min(chunkSize, entry.compressedSize - at));
        if (!inflater.write(piece)) await new Promise((r) => inflater.once('drain', r));
      }
      inflater.end();
    })();
    try {
      for await (const chunk of inflater) yield account(new Uint8Array((chunk as Buffer).buffer, (chunk as Buffer).byteOffset, (chunk as Buffer).length));
    } catch (e) {
      throw new NpyError('ZIP_FORMAT', `corrupt deflate stream: ${(e as Error).message}`, { member: entry.name });
    }
    await feed;
  }
  checkInflatedSize(produced, entry.size, entry.name);
  if (crc !== entry.crc32) throw new NpyError('ZIP_CRC', `CRC-32 mismatch at the end of the stream`, { member: entry.name });
}

/** The stored member a region read needs (deflated members have no random access). */
function storedEntry(archive: NpzArchive | NpzFile, name: string): ZipEntry {
  const entry = archive.entry(name);
  checkSupported(entry);
  if (entry.method !== 0) {
    throw new NpyError('ZIP_UNSUPPORTED', 'region reads need a stored member; this one is deflated (read it whole, or stream it)', { member: entry.name });
  }
  return entry;
}

/** Reads clipped to the member: a region read never strays into the next member. */
function clip(entry: ZipEntry, target: Uint8Array, position: number): Uint8Array {
  return target.subarray(0, Math.max(0, Math.min(target.length, entry.size - position)));
}

/**
 * Region reads of one stored (uncompressed) member of an archive, which is a plain .npy at an
 * offset. Deflated members have no random access: read them whole or with streamNpzMember().
 * @example
 * await using z = await loadNpz('big.npz');
 * await using m = await openNpzMember(z, 'x');
 * const rows = await m.read([0, 0], [10, m.shape[1]!]);
 */
export async function openNpzMember<const S extends DescrInput>(archive: NpzFile, name: string, options: ReadHeaderOptions & AsyncOptions & Expecting<S>): Promise<NpyFileHandle<S>>;
export async function openNpzMember(archive: NpzFile, name: string, options?: ReadHeaderOptions & AsyncOptions): Promise<NpyFileHandle>;
export async function openNpzMember(archive: NpzFile, name: string, options: ReadHeaderOptions & AsyncOptions = {}): Promise<NpyFileHandle> {
  const entry = storedEntry(archive, name);
  const base = await archive.dataOffset(name, options);
  const io: PositionalIOAsync = {
    async read(target, position, signal) {
      const part = clip(entry, target, position);
      const got = await archive.readRange(base + position, part.length, signal);
      part.set(got);
      return got.length;
    },
    async close() { /* the archive owns the file */ },
  };
  const header = await readHeaderFromAsync(async (offset, length) => {
    const out = new Uint8Array(length);
    return out.subarray(0, await io.read(out, offset, options.signal));
  }, options);
  checkDataPresent(header, entry.size - header.dataOffset);
  return openHandle(entry.name, io, header);
}

/**
 * {@link openNpzMember}, blocking, for an archive from {@link loadNpzSync}.
 * @example
 * const m = openNpzMemberSync(loadNpzSync('big.npz'), 'x');
 */
export function openNpzMemberSync<const S extends DescrInput>(archive: NpzArchive, name: string, options: ReadHeaderOptions & Expecting<S>): NpyFileHandleSync<S>;
export function openNpzMemberSync(archive: NpzArchive, name: string, options?: ReadHeaderOptions): NpyFileHandleSync;
export function openNpzMemberSync(archive: NpzArchive, name: string, options: ReadHeaderOptions = {}): NpyFileHandleSync {
  const entry = storedEntry(archive, name);
  const base = entryDataOffset(archive.source, entry);
  const src = archive.source;
  const io: PositionalIO = {
    read(target, position) {
      const part = clip(entry, target, position);
      if (src.readInto) return src.readInto(part, base + position);
      const got = src.read(base + position, part.length);
      part.set(got);
      return got.length;
    },
    close() { /* the archive owns the file */ },
  };
  const header = readHeaderFrom((offset, length) => {
    const out = new Uint8Array(length);
    return out.subarray(0, io.read(out, offset));
  }, options);
  checkDataPresent(header, entry.size - header.dataOffset);
  return openHandleSync(entry.name, io, header);
}

export { NpzArchive };
