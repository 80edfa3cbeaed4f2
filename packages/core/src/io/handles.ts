/**
 * Open .npy handles over any positional source, blocking or async: Node's files and archive members,
 * and the browser's OPFS access handles share them. Region reads, region writes, the plan of an
 * append and the layout of a new file live here; the sources only move bytes.
 */
import { checkDataSize, hasObject, toNdArray, type ArraySpec } from '../npy.js';
import type { DescrInput } from '../format/descr-types.js';
import { encodeHeader, headerTextOfLength, type NpyHeader } from '../format/header.js';
import { planRegion, readingRegion, type OpenNpy } from './region.js';
import {
  SOURCE,
  drive,
  driveSync,
  readEach,
  readEachSync,
  unknownStep,
  type FileRef,
  type Operation,
  type PerformAsync,
  type PerformSync,
  type PositionalRead,
  type PositionalStep,
  type SourceStep,
  type StepOf,
} from './steps.js';
import { toOrder } from '../array/order.js';
import { withByteOrder } from '../array/byte-order.js';
import { parseDescr, shapeRepr, shapeSize, type DType } from '../format/dtype.js';
import { storageOf } from '../array/layout.js';
import { allocateBuffer, swapBytesInto } from '../array/memory.js';
import type { TypedArray } from '../format/js-types.js';
import { NpyError } from '../errors.js';
import type { KnownKeys } from '../options.js';
import { NdArray, isOrderFree } from '../array/ndarray.js';
import type { ByteSource, SyncByteSource, WritableByteSource } from './byte-source.js';

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
 * cover, off the event loop. `await using h = await openNpyFile(p)` closes it at the end of the scope.
 */
export interface NpyFileHandle<S extends DescrInput = DescrInput> extends NpyFileInfo<S>, AsyncDisposable {
  /** The hyperslab [start, start + count) of each axis, in native byte order and the file's memory order. */
  read(start: readonly number[], count: readonly number[], options?: AsyncOptions): Promise<NdArray<S>>;
  /** Write a region (its shape is `data.shape`) at `start`. */
  writeRegion(start: readonly number[], data: NdArray | ArraySpec, options?: AsyncOptions): Promise<void>;
  close(): Promise<void>;
}

/** {@link NpyFileHandle}, blocking: from `openNpyFileSync` and `createNpySync` (`@npyts/core/node`); `using h = …` closes it. */
export interface NpyFileHandleSync<S extends DescrInput = DescrInput> extends NpyFileInfo<S>, Disposable {
  /** The hyperslab [start, start + count) of each axis, in native byte order and the file's memory order. */
  read(start: readonly number[], count: readonly number[]): NdArray<S>;
  /** Write a region (its shape is `data.shape`) at `start`. */
  writeRegion(start: readonly number[], data: NdArray | ArraySpec): void;
  close(): void;
}

/** `then(value)`, at once for a value, after it for a promise: one step answer for both drivers. */
function after<T, U>(value: T | Promise<T>, then: (value: T) => U): U | Promise<U> {
  return value instanceof Promise ? value.then(then) : then(value);
}

/**
 * A source that may be changed in place: a {@link WritableByteSource} (blocking), or a store's key
 * being edited (`store/append.ts`), whose writes may be asynchronous.
 */
export type EditableSource = ByteSource & {
  write?(bytes: Uint8Array, offset: number): void | Promise<void>;
  truncate?(size: number): void | Promise<void>;
  sync?(): void | Promise<void>;
};

/**
 * A step performed on a byte source, blocking or async as the source is: reads, views, writes (where
 * the source is a {@link WritableByteSource}), its size, and closing; no strided copies. The one
 * driver of every handle over a source that is not Node's file: an archive member, an OPFS file.
 */
function performOn(source: EditableSource, path: string, step: Exclude<SourceStep, StepOf<'reads'>>, signal?: AbortSignal): unknown {
  const options = signal ? { signal } : undefined;
  switch (step.op) {
    case 'read': {
      const done = (n: number): number => {
        if (n > 0) step.onPiece?.(step.into.subarray(0, n));
        return n;
      };
      if (source.readInto) return after(source.readInto(step.into, step.at, options), done);
      return after(source.read(step.at, step.into.length, options), (got) => {
        step.into.set(got);
        return done(got.length);
      });
    }
    case 'view':
      return source.read(step.at, step.length, options);
    case 'write':
      if (!source.write) throw readOnlyError(path);
      return source.write(step.bytes, step.at ?? 0);
    case 'gather':
      return false;
    case 'close':
      // The source belongs to whoever made the handle (an archive, an access handle): closing the
      // handle only makes its writes durable.
      return source.sync?.();
    case 'committed':
      return undefined;
    case 'compute':
      return step.work(step.bytes);
    case 'size':
      return source.size;
    case 'truncate':
      if (!source.truncate) throw readOnlyError(path);
      return source.truncate(step.size);
    case 'sync':
      return source.sync?.();
    default:
      throw unknownStep(step);
  }
}

