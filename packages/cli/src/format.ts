/** A numpy-like text rendering of an array, summarising large ones with `...` as numpy does. */
import { NdArray, NOT_A_TIME, decimalText, familyOf, matchDType, readItem, reprString, type Complex, type DType } from '@npyts/core';
import { PyMaskedArray } from '@npyts/core/pickle';

const THRESHOLD = 1000;
const EDGE = 3;

/** Shortest decimal that reads back to the same float32. */
function shortestFloat32(x: number): string {
  for (let p = 1; p <= 9; p++) {
    const s = x.toPrecision(p);
    if (Math.fround(Number(s)) === x) return String(Number(s));
  }
  return String(x);
}

function formatFloat(x: number, itemsize: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  let s = itemsize <= 4 ? shortestFloat32(x) : String(x);
  if (/^-?\d+$/.test(s)) s += '.';
  return s.replace(/e\+?/, 'e+').replace('e+-', 'e-');
}

function pyBytes(b: Uint8Array): string {
  let s = '';
  for (const c of b) s += c >= 0x20 && c < 0x7f && c !== 0x27 && c !== 0x5c ? String.fromCharCode(c) : `\\x${c.toString(16).padStart(2, '0')}`;
  return `b'${s}'`;
}

export function formatScalar(dtype: DType, v: unknown): string {
  const bytes = (): string => pyBytes(v as Uint8Array);
  const time = (): string => (v === NOT_A_TIME ? 'NaT' : String(v));
  const plain = (): string => String(v);
  return matchDType(dtype, {
    record(_, fields) {
      const rec = v as Record<string, unknown>;
      return `(${fields.map((f) => formatScalar(f.dtype, rec[f.name])).join(', ')}${fields.length === 1 ? ',' : ''})`;
    },
    subarray(_, base) {
      const nest = (x: unknown): string => (Array.isArray(x) ? `[${x.map(nest).join(', ')}]` : formatScalar(base, x));
      return nest(v);
    },
    bool: () => (v ? 'True' : 'False'),
    int: plain,
    uint: plain,
    float: (dt) => formatFloat(v as number, dt.itemsize),
    complex: (dt) => {
      const { re, im } = v as Complex;
      const half = dt.itemsize / 2;
      const imS = formatFloat(Math.abs(im), half);
      return `${formatFloat(re, half)}${im < 0 || Object.is(im, -0) ? '-' : '+'}${imS}j`;
    },
    bytes,
    void: bytes,
    str: () => reprString(v as string),
    datetime: time,
    timedelta: time,
    object: () => formatPython(v),
  });
}

/**
 * What the object values of one printout may cost. Decoded pickles can share one value many times
 * (each repeat prints in full, so a small file can expand exponentially) or contain themselves; the
 * text of one printout is capped and what is cut shows as `...`.
 */
interface PrintBudget {
  left: number;
  cut: boolean;
  readonly active: Set<object>;
}

/** Characters (and values visited) the object values of one printout may take. */
export const MAX_OBJECT_TEXT = 1 << 20;
let budget: PrintBudget | null = null;

/** Python's repr of a decoded object value, roughly; a value inside itself prints as `[...]` / `{...}`. */
function formatPython(v: unknown, depth = 0): string {
  const b = budget!;
  // The budget counts characters: two for the separator or brackets of each value, plus its text.
  b.left -= 2;
  if (b.left < 0 || depth > 50) { b.cut = true; return '...'; }
  if (v === null || v === undefined) { b.left -= 4; return 'None'; }
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : formatFloat(v, 8);
  if (typeof v === 'bigint') { const t = decimalText(v); b.left -= t.length; return t; }
  if (typeof v === 'string') { b.left -= v.length; return reprString(v); }
  if (v instanceof Uint8Array) { b.left -= v.length; return pyBytes(v); }
  if (typeof v !== 'object') return String(v);
  if (b.active.has(v)) return v instanceof Map || v instanceof Set || !Array.isArray(v) ? '{...}' : '[...]';
  b.active.add(v);
  try {
    if (v instanceof NdArray) return formatArray(v);
    if (v instanceof PyMaskedArray) return `masked_array(data=${formatPython(v.data, depth + 1)}, mask=${formatPython(v.mask, depth + 1)})`;
    if (Array.isArray(v)) return `[${v.map((x) => formatPython(x, depth + 1)).join(', ')}]`;
    if (v instanceof Set) return v.size ? `{${[...v].map((x) => formatPython(x, depth + 1)).join(', ')}}` : 'set()';
    if (v instanceof Map) return `{${[...v].map(([k, x]) => `${formatPython(k, depth + 1)}: ${formatPython(x, depth + 1)}`).join(', ')}}`;
    if (Object.getPrototypeOf(v) === Object.prototype) {
      return `{${Object.entries(v).map(([k, x]) => `${formatPython(k, depth + 1)}: ${formatPython(x, depth + 1)}`).join(', ')}}`;
    }
    if ('re' in v && 'im' in v) {
      const c = v as Complex;
      return `(${formatFloat(c.re, 8)}${c.im < 0 ? '-' : '+'}${formatFloat(Math.abs(c.im), 8)}j)`;
    }
    return String(v);
  } finally {
    b.active.delete(v);
  }
}

