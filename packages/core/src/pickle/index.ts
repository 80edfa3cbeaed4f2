/**
 * @npyts/core/pickle — a safe reader and writer for the pickles numpy stores object arrays in.
 *
 * The reader is a pickle virtual machine over the opcodes of protocols 0–5. It never imports or
 * calls anything: GLOBAL/STACK_GLOBAL resolve only names from a fixed allowlist of constructors
 * that it rebuilds as plain data (numpy arrays, dtypes and scalars, and the builtins and standard
 * library types object arrays carry); any other name is an error that names it. Memo size, MARK
 * depth, container nesting and allocated bytes are bounded, and every malformed input ends in an
 * NpyError.
 */
import { DType, parseTypeString, recordDType, subarrayDType, shapeSize, NATIVE_ORDER, type FieldSpec } from '../format/dtype.js';
import { readFromBytes } from '../array/read-value.js';
import { NpyError } from '../errors.js';
import { NdArray } from '../array/ndarray.js';
import { PyComplex, PyDate, PyDatetime, PyDecimal, PyFraction, PyMaskedArray, PySlice, PyTime, PyTimedelta, PyTimezone } from './python-values.js';
import { putOwn } from '../array/safe-object.js';
import { bytesToData, dataToBytes, type TypedArray } from '../array/layout.js';
import { hasObject, type ObjectArrayCodec } from '../npy.js';
import { encodeHeader, type NpyHeader } from '../format/header.js';
import { isOrderFree } from '../array/ndarray.js';
import type { UnpickleLimits } from '../npy.js';

export * from './python-values.js';

export type UnpickleOptions = UnpickleLimits;
export type { ObjectArrayCodec, UnpickleLimits };

function bad(message: string, offset?: number): never {
  throw new NpyError('BAD_ARRAY', `pickle: ${message}`, offset === undefined ? {} : { offset });
}

/** A Python tuple while the VM runs (turned into an Array in the result). */
class Tuple {
  constructor(readonly items: unknown[]) {}
}

/** The result of an allowlisted constructor that BUILD completes later. */
abstract class Pending {
  resolved: unknown = undefined;
  abstract build(state: unknown): void;
}

/** ndarray and its subclasses (recarray, matrix): classes that _reconstruct takes, never called. */
const NDARRAY_CLASS = Symbol('numpy.ndarray');
/** numpy.record: the scalar type record dtypes of recarrays name instead of a type code. */
const RECORD_TYPE = Symbol('numpy.record');
/** numpy.ma.MaskedArray: the class _mareconstruct takes. */
const MASKED_CLASS = Symbol('numpy.ma.MaskedArray');
type ClassMarker = typeof NDARRAY_CLASS | typeof RECORD_TYPE | typeof MASKED_CLASS;
const STRING_DTYPE = new DType({ kind: 'O', byteOrder: '|', itemsize: 8 });

// ---------------------------------------------------------------------------------------------
// Allowlisted globals

type Constructor = (args: unknown[]) => unknown;

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
  if (Array.isArray(v)) return v;
  if (v instanceof Tuple) return v.items;
  if (v instanceof Set) return [...v];
  if (v instanceof Map) return [...v.keys()];
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
    const mask = hasObject(dtype) && !(s[5] instanceof Uint8Array) ? s[5] : buildArray(maskDType(dtype), shape, fortran, s[5]);
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
    const items = iterableItems(data, 'ndarray data');
    if (items.length !== size) bad(`object array of shape (${shape.join(', ')}) holds ${items.length} items`);
    const values = dtype.fields ? items.map((t) => recordFromTuple(dtype, t)) : items;
    const order = fortran && !isOrderFree(shape) ? 'F' : 'C';
    return new NdArray(dtype, shape, order === 'F' ? cToFortran(values, shape) : values, order);
  }
  let raw: Uint8Array;
  if (data instanceof Uint8Array) raw = data;
  else if (typeof data === 'string') raw = latin1Bytes(data); // Python 2 pickles carry str
  else return bad('ndarray data must be bytes');
  const need = size * dtype.itemsize;
  if (raw.length !== need) bad(`array of shape (${shape.join(', ')}) and dtype ${dtype.str} needs ${need} bytes, the pickle holds ${raw.length}`);
  const own = raw.slice(); // aligned, and not shared with the pickle bytes
  const typed = dtype.itemsize === 0 ? new Uint8Array(0) : bytesToData(dtype, own.buffer, 0, size, { owned: true });
  return new NdArray(dtype, shape, typed, fortran && !isOrderFree(shape) ? 'F' : 'C');
}

/** Values listed in C order, rearranged into Fortran memory order. */
function cToFortran(values: unknown[], shape: readonly number[]): unknown[] {
  const out = new Array<unknown>(values.length);
  const n = shape.length;
  const idx = new Array<number>(n).fill(0);
  const fStrides = new Array<number>(n);
  for (let a = 0, s = 1; a < n; a++) { fStrides[a] = s; s *= shape[a]!; }
  for (let i = 0; i < values.length; i++) {
    let at = 0;
    for (let a = 0; a < n; a++) at += idx[a]! * fStrides[a]!;
    out[at] = values[i];
    for (let a = n - 1; a >= 0; a--) { if (++idx[a]! < shape[a]!) break; idx[a] = 0; }
  }
  return out;
}

