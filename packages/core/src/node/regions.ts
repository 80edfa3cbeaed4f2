/** Regions of .npy files larger than memory: region reads and writes, sparse creation, appends. */
import { closeSync, fstatSync, fsyncSync, ftruncateSync, openSync, readSync } from 'node:fs';
import { open as openAsync, type FileHandle } from 'node:fs/promises';
import { allocateBuffer } from '../array/memory.js';
import { checkDataPresent, toNdArray, type DecodeOptions, type ArraySpec, type Expecting } from '../npy.js';
import type { DescrInput } from '../format/descr-types.js';
import { encodeHeader, headerTextOfLength, type NpyHeader } from '../format/header.js';
import { planRegion, regionArray, regionReads, regionStats, type OpenNpy } from '../io/region.js';
import { gatherRegion } from './native.js';
import { toOrder } from '../array/order.js';
import { withByteOrder } from '../array/byte-order.js';
import { parseDescr, shapeRepr, shapeSize, type DType } from '../format/dtype.js';
import { dataToBytes, type TypedArray } from '../array/layout.js';
import { NpyError } from '../errors.js';
import { withAppendLock, withAppendLockAsync } from './lock.js';
import { NdArray, isOrderFree } from '../array/ndarray.js';
import { readFully, readFullyAsync, writeBeside, writeBesideAsync, writeFully, writeFullyAsync, type AsyncOptions } from './fd.js';
import { readHeaderFromFd, readHeaderFromHandle } from './npy-files.js';
import { mapNpy, type MappedArray } from './mmap.js';

// Regions of files larger than memory

/** What every open .npy handle has: its header, dtype, shape, order and path. */
interface NpyFileInfo<S extends DescrInput = DescrInput> extends OpenNpy<S> {
  readonly path: string;
}

/**
 * An open .npy whose regions are read and written with positional reads of only the bytes they
 * cover, off the event loop. `await using h = await openNpy(p)` closes it at the end of the scope.
 */
export interface NpyFileHandle<S extends DescrInput = DescrInput> extends NpyFileInfo<S>, AsyncDisposable {
  /** The hyperslab [start, start + count) of each axis, in native byte order and the file's memory order. */
  read(start: readonly number[], count: readonly number[], options?: AsyncOptions): Promise<NdArray<S>>;
  /** Write a region (its shape is `data.shape`) at `start`. */
  writeRegion(start: readonly number[], data: NdArray | ArraySpec, options?: AsyncOptions): Promise<void>;
  close(): Promise<void>;
}

/** {@link NpyFileHandle}, blocking: from {@link openNpySync} and {@link createNpySync}; `using h = …` closes it. */
export interface NpyFileHandleSync<S extends DescrInput = DescrInput> extends NpyFileInfo<S>, Disposable {
  /** The hyperslab [start, start + count) of each axis, in native byte order and the file's memory order. */
  read(start: readonly number[], count: readonly number[]): NdArray<S>;
  /** Write a region (its shape is `data.shape`) at `start`. */
  writeRegion(start: readonly number[], data: NdArray | ArraySpec): void;
  close(): void;
}

/** Positional access to the bytes of one .npy: a whole file, or a stored archive member at an offset. */
export interface PositionalIO {
  /** The file's descriptor when the bytes are a whole file (region gathers map it). */
  fd?: number;
  read(target: Uint8Array, position: number): number;
  write?(bytes: Uint8Array, position: number): void;
  close(): void;
}

