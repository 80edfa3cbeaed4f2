/**
 * What a descr written as a literal means at compile time: the typed array that holds its data
 * ({@link StorageOf}), the JavaScript value of one element ({@link ElementOf}) and the values
 * `arrayFromValues` takes ({@link InputOf}). These types mirror the run-time rules of array/layout.ts
 * (storage), array/read-value.ts (reading) and array/write-value.ts (writing); the type tests check them against the
 * values the code returns. A descr known only at run time (a plain `string`) has the wide types.
 *
 * @example
 * const a = createArray('<f4', [2, 3]);   // NdArray<'<f4'>
 * const f: Float32Array = a.data;          // no cast
 * const x: number = a.get(0, 1);
 */
import type { MlFloatName } from './ml-floats.js';
import type { ArrayData, Complex } from './js-types.js';

/** A record field as numpy writes it: `(name, descr)` or `(name, descr, shape)`; a name may be `(title, name)`. */
export type FieldDescr = readonly [FieldName, DescrInput] | readonly [FieldName, DescrInput, readonly number[]];

/** A field's name, or its `(title, name)` pair. */
export type FieldName = string | readonly [string, string];

/** A descr as a literal: a type string (`'<f4'`), a record's field list, or a `(base, shape)` subarray pair. */
export type DescrInput = string | readonly FieldDescr[] | readonly [DescrInput, readonly number[]];

/** Nested lists of `E` to any depth (numpy's `tolist()` of an array whose number of axes is not known). */
export type Nested<E> = E | Nested<E>[];

/** The entry of a scalar type code: [storage, element, accepted input, kind family]. */
type Entry<Storage extends ArrayData, Element, Input, Family extends KindFamily> = [Storage, Element, Input, Family];

type Int = number | bigint;
type BoolE = Entry<Uint8Array, boolean, boolean | number, 'bool'>;
type I8 = Entry<Int8Array, number, Int, 'int'>;
type U8 = Entry<Uint8Array, number, Int, 'uint'>;
type I16 = Entry<Int16Array, number, Int, 'int'>;
type U16 = Entry<Uint16Array, number, Int, 'uint'>;
type I32 = Entry<Int32Array, number, Int, 'int'>;
type U32 = Entry<Uint32Array, number, Int, 'uint'>;
type I64 = Entry<BigInt64Array, bigint, Int, 'int'>;
type U64 = Entry<BigUint64Array, bigint, Int, 'uint'>;
type F16 = Entry<Uint16Array, number, Int, 'float'>;
type F32 = Entry<Float32Array, number, Int, 'float'>;
type F64 = Entry<Float64Array, number, Int, 'float'>;
type LongDouble = Entry<Uint8Array, number, Int, 'float'>;
type C64 = Entry<Float32Array, Complex, Complex | number, 'complex'>;
type C128 = Entry<Float64Array, Complex, Complex | number, 'complex'>;
type C256 = Entry<Uint8Array, Complex, Complex | number, 'complex'>;
type Bytes = Entry<Uint8Array, Uint8Array, Uint8Array | string, 'bytes'>;
type Void = Entry<Uint8Array, Uint8Array, Uint8Array, 'void'>;
type Text = Entry<Uint32Array, string, string, 'str'>;
type DateTime = Entry<BigInt64Array, bigint, Int, 'datetime'>;
type TimeDelta = Entry<BigInt64Array, bigint, Int, 'timedelta'>;
type PyObject = Entry<unknown[], unknown, unknown, 'object'>;
type BF16 = Entry<Uint16Array, number, Int, 'mlfloat'>;
type F8 = Entry<Uint8Array, number, Int, 'mlfloat'>;