function recordFromTuple(dtype: DType, t: unknown): Record<string, unknown> {
  const items = t instanceof Tuple ? t.items : Array.isArray(t) ? t : bad('a record element must be a tuple');
  if (items.length !== dtype.fields!.length) bad(`a record element has ${items.length} fields, the dtype ${dtype.fields!.length}`);
  return Object.fromEntries(dtype.fields!.map((f, i) => [f.name, items[i]]));
}

function latin1Bytes(s: string): Uint8Array {
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
    return subarrayDType(base, iterableItems(subarray.items[1], 'subarray shape').map((d) => int(d as number)));
  }
  if (names instanceof Tuple && fields instanceof Map) {
    const specs: FieldSpec[] = names.items.map((n) => {
      const entry = fields.get(n);
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
      const unit = unitBytes instanceof Uint8Array ? String.fromCharCode(...unitBytes) : String(unitBytes);
      const mult = meta.items[1];
      spec += unit === 'generic' ? '' : `[${mult === 1 ? '' : String(mult)}${unit}]`;
    }
  }
  return parseTypeString(`${byteOrder === '|' ? '' : byteOrder}${spec}`);
}

/** Resolve a Pending that BUILD has completed. */
function settle(v: unknown): unknown {
  return v instanceof Pending && v.resolved !== undefined ? v.resolved : v;
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
  'builtins frozenset': (args) => new Set(iterableItems(args[0], 'frozenset')),
  'builtins bytearray': (args) => (args.length === 0 ? new Uint8Array(0) : args[0] instanceof Uint8Array ? args[0].slice() : typeof args[0] === 'string' ? latin1Bytes(args[0]) : new Uint8Array(iterableItems(args[0], 'bytearray').map((x) => int(x as number)))),
  'builtins slice': (args) => new PySlice('slice', args[0] ?? null, args[1] ?? null, args[2] ?? null),
  'builtins range': (args) => new PySlice('range', args[0], args[1], args[2] ?? 1),
  '_codecs encode': (args) => {
    // Protocol 2 writes bytes as _codecs.encode(text, 'latin1'); nothing else is accepted.
    if (args[1] !== 'latin1' && args[1] !== 'latin-1') bad(`_codecs.encode with encoding ${JSON.stringify(args[1])} is not allowed`);
    return latin1Bytes(arg(args, 0, isString, 'text', '_codecs.encode'));
  },
  'collections OrderedDict': (args) => {
    const m = new Map<unknown, unknown>();
    for (const kv of iterableItems(args[0], 'OrderedDict')) {
      const pair = kv instanceof Tuple ? kv.items : Array.isArray(kv) ? kv : bad('OrderedDict items must be pairs');
      m.set(pair[0], pair[1]);
    }
    return m;
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
      return new PyFraction(BigInt(m[1]!), BigInt(m[2] ?? 1));
    }
    return new PyFraction(BigInt(arg(args, 0, isInt, 'an integer', 'Fraction')), BigInt((args[1] as number | bigint) ?? 1));
  },
};
// Python 2 spelled builtins as __builtin__ (and Python 3 writes range as xrange for protocols < 3).
for (const k of Object.keys(ALLOWED)) if (k.startsWith('builtins ')) ALLOWED[`__builtin__ ${k.slice(9)}`] = ALLOWED[k]!;
ALLOWED['__builtin__ xrange'] = ALLOWED['builtins range']!;

class Global {
  constructor(readonly qualified: string, readonly target: Constructor | ClassMarker) {}
}

function resolveGlobal(module: string, name: string, offset: number): Global {
  const key = `${module} ${name}`;
  const target = Object.prototype.hasOwnProperty.call(ALLOWED, key) ? ALLOWED[key] : undefined;
  if (!target) {
    throw new NpyError('PICKLE_UNSUPPORTED', `pickle: refusing to load global '${module}.${name}': npyts only rebuilds numpy arrays, dtypes, scalars and plain Python data, and never runs code`, { offset });
  }
  return new Global(key, target);
}

// ---------------------------------------------------------------------------------------------
// The machine

const MARK = Symbol('mark');
const utf8 = new TextDecoder('utf-8', { fatal: true });

