/**
 * Members of an archive file read straight into their arrays' buffers: exactly the data (no header
 * before it, no copy after), the CRC-32 computed as the bytes arrive, deflated members inflated as a
 * stream on libuv's threads while the compressed bytes are read ahead. The general path (NpzFile's
 * member bytes, decoded) serves every member these decline.
 */
import type { Writable } from 'node:stream';
import type { FileHandle } from 'node:fs/promises';
import { createInflateRaw } from 'node:zlib';
import { allocateBuffer, swapBytes } from '../../array/memory.js';
import { checkDataSize, hasObject, type DecodeOptions } from '../../npy.js';
import type { NdArray } from '../../array/ndarray.js';
import { readHeaderOf, type NpyHeader } from '../../format/header.js';
import { byteSwapUnit } from '../../array/layout.js';
import { NpyError } from '../../errors.js';
import { checkInflatedSize, checkZipCrc, type CrcOptions, type ZipEntry } from '../../npz/zip.js';
import { inTurns, readFullyAsync, type AsyncOptions } from '../fd.js';
import { arrayOverNative } from '../../npy.js';
import { crc32, inflateNpyNative, nativeNpyInflate } from '../native.js';

/** Bytes read at a stored member's start for its .npy header (longer headers take the general path). */
const STORED_HEAD = 4096;
/**
 * Output of one step of a streamed inflate (measured: 4 MiB beats 64 KiB by a sixth on 64 MiB
 * members), or less for a smaller member: zlib allocates a whole step's buffer for each stream, and
 * 4 MiB for each of a ResNet's 320 mostly small members cost a third of reading them.
 */
const INFLATE_CHUNK = 4 << 20;
const MIN_INFLATE_CHUNK = 64 << 10;
/** Compressed bytes read at a time, one piece ahead of the inflater. */
const READ_AHEAD = 8 << 20;

/** A direct read's options: the call's, and whether the archive checks CRC-32. */
type DirectOptions = DecodeOptions & AsyncOptions & CrcOptions;

