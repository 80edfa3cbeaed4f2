/// <reference types="@stdlib/types" />
/**
 * `@npyts/stdlib` — npyts arrays as @stdlib/ndarray ndarrays over the same memory, and back.
 * `@stdlib/ndarray` is a peer dependency.
 * @module @npyts/stdlib
 */
import ndarray from '@stdlib/ndarray/ctor/lib/index.js';
import Complex64Array from '@stdlib/array/complex64/lib/index.js';
import Complex128Array from '@stdlib/array/complex128/lib/index.js';
import BooleanArray from '@stdlib/array/bool/lib/index.js';
import Float16Array from '@stdlib/array/float16/lib/index.js';
import {
  NdArray,
  NpyError,
  arrayFromValues,
  familyOf,
  fieldView,
  getField,
  matchDType,
  parseDescr,
  readItem,
  shapeSize,
  type Complex,
  type ArraySpec,
  type DType,
  type Field,
  type TypedArray,
  type DescrInput,
  type FamilyOf,
  type StorageOf,
  type FieldDescr,
  type FieldAt,
  type FieldPath,
} from '@npyts/core';
import { putOwn, storageOf } from '@npyts/core/plumbing';
import type {
  boolndarray,
  complex64ndarray,
  complex128ndarray,
  float16ndarray,
  float32ndarray,
  float64ndarray,
  genericndarray,
  int8ndarray,
  int16ndarray,
  int32ndarray,
  uint8ndarray,
  uint16ndarray,
  uint32ndarray,
  typedndarray,
} from '@stdlib/types/ndarray';

/** The parts of a @stdlib/ndarray ndarray the adapter uses. */
export interface StdlibNdarray {
  /** The data type: its name, or (newer @stdlib/types) an object whose text is its name. */
  readonly dtype: string | object;
  readonly shape: ArrayLike<number>;
  readonly strides: ArrayLike<number>;
  readonly offset: number;
  readonly order: string;
  readonly data: unknown;
  readonly length: number;
  get(...index: number[]): unknown;
}

/**
 * The @stdlib/types ndarray interface `toStdlib` returns for a descr (and options): `float32ndarray`
 * for `'<f4'`, `genericndarray<bigint>` for `'<i8'` with `{ int64: 'generic' }`, never for what it refuses.
 */
export type StdlibOf<S, O extends ToStdlibOptions = {}> =
  FamilyOf<S> extends 'record'
    ? never
    : StorageOf<S> extends Float64Array
      ? FamilyOf<S> extends 'complex'
        ? complex128ndarray
        : float64ndarray
      : StorageOf<S> extends Float32Array
        ? FamilyOf<S> extends 'complex'
          ? complex64ndarray
          : float32ndarray
        : FamilyOf<S> extends 'float'
          ? StorageOf<S> extends Uint16Array
            ? float16ndarray
            : O['longDouble'] extends 'float64'
              ? float64ndarray
              : never
          : FamilyOf<S> extends 'complex'
            ? O['longDouble'] extends 'float64'
              ? complex128ndarray
              : never
            : StorageOf<S> extends BigInt64Array | BigUint64Array
              ? O['int64'] extends 'generic'
                ? genericndarray<bigint>
                : O['int64'] extends 'float64'
                  ? float64ndarray
                  : O['int64'] extends 'int32'
                    ? int32ndarray
                    : never
              : FamilyOf<S> extends 'bool'
                ? boolndarray
                : StorageOf<S> extends Int8Array
                  ? int8ndarray
                  : StorageOf<S> extends Int16Array
                    ? int16ndarray
                    : StorageOf<S> extends Int32Array
                      ? int32ndarray
                      : StorageOf<S> extends Uint16Array
                        ? uint16ndarray
                        : StorageOf<S> extends Uint32Array
                          ? FamilyOf<S> extends 'str'
                            ? genericndarray<string>
                            : uint32ndarray
                          : FamilyOf<S> extends 'uint'
                            ? uint8ndarray
                            : FamilyOf<S> extends 'bytes'
                              ? genericndarray<string>
                              : FamilyOf<S> extends 'void'
                                ? genericndarray<Uint8Array>
                                : StdlibNdarray;

/** The per-field ndarrays of a record array (nested records as nested objects). */
export type StdlibFieldsOf<S, O extends ToStdlibOptions = {}> = S extends readonly FieldDescr[]
  ? {
      [F in S[number] as F[0] extends readonly [string, infer N extends string] ? N : F[0] & string]: F[1] extends readonly FieldDescr[]
        ? StdlibFieldsOf<F[1], O>
        : StdlibOf<F[1], O>;
    }
  : Record<string, StdlibNdarray | Record<string, unknown>>;