class Reader {
  pos = 0;
  private readonly view: DataView;
  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  need(n: number): void {
    if (this.pos + n > this.bytes.length) bad(`truncated: ${n} more bytes needed at byte ${this.pos}`, this.pos);
  }
  u8(): number { this.need(1); return this.bytes[this.pos++]!; }
  u16(): number { this.need(2); const v = this.view.getUint16(this.pos, true); this.pos += 2; return v; }
  u32(): number { this.need(4); const v = this.view.getUint32(this.pos, true); this.pos += 4; return v; }
  i32(): number { this.need(4); const v = this.view.getInt32(this.pos, true); this.pos += 4; return v; }
  u64(): number {
    this.need(8);
    const v = this.view.getBigUint64(this.pos, true);
    this.pos += 8;
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) bad(`length ${v} is too large`, this.pos - 8);
    return Number(v);
  }
  f64be(): number { this.need(8); const v = this.view.getFloat64(this.pos, false); this.pos += 8; return v; }
  take(n: number): Uint8Array { this.need(n); const b = this.bytes.subarray(this.pos, this.pos + n); this.pos += n; return b; }
  line(): string {
    const end = this.bytes.indexOf(0x0a, this.pos);
    if (end < 0) bad('truncated: a text argument has no end of line', this.pos);
    let s = '';
    for (let i = this.pos; i < end; i++) s += String.fromCharCode(this.bytes[i]!);
    this.pos = end + 1;
    return s;
  }
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** Two's complement little-endian bytes (LONG1, LONG4) as an integer, in time linear in the length. */
function decodeLong(b: Uint8Array): bigint {
  if (b.length === 0) return 0n;
  // Through hex text: BigInt parses hex in linear time, where shifting in one byte at a time is quadratic.
  const parts = new Array<string>(b.length);
  for (let i = 0; i < b.length; i++) parts[i] = HEX[b[b.length - 1 - i]!]!;
  let v = BigInt(`0x${parts.join('')}`);
  if (b[b.length - 1]! & 0x80) v -= 1n << BigInt(8 * b.length);
  return v;
}

function pyInt(v: bigint): number | bigint {
  return v >= -(2n ** 53n) + 1n && v <= 2n ** 53n - 1n ? Number(v) : v;
}

/** Python's text escapes in protocol-0 strings (`'...'` with backslash escapes). */
function unescapePy2(text: string, offset: number): string {
  const q = text[0];
  if ((q !== "'" && q !== '"') || text[text.length - 1] !== q) bad('protocol-0 string is not quoted', offset);
  return text.slice(1, -1).replace(/\\(x[0-9a-fA-F]{2}|[0-7]{1,3}|.)/g, (_, e: string) => {
    if (e[0] === 'x') return String.fromCharCode(parseInt(e.slice(1), 16));
    if (/^[0-7]/.test(e)) return String.fromCharCode(parseInt(e, 8));
    return ({ n: '\n', r: '\r', t: '\t', '\\': '\\', "'": "'", '"': '"', a: '\x07', b: '\b', f: '\f', v: '\v' } as Record<string, string>)[e] ?? `\\${e}`;
  });
}

function rawUnicodeEscape(text: string): string {
  return text.replace(/\\u([0-9a-fA-F]{4})|\\U([0-9a-fA-F]{8})/g, (_, a: string, b: string) => {
    const cp = parseInt(a ?? b, 16);
    return cp <= 0x10ffff ? String.fromCodePoint(cp) : bad(`\\U escape beyond U+10FFFF`);
  });
}

