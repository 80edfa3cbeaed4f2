/**
 * numpy's `FloatingFormat` in its default mode (`floatmode='maxprec'`, `precision=8`): every shown
 * value of an array printed with the same layout, positional or scientific, as numpy's repr does.
 * Digits are Dragon4's: the shortest that read back to the same value of the array's own width
 * (float16, float32 or float64), cut to the precision with exact round-half-even.
 */
import { compareMagnitudes, exactExponent, scaledRound, shortestDigits, type ExactFloat } from '@npyts/core/plumbing';

/** A float value: a number, or a long double's exact value where it is wider than one (see core's `longDoubleExact`). */
export type Real = number | ExactFloat;

/** A long double's exact value as text: its shortest digits at its own 64 bits, in scientific notation (`1e+400`). */
export function exactText(x: ExactFloat): string {
  const { digits, exp } = shortestDigits(x, 16);
  return `${x.neg ? '-' : ''}${digits[0]}${digits.length > 1 ? `.${digits.slice(1)}` : ''}e${exp < 0 ? '-' : '+'}${Math.abs(exp)}`;
}

const isFiniteReal = (x: Real): boolean => typeof x !== 'number' || Number.isFinite(x);
const isNegative = (x: Real): boolean => (typeof x === 'number' ? x < 0 || Object.is(x, -0) : x.neg);
const isZero = (x: Real): boolean => typeof x === 'number' && x === 0;

const PRECISION = 8;

/** Positional digits of |x| (Dragon4, unique, fractional, cut at `precision`): [integer, fraction]. */
function positional(x: Real, itemsize: number, precision: number): [string, string] {
  const { digits, exp } = shortestDigits(x, itemsize);
  const fractionDigits = Math.max(0, digits.length - 1 - exp);
  let text: string;
  if (fractionDigits <= precision) {
    // The shortest digits placed at their exponent.
    if (exp >= 0) text = digits.length > exp + 1 ? `${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}` : `${digits}${'0'.repeat(exp + 1 - digits.length)}.`;
    else text = `0.${'0'.repeat(-exp - 1)}${digits}`;
  } else {
    const q = scaledRound(x, precision)
      .toString()
      .padStart(precision + 1, '0');
    text = `${q.slice(0, -precision)}.${q.slice(-precision)}`.replace(/0+$/, '');
  }
  const [int, frac = ''] = text.split('.');
  return [int!, frac];
}

/** Scientific digits of |x| (unique, cut at `precision` fraction digits): [first digit, fraction, exponent]. */
function scientific(x: Real, itemsize: number, precision: number): [string, string, number] {
  const { digits, exp } = shortestDigits(x, itemsize);
  if (digits.length - 1 <= precision) return [digits[0]!, digits.slice(1), exp];
  // Round to precision + 1 significant digits, exactly.
  let e = exactExponent(x, exp);
  let q = scaledRound(x, precision - e).toString();
  if (q.length > precision + 1) {
    q = q.slice(0, precision + 1);
    e += 1;
  } // 9.99… rounded up to 10.0…
  return [q[0]!, q.slice(1).replace(/0+$/, ''), e];
}

/**
 * Scientific digits of |x|'s exact value with `fraction` digits after the point (round half to even):
 * numpy fills a column's shorter values with their further true digits (`min_digits`), not zeros.
 * `exp` (the shortest digits' exponent) is the first guess at the exact value's.
 */
function digitsAt(x: Real, exp: number, fraction: number): [string, string, number] {
  if (isZero(x)) return ['0', '0'.repeat(fraction), 0];
  // The exact value's exponent: its first digit, whatever the shortest digits rounded to.
  let e = exactExponent(x, exp);
  let q = scaledRound(x, fraction - e).toString();
  if (q.length > fraction + 1) {
    e += 1;
    q = q.slice(0, fraction + 1);
  } // 9.99…95 rounded up to 10.0…
  return [q[0]!, q.slice(1), e];
}

/**
 * Every value formatted as numpy formats them together in one array: the same notation, integer
 * parts right-aligned, fraction parts padded (positional) or zero-filled (scientific).
 */
