/**
 * `npyts diff`: two arrays compared the way numpy's `np.testing.assert_allclose` compares them
 * (|actual − desired| ≤ atol + rtol·|desired|, NaNs equal where both are NaN, infinities equal only to
 * themselves); non-numeric arrays element by element.
 */
import { datetimeText, familyOf, shapeRepr, type DType, type NdArray } from '@npyts/core';
import {
  compareMagnitudes,
  complexDistances,
  exactDistance,
  longDoubleExact,
  readExactItem,
  roundedLongDouble,
  withinTolerance,
  withinToleranceComplex,
  type ExactComplex,
  type ExactFloat,
} from '@npyts/core/plumbing';
import { isLongDouble } from './format.js';
import { exactText } from './numpy-floats.js';

/** assert_allclose's tolerances and their defaults. */
export interface Tolerance {
  rtol: number;
  atol: number;
}

export const DEFAULT_TOLERANCE: Tolerance = { rtol: 1e-7, atol: 0 };

/** What a comparison found; `lines` is the report (empty when equal). */
export interface DiffResult {
  equal: boolean;
  lines: string[];
}

/** Mismatched positions listed in the report. */
const SHOWN = 10;

type Num = number | { re: number; im: number };

function numeric(dtype: DType): boolean {
  // bfloat16 and float8 read as their exact numbers: compared with tolerances, as numpy with ml_dtypes does.
  return ['bool', 'int', 'uint', 'float', 'mlfloat', 'complex'].includes(familyOf(dtype));
}

function asNum(v: unknown): Num {
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number') return v;
  const c = v as { re: number; im: number };
  return { re: c.re, im: c.im };
}

const isNaNum = (x: Num): boolean => (typeof x === 'number' ? Number.isNaN(x) : Number.isNaN(x.re) || Number.isNaN(x.im));
const magnitude = (x: Num): number => (typeof x === 'number' ? Math.abs(x) : Math.hypot(x.re, x.im));
const difference = (x: Num, y: Num): number => {
  if (typeof x === 'number' && typeof y === 'number') return Math.abs(x - y);
  const [a, b] = [x, y].map((v) => (typeof v === 'number' ? { re: v, im: 0 } : v)) as [{ re: number; im: number }, { re: number; im: number }];
  return Math.hypot(a.re - b.re, a.im - b.im);
};
const same = (x: Num, y: Num): boolean => (typeof x === 'number' && typeof y === 'number' ? x === y : difference(x, y) === 0);

/** Storage positions of an array's elements in C (row-major) order, whatever its memory order. */
function* cOrderPositions(array: NdArray): Generator<number> {
  const { shape, strides } = array;
  const n = shape.length;
  const index = new Array<number>(n).fill(0);
  let pos = 0;
  for (let k = 0; k < array.size; k++) {
    yield pos;
    for (let d = n - 1; d >= 0; d--) {
      pos += strides[d]!;
      if (++index[d]! < shape[d]!) break;
      pos -= strides[d]! * shape[d]!;
      index[d] = 0;
    }
  }
}

/** The C-order multi-index of flat position `i`. */
function indexOf(shape: readonly number[], i: number): number[] {
  const out = new Array<number>(shape.length);
  for (let d = shape.length - 1; d >= 0; d--) {
    out[d] = i % shape[d]!;
    i = Math.floor(i / shape[d]!);
  }
  return out;
}

const textOf = (v: number | ExactFloat): string => (typeof v === 'number' ? `${v}` : exactText(v));

/** The larger of two magnitudes (not negative; either may be infinite). */
function larger(a: number | ExactFloat, b: number | ExactFloat): number | ExactFloat {
  if (typeof a === 'number' && typeof b === 'number') return Math.max(a, b);
  if (a === Infinity || b === Infinity) return Infinity;
  return compareMagnitudes(a, b) >= 0 ? a : b;
}

/** An element as a complex value exactly, for a comparison where one side is a complex long double. */
function exactComplex(array: NdArray, pos: number): ExactComplex {
  if (familyOf(array.dtype) !== 'complex') return { re: exactReal(array, pos), im: 0 };
  return readExactItem(array.dtype, array.data, pos) as ExactComplex;
}