/** Run a pickle and return the value it builds, with Python containers as JS data (see README). */
export function unpickle(input: Uint8Array, options: UnpickleOptions = {}): unknown {
  // A plain view: Node's Buffer#slice would return views where copies are meant.
  input = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  const maxDepth = options.maxDepth ?? 1000;
  const maxMemo = options.maxMemo ?? 1_000_000;
  const maxMarks = options.maxMarks ?? 10_000;
  const maxBytes = options.maxBytes ?? 2 ** 31;
  const r = new Reader(input);
  let stack: unknown[] = [];
  const marks: unknown[][] = [];
  const memo = new Map<number, unknown>();
  const depthOf = new WeakMap<object, number>();
  let allocated = 0;

  const account = (n: number): void => {
    allocated += n;
    if (allocated > maxBytes) bad(`more than ${maxBytes} bytes allocated (option maxBytes)`, r.pos);
  };
  const depth = (v: unknown): number => (typeof v === 'object' && v !== null ? depthOf.get(v) ?? 1 : 0);
  const container = <T extends object>(c: T, children: Iterable<unknown>): T => {
    let d = 0;
    for (const x of children) d = Math.max(d, depth(x));
    if (d + 1 > maxDepth) bad(`containers nested deeper than ${maxDepth} (option maxDepth)`, r.pos);
    depthOf.set(c, d + 1);
    account(16);
    return c;
  };
  const grow = (c: object, added: unknown[]): void => {
    let d = depthOf.get(c) ?? 1;
    for (const x of added) d = Math.max(d, depth(x) + 1);
    if (d > maxDepth) bad(`containers nested deeper than ${maxDepth} (option maxDepth)`, r.pos);
    depthOf.set(c, d);
    account(16 * added.length);
  };
  const pop = (): unknown => {
    if (stack.length === 0) bad('stack underflow', r.pos);
    return stack.pop();
  };
  const top = (): unknown => (stack.length ? stack[stack.length - 1] : bad('stack underflow', r.pos));
  const popMark = (): unknown[] => {
    const items = stack;
    const prev = marks.pop();
    if (!prev) bad('no MARK to pop to', r.pos);
    stack = prev;
    if (items.includes(MARK)) bad('misplaced MARK', r.pos);
    return items;
  };
  const push = (v: unknown): void => {
    if (v === MARK) bad('misplaced MARK', r.pos);
    stack.push(v);
  };
  const text = (b: Uint8Array): string => {
    account(b.length);
    try {
      return utf8.decode(b);
    } catch {
      return bad('text is not valid UTF-8', r.pos);
    }
  };
  const bytesValue = (b: Uint8Array): Uint8Array => {
    account(b.length);
    return b.slice();
  };
  const call = (fn: unknown, args: unknown[]): unknown => {
    if (!(fn instanceof Global) || typeof fn.target !== 'function') bad(`${fn instanceof Global ? fn.qualified : typeof fn} is not callable`, r.pos);
    const value = (fn.target as Constructor)(args.map(settle));
    if (typeof value === 'object' && value !== null) container(value, []);
    return value;
  };
  const setItems = (target: unknown, kvs: unknown[]): void => {
    const t = settle(target);
    if (!(t instanceof Map)) bad('SETITEM(S) on something that is not a dict', r.pos);
    if (kvs.length % 2) bad('SETITEMS with an odd number of items', r.pos);
    for (let i = 0; i < kvs.length; i += 2) t.set(hashable(kvs[i]), kvs[i + 1]);
    grow(t, kvs);
  };
  // Dict keys and set members: JS compares objects by identity, so equal tuples stay distinct keys.
  const hashable = (k: unknown): unknown => settle(k);

  if (r.bytes.length === 0) bad('empty pickle');
  for (;;) {
    const at = r.pos;
    const op = r.u8();
    switch (op) {
      case 0x80: { // PROTO
        const p = r.u8();
        if (p > 5) bad(`unsupported protocol ${p}`, at);
        break;
      }
      case 0x95: r.u64(); break; // FRAME: framing is transparent here
      case 0x2e: { // STOP
        const v = pop();
        if (stack.length || marks.length) { /* numpy writes clean pickles; leftovers are harmless */ }
        return finish(v);
      }
      case 0x28: // MARK
        if (marks.length >= maxMarks) bad(`more than ${maxMarks} open MARKs (option maxMarks)`, at);
        marks.push(stack);
        stack = [];
        break;
      case 0x30: pop(); break; // POP
      case 0x31: popMark(); break; // POP_MARK
      case 0x32: push(top()); break; // DUP
      case 0x4e: push(null); break; // NONE
      case 0x88: push(true); break; // NEWTRUE
      case 0x89: push(false); break; // NEWFALSE
      case 0x4b: push(r.u8()); break; // BININT1
      case 0x4d: push(r.u16()); break; // BININT2
      case 0x4a: push(r.i32()); break; // BININT
      case 0x49: { // INT (text; 00/01 are False/True)
        const s = r.line();
        if (s === '00') push(false);
        else if (s === '01') push(true);
        else if (/^[+-]?\d+$/.test(s)) push(pyInt(BigInt(s)));
        else bad(`INT argument ${JSON.stringify(s)} is not an integer`, at);
        break;
      }
      case 0x4c: { // LONG (text)
        const s = r.line().replace(/L$/, '');
        if (!/^[+-]?\d+$/.test(s)) bad('LONG argument is not an integer', at);
        account(s.length);
        push(pyInt(BigInt(s)));
        break;
      }
      case 0x8a: push(pyInt(decodeLong(r.take(r.u8())))); break; // LONG1
      case 0x8b: { // LONG4
        const n = r.i32();
        if (n < 0) bad('negative LONG4 length', at);
        account(n);
        push(pyInt(decodeLong(r.take(n))));
        break;
      }
      case 0x46: { // FLOAT (text)
        const s = r.line();
        const x = Number(s);
        if (Number.isNaN(x) && !/nan/i.test(s)) bad('FLOAT argument is not a number', at);
        push(x);
        break;
      }
      case 0x47: push(r.f64be()); break; // BINFLOAT
      case 0x53: push(unescapePy2(r.line(), at)); break; // STRING (Python 2 str)
      case 0x54: { const n = r.i32(); if (n < 0) bad('negative length', at); push(latin1Text(r.take(n), account)); break; } // BINSTRING
      case 0x55: push(latin1Text(r.take(r.u8()), account)); break; // SHORT_BINSTRING
      case 0x56: push(rawUnicodeEscape(r.line())); break; // UNICODE
      case 0x58: push(text(r.take(r.u32()))); break; // BINUNICODE
      case 0x8c: push(text(r.take(r.u8()))); break; // SHORT_BINUNICODE
      case 0x8d: push(text(r.take(r.u64()))); break; // BINUNICODE8
      case 0x42: push(bytesValue(r.take(r.u32()))); break; // BINBYTES
      case 0x43: push(bytesValue(r.take(r.u8()))); break; // SHORT_BINBYTES
      case 0x8e: push(bytesValue(r.take(r.u64()))); break; // BINBYTES8
      case 0x96: push(bytesValue(r.take(r.u64()))); break; // BYTEARRAY8
      case 0x97: case 0x98: bad('out-of-band buffers are not supported', at); // NEXT_BUFFER, READONLY_BUFFER
      // eslint-disable-next-line no-fallthrough
      case 0x5d: push(container([], [])); break; // EMPTY_LIST
      case 0x29: push(container(new Tuple([]), [])); break; // EMPTY_TUPLE
      case 0x7d: push(container(new Map(), [])); break; // EMPTY_DICT
      case 0x8f: push(container(new Set(), [])); break; // EMPTY_SET
      case 0x6c: { const items = popMark(); push(container(items, items)); break; } // LIST
      case 0x74: { const items = popMark(); push(container(new Tuple(items), items)); break; } // TUPLE
      case 0x85: { const a = pop(); push(container(new Tuple([a]), [a])); break; } // TUPLE1
      case 0x86: { const b = pop(); const a = pop(); push(container(new Tuple([a, b]), [a, b])); break; } // TUPLE2
      case 0x87: { const c = pop(); const b = pop(); const a = pop(); push(container(new Tuple([a, b, c]), [a, b, c])); break; } // TUPLE3
      case 0x64: { // DICT
        const items = popMark();
        const m = container(new Map(), []);
        setItems(m, items);
        push(m);
        break;
      }
      case 0x61: { const v = pop(); const list = settle(top()); if (!Array.isArray(list)) bad('APPEND to something that is not a list', at); list.push(v); grow(list, [v]); break; } // APPEND
      case 0x65: { // APPENDS
        const items = popMark();
        const list = settle(top());
        if (!Array.isArray(list)) bad('APPENDS to something that is not a list', at);
        for (const v of items) list.push(v);
        grow(list, items);
        break;
      }
      case 0x73: { const v = pop(); const k = pop(); setItems(top(), [k, v]); break; } // SETITEM
      case 0x75: { const items = popMark(); setItems(top(), items); break; } // SETITEMS
      case 0x90: { // ADDITEMS
        const items = popMark();
        const set = settle(top());
        if (!(set instanceof Set)) bad('ADDITEMS to something that is not a set', at);
        for (const v of items) set.add(hashable(v));
        grow(set, items);
        break;
      }
      case 0x91: { const items = popMark(); push(container(new Set(items.map(hashable)), items)); break; } // FROZENSET
      case 0x63: { const module = r.line(); const name = r.line(); push(resolveGlobal(module, name, at)); break; } // GLOBAL
      case 0x93: { // STACK_GLOBAL
        const name = pop();
        const module = pop();
        if (typeof module !== 'string' || typeof name !== 'string') bad('STACK_GLOBAL needs two strings', at);
        push(resolveGlobal(module, name, at));
        break;
      }
      case 0x52: { // REDUCE
        const args = pop();
        const fn = pop();
        if (!(args instanceof Tuple)) bad('REDUCE arguments must be a tuple', at);
        push(call(fn, args.items));
        break;
      }
      case 0x81: { // NEWOBJ: cls.__new__(cls, *args) — only for allowlisted classes
        const args = pop();
        const cls = pop();
        if (!(args instanceof Tuple)) bad('NEWOBJ arguments must be a tuple', at);
        push(call(cls, args.items));
        break;
      }
      case 0x92: { // NEWOBJ_EX
        const kwargs = pop();
        const args = pop();
        const cls = pop();
        if (!(args instanceof Tuple) || !(kwargs instanceof Map)) bad('NEWOBJ_EX arguments are malformed', at);
        if (kwargs.size) bad('NEWOBJ_EX with keyword arguments is not supported', at);
        push(call(cls, args.items));
        break;
      }
      case 0x69: { const module = r.line(); const name = r.line(); const g = resolveGlobal(module, name, at); push(call(g, popMark())); break; } // INST
      case 0x6f: { const items = popMark(); const cls = items.shift(); push(call(cls, items)); break; } // OBJ
      case 0x62: { // BUILD
        const state = pop();
        const target = top();
        if (target instanceof Pending) {
          if (target.resolved !== undefined) bad('BUILD twice on one object', at);
          target.build(settle(state));
          const built: unknown = (target as Pending).resolved;
          if (built instanceof NdArray) account(built.data.length * 8);
        } else if (target instanceof Map && state instanceof Map) {
          setItems(target, [...state].flat()); // OrderedDict-style state
        } else if (!(state === null || (state instanceof Map && state.size === 0))) {
          bad('BUILD is only supported for numpy arrays and dtypes', at);
        }
        break;
      }
      case 0x70: { const i = Number(r.line()); putMemo(i, top()); break; } // PUT
      case 0x71: putMemo(r.u8(), top()); break; // BINPUT
      case 0x72: putMemo(r.u32(), top()); break; // LONG_BINPUT
      case 0x94: putMemo(memo.size, top()); break; // MEMOIZE
      case 0x67: push(getMemo(Number(r.line()))); break; // GET
      case 0x68: push(getMemo(r.u8())); break; // BINGET
      case 0x6a: push(getMemo(r.u32())); break; // LONG_BINGET
      case 0x50: case 0x51: bad('persistent ids are not supported', at); // PERSID, BINPERSID
      // eslint-disable-next-line no-fallthrough
      case 0x82: case 0x83: case 0x84: bad('the extension registry (EXT opcodes) is not supported', at);
      // eslint-disable-next-line no-fallthrough
      default: bad(`unknown opcode 0x${op.toString(16).padStart(2, '0')}`, at);
    }

    function putMemo(i: number, v: unknown): void {
      if (!Number.isInteger(i) || i < 0) bad('bad memo index', at);
      if (!memo.has(i) && memo.size >= maxMemo) bad(`more than ${maxMemo} memo entries (option maxMemo)`, at);
      memo.set(i, v);
    }
    function getMemo(i: number): unknown {
      if (!memo.has(i)) bad(`memo entry ${i} does not exist`, at);
      return memo.get(i);
    }
  }
}

