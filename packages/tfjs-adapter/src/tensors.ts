/** Arrays as tfjs tensors and back: the dtype rules between numpy and tfjs. */
import * as tf from '@tensorflow/tfjs-core';
import { unicodeWidth } from '@npyts/core/plumbing';
import {
  NdArray,
  NpyError,
  arrayFromValues,
  familyOf,
  toFloat32,
  matchDType,
  parseDescr,
  readItem,
  toOrder,
  type DType,
  type TypedArray,
  type DescrInput,
  type FamilyOf,
  type KindFamily,
} from '@npyts/core';

/** Options of {@link toTensor}: how 64-bit integers and other dtypes without a tfjs counterpart convert. */
export interface ToTensorOptions {
  /** float64 (and complex128, long double): 'float32' converts (the default, as tfjs users expect for weights); 'refuse' throws. */
  float64?: 'float32' | 'refuse';
  /**
   * uint32, int64 and uint64 become int32: 'check' (default) refuses the first value that does not
   * fit, 'wrap' keeps the low 32 bits, 'clamp' saturates.
   */
  int64?: 'check' | 'wrap' | 'clamp';
}

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

function toInt32(array: NdArray, mode: 'check' | 'wrap' | 'clamp'): Int32Array {
  const src = array.data as TypedArray;
  const out = new Int32Array(src.length);
  const big = typeof src[0] === 'bigint';
  for (let i = 0; i < src.length; i++) {
    const v = src[i]!;
    const n = big ? Number(v as bigint) : (v as number);
    if (n >= INT32_MIN && n <= INT32_MAX) {
      out[i] = n;
      continue;
    }
    if (mode === 'check') {
      throw new NpyError(
        'NOT_REPRESENTABLE',
        `${array.dtype.name} value ${v} at flat index ${i} does not fit int32; pass { int64: 'wrap' } or { int64: 'clamp' } to convert anyway`,
      );
    }
    out[i] = mode === 'wrap' ? (big ? Number(BigInt.asIntN(32, v as bigint)) : n | 0) : n < 0 ? INT32_MIN : INT32_MAX;
  }
  return out;
}

/**
 * Refuse, under `{ float64: 'refuse' }`, an array that float32 would round (float64, complex128, long
 * double): the one place of that rule, for tensors made from an array and for weights summed or
 * repeated from several (an LSTM's two biases).
 */
export function checkFloat64(array: NdArray, options: ToTensorOptions): void {
  const family = familyOf(array.dtype);
  if (options.float64 === 'refuse' && (family === 'float' || family === 'complex') && array.dtype.realBytes > 4) {
    throw new NpyError('NOT_REPRESENTABLE', `${array.dtype.name} would be rounded to float32 for tfjs; refused by { float64: 'refuse' }`);
  }
}

function floatsOf(array: NdArray, options: ToTensorOptions): Float32Array {
  const dt = array.dtype;
  if (dt.realBytes === 4) return array.data as Float32Array;
  // float16, bfloat16 and float8 are widened exactly.
  if (dt.realBytes === 2 || familyOf(dt) === 'mlfloat') return toFloat32(array).data;
  checkFloat64(array, options);
  if (dt.realBytes === 8) return Float32Array.from(array.data as Float64Array);
  // x86 long double, held as raw bytes: read each value, then round to float32.
  const complex = familyOf(dt) === 'complex';
  const n = complex ? array.size * 2 : array.size;
  const out = new Float32Array(n);
  for (let i = 0; i < array.size; i++) {
    const v = readItem(dt, array.data, i);
    if (complex) {
      out[2 * i] = (v as { re: number }).re;
      out[2 * i + 1] = (v as { im: number }).im;
    } else out[i] = v as number;
  }
  return out;
}

/** The tfjs dtype of a descr's tensor: float32 for every float, int32 for integers, bool, complex64, string; never for what has none. */
export type TensorDTypeOf<S> =
  FamilyOf<S> extends 'float' | 'mlfloat'
    ? 'float32'
    : FamilyOf<S> extends 'int' | 'uint'
      ? 'int32'
      : FamilyOf<S> extends 'bool'
        ? 'bool'
        : FamilyOf<S> extends 'complex'
          ? 'complex64'
          : FamilyOf<S> extends 'str' | 'bytes'
            ? 'string'
            : KindFamily extends FamilyOf<S>
              ? tf.DataType
              : never;

/** A tfjs tensor whose `dtype` is known from the descr. */
export type TensorOf<S> = [TensorDTypeOf<S>] extends [never] ? never : tf.Tensor & { readonly dtype: TensorDTypeOf<S> };

/** A tensor's worth of values in the layout tfjs takes them (complex interleaved, strings as bytes). */
export type TensorValues =
  | { dtype: 'float32' | 'complex64'; values: Float32Array }
  | { dtype: 'int32'; values: Int32Array }
  | { dtype: 'bool'; values: Uint8Array }
  | { dtype: 'string'; values: Uint8Array[] };

const utf8Encoder = new TextEncoder();

/** The dtypes tfjs stores weights in. */
export type WeightDType = 'float32' | 'int32' | 'bool' | 'complex64' | 'string';

/**
 * The tfjs dtype an array of this dtype becomes, or an error saying why it has none: the one table
 * of this package's dtype rules (floats → float32, integers → int32, text and bytes → string).
 * @example
 * tensorDTypeOf(parseDescr('<i8'));   // 'int32'
 */
