/**
 * A numpy-like text rendering of an array, summarising large ones with `...` as numpy does. A little
 * over 400 lines: numpy's repr rules (line width, edge items, record and subarray forms) read best together.
 */
import { NdArray, NOT_A_TIME, datetimeText, familyOf, shapeRepr, type DType } from '@npyts/core';
import { decimalText, dtypeConstructionRepr, numpyScalarText, pythonJSON, readExactItem, reprBytes, reprFloat, reprString } from '@npyts/core/plumbing';
import { PyComplex, PyDate, PyDatetime, PyDecimal, PyFraction, PyMaskedArray, PyTime, PyTimedelta } from '@npyts/core/pickle';
import { formatFloatsLikeNumpy, percentG, type Real } from './numpy-floats.js';

const THRESHOLD = 1000;
const EDGE = 3;

/** Python's `repr` of a complex: `(1+2j)`, `2j`; integral parts without `.0`. */
function pyComplexRepr(re: number, im: number): string {
  const part = (x: number): string => reprFloat(x).replace(/\.0$/, '');
  const imag = `${part(im)}j`;
  if (re === 0 && !Object.is(re, -0)) return imag;
  return `(${part(re)}${imag.startsWith('-') ? '' : '+'}${imag})`;
}

/** numpy's `str` of an unstructured void: every byte as `\xNN`, upper-case hex. */
function voidText(b: Uint8Array): string {
  let s = '';
  for (const c of b) s += `\\x${c.toString(16).toUpperCase().padStart(2, '0')}`;
  return `b'${s}'`;
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

/** Python's `repr` of a `datetime` value npyts decoded (naive ones; aware ones print as ISO text). */
function pyTimeRepr(v: object): string | null {
  const clock = (h: number, m: number, s: number, us: number): string => [h, m, ...(s || us ? [s] : []), ...(us ? [us] : [])].join(', ');
  if (v instanceof PyDate) return `datetime.date(${v.year}, ${v.month}, ${v.day})`;
  if (v instanceof PyDatetime && v.utcOffsetSeconds === null) {
    return `datetime.datetime(${v.year}, ${v.month}, ${v.day}, ${clock(v.hour, v.minute, v.second, v.microsecond)})`;
  }
  if (v instanceof PyTime && v.utcOffsetSeconds === null) return `datetime.time(${clock(v.hour, v.minute, v.second, v.microsecond)})`;
  if (v instanceof PyTimedelta) {
    const parts = [
      ['days', v.days],
      ['seconds', v.seconds],
      ['microseconds', v.microseconds],
    ].filter(([, n]) => n !== 0);
    return `datetime.timedelta(${parts.length ? parts.map(([k, n]) => `${k}=${n}`).join(', ') : '0'})`;
  }
  if (v instanceof PyDecimal) return `Decimal('${v.value}')`;
  if (v instanceof PyFraction) return `Fraction(${v.numerator}, ${v.denominator})`;
  return null;
}

/**
 * Python's repr of a decoded object value, as numpy's `_object_format` prints it (a list at the top
 * is `list([...])`). Decoding loses two distinctions Python makes: a float with an integral value is
 * a JavaScript number like an int (it prints as `2`, not `2.0`), and a tuple is an array like a list.
 * A value inside itself prints as `[...]` / `{...}`.
 */
function formatPython(v: unknown, depth = 0): string {
  const b = budget!;
  // The budget counts characters: two for the separator or brackets of each value, plus its text.
  b.left -= 2;
  if (b.left < 0 || depth > 50) {
    b.cut = true;
    return '...';
  }
  if (v === null || v === undefined) {
    b.left -= 4;
    return 'None';
  }
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  // Python ints past 2^53 decode as bigint, so a number that is not a safe integer was a float.
  if (typeof v === 'number') return Number.isSafeInteger(v) && !Object.is(v, -0) ? String(v) : reprFloat(v);
  if (typeof v === 'bigint') {
    const t = decimalText(v);
    b.left -= t.length;
    return t;
  }
  if (typeof v === 'string') {
    b.left -= v.length;
    return reprString(v);
  }
  if (v instanceof Uint8Array) {
    b.left -= v.length;
    return reprBytes(v);
  }
  if (typeof v !== 'object') return String(v);
  if (b.active.has(v)) return v instanceof Map || v instanceof Set || !Array.isArray(v) ? '{...}' : '[...]';
  b.active.add(v);
  try {
    if (v instanceof NdArray) return formatArray(v);
    if (v instanceof PyMaskedArray) return `masked_array(data=${formatPython(v.data, depth + 1)}, mask=${formatPython(v.mask, depth + 1)})`;
    if (Array.isArray(v)) {
      const list = `[${v.map((x) => formatPython(x, depth + 1)).join(', ')}]`;
      return depth === 0 ? `list(${list})` : list;
    }
    if (v instanceof Set) return v.size ? `{${[...v].map((x) => formatPython(x, depth + 1)).join(', ')}}` : 'set()';
    if (v instanceof Map) return `{${[...v].map(([k, x]) => `${formatPython(k, depth + 1)}: ${formatPython(x, depth + 1)}`).join(', ')}}`;
    if (Object.getPrototypeOf(v) === Object.prototype) {
      return `{${Object.entries(v)
        .map(([k, x]) => `${formatPython(k, depth + 1)}: ${formatPython(x, depth + 1)}`)
        .join(', ')}}`;
    }
    if (v instanceof PyComplex) return pyComplexRepr(v.re, v.im);
    return pyTimeRepr(v) ?? String(v);
  } finally {
    b.active.delete(v);
  }
}

/** numpy's padding of timelike columns: the width of the texts of the smallest and largest values. */
function formatTimes(values: unknown[], text: (v: bigint) => string): string[] {
  const times = values.filter((v): v is bigint => v !== NOT_A_TIME) as bigint[];
  let width = 0;
  if (times.length) {
    // biome-ignore lint/complexity/useMathMinMax: bigints (Math.min takes numbers)
    const [lo, hi] = times.reduce(([l, h], t) => [t < l ? t : l, t > h ? t : h], [times[0]!, times[0]!]);
    width = Math.max(text(lo).length, text(hi).length);
  }
  if (times.length < values.length) width = Math.max(width, 5);
  return values.map((v) => (v === NOT_A_TIME ? "'NaT'" : text(v as bigint)).padStart(width));
}

/** numpy's `SubArrayFormat`: nested lists of the element texts, summarised past 1000 elements. */
function nestTexts(texts: string[], shape: readonly number[], summarise: boolean): string {
  let next = 0;
  const nest = (axis: number): string => {
    if (axis === shape.length) return texts[next++]!;
    const parts: string[] = [];
    for (let i = 0; i < shape[axis]!; i++) {
      if (summarise && shape[axis]! > 2 * EDGE && i === EDGE) {
        // Skip the middle: its texts stay unused.
        const inner = shape.slice(axis + 1).reduce((x, y) => x * y, 1);
        next += (shape[axis]! - 2 * EDGE) * inner;
        i = shape[axis]! - EDGE - 1;
        parts.push('...');
        continue;
      }
      parts.push(nest(axis + 1));
    }
    return `[${parts.join(', ')}]`;
  };
  return nest(0);
}

/**
 * numpy's format function for a dtype, built from all the shown values so that they pad alike
 * (`_get_format_function`), applied to each of them.
 */
function formatLeaves(dtype: DType, values: unknown[]): string[] {
  if (dtype.form === 'subarray') {
    // A record field of fixed shape: every element of every value formatted together, then nested.
    const { base, shape } = dtype.subarray;
    const size = shape.reduce((x, y) => x * y, 1);
    const texts = formatLeaves(
      base,
      values.flatMap((v) => (v as unknown[]).flat(shape.length - 1)),
    );
    return values.map((_, i) => nestTexts(texts.slice(i * size, (i + 1) * size), shape, size > THRESHOLD));
  }
  if (dtype.form === 'record') {
    const columns = dtype.fields.map((f) =>
      formatLeaves(
        f.dtype,
        values.map((v) => (v as Record<string, unknown>)[f.name]),
      ),
    );
    return values.map((_, i) => {
      const parts = columns.map((c) => c[i]!);
      return parts.length === 1 ? `(${parts[0]},)` : `(${parts.join(', ')})`;
    });
  }
  const family = familyOf(dtype);
  switch (family) {
    case 'float':
      return formatFloatsLikeNumpy(values as Real[], dtype.itemsize);
    case 'complex': {
      // numpy: the real parts formatted together, the imaginary parts together with a sign, then 'j'.
      const half = dtype.itemsize / 2;
      const re = formatFloatsLikeNumpy(
        (values as { re: Real }[]).map((c) => c.re),
        half,
      );
      const im = formatFloatsLikeNumpy(
        (values as { im: Real }[]).map((c) => c.im),
        half,
        '+',
      );
      return re.map((r, i) => {
        const t = im[i]!;
        const end = t.trimEnd().length;
        return `${r}${t.slice(0, end)}j${t.slice(end)}`;
      });
    }
    case 'bool':
      return (values as boolean[]).map((v) => (v ? ' True' : 'False'));
    case 'int':
    case 'uint': {
      const strs = values.map(String);
      let width = 0;
      for (const x of strs) width = Math.max(width, x.length);
      return strs.map((x) => x.padStart(width));
    }
    case 'datetime':
      return formatTimes(values, (t) => `'${datetimeText(t, dtype.unit, dtype.multiplier)}'`);
    case 'timedelta':
      return formatTimes(values, String);
    case 'str':
      return values.map((v) => reprString(v as string));
    case 'bytes':
      return values.map((v) => reprBytes(v as Uint8Array));
    case 'void':
      return values.map((v) => voidText(v as Uint8Array));
    case 'mlfloat':
      // ml_dtypes' scalars print as C's %g (six significant digits), unpadded.
      return values.map((v) => percentG(v as number));
    default:
      return values.map((v) => formatPython(v));
  }
}

/** Whether a dtype is numpy's x86 long double (`f16`, float128), a real one. */
export const isLongDouble = (dtype: DType): boolean => familyOf(dtype) === 'float' && dtype.realBytes === 16;

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
    get: (index) =>
      readExactItem(
        array.dtype,
        array.data,
        index.reduce((pos, i, d) => pos + i * strides[d]!, 0),
      ),
  });
}