/**
 * A real element exactly, for a comparison with a long double: a long double as its exact value, a
 * 64-bit integer past 2^53 as one too (as a number it would round), anything else as its number.
 */
function exactReal(array: NdArray, pos: number): number | ExactFloat {
  if (isLongDouble(array.dtype)) return longDoubleExact(array.data as Uint8Array, pos * 16);
  const v = readExactItem(array.dtype, array.data, pos);
  if (typeof v !== 'bigint' || (v <= 2n ** 53n && v >= -(2n ** 53n))) return asNum(v) as number;
  const mant = v < 0n ? -v : v;
  return { neg: v < 0n, mant, exp2: 0, bits: mant.toString(2).length };
}

const isExact = (v: unknown): v is ExactFloat => v !== null && typeof v === 'object' && typeof (v as ExactFloat).mant === 'bigint';

const show = (v: unknown): string => {
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return `${v}`;
  if (isExact(v)) return exactText(v);
  if (typeof v === 'string') return JSON.stringify(v);
  if (v instanceof Uint8Array)
    return `b'${Array.from(v, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`)).join('')}'`;
  if (v && typeof v === 'object' && 're' in v && 'im' in v) {
    const { re, im } = v as { re: number | ExactFloat; im: number | ExactFloat };
    const negative = typeof im === 'number' ? im < 0 : im.neg;
    const size = typeof im === 'number' ? Math.abs(im) : { ...im, neg: false };
    return `${show(re)}${negative ? '-' : '+'}${show(size)}j`;
  }
  return showObject(v, new Set());
};

/** An element as text, a datetime as numpy's ISO 8601 text in its unit (as `show` prints it). */
function showIn(dtype: DType, v: unknown): string {
  if (familyOf(dtype) === 'datetime' && dtype.unit !== '' && typeof v === 'bigint') return datetimeText(v, dtype.unit, dtype.multiplier);
  return show(v);
}

/**
 * An object array's element as text, safe on any structure: a container met again inside itself is
 * `[...]` or `{...}` (as Python's repr writes a recursive list or dict), and nesting is cut at 1000
 * (Python's recursion limit), so two equal cyclic elements print the same and nothing overflows.
 */
function showObject(v: unknown, open: Set<object>): string {
  if (v === null || v === undefined) return 'None';
  if (typeof v !== 'object') return show(v);
  if (v instanceof Uint8Array || isExact(v) || ('re' in v && 'im' in v)) return show(v);
  const list = Array.isArray(v);
  if (open.has(v) || open.size >= 1000) return list ? '[...]' : '{...}';
  open.add(v);
  try {
    if (list) return `[${Array.from({ length: v.length }, (_, i) => showObject(v[i], open)).join(', ')}]`;
    if (v instanceof Set) return `{${[...v].map((x) => showObject(x, open)).join(', ')}}`;
    const entries = v instanceof Map ? [...v] : Object.entries(v);
    return `{${entries.map(([k, x]) => `${showObject(k, open)}: ${showObject(x, open)}`).join(', ')}}`;
  } finally {
    open.delete(v);
  }
}

/** numpy's `f'{100 * k / n:.3g}%'`: three significant digits, trailing zeros after the point dropped, an exponent below 1e-4. */
export function percent(k: number, n: number): string {
  const x = (100 * k) / n;
  if (x === 0) return '0%';
  const [digits, exp] = x.toExponential(2).split('e') as [string, string];
  const e = Number(exp);
  const trim = (t: string): string => (t.includes('.') ? t.replace(/0+$/, '').replace(/\.$/, '') : t);
  if (e < -4 || e >= 3) return `${trim(digits)}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}%`;
  return `${trim(x.toFixed(Math.max(0, 2 - e)))}%`;
}

/** Whether `data[pos]` is already the element's number (no decoding): float32/64, integers up to 32 bits, booleans. */
function plainNumbers(dtype: DType): boolean {
  const family = familyOf(dtype);
  if (family === 'bool') return true;
  if (family === 'float') return dtype.realBytes === 4 || dtype.realBytes === 8;
  return (family === 'int' || family === 'uint') && dtype.itemsize <= 4;
}

/**
 * A comparison fed block by block (consecutive runs of elements in C order), so that two files are
 * compared a region at a time in bounded memory; `diffArrays` is one block.
 */
