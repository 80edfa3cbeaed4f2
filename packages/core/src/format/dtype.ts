/**
 * The dtype algebra: numpy's type strings and record descrs, parsed into {@link DType} and
 * printed back exactly as numpy prints them (`dtype.str`, `dtype.descr`, the header literal).
 *
 * Long on purpose: the three forms (scalar, subarray, record) and the parser that builds them share
 * protected constructors and the one table of type codes, so every fact about a dtype is here.
 */
import { NpyError } from '../errors.js';
import { PyTuple, parsePyLiteral, reprPy, reprString, type PyValue } from './literal.js';
import type { DescrInput } from './descr-types.js';
import { ML_FLOATS, isMlFloatName, type MlFloatName } from './ml-floats.js';

/** A dtype's byte order as numpy writes it: `<` little, `>` big, `|` not applicable. */
export type ByteOrder = '<' | '>' | '|';
/** numpy's `dtype.kind`; records and subarrays are 'V'. */
export type Kind = 'b' | 'i' | 'u' | 'f' | 'c' | 'S' | 'U' | 'V' | 'M' | 'm' | 'O';

/**
 * This machine's byte order: `'<'` on little-endian hosts.
 * @example
 * parseDescr('=f4').byteOrder === NATIVE_ORDER;   // true
 */
export const NATIVE_ORDER: '<' | '>' = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? '<' : '>';

/** One field of a record dtype: its name, optional title, dtype and byte offset. */
export interface Field {
  readonly name: string;
  readonly title: string | null;
  readonly dtype: DType;
  /** Byte offset of the field inside one record. */
  readonly offset: number;
}

/** A descr as JSON-friendly data: a type string, or a list of `[name | [title, name], descr, shape?]`. */
export type DescrJSON = string | DescrFieldJSON[] | DescrSubarrayJSON;
/** A subarray used as a field's base, as numpy keeps it (`('c', ('<f8', (5,)), (2,))`): `[base, shape]`. */
export type DescrSubarrayJSON = [DescrJSON, number[]];
/** One field of a JSON record descr: `[name | [title, name], descr]`, with a subarray shape as third item. */
export type DescrFieldJSON = [string | [string, string], DescrJSON] | [string | [string, string], DescrJSON, number[]];

/**
 * The datetime64/timedelta64 units numpy knows, from years to attoseconds.
 * @example
 * DATETIME_UNITS.includes('ns');   // true
 */
export const DATETIME_UNITS = ['Y', 'M', 'W', 'D', 'h', 'm', 's', 'ms', 'us', 'ns', 'ps', 'fs', 'as'] as const;
/** A datetime64/timedelta64 unit, or `''` for a generic (unitless) one. */
export type DatetimeUnit = (typeof DATETIME_UNITS)[number] | '';

/** A subarray dtype's element dtype and fixed shape. */
export interface Subarray {
  readonly base: DType;
  readonly shape: readonly number[];
}

/** What every form of dtype has: kind, byte order, size, the datetime unit. */
interface DTypeCommonInit {
  kind: Kind;
  byteOrder: ByteOrder;
  itemsize: number;
  unit?: DatetimeUnit;
  multiplier?: number;
  mlFloat?: MlFloatName | null;
}

/**
 * A numpy dtype: a {@link ScalarDType}, a {@link SubarrayDType} or a {@link RecordDType}, told apart
 * by `form` (or by `fields` / `subarray` being non-null). `S` is the descr it was parsed from when
 * that was a literal (`DType<'<f4'>`), which carries the storage and element types into the arrays
 * made with it; `DescrInput` (any descr) otherwise.
 * @example
 * const dt = parseDescr([['x', '<f8'], ['n', '<i4', [2]]]);
 * if (dt.form === 'record') dt.fields.map((f) => f.name); // ['x', 'n']
 */
export type DType<S extends DescrInput = DescrInput> = ScalarDType<S> | SubarrayDType<S> | RecordDType<S>;

/**
 * What the three forms of dtype share: numpy's spellings (`str`, `descr`, `name`) and byte-order
 * conversion. Use the {@link DType} union in signatures; `x instanceof DType` tells a dtype from other values.
 * @example
 * const dt = parseDescr('>i8');
 * dt instanceof DTypeBase;   // true, as for every dtype
 * dt.name;                   // 'int64'
 */
export abstract class DTypeBase<S extends DescrInput = DescrInput> {
  /** Compile time only: the descr literal this dtype was parsed from. */
  declare readonly descrType?: S;
  /** Which of the three forms this is: a plain scalar type, a subarray, or a record. */
  abstract readonly form: 'scalar' | 'subarray' | 'record';
  /** Record fields in order (padding removed); null unless `form` is `'record'`. */
  abstract readonly fields: readonly Field[] | null;
  /** The element dtype and the fixed shape; null unless `form` is `'subarray'`. */
  abstract readonly subarray: Subarray | null;
  readonly kind: Kind;
  readonly byteOrder: ByteOrder;
  /** Bytes per element. */
  readonly itemsize: number;
  /** datetime64/timedelta64 unit ('' for generic) and multiplier (`m8[2s]` → 2). */
  readonly unit: DatetimeUnit;
  readonly multiplier: number;
  /**
   * The narrow float format of a `bfloat16`, float8, float6 or float4 dtype (ml_dtypes' types,
   * {@link ML_FLOATS}), null for every numpy type. Such a dtype has kind `'V'` and `str` `<V2`, `<V1` or `<f1`,
   * which is what ml_dtypes writes into a header; its kind family is `'mlfloat'`.
   */
  readonly mlFloat: MlFloatName | null;