/** numpy's `dtype_short_repr`. */
function dtypeRepr(dt: DType): string {
  if (dt.form === 'record') return dtypeConstructionRepr(dt);
  if (dt.mlFloat) return /^[A-Za-z][A-Za-z0-9]*$/.test(dt.name) ? dt.name : `'${dt.name}'`;
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
      if (index.length === shape.length) {
        keys.push(index.join(','));
        shown.push(a.get(index));
        return;
      }
      for (const i of shownIndices(shape[index.length]!, summarise)) if (i !== null) collect([...index, i]);
    };
    collect([]);
    const texts = new Map(formatLeaves(a.dtype, shown).map((t, i) => [keys[i]!, t]));
    body = layout(shape, (index) => texts.get(index.join(','))!, summarise, LINE_WIDTH - 1, ' '.repeat(prefix.length + 1));
  }
  const extras: string[] = [];
  if ((size === 0 && !(shape.length === 1 && shape[0] === 0)) || summarise) extras.push(`shape=${shapeRepr(shape)}`);
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

/** A GGUF metadata value's items, one by one: a typed array's numbers (float32 ones with their width), or an array's values. */
function itemsOf(v: unknown): { items: Iterable<unknown>; itemsize?: 4 | 8 } | null {
  if (v instanceof Float32Array) return { items: v, itemsize: 4 };
  if (v instanceof Float64Array) return { items: v, itemsize: 8 };
  if (ArrayBuffer.isView(v) && !(v instanceof DataView)) return { items: v as unknown as Iterable<unknown> };
  if (Array.isArray(v)) return { items: v };
  return null;
}