/** Options of {@link toStdlib}: how 64-bit integers and long doubles are handed over. */
export interface ToStdlibOptions {
  /**
   * 64-bit integers and datetime/timedelta counts (stdlib has no int64 dtype):
   * 'generic' — a generic ndarray over the same BigInt64Array/BigUint64Array (values are bigint);
   * 'float64' / 'int32' — a converted copy, refused if any value does not fit exactly.
   * Without this option such arrays are refused.
   */
  int64?: 'generic' | 'float64' | 'int32';
  /** x86 long double (f16/c32): 'float64' converts to float64/complex128, rounding to nearest. Refused otherwise. */
  longDouble?: 'float64';
}

const STDLIB_DTYPE: Record<string, string> = {
  f8: 'float64',
  f4: 'float32',
  f2: 'float16',
  i1: 'int8',
  i2: 'int16',
  i4: 'int32',
  u1: 'uint8',
  u2: 'uint16',
  u4: 'uint32',
  b1: 'bool',
  c8: 'complex64',
  c16: 'complex128',
};

/** The stdlib view of typed data: accessor arrays for float16, bool and complex, over the same bytes. */
function stdlibBuffer(dt: DType, data: TypedArray): unknown {
  switch (dt.typeCode) {
    case 'f2':
      return new Float16Array(data.buffer, data.byteOffset, data.length);
    case 'b1':
      return new BooleanArray(data.buffer, data.byteOffset, data.length);
    case 'c8':
      return new Complex64Array(data.buffer, data.byteOffset, data.length / 2);
    case 'c16':
      return new Complex128Array(data.buffer, data.byteOffset, data.length / 2);
    default:
      return data;
  }
}

function stridesFor(shape: number[], order: 'C' | 'F'): number[] {
  if (shape.length === 0) return [0]; // stdlib's convention for 0-d ndarrays
  const s = new Array<number>(shape.length);
  let acc = 1;
  const axes = shape.map((_, i) => i);
  if (order === 'C') axes.reverse();
  for (const a of axes) {
    s[a] = acc;
    acc *= shape[a]!;
  }
  return s;
}

const stdOrder = (o: 'C' | 'F'): 'row-major' | 'column-major' => (o === 'C' ? 'row-major' : 'column-major');

function checkedConversion(array: NdArray, target: 'float64' | 'int32'): Float64Array | Int32Array {
  const src = array.data as BigInt64Array | BigUint64Array;
  const out = target === 'float64' ? new Float64Array(src.length) : new Int32Array(src.length);
  const [lo, hi] = target === 'float64' ? [-(2n ** 53n), 2n ** 53n] : [-(2n ** 31n), 2n ** 31n - 1n];
  for (let i = 0; i < src.length; i++) {
    const v = src[i]!;
    if (v < lo || v > hi) {
      throw new NpyError('NOT_REPRESENTABLE', `value ${v} at position ${i} does not fit ${target}; use { int64: 'generic' } to keep bigints`);
    }
    out[i] = Number(v);
  }
  return out;
}

/**
 * A record array as one ndarray per field (nested records as nested objects): strided views of the
 * same memory where possible, copies otherwise.
 * @example
 * const cols = toStdlibFields(await loadNpy('points.npy', { expect: [['x', '<f8'], ['y', '<f8']] }));
 * cols.x;   // float64ndarray over the records' own memory
 */
export function toStdlibFields<S extends DescrInput, const O extends ToStdlibOptions = {}>(array: NdArray<S>, options?: O): StdlibFieldsOf<S, O>;
export function toStdlibFields(array: NdArray, options: ToStdlibOptions = {}): Record<string, unknown> {
  const { fields } = array.dtype;
  if (!fields) throw new NpyError('DTYPE_MISMATCH', `${array.dtype.str} is not a record dtype; use toStdlib`);
  return recordToStdlib(array, fields, options);
}

function recordToStdlib(array: NdArray, fields: readonly Field[], options: ToStdlibOptions): Record<string, StdlibNdarray> {
  const out: Record<string, StdlibNdarray> = {};
  for (const f of fields) putOwn(out, f.name, fieldToStdlib(array, f.name, options));
  return out;
}

/** One field (a dotted path) as a view where the layout allows, a copy otherwise; a record field as an object of them. */
function fieldToStdlib(array: NdArray, path: string, options: ToStdlibOptions): StdlibNdarray | Record<string, StdlibNdarray> {
  const view = fieldView(array, path);
  const k = view ? view.dtype.typeCode : '';
  const perItem = view ? storageOf(view.dtype).unitsPerItem : 0;
  // A view needs a stdlib dtype of one typed-array unit per element (complex: strides in pairs).
  const viewable = view && k in STDLIB_DTYPE && (perItem === 1 || (perItem === 2 && view.offset % 2 === 0 && view.strides.every((s) => s % 2 === 0)));
  if (view && viewable) {
    const scale = perItem;
    const strides = view.shape.length ? view.strides.map((s) => s / scale) : [0];
    return ndarray(STDLIB_DTYPE[k]!, stdlibBuffer(view.dtype, view.data), view.shape, strides, view.offset / scale, stdOrder(array.order));
  }
  const field = getField(array, path);
  const nested = field.dtype.fields;
  return nested ? recordToStdlib(field, nested, options) : plainToStdlib(field, options);
}