  /** Narrows to the {@link DType} union: every DTypeBase is one of its three forms. */
  static [Symbol.hasInstance](value: unknown): value is DType {
    return Function.prototype[Symbol.hasInstance].call(this, value);
  }

  /** This dtype as the union of forms, for code that switches on `form`. */
  protected get asForm(): DType {
    return this as unknown as DType;
  }

  protected constructor(init: DTypeCommonInit) {
    this.kind = init.kind;
    this.byteOrder = init.byteOrder;
    this.itemsize = init.itemsize;
    this.unit = init.unit ?? '';
    this.multiplier = init.multiplier ?? 1;
    this.mlFloat = init.mlFloat ?? null;
  }

  /** True when stored bytes are in this machine's byte order already (or have none): reading them needs no swap. */
  get isNative(): boolean {
    return this.byteOrder === '|' || this.byteOrder === NATIVE_ORDER;
  }

  /** numpy's `dtype.str`: `<f4`, `|S5`, `<M8[ns]`; records and subarrays are `|V{itemsize}`. */
  get str(): string {
    if (this.fields || this.subarray) return `|V${this.itemsize}`;
    if (this.kind === 'O') return '|O';
    // ml_dtypes writes float8_e5m2 as `<f1` and the others as `<V{size}`.
    if (this.mlFloat) return `${this.byteOrder}${this.mlFloat === 'float8_e5m2' ? 'f' : 'V'}${this.itemsize}`;
    const code = this.kind === 'b' ? 'b' : this.kind;
    const size = this.kind === 'U' ? this.itemsize / 4 : this.itemsize;
    let s = `${this.byteOrder}${code}${size}`;
    if ((this.kind === 'M' || this.kind === 'm') && this.unit) {
      s += `[${this.multiplier === 1 ? '' : this.multiplier}${this.unit}]`;
    }
    return s;
  }

  /** numpy's `dtype.str` without its byte order: `f4`, `b1`, `U10`, `M8[ns]`, `O`; records and subarrays are `V{itemsize}`. */
  get typeCode(): string {
    return this.str.slice(1);
  }

  /**
   * Bytes of each real number in a float or complex element (a complex has two): 2, 4, 8, or 16 for
   * the x86 long double; 0 for every other kind.
   */
  get realBytes(): number {
    if (this.fields || this.subarray) return 0;
    return this.kind === 'f' ? this.itemsize : this.kind === 'c' ? this.itemsize / 2 : 0;
  }

  /** numpy's `dtype_to_descr`: the `str` of a plain dtype, the field list of a record. */
  get descr(): DescrJSON {
    return descrOf(this.asForm);
  }

  /** The descr as the Python literal numpy writes into a header. */
  get descrLiteral(): string {
    return reprPy(descrToPy(this.descr));
  }

  /** numpy's `dtype.name`: `float32`, `bytes40`, `str96`, `void56`, `datetime64[ns]`. */
  get name(): string {
    const bits = this.itemsize * 8;
    // numpy leaves the size off flexible types of size 0: `bytes`, `str`, `void`.
    const flexBits = bits === 0 ? '' : String(bits);
    if (this.mlFloat) return this.mlFloat;
    switch (this.kind) {
      case 'b':
        return 'bool';
      case 'i':
        return `int${bits}`;
      case 'u':
        return `uint${bits}`;
      case 'f':
        return `float${bits}`;
      case 'c':
        return `complex${bits}`;
      case 'S':
        return `bytes${flexBits}`;
      case 'U':
        return `str${flexBits}`;
      case 'V':
        return `void${flexBits}`;
      case 'O':
        return 'object';
      case 'M':
      case 'm': {
        const base = this.kind === 'M' ? 'datetime64' : 'timedelta64';
        return this.unit ? `${base}[${this.multiplier === 1 ? '' : this.multiplier}${this.unit}]` : base;
      }
    }
  }

