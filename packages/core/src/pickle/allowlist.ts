/**
 * The globals a pickle may name: numpy's array, dtype and scalar reconstruction (1.x and 2.x
 * spellings, ndarray subclasses and masked arrays rebuilt as plain data) and the builtins and
 * standard-library types object arrays carry. Each is rebuilt as data; nothing is imported or called.
 */
import { DType, parseTypeString, type RecordDType, recordDType, subarrayDType, shapeSize, NATIVE_ORDER, type FieldSpec } from '../format/dtype.js';
import { readFromBytes } from '../array/read-value.js';
import { NpyError } from '../errors.js';
import { NdArray, isOrderFree } from '../array/ndarray.js';
import { integerOfText } from '../array/json.js';
import { PyComplex, PyDate, PyDatetime, PyDecimal, PyFraction, PyMaskedArray, PySlice, PyTime, PyTimedelta, PyTimezone, pyFrozenset } from './python-values.js';
import { bytesToData } from '../array/layout.js';
import { hasObject } from '../npy.js';
import { Dict, List, Pending, Tuple, bad, settle } from './vm-values.js';

/** ndarray and its subclasses (recarray, matrix): classes that _reconstruct takes, never called. */
export const NDARRAY_CLASS = Symbol('numpy.ndarray');
/** numpy.record: the scalar type record dtypes of recarrays name instead of a type code. */
const RECORD_TYPE = Symbol('numpy.record');
/** numpy.ma.MaskedArray: the class _mareconstruct takes. */
const MASKED_CLASS = Symbol('numpy.ma.MaskedArray');
type ClassMarker = typeof NDARRAY_CLASS | typeof RECORD_TYPE | typeof MASKED_CLASS;
const STRING_DTYPE = parseTypeString('|O');

// ---------------------------------------------------------------------------------------------
// Allowlisted globals

export type Constructor = (args: unknown[]) => unknown;

function arg<T>(args: unknown[], i: number, check: (v: unknown) => v is T, what: string, callee: string): T {
  const v = args[i];
  if (!check(v)) bad(`${callee}: argument ${i + 1} must be ${what}`);
  return v;
}
const isInt = (v: unknown): v is number | bigint => typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v));
const isString = (v: unknown): v is string => typeof v === 'string';

function int(v: number | bigint): number {
  const n = Number(v);
  if (!Number.isSafeInteger(n)) bad(`integer ${v} is out of range`);
  return n;
}

function iterableItems(v: unknown, callee: string): unknown[] {
  if (v === undefined) return [];
  // A list: as the VM holds it, or settled into its array (a constructor's arguments are settled).
  if (v instanceof List) return v.array();
  if (Array.isArray(v)) return v;
  if (v instanceof Tuple) return v.items;
  if (v instanceof Set) return [...v];
  if (v instanceof Dict) return [...v.toMap().keys()];
  return bad(`${callee}: needs a list, tuple or set`);
}

class PendingDType extends Pending {
  constructor(readonly code: string) {
    super();
  }
  build(state: unknown): void {
    this.resolved = dtypeFromPickle(this.code, state);
  }
}

class PendingArray extends Pending {
  build(state: unknown): void {
    const s = state instanceof Tuple ? state.items : bad('ndarray state must be a tuple');
    // (version, shape, dtype, is_fortran, data); version 0 lacks the version field.
    const [shapeV, dtypeV, fortranV, dataV] = s.length === 5 ? s.slice(1) : s;
    const shape = iterableItems(shapeV, 'ndarray shape').map((d) => (isInt(d) ? int(d) : bad('ndarray shape must hold integers')));
    const dtype = settle(dtypeV);
    if (!(dtype instanceof DType)) bad('ndarray state has no dtype');
    const fortran = fortranV === true || fortranV === 1;
    this.resolved = buildArray(dtype, shape, fortran, dataV);
  }
}

