/** The JSON document of an array: numpy's `tolist()` with JSON-safe values (the CLI's `show --json`). */
import { putOwn } from './safe-object.js';
import type { DType } from '../format/dtype.js';
import { matchDType, perDType } from '../format/dtype-cases.js';
import { NdArray } from './ndarray.js';
import { descrAsWritten, type NpyHeader } from '../format/header.js';
import { NOT_A_TIME, holdsLongDouble, readExactItem } from './read-value.js';
import { exactAsNumber, numpyScalarText, type ExactFloat } from '../format/float-text.js';
import { datetimeText } from '../format/datetime-text.js';
import { NpyError } from '../errors.js';
import { PyFloat, PyTuple, type PyValue } from '../format/literal.js';

/** A float as JSON: non-finite values as "NaN", "Infinity", "-Infinity". */
export function jsonNumber(x: number): number | string {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return 'Infinity';
  if (x === -Infinity) return '-Infinity';
  return x;
}

/**
 * A long double as JSON: a number where a float64 holds it exactly, else numpy's str() of it (its
 * shortest digits at 64 bits, a string as integers past 2^53 are), never a float64 rounding of it.
 */
function jsonLongDouble(x: number | ExactFloat): number | string {
  if (typeof x === 'number') return jsonNumber(x);
  return exactAsNumber(x) ?? numpyScalarText(x, 16);
}

function jsonInt(x: bigint | number): number | string {
  const n = Number(x);
  return Number.isSafeInteger(n) && BigInt(n) === BigInt(x) ? n : decimalText(BigInt(x));
}

/**
 * Python's limit on the decimal digits of an int it converts to text (`sys.int_info.default_max_str_digits`).
 * @example
 * decimalText(10n ** 5000n);   // throws: more than MAX_INT_DIGITS digits
 */
export const MAX_INT_DIGITS = 4300;

/**
 * An integer as decimal text, refused (as Python refuses `str()` of it) past {@link MAX_INT_DIGITS}
 * digits: decimal conversion is superlinear, so a pickled 8 MiB integer would otherwise take minutes.
 * @example
 * decimalText(-(2n ** 70n));   // '-1180591620717411303424'
 */
export function decimalText(x: bigint): string {
  const digits = (x < 0n ? -x : x).toString(16).length * 4 * Math.LOG10E * Math.LN2; // hex is linear, decimal is not
  if (digits > MAX_INT_DIGITS + 1) {
    throw new NpyError(
      'TOO_LARGE',
      `an integer of about ${Math.round(digits)} decimal digits: like Python, npyts converts at most ${MAX_INT_DIGITS} digits to text`,
    );
  }
  const text = x.toString();
  const length = x < 0n ? text.length - 1 : text.length;
  if (length > MAX_INT_DIGITS) {
    throw new NpyError('TOO_LARGE', `an integer of ${length} decimal digits: like Python, npyts converts at most ${MAX_INT_DIGITS} digits to text`);
  }
  return text;
}

/**
 * Decimal text (an optional sign, then digits) as an integer, refused past {@link MAX_INT_DIGITS}
 * digits as Python's `int()` refuses it (so a pickle's INT, LONG or Fraction text costs linear time).
 * @example
 * integerOfText('-42');   // -42n
 */
export function integerOfText(text: string): bigint {
  const digits = text.length - (text[0] === '+' || text[0] === '-' ? 1 : 0);
  if (digits > MAX_INT_DIGITS) {
    throw new NpyError('TOO_LARGE', `an integer written with ${digits} decimal digits: like Python, npyts converts at most ${MAX_INT_DIGITS} digits from text`);
  }
  return BigInt(text);
}

function latin1(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return s;
}

/**
 * How much repetition one JSON document may write out. A pickle can share one value many times
 * (or nest shared values, doubling at each level: 40 levels of a 332-byte file are 2^40 items), and
 * JSON has no references: every repeat is written in full. First visits are bounded by the decoded
 * data itself; only items written again inside a repeated value count against this budget.
 */
export interface JsonBudget {
  /** Items that may still be written inside repeated (shared) values. */
  repeatsLeft: number;
  /** Containers written once already: visiting one again is a repeat. */
  readonly seen: WeakSet<object>;
  /** How many repeated values are open around the current item. */
  inRepeat: number;
}

/** Default budget for items written again through shared references in one document. */
export const MAX_JSON_REPEATS = 1_000_000;

export function jsonBudget(repeats = MAX_JSON_REPEATS): JsonBudget {
  return { repeatsLeft: repeats, seen: new WeakSet(), inRepeat: 0 };
}