function latin1Text(b: Uint8Array, account: (n: number) => void): string {
  account(b.length);
  let s = '';
  for (const c of b) s += String.fromCharCode(c);
  return s;
}

/**
 * Replace VM-internal objects (tuples, pending constructions) with their JS values, keeping sharing
 * and cycles. Iterative: a pickle can nest values without nesting opcodes (memoised lists appended
 * into each other), so no recursion follows the data's depth. Each container's result is made
 * empty first and filled from a work list.
 */
function finish(root: unknown): unknown {
  const done = new Map<object, unknown>();
  const work: (() => void)[] = [];
  /** The result for `v`: a primitive as is, a container as its (possibly still empty) result. */
  const shell = (v: unknown): unknown => {
    if (typeof v !== 'object' || v === null) return v;
    if (done.has(v)) return done.get(v);
    if (v instanceof Pending) {
      if (v.resolved === undefined) bad('an array or dtype was never completed (no BUILD)');
      const out = shell(v.resolved);
      done.set(v, out);
      return out;
    }
    if (v instanceof Global) bad(`a bare reference to ${v.qualified} is not data`);
    if (v instanceof Tuple || Array.isArray(v)) {
      const src = v instanceof Tuple ? v.items : v;
      const out = new Array<unknown>(src.length);
      done.set(v, out);
      work.push(() => { for (let i = 0; i < src.length; i++) out[i] = shell(src[i]); });
      return out;
    }
    if (v instanceof Map) {
      if ([...v.keys()].every((k) => typeof k === 'string')) {
        // Own properties whatever the key: a dict key '__proto__' must not change the prototype.
        const out: Record<string, unknown> = {};
        done.set(v, out);
        work.push(() => { for (const [k, x] of v) putOwn(out, k as string, shell(x)); });
        return out;
      }
      const out = new Map();
      done.set(v, out);
      work.push(() => { for (const [k, x] of v) out.set(shell(k), shell(x)); });
      return out;
    }
    if (v instanceof Set) {
      const out = new Set();
      done.set(v, out);
      work.push(() => { for (const x of v) out.add(shell(x)); });
      return out;
    }
    if (v instanceof NdArray && Array.isArray(v.data)) {
      const src = v.data;
      const data = new Array<unknown>(src.length);
      const out = new NdArray(v.dtype, v.shape, data, v.order);
      done.set(v, out);
      work.push(() => { for (let i = 0; i < src.length; i++) data[i] = shell(src[i]); });
      return out;
    }
    if (v instanceof PySlice) {
      const out = new PySlice(v.kind, shell(v.start), shell(v.stop), shell(v.step));
      done.set(v, out);
      return out;
    }
    if (v instanceof PyMaskedArray) {
      const out = new PyMaskedArray(shell(v.data), shell(v.mask), shell(v.fillValue));
      done.set(v, out);
      return out;
    }
    if (!(v instanceof NdArray) && !(v instanceof Uint8Array) && !(v instanceof DType) && Object.getPrototypeOf(v) === Object.prototype) {
      const out: Record<string, unknown> = {};
      done.set(v, out);
      work.push(() => { for (const [k, x] of Object.entries(v)) putOwn(out, k, shell(x)); });
      return out;
    }
    return v;
  };
  const result = shell(root);
  while (work.length) work.pop()!();
  return result;
}

