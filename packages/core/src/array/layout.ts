/** How each dtype's elements are held in JavaScript memory, and the byte-level moves in and out. */
import { NpyError } from '../errors.js';
import type { DType } from '../format/dtype.js';
import { matchDType } from '../format/dtype-cases.js';
import { copyBytes, copySwapped, swapBytes } from './memory.js';
import type { TypedArray, TypedArrayConstructor } from '../format/js-types.js';

/** How a dtype's elements are held in memory: the typed array, how many of its units make one item, and the byte group swapped for another byte order. */
export interface Storage {
  /** The typed array that holds the data. */
  ctor: TypedArrayConstructor;
  /** Typed-array elements per array item: 2 for complex, itemsize for raw bytes, characters for U. */
  unitsPerItem: number;
  /** Size of the byte groups that reverse between byte orders; 0 when the bytes are kept raw. */
  swapUnit: number;
}

/**
 * The storage of each dtype:
 * b1 Uint8Array (0/1); i1–u8 the matching typed array; f2 Uint16Array of the half-float bits;
 * f4/f8 Float32Array/Float64Array; c8/c16 interleaved re, im; M8/m8 BigInt64Array counts;
 * U Uint32Array code points; f16/c32 (x86 long double) native-order raw bytes;
 * S, V, records and subarrays raw bytes as stored (record fields keep their own byte order).
 * @example
 * storageOf(parseDescr('<U3'));   // { ctor: Uint32Array, unitsPerItem: 3, swapUnit: 4 }
 */
export function storageOf(dtype: DType): Storage {
  const rawBytes = (dt: DType): Storage => ({ ctor: Uint8Array, unitsPerItem: dt.itemsize, swapUnit: 0 });
  const counts = (): Storage => ({ ctor: BigInt64Array, unitsPerItem: 1, swapUnit: 8 });
  const integer = (dt: DType): Storage => {
    const signed = dt.kind === 'i';
    const ctor = (
      {
        1: signed ? Int8Array : Uint8Array,
        2: signed ? Int16Array : Uint16Array,
        4: signed ? Int32Array : Uint32Array,
        8: signed ? BigInt64Array : BigUint64Array,
      } as Record<number, TypedArrayConstructor>
    )[dt.itemsize]!;
    return { ctor, unitsPerItem: 1, swapUnit: dt.itemsize };
  };
  return matchDType<Storage>(dtype, {
    record: rawBytes,
    subarray: rawBytes,
    bytes: rawBytes,
    void: rawBytes,
    bool: () => ({ ctor: Uint8Array, unitsPerItem: 1, swapUnit: 0 }),
    str: (dt) => ({ ctor: Uint32Array, unitsPerItem: dt.itemsize / 4, swapUnit: 4 }),
    datetime: counts,
    timedelta: counts,
    int: integer,
    uint: integer,
    float: (dt) => {
      if (dt.itemsize === 2) return { ctor: Uint16Array, unitsPerItem: 1, swapUnit: 2 };
      if (dt.itemsize === 4) return { ctor: Float32Array, unitsPerItem: 1, swapUnit: 4 };
      if (dt.itemsize === 8) return { ctor: Float64Array, unitsPerItem: 1, swapUnit: 8 };
      return { ctor: Uint8Array, unitsPerItem: 16, swapUnit: 16 };
    },
    // Narrow floats are kept as their bits: exact, and what the formats that hold them store.
    mlfloat: (dt) => (dt.itemsize === 2 ? { ctor: Uint16Array, unitsPerItem: 1, swapUnit: 2 } : { ctor: Uint8Array, unitsPerItem: 1, swapUnit: 0 }),
    complex: (dt) => {
      if (dt.itemsize === 8) return { ctor: Float32Array, unitsPerItem: 2, swapUnit: 4 };
      if (dt.itemsize === 16) return { ctor: Float64Array, unitsPerItem: 2, swapUnit: 8 };
      return { ctor: Uint8Array, unitsPerItem: 32, swapUnit: 16 };
    },
    object: () => {
      throw new NpyError('PICKLE_UNSUPPORTED', 'object arrays (|O) are stored as a Python pickle, which this build of npyts does not decode');
    },
  });
}