/** `numpy.ma.core._mareconstruct`: state (version, shape, dtype, is_fortran, data, mask, fill_value). */
class PendingMasked extends Pending {
  build(state: unknown): void {
    const s = state instanceof Tuple && state.items.length >= 6 ? state.items : bad('masked array state must be a 7-tuple');
    const shape = iterableItems(s[1], 'masked array shape').map((d) => (isInt(d) ? int(d) : bad('masked array shape must hold integers')));
    const dtype = settle(s[2]);
    if (!(dtype instanceof DType)) bad('masked array state has no dtype');
    const fortran = s[3] === true || s[3] === 1;
    const data = buildArray(dtype, shape, fortran, s[4]);
    const mask = buildArray(maskDType(dtype), shape, fortran, s[5]);
    this.resolved = new PyMaskedArray(data, mask, s[6] ?? null);
  }
}

/** numpy.ma's mask dtype: a boolean for each scalar, keeping record fields and subarrays. */
function maskDType(dtype: DType): DType {
  if (dtype.fields) return recordDType(dtype.fields.map((f) => ({ name: f.name, title: f.title, dtype: maskDType(f.dtype) })));
  if (dtype.subarray) return subarrayDType(maskDType(dtype.subarray.base), dtype.subarray.shape);
  return parseTypeString('|b1');
}

function buildArray(dtype: DType, shape: number[], fortran: boolean, data: unknown): NdArray {
  const size = shapeSize(shape);
  if (hasObject(dtype)) {
    // Object arrays pickle a list of their elements in logical C order, even when Fortran-ordered.
    // The list is in logical C order; the array keeps the order it was saved in (np.save of the
    // loaded array writes fortran_order True again), so the values are laid out in that order.
    // A copy: the list may be referenced elsewhere in the pickle, and an array holds its own elements.
    const items = data instanceof List ? data.copy() : iterableItems(data, 'ndarray data').slice();
    if (items.length !== size) bad(`object array of shape (${shape.join(', ')}) holds ${items.length} items`);
    const values = dtype.fields ? items.map((t) => recordFromTuple(dtype, t)) : items;
    const order = fortran && !isOrderFree(shape) ? 'F' : 'C';
    return new NdArray(dtype, shape, order === 'F' ? cToFortran(values, shape) : values, order);
  }
  let raw: Uint8Array;
  if (data instanceof Uint8Array) raw = data;
  else if (typeof data === 'string')
    raw = latin1Bytes(data); // Python 2 pickles carry str
  else return bad('ndarray data must be bytes');
  const need = size * dtype.itemsize;
  if (raw.length !== need) bad(`array of shape (${shape.join(', ')}) and dtype ${dtype.str} needs ${need} bytes, the pickle holds ${raw.length}`);
  const own = raw.slice(); // aligned, and not shared with the pickle bytes
  const typed = dtype.itemsize === 0 ? new Uint8Array(0) : bytesToData(dtype, own.buffer, 0, size, { owned: true });
  return new NdArray(dtype, shape, typed, fortran && !isOrderFree(shape) ? 'F' : 'C');
}

/** Bytes as latin-1 text, byte by byte (a spread into fromCharCode overflows the stack on a long run). */
function latin1Text(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return s;
}

/** Values listed in C order, rearranged into Fortran memory order. */
function cToFortran(values: unknown[], shape: readonly number[]): unknown[] {
  const out = new Array<unknown>(values.length);
  const n = shape.length;
  const idx = new Array<number>(n).fill(0);
  const fStrides = new Array<number>(n);
  for (let a = 0, s = 1; a < n; a++) {
    fStrides[a] = s;
    s *= shape[a]!;
  }
  for (let i = 0; i < values.length; i++) {
    let at = 0;
    for (let a = 0; a < n; a++) at += idx[a]! * fStrides[a]!;
    out[at] = values[i];
    for (let a = n - 1; a >= 0; a--) {
      if (++idx[a]! < shape[a]!) break;
      idx[a] = 0;
    }
  }
  return out;
}

function recordFromTuple(dtype: RecordDType, t: unknown): Record<string, unknown> {
  const items = t instanceof Tuple ? t.items : t instanceof List ? t.array() : Array.isArray(t) ? t : bad('a record element must be a tuple');
  if (items.length !== dtype.fields.length) bad(`a record element has ${items.length} fields, the dtype ${dtype.fields.length}`);
  return Object.fromEntries(dtype.fields.map((f, i) => [f.name, items[i]]));
}

export function latin1Bytes(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 0xff) bad('text meant as bytes has characters beyond latin-1');
    out[i] = c;
  }
  return out;
}