/** numpy's type codes and names (without byte order), as parseTypeString reads them on x86-64 Linux. */
interface ScalarCodes {
  b1: BoolE;
  '?': BoolE;
  bool: BoolE;
  bool_: BoolE;
  i1: I8;
  b: I8;
  int8: I8;
  byte: I8;
  u1: U8;
  B: U8;
  uint8: U8;
  ubyte: U8;
  i2: I16;
  h: I16;
  int16: I16;
  short: I16;
  u2: U16;
  H: U16;
  uint16: U16;
  ushort: U16;
  i4: I32;
  i: I32;
  int32: I32;
  intc: I32;
  u4: U32;
  I: U32;
  uint32: U32;
  uintc: U32;
  i8: I64;
  l: I64;
  q: I64;
  p: I64;
  n: I64;
  int64: I64;
  int: I64;
  int_: I64;
  intp: I64;
  long: I64;
  longlong: I64;
  u8: U64;
  L: U64;
  Q: U64;
  P: U64;
  N: U64;
  uint64: U64;
  uintp: U64;
  ulong: U64;
  ulonglong: U64;
  f2: F16;
  e: F16;
  float16: F16;
  half: F16;
  f4: F32;
  f: F32;
  float32: F32;
  single: F32;
  f8: F64;
  d: F64;
  float64: F64;
  double: F64;
  float: F64;
  f16: LongDouble;
  g: LongDouble;
  float128: LongDouble;
  longdouble: LongDouble;
  c8: C64;
  F: C64;
  complex64: C64;
  csingle: C64;
  c16: C128;
  D: C128;
  complex128: C128;
  complex: C128;
  cdouble: C128;
  c32: C256;
  G: C256;
  complex256: C256;
  clongdouble: C256;
  S: Bytes;
  a: Bytes;
  c: Bytes;
  bytes: Bytes;
  bytes_: Bytes;
  U: Text;
  str: Text;
  str_: Text;
  V: Void;
  void: Void;
  O: PyObject;
  O8: PyObject;
  object: PyObject;
  object_: PyObject;
  M: DateTime;
  M8: DateTime;
  datetime64: DateTime;
  m: TimeDelta;
  m8: TimeDelta;
  timedelta64: TimeDelta;
  bfloat16: BF16;
  float8_e3m4: F8;
  float8_e4m3: F8;
  float8_e4m3fn: F8;
  float8_e4m3fnuz: F8;
  float8_e4m3b11fnuz: F8;
  float8_e5m2: F8;
  float8_e5m2fnuz: F8;
  float8_e8m0fnu: F8;
  float6_e2m3fn: F8;
  float6_e3m2fn: F8;
  float4_e2m1fn: F8;
  f1: F8;
}

/** The wide entry: a descr whose meaning is not known at compile time. */
type Wide = Entry<ArrayData, unknown, unknown, KindFamily>;

type StripOrder<S extends string> = S extends `${'<' | '>' | '|' | '='}${infer R}` ? R : S;

/** The entry of a scalar type string; the wide entry for a spelling this table does not know. */
type ScalarEntry<S extends string> = string extends S
  ? Wide
  : StripOrder<S> extends infer C extends string
    ? C extends keyof ScalarCodes
      ? ScalarCodes[C]
      : C extends `S${number}` | `a${number}`
        ? Bytes
        : C extends `U${number}`
          ? Text
          : C extends `V${number}`
            ? Void
            : C extends `${'M8' | 'datetime64'}[${string}]`
              ? DateTime
              : C extends `${'m8' | 'timedelta64'}[${string}]`
                ? TimeDelta
                : Wide
    : Wide;

/** `E` nested to the depth of a subarray shape: `(2, 3)` of numbers is `number[][]`. */
type NestShape<E, Shape extends readonly number[]> = number extends Shape['length']
  ? Nested<E>
  : Shape extends readonly [number, ...infer Rest extends readonly number[]]
    ? NestShape<E, Rest>[]
    : E;

/** A field's name as a key of the record value; `''`-named void padding has none. */
type KeyOf<F extends FieldDescr> = F[0] extends readonly [string, infer N extends string]
  ? N
  : F[0] extends ''
    ? F[1] extends `${'|' | ''}V${number}`
      ? never
      : ''
    : F[0] extends string
      ? F[0]
      : never;

/** The value of one field: its element, nested to its subarray shape. */
type FieldValue<F extends FieldDescr, Which extends 1 | 2, Depth extends unknown[]> = F extends readonly [
  FieldName,
  infer D extends DescrInput,
  infer Shape extends readonly number[],
]
  ? NestShape<Meaning<D, Which, Depth>, Shape>
  : Meaning<F[1], Which, Depth>;

/** Element (1) or input (2) of a descr. */
type Meaning<S, Which extends 1 | 2, Depth extends unknown[] = []> =
  // Records nest to any depth in a literal; the bound only stops the wide descr type from recursing forever.
  Depth['length'] extends 16
    ? unknown
    : S extends string
      ? ScalarEntry<S>[Which]
      : S extends readonly [infer D extends DescrInput, infer Shape extends readonly number[]]
        ? NestShape<Meaning<D, Which, [...Depth, 0]>, Shape>
        : S extends readonly FieldDescr[]
          ? { -readonly [F in S[number] as KeyOf<F>]: FieldValue<F, Which, [...Depth, 0]> }
          : unknown;