export function tensorDTypeOf(dt: DType): WeightDType {
  const none = (what: string) => (): never => {
    throw new NpyError('NO_COUNTERPART', what);
  };
  const noTensor = none(`${dt.name} arrays have no tfjs dtype`);
  const records = none('record arrays have no tfjs dtype; convert one field (getField) at a time');
  return matchDType<WeightDType>(dt, {
    record: records,
    subarray: records,
    object: noTensor,
    datetime: noTensor,
    timedelta: noTensor,
    void: noTensor,
    bool: () => 'bool',
    float: () => 'float32',
    mlfloat: () => 'float32',
    complex: () => 'complex64',
    int: () => 'int32',
    uint: () => 'int32',
    str: () => 'string',
    bytes: () => 'string',
  });
}

/**
 * An array's values as tfjs holds them, row-major: complex interleaved, text as UTF-8 bytes. float32
 * and int32 C-order data is returned as is; other integers are converted by the `int64` policy,
 * other floats by the `float64` one.
 * @example
 * const { dtype, values } = tensorValues(a);   // 'float32', Float32Array
 */
export function tensorValues(array: NdArray, options: ToTensorOptions = {}): TensorValues {
  const dt = array.dtype;
  const dtype = tensorDTypeOf(dt);
  const c = toOrder(array, 'C');
  switch (dtype) {
    case 'bool':
      return { dtype, values: c.data as Uint8Array };
    case 'float32':
    case 'complex64':
      return { dtype, values: floatsOf(c, options) };
    case 'int32': {
      if (familyOf(dt) === 'int' && dt.itemsize === 4) return { dtype, values: c.data as Int32Array };
      if (dt.itemsize <= 2) return { dtype, values: Int32Array.from(c.data as ArrayLike<number>) };
      return { dtype, values: toInt32(c, options.int64 ?? 'check') };
    }
    case 'string': {
      const text = familyOf(dt) === 'str';
      return {
        dtype,
        values: Array.from({ length: c.size }, (_, i) => {
          const v = readItem(dt, c.data, i);
          return text ? utf8Encoder.encode(v as string) : (v as Uint8Array);
        }),
      };
    }
  }
}

/**
 * A tensor with the array's values, row-major (Fortran order is reordered with npyts' blocked copy,
 * never tf.transpose). float32 and int32 data is handed to tfjs without another copy (tfjs copies
 * bool input itself).
 * @example
 * const t = toTensor(await loadNpy('w.npy', { expect: '<f4' }));   // t.dtype: 'float32'
 */
export function toTensor<S extends DescrInput>(array: NdArray<S>, options?: ToTensorOptions): TensorOf<S>;
export function toTensor(array: NdArray, options: ToTensorOptions = {}): tf.Tensor {
  const shape = array.shape;
  const v = tensorValues(array, options);
  switch (v.dtype) {
    case 'complex64': {
      const n = v.values.length / 2;
      const re = new Float32Array(n);
      const im = new Float32Array(n);
      for (let i = 0; i < n; i++) {
        re[i] = v.values[2 * i]!;
        im[i] = v.values[2 * i + 1]!;
      }
      return tf.complex(tf.tensor(re, shape, 'float32'), tf.tensor(im, shape, 'float32'));
    }
    case 'string':
      return tf.tensor(v.values, shape, 'string');
    default:
      return tf.tensor(v.values, shape, v.dtype);
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * tfjs strings (bytes) as numpy text (`<U`, when every one is UTF-8) or else bytes (`|S`).
 * @example
 * stringArray([new TextEncoder().encode('ab')], [1]).dtype.str;   // '<U2'
 */
export function stringArray(raw: Uint8Array[], shape: readonly number[]): NdArray {
  try {
    const strings = raw.map((b) => utf8.decode(b));
    return arrayFromValues(strings, `<U${unicodeWidth(strings)}`, { shape: [...shape] });
  } catch {
    let width = 1;
    for (const b of raw) width = Math.max(width, b.length);
    return arrayFromValues(raw, `|S${width}`, { shape: [...shape] });
  }
}

/**
 * The tensor's values as an NdArray of the matching numpy dtype (float32 → <f4, int32 → <i4, bool → |b1, complex64 → <c8, string → <U or |S).
 * @example
 * const a = await fromTensor(tf.ones([2, 2]));   // NdArray of '<f4'
 */
export async function fromTensor(t: tf.Tensor): Promise<NdArray> {
  const shape = [...t.shape];
  switch (t.dtype) {
    case 'float32':
      return new NdArray(parseDescr('<f4'), shape, Float32Array.from((await t.data()) as Float32Array), 'C');
    case 'int32':
      return new NdArray(parseDescr('<i4'), shape, Int32Array.from((await t.data()) as Int32Array), 'C');
    case 'bool':
      return new NdArray(parseDescr('|b1'), shape, Uint8Array.from((await t.data()) as Uint8Array), 'C');
    case 'complex64':
      return new NdArray(parseDescr('<c8'), shape, Float32Array.from((await t.data()) as Float32Array), 'C');
    case 'string':
      return stringArray((await t.bytes()) as Uint8Array[], shape);
  }
  throw new NpyError('NO_COUNTERPART', `tensor dtype ${t.dtype} has no numpy counterpart here`);
}
