/** A numpy-like text rendering of an array, summarising large ones with `...` as numpy does. */
import { NdArray, NOT_A_TIME, decimalText, familyOf, matchDType, readItem, reprString, type Complex, type DType } from '@npyts/core';
import { PyMaskedArray } from '@npyts/core/pickle';
import { formatFloatsLikeNumpy } from './numpy-floats.js';

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

/** Every shown element formatted, padded to a common width like numpy's array printing. */
function formatLeaves(dtype: DType, values: unknown[]): string[] {
  const family = familyOf(dtype);
  if (family === 'float') return formatFloatsLikeNumpy(values as number[], dtype.itemsize);
  if (family === 'complex') {
    // numpy: the real parts formatted together, the imaginary parts together with a sign, then 'j'.
    const half = dtype.itemsize / 2;
    const re = formatFloatsLikeNumpy((values as Complex[]).map((c) => c.re), half);
    const im = formatFloatsLikeNumpy((values as Complex[]).map((c) => c.im), half, '+');
    return re.map((r, i) => {
      const t = im[i]!;
      const end = t.trimEnd().length;
      return `${r}${t.slice(0, end)}j${t.slice(end)}`;
    });
  }
  if (family === 'bool') return (values as boolean[]).map((v) => (v ? ' True' : 'False'));
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

/** What the printout needs of an array: its dtype and shape, and the value at an index. */
export interface Printable {
  dtype: DType;
  shape: readonly number[];
  /** The value at a full index (only the indices the printout shows are asked for). */
  get(index: readonly number[]): unknown;
}

/** The indices numpy shows along an axis of length n: all, or the first and last EDGE around '...'. */
export function shownIndices(n: number, summarise: boolean): (number | null)[] {
  return summarise && n > 2 * EDGE
    ? [...Array.from({ length: EDGE }, (_, i) => i), null, ...Array.from({ length: EDGE }, (_, i) => n - EDGE + i)]
    : Array.from({ length: n }, (_, i) => i);
}

/** numpy's line width for repr, and its threshold for summarising. */
const LINE_WIDTH = 75;

function formatArrayText(array: NdArray): string {
  const strides = array.strides;
  return reprLikeNumpy({
    dtype: array.dtype,
    shape: array.shape,
    get: (index) => readItem(array.dtype, array.data, index.reduce((pos, i, d) => pos + i * strides[d]!, 0)),
  });
}

/** Python's repr of a shape tuple. */
const shapeTuple = (shape: readonly number[]): string => `(${shape.join(', ')}${shape.length === 1 ? ',' : ''})`;

/** numpy's `dtype_short_repr`. */
function dtypeRepr(dt: DType): string {
  if (dt.fields) return dt.descrLiteral;
  if ('SUV'.includes(dt.kind) || !dt.isNative) return `'${dt.str}'`;
  return /^[A-Za-z][A-Za-z0-9]*$/.test(dt.name) ? dt.name : `'${dt.name}'`;
}

/** Dtypes numpy's repr leaves unsaid: float64, int64, complex128 and bool, in native order. */
function dtypeImplied(dt: DType): boolean {
  return !dt.fields && dt.isNative && ['float64', 'int64', 'complex128', 'bool'].includes(dt.name);
}

/**
 * numpy 2's `repr(array)`: elements laid out by `_formatArray` (rows wrapped at 75 columns, `...`
 * past 1000 elements with 3 at each edge), then `shape=` when summarised or empty and `dtype=` when
 * not implied, on the last line or a new one as numpy decides. Only the shown elements are read.
 */
export function reprLikeNumpy(a: Printable): string {
  const shape = a.shape;
  const size = shape.reduce((x, y) => x * y, 1);
  const summarise = size > THRESHOLD;
  const prefix = 'array(';
  let body: string;
  if (size === 0) body = '[]';
  else if (shape.length === 0) body = formatLeaves(a.dtype, [a.get([])]).map((t) => t.trim())[0]!;
  else {
    // The shown elements, formatted together (numpy sizes the columns from them alone).
    const shown: unknown[] = [];
    const keys: string[] = [];
    const collect = (index: number[]): void => {
      if (index.length === shape.length) { keys.push(index.join(',')); shown.push(a.get(index)); return; }
      for (const i of shownIndices(shape[index.length]!, summarise)) if (i !== null) collect([...index, i]);
    };
    collect([]);
    const texts = new Map(formatLeaves(a.dtype, shown).map((t, i) => [keys[i]!, t]));
    body = layout(shape, (index) => texts.get(index.join(','))!, summarise, LINE_WIDTH - 1, ' '.repeat(prefix.length + 1));
  }
  const extras: string[] = [];
  if ((size === 0 && !(shape.length === 1 && shape[0] === 0)) || summarise) extras.push(`shape=${shapeTuple(shape)}`);
  if (!dtypeImplied(a.dtype) || size === 0) extras.push(`dtype=${dtypeRepr(a.dtype)}`);
  if (extras.length === 0) return `${prefix}${body})`;
  const head = `${prefix}${body},`;
  const tail = `${extras.join(', ')})`;
  const lastLine = head.length - (head.lastIndexOf('\n') + 1);
  return head + (lastLine + tail.length + 1 > LINE_WIDTH ? `\n${' '.repeat(prefix.length)}` : ' ') + tail;
}

/** numpy's `_extendLine`: start a new line when the word does not fit (unless that would not help). */
function extendLine(out: { s: string; line: string }, word: string, width: number, indent: string): void {
  if (out.line.length + word.length > width && out.line.length > indent.length) {
    out.s += `${out.line.trimEnd()}\n`;
    out.line = indent;
  }
  out.line += word;
}

/** numpy's `_formatArray` over the element texts. */
function layout(shape: readonly number[], text: (index: number[]) => string, summarise: boolean, lineWidth: number, nextLinePrefix: string): string {
  const ndim = shape.length;
  const separator = ', ';
  const recurse = (index: number[], hanging: string, width: number): string => {
    const axis = index.length;
    const left = ndim - axis;
    if (left === 0) return text(index);
    const nextHanging = `${hanging} `;
    const nextWidth = width - 1;
    const n = shape[axis]!;
    const picks = shownIndices(n, summarise);
    let s = '';
    if (left === 1) {
      const elemWidth = width - Math.max(separator.trimEnd().length, 1);
      const out = { s: '', line: hanging };
      picks.forEach((i, k) => {
        const last = k === picks.length - 1;
        const word = i === null ? '...' : recurse([...index, i], nextHanging, nextWidth);
        extendLine(out, word, last ? elemWidth : elemWidth, hanging);
        if (!last) out.line += separator;
      });
      s = out.s + out.line;
    } else {
      const lineSep = separator.trimEnd() + '\n'.repeat(left - 1);
      picks.forEach((i, k) => {
        const nested = i === null ? '...' : recurse([...index, i], nextHanging, nextWidth);
        s += hanging + nested + (k === picks.length - 1 ? '' : lineSep);
      });
    }
    return `[${s.slice(hanging.length)}]`;
  };
  return recurse([], nextLinePrefix, lineWidth);
}