export class Comparison {
  private mismatched = 0;
  private maxAbs: number | ExactFloat = 0;
  private maxRel: number | ExactFloat = 0;
  /** Violations with a finite difference (NaN or infinity mismatches have none to measure). */
  private measured = 0;
  private readonly shown: string[] = [];
  private seen = 0;
  private readonly verdict: string | null;
  private readonly close: boolean;

  private readonly size: number;

  constructor(
    private readonly shape: readonly number[],
    first: DType,
    second: DType,
    otherShape: readonly number[],
    private readonly tol: Tolerance,
  ) {
    this.size = shape.reduce((x, y) => x * y, 1);
    this.close = numeric(first) && numeric(second);
    this.verdict =
      shape.join(',') !== otherShape.join(',')
        ? `shapes differ: ${shapeRepr(shape)} and ${shapeRepr(otherShape)}`
        : !this.close && familyOf(first) !== familyOf(second)
          ? `dtypes cannot be compared: ${first.name} and ${second.name}`
          : null;
  }

  /** Whether there is anything to compare element by element (same shape, comparable dtypes). */
  get comparable(): boolean {
    return this.verdict === null;
  }

  /** The next elements, in C order: `a` and `b` are blocks of equal shape, read through their own strides. */
  add(a: NdArray, b: NdArray): void {
    const n = a.size;
    // C-ordered blocks (a region of a C-order file) are walked by index; others through their strides.
    const linear = (x: NdArray): boolean => x.order === 'C' || x.shape.filter((d) => d > 1).length <= 1;
    const walk = linear(a) && linear(b) ? null : ([cOrderPositions(a), cOrderPositions(b)] as const);
    const plain = this.close && plainNumbers(a.dtype) && plainNumbers(b.dtype);
    // realBytes is 16 for a long double, real or a complex number's part.
    const wide = this.close && (a.dtype.realBytes === 16 || b.dtype.realBytes === 16);
    const complex = familyOf(a.dtype) === 'complex' || familyOf(b.dtype) === 'complex';
    const exact = wide && !complex;
    const exactComplexes = wide && complex;
    const { atol, rtol } = this.tol;
    for (let i = 0; i < n; i++) {
      const pa = walk ? (walk[0].next().value as number) : i;
      const pb = walk ? (walk[1].next().value as number) : i;
      if (plain) {
        // The common case without decoding each element (the same rule as below, for plain numbers).
        const x = (a.data as Float64Array)[pa]!;
        const y = (b.data as Float64Array)[pb]!;
        if (x === y) continue;
        if (Number.isNaN(x) && Number.isNaN(y)) continue;
        const d = Math.abs(x - y);
        // A finite difference only: infinities of opposite signs are a mismatch, whatever rtol·∞ says.
        if (d <= atol + rtol * Math.abs(y) && d < Infinity) continue;
      }
      if (exact || exactComplexes) {
        // A long double on either side: compared exactly, past float64's range and precision (as
        // complex numbers where either side is complex).
        const x = exact ? exactReal(a, pa) : exactComplex(a, pa);
        const y = exact ? exactReal(b, pb) : exactComplex(b, pb);
        const close = exact
          ? this.exactlyClose(x as number | ExactFloat, y as number | ExactFloat)
          : this.exactlyCloseComplex(x as ExactComplex, y as ExactComplex);
        if (!close) {
          this.mismatched++;
          if (this.shown.length < SHOWN) this.shown.push(`  at ${shapeRepr(indexOf(this.shape, this.seen + i))}: ${show(x)} vs ${show(y)}`);
        }
        continue;
      }
      const va = readExactItem(a.dtype, a.data, pa);
      const vb = readExactItem(b.dtype, b.data, pb);
      let bad: boolean;
      if (this.close) {
        const x = asNum(va);
        const y = asNum(vb);
        if (isNaNum(x) || isNaNum(y)) bad = !(isNaNum(x) && isNaNum(y));
        else if (same(x, y)) bad = false;
        // An infinity equals only the same infinity (assert_allclose checks their positions apart).
        else if (!Number.isFinite(magnitude(x)) || !Number.isFinite(magnitude(y))) bad = true;
        else {
          const d = difference(x, y);
          bad = !(d <= atol + rtol * magnitude(y));
          if (bad) {
            this.measured++;
            this.maxAbs = larger(this.maxAbs, d);
            this.maxRel = larger(this.maxRel, d / magnitude(y));
          }
        }
      } else bad = show(va) !== show(vb);
      if (!bad) continue;
      this.mismatched++;
      if (this.shown.length < SHOWN) this.shown.push(`  at ${shapeRepr(indexOf(this.shape, this.seen + i))}: ${showIn(a.dtype, va)} vs ${showIn(b.dtype, vb)}`);
    }
    this.seen += n;
  }

