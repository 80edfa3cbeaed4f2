/**
 * Open .npy handles over any positional source, blocking or async: Node's files and archive members,
 * and the browser's OPFS access handles share them. Region reads, region writes, the plan of an
 * append and the layout of a new file live here; the sources only move bytes.
 */
import { allocateBuffer } from '../array/memory.js';
import { checkDataSize, hasObject, toNdArray, type ArraySpec } from '../npy.js';
import type { DescrInput } from '../format/descr-types.js';
import { encodeHeader, headerTextOfLength, type NpyHeader } from '../format/header.js';
import { planRegion, regionArray, regionReads, regionStats, type OpenNpy, type RegionPlan } from './region.js';
import { toOrder } from '../array/order.js';
import { withByteOrder } from '../array/byte-order.js';
import { parseDescr, shapeRepr, shapeSize, type DType } from '../format/dtype.js';
import { dataToBytes } from '../array/layout.js';
import type { TypedArray } from '../format/js-types.js';
import { NpyError } from '../errors.js';
import { NdArray, isOrderFree } from '../array/ndarray.js';

/** Options every async operation takes. */
export interface AsyncOptions {
  /** Stops the operation: it releases what it opened and rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
}

/** What every open .npy handle has: its header, dtype, shape, order and path. */
export interface NpyFileInfo<S extends DescrInput = DescrInput> extends OpenNpy<S> {
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
  /**
   * Copy a strided region into `out` in one step, when the source can (Node's addon, from a map of
   * the file); false to have it read by runs.
   */
  gather?(strided: RegionPlan['strided'], out: Uint8Array): boolean;
  read(target: Uint8Array, position: number): number;
  write?(bytes: Uint8Array, position: number): void;
  close(): void;
}

/** {@link PositionalIO}, async. */
export interface PositionalIOAsync {
  /**
   * Copy a strided region into `out` in one step, when the source can (Node's addon, from a map of
   * the file); false to have it read by runs.
   */
  gather?(strided: RegionPlan['strided'], out: Uint8Array): boolean;
  read(target: Uint8Array, position: number, signal?: AbortSignal): Promise<number>;
  write?(bytes: Uint8Array, position: number, signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/** The writes of one region: `[bytes, file position]` pairs. */
export function* regionWrites(header: NpyHeader, start: readonly number[], input: NdArray | ArraySpec): Generator<[Uint8Array, number]> {
  const data = regionBytes(header, input);
  const plan = planRegion(header, start, data.shape);
  for (const r of plan.runs) yield [data.bytes.subarray(r.regionOffset, r.regionOffset + r.length), r.fileOffset];
}

/**
 * A gather (Node's addon copies a column from a map of the file) runs on the calling thread, so
 * async reads use it only for regions up to this size (a few milliseconds); larger ones are read
 * by runs, on the thread pool.
 */
const ASYNC_GATHER_MAX = 16 << 20;

/** The region copied by the source's `gather`, or null when it has none or declines (the caller reads it by runs). */
function gatheredRegion(io: PositionalIO | PositionalIOAsync, header: NpyHeader, start: readonly number[], count: readonly number[], maxBytes: number): NdArray | null {
  if (!io.gather) return null;
  const plan = planRegion(header, start, count);
  if (plan.bytes === 0 || plan.bytes > maxBytes) return null;
  const out = new Uint8Array(allocateBuffer(plan.bytes));
  if (!io.gather(plan.strided, out)) return null;
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
      const gathered = gatheredRegion(io, header, start, count, Infinity);
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
      const gathered = gatheredRegion(io, header, start, count, ASYNC_GATHER_MAX);
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
export function regionBytes(header: NpyHeader, input: NdArray | ArraySpec): { shape: number[]; bytes: Uint8Array } {
  let a = toNdArray(input);
  if (a.dtype.withByteOrder('<').descrLiteral !== header.dtype.withByteOrder('<').descrLiteral) {
    throw new NpyError('BAD_ARRAY', `data of dtype ${a.dtype.descrLiteral} cannot be written into an array of ${header.dtype.descrLiteral}`);
  }
  a = toOrder(a, header.fortranOrder ? 'F' : 'C');
  if (a.dtype.descrLiteral !== header.dtype.descrLiteral) a = withByteOrder(a, header.dtype.byteOrder === '>' ? '>' : '<');
  return { shape: a.shape, bytes: dataToBytes(header.dtype, a.data as TypedArray) };
}

/** What a new .npy file holds (`createNpy`, `createNpyAccessHandle`): dtype, shape, order and format version. */
export interface CreateOptions {
  dtype: DType | string;
  shape: number[];
  order?: 'C' | 'F';
  version?: 1 | 2 | 3;
}

/** The header of a new file and its size (header plus data). */
export function newFileLayout(options: CreateOptions): { headerBytes: Uint8Array; fileSize: number } {
  const dtype = parseDescr(options.dtype);
  if (hasObject(dtype)) {
    throw new NpyError('OBJECT_IN_PLACE', `cannot create a file of ${dtype.str} in place: object arrays are stored as a pickle, not in fixed-size slots; build the array and save it with saveNpy`);
  }
  if (!Array.isArray(options.shape)) throw new NpyError('BAD_SHAPE', 'createNpy needs a shape: an array of non-negative integers');
  const fortran = options.order === 'F';
  const headerBytes = encodeHeader(dtype, options.shape, fortran && !isOrderFree(options.shape), options.version);
  return { headerBytes, fileSize: headerBytes.length + shapeSize(options.shape) * dtype.itemsize };
}

/** What an append writes: the new data at the end, then the header text (in place when it fits). */
export interface AppendPlan {
  header: NpyHeader;
  bytes: Uint8Array;
  newShape: number[];
  /** Where the new data goes: the end of the existing data. */
  end: number;
  /** Where the header text starts, and its new text when it fits in the old header's room (else null). */
  textStart: number;
  inPlace: Uint8Array | null;
}

export function planAppend(path: string, header: NpyHeader, input: NdArray | ArraySpec, fileSize: number): AppendPlan {
  // New data goes after the data the header declares: that data must be there, or a truncated file
  // claiming a huge shape would be extended (sparsely) to its claim.
  checkDataSize(header, fileSize - header.dataOffset);
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

