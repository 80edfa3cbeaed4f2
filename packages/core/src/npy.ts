/** decodeNpy / encodeNpy: bytes → header → dtype → typed view, and back. */
import { allocateBuffer, swapBytesInto } from './array/memory.js';
import { type DType, parseDescr, shapeSize } from './format/dtype.js';
import { matchDType } from './format/dtype-cases.js';
import { NpyError } from './errors.js';
import { encodeHeader, matchesDescr, readHeaderOf, type NpyHeader, type ReadHeaderOptions } from './format/header.js';
import { NdArray, isOrderFree, type Order } from './array/ndarray.js';
import { byteSwapUnit, bytesToData, dataToBytes, storageOf, type BytesToDataOptions } from './array/layout.js';
import type { ArrayData, TypedArray } from './format/js-types.js';
import { arrayFromValues } from './array/from-values.js';
import type { DescrInput } from './format/descr-types.js';
import { checkOptions, knownKeys, type KnownKeys } from './options.js';

/** Bounds for decoding a pickle (object arrays). */
export interface UnpickleLimits {
  /** Deepest nesting of containers (lists, tuples, dicts, sets, arrays). Default 1000. */
  maxDepth?: number;
  /**
   * Most memo entries. Default: the pickle's length in bytes (each entry takes an opcode, so memory
   * stays bounded by the input), at least 1 000 000. numpy memoises every string of an object array.
   */
  maxMemo?: number;
  /** Most open MARKs at once. Default 10 000. */
  maxMarks?: number;
  /** Most bytes allocated for strings, bytes and array data together. Default 2 GiB. */
  maxBytes?: number;
}

/**
 * Reads and writes the pickle that follows an object-array (`|O`) header. The one npyts ships is
 * `pickleCodec` from `@npyts/core/pickle`, a separate entry so that code that never meets object
 * arrays does not bundle it.
 */
export interface ObjectArrayCodec {
  decode(bytes: Uint8Array, header: NpyHeader, limits?: UnpickleLimits): NdArray;
  encode(array: NdArray, version?: 1 | 2 | 3): { header: Uint8Array; body: Uint8Array };
}

/** Options of {@link decodeNpy}: copying, shared memory, header limits, the pickle codec and its limits. */
export interface DecodeOptions extends ReadHeaderOptions, UnpickleLimits {
  /** Copy the data even when it could be a zero-copy view of the input. */
  copy?: boolean;
  /** Place copied data in a SharedArrayBuffer. */
  shared?: boolean;
  /** Decode object arrays with this codec (opt-in: `{ pickle: pickleCodec }` from `@npyts/core/pickle`). */
  pickle?: ObjectArrayCodec | undefined;
}

/** The options {@link DecodeOptions} names (see `knownKeys`, options.ts). */
export const DECODE_KEYS = {
  maxHeaderBytes: true,
  expect: true,
  exactByteOrder: true,
  voidAs: true,
  maxDepth: true,
  maxMemo: true,
  maxMarks: true,
  maxBytes: true,
  copy: true,
  shared: true,
  pickle: true,
} as const satisfies KnownKeys<DecodeOptions>;
/** {@link DECODE_KEYS} as the set the entries that take only {@link DecodeOptions} check against. */
export const DECODE_KEY_SET: ReadonlySet<string> = knownKeys<DecodeOptions>(DECODE_KEYS);

const PICKLE_HINT =
  "to decode it safely, pass { pickle: pickleCodec } (import { pickleCodec } from '@npyts/core/pickle'), or { allowPickle: true } to loadNpy in Node, or --allow-pickle to the CLI; npyts never runs code from a pickle";

/**
 * Whether a dtype holds Python objects anywhere (then its data is a pickle).
 * @example
 * hasObject(parseDescr([['a', '<i4'], ['b', '|O']]));   // true
 */
export function hasObject(dtype: DType): boolean {
  const no = (): boolean => false;
  return matchDType(dtype, {
    record: (_, fields) => fields.some((f) => hasObject(f.dtype)),
    subarray: (_, base) => hasObject(base),
    object: () => true,
    bool: no,
    int: no,
    uint: no,
    float: no,
    mlfloat: no,
    complex: no,
    bytes: no,
    str: no,
    void: no,
    datetime: no,
    timedelta: no,
  });
}

/** A plain Uint8Array view of the input (never a Node Buffer, whose slice() does not copy). */
export function asBytes(input: Uint8Array | ArrayBufferLike): Uint8Array {
  if (input instanceof Uint8Array)
    return Object.getPrototypeOf(input) === Uint8Array.prototype ? input : new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  if (ArrayBuffer.isView(input)) {
    const v = input as ArrayBufferView;
    return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  }
  return new Uint8Array(input);
}