/**
 * A GGUF metadata value as `npyts info` prints it, cut at `limit` characters (with `…`): arrays as
 * lists (typed arrays too), floats as numpy prints a scalar of their width (`type` `'FLOAT32'`, or a
 * `Float32Array`'s items: `1e-05`, not a double's digits), strings quoted. Only the items shown are
 * turned into text, so a vocabulary of 200 000 tokens costs its first few.
 * @example
 * ggufValueText(Math.fround(1e-5), 'FLOAT32');   // '1e-05'
 * ggufValueText(Float32Array.of(0, -1), 'ARRAY');   // '[0.0, -1.0]'
 */
export function ggufValueText(v: unknown, type: string | undefined, limit = 200): string {
  const out = { text: '' };
  const put = (s: string): boolean => {
    out.text += s;
    return out.text.length <= limit;
  };
  const one = (x: unknown, itemsize: 4 | 8 | undefined): boolean => {
    const list = itemsOf(x);
    if (list) {
      if (!put('[')) return false;
      let first = true;
      for (const item of list.items) {
        if (!first && !put(', ')) return false;
        first = false;
        if (!one(item, list.itemsize)) return false;
      }
      return put(']');
    }
    if (typeof x === 'number' && itemsize !== undefined) return put(numpyScalarText(x, itemsize));
    if (typeof x === 'string') return put(JSON.stringify(x));
    return put(String(x));
  };
  const whole = one(v, type === 'FLOAT32' ? 4 : type === 'FLOAT64' ? 8 : undefined);
  return whole && out.text.length <= limit ? out.text : `${out.text.slice(0, limit)}…`;
}

/**
 * A GGUF metadata value as JSON, as gguf-py's `field.contents()` gives it: arrays (typed arrays too)
 * as lists, floats as their values (NaN and infinities as strings), 64-bit integers past 2^53 as
 * decimal strings, as `show --json` writes them.
 * @example
 * ggufValueJSON(Float32Array.of(0, -1));   // [0, -1]
 */
export function ggufValueJSON(v: unknown): unknown {
  const list = itemsOf(v);
  if (list) return Array.from(list.items, ggufValueJSON);
  return pythonJSON(v);
}
