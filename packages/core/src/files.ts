/** .npy and .npz files on disk, read and written without whole-file intermediate copies. */
import { closeSync, fstatSync, fsyncSync, ftruncateSync, openSync, readSync, renameSync, rmSync, writeSync } from 'node:fs';
import { constants as zc, crc32 as zlibCrc32, createInflateRaw, deflateRawSync, inflateRawSync } from 'node:zlib';
import { kMaxLength } from 'node:buffer';
import { allocateBuffer } from './memory.js';
import { preallocate, readInParallel } from './native.js';
import { checkDataPresent, encodeNpyParts, hasObject, toNdArray, type DecodeOptions, type EncodeOptions, type ArraySpec, type Expecting } from './codec.js';
import type { DescrInput } from './descr-types.js';
import { encodeHeader, headerBytesNeeded, headerTextOfLength, readHeader, type NpyHeader, type ReadHeaderOptions } from './header.js';
import { DEFAULT_GROUP_BYTES, planRegion, groupRuns, placeGroup, regionArray } from './region.js';
import { toOrder } from './order.js';
import { withByteOrder } from './byteorder.js';
import { parseDescr, shapeRepr, shapeSize, type DType } from './dtype.js';
import { bytesToData, dataToBytes, type TypedArray } from './storage.js';
import { NpyError } from './errors.js';
import { withAppendLock } from './lock.js';
import { NdArray, isOrderFree } from './ndarray.js';
import { pickleCodec } from './pickle.js';
import { NpzArchive, writeNpz, type NpzInput, type NpzOptions, type NpzWriteOptions } from './npz.js';
import { checkInflatedSize, checkSupported, entryDataOffset, type ByteSource, type ZipCodec, type ZipSink } from './zip.js';

/** Largest single read or write; Node refuses more than 2 GiB per call. */
const IO_CHUNK = 1 << 30;

function readFully(fd: number, target: Uint8Array, position: number): number {
  const parallel = readInParallel(fd, target, position);
  if (parallel !== null) return parallel;
  let done = 0;
  while (done < target.length) {
    const n = readSync(fd, target, done, Math.min(target.length - done, IO_CHUNK), position + done);
    if (n === 0) break;
    done += n;
  }
  return done;
}