/**
 * A JSON-safe value for one element: integers beyond ±(2^53−1) as decimal strings, non-finite
 * floats as "NaN"/"Infinity"/"-Infinity", a long double no float64 holds as numpy's str() of it
 * (given exactly, as readExactItem reads it), complex as [re, im], S as latin-1 text, V as hex,
 * datetimes as numpy's ISO 8601 text in their unit (`np.datetime_as_string`; a generic one as its
 * count), timedeltas as their integer count ("NaT"), records as objects, subarrays as nested arrays.
 * @example
 * jsonValue(parseDescr('<c8'), { re: 1, im: -2 });   // [1, -2]
 */
export function jsonValue(dtype: DType, v: unknown, budget: JsonBudget = jsonBudget()): unknown {
  return converterOf(dtype)(v, budget);
}

/** One element of a dtype as JSON. */
type Converter = (v: unknown, budget: JsonBudget) => unknown;

const converterOf = perDType((dtype) => makeConverter(dtype));

function makeConverter(dtype: DType): Converter {
  const integer = (): Converter => (v) => jsonInt(v as bigint | number);
  const time = (): Converter => (v) => (v === NOT_A_TIME ? 'NaT' : jsonInt(v as bigint));
  // Datetimes with a unit as numpy's ISO 8601 text (lossless: parseDatetimeText reads it back).
  const date = (dt: DType): Converter => (dt.unit === '' ? time() : (v) => datetimeText(v as bigint, dt.unit, dt.multiplier));
  return matchDType<Converter>(dtype, {
    record: (_, fields) => (v, budget) => {
      const rec = v as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const f of fields) putOwn(out, f.name, jsonValue(f.dtype, rec[f.name], budget));
      return out;
    },
    subarray: (_, base) => (v, budget) => {
      const nest = (x: unknown): unknown => (Array.isArray(x) ? x.map(nest) : jsonValue(base, x, budget));
      return nest(v);
    },
    bool: () => (v) => v as boolean,
    int: integer,
    uint: integer,
    float: () => (dtype.itemsize === 16 ? (v) => jsonLongDouble(v as number | ExactFloat) : (v) => jsonNumber(v as number)),
    mlfloat: () => (v) => jsonNumber(v as number),
    complex: () => (v) => {
      const { re, im } = v as { re: number | ExactFloat; im: number | ExactFloat };
      return [jsonLongDouble(re), jsonLongDouble(im)];
    },
    datetime: date,
    timedelta: time,
    bytes: () => (v) => latin1(v as Uint8Array),
    void: () => (v) => Array.from(v as Uint8Array, (b) => b.toString(16).padStart(2, '0')).join(''),
    str: () => (v) => v as string,
    object: () => (v, budget) => pythonJSON(v, 0, new Set(), budget),
  });
}

/**
 * How deep a JSON document may nest: Python's recursion limit, where its json module (and so Keras) stops.
 * @example
 * if (nestsDeeperThan(config, MAX_JSON_DEPTH)) throw new Error('nested too deep');
 */
export const MAX_JSON_DEPTH = 1000;

/**
 * Whether a parsed JSON value nests objects and arrays deeper than `limit` levels (the value itself is
 * level 1), measured with a stack of its own, not recursion: checked once before anything recursive
 * (JSON.stringify, a deserializer) walks a document a file gave, which would overflow the call stack.
 * @example
 * nestsDeeperThan(JSON.parse('[[[]]]'), 2);   // true
 */
export function nestsDeeperThan(value: unknown, limit: number = MAX_JSON_DEPTH): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > limit) return true;
    for (const x of Array.isArray(v) ? v : Object.values(v)) if (typeof x === 'object' && x !== null) stack.push([x, depth + 1]);
  }
  return false;
}

/**
 * A decoded Python value as JSON: None → null, numbers and integers by the rules above, bytes as
 * latin-1 text, lists/tuples/sets → arrays, dicts → objects, nested arrays → nested lists, and
 * values with a toJSON() (complex → [re, im], datetimes → ISO text, Decimal → text) through it.
 * A value that contains itself, nests deeper than 1000, or repeats shared values beyond the
 * budget is an NpyError.
 * @example
 * pythonJSON({ a: [2n ** 64n, 2n] });   // { a: ['18446744073709551616', 2] }
 */