/** What {@link toStdlibField} returns for the field a path names: an ndarray, or an object of them for a record field. */
export type StdlibFieldOf<S, P extends string, O extends ToStdlibOptions = {}> =
  FieldAt<S, P> extends infer D ? (D extends readonly FieldDescr[] ? StdlibFieldsOf<D, O> : StdlibOf<D, O>) : never;

/**
 * One field of a record array, named by the same dotted path as `getField` (`'pos.lat'`), as a
 * stdlib ndarray: a strided view of the record memory where possible, a copy otherwise.
 * `toStdlibField(a, 'pos.lat')` is `toStdlibFields(a).pos.lat`.
 * @example
 * const lat = toStdlibField(places, 'pos.lat');   // float64ndarray over the records' memory
 */
export function toStdlibField<S extends DescrInput, const P extends FieldPath<S>, const O extends ToStdlibOptions = {}>(
  array: NdArray<S>,
  path: P,
  options?: O,
): StdlibFieldOf<S, P, O>;
export function toStdlibField(array: NdArray, path: string, options: ToStdlibOptions = {}): unknown {
  if (!array.dtype.fields) throw new NpyError('DTYPE_MISMATCH', `${array.dtype.str} is not a record dtype; use toStdlib`);
  return fieldToStdlib(array, path, options);
}

/**
 * An ndarray over the same memory (no copy) for every dtype stdlib has, typed with @stdlib/types'
 * interface for it; strings become `generic`. Records: {@link toStdlibFields}.
 * @example
 * const x = toStdlib(await loadNpy('w.npy', { expect: '<f4' }));   // float32ndarray
 */
export function toStdlib<S extends DescrInput, const O extends ToStdlibOptions = {}>(array: NdArray<S>, options?: O): StdlibOf<S, O>;
export function toStdlib(array: NdArray, options: ToStdlibOptions = {}): StdlibNdarray {
  if (array.dtype.fields) throw new NpyError('DTYPE_MISMATCH', `a record array is several ndarrays, one per field: use toStdlibFields`);
  return plainToStdlib(array, options);
}

function plainToStdlib(array: NdArray, options: ToStdlibOptions): StdlibNdarray {
  const dt = array.dtype;
  const shape = [...array.shape];
  const strides = stridesFor(shape, array.order);
  const order = stdOrder(array.order);
  const k = dt.typeCode;
  if (k in STDLIB_DTYPE) return ndarray(STDLIB_DTYPE[k]!, stdlibBuffer(dt, array.data as TypedArray), shape, strides, 0, order);
  // What is left has no stdlib dtype of its own: 64-bit integers, long doubles, text, raw bytes.
  const int64 = (): StdlibNdarray => {
    const what = ['datetime', 'timedelta'].includes(familyOf(dt)) ? `${dt.name} counts` : dt.name;
    if (options.int64 === 'generic') return ndarray('generic', array.data, shape, strides, 0, order);
    if (options.int64 === 'float64' || options.int64 === 'int32') {
      return ndarray(options.int64, checkedConversion(array, options.int64), shape, strides, 0, order);
    }
    throw new NpyError(
      'NO_COUNTERPART',
      `stdlib has no dtype for ${what}; pass { int64: 'generic' } (bigint values), { int64: 'float64' } or { int64: 'int32' } (checked conversions)`,
    );
  };
  const longDouble = (complex: boolean): StdlibNdarray => {
    if (options.longDouble !== 'float64') {
      throw new NpyError('NO_COUNTERPART', `stdlib has no ${dt.name} (x86 long double); pass { longDouble: 'float64' } to round to float64`);
    }
    const n = array.size;
    const out = new Float64Array(complex ? 2 * n : n);
    for (let i = 0; i < n; i++) {
      const v = readItem(dt, array.data, i) as number | Complex;
      if (typeof v === 'number') out[i] = v;
      else [out[2 * i], out[2 * i + 1]] = [v.re, v.im];
    }
    return complex ? ndarray('complex128', new Complex128Array(out.buffer), shape, strides, 0, order) : ndarray('float64', out, shape, strides, 0, order);
  };
  const generic = (toValue: (v: unknown) => unknown): StdlibNdarray => {
    const values = new Array(array.size);
    for (let i = 0; i < values.length; i++) values[i] = toValue(readItem(dt, array.data, i));
    return ndarray('generic', values, shape, strides, 0, order);
  };
  const none = (): never => {
    throw new NpyError('NO_COUNTERPART', `${dt.str} has no stdlib counterpart`);
  };
  return matchDType<StdlibNdarray>(dt, {
    int: int64,
    uint: int64,
    datetime: int64,
    timedelta: int64,
    float: () => longDouble(false),
    complex: () => longDouble(true),
    str: () => generic((v) => v),
    void: () => generic((v) => v),
    bytes: () => generic((v) => String.fromCharCode(...(v as Uint8Array))),
    bool: none,
    // stdlib has no bfloat16 or float8; widening is exact but is a copy, which this view-sharing adapter does not make silently.
    mlfloat: () => {
      throw new NpyError('NO_COUNTERPART', `${dt.name} has no stdlib counterpart; widen it exactly with toFloat32(array) from @npyts/core first`);
    },
    object: none,
    record: none,
    subarray: none,
  });
}