/** The typed array holding the data of a descr: `Float32Array` for `'<f4'`, `Uint8Array` for records, … */
export type StorageOf<S> = S extends string
  ? ScalarEntry<S>[0]
  : S extends readonly [DescrInput, readonly number[]]
    ? Uint8Array
    : S extends readonly FieldDescr[]
      ? Uint8Array
      : ArrayData;

/** One element of a descr as JavaScript: `number`, `bigint`, `boolean`, `string`, `Uint8Array`, `Complex`, a record object, nested arrays; `unknown` for objects. */
export type ElementOf<S> = Meaning<S, 1>;

/** What `arrayFromValues` takes for one element of a descr. */
export type InputOf<S> = Meaning<S, 2>;

/** Dotted paths to the fields of a record descr, nested records included: `'pos' | 'pos.x' | 'pos.y' | 'id'`. */
export type FieldPath<S, Depth extends unknown[] = []> = Depth['length'] extends 8
  ? string
  : S extends readonly FieldDescr[]
    ? FieldPathMap<S, Depth>[keyof FieldPathMap<S, Depth>]
    : string extends S
      ? string
      : never;

type FieldPathMap<S extends readonly FieldDescr[], Depth extends unknown[]> = {
  [F in S[number] as KeyOf<F>]: KeyOf<F> | (F extends readonly [FieldName, infer D] ? `${KeyOf<F>}.${FieldPath<D, [...Depth, 0]> & string}` : never);
};

/**
 * The descr of the field a dotted path names: its subarray shape becomes axes of the field's array.
 * Field names may hold dots; as `getField` does, the longest name that matches is taken first.
 */
export type FieldAt<S, P extends string> = [DescrAt<S, P>] extends [never] ? DescrInput : DescrAt<S, P>;

/** The field of a record descr that has exactly this name (never when none has). */
type FieldNamed<S extends readonly FieldDescr[], Name extends string> = Extract<S[number], readonly [Name | readonly [string, Name], ...unknown[]]>;

/** The descr at a dotted path (never when nothing matches): the whole path as one name, else a split. */
type DescrAt<S, P extends string> = S extends readonly FieldDescr[] ? ([FieldNamed<S, P>] extends [never] ? SplitAt<S, '', P> : FieldNamed<S, P>[1]) : never;

/**
 * The descr at `Done.Rest` split after a dot: the longest first name (`Done` plus more of `Rest`)
 * that a field has, then the rest of the path inside that field.
 */
type SplitAt<S extends readonly FieldDescr[], Done extends string, Rest extends string> = Rest extends `${infer Next}.${infer After}`
  ? (Done extends '' ? Next : `${Done}.${Next}`) extends infer Head extends string
    ? [SplitAt<S, Head, After>] extends [never]
      ? [FieldNamed<S, Head>] extends [never]
        ? never
        : DescrAt<FieldNamed<S, Head>[1], After>
      : SplitAt<S, Head, After>
    : never
  : never;

/** Kind families for {@link NdArray.is}: the descrs each one covers (any byte order). */
export interface KindFamilies {
  bool: '|b1';
  int: '<i1' | '<i2' | '<i4' | '<i8';
  uint: '<u1' | '<u2' | '<u4' | '<u8';
  float: '<f2' | '<f4' | '<f8' | '<f16';
  complex: '<c8' | '<c16' | '<c32';
  bytes: `|S${number}`;
  str: `<U${number}`;
  void: `|V${number}`;
  datetime: `<M8[${string}]`;
  timedelta: `<m8[${string}]`;
  object: '|O';
  /** ml_dtypes' narrow floats, kept as their bits: `bfloat16`, the float8s, `float6_*`, `float4_e2m1fn`. */
  mlfloat: MlFloatName;
  record: readonly FieldDescr[];
}
/** The kind families of dtypes (`'float'`, `'int'`, `'str'`, `'record'`, …), as `NdArray.is()` and `matchDType` name them. */
export type KindFamily = keyof KindFamilies;

/** The kind family of a descr (see {@link KindFamilies}): `'float'` for `'<f4'`, `'record'` for a field list. */
export type FamilyOf<S> = S extends string
  ? ScalarEntry<S>[3]
  : S extends readonly [DescrInput, readonly number[]]
    ? 'void'
    : S extends readonly FieldDescr[]
      ? 'record'
      : KindFamily;
