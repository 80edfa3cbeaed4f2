/** Reading one element as a JavaScript value, from typed data or from raw stored bytes. */
import { putOwn } from './safe-object.js';
import type { DType } from '../format/dtype.js';
import { matchDType, perDType } from '../format/dtype-cases.js';
import { NpyError } from '../errors.js';
import { float16ToNumber, longDoubleToNumber } from '../format/float-bits.js';
import { mlFloatToNumber } from '../format/ml-floats.js';
import type { ArrayData, Complex, TypedArray } from '../format/js-types.js';

/**
 * One element as JS: bool → boolean; ints ≤ 32 bits and floats → number; 64-bit ints and
 * datetime/timedelta counts → bigint; complex → {re, im}; S → bytes (trailing NULs stripped);
 * U → string (trailing NULs stripped); V → bytes; records → {field: value}; subarrays → nested arrays.
 */
export type Scalar = number | bigint | boolean | string | Uint8Array | Complex | null | ScalarRecord | Scalar[] | unknown;
/** One record element as a JavaScript object: field name → value (nested records as objects). */
export interface ScalarRecord {
  [field: string]: Scalar;
}

export { NOT_A_TIME } from '../format/datetime-text.js';

function codePointsToString(get: (k: number) => number, n: number): string {
  let end = n;
  while (end > 0 && get(end - 1) === 0) end--;
  let s = '';
  for (let k = 0; k < end; k++) {
    const cp = get(k);
    if (cp > 0x10ffff) throw new NpyError('BAD_DATA', `unicode element holds an invalid code point 0x${cp.toString(16)}`);
    s += String.fromCodePoint(cp);
  }
  return s;
}

function trimNuls(bytes: Uint8Array): Uint8Array {
  let end = bytes.length;
  while (end > 0 && bytes[end - 1] === 0) end--;
  return bytes.slice(0, end);
}

/**
 * The element at memory position `i` (in items) of typed data in native byte order.
 * @example
 * readItem(a.dtype, a.data, 0);   // the first element in memory order
 */
export function readItem(dtype: DType, data: ArrayData, i: number): Scalar {
  if (Array.isArray(data)) return data[i];
  return itemReaderOf(dtype)(data, i);
}

/** Reads element `i` of an array's data (typed in native order, or raw bytes for the kinds kept as bytes). */
type ItemReader = (data: ArrayData, i: number) => Scalar;

const itemReaderOf = perDType((dtype) => makeItemReader(dtype));

function makeItemReader(dtype: DType): ItemReader {
  const size = dtype.itemsize;
  // Records, subarrays, bytes and void are held as stored bytes; long doubles as bytes in native order.
  const fromBytes =
    (stored: DType): ItemReader =>
    (data, i) =>
      readFromBytes(stored, data as Uint8Array, i * size);
  const typed: ItemReader = (data, i) => (data as TypedArray)[i]!;
  return matchDType<ItemReader>(dtype, {
    record: fromBytes,
    subarray: fromBytes,
    bytes: fromBytes,
    void: fromBytes,
    float: (dt) => (size === 16 ? fromBytes(dt.withByteOrder('=')) : size === 2 ? (data, i) => float16ToNumber((data as Uint16Array)[i]!) : typed),
    complex: (dt) =>
      size === 32 ? fromBytes(dt.withByteOrder('=')) : (data, i) => ({ re: (data as Float32Array)[2 * i]!, im: (data as Float32Array)[2 * i + 1]! }),
    bool: () => (data, i) => (data as Uint8Array)[i] !== 0,
    mlfloat: (dt) => (data, i) => mlFloatToNumber(dt.mlFloat!, (data as Uint16Array | Uint8Array)[i]!),
    str: () => (data, i) => codePointsToString((k) => (data as Uint32Array)[i * (size / 4) + k]!, size / 4),
    int: () => typed,
    uint: () => typed,
    datetime: () => typed,
    timedelta: () => typed,
    object: () => typed,
  });
}