/** numpy's 'maxprec' float digits: the shortest round-trip repr, at most 8 fractional digits. */
function floatParts(x: number, itemsize: number): [string, string] {
  let s = itemsize <= 4 ? shortestFloat32(x) : String(x);
  if (/e/.test(s) || (s.split('.')[1]?.length ?? 0) > 8) s = String(Number(x.toFixed(8)));
  const [int, frac = ''] = s.split('.');
  return [int!, frac];
}

function expParts(x: number, itemsize: number): [string, string, string] {
  const digits = itemsize <= 4 ? 9 : 17;
  let m = '';
  for (let p = 1; p <= digits; p++) {
    m = x.toExponential(p - 1);
    if ((itemsize <= 4 ? Math.fround(Number(m)) : Number(m)) === x) break;
  }
  const [mant, exp] = m.split('e') as [string, string];
  const [int, frac = ''] = mant.split('.');
  const e = Number(exp);
  return [int!, frac.slice(0, 8), `e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`];
}

/** Format the shown floats together, aligned on the decimal point as numpy does. */
function formatFloats(xs: number[], itemsize: number): string[] {
  const finite = xs.filter((x) => Number.isFinite(x));
  const abs = finite.map(Math.abs).filter((x) => x !== 0);
  const max = abs.length ? Math.max(...abs) : 0;
  const min = abs.length ? Math.min(...abs) : 0;
  const exp = abs.length > 0 && (max >= 1e8 || min < 1e-4 || max / min > 1e3);
  const parts = xs.map((x): [string, string, string] | null => (Number.isFinite(x) ? (exp ? expParts(x, itemsize) : [...floatParts(x, itemsize), '']) : null));
  const padLeft = Math.max(0, ...parts.map((p) => (p ? p[0].length : 0)));
  const padRight = Math.max(0, ...parts.map((p) => (p ? p[1].length : 0)));
  const out = xs.map((x, i) => {
    const p = parts[i];
    if (!p) return formatFloat(x, itemsize);
    return `${p[0].padStart(padLeft)}.${exp ? p[1].padEnd(padRight, '0') : p[1].padEnd(padRight)}${p[2]}`;
  });
  const width = Math.max(0, ...out.map((s) => s.length));
  return out.map((s) => s.padStart(width));
}

/** Every shown element formatted, padded to a common width like numpy's array printing. */
function formatLeaves(dtype: DType, values: unknown[]): string[] {
  const family = familyOf(dtype);
  if (family === 'float') return formatFloats(values as number[], dtype.itemsize);
  const strs = values.map((v) => formatScalar(dtype, v));
  // numpy pads numbers to a common width; text, bytes, records and objects are printed as they are.
  if (['record', 'void', 'bytes', 'str', 'object'].includes(family)) return strs;
  const width = Math.max(0, ...strs.map((x) => x.length));
  return strs.map((x) => x.padStart(width));
}

/**
 * `array([...], dtype=…)` with rows broken like numpy's repr and large arrays summarised. `report.cut`
 * is set when object values were cut short (see {@link MAX_OBJECT_TEXT}).
 */
export function formatArray(array: NdArray, report?: { cut: boolean }): string {
  const outer = budget === null;
  if (outer) budget = { left: MAX_OBJECT_TEXT, cut: false, active: new Set() };
  try {
    return formatArrayText(array);
  } finally {
    if (outer) {
      if (report) report.cut = budget!.cut;
      budget = null;
    }
  }
}

function formatArrayText(array: NdArray): string {
  const summarise = array.size > THRESHOLD;
  const strides = array.strides;
  const prefix = 'array(';
  const picks = (n: number): (number | null)[] =>
    summarise && n > 2 * EDGE
      ? [...Array.from({ length: EDGE }, (_, i) => i), null, ...Array.from({ length: EDGE }, (_, i) => n - EDGE + i)]
      : Array.from({ length: n }, (_, i) => i);
  // First the shown elements (numpy sizes the columns from them), then the nested text.
  const shown: unknown[] = [];
  const collect = (axis: number, pos: number): void => {
    if (axis === array.ndim) { shown.push(readItem(array.dtype, array.data, pos)); return; }
    for (const i of picks(array.shape[axis]!)) if (i !== null) collect(axis + 1, pos + i * strides[axis]!);
  };
  collect(0, 0);
  const texts = formatLeaves(array.dtype, shown);
  let next = 0;
  const render = (axis: number, pos: number, indent: string): string => {
    if (axis === array.ndim) return texts[next++]!;
    const parts = picks(array.shape[axis]!).map((i) => (i === null ? '...' : render(axis + 1, pos + i * strides[axis]!, indent + ' ')));
    const sep = axis === array.ndim - 1 ? ', ' : ',' + '\n'.repeat(array.ndim - 1 - axis) + indent + ' ';
    return `[${parts.join(sep)}]`;
  };
  const body = render(0, 0, ' '.repeat(prefix.length));
  const dt = array.dtype;
  const dtypeName = dt.fields ? dt.descrLiteral : 'SUV'.includes(dt.kind) || !dt.isNative ? `'${dt.str}'` : dt.name;
  const showDtype = !['float64', 'int64', 'bool'].includes(dtypeName) || array.size === 0;
  return `${prefix}${body}${showDtype ? `, dtype=${dtypeName}` : ''}${array.size === 0 && array.ndim > 1 ? `, shape=(${array.shape.join(', ')})` : ''})`;
}
