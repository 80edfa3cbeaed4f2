/**
 * numpy's `FloatingFormat` in its default mode (`floatmode='maxprec'`, `precision=8`): every shown
 * value of an array printed with the same layout, positional or scientific, as numpy's repr does.
 * Digits are Dragon4's: the shortest that read back to the same value of the array's own width
 * (float16, float32 or float64), cut to the precision with exact round-half-even.
 */
import { numberToFloat16 } from '@npyts/core';

const PRECISION = 8;

/** Whether `text` reads back to `x` at `itemsize` bytes. */
function readsBack(text: string, x: number, itemsize: number): boolean {
  const y = Number(text);
  if (itemsize === 2) return numberToFloat16(y) === numberToFloat16(x);
  if (itemsize === 4) return Math.fround(y) === x;
  return y === x;
}

/** The shortest decimal digits of |x| that identify it at its width, and the decimal exponent of the first. */
function shortest(x: number, itemsize: number): { digits: string; exp: number } {
  const a = Math.abs(x);
  if (a === 0) return { digits: '0', exp: 0 };
  if (itemsize === 8) {
    // JavaScript's own shortest round-trip digits of a double (the closest of the shortest).
    const [m, e] = a.toExponential().split('e') as [string, string];
    return { digits: m.replace('.', '').replace(/0+$/, '') || '0', exp: Number(e) };
  }
  // Narrower floats: the fewest digits, each candidate rounded exactly (half to even, as Dragon4),
  // that read back to the same float16 or float32.
  const exp = exactExponent(a, Math.floor(Math.log10(a)));
  for (let p = 1; p <= 17; p++) {
    let q = scaledRound(a, p - 1 - exp).toString();
    let e = exp;
    if (q.length > p) {
      q = q.slice(0, p);
      e += 1;
    }
    if (readsBack(`${q[0]}.${q.slice(1)}e${e}`, a, itemsize)) return { digits: q.replace(/0+$/, '') || '0', exp: e };
  }
  throw new Error('unreachable: 17 digits identify every float');
}

/** The exponent of the first significant digit of a > 0, exactly (`guess` may be off by one). */
export function exactExponent(a: number, guess: number): number {
  let e = guess;
  while (scaledRound(a, -e, true) >= 10n) e++;
  while (scaledRound(a, -e, true) < 1n) e--;
  return e;
}

/** |x| · 10^places rounded half to even (or down, with `floor`), exactly (x is a binary float). */
export function scaledRound(x: number, places: number, floor = false): bigint {
  const a = Math.abs(x);
  // a = mantissa · 2^exponent, exactly.
  const buf = new DataView(new ArrayBuffer(8));
  buf.setFloat64(0, a);
  const bits = buf.getBigUint64(0);
  const biased = Number((bits >> 52n) & 0x7ffn);
  let mantissa = bits & ((1n << 52n) - 1n);
  let exponent = biased - 1075;
  if (biased === 0) exponent = -1074;
  else mantissa |= 1n << 52n;
  let num = mantissa;
  let den = 1n;
  if (exponent >= 0) num <<= BigInt(exponent);
  else den <<= BigInt(-exponent);
  if (places >= 0) num *= 10n ** BigInt(places);
  else den *= 10n ** BigInt(-places);
  const q = num / den;
  if (floor) return q;
  const r2 = 2n * (num % den);
  return r2 > den || (r2 === den && q % 2n === 1n) ? q + 1n : q;
}

/** Positional digits of |x| (Dragon4, unique, fractional, cut at `precision`): [integer, fraction]. */
function positional(x: number, itemsize: number, precision: number): [string, string] {
  const { digits, exp } = shortest(x, itemsize);
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
function scientific(x: number, itemsize: number, precision: number): [string, string, number] {
  const { digits, exp } = shortest(x, itemsize);
  if (digits.length - 1 <= precision) return [digits[0]!, digits.slice(1), exp];
  // Round to precision + 1 significant digits, exactly.
  let e = exactExponent(Math.abs(x), exp);
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
function digitsAt(x: number, exp: number, fraction: number): [string, string, number] {
  if (x === 0) return ['0', '0'.repeat(fraction), 0];
  // The exact value's exponent: its first digit, whatever the shortest digits rounded to.
  let e = exactExponent(Math.abs(x), exp);
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
export function formatFloatsLikeNumpy(xs: readonly number[], itemsize: number, sign: '-' | '+' = '-'): string[] {
  const finite = xs.filter((x) => Number.isFinite(x));
  const nonzero = finite.map(Math.abs).filter((x) => x !== 0);
  let expFormat = false;
  if (nonzero.length) {
    const max = Math.max(...nonzero);
    const min = Math.min(...nonzero);
    expFormat = max >= 1e8 || min < 1e-4 || max / min > 1000;
  }
  const signOf = (x: number): string => (x < 0 || Object.is(x, -0) ? '-' : sign === '+' ? '+' : '');
  let padLeft = 0;
  let padRight = 0;
  let fracDigits = 0;
  let expDigits = 0;
  const parts = new Map<number, [string, string, number]>();
  if (finite.length) {
    if (expFormat) {
      for (const x of finite) parts.set(x, scientific(x, itemsize, PRECISION));
      fracDigits = Math.max(...[...parts.values()].map((p) => p[1].length));
      expDigits = Math.max(2, ...[...parts.values()].map((p) => String(Math.abs(p[2])).length));
      padLeft = Math.max(...finite.map((x) => signOf(x).length + 1));
      padRight = expDigits + 2 + fracDigits;
    } else {
      for (const x of finite) {
        const [i, f] = positional(x, itemsize, PRECISION);
        parts.set(x, [i, f, 0]);
      }
      padLeft = Math.max(...finite.map((x) => signOf(x).length + parts.get(x)![0].length));
      padRight = Math.max(...[...parts.values()].map((p) => p[1].length));
    }
  }
  if (finite.length !== xs.length) {
    // Room for nan and inf (with its sign) to the left of the point.
    const negInf = sign !== '-' || xs.some((x) => x === -Infinity) ? 1 : 0;
    padLeft = Math.max(padLeft, 3 - (padRight + 1), 3 + negInf - (padRight + 1));
  }
  return xs.map((x) => {
    if (!Number.isFinite(x)) {
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
