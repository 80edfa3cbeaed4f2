/** The JSON document of an array: numpy's `tolist()` with JSON-safe values (the CLI's `show --json`). */
import type { DType } from './dtype.js';
import type { Complex } from './elements.js';
import { NdArray } from './ndarray.js';
import type { NpyHeader } from './header.js';
import { NOT_A_TIME } from './elements.js';

/** A float as JSON: non-finite values as "NaN", "Infinity", "-Infinity". */
export function jsonNumber(x: number): number | string {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return 'Infinity';
  if (x === -Infinity) return '-Infinity';
  return x;
}

function jsonInt(x: bigint | number): number | string {
  const n = Number(x);
  return Number.isSafeInteger(n) && BigInt(n) === BigInt(x) ? n : String(x);
}

function latin1(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return s;
}

/**
 * A JSON-safe value for one element: integers beyond ±(2^53−1) as decimal strings, non-finite
 * floats as "NaN"/"Infinity"/"-Infinity", complex as [re, im], S as latin-1 text, V as hex,
 * datetimes as their integer count ("NaT"), records as objects, subarrays as nested arrays.
 */
export function jsonValue(dtype: DType, v: unknown): unknown {
  if (dtype.fields) {
    const rec = v as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const f of dtype.fields) out[f.name] = jsonValue(f.dtype, rec[f.name]);
    return out;
  }
  if (dtype.subarray) {
    const base = dtype.subarray.base;
    const nest = (x: unknown): unknown => (Array.isArray(x) ? x.map(nest) : jsonValue(base, x));
    return nest(v);
  }
  switch (dtype.kind) {
    case 'b': return v as boolean;
    case 'i':
    case 'u': return jsonInt(v as bigint | number);
    case 'f': return jsonNumber(v as number);
    case 'c': return [jsonNumber((v as Complex).re), jsonNumber((v as Complex).im)];
    case 'M':
    case 'm': return v === NOT_A_TIME ? 'NaT' : jsonInt(v as bigint);
    case 'S': return latin1(v as Uint8Array);
    case 'V': return Array.from(v as Uint8Array, (b) => b.toString(16).padStart(2, '0')).join('');
    case 'U': return v as string;
    case 'O': return pythonJSON(v, 0, new Set());
  }
}

const MAX_JSON_DEPTH = 1000;

/**
 * A decoded Python value as JSON: None → null, numbers and integers by the rules above, bytes as
 * latin-1 text, lists/tuples/sets → arrays, dicts → objects, nested arrays → nested lists, and
 * values with a toJSON() (complex → [re, im], datetimes → ISO text, Decimal → text) through it.
 */
export function pythonJSON(v: unknown, depth: number, active: Set<object>): unknown {
  if (v === null || v === undefined || typeof v === 'boolean' || typeof v === 'string') return v ?? null;
  if (typeof v === 'number') return jsonNumber(v);
  if (typeof v === 'bigint') return jsonInt(v);
  if (typeof v !== 'object') return String(v);
  if (depth > MAX_JSON_DEPTH) throw new Error(`value nested deeper than ${MAX_JSON_DEPTH}`);
  if (active.has(v)) throw new Error('value contains itself and has no JSON form');
  if (v instanceof Uint8Array) return latin1(v);
  if (v instanceof NdArray) return arrayToJSON(v);
  active.add(v);
  try {
    if (Array.isArray(v)) return v.map((x) => pythonJSON(x, depth + 1, active));
    if (v instanceof Set) return [...v].map((x) => pythonJSON(x, depth + 1, active));
    if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [String(pythonJSON(k, depth + 1, active)), pythonJSON(x, depth + 1, active)]));
    const withJSON = v as { toJSON?: () => unknown };
    if (typeof withJSON.toJSON === 'function') return pythonJSON(withJSON.toJSON(), depth + 1, active);
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, pythonJSON(x, depth + 1, active)]));
  } finally {
    active.delete(v);
  }
}

/** The values of the array as JSON-safe nested lists in logical C order. */
export function arrayToJSON(array: NdArray): unknown {
  const nest = (x: unknown, depth: number): unknown =>
    depth === array.ndim ? jsonValue(array.dtype, x) : (x as unknown[]).map((y) => nest(y, depth + 1));
  return nest(array.toList(), 0);
}

/** `{version, descr, fortran_order, shape, data}`: the CLI's `show --json` document. */
export function npyDocument(header: Pick<NpyHeader, 'version' | 'fortranOrder'>, array: NdArray): Record<string, unknown> {
  return {
    version: header.version,
    descr: array.dtype.descr,
    fortran_order: header.fortranOrder,
    shape: array.shape,
    data: arrayToJSON(array),
  };
}