// ---------------------------------------------------------------------------------------------
// Writing

class Writer {
  private chunks: Uint8Array[] = [];
  private cur = new Uint8Array(1 << 16);
  private n = 0;
  byte(b: number): void {
    if (this.n === this.cur.length) this.flush();
    this.cur[this.n++] = b;
  }
  bytes(b: Uint8Array): void {
    if (b.length > this.cur.length - this.n) {
      this.flush();
      if (b.length > this.cur.length / 2) { this.chunks.push(new Uint8Array(b)); return; }
    }
    this.cur.set(b, this.n);
    this.n += b.length;
  }
  u32(v: number): void { const b = new Uint8Array(4); new DataView(b.buffer).setUint32(0, v, true); this.bytes(b); }
  i32(v: number): void { const b = new Uint8Array(4); new DataView(b.buffer).setInt32(0, v, true); this.bytes(b); }
  f64(v: number): void { const b = new Uint8Array(8); new DataView(b.buffer).setFloat64(0, v, false); this.bytes(b); }
  private flush(): void {
    if (this.n) this.chunks.push(this.cur.slice(0, this.n));
    this.n = 0;
  }
  result(): Uint8Array {
    this.flush();
    const total = this.chunks.reduce((s, c) => s + c.length, 0);
    const out = new Uint8Array(total);
    let o = 0;
    for (const c of this.chunks) { out.set(c, o); o += c.length; }
    return out;
  }
}

const enc = new TextEncoder();

/** numpy's `is_fortran`: Fortran-contiguous and not also C-contiguous. */
function isFortran(a: NdArray): boolean {
  return a.order === 'F' && !isOrderFree(a.shape);
}

/**
 * Pickle JS values (protocol 3, loadable by numpy 1.17+ and 2.x): null, boolean, number (an integer
 * when it is a safe integer, else a float), bigint, string, Uint8Array (bytes), Array (list), plain
 * object and Map (dict), Set (set), PyComplex and the other Py* values, and NdArray.
 */