/** Check that the header's data can be read without a pickle codec and that all of it is present. */
export function checkDataPresent(header: NpyHeader, available: number): void {
  if (hasObject(header.dtype)) {
    throw new NpyError('PICKLE_UNSUPPORTED', `dtype ${header.dtype.descrLiteral} holds Python objects, stored as a pickle; ${PICKLE_HINT}`, {
      offset: header.dataOffset,
    });
  }
  checkDataSize(header, available);
}

/**
 * Check that `available` bytes after the header hold all the data it promises (a pickle's size is not known from the header).
 * @example
 * checkDataSize(header, fileSize - header.dataOffset);   // throws DATA_TRUNCATED when short
 */
export function checkDataSize(header: NpyHeader, available: number): void {
  if (hasObject(header.dtype)) return;
  if (available < header.dataBytes) {
    throw new NpyError(
      'DATA_TRUNCATED',
      `data is truncated: shape (${header.shape.join(', ')}) of ${header.dtype.str} needs ${header.dataBytes} bytes after the header, but only ${available} are present`,
      { offset: header.dataOffset + available },
    );
  }
}

/**
 * Whether an array has the dtype of a descr (byte order free unless `exactByteOrder`); narrows its type.
 * @example
 * const a = decodeNpy(bytes);
 * if (isDType(a, '<f8')) a.data;   // Float64Array
 */
export function isDType<const S extends DescrInput>(array: NdArray, descr: S, options: { exactByteOrder?: boolean } = {}): array is NdArray<S> {
  return matchesDescr(array.dtype, descr, options.exactByteOrder ?? false);
}

/** Options that name the expected dtype: the result is typed for it. */
export type Expecting<S extends DescrInput> = { expect: S };

/**
 * Decode a whole .npy held in memory. The result views the input's memory when it can.
 * @example
 * const a = decodeNpy(bytes, { expect: '<f4' });   // NdArray<'<f4'>: a.data is a Float32Array
 */
export function decodeNpy<const S extends DescrInput>(input: Uint8Array | ArrayBufferLike, options: DecodeOptions & Expecting<S>): NdArray<S>;
export function decodeNpy(input: Uint8Array | ArrayBufferLike, options?: DecodeOptions): NdArray;
export function decodeNpy(input: Uint8Array | ArrayBufferLike, options: DecodeOptions = {}): NdArray {
  checkOptions('decodeNpy', options, DECODE_KEY_SET);
  return decodeNpyWithHeader(input, options).array;
}

/**
 * decodeNpy, also returning the header it parsed (format version, data offset …).
 * @example
 * const { header, array } = decodeNpyWithHeader(bytes);
 * header.version;   // [1, 0]
 */
export function decodeNpyWithHeader<const S extends DescrInput>(
  input: Uint8Array | ArrayBufferLike,
  options: DecodeOptions & Expecting<S>,
): { header: NpyHeader; array: NdArray<S> };
export function decodeNpyWithHeader(input: Uint8Array | ArrayBufferLike, options?: DecodeOptions): { header: NpyHeader; array: NdArray };
export function decodeNpyWithHeader(input: Uint8Array | ArrayBufferLike, options: DecodeOptions = {}): { header: NpyHeader; array: NdArray } {
  checkOptions('decodeNpyWithHeader', options, DECODE_KEY_SET);
  const bytes = asBytes(input);
  const header = readHeaderOf(bytes, options);
  if (hasObject(header.dtype) && options.pickle) return { header, array: options.pickle.decode(bytes, header, options) };
  checkDataPresent(header, bytes.length - header.dataOffset);
  return { header, array: arrayOfData(header, bytes.buffer, bytes.byteOffset + header.dataOffset, options) };
}

/**
 * The array a header describes over its data at `byteOffset` of `buffer` (present in full: the caller
 * checked): a view where the layout allows, else a copy in native byte order (see bytesToData).
 * @example
 * const a = arrayOfData(header, body.buffer, 0, { owned: true });   // the data buffer becomes the array's
 */
export function arrayOfData(header: NpyHeader, buffer: ArrayBufferLike, byteOffset: number, options: BytesToDataOptions = {}): NdArray {
  const data = bytesToData(header.dtype, buffer, byteOffset, header.size, options);
  return new NdArray(header.dtype, header.shape, data, header.fortranOrder ? 'F' : 'C');
}

/** What encodeNpy accepts besides an NdArray: typed data with a shape, or plain values with a dtype. */
export interface ArraySpec {
  data: ArrayData | ArrayLike<unknown>;
  shape?: readonly number[];
  dtype?: DType | string;
  order?: Order;
}