  /** A short description in words: `little-endian 32-bit float`, `record of 3 fields (16 bytes)`. */
  get description(): string {
    if (this.fields) return `record of ${this.fields.length} field${this.fields.length === 1 ? '' : 's'} (${this.itemsize} bytes)`;
    if (this.subarray) return `subarray ${shapeRepr(this.subarray.shape)} of ${this.subarray.base.description}`;
    const endian = this.byteOrder === '<' ? 'little-endian ' : this.byteOrder === '>' ? 'big-endian ' : '';
    const bits = this.itemsize * 8;
    if (this.mlFloat) {
      const f = ML_FLOATS[this.mlFloat];
      return `${this.itemsize === 1 ? '' : endian}${f.bits}-bit float with ${f.exponentBits} exponent bits and ${f.mantissaBits} mantissa bits (ml_dtypes${f.bits < bits ? `, one per byte` : ''})`;
    }
    switch (this.kind) {
      case 'b':
        return 'boolean';
      case 'i':
        return `${endian}${bits}-bit signed integer`;
      case 'u':
        return `${endian}${bits}-bit unsigned integer`;
      case 'f':
        return this.realBytes === 16 ? `${endian}long double (x86 80-bit extended)` : `${endian}${bits}-bit float`;
      case 'c':
        return this.realBytes === 16 ? `${endian}complex long double` : `${endian}${bits}-bit complex`;
      case 'S':
        return `${this.itemsize}-byte string`;
      case 'U':
        return `${endian}unicode string of ${this.itemsize / 4} characters`;
      case 'V':
        return `${this.itemsize}-byte raw void`;
      case 'O':
        return 'Python object';
      case 'M':
        return `${endian}datetime64${this.unit ? ` in ${this.multiplier === 1 ? '' : this.multiplier}${this.unit}` : ''}`;
      case 'm':
        return `${endian}timedelta64${this.unit ? ` in ${this.multiplier === 1 ? '' : this.multiplier}${this.unit}` : ''}`;
    }
  }

  /** Number of scalar elements per item: the product of the subarray shape, 1 otherwise. */
  get subarraySize(): number {
    return this.subarray ? shapeSize(this.subarray.shape) : 1;
  }

  /** The same dtype with every multi-byte field in the given byte order. */
  withByteOrder(order: '<' | '>' | '='): DType {
    const target = order === '=' ? NATIVE_ORDER : order;
    const self = this.asForm;
    switch (self.form) {
      case 'record':
        return new RecordDType(
          self.itemsize,
          self.fields.map((f) => ({ ...f, dtype: f.dtype.withByteOrder(target) })),
        );
      case 'subarray': {
        const written = self.subarrayAsWritten ?? self.subarray;
        return subarrayDType(written.base.withByteOrder(target), written.shape);
      }
      case 'scalar':
        if (self.byteOrder === '|' || self.byteOrder === target) return self;
        return new ScalarDType({
          kind: self.kind,
          byteOrder: target,
          itemsize: self.itemsize,
          unit: self.unit,
          multiplier: self.multiplier,
          mlFloat: self.mlFloat,
        });
    }
  }

  /** True for identical layout and meaning (same descr). */
  equals(other: DType): boolean {
    return this.asForm === other || this.descrLiteral === other.descrLiteral;
  }

  /**
   * numpy's `repr(dtype)`, one line: `dtype('float32')`, `dtype('>i4')`, `dtype('<U3')`,
   * `dtype([('a', '<f4'), ('b', '<i8', (2,))])`, and `dtype(bfloat16)` for ml_dtypes' types.
   */
  get repr(): string {
    return `dtype(${dtypeConstructionRepr(this.asForm)})`;
  }

  /** numpy's repr (see {@link DTypeBase.repr}); {@link DTypeBase.descrLiteral} is the header's spelling. */
  toString(): string {
    return this.repr;
  }

  /** How Node's `console.log` and `util.inspect` show a dtype: its repr, on one line. */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this.repr;
  }
}

const KIND_NAMES: Record<string, string> = { i: 'int', u: 'uint', f: 'float', c: 'complex' };

/**
 * numpy's `_construction_repr`: what `repr(dtype)` writes inside `dtype(...)`, and, `short`, how a
 * record writes each field's dtype (`'<f8'`, `'S2'`, `'?'`): a packed record as its field list, one
 * with gaps or fields out of order as the dict of names, formats, offsets (titles) and itemsize.
 * @example
 * dtypeConstructionRepr(parseDescr('<f4'));         // "'float32'"
 * dtypeConstructionRepr(parseDescr('<f4'), true);   // "'<f4'"
 */
export function dtypeConstructionRepr(dt: DType, short = false): string {
  if (dt.form === 'record') return recordRepr(dt);
  if (dt.form === 'subarray') return `(${dtypeConstructionRepr(dt.subarray.base, true)}, ${shapeRepr(dt.subarray.shape)})`;
  // ml_dtypes' types are user dtypes to numpy: their type's name, unquoted.
  if (dt.mlFloat) return dt.mlFloat;
  const order = dt.byteOrder === '|' ? '' : dt.byteOrder;
  switch (dt.kind) {
    case 'b':
      return short ? "'?'" : "'bool'";
    case 'O':
      return "'O'";
    case 'S':
    case 'V':
      return `'${dt.kind}${dt.itemsize === 0 ? '' : dt.itemsize}'`;
    case 'U':
      return `'${order}U${dt.itemsize === 0 ? '' : dt.itemsize / 4}'`;
    case 'M':
    case 'm':
      return `'${order}${dt.kind}8${dt.unit ? `[${dt.multiplier === 1 ? '' : dt.multiplier}${dt.unit}]` : ''}'`;
    default:
      // Numbers: the long name in native order (`'float32'`), else the short code (`'>f4'`).
      return short || !dt.isNative ? `'${order}${dt.kind}${dt.itemsize}'` : `'${KIND_NAMES[dt.kind]}${dt.itemsize * 8}'`;
  }
}