/** {@link PositionalIO}, async. */
export interface PositionalIOAsync {
  /** The file's descriptor when the bytes are a whole file (region gathers map it). */
  fd?: number;
  read(target: Uint8Array, position: number, signal?: AbortSignal): Promise<number>;
  write?(bytes: Uint8Array, position: number, signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

function fileIO(fd: number): PositionalIO {
  return {
    fd,
    read: (target, position) => readFully(fd, target, position),
    write: (bytes, position) => writeFully(fd, bytes, position),
    close: () => closeSync(fd),
  };
}

function fileIOAsync(fh: FileHandle): PositionalIOAsync {
  return {
    fd: fh.fd,
    read: (target, position, signal) => readFullyAsync(fh, target, position, signal),
    write: (bytes, position, signal) => writeFullyAsync(fh, bytes, position, signal),
    close: () => fh.close(),
  };
}

/** The writes of one region: `[bytes, file position]` pairs. */
function* regionWrites(header: NpyHeader, start: readonly number[], input: NdArray | ArraySpec): Generator<[Uint8Array, number]> {
  const data = regionBytes(header, input);
  const plan = planRegion(header, start, data.shape);
  for (const r of plan.runs) yield [data.bytes.subarray(r.regionOffset, r.regionOffset + r.length), r.fileOffset];
}

/**
 * Regions of many short runs (a column) are copied in C from a map of the file (`gatherRegion`):
 * one call, the pages touched, no per-run reads. It runs on the calling thread, so async reads use
 * it only for regions up to this size (a few milliseconds); larger ones take the thread pool.
 */
const ASYNC_GATHER_MAX = 16 << 20;

/** The region gathered by the addon, or null when it does not apply (the caller reads it by runs). */
function gatheredRegion(fd: number | undefined, header: NpyHeader, start: readonly number[], count: readonly number[], maxBytes: number): NdArray | null {
  if (fd === undefined) return null;
  const plan = planRegion(header, start, count);
  if (plan.bytes === 0 || plan.bytes > maxBytes) return null;
  const out = new Uint8Array(allocateBuffer(plan.bytes));
  if (!gatherRegion(fd, plan.strided, out)) return null;
  regionStats.reads++;
  regionStats.bytes += plan.bytes;
  return regionArray(header, plan, out);
}

function infoOf(path: string, header: NpyHeader): NpyFileInfo {
  return { path, header, dtype: header.dtype, shape: [...header.shape], order: header.fortranOrder ? 'F' : 'C' };
}

function closedError(path: string): NpyError {
  return new NpyError('BAD_ARRAY', `${path} is closed`);
}

function readOnlyError(path: string): NpyError {
  return new NpyError('BAD_ARRAY', `${path} is open for reading only`);
}

export function openHandleSync(path: string, io: PositionalIO, header: NpyHeader): NpyFileHandleSync {
  let open = true;
  const check = (): void => {
    if (!open) throw closedError(path);
  };
  const close = (): void => {
    if (open) io.close();
    open = false;
  };
  return {
    ...infoOf(path, header),
    read(start, count) {
      check();
      const gathered = gatheredRegion(io.fd, header, start, count, Infinity);
      if (gathered) return gathered;
      const steps = regionReads(path, header, start, count);
      for (let step = steps.next(); ; ) {
        if (step.done) return step.value;
        step = steps.next(io.read(step.value.target, step.value.position));
      }
    },
    writeRegion(start, input) {
      check();
      if (!io.write) throw readOnlyError(path);
      for (const [bytes, position] of regionWrites(header, start, input)) io.write(bytes, position);
    },
    close,
    [Symbol.dispose]: close,
  };
}

export function openHandle(path: string, io: PositionalIOAsync, header: NpyHeader): NpyFileHandle {
  let open = true;
  const check = (signal?: AbortSignal): void => {
    signal?.throwIfAborted();
    if (!open) throw closedError(path);
  };
  const close = async (): Promise<void> => {
    if (open) {
      open = false;
      await io.close();
    }
  };
  return {
    ...infoOf(path, header),
    async read(start, count, options = {}) {
      check(options.signal);
      const gathered = gatheredRegion(io.fd, header, start, count, ASYNC_GATHER_MAX);
      if (gathered) return gathered;
      const steps = regionReads(path, header, start, count);
      for (let step = steps.next(); ; ) {
        if (step.done) return step.value;
        step = steps.next(await io.read(step.value.target, step.value.position, options.signal));
      }
    },
    async writeRegion(start, input, options = {}) {
      check(options.signal);
      if (!io.write) throw readOnlyError(path);
      for (const [bytes, position] of regionWrites(header, start, input)) await io.write(bytes, position, options.signal);
    },
    close,
    [Symbol.asyncDispose]: close,
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

/** Options of {@link openNpy}. */
export interface OpenOptions extends DecodeOptions, AsyncOptions {
  /** Open for {@link NpyFileHandle.writeRegion} too. */
  write?: boolean;
}

/**
 * Open a .npy for region reads (and writes with `{ write: true }`). Memory is the header, then each region.
 * @example
 * await using h = await openNpy('big.npy');
 * const block = await h.read([1000, 0], [64, 512]);
 */
export async function openNpy<const S extends DescrInput>(path: string, options: OpenOptions & Expecting<S>): Promise<NpyFileHandle<S>>;
export async function openNpy(path: string, options?: OpenOptions): Promise<NpyFileHandle>;
export async function openNpy(path: string, options: OpenOptions = {}): Promise<NpyFileHandle> {
  options.signal?.throwIfAborted();
  const fh = await openAsync(path, options.write ? 'r+' : 'r');
  try {
    const header = await readHeaderFromHandle(fh, options);
    checkDataPresent(header, (await fh.stat()).size - header.dataOffset);
    return openHandle(path, fileIOAsync(fh), header);
  } catch (e) {
    await fh.close();
    throw e;
  }
}

/**
 * {@link openNpy}, blocking.
 * @example
 * using h = openNpySync('big.npy');
 * const block = h.read([1000, 0], [64, 512]);
 */
export function openNpySync<const S extends DescrInput>(path: string, options: { write?: boolean } & DecodeOptions & Expecting<S>): NpyFileHandleSync<S>;
export function openNpySync(path: string, options?: { write?: boolean } & DecodeOptions): NpyFileHandleSync;
export function openNpySync(path: string, options: { write?: boolean } & DecodeOptions = {}): NpyFileHandleSync {
  const fd = openSync(path, options.write ? 'r+' : 'r');
  try {
    const header = readHeaderFromFd(fd, options);
    checkDataPresent(header, fstatSync(fd).size - header.dataOffset);
    return openHandleSync(path, fileIO(fd), header);
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** What {@link createNpy} makes: dtype, shape, order and format version. */
export interface CreateOptions {
  dtype: DType | string;
  shape: number[];
  order?: 'C' | 'F';
  version?: 1 | 2 | 3;
}

/** The header of a new file and its size (header plus data). */
function newFileLayout(options: CreateOptions): { headerBytes: Uint8Array; fileSize: number } {
  const dtype = parseDescr(options.dtype);
  const fortran = options.order === 'F';
  const headerBytes = encodeHeader(dtype, options.shape, fortran && !isOrderFree(options.shape), options.version);
  return { headerBytes, fileSize: headerBytes.length + shapeSize(options.shape) * dtype.itemsize };
}

/**
 * Create a .npy of the given dtype and shape: numpy's header, and the file sized to hold the data
 * (sparse where the file system allows), ready for any number of processes or threads to fill
 * disjoint regions with {@link writeRegion}. Returns an open handle.
 * @example
 * await using out = await createNpy('out.npy', { dtype: '<f8', shape: [100000, 4096] });
 * await out.writeRegion([0, 0], { data: new Float64Array(4096), shape: [1, 4096] });
 * using mapped = await createNpy('m.npy', { dtype: '<f4', shape: [1000, 1000], mmap: true });
 * mapped.data[0] = 1;   // written to the file
 */
export async function createNpy(path: string, options: CreateOptions & AsyncOptions & { mmap: true }): Promise<MappedArray>;
export async function createNpy(path: string, options: CreateOptions & AsyncOptions): Promise<NpyFileHandle>;
export async function createNpy(path: string, options: CreateOptions & AsyncOptions & { mmap?: boolean }): Promise<NpyFileHandle | MappedArray> {
  options.signal?.throwIfAborted();
  if (options.mmap) {
    const { mmap: _, signal: __, ...plain } = options;
    createNpySync(path, plain).close();
    return mapNpy(path, 'r+');
  }
  const { headerBytes, fileSize } = newFileLayout(options);
  const fh = await openAsync(path, 'w+');
  try {
    await writeFullyAsync(fh, headerBytes, 0, options.signal);
    await fh.truncate(fileSize);
    return openHandle(path, fileIOAsync(fh), await readHeaderFromHandle(fh));
  } catch (e) {
    await fh.close();
    throw e;
  }
}

/**
 * {@link createNpy}, blocking.
 * @example
 * createNpySync('out.npy', { dtype: '<f8', shape: [100000, 4096] }).close();
 */
export function createNpySync(path: string, options: CreateOptions & { mmap: true }): MappedArray;
export function createNpySync(path: string, options: CreateOptions): NpyFileHandleSync;
export function createNpySync(path: string, options: CreateOptions & { mmap?: boolean }): NpyFileHandleSync | MappedArray {
  if (options.mmap) {
    const { mmap: _, ...plain } = options;
    createNpySync(path, plain).close();
    return mapNpy(path, 'r+');
  }
  const { headerBytes, fileSize } = newFileLayout(options);
  const fd = openSync(path, 'w+');
  try {
    writeFully(fd, headerBytes);
    ftruncateSync(fd, fileSize);
    return openHandleSync(path, fileIO(fd), readHeaderFromFd(fd));
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/**
 * Write `data` at `start` of an existing .npy (by path, opened and closed here, or an open handle).
 * @example
 * await writeRegion('out.npy', [25000, 0], { data: rows, shape: [100, 4096] });
 */
export async function writeRegion(target: string | NpyFileHandle, start: readonly number[], data: NdArray | ArraySpec, options: AsyncOptions = {}): Promise<void> {
  if (typeof target !== 'string') return target.writeRegion(start, data, options);
  const h = await openNpy(target, { write: true, signal: options.signal });
  try {
    await h.writeRegion(start, data, options);
  } finally {
    await h.close();
  }
}

/**
 * {@link writeRegion}, blocking.
 * @example
 * writeRegionSync('out.npy', [25000, 0], { data: rows, shape: [100, 4096] });
 */
export function writeRegionSync(target: string | NpyFileHandleSync, start: readonly number[], data: NdArray | ArraySpec): void {
  if (typeof target !== 'string') {
    target.writeRegion(start, data);
    return;
  }
  const h = openNpySync(target, { write: true });
  try {
    h.writeRegion(start, data);
  } finally {
    h.close();
  }
}

/** What an append writes: the new data at the end, then the header text (in place when it fits). */
interface AppendPlan {
  header: NpyHeader;
  bytes: Uint8Array;
  newShape: number[];
  /** Where the new data goes: the end of the existing data. */
  end: number;
  /** Where the header text starts, and its new text when it fits in the old header's room (else null). */
  textStart: number;
  inPlace: Uint8Array | null;
}

function planAppend(path: string, header: NpyHeader, input: NdArray | ArraySpec): AppendPlan {
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
  const textStart = 8 + (header.version[0] === 1 ? 2 : 4);
  const inPlace = headerTextOfLength(header.dtype, newShape, header.fortranOrder, header.dataOffset - textStart, header.version[0]);
  return { header, bytes, newShape, end: header.dataOffset + header.dataBytes, textStart, inPlace };
}

/** Bytes copied per step when an append has to rewrite the file. */
const REWRITE_CHUNK = 64 << 20;

/**
 * Append along axis 0 (the last axis of a Fortran-order file) in place. The data is written after
 * the existing data and made durable first; only then is the shape in the header rewritten, within
 * the header's padding (numpy ≥ 1.24 leaves room for it). A crash before the header write leaves the
 * old array (readers ignore trailing bytes); the header rewrite is a single small write at byte 8.
 * When the header cannot grow in place, the file is rewritten beside itself and renamed over it.
 * Appends to one file are serialised across processes; the wait for another writer does not block
 * the event loop. An abort before the header is rewritten leaves the old array.
 * @example
 * await appendNpy('log.npy', { data: new Float32Array(512), shape: [1, 512] });
 */
export async function appendNpy(path: string, input: NdArray | ArraySpec, options: AsyncOptions = {}): Promise<void> {
  await withAppendLockAsync(path, () => appendHoldingLockAsync(path, input, options.signal), options.signal);
}

async function appendHoldingLockAsync(path: string, input: NdArray | ArraySpec, signal?: AbortSignal): Promise<void> {
  const fh = await openAsync(path, 'r+');
  try {
    const plan = planAppend(path, await readHeaderFromHandle(fh, { signal }), input);
    const { header } = plan;
    await writeFullyAsync(fh, plan.bytes, plan.end, signal);
    await fh.sync();
    signal?.throwIfAborted();
    if (plan.inPlace) {
      await writeFullyAsync(fh, plan.inPlace, plan.textStart);
      await fh.sync();
      return;
    }
    await writeBesideAsync(path, async (out) => {
      await writeFullyAsync(out, encodeHeader(header.dtype, plan.newShape, header.fortranOrder), null, signal);
      const total = header.dataBytes + plan.bytes.length;
      const chunk = new Uint8Array(Math.min(REWRITE_CHUNK, Math.max(1, total)));
      for (let at = 0; at < total;) {
        const n = await readFullyAsync(fh, chunk.subarray(0, Math.min(chunk.length, total - at)), header.dataOffset + at, signal);
        if (n === 0) throw new NpyError('DATA_TRUNCATED', `${path} ended while being rewritten`);
        await writeFullyAsync(out, chunk.subarray(0, n), null, signal);
        at += n;
      }
      await out.sync();
    }, signal);
  } finally {
    await fh.close();
  }
}

/**
 * {@link appendNpy}, blocking.
 * @example
 * appendNpySync('log.npy', { data: new Float32Array(512), shape: [1, 512] });
 */
export function appendNpySync(path: string, input: NdArray | ArraySpec): void {
  withAppendLock(path, () => appendHoldingLock(path, input));
}

/** {@link appendNpySync} for a caller that holds the file's append lock already (see lock.ts). */
export function appendHoldingLock(path: string, input: NdArray | ArraySpec): void {
  const fd = openSync(path, 'r+');
  try {
    const plan = planAppend(path, readHeaderFromFd(fd), input);
    const { header } = plan;
    writeFully(fd, plan.bytes, plan.end);
    fsyncSync(fd);
    if (plan.inPlace) {
      writeFully(fd, plan.inPlace, plan.textStart);
      fsyncSync(fd);
      return;
    }
    // No room: write the grown array beside the file, then rename it over (atomic on POSIX).
    writeBeside(path, (out) => {
      writeFully(out, encodeHeader(header.dtype, plan.newShape, header.fortranOrder));
      const total = header.dataBytes + plan.bytes.length;
      const chunk = new Uint8Array(Math.min(REWRITE_CHUNK, Math.max(1, total)));
      for (let at = 0; at < total;) {
        const n = readSync(fd, chunk, 0, Math.min(chunk.length, total - at), header.dataOffset + at);
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