/**
 * The byte group reversed to bring this dtype's stored bytes to this machine's order, or 0 when they
 * are in it already (or have no order): the one rule of "needs a byte swap".
 * @example
 * byteSwapUnit(parseDescr('>f8'));   // 8 on a little-endian machine
 */
export function byteSwapUnit(dtype: DType): number {
  const { swapUnit } = storageOf(dtype);
  return swapUnit > 1 && !dtype.isNative ? swapUnit : 0;
}

export interface BytesToDataOptions {
  /** Always copy, even when a zero-copy view is possible. */
  copy?: boolean;
  /** Where copies are allocated: a SharedArrayBuffer lets worker_threads share the array. */
  shared?: boolean;
  /** The caller owns `buffer` and nothing else reads it: byte-swap it in place instead of copying. */
  owned?: boolean;
}

/**
 * Why bytes of `dtype` at `byteOffset` of a buffer cannot be its array's data as they are (a byte
 * swap, an offset not aligned to the element size), or null where they can: where a memory-mapped
 * tensor is copied rather than viewed, as {@link bytesToData} decides.
 * @example
 * copyReason(parseDescr('<f4'), 6);   // 'its data starts at byte 6, not a multiple of 4 (Float32Array)'
 */
export function copyReason(dtype: DType, byteOffset: number): string | null {
  if (byteSwapUnit(dtype)) return `its data is ${dtype.byteOrder === '>' ? 'big' : 'little'}-endian and is byte-swapped`;
  const { ctor } = storageOf(dtype);
  if (byteOffset % ctor.BYTES_PER_ELEMENT !== 0) return `its data starts at byte ${byteOffset}, not a multiple of ${ctor.BYTES_PER_ELEMENT} (${ctor.name})`;
  return null;
}

/**
 * Element data for `count` items of `dtype` stored at `byteOffset` of `buffer`: a zero-copy view
 * when the bytes are native-endian and aligned, a native-endian copy otherwise.
 * @example
 * const data = bytesToData(parseDescr('>f8'), bytes.buffer, 128, 10);   // Float64Array, native order
 */
export function bytesToData(dtype: DType, buffer: ArrayBufferLike, byteOffset: number, count: number, options: BytesToDataOptions = {}): TypedArray {
  const { ctor, unitsPerItem } = storageOf(dtype);
  const units = count * unitsPerItem;
  const swapUnit = byteSwapUnit(dtype);
  const needsSwap = swapUnit > 0;
  const bpe = ctor.BYTES_PER_ELEMENT;
  const sharedOk = !options.shared || (typeof SharedArrayBuffer !== 'undefined' && buffer instanceof SharedArrayBuffer);
  const aligned = byteOffset % bpe === 0;
  if (!options.copy && !needsSwap && aligned && sharedOk) {
    return new ctor(buffer, byteOffset, units);
  }
  if (options.owned && aligned && sharedOk) {
    if (needsSwap) swapBytes(new Uint8Array(buffer, byteOffset, units * bpe), swapUnit);
    return new ctor(buffer, byteOffset, units);
  }
  const src = new Uint8Array(buffer, byteOffset, units * bpe);
  const out = needsSwap ? copySwapped(src, swapUnit, options.shared) : copyBytes(src, options.shared);
  return new ctor(out.buffer, 0, units);
}

/**
 * The bytes of `data` as the file stores them for `dtype`: a view when native, a swapped copy otherwise.
 * @example
 * dataToBytes(parseDescr('>i4'), new Int32Array([1]));   // Uint8Array [0, 0, 0, 1]
 */
export function dataToBytes(dtype: DType, data: TypedArray): Uint8Array {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const { swapUnit } = storageOf(dtype);
  if (swapUnit <= 1 || dtype.isNative) return bytes;
  return copySwapped(bytes, swapUnit);
}