/**
 * The numeric dtype numpy gives each typed array, with the typed array of its storage (storageOf
 * holds that fact; where two dtypes share a storage, as `u2` and `f2` do, the first named wins).
 */
const TYPED_DTYPES: [Function, string][] = [
  ...['f8', 'f4', 'i1', 'u1', 'i2', 'u2', 'i4', 'u4', 'i8', 'u8'].map((code): [Function, string] => [storageOf(parseDescr(code)).ctor, code]),
  [Uint8ClampedArray, 'u1'],
];

/**
 * The dtype numpy would give a typed array of this kind (native byte order).
 * @example
 * dtypeOfTypedArray(new Float32Array(2))?.str;   // '<f4'
 */
export function dtypeOfTypedArray(data: ArrayLike<unknown>): DType | null {
  const hit = TYPED_DTYPES.find(([ctor]) => data instanceof (ctor as new () => unknown));
  return hit ? parseDescr(hit[1]) : null;
}

/**
 * The array over data already swapped to native byte order at `byteOffset` of a buffer the caller
 * owns: a view when aligned (a copy otherwise).
 * @example
 * const a = arrayOverNative(header, buffer, 0, {});
 */
export function arrayOverNative(header: NpyHeader, buffer: ArrayBufferLike, byteOffset: number, options: DecodeOptions): NdArray {
  const data = bytesToData(header.dtype.withByteOrder('='), buffer, byteOffset, header.size, { ...options, owned: true, copy: false });
  return new NdArray(header.dtype, header.shape, data, header.fortranOrder ? 'F' : 'C');
}

/**
 * Turn an {@link ArraySpec} into an NdArray, reusing typed data without copying.
 * @example
 * toNdArray({ data: new Int16Array([1, 2, 3, 4]), shape: [2, 2] }).dtype.str;   // '<i2'
 */
export function toNdArray(input: NdArray | ArraySpec): NdArray {
  if (input instanceof NdArray) return input;
  if (ArrayBuffer.isView(input) || Array.isArray(input)) {
    throw new NpyError(
      'BAD_VALUE',
      'an array is an NdArray or { data, shape, dtype? }, not a bare typed array or list: pass { data, shape: [data.length] } or arrayFromValues(list, dtype)',
    );
  }
  if (isStdlibNdarray(input)) {
    throw new NpyError(
      'BAD_VALUE',
      "this is a @stdlib ndarray, not an NdArray or { data, shape, dtype? }: convert it with fromStdlib(x) from '@npyts/stdlib' (it keeps strides, offset and order)",
    );
  }
  const { data } = input;
  const dtype = input.dtype !== undefined ? parseDescr(input.dtype) : dtypeOfTypedArray(data);
  if (!dtype) throw new NpyError('BAD_OPTION', 'a dtype is needed for data that is not a typed array');
  if (ArrayBuffer.isView(data) && !(data instanceof DataView)) {
    const typed = data as TypedArray;
    const { ctor, unitsPerItem } = storageOf(dtype);
    const shape = input.shape ?? [typed.length / unitsPerItem];
    // Data of the storage's own kind is used as is; other typed data is re-read value by value.
    if (typed instanceof ctor && !(ctor === Uint8Array && typed instanceof Uint8ClampedArray)) {
      return new NdArray(dtype, shape, typed, input.order ?? 'C');
    }
    if (unitsPerItem !== 1 || (dtype.kind === 'f' && dtype.itemsize !== 4 && dtype.itemsize !== 8) || dtype.mlFloat) {
      throw new NpyError('DTYPE_MISMATCH', `${typed.constructor.name} cannot hold ${dtype.str} data; use ${ctor.name}`);
    }
    return converted(Array.from(typed as ArrayLike<number>), dtype, shape, input.order);
  }
  const values = Array.from(data as ArrayLike<unknown>);
  if (dtype.kind === 'O') return new NdArray(dtype, input.shape ?? [values.length], values, input.order ?? 'C');
  return converted(values, dtype, input.shape ?? [values.length], input.order);
}

/** A @stdlib/ndarray ndarray, told by its own properties (its class is stdlib's, not imported here). */
function isStdlibNdarray(x: object): boolean {
  return (
    ['dtype', 'shape', 'strides', 'offset', 'order', 'data'].every((k) => k in x) &&
    typeof (x as { order: unknown }).order === 'string' &&
    (x as { order: string }).order.endsWith('-major')
  );
}