/** A blocking driver over one blocking source. */
export function performOnSource(source: SyncByteSource | WritableByteSource, path: string): PerformSync<SourceStep> {
  return (step) => (step.op === 'reads' ? readEachSync(step, (r) => performOn(source, path, readOf(step.file, r)) as number) : performOn(source, path, step));
}

/** The `read` step of one read of a `reads` step. */
const readOf = (file: FileRef, r: PositionalRead): StepOf<'read'> => ({ op: 'read', file, into: r.into, at: r.at });

/** {@link performOnSource}, async, over any source. */
export function performOnSourceAsync(source: EditableSource, path: string): PerformAsync<SourceStep> {
  return async (step, signal) =>
    step.op === 'reads'
      ? readEach(step, async (r) => performOn(source, path, readOf(step.file, r), signal) as number | Promise<number>)
      : performOn(source, path, step, signal);
}

/** The steps of a region write: the runs it covers, each written at its file position. */
export function* writingRegion(
  file: FileRef,
  header: NpyHeader,
  start: readonly number[],
  input: NdArray | ArraySpec,
): Operation<void, StepOf<'compute' | 'write'>> {
  const data = yield* regionBytesInTurns(header, input);
  const plan = planRegion(header, start, data.shape);
  for (const r of plan.runs) yield { op: 'write', file, bytes: data.bytes.subarray(r.regionOffset, r.regionOffset + r.length), at: r.fileOffset };
}

function infoOf(path: string, header: NpyHeader): NpyFileInfo {
  return { path, header, dtype: header.dtype, shape: [...header.shape], order: header.fortranOrder ? 'F' : 'C' };
}

function closedError(path: string): NpyError {
  return new NpyError('CLOSED', `${path} is closed`);
}

function readOnlyError(path: string): NpyError {
  return new NpyError('READ_ONLY', `${path} is open for reading only`);
}

/** Runs an operation: blocking (its result) or async (a promise of it), as the handle's driver does. */
type Runner = <T>(operation: Operation<T, PositionalStep>, signal?: AbortSignal) => T | Promise<T>;

/**
 * The one definition of an open .npy handle: every method is an operation run by `run`, so the
 * blocking and the async handle are the same code. `file` is what the driver opened.
 */
function handleOf(path: string, header: NpyHeader, file: FileRef, run: Runner) {
  let open = true;
  function* whileOpen<T, S extends PositionalStep>(operation: Operation<T, S>): Operation<T, S> {
    if (!open) throw closedError(path);
    return yield* operation;
  }
  // eslint-disable-next-line require-yield
  function* closing(): Operation<void, StepOf<'close'>> {
    if (!open) return;
    open = false;
    yield { op: 'close', file };
  }
  const close = () => run(closing());
  return {
    ...infoOf(path, header),
    read: (start: readonly number[], count: readonly number[], options: AsyncOptions = {}) =>
      run(whileOpen(readingRegion(path, file, header, start, count)), options.signal),
    writeRegion: (start: readonly number[], input: NdArray | ArraySpec, options: AsyncOptions = {}) =>
      run(whileOpen(writingRegion(file, header, start, input)), options.signal),
    close,
  };
}

/** A blocking handle over an opened file, run by a blocking driver. */
export function handleSync(path: string, header: NpyHeader, file: FileRef, run: <T>(operation: Operation<T, PositionalStep>) => T): NpyFileHandleSync {
  const h = handleOf(path, header, file, run) as unknown as NpyFileHandleSync & { close(): void };
  return Object.assign(h, { [Symbol.dispose]: h.close });
}

/** An async handle over an opened file, run by an async driver. */
export function handleAsync(
  path: string,
  header: NpyHeader,
  file: FileRef,
  run: <T>(operation: Operation<T, PositionalStep>, signal?: AbortSignal) => Promise<T>,
): NpyFileHandle {
  const h = handleOf(path, header, file, run) as unknown as NpyFileHandle;
  return Object.assign(h, { [Symbol.asyncDispose]: h.close });
}

/** A blocking handle over a blocking source; closing the handle syncs a writable source and leaves it open. */
export function openHandleSync(path: string, source: SyncByteSource | WritableByteSource, header: NpyHeader): NpyFileHandleSync {
  const perform = performOnSource(source, path);
  return handleSync(path, header, SOURCE, (operation) => driveSync(operation, perform));
}

/** An async handle over any source; closing the handle leaves the source open. */
export function openHandle(path: string, source: ByteSource, header: NpyHeader): NpyFileHandle {
  const perform = performOnSourceAsync(source, path);
  return handleAsync(path, header, SOURCE, (operation, signal) => drive(operation, perform, signal));
}