/** numpy's `_struct_str` (a record is always numpy's void type here, so no type name is shown). */
function recordRepr(dt: RecordDType): string {
  const fields = dt.fields;
  let end = 0;
  const packed =
    fields.every((f) => {
      const inOrder = f.offset === end;
      end += f.dtype.itemsize;
      return inOrder;
    }) && end === dt.itemsize;
  if (packed) {
    return `[${fields
      .map((f) => {
        const name = f.title === null ? reprString(f.name) : `(${reprString(f.title)}, ${reprString(f.name)})`;
        const format =
          f.dtype.form === 'subarray'
            ? `${dtypeConstructionRepr(f.dtype.subarray.base, true)}, ${shapeRepr(f.dtype.subarray.shape)}`
            : dtypeConstructionRepr(f.dtype, true);
        return `(${name}, ${format})`;
      })
      .join(', ')}]`;
  }
  const titles = fields.some((f) => f.title !== null) ? `, 'titles': [${fields.map((f) => (f.title === null ? 'None' : reprString(f.title))).join(', ')}]` : '';
  return (
    `{'names': [${fields.map((f) => reprString(f.name)).join(', ')}], 'formats': [${fields.map((f) => dtypeConstructionRepr(f.dtype, true)).join(', ')}], ` +
    `'offsets': [${fields.map((f) => f.offset).join(', ')}]${titles}, 'itemsize': ${dt.itemsize}}`
  );
}

/** The value behind `instanceof DType`: every dtype is a {@link DTypeBase}. */
export const DType = DTypeBase;

/**
 * A plain scalar dtype: `<f4`, `|S5`, `<M8[ns]`, `|O`.
 * @example
 * const dt = parseDescr('<M8[ns]');
 * if (dt.form === 'scalar') dt.unit;   // 'ns'
 */
export class ScalarDType<S extends DescrInput = DescrInput> extends DTypeBase<S> {
  readonly form = 'scalar' as const;
  readonly fields = null;
  readonly subarray = null;
  readonly subarrayAsWritten = null;
  /** Internal: use {@link parseDescr}. */
  constructor(init: DTypeCommonInit) {
    super(init);
    Object.freeze(this);
  }
}

/**
 * A fixed-shape block of one element dtype (`('<f8', (2, 3))`), met as a record field's type.
 * @example
 * const m = parseDescr([['m', '<f4', [2, 3]]]).fields![0]!.dtype;
 * if (m.form === 'subarray') m.subarray.shape;   // [2, 3]
 */
export class SubarrayDType<S extends DescrInput = DescrInput> extends DTypeBase<S> {
  readonly form = 'subarray' as const;
  readonly fields = null;
  /** The flattened layout: a scalar or record element dtype and the full shape. */
  readonly subarray: Subarray;
  /**
   * For a subarray of a subarray (`(('<f8', (5,)), (2,))`): the nesting as written, which numpy
   * keeps (it is a different dtype from `('<f8', (2, 5))` for numpy's `==`). `subarray` holds the
   * flattened layout, which is the same.
   */
  readonly subarrayAsWritten: Subarray | null;
  /** Internal: use {@link subarrayDType}. */
  constructor(itemsize: number, subarray: Subarray, asWritten: Subarray | null) {
    super({ kind: 'V', byteOrder: '|', itemsize });
    this.subarray = subarray;
    this.subarrayAsWritten = asWritten;
    Object.freeze(this);
  }
}

/**
 * A structured dtype: named fields at byte offsets inside an item of `itemsize` bytes.
 * @example
 * const dt = parseDescr([['x', '<f8'], ['y', '<f8']]);
 * if (dt.form === 'record') dt.fields.map((f) => f.offset);   // [0, 8]
 */
export class RecordDType<S extends DescrInput = DescrInput> extends DTypeBase<S> {
  readonly form = 'record' as const;
  readonly fields: readonly Field[];
  readonly subarray = null;
  readonly subarrayAsWritten = null;
  /** Internal: use {@link recordDType}. */
  constructor(itemsize: number, fields: readonly Field[]) {
    super({ kind: 'V', byteOrder: '|', itemsize });
    this.fields = fields;
    Object.freeze(this);
  }
}

/**
 * Number of elements of a shape.
 * @example
 * shapeSize([2, 3, 4]);   // 24
 * shapeSize([]);          // 1 (a 0-d array holds one element)
 */