const NUMPY_DTYPE: Record<string, string> = Object.fromEntries(Object.entries(STDLIB_DTYPE).map(([k, v]) => [v, k]));
NUMPY_DTYPE['uint8c'] = 'u1';

/** The typed memory behind a stdlib buffer (accessor arrays unwrapped). */
function typedMemory(dtype: string, buffer: { buffer: ArrayBufferLike; byteOffset: number; length: number }): TypedArray {
  switch (dtype) {
    case 'float16':
      return new Uint16Array(buffer.buffer, buffer.byteOffset, buffer.length);
    case 'bool':
      return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.length);
    case 'complex64':
      return new Float32Array(buffer.buffer, buffer.byteOffset, buffer.length * 2);
    case 'complex128':
      return new Float64Array(buffer.buffer, buffer.byteOffset, buffer.length * 2);
    case 'uint8c':
      return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.length);
    default:
      return buffer as unknown as TypedArray;
  }
}

function inferGeneric(values: unknown[]): string {
  if (values.every((v) => typeof v === 'boolean')) return '|b1';
  if (values.every((v) => typeof v === 'bigint')) return '<i8';
  if (values.every((v) => typeof v === 'number')) return '<f8';
  if (values.every((v) => typeof v === 'string')) {
    const n = Math.max(1, ...values.map((s) => Array.from(s as string).length));
    return `<U${n}`;
  }
  throw new NpyError('BAD_OPTION', 'a generic ndarray needs values of one kind (numbers, bigints, booleans or strings), or pass { dtype }');
}

/**
 * Something encodeNpy takes from a stdlib ndarray: its memory as is when it is contiguous in row-
 * or column-major order, else (slices, negative strides, offsets) the elements gathered into C order.
 * @example
 * const a = fromStdlib(x);   // an NdArray over the same memory
 */
export function fromStdlib(x: StdlibNdarray, options: { dtype?: string } = {}): NdArray {
  const kind = String(x.dtype);
  const shape = Array.from(x.shape);
  const size = shapeSize(shape);
  if (kind === 'generic' || kind === 'binary') {
    const values: unknown[] = [];
    forEachIndex(shape, (idx) => values.push(x.get(...idx)));
    return arrayFromValues(values, options.dtype ?? inferGeneric(values), { shape });
  }
  const descr = NUMPY_DTYPE[kind];
  if (!descr) throw new NpyError('NO_COUNTERPART', `stdlib dtype '${kind}' has no numpy counterpart here`);
  const dtype = parseDescr(descr);
  const memory = typedMemory(kind, x.data as { buffer: ArrayBufferLike; byteOffset: number; length: number });
  const units = storageOf(dtype).unitsPerItem;
  for (const order of ['C', 'F'] as const) {
    const want = stridesFor(shape, order);
    if (x.offset === 0 && memory.length === size * units && shape.every((d, a) => d <= 1 || x.strides[a] === want[a])) {
      // (0-d: stdlib writes strides [0]; the shape check above ignores them.)
      return new NdArray(dtype, shape, memory, order);
    }
  }
  // Gather element by element from the strided memory into C order.
  const Ctor = memory.constructor as new (n: number) => TypedArray;
  const out = new Ctor(size * units);
  let o = 0;
  forEachIndex(shape, (idx) => {
    let p = x.offset;
    for (let a = 0; a < idx.length; a++) p += idx[a]! * x.strides[a]!;
    for (let u = 0; u < units; u++) (out as unknown as number[])[o++] = (memory as unknown as number[])[p * units + u]!;
  });
  return new NdArray(dtype, shape, out, 'C');
}

function forEachIndex(shape: number[], fn: (idx: number[]) => void): void {
  if (shape.includes(0)) return;
  const idx = shape.map(() => 0);
  for (;;) {
    fn(idx);
    let a = shape.length - 1;
    for (; a >= 0; a--) {
      if (++idx[a]! < shape[a]!) break;
      idx[a] = 0;
    }
    if (a < 0) return;
  }
}

export type { ArraySpec };
export type { typedndarray };
