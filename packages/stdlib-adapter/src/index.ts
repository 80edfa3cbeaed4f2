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
  familyOf,
  fieldViewOrWhyNot,
  float16ToNumber,
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
import { bytesToData, putOwn, readFromBytes, storageOf, unicodeWidth, writeValue } from '@npyts/core/plumbing';
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
 * What `toStdlib` returns, at compile time, for an array it refuses without an option (an int64
 * array without `int64`, a long double without `longDouble`, a record array, bfloat16): not an
 * ndarray, so using it as one (assigning it to a `float64ndarray`, calling `get`) does not compile,
 * and the error shows the fix.
 */
export interface StdlibRefused<Fix extends string> {
  /** The option or function that makes the call work. */
  readonly 'npyts: refused, pass': Fix;
}

/**
 * The @stdlib/types ndarray interface `toStdlib` returns for a descr (and options): `float32ndarray`
 * for `'<f4'`, `genericndarray<bigint>` for `'<i8'` with `{ int64: 'generic' }`, and
 * {@link StdlibRefused} for what it refuses.
 */
export type StdlibOf<S, O extends ToStdlibOptions = {}> =
  FamilyOf<S> extends 'record'
    ? StdlibRefused<'a record array is one ndarray per field: use toStdlibFields'>
    : FamilyOf<S> extends 'mlfloat'
      ? StdlibRefused<'widen it with toFloat32(array) from @npyts/core first'>
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
              ? O['float16'] extends 'float32'
                ? float32ndarray
                : float16ndarray
              : O['longDouble'] extends 'float64'
                ? float64ndarray
                : StdlibRefused<"{ longDouble: 'float64' }">
            : FamilyOf<S> extends 'complex'
              ? O['longDouble'] extends 'float64'
                ? complex128ndarray
                : StdlibRefused<"{ longDouble: 'float64' }">
              : StorageOf<S> extends BigInt64Array | BigUint64Array
                ? O['int64'] extends 'generic'
                  ? genericndarray<bigint>
                  : O['int64'] extends 'float64'
                    ? float64ndarray
                    : O['int64'] extends 'int32'
                      ? int32ndarray
                      : StdlibRefused<"{ int64: 'generic' }, { int64: 'float64' } or { int64: 'int32' }">
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

/** How a record field was handed over: `isView` is true when it shares the records' memory (a `set` reaches them, and a mapped file), false for a copy. */
export interface StdlibFieldMark {
  /** True for a strided view of the records' own memory; false for a copy (writes to it reach nothing else). */
  readonly isView: boolean;
}

/** The per-field ndarrays of a record array (nested records as nested objects), each marked with {@link StdlibFieldMark}. */
export type StdlibFieldsOf<S, O extends ToStdlibOptions = {}> = S extends readonly FieldDescr[]
  ? {
      [F in S[number] as F[0] extends readonly [string, infer N extends string] ? N : F[0] & string]: F[1] extends readonly FieldDescr[]
        ? StdlibFieldsOf<F[1], O>
        : StdlibOf<F[1], O> & StdlibFieldMark;
    }
  : Record<string, (StdlibNdarray & StdlibFieldMark) | Record<string, unknown>>;

/** Options of {@link toStdlib}: how 64-bit integers, NaT, float16 and long doubles are handed over. */
export interface ToStdlibOptions {
  /**
   * 64-bit integers and datetime/timedelta counts (stdlib has no int64 dtype):
   * 'generic' — a generic ndarray over the same BigInt64Array/BigUint64Array (values are bigint);
   * 'float64' / 'int32' — a converted copy, refused if any value is not exact there (2^60 is exact
   * in float64, 2^53 + 1 is not).
   * Without this option such arrays are refused.
   */
  int64?: 'generic' | 'float64' | 'int32' | undefined;
  /**
   * With `{ int64: 'float64' }` on datetime64/timedelta64: `'NaN'` turns NaT (not a time) into NaN.
   * Without it NaT's count (-2^63) is handed over as the number it is, which is rarely what is meant.
   */
  nat?: 'NaN' | undefined;
  /**
   * float16 arrays: `'float32'` widens them exactly into a float32 copy, which `@stdlib` 0.4's own
   * functions take (most have no float16 kernels yet). By default they stay a zero-copy `'float16'`
   * ndarray over the same memory, as every other dtype does.
   */
  float16?: 'float32' | undefined;
  /** x86 long double (f16/c32): 'float64' converts to float64/complex128, rounding to nearest. Refused otherwise. */
  longDouble?: 'float64' | undefined;
}

