/** Reading one element as a JavaScript value, from typed data or from raw stored bytes. */
import { putOwn } from './safe-object.js';
import type { DType } from '../format/dtype.js';
import { matchDType, perDType } from '../format/dtype-cases.js';
import { NpyError } from '../errors.js';
import { float16ToNumber, longDoubleToNumber } from '../format/float-bits.js';
import { mlFloatToNumber } from '../format/ml-floats.js';
import { longDoubleExact, type ExactFloat } from '../format/float-text.js';
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

/**
 * {@link readItem} with every x86 long double (`f16`, each part of `c32`, inside records and
 * subarrays too) as its exact value (`longDoubleExact`: a number where it is zero, infinite or NaN,
 * an `ExactFloat` otherwise), for what is printed, written as text or compared: read as a float64, a
 * long double past its range or precision would be silently wrong (numpy prints each at its own 64
 * bits, whatever its range). Other elements as readItem gives them.
 * @example
 * readExactItem(a.dtype, a.data, 0);   // { neg: false, mant, exp2: 1265, bits: 64 } for np.longdouble('1e400')
 */
export function readExactItem(dtype: DType, data: ArrayData, i: number): Scalar | ExactFloat {
  if (!holdsLongDouble(dtype)) return readItem(dtype, data, i);
  // An array's plain long doubles are held in native (little-endian) order, whatever the file's
  // (reading swaps them); a record's and a subarray's bytes are held as stored.
  const plain = !dtype.fields && !dtype.subarray;
  return exactFromBytes(plain ? dtype.withByteOrder('<') : dtype, data as Uint8Array, i * dtype.itemsize);
}

/** Whether a dtype holds an x86 long double anywhere (itself, a complex's part, a field, a subarray's element). */
export function holdsLongDouble(dtype: DType): boolean {
  if (dtype.fields) return dtype.fields.some((f) => holdsLongDouble(f.dtype));
  if (dtype.subarray) return holdsLongDouble(dtype.subarray.base);
  return dtype.realBytes === 16;
}

/** The element of `dtype` stored at byte `at`, long doubles exactly (see {@link readExactItem}). */
function exactFromBytes(dtype: DType, bytes: Uint8Array, at: number): Scalar | ExactFloat {
  if (dtype.fields) {
    const rec: ScalarRecord = {};
    for (const f of dtype.fields) putOwn(rec, f.name, exactFromBytes(f.dtype, bytes, at + f.offset));
    return rec;
  }
  if (dtype.subarray) {
    const { base, shape } = dtype.subarray;
    const nest = (axis: number, from: number): unknown[] => {
      const step = shape.slice(axis + 1).reduce((p, d) => p * d, base.itemsize);
      return Array.from({ length: shape[axis]! }, (_, k) =>
        axis === shape.length - 1 ? exactFromBytes(base, bytes, from + k * step) : nest(axis + 1, from + k * step),
      );
    };
    return nest(0, at);
  }
  if (dtype.realBytes !== 16) return readFromBytes(dtype, bytes, at);
  const part = (p: number): number | ExactFloat => (dtype.byteOrder === '>' ? longDoubleExact(bytes.slice(p, p + 16).reverse(), 0) : longDoubleExact(bytes, p));
  return dtype.itemsize === 16 ? part(at) : { re: part(at), im: part(at + 16) };
}
