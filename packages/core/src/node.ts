/** @npyts/core/node — .npy files on disk, read and written without whole-file intermediate copies. */
import { closeSync, fstatSync, openSync, readSync, renameSync, rmSync, writeSync } from 'node:fs';
import { constants as zc, crc32 as zlibCrc32, createInflateRaw, deflateRawSync, inflateRawSync } from 'node:zlib';
import { kMaxLength } from 'node:buffer';
import { checkDataPresent, encodeNpyParts, type DecodeOptions, type EncodeOptions, type ArraySpec } from './codec.js';
import { NpyError } from './errors.js';
import { headerBytesNeeded, readHeader, type NpyHeader } from './header.js';
import { NdArray } from './ndarray.js';
import { bytesToData } from './storage.js';
import { pickleCodec } from './pickle.js';
import { hasObject } from './codec.js';
import { NpzArchive, writeNpz, type NpzInput, type NpzOptions, type NpzWriteOptions } from './npz.js';
import { checkInflatedSize, checkSupported, entryDataOffset, type ByteSource, type ZipCodec, type ZipSink } from './zip.js';

/** Largest single read or write; Node refuses more than 2 GiB per call. */
const IO_CHUNK = 1 << 30;

function readFully(fd: number, target: Uint8Array, position: number): number {
  let done = 0;
  while (done < target.length) {
    const n = readSync(fd, target, done, Math.min(target.length - done, IO_CHUNK), position + done);
    if (n === 0) break;
    done += n;
  }
  return done;
}

function writeFully(fd: number, bytes: Uint8Array): void {
  for (let done = 0; done < bytes.length;) {
    done += writeSync(fd, bytes, done, Math.min(bytes.length - done, IO_CHUNK));
  }
}

/** Read just the header of an open file (a few hundred bytes in the common case). */
export function readHeaderFromFd(fd: number, options: DecodeOptions = {}): NpyHeader {
  let prefix = new Uint8Array(4096);
  let got = readFully(fd, prefix, 0);
  prefix = prefix.subarray(0, got);
  const need = headerBytesNeeded(prefix);
  if (need > got && got === 4096) {
    const full = new Uint8Array(need);
    got = readFully(fd, full, 0);
    prefix = full.subarray(0, got);
  }
  return readHeader(prefix, options);
}

/** The header of a .npy file, reading only its first bytes. */
export function readNpyHeader(path: string, options: DecodeOptions = {}): NpyHeader {
  const fd = openSync(path, 'r');
  try {
    return readHeaderFromFd(fd, options);
  } finally {
    closeSync(fd);
  }
}

export interface LoadOptions extends DecodeOptions {
  /** Decode object arrays (pickles) with npyts' safe unpickler, which never runs code. */
  allowPickle?: boolean;
}

/**
 * Load a .npy file. The data is read straight into its own aligned buffer (memory is the data
 * size, not twice it) and byte-swapped there when the file is not in native order.
 */
export function loadNpy(path: string, options: LoadOptions = {}): NdArray {
  const fd = openSync(path, 'r');
  try {
    const header = readHeaderFromFd(fd, options);
    const fileSize = fstatSync(fd).size;
    const codec = options.pickle ?? (options.allowPickle ? pickleCodec : undefined);
    if (hasObject(header.dtype) && codec) {
      const whole = new Uint8Array(fileSize);
      readFully(fd, whole, 0);
      return codec.decode(whole, header, options);
    }
    checkDataPresent(header, fileSize - header.dataOffset);
    const buffer = options.shared ? new SharedArrayBuffer(header.dataBytes) : new ArrayBuffer(header.dataBytes);
    const got = readFully(fd, new Uint8Array(buffer), header.dataOffset);
    if (got < header.dataBytes) {
      throw new NpyError('DATA_TRUNCATED', `file ended after ${got} of ${header.dataBytes} data bytes`, { offset: header.dataOffset + got });
    }
    const data = bytesToData(header.dtype, buffer, 0, header.size, { ...options, owned: true, copy: false });
    return new NdArray(header.dtype, header.shape, data, header.fortranOrder ? 'F' : 'C');
  } finally {
    closeSync(fd);
  }
}

/** Write an array as numpy's `np.save` would; native-endian data is written straight from its memory. */
export function saveNpy(path: string, array: NdArray | ArraySpec, options: EncodeOptions = {}): void {
  const { header, body } = encodeNpyParts(array, { pickle: pickleCodec, ...options });
  const fd = openSync(path, 'w');
  try {
    writeFully(fd, header);
    writeFully(fd, body);
  } finally {
    closeSync(fd);
  }
}

// ---------------------------------------------------------------------------------------------
// .npz

/** node:zlib as the zip codec: native inflate/deflate and CRC-32, with the same size guards. */
export const zlibCodec: ZipCodec = {
  inflate(data, size, member) {
    if (size > kMaxLength) {
      throw new NpyError('TOO_LARGE', `member of ${size} bytes is larger than one buffer can hold (${kMaxLength}); read it in pieces with streamNpzMember()`, { member });
    }
    let out: Buffer;
    try {
      // maxOutputLength makes zlib stop (and throw) instead of inflating past the declared size.
      out = inflateRawSync(data, { maxOutputLength: Math.max(1, size) });
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
        const out = new Uint8Array(length);
        const got = readFully(fd, out, offset);
        return got === length ? out : out.subarray(0, got);
      },
      close: () => closeSync(fd),
    };
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** Open a .npz on disk: only the central directory is read now, members when asked for. Call close(). */
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
    for (let done = 0; done < chunk.length;) {
      done += writeSync(this.fd, chunk, done, chunk.length - done, this.position + done);
    }
    this.position += chunk.length;
  }
  patch(position: number, bytes: Uint8Array): void {
    writeSync(this.fd, bytes, 0, bytes.length, position);
  }
}

/**
 * Write arrays as a .npz file, member by member straight to disk (the archive is never built in
 * memory). The file appears under its name only when complete: it is written beside it and renamed.
 */
export function saveNpz(path: string, arrays: NpzInput, options: NpzWriteOptions = {}): void {
  const temp = `${path}.${process.pid}.${Date.now()}.tmp`;
  const fd = openSync(temp, 'w');
  try {
    writeNpz(new FileSink(fd), arrays, { codec: zlibCodec, ...options });
    closeSync(fd);
    renameSync(temp, path);
  } catch (e) {
    try { closeSync(fd); } catch { /* already closed */ }
    rmSync(temp, { force: true });
    throw e;
  }
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

export { NpzArchive };