function converted(values: unknown[], dtype: DType, shape: readonly number[], order: Order | undefined): NdArray {
  if (values.length !== shapeSize(shape)) {
    throw new NpyError('SHAPE_MISMATCH', `${values.length} values do not fill shape (${shape.join(', ')})`);
  }
  // Values are in memory order already; build them flat, then label the order.
  const flat = arrayFromValues(values, dtype, { shape: [values.length] });
  return new NdArray(dtype, shape, flat.data, order ?? 'C');
}

/** Options of {@link encodeNpy}: the format version, and the pickle codec for object arrays. */
export interface EncodeOptions {
  /** Force a format version; by default numpy's choice (1.0, else 2.0 if too long, else 3.0). */
  version?: 1 | 2 | 3;
  /** Encode object arrays with this codec (`pickleCodec` from `@npyts/core/pickle`). */
  pickle?: ObjectArrayCodec | undefined;
}

/** The options {@link EncodeOptions} names. */
export const ENCODE_KEYS = { version: true, pickle: true } as const satisfies KnownKeys<EncodeOptions>;
/** {@link ENCODE_KEYS} as a set. */
export const ENCODE_KEY_SET: ReadonlySet<string> = knownKeys<EncodeOptions>(ENCODE_KEYS);

/**
 * The header and the data bytes of an encoded .npy, kept apart so that files can be written without a joined copy.
 * @example
 * const { header, body } = encodeNpyParts(array);   // write both without joining them
 */
export function encodeNpyParts(input: NdArray | ArraySpec, options: EncodeOptions = {}): { header: Uint8Array; body: Uint8Array } {
  const array = toNdArray(input);
  if (hasObject(array.dtype)) {
    if (options.pickle) return options.pickle.encode(array, options.version);
    throw new NpyError('PICKLE_UNSUPPORTED', "object arrays are written as a Python pickle: pass { pickle: pickleCodec } from '@npyts/core/pickle'");
  }
  return { header: headerFor(array, options), body: dataToBytes(array.dtype, array.data as TypedArray) };
}

/** numpy's header for an array: fortran_order=True only for arrays that are F- and not C-contiguous. */
function headerFor(array: NdArray, options: EncodeOptions): Uint8Array {
  return encodeHeader(array.dtype, array.shape, array.order === 'F' && !isOrderFree(array.shape), options.version);
}

/**
 * Bytes swapped in one piece of {@link encodeNpyPieces}: about a millisecond of plain JavaScript on a
 * slow core, so that an async save gives the event loop a turn that often (a write step follows each).
 */
const SWAP_PIECE = 1 << 20;

/**
 * {@link encodeNpyParts} in pieces: the header first, then the data. Native-order data is one piece,
 * a view of the array's memory (no copy; the writer splits it as its medium needs, and fewer, larger
 * writes are faster). Another byte order comes as swapped copies of at most `pieceBytes`, each in a
 * buffer reused for the next one (consume each piece before asking for the next), so that no step
 * converts a whole large array at once.
 */
export function* encodeNpyPieces(input: NdArray | ArraySpec, options: EncodeOptions = {}, pieceBytes = SWAP_PIECE): Generator<Uint8Array> {
  const array = toNdArray(input);
  if (hasObject(array.dtype)) {
    const { header, body } = encodeNpyParts(array, options);
    yield header;
    yield body;
    return;
  }
  yield headerFor(array, options);
  const data = array.data as TypedArray;
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const swapUnit = byteSwapUnit(array.dtype);
  // A multiple of 16 bytes, so that no swapped group (a long double is 16 bytes) is cut.
  const step = Math.max(16, Math.floor(pieceBytes / 16) * 16);
  if (!swapUnit) {
    if (bytes.length) yield bytes;
    return;
  }
  // Another byte order: each piece is swapped in one scratch buffer, reused for the next piece
  // (no garbage for the collector to pause over), so a piece is valid until the next is asked for.
  const scratch = new Uint8Array(Math.min(step, bytes.length));
  for (let at = 0; at < bytes.length; at += step) {
    const piece = scratch.subarray(0, Math.min(step, bytes.length - at));
    swapBytesInto(bytes.subarray(at, at + piece.length), piece, swapUnit);
    yield piece;
  }
}

/**
 * Encode an array as the bytes numpy's `np.save` writes for it.
 * @example
 * const bytes = encodeNpy({ data: new Float32Array([1, 2, 3, 4]), shape: [2, 2] });
 */
export function encodeNpy(input: NdArray | ArraySpec, options: EncodeOptions = {}): Uint8Array {
  checkOptions('encodeNpy', options, ENCODE_KEY_SET);
  const { header, body } = encodeNpyParts(input, options);
  const out = new Uint8Array(allocateBuffer(header.length + body.length));
  out.set(header, 0);
  out.set(body, header.length);
  return out;
}