/**
 * The bytes of `input` laid out as the file stores them: its memory order and byte order. Another
 * byte order is swapped into a copy by a `compute` step, which an async driver performs in turns of
 * the event loop.
 */
export function* regionBytesInTurns(header: NpyHeader, input: NdArray | ArraySpec): Operation<{ shape: number[]; bytes: Uint8Array }, StepOf<'compute'>> {
  let a = toNdArray(input);
  if (a.dtype.withByteOrder('<').descrLiteral !== header.dtype.withByteOrder('<').descrLiteral) {
    throw new NpyError('DTYPE_MISMATCH', `data of dtype ${a.dtype.descrLiteral} cannot be written into an array of ${header.dtype.descrLiteral}`);
  }
  a = toOrder(a, header.fortranOrder ? 'F' : 'C');
  if (a.dtype.descrLiteral !== header.dtype.descrLiteral) a = withByteOrder(a, header.dtype.byteOrder === '>' ? '>' : '<');
  const data = a.data as TypedArray;
  const native = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const swapUnit = header.dtype.isNative ? 0 : storageOf(header.dtype).swapUnit;
  if (swapUnit <= 1) return { shape: a.shape, bytes: native };
  const out = new Uint8Array(allocateBuffer(native.length));
  const work = (piece: Uint8Array): void => {
    const at = piece.byteOffset - out.byteOffset;
    swapBytesInto(native.subarray(at, at + piece.length), piece, swapUnit);
  };
  yield { op: 'compute', bytes: out, work };
  return { shape: a.shape, bytes: out };
}

/** {@link regionBytesInTurns}, at once (for callers with no driver). */
export function regionBytes(header: NpyHeader, input: NdArray | ArraySpec): { shape: number[]; bytes: Uint8Array } {
  return driveSync(regionBytesInTurns(header, input), computeAtOnce);
}

/** A driver of `compute` steps alone, performed at once. */
function computeAtOnce(step: StepOf<'compute'>): void {
  step.work(step.bytes);
}

/** What a new .npy file holds (`createNpy`, `createNpyAccessHandle`): dtype, shape, order and format version. */
export interface CreateOptions {
  dtype: DType | string;
  shape: number[];
  order?: 'C' | 'F';
  version?: 1 | 2 | 3;
}

/** The options {@link CreateOptions} names (see `knownKeys`, options.ts). */
export const CREATE_KEYS = { dtype: true, shape: true, order: true, version: true } as const satisfies KnownKeys<CreateOptions>;

/** The header of a new file and its size (header plus data). */
export function newFileLayout(options: CreateOptions): { headerBytes: Uint8Array; fileSize: number } {
  const dtype = parseDescr(options.dtype);
  if (hasObject(dtype)) {
    throw new NpyError(
      'OBJECT_IN_PLACE',
      `cannot create a file of ${dtype.str} in place: object arrays are stored as a pickle, not in fixed-size slots; build the array and save it with saveNpy`,
    );
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
  return driveSync(planningAppend(path, header, input, fileSize), computeAtOnce);
}

/** {@link planAppend} as steps: the new data's byte swap, if any, is a `compute` step (done in turns by an async driver). */
export function* planningAppend(path: string, header: NpyHeader, input: NdArray | ArraySpec, fileSize: number): Operation<AppendPlan, StepOf<'compute'>> {
  // New data goes after the data the header declares: that data must be there, or a truncated file
  // claiming a huge shape would be extended (sparsely) to its claim.
  checkDataSize(header, fileSize - header.dataOffset);
  const add = toNdArray(input);
  const axis = header.fortranOrder ? header.shape.length - 1 : 0;
  if (header.shape.length === 0) throw new NpyError('SHAPE_MISMATCH', `${path} holds a 0-d array, which cannot grow`);
  const rest = (shape: readonly number[]): string => shapeRepr(shape.filter((_, a) => a !== axis));
  const addShape = add.shape.length === header.shape.length - 1 ? (header.fortranOrder ? [...add.shape, 1] : [1, ...add.shape]) : add.shape;
  if (addShape.length !== header.shape.length || rest(addShape) !== rest(header.shape)) {
    throw new NpyError(
      'SHAPE_MISMATCH',
      `cannot append shape ${shapeRepr(add.shape)} to ${shapeRepr(header.shape)} along axis ${axis}: the other axes must match`,
    );
  }
  const { bytes } = yield* regionBytesInTurns(header, new NdArray(add.dtype, addShape, add.data, add.order));
  const newShape = [...header.shape];
  newShape[axis]! += addShape[axis]!;
  const textStart = 8 + (header.version[0] === 1 ? 2 : 4);
  const inPlace = headerTextOfLength(header.dtype, newShape, header.fortranOrder, header.dataOffset - textStart, header.version[0]);
  return { header, bytes, newShape, end: header.dataOffset + header.dataBytes, textStart, inPlace };
}