export function pythonJSON(v: unknown, depth = 0, active: Set<object> = new Set(), budget: JsonBudget = jsonBudget()): unknown {
  if (budget.inRepeat > 0 && --budget.repeatsLeft < 0) {
    throw new NpyError(
      'TOO_LARGE',
      'the value shares references so often that its JSON (which writes each repeat in full) would exceed the limit of repeated items',
    );
  }
  if (v === null || v === undefined || typeof v === 'boolean' || typeof v === 'string') return v ?? null;
  if (typeof v === 'number') return jsonNumber(v);
  if (typeof v === 'bigint') return jsonInt(v);
  if (typeof v !== 'object') return String(v);
  if (depth > MAX_JSON_DEPTH) throw new NpyError('TOO_LARGE', `value nested deeper than ${MAX_JSON_DEPTH} levels has no JSON form here`);
  if (active.has(v)) throw new NpyError('BAD_VALUE', 'value contains itself and has no JSON form');
  if (v instanceof Uint8Array) return latin1(v);
  const repeat = budget.seen.has(v);
  budget.seen.add(v);
  if (repeat) budget.inRepeat++;
  active.add(v);
  try {
    const inner = (x: unknown): unknown => pythonJSON(x, depth + 1, active, budget);
    if (v instanceof NdArray) return arrayToJSON(v, budget);
    if (Array.isArray(v)) return v.map(inner);
    if (v instanceof Set) return [...v].map(inner);
    if (v instanceof Map) {
      const out: Record<string, unknown> = {};
      for (const [k, x] of v) putOwn(out, String(inner(k)), inner(x));
      return out;
    }
    const withJSON = v as { toJSON?: () => unknown };
    if (typeof withJSON.toJSON === 'function') return inner(withJSON.toJSON());
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) putOwn(out, k, inner(x));
    return out;
  } finally {
    active.delete(v);
    if (repeat) budget.inRepeat--;
  }
}

/**
 * Most elements an array's JSON may have: every element takes at least two characters (`0,`), and
 * one JavaScript string holds at most 2^29 characters. Larger arrays are refused at once rather
 * than after building (or failing to build) their values; a zero-size dtype is no exception.
 */
export const MAX_JSON_ELEMENTS = 2 ** 28;

/**
 * The values of the array as JSON-safe nested lists in logical C order.
 * @example
 * arrayToJSON(arrayFromValues([[1, 2], [3, 4]], '<i4'));   // [[1, 2], [3, 4]]
 */
export function arrayToJSON(array: NdArray, budget: JsonBudget = jsonBudget()): unknown {
  if (array.size > MAX_JSON_ELEMENTS) {
    throw new NpyError('TOO_LARGE', `an array of ${array.size} elements has no JSON document that fits in one string (at most ${MAX_JSON_ELEMENTS} elements)`);
  }
  const nest = (x: unknown, depth: number): unknown =>
    depth === array.ndim ? jsonValue(array.dtype, x, budget) : (x as unknown[]).map((y) => nest(y, depth + 1));
  return nest(holdsLongDouble(array.dtype) ? exactList(array) : array.toList(), 0);
}

/** {@link NdArray.toList} with long doubles exact (see readExactItem). */
function exactList(array: NdArray): unknown {
  const { strides, shape } = array;
  const walk = (axis: number, pos: number): unknown =>
    axis === shape.length
      ? readExactItem(array.dtype, array.data, pos)
      : Array.from({ length: shape[axis]! }, (_, i) => walk(axis + 1, pos + i * strides[axis]!));
  return walk(0, 0);
}

/**
 * `{version, descr, fortran_order, shape, data}`: the CLI's `show --json` document. `descr` is the header's as written (tuples as lists).
 * @example
 * const { descr, shape, data } = npyDocument(header, decodeNpy(bytes)) as { descr: string; shape: number[]; data: unknown };
 */
export function npyDocument(
  header: Pick<NpyHeader, 'version' | 'fortranOrder'> & Partial<Pick<NpyHeader, 'descrWritten'>>,
  array: NdArray,
): Record<string, unknown> {
  const written = descrAsWritten(header);
  return {
    version: header.version,
    descr: written !== undefined ? pyToJSON(written) : array.dtype.descr,
    fortran_order: header.fortranOrder,
    shape: array.shape,
    data: arrayToJSON(array),
  };
}

/** A parsed header literal as JSON: tuples as lists. */
function pyToJSON(v: PyValue): unknown {
  if (v instanceof PyTuple) return v.items.map(pyToJSON);
  if (Array.isArray(v)) return v.map(pyToJSON);
  if (v instanceof PyFloat) return v.value;
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [String(k), pyToJSON(x)]));
  if (typeof v === 'bigint') return String(v);
  return v;
}