/** What the direct reads need of an open archive file. */
export interface MemberFile {
  readonly fh: FileHandle;
  /** `length` bytes at `offset` of the archive file (fewer at its end). */
  readRange(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array>;
}

/**
 * The header at a member's start when the member can be read straight into its array: a .npy whose
 * header is all in `head`, with its data all there, and no objects. Null otherwise (the general path
 * then reads the member, and reports what is wrong with it).
 */
function plainHeader(head: Uint8Array, entry: ZipEntry, options: DecodeOptions): NpyHeader | null {
  try {
    const header = readHeaderOf(head, options);
    checkDataSize(header, entry.size - header.dataOffset);
    return hasObject(header.dtype) ? null : header;
  } catch {
    return null;
  }
}

/** The last steps of reading a member straight into its array's buffer: CRC (null: checked already, or not asked for), byte order, the array. */
async function finishDirect(entry: ZipEntry, header: NpyHeader, crc: number | null, data: Uint8Array, options: DirectOptions): Promise<NdArray> {
  checkZipCrc(entry, crc, options);
  const swapUnit = byteSwapUnit(header.dtype);
  if (swapUnit) await inTurns(data, (piece) => swapBytes(piece, swapUnit), options.signal);
  return arrayOverNative(header, data.buffer, 0, options);
}

/**
 * A stored member's array read straight into a buffer of exactly its data (no header bytes before
 * it, no copy after), the CRC-32 computed in order as the pieces arrive. Null when the member is
 * not a plain .npy whose header fits its first bytes: the general path then reads (and reports) it.
 */
export async function storedArray(file: MemberFile, entry: ZipEntry, start: number, options: DirectOptions): Promise<NdArray | null> {
  const { signal } = options;
  const head = await file.readRange(start, Math.min(entry.size, STORED_HEAD), signal);
  const header = plainHeader(head, entry, options);
  if (!header) return null;
  const buffer = allocateBuffer(header.dataBytes);
  const data = new Uint8Array(buffer);
  let crc = crc32(head.subarray(0, header.dataOffset));
  // Pieces complete out of order; the CRC takes them in order, each as soon as it can.
  const done = new Map<number, Uint8Array>();
  let next = 0;
  const got = await readFullyAsync(file.fh, data, start + header.dataOffset, signal, (piece) => {
    done.set(piece.byteOffset, piece);
    for (let p = done.get(next); p; p = done.get(next)) {
      crc = crc32(p, crc);
      done.delete(next);
      next += p.length;
    }
  });
  if (got < header.dataBytes) throw new NpyError('TRUNCATED', `member data ends after ${got} of ${header.dataBytes} bytes`, { member: entry.name });
  // Bytes after the data (numpy ignores them) are in the member's CRC all the same.
  for (let at = header.dataOffset + header.dataBytes; at < entry.size; ) {
    const piece = await file.readRange(start + at, Math.min(READ_AHEAD, entry.size - at), signal);
    if (piece.length === 0) throw new NpyError('TRUNCATED', `member ends after ${at} of ${entry.size} bytes`, { member: entry.name });
    crc = crc32(piece, crc);
    at += piece.length;
  }
  return finishDirect(entry, header, crc, data, options);
}

/**
 * A deflated member's array inflated as a stream (on libuv's threads, 4 MiB of output at a time)
 * straight into a buffer of exactly its data, while the compressed bytes are read ahead in 8 MiB
 * pieces: memory is the array plus a few pieces, and several members can inflate at once. Null
 * when the member is not a plain .npy: the general path then reads (and reports) it. Where the addon
 * has libdeflate, every member inflates whole with it instead (it is faster at every size: the
 * ResNet-like archive's 320 members in 0.48 s against 0.50 s on this stream, and 0.70 s when only
 * members of 1 MiB and more did), and one that is not a plain .npy comes back as its checked bytes.
 */
export async function inflatedArray(file: MemberFile, entry: ZipEntry, start: number, options: DirectOptions): Promise<NdArray | Uint8Array | null> {
  if (nativeNpyInflate()) return inflatedByLibdeflate(file, entry, start, options);
  const { signal } = options;
  const inflater = createInflateRaw({ chunkSize: Math.max(MIN_INFLATE_CHUNK, Math.min(INFLATE_CHUNK, entry.size)) });
  const abort = (): void => {
    inflater.destroy(signal?.reason as Error);
  };
  signal?.addEventListener('abort', abort, { once: true });
  // Compressed pieces, each read while the previous one inflates.
  const feed = (async () => {
    const end = entry.compressedSize;
    // A read ahead is marked handled when it starts: when the feed stops early (an abort, a close,
    // corrupt data) while one is in flight, its rejection is expected and must not end the process.
    const read = (at: number): Promise<Uint8Array> => {
      const piece = file.readRange(start + at, Math.min(READ_AHEAD, end - at), signal);
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
      crc = crc32(chunk, crc);
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

/**
 * A deflated member inflated whole by libdeflate on the thread pool (about twice zlib's speed here),
 * its CRC-32 computed there too: the compressed bytes are read first (memory: the array plus the
 * member's compressed size while it inflates), and the data arrives in a buffer of exactly its size.
 * A member that is not a plain .npy (an object array, bytes after the data) comes back as its whole
 * bytes, size and CRC checked, for the general decode: it is not read and inflated a second time.
 */
async function inflatedByLibdeflate(file: MemberFile, entry: ZipEntry, start: number, options: DirectOptions): Promise<NdArray | Uint8Array> {
  const { signal } = options;
  const src = await file.readRange(start, entry.compressedSize, signal);
  if (src.length < entry.compressedSize) {
    throw new NpyError('TRUNCATED', `deflated data ends after ${src.length} of ${entry.compressedSize} bytes`, { member: entry.name });
  }
  // The work cannot be stopped once started (it takes at most a few hundred ms); an abort is honoured when it ends.
  const out = await inflateNpyNative(src, entry.size);
  signal?.throwIfAborted();
  if (out.written === -2) checkInflatedSize(entry.size + 1, entry.size, entry.name);
  if (out.written === -3) {
    throw new NpyError('INTERNAL', 'libdeflate could not start (no memory for its output, or the work was cancelled); NPYTS_LIBDEFLATE=0 uses zlib', {
      member: entry.name,
    });
  }
  if (out.written < 0) throw new NpyError('ZIP_FORMAT', 'corrupt deflate stream (libdeflate)', { member: entry.name });
  checkInflatedSize(out.written, entry.size, entry.name);
  checkZipCrc(entry, out.crc, options);
  const data = new Uint8Array(out.data);
  const header = out.head.length ? plainHeader(out.head, entry, options) : null;
  // The addon split the bytes by its own reading of the preamble: the header must agree with it.
  if (header && header.dataOffset === out.head.length && header.dataBytes === data.length) return finishDirect(entry, header, null, data, options);
  // Bytes after the data (numpy ignores them): the array gets a buffer of exactly its data all the same.
  if (header && header.dataOffset === out.head.length && header.dataBytes < data.length) {
    return finishDirect(entry, header, null, data.slice(0, header.dataBytes), options);
  }
  if (out.head.length === 0) return data;
  const whole = new Uint8Array(allocateBuffer(entry.size));
  whole.set(out.head);
  whole.set(data, out.head.length);
  return whole;
}

/** Resolves when `stream` takes more input, or rejects when it is destroyed first (which `once(…, 'drain')` would wait for forever). */
function drained(stream: Writable): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (): void => {
      stream.off('drain', done);
      stream.off('close', done);
      if (stream.destroyed) reject(new Error('the inflater was closed'));
      else resolve();
    };
    stream.once('drain', done);
    stream.once('close', done);
  });
}