const scratch16 = new Uint8Array(16);

/**
 * The element stored at `at` in raw bytes, honouring the dtype's byte order.
 * @example
 * readFromBytes(parseDescr('>u2'), new Uint8Array([1, 2]), 0);   // 258
 */
export function readFromBytes(dtype: DType, bytes: Uint8Array, at: number): Scalar {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return readAt(dtype, view, bytes, at);
}

/** Reads one element of a dtype from raw bytes. */
type Reader = (view: DataView, bytes: Uint8Array, at: number) => Scalar;

const readerOf = perDType((dtype) => makeReader(dtype));

function readAt(dtype: DType, view: DataView, bytes: Uint8Array, at: number): Scalar {
  return readerOf(dtype)(view, bytes, at);
}

function makeReader(dtype: DType): Reader {
  const le = dtype.byteOrder !== '>';
  const size = dtype.itemsize;
  return matchDType<Reader>(dtype, {
    record: (_, fields) => (view, bytes, at) => {
      const rec: ScalarRecord = {};
      for (const f of fields) putOwn(rec, f.name, readAt(f.dtype, view, bytes, at + f.offset));
      return rec;
    },
    subarray: (_, base, shape) => (view, bytes, at) => {
      const nest = (axis: number, pos: number): Scalar[] => {
        const out: Scalar[] = [];
        let step = base.itemsize;
        for (let a = axis + 1; a < shape.length; a++) step *= shape[a]!;
        for (let k = 0; k < shape[axis]!; k++) {
          out.push(axis === shape.length - 1 ? readAt(base, view, bytes, pos + k * step) : nest(axis + 1, pos + k * step));
        }
        return out;
      };
      return nest(0, at);
    },
    bool: () => (_, bytes, at) => bytes[at] !== 0,
    int: () =>
      size === 1
        ? (v, _, at) => v.getInt8(at)
        : size === 2
          ? (v, _, at) => v.getInt16(at, le)
          : size === 4
            ? (v, _, at) => v.getInt32(at, le)
            : (v, _, at) => v.getBigInt64(at, le),
    uint: () =>
      size === 1
        ? (v, _, at) => v.getUint8(at)
        : size === 2
          ? (v, _, at) => v.getUint16(at, le)
          : size === 4
            ? (v, _, at) => v.getUint32(at, le)
            : (v, _, at) => v.getBigUint64(at, le),
    float: () => (view, bytes, at) => readFloat(size, view, bytes, at, le),
    mlfloat: (dt) =>
      size === 2 ? (view, _, at) => mlFloatToNumber(dt.mlFloat!, view.getUint16(at, le)) : (_, bytes, at) => mlFloatToNumber(dt.mlFloat!, bytes[at]!),
    complex: () => (view, bytes, at) => ({ re: readFloat(size / 2, view, bytes, at, le), im: readFloat(size / 2, view, bytes, at + size / 2, le) }),
    datetime: () => (view, _, at) => view.getBigInt64(at, le),
    timedelta: () => (view, _, at) => view.getBigInt64(at, le),
    bytes: () => (_, bytes, at) => trimNuls(bytes.subarray(at, at + size)),
    void: () => (_, bytes, at) => bytes.slice(at, at + size),
    str: () => (view, _, at) => codePointsToString((k) => view.getUint32(at + 4 * k, le), size / 4),
    object: () => () => {
      throw new NpyError('PICKLE_UNSUPPORTED', 'object fields cannot be read from raw bytes');
    },
  });
}

function readFloat(size: number, view: DataView, bytes: Uint8Array, at: number, le: boolean): number {
  if (size === 2) return float16ToNumber(view.getUint16(at, le));
  if (size === 4) return view.getFloat32(at, le);
  if (size === 8) return view.getFloat64(at, le);
  if (le) return longDoubleToNumber(bytes, at);
  for (let k = 0; k < 16; k++) scratch16[k] = bytes[at + 15 - k]!;
  return longDoubleToNumber(scratch16, 0);
}