export function shapeSize(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/**
 * Python's repr of a shape tuple: `()`, `(5,)`, `(2, 3)`.
 * @example
 * shapeRepr([5]);   // '(5,)'
 */
export function shapeRepr(shape: readonly number[]): string {
  return shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
}

function descrOf(dt: DType): DescrJSON {
  if (dt.subarray) {
    // Only reachable for a subarray used directly; numpy's descr is then (base, shape).
    throw new NpyError('BAD_DESCR', 'a bare subarray dtype has no descr; use it as a record field or fold its shape into the array');
  }
  if (!dt.fields) return dt.str;
  // numpy's _array_descr: fields in order, '' void padding for gaps and the tail.
  const out: DescrFieldJSON[] = [];
  let offset = 0;
  for (const f of [...dt.fields].sort((a, b) => a.offset - b.offset)) {
    if (f.offset > offset) out.push(['', `|V${f.offset - offset}`]);
    else if (f.offset < offset) {
      throw new NpyError('BAD_DESCR', 'a record with overlapping fields has no descr', { field: f.name });
    }
    const name: string | [string, string] = f.title === null ? f.name : [f.title, f.name];
    const sub = f.dtype.subarrayAsWritten ?? f.dtype.subarray;
    if (sub) out.push([name, subarrayBaseDescr(sub.base), [...sub.shape]]);
    else out.push([name, descrOf(f.dtype)]);
    offset = f.offset + f.dtype.itemsize;
  }
  if (dt.itemsize > offset) out.push(['', `|V${dt.itemsize - offset}`]);
  return out;
}

/** The descr of a subarray's base: a nested subarray is written as its `(base, shape)` pair. */
function subarrayBaseDescr(base: DType): DescrJSON {
  const sub = base.subarrayAsWritten ?? base.subarray;
  return sub ? [subarrayBaseDescr(sub.base), [...sub.shape]] : descrOf(base);
}

/** A JSON descr's `[base, shape]` pair (rather than a field list): its second item is a list of numbers. */
function isSubarrayJSON(d: unknown): d is DescrSubarrayJSON {
  return (
    Array.isArray(d) &&
    d.length === 2 &&
    Array.isArray(d[1]) &&
    (d[1] as unknown[]).every((x) => typeof x === 'number') &&
    (typeof d[0] === 'string' || Array.isArray(d[0]))
  );
}

/** A JSON descr as the Python value numpy's repr prints (field entries are tuples). */
function descrToPy(d: DescrJSON): PyValue {
  if (typeof d === 'string') return d;
  if (isSubarrayJSON(d)) return new PyTuple([descrToPy(d[0]), new PyTuple(d[1])]);
  return (d as DescrFieldJSON[]).map((f) => {
    const name = typeof f[0] === 'string' ? f[0] : new PyTuple([f[0][0], f[0][1]]);
    const items: PyValue[] = [name, descrToPy(f[1])];
    if (f.length === 3) items.push(new PyTuple(f[2]));
    return new PyTuple(items);
  });
}

// ---------------------------------------------------------------------------------------------
// Parsing

/** One-character type codes (numpy's `dtype.char`) with their kind and size, for Linux x86-64. */
const CHAR_CODES: Record<string, [Kind, number]> = {
  '?': ['b', 1],
  b: ['i', 1],
  B: ['u', 1],
  h: ['i', 2],
  H: ['u', 2],
  i: ['i', 4],
  I: ['u', 4],
  l: ['i', 8],
  L: ['u', 8],
  q: ['i', 8],
  Q: ['u', 8],
  p: ['i', 8],
  P: ['u', 8],
  n: ['i', 8],
  N: ['u', 8],
  e: ['f', 2],
  f: ['f', 4],
  d: ['f', 8],
  g: ['f', 16],
  F: ['c', 8],
  D: ['c', 16],
  G: ['c', 32],
  S: ['S', 0],
  a: ['S', 0],
  U: ['U', 0],
  V: ['V', 0],
  O: ['O', 8],
  M: ['M', 8],
  m: ['m', 8],
  c: ['S', 1],
};

const SIZED_KINDS: Record<string, Kind> = {
  b: 'b',
  i: 'i',
  u: 'u',
  f: 'f',
  c: 'c',
  S: 'S',
  a: 'S',
  U: 'U',
  V: 'V',
  M: 'M',
  m: 'm',
  O: 'O',
};

const NAMED: Record<string, string> = {
  bool: '|b1',
  bool_: '|b1',
  int8: '|i1',
  uint8: '|u1',
  int16: 'i2',
  uint16: 'u2',
  int32: 'i4',
  uint32: 'u4',
  int64: 'i8',
  uint64: 'u8',
  float16: 'f2',
  float32: 'f4',
  float64: 'f8',
  float128: 'f16',
  longdouble: 'f16',
  complex64: 'c8',
  complex128: 'c16',
  complex256: 'c32',
  clongdouble: 'c32',
  half: 'f2',
  single: 'f4',
  double: 'f8',
  float: 'f8',
  int: 'i8',
  int_: 'i8',
  intp: 'i8',
  uintp: 'u8',
  byte: '|i1',
  ubyte: '|u1',
  short: 'i2',
  ushort: 'u2',
  intc: 'i4',
  uintc: 'u4',
  long: 'i8',
  ulong: 'u8',
  longlong: 'i8',
  ulonglong: 'u8',
  csingle: 'c8',
  cdouble: 'c16',
  complex: 'c16',
  object: '|O',
  object_: '|O',
  bytes: '|S0',
  bytes_: '|S0',
  str: '<U0',
  str_: '<U0',
  void: '|V0',
  datetime64: 'M8',
  timedelta64: 'm8',
};

const INT32_MAX = 2 ** 31 - 1;

const VALID_SIZES: Partial<Record<Kind, number[]>> = {
  b: [1],
  i: [1, 2, 4, 8],
  u: [1, 2, 4, 8],
  f: [2, 4, 8, 16],
  c: [8, 16, 32],
  M: [8],
  m: [8],
  O: [8],
};

function badDescr(message: string, field?: string): never {
  throw new NpyError('BAD_DESCR', message, field === undefined ? {} : { field });
}

/**
 * Parse a scalar type string as `np.dtype(str)` does: `<f4`, `f8`, `=i4`, `|S5`, `<U3`, `M8[2ns]`, `float64`.
 * @example
 * parseTypeString('float64').str;   // '<f8'
 * parseTypeString('M8[2s]').name;   // 'datetime64[2s]'
 */
export function parseTypeString(spec: string, field?: string): DType {
  // DTypes are immutable: one per spelling serves every field that uses it (a header of millions of
  // fields would otherwise hold millions of equal objects).
  const known = typeStringCache.get(spec);
  if (known) return known;
  const dt = parseTypeStringUncached(spec, field);
  if (typeStringCache.size >= 4096) typeStringCache.clear();
  typeStringCache.set(spec, dt);
  return dt;
}

const typeStringCache = new Map<string, DType>();

function parseTypeStringUncached(spec: string, field?: string): DType {
  const ml = /^([<>|=]?)(\w+)$/.exec(spec);
  if (ml && isMlFloatName(ml[2]!)) return mlFloatDType(ml[2], ml[1]);
  const m = /^([<>|=]?)([A-Za-z?_][A-Za-z_]*?)(\d*)(?:\[(\d*)([A-Za-z]+)\])?$/.exec(spec);
  if (!m) badDescr(`'${spec}' is not a numpy type string`, field);
  const [, order, code, digits, mult, unit] = m as unknown as [string, string, string, string, string | undefined, string | undefined];
  // Named types (`float64`, `datetime64[ns]`) carry their size in the name.
  if (code === 'f' && digits === '1') return mlFloatDType('float8_e5m2', order);
  const named = NAMED[code + digits];
  if (named !== undefined && code.length > 1) {
    const inner = /^([<>|=]?)(.*)$/.exec(named)!;
    return parseTypeStringUncached(`${order || inner[1]}${inner[2]}${unit ? `[${mult ?? ''}${unit}]` : ''}`, field);
  }
  if (code.length !== 1 || !(code in (digits === '' ? CHAR_CODES : SIZED_KINDS))) badDescr(`'${spec}' is not a numpy type string`, field);
  let [kind, size] = CHAR_CODES[code] ?? ['V', 0];
  if (digits !== '') {
    // With a size the letter names a kind: `b1` is bool, `c8` complex, `S5` bytes, `U3` text.
    const sized = SIZED_KINDS[code];
    const n = Number(digits);
    if (sized === undefined) badDescr(`'${spec}' is not a numpy type string`, field);
    if (!Number.isSafeInteger(n)) badDescr(`type size in '${spec}' is too large`, field);
    kind = sized;
    size = kind === 'U' ? n * 4 : n;
  }
  const sizes = VALID_SIZES[kind];
  if (sizes && !sizes.includes(size)) badDescr(`'${spec}' has an unsupported item size for kind '${kind}'`, field);
  if (!Number.isSafeInteger(size)) badDescr(`type size in '${spec}' is too large`, field);
  let dtUnit: DatetimeUnit = '';
  let multiplier = 1;
  if (unit !== undefined) {
    if (kind !== 'M' && kind !== 'm') badDescr(`'${spec}': only datetime64 and timedelta64 take a unit`, field);
    if (!(DATETIME_UNITS as readonly string[]).includes(unit)) {
      if (unit !== 'generic') badDescr(`'${spec}' has an unknown datetime unit '${unit}'`, field);
    } else dtUnit = unit as DatetimeUnit;
    multiplier = mult ? Number(mult) : 1;
    // numpy keeps the multiplier in a C int and refuses larger ones.
    if (!Number.isSafeInteger(multiplier) || multiplier < 1 || multiplier > INT32_MAX)
      badDescr(`'${spec}' has an invalid unit multiplier (numpy takes 1 to ${INT32_MAX})`, field);
  }
  const oneByteOrder = kind === 'U' ? false : size <= 1 || kind === 'S' || kind === 'V' || kind === 'O' || kind === 'b';
  const byteOrder: ByteOrder = oneByteOrder ? '|' : order === '<' || order === '>' ? order : NATIVE_ORDER;
  return new ScalarDType({ kind, byteOrder, itemsize: size, unit: dtUnit, multiplier });
}

/**
 * A narrow float dtype (ml_dtypes' `bfloat16`, `float8_e4m3fn`, `float4_e2m1fn`, ...). Its byte order is
 * `<` unless `>` is asked (ml_dtypes writes `<` even for one byte). `<f1` is float8_e5m2: numpy
 * cannot read it, and ml_dtypes writes float8_e5m2 that way.
 * @example
 * mlFloatDType('bfloat16').str;   // '<V2'
 */
export function mlFloatDType(name: MlFloatName, order: string = '<'): DType {
  const byteOrder = order === '>' || (order === '=' && NATIVE_ORDER === '>') ? '>' : '<';
  return new ScalarDType({ kind: 'V', byteOrder, itemsize: ML_FLOATS[name].itemsize, mlFloat: name });
}

/**
 * A plain void dtype read as the narrow float format it holds: ml_dtypes writes `bfloat16` as `<V2`
 * and `float8_e4m3fn` as `<V1`, which reads back as raw bytes. Refused unless the dtype is plain
 * void of the format's size (or the format itself).
 * @example
 * voidAsMlFloat(parseDescr('<V2'), 'bfloat16').name;   // 'bfloat16'
 */
export function voidAsMlFloat(dtype: DType, name: MlFloatName): DType {
  if (dtype.mlFloat === name) return dtype;
  if (dtype.form !== 'scalar' || dtype.kind !== 'V' || dtype.mlFloat || dtype.itemsize !== ML_FLOATS[name].itemsize) {
    throw new NpyError(
      'DTYPE_MISMATCH',
      `the data is ${dtype.str} (${dtype.name}), not the ${ML_FLOATS[name].itemsize}-byte void that ml_dtypes writes for ${name}; read it without the ${name} option`,
    );
  }
  return mlFloatDType(name);
}

/**
 * Build a subarray dtype. A `()` shape is the base itself. A subarray of a subarray keeps its
 * nesting for the descr (as numpy does) and is laid out as the flattened `(base, shape + inner)`.
 * @example
 * subarrayDType(parseDescr('<f4'), [2, 3]).itemsize;   // 24
 */
export function subarrayDType(base: DType, shape: readonly number[], field?: string): DType {
  for (const d of shape) {
    if (!Number.isSafeInteger(d) || d < 0) badDescr(`invalid subarray dimension ${d}`, field);
  }
  if (shape.length === 0) return base;
  // numpy: "invalid shape in fixed-type tuple", "invalid itemsize in generic type tuple".
  if (shape.length > 64) badDescr(`a subarray of ${shape.length} dimensions: numpy supports at most 64`, field);
  if (base.itemsize === 0 && !base.fields && !base.subarray)
    badDescr(`a subarray of ${base.str}: numpy refuses subarrays of zero-size items (invalid itemsize)`, field);
  const fullShape = base.subarray ? [...shape, ...base.subarray.shape] : [...shape];
  if (fullShape.length > 64) badDescr(`a subarray of ${fullShape.length} dimensions: numpy supports at most 64`, field);
  const elem = base.subarray ? base.subarray.base : base;
  const itemsize = elem.itemsize * shapeSize(fullShape);
  if (!Number.isSafeInteger(itemsize)) throw new NpyError('SIZE_OVERFLOW', 'subarray size overflows', field === undefined ? {} : { field });
  return new SubarrayDType(itemsize, { base: elem, shape: fullShape }, base.subarray ? { base, shape: [...shape] } : null);
}

/** A field for {@link recordDType}: name, dtype, and optionally title, offset and subarray shape. */
export interface FieldSpec {
  name: string;
  dtype: DType | string;
  title?: string | null;
  offset?: number;
  shape?: number[];
}

/**
 * Build a record dtype. Offsets default to packed, in order; itemsize defaults to the end of the last field.
 * @example
 * recordDType([{ name: 'id', dtype: '<u4' }, { name: 'pos', dtype: '<f8', shape: [3] }]).itemsize;   // 28
 */
export function recordDType(specs: FieldSpec[], itemsize?: number): DType {
  const fields: Field[] = [];
  const seen = new Set<string>();
  let end = 0;
  for (const s of specs) {
    let dt = typeof s.dtype === 'string' ? parseDescr(s.dtype) : s.dtype;
    if (s.shape) dt = subarrayDType(dt, s.shape, s.name);
    const offset = s.offset ?? end;
    for (const key of [s.name, s.title]) {
      if (key === undefined || key === null) continue;
      if (seen.has(key)) badDescr(`field name or title '${key}' appears twice`, s.name);
      seen.add(key);
    }
    fields.push({ name: s.name, title: s.title ?? null, dtype: dt, offset });
    end = Math.max(end, offset + dt.itemsize);
  }
  const size = itemsize ?? end;
  if (size < end) badDescr(`itemsize ${size} is smaller than the fields need (${end})`);
  return new RecordDType(size, fields);
}

function toShape(v: PyValue, path: string): number[] {
  const items = v instanceof PyTuple ? v.items : typeof v === 'number' ? [v] : null;
  if (!items) badDescr('a subarray shape must be a tuple of integers', path);
  return items.map((x) => {
    if (typeof x !== 'number' || !Number.isInteger(x) || x < 0) badDescr(`invalid subarray dimension ${reprPy(x)}`, path);
    return x;
  });
}

function descrFromPy(v: PyValue, path: string, depth: number): DType {
  if (depth > 64) badDescr('record nesting deeper than 64 levels', path || undefined);
  if (typeof v === 'string') return parseTypeString(v, path || undefined);
  if (v instanceof PyTuple) {
    // A top-level (base, shape) pair: a subarray dtype.
    if (v.items.length !== 2) badDescr('a tuple descr must be (descr, shape)', path || undefined);
    return subarrayDType(descrFromPy(v.items[0]!, path, depth + 1), toShape(v.items[1]!, path), path || undefined);
  }
  if (!Array.isArray(v)) badDescr(`descr must be a string or a list of fields, not ${reprPy(v).slice(0, 40)}`, path || undefined);
  const specs: FieldSpec[] = [];
  let offset = 0;
  v.forEach((entry, i) => {
    const where = path ? `${path}[${i}]` : `[${i}]`;
    const items = entry instanceof PyTuple ? entry.items : Array.isArray(entry) ? entry : null;
    if (!items || (items.length !== 2 && items.length !== 3)) badDescr('each field must be (name, descr) or (name, descr, shape)', where);
    const [nameV, fieldDescr, shapeV] = items as [PyValue, PyValue, PyValue?];
    let title: string | null = null;
    let name: string;
    if (typeof nameV === 'string') name = nameV;
    else if (nameV instanceof PyTuple && nameV.items.length === 2 && typeof nameV.items[1] === 'string') {
      name = nameV.items[1];
      const t = nameV.items[0];
      if (typeof t !== 'string') badDescr('a field title must be a string', where);
      title = t;
    } else badDescr('a field name must be a string or a (title, name) pair', where);
    const fieldPath = path ? `${path}.${name}` : name;
    let dt = descrFromPy(fieldDescr!, fieldPath || where, depth + 1);
    if (shapeV !== undefined) dt = subarrayDType(dt, toShape(shapeV, fieldPath), fieldPath);
    // numpy's descr_to_dtype: a ''-named plain void field is padding that only advances the offset.
    const isPadding = name === '' && dt.kind === 'V' && !dt.fields && !dt.subarray && !dt.mlFloat;
    // Any other field named '' is a real field (numpy's own test_load_padded_dtype has one).
    if (!isPadding) specs.push({ name, title, dtype: dt, offset });
    offset += dt.itemsize;
    if (!Number.isSafeInteger(offset)) throw new NpyError('SIZE_OVERFLOW', 'record size overflows', { field: fieldPath });
  });
  return recordDType(specs, offset);
}

/**
 * Parse a descr into a {@link DType}: a type string (`'<f4'`), the Python literal of a header's
 * descr (`"[('a', '<i4')]"`), or its JSON form (`[['a', '<i4']]`).
 * @example
 * parseDescr('<f4').itemsize;                       // 4
 * parseDescr([['x', '<f8'], ['y', '<f8']]).fields;   // two fields
 */
export function parseDescr<S extends DescrInput>(descr: DType<S>): DType<S>;
export function parseDescr<const S extends DescrInput>(descr: S): DType<S>;
export function parseDescr(descr: string | DescrJSON | PyValue | DType): DType;
export function parseDescr(descr: string | DescrJSON | PyValue | DType): DType {
  if (descr instanceof DType) return descr;
  if (typeof descr === 'string') {
    const t = descr.trim();
    if (t.startsWith('[') || t.startsWith('(')) return descrFromPy(parsePyLiteral(t), '', 0);
    return parseTypeString(t);
  }
  return descrFromPy(jsonToPy(descr as PyValue), '', 0);
}

/** Accept the JSON descr form (arrays for tuples) by turning field entries into tuples. */
function jsonToPy(v: PyValue): PyValue {
  if (!Array.isArray(v)) return v;
  if (isSubarrayJSON(v)) return new PyTuple([jsonToPy(v[0] as PyValue), new PyTuple(v[1] as PyValue[])]);
  return v.map((f) => {
    if (!Array.isArray(f)) return f;
    const [name, d, shape] = f as PyValue[];
    const items: PyValue[] = [Array.isArray(name) ? new PyTuple(name) : name!, jsonToPy(d!)];
    if (shape !== undefined) items.push(Array.isArray(shape) ? new PyTuple(shape) : shape);
    return new PyTuple(items);
  });
}

/** Internal: descr parsing from an already-parsed header value. */
export function dtypeFromHeaderValue(v: PyValue): DType {
  return descrFromPy(v, '', 0);
}