/** numpy's dtype pickle: `dtype(code, align, copy)` and the state (version, byteorder, subarray, names, fields, elsize, alignment, flags[, metadata]). */
function dtypeFromPickle(code: string, state: unknown): DType {
  const s = state instanceof Tuple ? state.items : bad('dtype state must be a tuple');
  const order = s[1];
  const subarray = settle(s[2]);
  const names = settle(s[3]);
  const fields = s[4];
  const elsize = s[5];
  if (subarray instanceof Tuple) {
    const base = settle(subarray.items[0]);
    if (!(base instanceof DType)) bad('subarray dtype has no base dtype');
    return subarrayDType(
      base,
      iterableItems(subarray.items[1], 'subarray shape').map((d) => int(d as number)),
    );
  }
  if (names instanceof Tuple && fields instanceof Dict) {
    const byName = fields.toMap();
    const specs: FieldSpec[] = names.items.map((n) => {
      const entry = byName.get(n);
      if (!(entry instanceof Tuple)) bad(`dtype field '${String(n)}' has no (dtype, offset) entry`);
      const dt = settle(entry.items[0]);
      if (!(dt instanceof DType) || !isInt(entry.items[1])) bad(`dtype field '${String(n)}' is malformed`);
      const title = entry.items[2];
      return { name: String(n), dtype: dt, offset: int(entry.items[1]), title: typeof title === 'string' ? title : null };
    });
    return recordDType(specs, isInt(elsize) ? int(elsize) : undefined);
  }
  const letter = code.replace(/\d+$/, '');
  const byteOrder = order === '>' || order === '<' ? order : order === '=' ? NATIVE_ORDER : '|';
  let spec = code;
  if ((letter === 'S' || letter === 'U' || letter === 'V') && isInt(elsize) && Number(elsize) >= 0) {
    spec = `${letter}${letter === 'U' ? Number(elsize) / 4 : Number(elsize)}`;
  }
  if (letter === 'M' || letter === 'm') {
    const meta = s[8] instanceof Tuple ? s[8].items[1] : undefined;
    if (meta instanceof Tuple) {
      const unitBytes = meta.items[0];
      const unit = unitBytes instanceof Uint8Array ? latin1Text(unitBytes) : String(unitBytes);
      const mult = meta.items[1];
      spec += unit === 'generic' ? '' : `[${mult === 1 ? '' : String(mult)}${unit}]`;
    }
  }
  return parseTypeString(`${byteOrder === '|' ? '' : byteOrder}${spec}`);
}

function datetimeFrom(args: unknown[], kind: 'date' | 'time' | 'datetime'): unknown {
  const b = args[0];
  if (!(b instanceof Uint8Array)) {
    // datetime(year, month, day, ...) with integers (protocol 0 from Python 2 writes bytes too).
    const n = args.map((x) => (isInt(x) ? int(x) : 0));
    if (kind === 'date') return new PyDate(n[0]!, n[1]!, n[2]!);
    if (kind === 'time') return new PyTime(n[0] ?? 0, n[1] ?? 0, n[2] ?? 0, n[3] ?? 0);
    return new PyDatetime(n[0]!, n[1]!, n[2]!, n[3] ?? 0, n[4] ?? 0, n[5] ?? 0, n[6] ?? 0);
  }
  const tz = settle(args[1]);
  const offset = tz instanceof PyTimezone ? tz.utcOffsetSeconds : tz === undefined || tz === null ? null : bad(`${kind}: unsupported tzinfo`);
  if (kind === 'date') {
    if (b.length !== 4) bad('date state must be 4 bytes');
    return new PyDate(b[0]! * 256 + b[1]!, b[2]!, b[3]!);
  }
  if (kind === 'time') {
    if (b.length !== 6) bad('time state must be 6 bytes');
    const fold = b[0]! >= 128 ? 1 : 0;
    return new PyTime(b[0]! & 0x7f, b[1]!, b[2]!, (b[3]! << 16) | (b[4]! << 8) | b[5]!, offset, fold);
  }
  if (b.length !== 10) bad('datetime state must be 10 bytes');
  const fold = b[2]! >= 128 ? 1 : 0;
  return new PyDatetime(b[0]! * 256 + b[1]!, b[2]! & 0x7f, b[3]!, b[4]!, b[5]!, b[6]!, (b[7]! << 16) | (b[8]! << 8) | b[9]!, offset, fold);
}

