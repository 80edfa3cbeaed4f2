/** .npz archives on disk: node:zlib as the codec, positional reads of members, streaming writes. */
import { closeSync, fstatSync, openSync } from 'node:fs';
import { constants as zc, crc32 as zlibCrc32, createInflateRaw, deflateRawSync, inflateRawSync } from 'node:zlib';
import { kMaxLength } from 'node:buffer';
import { allocateBuffer } from '../array/memory.js';
import { checkDataPresent, type Expecting } from '../npy.js';
import type { DescrInput } from '../format/descr-types.js';
import type { ReadHeaderOptions } from '../format/header.js';
import { readHeaderFrom } from '../io/header-read.js';
import { NpyError } from '../errors.js';
import { NpzArchive, writeNpz, type NpzInput, type NpzOptions, type NpzWriteOptions } from '../npz/archive.js';
import { checkInflatedSize, checkSupported, entryDataOffset, type ByteSource, type ZipCodec, type ZipSink } from '../npz/zip.js';
import { readFully, writeBeside, writeFully } from './fd.js';
import { openHandle, type NpyFileHandle, type PositionalIO } from './regions.js';

/** node:zlib as the zip codec: native inflate/deflate and CRC-32, with the same size guards. */
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

/** Positional reads from an open file: memory is what is read, never the whole file. */
export function fileSource(path: string): ByteSource {
  const fd = openSync(path, 'r');
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

/**
 * Open a .npz on disk: only the central directory is read now, members when asked for. Call close().
 * @example
 * const z = loadNpz('model.npz');
 * const kernel = z.get('dense/kernel');
 * z.close();
 */
export function loadNpz(path: string, options: NpzOptions = {}): NpzArchive {
  const source = fileSource(path);
  try {
    return new NpzArchive(source, { codec: zlibCodec, ...options });
  } catch (e) {
    source.close?.();
    throw e;
  }
}

class FileSink implements ZipSink {
  private position = 0;
  constructor(private readonly fd: number) {}
  write(chunk: Uint8Array): void {
    writeFully(this.fd, chunk, this.position);
    this.position += chunk.length;
  }
  patch(position: number, bytes: Uint8Array): void {
    writeFully(this.fd, bytes, position);
  }
}

/**
 * Write arrays as a .npz file, member by member straight to disk (the archive is never built in
 * memory). The file appears under its name only when complete: it is written beside it and renamed.
 * @example
 * saveNpz('out.npz', { a: { data: new Int32Array([1, 2]) } }, { compress: true });
 */
export function saveNpz(path: string, arrays: NpzInput, options: NpzWriteOptions = {}): void {
  writeBeside(path, (fd) => writeNpz(new FileSink(fd), arrays, { codec: zlibCodec, ...options }));
}

/**
 * A member's uncompressed bytes as a stream of chunks, for members too large for one buffer.
 * Size and CRC-32 are checked at the end: the last step throws if they do not match.
 */
export async function* streamNpzMember(archive: NpzArchive, name: string, chunkSize = 16 << 20): AsyncGenerator<Uint8Array> {
  const entry = archive.entry(name);
  checkSupported(entry);
  const source = archive.source;
  const start = entryDataOffset(source, entry);
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
      yield account(source.read(start + at, Math.min(chunkSize, entry.compressedSize - at)));
    }
  } else {
    const inflater = createInflateRaw();
    const feed = (async () => {
      for (let at = 0; at < entry.compressedSize; at += chunkSize) {
        const piece = source.read(start + at, Math.min(chunkSize, entry.compressedSize - at));
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

/**
 * Region reads of one stored (uncompressed) member of an archive, which is a plain .npy at an
 * offset. Deflated members have no random access: read them whole or with streamNpzMember().
 */
export function openNpzMember<const S extends DescrInput>(archive: NpzArchive, name: string, options: ReadHeaderOptions & Expecting<S>): NpyFileHandle<S>;
export function openNpzMember(archive: NpzArchive, name: string, options?: ReadHeaderOptions): NpyFileHandle;
export function openNpzMember(archive: NpzArchive, name: string, options: ReadHeaderOptions = {}): NpyFileHandle {
  const entry = archive.entry(name);
  checkSupported(entry);
  if (entry.method !== 0) {
    throw new NpyError('ZIP_UNSUPPORTED', 'region reads need a stored member; this one is deflated (read it whole, or stream it)', { member: entry.name });
  }
  const base = entryDataOffset(archive.source, entry);
  const src = archive.source;
  const io: PositionalIO = {
    read(target, position) {
      const want = Math.max(0, Math.min(target.length, entry.size - position));
      if (src.readInto) return src.readInto(target.subarray(0, want), base + position);
      const got = src.read(base + position, want);
      target.set(got);
      return got.length;
    },
    close() { /* the archive owns the file */ },
  };
  const header = readHeaderFrom((offset, length) => {
    const out = new Uint8Array(length);
    return out.subarray(0, io.read(out, offset));
  }, options);
  checkDataPresent(header, entry.size - header.dataOffset);
  return openHandle(`${entry.name}`, io, header);
}

export { NpzArchive };