/** Options of {@link toStdlibFields} and {@link toStdlibField}: those of {@link toStdlib}, and `view`. */
export interface ToStdlibFieldsOptions extends ToStdlibOptions {
  /**
   * `true`: every field must be a view of the records' memory (so that a `set` reaches the records,
   * or the file they map); a field that cannot be one (text, a packed record, another byte order, a
   * dtype stdlib lacks) is refused, naming the field and why. By default such fields are copies,
   * marked `isView: false`.
   */
  view?: boolean | undefined;
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

/** float16 bits widened exactly to float32 (a copy). */
function float16ToFloat32(bits: Uint16Array): Float32Array {
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = float16ToNumber(bits[i]!);
  return out;
}

const stdOrder = (o: 'C' | 'F'): 'row-major' | 'column-major' => (o === 'C' ? 'row-major' : 'column-major');

/** A 64-bit count as float64 or int32, refused where the value is not exact there (NaT to NaN when asked). */
function checkedConversion(array: NdArray, target: 'float64' | 'int32', nat: boolean): Float64Array | Int32Array {
  const src = array.data as BigInt64Array | BigUint64Array;
  const out = target === 'float64' ? new Float64Array(src.length) : new Int32Array(src.length);
  for (let i = 0; i < src.length; i++) {
    const v = src[i]!;
    if (nat && v === NOT_A_TIME) {
      out[i] = Number.NaN;
      continue;
    }
    const x = Number(v);
    if (target === 'float64' ? BigInt(x) !== v : v < -(2n ** 31n) || v >= 2n ** 31n) {
      const what = target === 'float64' ? 'is not exact in float64' : 'does not fit int32';
      const natHint = v === NOT_A_TIME && isTime(array.dtype) ? " (it is NaT: pass { nat: 'NaN' } to make it NaN)" : '';
      throw new NpyError(
        'NOT_REPRESENTABLE',
        `value ${v} at index [${unravel(i, array.shape, array.order).join(', ')}] ${what}${natHint}; use { int64: 'generic' } to keep bigints`,
      );
    }
    out[i] = x;
  }
  return out;
}

const NOT_A_TIME = -(2n ** 63n);
const isTime = (dt: DType): boolean => ['datetime', 'timedelta'].includes(familyOf(dt));

/** The index of the element at position `i` of memory laid out in `order`. */
function unravel(i: number, shape: readonly number[], order: 'C' | 'F'): number[] {
  const idx = new Array<number>(shape.length).fill(0);
  const axes = shape.map((_, a) => a);
  if (order === 'C') axes.reverse();
  for (const a of axes) {
    idx[a] = i % shape[a]!;
    i = Math.floor(i / shape[a]!);
  }
  return idx;
}

/**
 * A record array as one ndarray per field (nested records as nested objects): strided views of the
 * same memory where the layout allows, copies otherwise (text fields, packed records, another byte
 * order). Each field says which it is (`isView`); `{ view: true }` refuses a field that would be a copy.
 * @example
 * const cols = toStdlibFields(await loadNpy('points.npy', { expect: [['x', '<f8'], ['y', '<f8']] }), { view: true });
 * cols.x;          // float64ndarray over the records' own memory
 * cols.x.isView;   // true
 */
export function toStdlibFields<S extends DescrInput, const O extends ToStdlibFieldsOptions = {}>(array: NdArray<S>, options?: O): StdlibFieldsOf<S, O>;
export function toStdlibFields(array: NdArray, options: ToStdlibFieldsOptions = {}): Record<string, unknown> {
  const { fields } = array.dtype;
  if (!fields) throw new NpyError('DTYPE_MISMATCH', `${array.dtype.str} is not a record dtype; use toStdlib`);
  return recordToStdlib(array, fields, options, '', true);
}

type Marked = StdlibNdarray & StdlibFieldMark;
type FieldOut = Marked | { [name: string]: FieldOut };

/**
 * The fields of a record (`prefix`: its path in `array`, '' or ending in a dot); `shared` is false
 * when `array` is itself a copy of the records (a subarray of records, which getField copies).
 */
function recordToStdlib(
  array: NdArray,
  fields: readonly Field[],
  options: ToStdlibFieldsOptions,
  prefix: string,
  shared: boolean,
): { [name: string]: FieldOut } {
  const out: { [name: string]: FieldOut } = {};
  for (const f of fields) putOwn(out, f.name, fieldToStdlib(array, prefix + f.name, options, shared));
  return out;
}

const mark = (x: StdlibNdarray, isView: boolean): Marked => Object.defineProperty(x, 'isView', { value: isView, enumerable: false }) as Marked;
// What fieldViewOrWhyNot says of a record field (whose own fields are then views of `array` where they can be).
const RECORD = 'it is a record (its fields can be views)';

/** One field (a dotted path) as a view where the layout allows, a copy otherwise; a record field as an object of them. */
function fieldToStdlib(array: NdArray, path: string, options: ToStdlibFieldsOptions, shared: boolean): FieldOut {
  const view = fieldViewOrWhyNot(array, path);
  let whyNot = typeof view === 'string' ? view : '';
  if (typeof view !== 'string') {
    const k = view.dtype.typeCode;
    const perItem = storageOf(view.dtype).unitsPerItem;
    const wide = view.data instanceof BigInt64Array || view.data instanceof BigUint64Array;
    // A view needs a stdlib dtype of one typed-array unit per element (complex: strides in pairs).
    const inPairs = perItem === 2 && view.offset % 2 === 0 && view.strides.every((s) => s % 2 === 0);
    if (!shared) whyNot = 'it is inside a subarray of records, which is copied';
    else if (wide && options.int64 === 'generic') {
      return mark(ndarray('generic', view.data, view.shape, view.shape.length ? view.strides : [0], view.offset, stdOrder(array.order)), true);
    } else if (!(k in STDLIB_DTYPE)) whyNot = `stdlib has no ${view.dtype.name} dtype that could view it`;
    else if (k === 'f2' && options.float16 === 'float32') whyNot = "float16 becomes a float32 copy with { float16: 'float32' }";
    else if (perItem !== 1 && !inPairs) whyNot = `its offset is not a whole number of ${view.dtype.name} elements`;
    else {
      const strides = view.shape.length ? view.strides.map((s) => s / perItem) : [0];
      const x = ndarray(STDLIB_DTYPE[k]!, stdlibBuffer(view.dtype, view.data), view.shape, strides, view.offset / perItem, stdOrder(array.order));
      return mark(x, true);
    }
  }
  const field = getField(array, path);
  const nested = field.dtype.fields;
  // A record field's own fields are views of `array` where they can be; a subarray of records is a copy.
  if (nested) return whyNot === RECORD ? recordToStdlib(array, nested, options, `${path}.`, shared) : recordToStdlib(field, nested, options, '', false);
  if (options.view) {
    throw new NpyError('NO_COUNTERPART', `cannot be a view of the records' memory: ${whyNot}; leave out { view: true } to take a copy`, {
      field: path,
    });
  }
  return mark(plainToStdlib(field, options), false);
}

/** What {@link toStdlibField} returns for the field a path names: an ndarray, or an object of them for a record field. */
export type StdlibFieldOf<S, P extends string, O extends ToStdlibOptions = {}> =
  FieldAt<S, P> extends infer D ? (D extends readonly FieldDescr[] ? StdlibFieldsOf<D, O> : StdlibOf<D, O> & StdlibFieldMark) : never;

/**
 * One field of a record array, named by the same dotted path as `getField` (`'pos.lat'`), as a
 * stdlib ndarray: a strided view of the record memory where possible, a copy otherwise (`isView`
 * says which; `{ view: true }` refuses a copy). `toStdlibField(a, 'pos.lat')` is `toStdlibFields(a).pos.lat`.
 * @example
 * const lat = toStdlibField(places, 'pos.lat');   // float64ndarray over the records' memory
 */
export function toStdlibField<S extends DescrInput, const P extends FieldPath<S>, const O extends ToStdlibFieldsOptions = {}>(
  array: NdArray<S>,
  path: P,
  options?: O,
): StdlibFieldOf<S, P, O>;
export function toStdlibField(array: NdArray, path: string, options: ToStdlibFieldsOptions = {}): unknown {
  if (!array.dtype.fields) throw new NpyError('DTYPE_MISMATCH', `${array.dtype.str} is not a record dtype; use toStdlib`);
  return fieldToStdlib(array, path, options, true);
}

/**
 * An ndarray over the same memory (no copy) for every dtype stdlib has, typed with @stdlib/types'
 * interface for it; strings become `generic`. Records: {@link toStdlibFields}. float16 stays
 * `'float16'` unless `{ float16: 'float32' }` (an exact widening copy, which `@stdlib`'s functions take).
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
  if (k === 'f2' && options.float16 === 'float32') return ndarray('float32', float16ToFloat32(array.data as Uint16Array), shape, strides, 0, order);
  if (k in STDLIB_DTYPE) return ndarray(STDLIB_DTYPE[k]!, stdlibBuffer(dt, array.data as TypedArray), shape, strides, 0, order);
  // What is left has no stdlib dtype of its own: 64-bit integers, long doubles, text, raw bytes.
  const int64 = (): StdlibNdarray => {
    const what = isTime(dt) ? `${dt.name} counts` : dt.name;
    if (options.int64 === 'generic') return ndarray('generic', array.data, shape, strides, 0, order);
    if (options.int64 === 'float64' || options.int64 === 'int32') {
      return ndarray(options.int64, checkedConversion(array, options.int64, options.nat === 'NaN' && isTime(dt)), shape, strides, 0, order);
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
    bytes: () =>
      generic((v) => {
        // Byte by byte (a spread would overflow the stack on a long item; TextDecoder's 'latin1' is windows-1252).
        let s = '';
        for (const b of v as Uint8Array) s += String.fromCharCode(b);
        return s;
      }),
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
    return `<U${unicodeWidth(values as string[])}`;
  }
  throw new NpyError('BAD_OPTION', 'a generic ndarray needs values of one kind (numbers, bigints, booleans or strings), or pass { dtype }');
}

/** Options of {@link fromStdlib}. */
export interface FromStdlibOptions {
  /**
   * The dtype of the result (a descr: `'<f4'`, `'>f8'`, `'<i8'`…). Every value is converted exactly:
   * one the dtype cannot hold exactly (1.5 or 2^64 as `'<i8'`, 0.1 as `'<f4'`) is refused, naming
   * it and its index, unless `round` allows rounding. Without it: the stdlib dtype's own (generic
   * ndarrays: inferred from the values).
   */
  dtype?: DescrInput | undefined;
  /** `true`: a float (or complex) `dtype` takes the nearest value where it has no exact one (0.1 as `'<f4'`); integers are never rounded. */
  round?: boolean | undefined;
}

/**
 * An NdArray from a stdlib ndarray, for encodeNpy and saveNpy: its memory as is when it is contiguous
 * in row- or column-major order, else (slices, negative strides, offsets) the elements gathered into
 * C order. `{ dtype }` converts, exactly or refused (see {@link FromStdlibOptions}).
 * @example
 * const a = fromStdlib(x);                     // an NdArray over the same memory
 * const b = fromStdlib(x, { dtype: '>f8' });   // big-endian, the same values
 */
export function fromStdlib(x: StdlibNdarray, options: FromStdlibOptions = {}): NdArray {
  const kind = String(x.dtype);
  const shape = Array.from(x.shape);
  // Parsed first: an unknown descr is refused (BAD_DESCR) whatever the array holds.
  const target = options.dtype === undefined ? undefined : parseDescr(options.dtype);
  if (kind === 'generic' || kind === 'binary') {
    const values: unknown[] = [];
    forEachIndex(shape, (idx) => values.push(x.get(...idx)));
    return exactly((i) => values[i], values.length, target ?? parseDescr(inferGeneric(values)), shape, 'C', options.round === true);
  }
  const own = sameMemory(x, kind, shape);
  if (!target || target.str === own.dtype.str) return own;
  return exactly((i) => readItem(own.dtype, own.data, i), own.size, target, shape, own.order, options.round === true);
}

/** The values `at(0..n-1)` (memory order) as an array of `dtype`, each exact there (or rounded, for floats, when allowed). */
function exactly(at: (i: number) => unknown, n: number, dtype: DType, shape: number[], order: 'C' | 'F', round: boolean): NdArray {
  const raw = new Uint8Array(n * dtype.itemsize);
  const view = new DataView(raw.buffer);
  const rounds = round && ['float', 'complex', 'mlfloat'].includes(familyOf(dtype));
  for (let i = 0; i < n; i++) {
    const v = at(i);
    let ok = true;
    try {
      writeValue(dtype, view, raw, i * dtype.itemsize, v);
    } catch (e) {
      if (!(e instanceof NpyError)) throw e;
      ok = false;
    }
    if (ok && (rounds || sameValue(v, readFromBytes(dtype, raw, i * dtype.itemsize)))) continue;
    const fix = ['float', 'complex', 'mlfloat'].includes(familyOf(dtype)) ? '; pass { round: true } to take the nearest' : '';
    throw new NpyError(
      'NOT_REPRESENTABLE',
      `value ${show(v)} at index [${unravel(i, shape, order).join(', ')}] is not exact in ${dtype.str} (${dtype.name})${fix}`,
    );
  }
  return new NdArray(dtype, shape, bytesToData(dtype, raw.buffer, 0, n), order);
}

const show = (v: unknown): string => (typeof v === 'object' && v !== null && 're' in v ? `${(v as Complex).re}+${(v as Complex).im}j` : String(v));

/** Whether a value read back is the value written (numbers, bigints and booleans compare by value; NaN is NaN). */
function sameValue(a: unknown, b: unknown): boolean {
  const num = (v: unknown): unknown => (typeof v === 'boolean' ? Number(v) : v);
  const [x, y] = [num(a), num(b)];
  if (typeof x === 'number' && typeof y === 'number') return x === y || (Number.isNaN(x) && Number.isNaN(y));
  if (typeof x === 'bigint' || typeof y === 'bigint') {
    const big = (v: unknown): bigint | undefined => (typeof v === 'bigint' ? v : typeof v === 'number' && Number.isInteger(v) ? BigInt(v) : undefined);
    return big(x) !== undefined && big(x) === big(y);
  }
  if (typeof x === 'object' && x !== null && 're' in x && typeof y === 'object' && y !== null && 're' in y) {
    return sameValue((x as Complex).re, (y as Complex).re) && sameValue((x as Complex).im, (y as Complex).im);
  }
  if (typeof y === 'object' && y !== null && 're' in y && typeof x === 'number') return sameValue(x, (y as Complex).re) && (y as Complex).im === 0;
  return x === y;
}

/** A typed stdlib ndarray as an NdArray of its own dtype: the same memory when contiguous, else gathered into C order. */
function sameMemory(x: StdlibNdarray, kind: string, shape: number[]): NdArray {
  const size = shapeSize(shape);
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