export function pickle(value: unknown): Uint8Array {
  const w = new Writer();
  w.byte(0x80);
  w.byte(3);
  const active = new Set<object>();
  const global = (module: string, name: string): void => {
    w.byte(0x63);
    w.bytes(enc.encode(`${module}\n${name}\n`));
  };
  const str = (s: string): void => { const b = enc.encode(s); w.byte(0x58); w.u32(b.length); w.bytes(b); };
  const bytes = (b: Uint8Array): void => { w.byte(0x42); w.u32(b.length); w.bytes(b); };
  const tuple = (items: (() => void)[]): void => {
    if (items.length <= 3 && items.length > 0) { items.forEach((f) => f()); w.byte(0x84 + items.length); return; }
    w.byte(0x28);
    items.forEach((f) => f());
    w.byte(0x74);
  };
  const int = (v: number | bigint): void => {
    if (typeof v === 'number' && v >= -(2 ** 31) && v < 2 ** 31) { w.byte(0x4a); w.i32(v); return; }
    let x = BigInt(v);
    const out: number[] = [];
    // Two's complement little-endian, as LONG1.
    for (;;) {
      out.push(Number(x & 0xffn));
      x >>= 8n;
      const sign = out[out.length - 1]! & 0x80;
      if ((x === 0n && !sign) || (x === -1n && sign)) break;
    }
    if (out.length > 255) bad('integer too large to pickle');
    w.byte(0x8a);
    w.byte(out.length);
    w.bytes(new Uint8Array(out));
  };
  /** numpy's dtype pickle: dtype(code, False, True), then BUILD with (version, byteorder, subarray, names, fields, elsize, alignment, flags[, metadata]). */
  const dtype = (dt: DType): void => {
    global('numpy', 'dtype');
    const record = dt.fields !== null || dt.subarray !== null;
    const code = record ? `V${dt.itemsize}` : dt.kind === 'O' ? 'O8' : dt.str.replace(/^[<>|]/, '').replace(/\[.*\]$/, '');
    tuple([() => str(code), () => w.byte(0x89), () => w.byte(0x88)]);
    w.byte(0x52);
    const none = (): void => w.byte(0x4e);
    const datetime = dt.kind === 'M' || dt.kind === 'm';
    const flexible = 'SUV'.includes(dt.kind) || record;
    const flags = dt.kind === 'O' ? 63 : dt.fields ? (hasObject(dt) ? 27 : 16) : 0;
    const items: (() => void)[] = [
      () => int(datetime ? 4 : 3),
      () => str(dt.byteOrder),
      dt.subarray ? () => { const sub = dt.subarrayAsWritten ?? dt.subarray!; tuple([() => dtype(sub.base), () => { if (sub.shape.length) tuple(sub.shape.map((d) => () => int(d))); else w.byte(0x29); }]); } : none,
      dt.fields ? () => tuple(dt.fields!.map((f) => () => str(f.name))) : none,
      dt.fields ? () => {
        w.byte(0x7d);
        w.byte(0x28);
        for (const f of dt.fields!) {
          const entry = (): void => tuple([() => dtype(f.dtype), () => int(f.offset), ...(f.title !== null ? [() => str(f.title!)] : [])]);
          str(f.name);
          entry();
          if (f.title !== null) { str(f.title); entry(); }
        }
        w.byte(0x75);
      } : none,
      () => int(flexible ? dt.itemsize : -1),
      () => int(dt.subarray ? dt.subarray.base.itemsize : record ? 1 : flexible ? (dt.kind === 'U' ? 4 : 1) : -1),
      () => int(flags),
    ];
    if (datetime) {
      items.push(() => tuple([none, () => tuple([() => bytes(enc.encode(dt.unit || 'generic')), () => int(dt.multiplier), () => int(1), () => int(1)])]));
    }
    tuple(items);
    w.byte(0x62);
  };
  const array = (a: NdArray): void => {
    // _reconstruct(ndarray, (0,), b'b'), then BUILD with the state, as numpy pickles arrays.
    global('numpy.core.multiarray', '_reconstruct');
    global('numpy', 'ndarray');
    int(0);
    w.byte(0x85);
    bytes(new Uint8Array([0x62]));
    w.byte(0x87);
    w.byte(0x52);
    const isObject = hasObject(a.dtype);
    const fields = a.dtype.fields;
    tuple([
      () => int(1),
      () => { if (a.shape.length === 0) w.byte(0x29); else tuple(a.shape.map((d) => () => int(d))); },
      () => dtype(a.dtype),
      () => w.byte(isFortran(a) ? 0x88 : 0x89),
      () => {
        if (isObject) {
          w.byte(0x5d);
          const list = a.toList();
          const flat: unknown[] = [];
          const walkFlat = (x: unknown, d: number): void => { if (d === a.ndim) flat.push(x); else for (const y of x as unknown[]) walkFlat(y, d + 1); };
          walkFlat(list, 0);
          // numpy's __setstate__ takes each record of an object record array as a tuple, never a dict.
          const item = fields ? (x: unknown): void => tuple(fields.map((f) => () => val((x as Record<string, unknown>)[f.name]))) : val;
          if (flat.length) { w.byte(0x28); flat.forEach((x) => item(x)); w.byte(0x65); }
        } else {
          bytes(dataToBytes(a.dtype, a.data as TypedArray));
        }
      },
    ]);
    w.byte(0x62);
  };
  const val = (v: unknown): void => {
    if (v === null || v === undefined) { w.byte(0x4e); return; }
    if (v === true) { w.byte(0x88); return; }
    if (v === false) { w.byte(0x89); return; }
    if (typeof v === 'number') {
      if (Number.isSafeInteger(v) && !Object.is(v, -0)) int(v);
      else { w.byte(0x47); w.f64(v); }
      return;
    }
    if (typeof v === 'bigint') { int(v); return; }
    if (typeof v === 'string') { str(v); return; }
    if (v instanceof Uint8Array) { bytes(v); return; }
    if (typeof v !== 'object') bad(`cannot pickle a ${typeof v}`);
    if (active.has(v)) bad('cannot pickle a structure that contains itself');
    active.add(v);
    try {
      if (v instanceof NdArray) array(v);
      else if (v instanceof PyComplex) { global('builtins', 'complex'); tuple([() => val(v.re), () => val(v.im)]); w.byte(0x52); }
      else if (v instanceof PyDecimal) { global('decimal', 'Decimal'); tuple([() => str(v.value)]); w.byte(0x52); }
      else if (v instanceof PyFraction) { global('fractions', 'Fraction'); tuple([() => int(v.numerator), () => int(v.denominator)]); w.byte(0x52); }
      else if (v instanceof PyDate) { global('datetime', 'date'); tuple([() => bytes(new Uint8Array([v.year >> 8, v.year & 255, v.month, v.day]))]); w.byte(0x52); }
      else if (v instanceof PyDatetime || v instanceof PyTime) {
        // Python's state bytes; fold rides in the high bit of the hour (time) or the month (datetime).
        const us = [(v.microsecond >> 16) & 255, (v.microsecond >> 8) & 255, v.microsecond & 255];
        const fold = v.fold ? 128 : 0;
        const state = v instanceof PyTime
          ? [v.hour | fold, v.minute, v.second, ...us]
          : [v.year >> 8, v.year & 255, v.month | fold, v.day, v.hour, v.minute, v.second, ...us];
        const offset = v.utcOffsetSeconds;
        global('datetime', v instanceof PyTime ? 'time' : 'datetime');
        const items = [() => bytes(new Uint8Array(state))];
        if (offset !== null) {
          // tzinfo: timezone(timedelta(days, seconds)), a fixed offset as Python pickles it.
          const days = Math.floor(offset / 86400);
          items.push(() => {
            global('datetime', 'timezone');
            global('datetime', 'timedelta');
            tuple([() => int(days), () => int(offset - days * 86400), () => int(0)]);
            w.byte(0x52);
            w.byte(0x85);
            w.byte(0x52);
          });
        }
        tuple(items);
        w.byte(0x52);
      } else if (v instanceof PyTimedelta) { global('datetime', 'timedelta'); tuple([() => int(v.days), () => int(v.seconds), () => int(v.microseconds)]); w.byte(0x52); }
      else if (v instanceof PySlice) { global('builtins', v.kind); tuple([() => val(v.start), () => val(v.stop), () => val(v.step)]); w.byte(0x52); }
      else if (Array.isArray(v)) {
        w.byte(0x5d);
        if (v.length) { w.byte(0x28); v.forEach(val); w.byte(0x65); }
      } else if (v instanceof Set) {
        global('builtins', 'set');
        tuple([() => { w.byte(0x5d); if (v.size) { w.byte(0x28); v.forEach((x) => val(x)); w.byte(0x65); } }]);
        w.byte(0x52);
      } else if (v instanceof Map || Object.getPrototypeOf(v) === Object.prototype) {
        const entries = v instanceof Map ? [...v] : Object.entries(v);
        w.byte(0x7d);
        if (entries.length) { w.byte(0x28); for (const [k, x] of entries) { val(k); val(x); } w.byte(0x75); }
      } else bad(`cannot pickle ${(v as object).constructor?.name ?? 'this object'}`);
    } finally {
      active.delete(v);
    }
  };
  val(value);
  w.byte(0x2e);
  return w.result();
}

/** The codec decodeNpy/encodeNpy take as `{ pickle: pickleCodec }` to read and write object arrays. */
export const pickleCodec: ObjectArrayCodec = {
  decode(bytes: Uint8Array, header: NpyHeader, options: UnpickleOptions = {}): NdArray {
    const value = unpickle(bytes.subarray(header.dataOffset), options);
    if (!(value instanceof NdArray)) bad('the pickle after an object-array header does not hold an array');
    const expected = header.shape.join(',');
    if (value.shape.join(',') !== expected) bad(`the pickled array has shape (${value.shape.join(', ')}), the header says (${expected})`);
    return value;
  },
  encode(array: NdArray, version?: 1 | 2 | 3): { header: Uint8Array; body: Uint8Array } {
    const header = encodeHeader(array.dtype, array.shape, isFortran(array), version);
    return { header, body: pickle(array) };
  },
};