export function formatFloatsLikeNumpy(xs: readonly Real[], itemsize: number, sign: '-' | '+' = '-'): string[] {
  const finite = xs.filter(isFiniteReal);
  const nonzero = finite.filter((x) => !isZero(x));
  let expFormat = false;
  if (nonzero.length) {
    if (nonzero.every((x) => typeof x === 'number')) {
      // float64 arithmetic, as numpy's for arrays of doubles and narrower.
      let max = 0;
      let min = Infinity;
      for (const x of nonzero as number[]) {
        const a = Math.abs(x);
        if (a > max) max = a;
        if (a < min) min = a;
      }
      expFormat = max >= 1e8 || min < 1e-4 || max / min > 1000;
    } else {
      // Long doubles: compared exactly (numpy compares them in long double).
      const max = nonzero.reduce((a, b) => (compareMagnitudes(b, a) > 0 ? b : a));
      const min = nonzero.reduce((a, b) => (compareMagnitudes(b, a) < 0 ? b : a));
      expFormat = compareMagnitudes(max, 1e8) >= 0 || compareMagnitudes(min, 1e-4) < 0 || compareMagnitudes(max, min, 1000n) > 0;
    }
  }
  const signOf = (x: Real): string => (isNegative(x) ? '-' : sign === '+' ? '+' : '');
  let padLeft = 0;
  let padRight = 0;
  let fracDigits = 0;
  let expDigits = 0;
  const parts = new Map<Real, [string, string, number]>();
  if (finite.length) {
    if (expFormat) {
      for (const x of finite) parts.set(x, scientific(x, itemsize, PRECISION));
      expDigits = 2;
      for (const p of parts.values()) {
        fracDigits = Math.max(fracDigits, p[1].length);
        expDigits = Math.max(expDigits, String(Math.abs(p[2])).length);
      }
      for (const x of finite) padLeft = Math.max(padLeft, signOf(x).length + 1);
      padRight = expDigits + 2 + fracDigits;
    } else {
      for (const x of finite) {
        const [i, f] = positional(x, itemsize, PRECISION);
        parts.set(x, [i, f, 0]);
      }
      for (const x of finite) padLeft = Math.max(padLeft, signOf(x).length + parts.get(x)![0].length);
      for (const p of parts.values()) padRight = Math.max(padRight, p[1].length);
    }
  }
  if (finite.length !== xs.length) {
    // Room for nan and inf (with its sign) to the left of the point.
    const negInf = sign !== '-' || xs.some((x) => x === -Infinity) ? 1 : 0;
    padLeft = Math.max(padLeft, 3 - (padRight + 1), 3 + negInf - (padRight + 1));
  }
  return xs.map((x) => {
    if (typeof x === 'number' && !Number.isFinite(x)) {
      const text = Number.isNaN(x) ? `${sign === '+' ? '+' : ''}nan` : `${x < 0 ? '-' : sign === '+' ? '+' : ''}inf`;
      return text.padStart(padLeft + padRight + 1);
    }
    let [int, frac, e] = parts.get(x)!;
    if (expFormat && frac.length < fracDigits) [int, frac, e] = digitsAt(x, e, fracDigits);
    const head = `${signOf(x)}${int}`.padStart(padLeft);
    if (expFormat) return `${head}.${frac}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(expDigits, '0')}`;
    return `${head}.${frac.padEnd(padRight)}`;
  });
}

/**
 * C's `%g` of a number, as Python's `'%g' % x` prints it (ml_dtypes' scalars print so): six
 * significant digits rounded exactly (half to even), trailing zeros dropped, exponent form below
 * 1e-4 and from 1e6 (`1e+06`).
 */
export function percentG(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x < 0 ? '-inf' : 'inf';
  const sign = x < 0 || Object.is(x, -0) ? '-' : '';
  if (x === 0) return `${sign}0`;
  let e = exactExponent(Math.abs(x), Math.floor(Math.log10(Math.abs(x))));
  let digits = scaledRound(x, 5 - e).toString();
  if (digits.length > 6) {
    // 9.999995 rounded up to 10.0000
    digits = digits.slice(0, 6);
    e += 1;
  }
  const trim = (t: string): string => (t.includes('.') ? t.replace(/0+$/, '').replace(/\.$/, '') : t);
  if (e < -4 || e >= 6) return `${sign}${trim(`${digits[0]}.${digits.slice(1)}`)}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  const text = e >= 0 ? `${digits.slice(0, e + 1)}.${digits.slice(e + 1)}` : `0.${'0'.repeat(-e - 1)}${digits}`;
  return `${sign}${trim(text)}`;
}
