/** Regions of .npy files larger than memory: region reads and writes, sparse creation, appends. */
import { closeSync, fstatSync, fsyncSync, ftruncateSync, openSync, readSync } from 'node:fs';
import { allocateBuffer } from '../array/memory.js';
import { checkDataPresent, toNdArray, type DecodeOptions, type ArraySpec, type Expecting } from '../npy.js';
import type { DescrInput } from '../format/descr-types.js';
import { encodeHeader, headerTextOfLength, type NpyHeader } from '../format/header.js';
import { DEFAULT_GROUP_BYTES, planRegion, groupRuns, placeGroup, regionArray, type OpenNpy } from '../io/region.js';
import { toOrder } from '../array/order.js';
import { withByteOrder } from '../array/byte-order.js';
import { parseDescr, shapeRepr, shapeSize, type DType } from '../format/dtype.js';
import { dataToBytes, type TypedArray } from '../array/layout.js';
import { NpyError } from '../errors.js';
import { withAppendLock } from './lock.js';
import { NdArray, isOrderFree } from '../array/ndarray.js';
import { readFully, writeBeside, writeFully } from './fd.js';
import { readHeaderFromFd } from './npy-files.js';

// Regions of files larger than memory

/** Runs closer than this are read in one call (the gap is read and dropped). */
const FILE_MAX_GAP = 4096;

/** An open .npy: its header, and regions read with positional reads of only the bytes they cover. */
export interface NpyFileHandle<S extends DescrInput = DescrInput> extends OpenNpy<S> {
  readonly path: string;
  /** The hyperslab [start, start + count) of each axis, in native byte order and the file's memory order. */
  read(start: readonly number[], count: readonly number[]): NdArray<S>;
  /** Write a region (its shape is `data.shape`) at `start`. */
  writeRegion(start: readonly number[], data: NdArray | ArraySpec): void;
  close(): void;
}

/** Bytes read by region reads of this process, for tests and benchmarks. */
export const regionStats = { reads: 0, bytes: 0 };

/** Positional access to the bytes of one .npy: a whole file, or a stored archive member at an offset. */
export interface PositionalIO {
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

export function openHandle(path: string, io: PositionalIO, header: NpyHeader): NpyFileHandle {
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

/**
 * Open a .npy for region reads (and writes with `{ write: true }`). Memory is the header, then each region.
 * @example
 * const h = openNpy('big.npy');
 * const block = h.read([1000, 0], [64, 512]);
 * h.close();
 */
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
 * @example
 * createNpy('out.npy', { dtype: '<f8', shape: [100000, 4096] }).close();
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

/**
 * Write `data` at `start` of an existing .npy (by path, opened and closed here, or an open handle).
 * @example
 * writeRegion('out.npy', [25000, 0], { data: rows, shape: [100, 4096] });
 */
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
 * @example
 * appendNpy('log.npy', { data: new Float32Array(512), shape: [1, 512] });
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

