/**
 * Exact decimal digits of binary floats, as numpy's Dragon4 gives them: the shortest digits that
 * read back to the same value at the float's own width (float16, float32 or float64), and exact
 * scaling and rounding (half to even). The one place of these rules: the CLI prints with them, the
 * viewer shows cells with them, CSV writes with them.
 */
import { numberToFloat16 } from './float-bits.js';
import { NpyError } from '../errors.js';

/** Whether `text` reads back to `x` at `itemsize` bytes. */
function readsBack(text: string, x: number, itemsize: number): boolean {
  const y = Number(text);
  if (itemsize === 2) return numberToFloat16(y) === numberToFloat16(x);
  if (itemsize === 4) return Math.fround(y) === x;
  return y === x;
}

/**
 * The shortest decimal digits of |x| that identify it at its width, and the decimal exponent of the first.
 * @example
 * shortestDigits(Math.fround(0.1), 4);   // { digits: '1', exp: -1 }
 */
export function shortestDigits(x: number, itemsize: number): { digits: string; exp: number } {
  const a = Math.abs(x);
  if (!Number.isFinite(a)) throw new NpyError('BAD_OPTION', `shortestDigits takes a finite number, not ${x}`);
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

/**
 * The exponent of the first significant digit of a > 0, exactly (`guess` may be off by one).
 * @example
 * exactExponent(0.05, -1);   // -2
 */
export function exactExponent(a: number, guess: number): number {
  // Zero has no first significant digit (the loop below would never end); nor has NaN or infinity.
  if (!(Math.abs(a) > 0) || !Number.isFinite(a)) throw new NpyError('BAD_OPTION', `exactExponent takes a finite number other than 0, not ${a}`);
  if (!Number.isSafeInteger(guess)) throw new NpyError('BAD_OPTION', `exactExponent's guess must be an integer, not ${guess}`);
  let e = guess;
  while (scaledRound(a, -e, true) >= 10n) e++;
  while (scaledRound(a, -e, true) < 1n) e--;
  return e;
}

/**
 * |x| · 10^places rounded half to even (or down, with `floor`), exactly (x is a binary float).
 * @example
 * scaledRound(2.5, 0);   // 2n (half to even)
 */
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

/**
 * The shortest text of a float that reads back to the same value at its width: `0.12573022` for a
 * float32 (not the 17 digits of its float64 widening), as `str(np.float32(x))` gives it; JavaScript's
 * notation for very large and very small magnitudes (`1e+21`, `1e-7`).
 * @example
 * shortestFloatText(Math.fround(0.1), 4);   // '0.1'
 */
export function shortestFloatText(x: number, itemsize: number): string {
  if (!Number.isFinite(x) || itemsize >= 8) return String(x);
  const { digits, exp } = shortestDigits(x, itemsize);
  // At most 9 significant digits: the double nearest to them prints as exactly them.
  return String(Number(`${x < 0 ? '-' : ''}${digits[0]}.${digits.slice(1)}e${exp}`));
}

/**
 * A float as numpy's `str` of a scalar of its width prints it (`str(np.float32(x))`): the shortest
 * digits at that width, positional from 1e-4 up to a bound of the width (1e3 for float16, 1e6 for
 * float32, 1e16 for float64 and longer: `0.12573022`, `999999.0`), scientific outside (`1e-05`,
 * `1.5e+06`), and `nan`, `inf`, `-inf`, `-0.0`.
 * @example
 * numpyScalarText(Math.fround(0.1), 4);   // '0.1'
 * numpyScalarText(1e-5, 8);               // '1e-05'
 */
export function numpyScalarText(x: number, itemsize: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const sign = x < 0 ? '-' : '';
  const { digits, exp } = shortestDigits(x, itemsize);
  const a = Math.abs(x);
  // numpy's bounds for its scalars' str (scalartypes.c), asked of numpy 2.4 by the tests.
  const upper = itemsize === 2 ? 1e3 : itemsize === 4 ? 1e6 : 1e16;
  if (a < 1e-4 || a >= upper) {
    const mantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${mantissa}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  if (exp >= digits.length - 1) return `${sign}${digits}${'0'.repeat(exp - digits.length + 1)}.0`;
  if (exp >= 0) return `${sign}${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
  return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
}