/** Write all of `bytes` at `position` (at the file position when omitted), however the kernel splits it. */
function writeFully(fd: number, bytes: Uint8Array, position?: number): void {
  for (let done = 0; done < bytes.length;) {
    done += writeSync(fd, bytes, done, Math.min(bytes.length - done, IO_CHUNK), position === undefined ? null : position + done);
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
export function loadNpy<const S extends DescrInput>(path: string, options: LoadOptions & Expecting<S>): NdArray<S>;
export function loadNpy(path: string, options?: LoadOptions): NdArray;
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
    const buffer = allocateBuffer(header.dataBytes, options.shared);
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

/** A temporary name beside `path`, unique to this process and call. */
function tempBeside(path: string): string {
  return `${path}.${process.pid}.${Date.now()}.${Math.random().toString(36).slice(2, 8)}.tmp`;
}

/**
 * Write a file through a temporary file beside it, renamed over the target only when complete:
 * a crash or an error leaves the old file (or none), never a truncated one. The temporary file is
 * removed on every error path.
 */
export function writeBeside(path: string, write: (fd: number) => void): void {
  const temp = tempBeside(path);
  const fd = openSync(temp, 'wx');
  try {
    write(fd);
    closeSync(fd);
    renameSync(temp, path);
  } catch (e) {
    try { closeSync(fd); } catch { /* already closed */ }
    rmSync(temp, { force: true });
    throw e;
  }
}

/**
 * Write an array as numpy's `np.save` would; native-endian data is written straight from its memory.
 * The file appears under its name only when complete (written beside it and renamed).
 */
export function saveNpy(path: string, array: NdArray | ArraySpec, options: EncodeOptions = {}): void {
  const { header, body } = encodeNpyParts(array, { pickle: pickleCodec, ...options });
  writeBeside(path, (fd) => {
    preallocate(fd, header.length, body.length);
    writeFully(fd, header);
    writeFully(fd, body);
  });
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
  let prefix = new Uint8Array(Math.min(4096, entry.size));
  io.read(prefix, 0);
  const need = headerBytesNeeded(prefix);
  if (need > prefix.length) { prefix = new Uint8Array(need); io.read(prefix, 0); }
  const header = readHeader(prefix, options);
  checkDataPresent(header, entry.size - header.dataOffset);
  return openHandle(`${entry.name}`, io, header);
}

export { NpzArchive };

// ---------------------------------------------------------------------------------------------
// Regions of files larger than memory

/** Runs closer than this are read in one call (the gap is read and dropped). */
const FILE_MAX_GAP = 4096;

/** An open .npy: its header, and regions read with positional reads of only the bytes they cover. */
export interface NpyFileHandle<S extends DescrInput = DescrInput> {
  readonly path: string;
  readonly header: NpyHeader;
  readonly dtype: DType<S>;
  readonly shape: number[];
  readonly order: 'C' | 'F';
  /** The hyperslab [start, start + count) of each axis, in native byte order and the file's memory order. */
  read(start: readonly number[], count: readonly number[]): NdArray<S>;
  /** Write a region (its shape is `data.shape`) at `start`. */
  writeRegion(start: readonly number[], data: NdArray | ArraySpec): void;
  close(): void;
}

/** Bytes read by region reads of this process, for tests and benchmarks. */
export const regionStats = { reads: 0, bytes: 0 };

/** Positional access to the bytes of one .npy: a whole file, or a stored archive member at an offset. */
interface PositionalIO {
  read(target: Uint8Array, position: number): number;
  write?(bytes: Uint8Array, position: number): void;
  close(): void;
}

function fileIO(fd: number): PositionalIO {
  return {
    read: (target, position) => readFully(fd, target, position),
    write: (bytes, position) => writeFully(fd, bytes, position),
    close: () => closeSync(fd),
  };
}

function openHandle(path: string, io: PositionalIO, header: NpyHeader): NpyFileHandle {
  let open = true;
  const check = (): void => {
    if (!open) throw new NpyError('BAD_ARRAY', `${path} is closed`);
  };
  return {
    path,
    header,
    dtype: header.dtype,
    shape: [...header.shape],
    order: header.fortranOrder ? 'F' : 'C',
    read(start, count) {
      check();
      const plan = planRegion(header, start, count);
      const out = new Uint8Array(allocateBuffer(plan.bytes));
      // One scratch buffer for the gathered groups: memory is the region plus one group (≤ 16 MiB).
      let scratch = new Uint8Array(0);
      for (const g of groupRuns(plan.runs, FILE_MAX_GAP)) {
        const single = g.runs.length === 1;
        let buf: Uint8Array;
        if (single) buf = out.subarray(g.runs[0]!.regionOffset, g.runs[0]!.regionOffset + g.length);
        else {
          if (scratch.length < g.length) scratch = new Uint8Array(Math.min(DEFAULT_GROUP_BYTES, Math.max(g.length, 2 * scratch.length)));
          buf = scratch.subarray(0, g.length);
        }
        const got = io.read(buf, g.offset);
        regionStats.reads++;
        regionStats.bytes += got;
        if (got < g.length) throw new NpyError('DATA_TRUNCATED', `${path} ends at byte ${g.offset + got}, the region needs byte ${g.offset + g.length}`);
        if (!single) placeGroup(out, g, buf);
      }
      return regionArray(header, plan, out);
    },
    writeRegion(start, input) {
      check();
      if (!io.write) throw new NpyError('BAD_ARRAY', `${path} is open for reading only`);
      const data = regionBytes(header, input);
      const plan = planRegion(header, start, data.shape);
      for (const r of plan.runs) io.write(data.bytes.subarray(r.regionOffset, r.regionOffset + r.length), r.fileOffset);
    },
    close() {
      if (open) io.close();
      open = false;
    },
  };
}

/** The bytes of `input` laid out as the file stores them: its memory order and byte order. */
function regionBytes(header: NpyHeader, input: NdArray | ArraySpec): { shape: number[]; bytes: Uint8Array } {
  let a = toNdArray(input);
  if (a.dtype.withByteOrder('<').descrLiteral !== header.dtype.withByteOrder('<').descrLiteral) {
    throw new NpyError('BAD_ARRAY', `data of dtype ${a.dtype.descrLiteral} cannot be written into an array of ${header.dtype.descrLiteral}`);
  }
  a = toOrder(a, header.fortranOrder ? 'F' : 'C');
  if (a.dtype.descrLiteral !== header.dtype.descrLiteral) a = withByteOrder(a, header.dtype.byteOrder === '>' ? '>' : '<');
  return { shape: a.shape, bytes: dataToBytes(header.dtype, a.data as TypedArray) };
}

/** Open a .npy for region reads (and writes with `{ write: true }`). Memory is the header, then each region. */
export function openNpy<const S extends DescrInput>(path: string, options: { write?: boolean } & DecodeOptions & Expecting<S>): NpyFileHandle<S>;
export function openNpy(path: string, options?: { write?: boolean } & DecodeOptions): NpyFileHandle;
export function openNpy(path: string, options: { write?: boolean } & DecodeOptions = {}): NpyFileHandle {
  const fd = openSync(path, options.write ? 'r+' : 'r');
  try {
    const header = readHeaderFromFd(fd, options);
    checkDataPresent(header, fstatSync(fd).size - header.dataOffset);
    return openHandle(path, fileIO(fd), header);
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

export interface CreateOptions {
  dtype: DType | string;
  shape: number[];
  order?: 'C' | 'F';
  version?: 1 | 2 | 3;
}

/**
 * Create a .npy of the given dtype and shape: numpy's header, and the file sized to hold the data
 * (sparse where the file system allows), ready for any number of processes or threads to fill
 * disjoint regions with {@link writeRegion}. Returns an open handle.
 */
export function createNpy(path: string, options: CreateOptions): NpyFileHandle {
  const dtype = parseDescr(options.dtype);
  const fortran = options.order === 'F';
  const headerBytes = encodeHeader(dtype, options.shape, fortran && !isOrderFree(options.shape), options.version);
  const dataBytes = shapeSize(options.shape) * dtype.itemsize;
  const fd = openSync(path, 'w+');
  try {
    writeFully(fd, headerBytes);
    ftruncateSync(fd, headerBytes.length + dataBytes);
    return openHandle(path, fileIO(fd), readHeaderFromFd(fd));
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** Write `data` at `start` of an existing .npy (by path, opened and closed here, or an open handle). */
export function writeRegion(target: string | NpyFileHandle, start: readonly number[], data: NdArray | ArraySpec): void {
  if (typeof target !== 'string') {
    target.writeRegion(start, data);
    return;
  }
  const h = openNpy(target, { write: true });
  try {
    h.writeRegion(start, data);
  } finally {
    h.close();
  }
}

/**
 * Append along axis 0 (the last axis of a Fortran-order file) in place. The data is written after
 * the existing data and made durable first; only then is the shape in the header rewritten, within
 * the header's padding (numpy ≥ 1.24 leaves room for it). A crash before the header write leaves the
 * old array (readers ignore trailing bytes); the header rewrite is a single small write at byte 8.
 * When the header cannot grow in place, the file is rewritten beside itself and renamed over it.
 */
export function appendNpy(path: string, input: NdArray | ArraySpec): void {
  withAppendLock(path, () => appendHoldingLock(path, input));
}

/** {@link appendNpy} for a caller that holds the file's append lock already (see lock.ts). */
export function appendHoldingLock(path: string, input: NdArray | ArraySpec): void {
  const fd = openSync(path, 'r+');
  try {
    const header = readHeaderFromFd(fd);
    const add = toNdArray(input);
    const axis = header.fortranOrder ? header.shape.length - 1 : 0;
    if (header.shape.length === 0) throw new NpyError('BAD_ARRAY', `${path} holds a 0-d array, which cannot grow`);
    const rest = (shape: readonly number[]): string => shapeRepr(shape.filter((_, a) => a !== axis));
    const addShape = add.shape.length === header.shape.length - 1 ? (header.fortranOrder ? [...add.shape, 1] : [1, ...add.shape]) : add.shape;
    if (addShape.length !== header.shape.length || rest(addShape) !== rest(header.shape)) {
      throw new NpyError('BAD_ARRAY', `cannot append shape ${shapeRepr(add.shape)} to ${shapeRepr(header.shape)} along axis ${axis}: the other axes must match`);
    }
    const { bytes } = regionBytes(header, new NdArray(add.dtype, addShape, add.data, add.order));
    const newShape = [...header.shape];
    newShape[axis]! += addShape[axis]!;
    const end = header.dataOffset + header.dataBytes;
    writeFully(fd, bytes, end);
    fsyncSync(fd);
    const lengthField = header.version[0] === 1 ? 2 : 4;
    const textStart = 8 + lengthField;
    const inPlace = headerTextOfLength(header.dtype, newShape, header.fortranOrder, header.dataOffset - textStart, header.version[0]);
    if (inPlace) {
      writeFully(fd, inPlace, textStart);
      fsyncSync(fd);
      return;
    }
    // No room: write the grown array beside the file, then rename it over (atomic on POSIX).
    writeBeside(path, (out) => {
      writeFully(out, encodeHeader(header.dtype, newShape, header.fortranOrder));
      const chunk = new Uint8Array(Math.min(64 << 20, Math.max(1, header.dataBytes + bytes.length)));
      for (let at = 0; at < header.dataBytes + bytes.length;) {
        const n = readSync(fd, chunk, 0, Math.min(chunk.length, header.dataBytes + bytes.length - at), header.dataOffset + at);
        if (n === 0) throw new NpyError('DATA_TRUNCATED', `${path} ended while being rewritten`);
        writeFully(out, chunk.subarray(0, n));
        at += n;
      }
      fsyncSync(out);
    });
  } finally {
    closeSync(fd);
  }
}