const numpyArray: Constructor = () => new PendingArray();
const numpyScalar: Constructor = (args) => {
  const dt = settle(args[0]);
  if (!(dt instanceof DType)) bad('scalar: needs a dtype');
  if (hasObject(dt)) return args[1];
  const data = args[1] instanceof Uint8Array ? args[1] : typeof args[1] === 'string' ? latin1Bytes(args[1]) : bad('scalar: needs bytes');
  if (data.length !== dt.itemsize) bad(`scalar of ${dt.str} needs ${dt.itemsize} bytes`);
  return readFromBytes(dt, data.slice(), 0);
};
const numpyFrombuffer: Constructor = (args) => {
  const dt = settle(args[1]);
  if (!(dt instanceof DType)) bad('_frombuffer: needs a dtype');
  // numpy rebuilds it with np.frombuffer, which refuses zero-size items whatever the shape claims
  // ("itemsize cannot be zero in type"): refused before the shape is looked at.
  if (dt.itemsize === 0) bad(`_frombuffer: dtype ${dt.str} has items of zero bytes, which numpy's frombuffer refuses`);
  const shape = iterableItems(args[2], '_frombuffer shape').map((d) => int(d as number));
  return buildArray(dt, shape, args[3] === 'F', args[0]);
};

const ALLOWED: Record<string, Constructor | ClassMarker> = {
  'numpy.core.multiarray _reconstruct': numpyArray,
  'numpy._core.multiarray _reconstruct': numpyArray,
  'numpy.core._internal _reconstruct': numpyArray, // numpy before 1.0
  'numpy ndarray': NDARRAY_CLASS,
  // ndarray subclasses from the wild, rebuilt as plain arrays (their Python behaviour is not data).
  'numpy recarray': NDARRAY_CLASS,
  'numpy.rec recarray': NDARRAY_CLASS,
  'numpy.core.records recarray': NDARRAY_CLASS,
  'numpy._core.records recarray': NDARRAY_CLASS,
  'numpy matrix': NDARRAY_CLASS,
  'numpy.matrixlib.defmatrix matrix': NDARRAY_CLASS,
  'numpy record': RECORD_TYPE,
  'numpy.rec record': RECORD_TYPE,
  'numpy.core.records record': RECORD_TYPE,
  'numpy._core.records record': RECORD_TYPE,
  'numpy.ma.core _mareconstruct': (args) => {
    if (!(args[0] instanceof Global && args[0].target === MASKED_CLASS)) bad('_mareconstruct: only numpy.ma.MaskedArray is supported');
    return new PendingMasked();
  },
  'numpy.ma MaskedArray': MASKED_CLASS,
  'numpy.ma.core MaskedArray': MASKED_CLASS,
  'numpy dtype': (args) => new PendingDType(args[0] instanceof Global && args[0].target === RECORD_TYPE ? 'V' : arg(args, 0, isString, 'a type code', 'dtype')),
  'numpy.core.multiarray scalar': numpyScalar,
  'numpy._core.multiarray scalar': numpyScalar,
  'numpy.core.numeric _frombuffer': numpyFrombuffer,
  'numpy._core.numeric _frombuffer': numpyFrombuffer,
  // numpy 2's StringDType: its arrays pickle their text as a list of str, like object arrays.
  'numpy._core._internal _convert_to_stringdtype_kwargs': () => STRING_DTYPE,
  'numpy.core._internal _convert_to_stringdtype_kwargs': () => STRING_DTYPE,
  'builtins complex': (args) => new PyComplex(Number(args[0] ?? 0), Number(args[1] ?? 0)),
  'builtins set': (args) => new Set(iterableItems(args[0], 'set')),
  'builtins frozenset': (args) => pyFrozenset(new Set(iterableItems(args[0], 'frozenset'))),
  'builtins bytearray': (args) =>
    args.length === 0
      ? new Uint8Array(0)
      : args[0] instanceof Uint8Array
        ? args[0].slice()
        : typeof args[0] === 'string'
          ? latin1Bytes(args[0])
          : new Uint8Array(iterableItems(args[0], 'bytearray').map((x) => int(x as number))),
  'builtins slice': (args) => new PySlice('slice', args[0] ?? null, args[1] ?? null, args[2] ?? null),
  'builtins range': (args) => new PySlice('range', args[0], args[1], args[2] ?? 1),
  '_codecs encode': (args) => {
    // Protocol 2 writes bytes as _codecs.encode(text, 'latin1'); nothing else is accepted.
    if (args[1] !== 'latin1' && args[1] !== 'latin-1') bad(`_codecs.encode with encoding ${JSON.stringify(args[1])} is not allowed`);
    return latin1Bytes(arg(args, 0, isString, 'text', '_codecs.encode'));
  },
  'collections OrderedDict': (args) => {
    const d = new Dict();
    // OrderedDict(mapping) and Counter(mapping) (how a Counter pickles): its pairs, in order.
    const from = args[0];
    if (from instanceof Dict) {
      const pairs = from.copy();
      d.add(pairs, 0, pairs.length);
      return d;
    }
    for (const kv of iterableItems(args[0], 'OrderedDict')) {
      const pair = kv instanceof Tuple ? kv.items : kv instanceof List ? kv.array() : Array.isArray(kv) ? kv : bad('OrderedDict items must be pairs');
      if (pair.length !== 2) bad('OrderedDict items must be pairs');
      d.add(pair, 0, 2);
    }
    return d;
  },
  'datetime date': (args) => datetimeFrom(args, 'date'),
  'datetime time': (args) => datetimeFrom(args, 'time'),
  'datetime datetime': (args) => datetimeFrom(args, 'datetime'),
  'datetime timedelta': (args) => new PyTimedelta(int(arg(args, 0, isInt, 'days', 'timedelta')), int((args[1] as number) ?? 0), int((args[2] as number) ?? 0)),
  'datetime timezone': (args) => {
    const td = settle(args[0]);
    if (!(td instanceof PyTimedelta)) bad('timezone: needs a timedelta');
    return new PyTimezone(td.days * 86400 + td.seconds, typeof args[1] === 'string' ? args[1] : null);
  },
  'decimal Decimal': (args) => new PyDecimal(String(arg(args, 0, isString, 'text', 'Decimal'))),
  'fractions Fraction': (args) => {
    if (typeof args[0] === 'string') {
      const m = /^\s*([+-]?\d+)(?:\/(\d+))?\s*$/.exec(args[0]);
      if (!m) bad(`Fraction(${JSON.stringify(args[0])}) is not an exact fraction`);
      return new PyFraction(integerOfText(m[1]!), integerOfText(m[2] ?? '1'));
    }
    return new PyFraction(BigInt(arg(args, 0, isInt, 'an integer', 'Fraction')), BigInt((args[1] as number | bigint) ?? 1));
  },
};
// Python 2 spelled builtins as __builtin__ (and Python 3 writes range as xrange for protocols < 3).
for (const k of Object.keys(ALLOWED)) if (k.startsWith('builtins ')) ALLOWED[`__builtin__ ${k.slice(9)}`] = ALLOWED[k]!;
ALLOWED['__builtin__ xrange'] = ALLOWED['builtins range']!;

export class Global {
  constructor(
    readonly qualified: string,
    readonly target: Constructor | ClassMarker,
    /** What a reference to the global stands for as data (a torch dtype named as a value), if anything. */
    readonly value?: unknown,
  ) {}
}

export function resolveGlobal(module: string, name: string, offset: number): Global {
  const key = `${module} ${name}`;
  const target = Object.hasOwn(ALLOWED, key) ? ALLOWED[key] : undefined;
  if (!target) {
    throw new NpyError(
      'PICKLE_FORBIDDEN',
      `pickle: refusing to load global '${module}.${name}': npyts only rebuilds numpy arrays, dtypes, scalars and plain Python data, and never runs code`,
      { offset },
    );
  }
  return new Global(key, target);
}

/**
 * The constructor of a Python builtin this allowlist rebuilds (`builtins set`, `collections
 * OrderedDict`, `_codecs encode`), for other dialects' allowlists to share; undefined for any other name.
 * @internal
 */
export function builtinConstructor(qualified: string): Constructor | undefined {
  if (!/^(builtins|collections|_codecs) /.test(qualified) || !Object.hasOwn(ALLOWED, qualified)) return undefined;
  const target = ALLOWED[qualified];
  return typeof target === 'function' ? target : undefined;
}