  /** assert_allclose's test of two real values of which one or both may be long doubles, exactly. */
  private exactlyClose(x: number | ExactFloat, y: number | ExactFloat): boolean {
    const nan = (v: number | ExactFloat): boolean => typeof v === 'number' && Number.isNaN(v);
    if (nan(x) || nan(y)) return nan(x) && nan(y);
    const infinite = (v: number | ExactFloat): boolean => typeof v === 'number' && !Number.isFinite(v);
    if (infinite(x) || infinite(y)) return x === y;
    const d = exactDistance(x, y);
    if (withinTolerance(d, y, this.tol.rtol, this.tol.atol)) return true;
    this.measured++;
    this.maxAbs = larger(this.maxAbs, roundedLongDouble(d));
    const zero = typeof y === 'number' && y === 0;
    this.maxRel = larger(this.maxRel, zero ? Infinity : roundedLongDouble(d, y));
    return false;
  }

  /** assert_allclose's test of two complex values of which one or both hold long doubles, exactly. */
  private exactlyCloseComplex(x: ExactComplex, y: ExactComplex): boolean {
    const nan = (v: number | ExactFloat): boolean => typeof v === 'number' && Number.isNaN(v);
    const infinite = (v: number | ExactFloat): boolean => typeof v === 'number' && !Number.isFinite(v);
    const equal = (u: number | ExactFloat, v: number | ExactFloat): boolean =>
      typeof u === 'number' && typeof v === 'number'
        ? u === v
        : typeof u !== 'number' && typeof v !== 'number' && compareMagnitudes(u, v) === 0 && u.neg === v.neg;
    // NaN anywhere equals NaN anywhere; an infinite part only the same value (as for numbers above).
    if (nan(x.re) || nan(x.im) || nan(y.re) || nan(y.im)) return (nan(x.re) || nan(x.im)) && (nan(y.re) || nan(y.im));
    if (infinite(x.re) || infinite(x.im) || infinite(y.re) || infinite(y.im)) return equal(x.re, y.re) && equal(x.im, y.im);
    if (withinToleranceComplex(x, y, this.tol.rtol, this.tol.atol)) return true;
    this.measured++;
    const { abs, rel } = complexDistances(x, y);
    this.maxAbs = larger(this.maxAbs, abs);
    this.maxRel = larger(this.maxRel, rel);
    return false;
  }

  result(): DiffResult {
    if (this.verdict !== null) return { equal: false, lines: [this.verdict] };
    if (this.mismatched === 0) return { equal: true, lines: [] };
    const n = this.size;
    const lines = [
      this.close ? `Not equal to tolerance rtol=${this.tol.rtol}, atol=${this.tol.atol}` : 'Arrays are not equal',
      `Mismatched elements: ${this.mismatched} / ${n} (${percent(this.mismatched, n)})`,
    ];
    if (this.close && this.measured > 0) {
      lines.push(`Max absolute difference among violations: ${textOf(this.maxAbs)}`, `Max relative difference among violations: ${textOf(this.maxRel)}`);
    }
    lines.push(`First mismatches (actual vs desired):`);
    for (const line of this.shown) lines.push(line);
    if (this.mismatched > this.shown.length) lines.push(`  … and ${this.mismatched - this.shown.length} more`);
    return { equal: false, lines };
  }
}

/**
 * Compare `actual` with `desired`. Shapes must be equal (numpy would broadcast; a diff of two files
 * of different shapes is a difference worth reporting).
 */
export function diffArrays(actual: NdArray, desired: NdArray, tol: Tolerance): DiffResult {
  const c = new Comparison(actual.shape, actual.dtype, desired.dtype, desired.shape, tol);
  if (c.comparable) c.add(actual, desired);
  return c.result();
}
