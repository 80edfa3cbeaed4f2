/**
 * Exact decimal digits of binary floats, as numpy's Dragon4 gives them: the shortest digits that
 * read back to the same value at the float's own width (float16, float32 or float64), and exact
 * scaling and rounding (half to even). The one place of these rules: the CLI prints with them, the
 * viewer shows cells with them, CSV writes with them.
 */
import { numberToFloat16 } from './float-bits.js';
import { NpyError } from '../errors.js';

/**
 * A float's exact value, `(-1)^neg · mant · 2^exp2`, for floats wider than a JavaScript number (an
 * x86 80-bit long double): `mant` is the stored significand (an integer of up to `bits` bits, > 0),
 * and `2^exp2` the distance to its neighbours (half that below a power of two, above the smallest exponent).
 * @example
 * const x: ExactFloat = { neg: false, mant: 1n << 63n, exp2: -63, bits: 64 };   // 1.0 as a long double
 */
export interface ExactFloat {
  readonly neg: boolean;
  readonly mant: bigint;
  readonly exp2: number;
  /** The format's significand bits (64 for the x86 extended format). */
  readonly bits: number;
}

/** The x86 extended format's exponent of its least significant bit: 2^LONG_DOUBLE_MIN_EXP2 is its smallest subnormal. */
const LONG_DOUBLE_MIN_EXP2 = 1 - 16383 - 63;
/** …and the largest normal's (biased exponent 32766). */
const LONG_DOUBLE_MAX_EXP2 = 32766 - 16383 - 63;
const BIT63 = 1n << 63n;
const BIT64 = 1n << 64n;

/**
 * The x86 80-bit value at `at` (numpy's `<f16` on x86-64, little-endian in the first 10 of 16
 * bytes) exactly: zeros, infinities and NaN as numbers, any other value as an {@link ExactFloat}.
 * @example
 * longDoubleExact(bytes, 0);   // { neg: false, mant: 0xffffffffffffffffn, exp2: 16321, bits: 64 } for np.finfo(np.longdouble).max
 */
export function longDoubleExact(bytes: Uint8Array, at: number): number | ExactFloat {
  let mant = 0n;
  for (let i = 7; i >= 0; i--) mant = (mant << 8n) | BigInt(bytes[at + i]!);
  const se = bytes[at + 8]! | (bytes[at + 9]! << 8);
  const neg = (se & 0x8000) !== 0;
  const biased = se & 0x7fff;
  if (biased === 0x7fff) return (mant & 0x7fffffffffffffffn) === 0n ? (neg ? -Infinity : Infinity) : NaN;
  if (mant === 0n) return neg ? -0 : 0;
  return { neg, mant, exp2: (biased === 0 ? 1 : biased) - 16383 - 63, bits: 64 };
}

/** A finite number's exact value (|x| = mant · 2^exp2, mant < 2^53). */
function exactOfNumber(x: number): { mant: bigint; exp2: number } {
  const buf = new DataView(new ArrayBuffer(8));
  buf.setFloat64(0, Math.abs(x));
  const bits = buf.getBigUint64(0);
  const biased = Number((bits >> 52n) & 0x7ffn);
  const mantissa = bits & ((1n << 52n) - 1n);
  return biased === 0 ? { mant: mantissa, exp2: -1074 } : { mant: mantissa | (1n << 52n), exp2: biased - 1075 };
}

/** |x| as `num / den`, exactly. */
function fractionOf(x: number | ExactFloat): [bigint, bigint] {
  const { mant, exp2 } = typeof x === 'number' ? exactOfNumber(x) : x;
  return exp2 >= 0 ? [mant << BigInt(exp2), 1n] : [mant, 1n << BigInt(-exp2)];
}

/**
 * -1, 0 or 1 as |a| is below, equal to or above |b| · `times`, exactly (finite values).
 * @example
 * compareMagnitudes(longDoubleExact(bytes, 0), 1e8);   // 1 for a long double above 1e8
 */
export function compareMagnitudes(a: number | ExactFloat, b: number | ExactFloat, times = 1n): -1 | 0 | 1 {
  const [an, ad] = fractionOf(a);
  const [bn, bd] = fractionOf(b);
  const l = an * bd;
  const r = bn * ad * (times < 0n ? -times : times);
  return l < r ? -1 : l > r ? 1 : 0;
}

/**
 * |a − b| of two finite values, exactly: the difference of two binary floats is itself one (with as
 * many bits as it takes), so a long double compared with a long double loses nothing.
 * @example
 * exactDistance(longDoubleExact(bytes, 0), 1e400 as a long double);   // { neg: false, mant, exp2, bits }
 */
export function exactDistance(a: number | ExactFloat, b: number | ExactFloat): ExactFloat {
  const [x, y] = [a, b].map(signedOf) as [[bigint, number], [bigint, number]];
  const exp2 = Math.min(x[1], y[1]);
  const d = (x[0] << BigInt(x[1] - exp2)) - (y[0] << BigInt(y[1] - exp2));
  const mant = d < 0n ? -d : d;
  return { neg: false, mant, exp2, bits: mant.toString(2).length };
}

/** A finite value as a signed integer times 2^exp2. */
function signedOf(x: number | ExactFloat): [bigint, number] {
  if (typeof x === 'number') {
    const { mant, exp2 } = exactOfNumber(x);
    return [x < 0 ? -mant : mant, exp2];
  }
  return [x.neg ? -x.mant : x.mant, x.exp2];
}

/**
 * Whether |d| ≤ atol + rtol · |y|, exactly (np.testing.assert_allclose's test, computed without
 * rounding: numpy rounds each step to the long double, which can differ only where the two sides are
 * within a rounding of each other). `rtol` and `atol` are finite and not negative.
 * @example
 * withinTolerance(exactDistance(x, y), y, 1e-7, 0);   // assert_allclose's verdict for long doubles x and y
 */
export function withinTolerance(d: number | ExactFloat, y: number | ExactFloat, rtol: number, atol: number): boolean {
  const [dn, dd] = fractionOf(d);
  const [yn, yd] = fractionOf(y);
  const [rn, rd] = fractionOf(rtol);
  const [an, ad] = fractionOf(atol);
  // dn/dd ≤ an/ad + (rn·yn)/(rd·yd), over the common denominator dd·ad·rd·yd.
  return dn * ad * rd * yd <= an * dd * rd * yd + rn * yn * dd * ad;
}

/**
 * |a| / |b| (b not zero), or |a| alone, rounded half to even to a long double's 64 bits (x86
 * extended: exponents down to its subnormals, infinity past its largest): the value numpy's long
 * double arithmetic gives for one operation, as a long double (0 and infinity as numbers).
 * @example
 * roundedLongDouble(exactDistance(x, y));   // the long double nearest |x − y|
 */
export function roundedLongDouble(a: number | ExactFloat, b: number | ExactFloat = 1): number | ExactFloat {
  const [num, den] = fractionOf(a);
  const [bn, bd] = fractionOf(b);
  return nearestLongDouble(num * bd, den * bn);
}

/**
 * num / den (both ≥ 0, den > 0) rounded half to even to an x86 long double: its 64 bits, exponents
 * down to its subnormals, infinity past its largest; 0 and infinity as numbers.
 */
function nearestLongDouble(num: bigint, den: bigint): number | ExactFloat {
  if (num === 0n) return 0;
  // The exponent e with 2^63 ≤ num / den · 2^-e < 2^64, then the quotient rounded half to even.
  let e = num.toString(2).length - den.toString(2).length - 63;
  const scaled = (k: number): [bigint, bigint] => (k >= 0 ? [num, den << BigInt(k)] : [num << BigInt(-k), den]);
  let [n, d] = scaled(e);
  if (n / d >= BIT64) [n, d] = scaled(++e);
  else if (n / d < BIT63) [n, d] = scaled(--e);
  // Below the smallest normal the format keeps fewer bits: round at its subnormal step instead.
  if (e < LONG_DOUBLE_MIN_EXP2) [n, d] = scaled((e = LONG_DOUBLE_MIN_EXP2));
  const r2 = 2n * (n % d);
  return roundedUp(n / d, r2 > d || (r2 === d && ((n / d) & 1n) === 1n), e);
}

/**
 * The long double q · 2^e (q < 2^64, its exponent at least the smallest) with q rounded up by one
 * where `up` says: a carry to 2^64 moves to the next exponent, past the largest is infinity.
 */
function roundedUp(q: bigint, up: boolean, e: number): number | ExactFloat {
  let mant = up ? q + 1n : q;
  let exp2 = e;
  if (mant === BIT64) {
    mant >>= 1n;
    exp2 += 1;
  }
  if (mant === 0n) return 0;
  if (exp2 > LONG_DOUBLE_MAX_EXP2) return Infinity;
  return { neg: false, mant, exp2, bits: 64 };
}

/**
 * √(num / den) (num ≥ 0, den > 0) rounded half to even to an x86 long double, as {@link nearestLongDouble}.
 */
function nearestLongDoubleRoot(num: bigint, den: bigint): number | ExactFloat {
  if (num === 0n) return 0;
  // e with 2^63 ≤ √(num / den) · 2^-e < 2^64: q = ⌊√(num · 2^-2e / den)⌋ (an integer root of the
  // quotient's floor is the floor of the root), then rounded up when the root passes q + ½.
  let e = Math.floor((num.toString(2).length - den.toString(2).length) / 2) - 63;
  const scaled = (k: number): [bigint, bigint] => (k >= 0 ? [num, den << BigInt(2 * k)] : [num << BigInt(-2 * k), den]);
  const rootAt = (k: number): [bigint, bigint, bigint] => {
    const [n, d] = scaled(k);
    return [integerRoot(n / d), n, d];
  };
  let [q, n, d] = rootAt(e);
  while (q >= BIT64) [q, n, d] = rootAt(++e);
  while (q < BIT63 && e > LONG_DOUBLE_MIN_EXP2) [q, n, d] = rootAt(--e);
  if (e < LONG_DOUBLE_MIN_EXP2) [q, n, d] = rootAt((e = LONG_DOUBLE_MIN_EXP2));
  // √x > q + ½ ⇔ 4x > 4q² + 4q + 1 (never equal: that root would be irrational).
  return roundedUp(q, 4n * n > (4n * q * q + 4n * q + 1n) * d, e);
}

/** ⌊√n⌋ of n ≥ 0 (Newton's iteration from above). */
function integerRoot(n: bigint): bigint {
  if (n < 2n) return n;
  let x = 1n << BigInt(Math.ceil(n.toString(2).length / 2));
  for (;;) {
    const y = (x + n / x) >> 1n;
    if (y >= x) return x;
    x = y;
  }
}

/** A complex value's parts, each a number or a long double's exact value. */
export interface ExactComplex {
  readonly re: number | ExactFloat;
  readonly im: number | ExactFloat;
}

/** |a − b|² of two finite complex values, exactly, as num / den. */
function squaredDistance(a: ExactComplex, b: ExactComplex): [bigint, bigint] {
  return sumOfSquares(exactDistance(a.re, b.re), exactDistance(a.im, b.im));
}

/** x² + y² of two finite values, exactly, as num / den. */
function sumOfSquares(x: number | ExactFloat, y: number | ExactFloat): [bigint, bigint] {
  const [xn, xd] = fractionOf(x);
  const [yn, yd] = fractionOf(y);
  return [xn * xn * yd * yd + yn * yn * xd * xd, xd * xd * yd * yd];
}

/**
 * Whether |a − b| ≤ atol + rtol · |b| for finite complex values, exactly (np.testing.assert_allclose's
 * test for complex numbers, where |z| is the hypotenuse; numpy rounds each step to the long double,
 * which can differ only where the two sides are within a rounding of each other).
 * @example
 * withinToleranceComplex(x, y, 1e-7, 0);   // assert_allclose's verdict for complex long doubles x and y
 */
export function withinToleranceComplex(a: ExactComplex, b: ExactComplex, rtol: number, atol: number): boolean {
  // √D ≤ A + R·√Y ⇔ D ≤ A² + 2AR·√Y + R²·Y ⇔ (D − A² − R²Y ≤ 0, or its square ≤ 4A²R²·Y): all exact.
  const [dn, dd] = squaredDistance(a, b);
  const [yn, yd] = sumOfSquares(b.re, b.im);
  const [rn, rd] = fractionOf(rtol);
  const [an, ad] = fractionOf(atol);
  // Over the common denominator dd·ad²·rd²·yd.
  const den = dd * ad * ad * rd * rd * yd;
  const lhs = dn * ad * ad * rd * rd * yd - an * an * dd * rd * rd * yd - rn * rn * yn * dd * ad * ad;
  if (lhs <= 0n) return true;
  // lhs/den ≤ 2·(an/ad)·(rn/rd)·√(yn/yd) ⇔ (lhs/den)² ≤ 4·an²·rn²·yn / (ad²·rd²·yd)
  return lhs * lhs * ad * ad * rd * rd * yd <= 4n * an * an * rn * rn * yn * den * den;
}

/**
 * |a − b| and |a − b| / |b| of finite complex values (b not zero for the second), each rounded half to
 * even to a long double (0 and infinity as numbers): the largest differences a diff of complex long
 * doubles reports.
 * @example
 * complexDistances(x, y);   // { abs: the long double nearest |x − y|, rel: … nearest |x − y| / |y| }
 */
export function complexDistances(a: ExactComplex, b: ExactComplex): { abs: number | ExactFloat; rel: number | ExactFloat } {
  const [dn, dd] = squaredDistance(a, b);
  const [yn, yd] = sumOfSquares(b.re, b.im);
  return { abs: nearestLongDoubleRoot(dn, dd), rel: yn === 0n ? Infinity : nearestLongDoubleRoot(dn * yd, dd * yn) };
}

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
export function shortestDigits(x: number | ExactFloat, itemsize: number): { digits: string; exp: number } {
  if (typeof x !== 'number') return shortestExactDigits(x);
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

/** About log10(|x|) of an {@link ExactFloat} (a first guess for {@link exactExponent}). */
function log10Guess(x: ExactFloat): number {
  return Math.floor((x.exp2 + x.mant.toString(2).length - 1) * Math.log10(2));
}

/**
 * The shortest digits of an {@link ExactFloat} that no neighbour of its format is nearer to, as
 * numpy's Dragon4 finds them (the interval's ends excluded): for each count of digits, the value
 * rounded to that many (half to even) is taken when it lies strictly within half a gap of it.
 */
function shortestExactDigits(x: ExactFloat): { digits: string; exp: number } {
  const exp = exactExponent(x, log10Guess(x));
  // The gap below is half the gap above at a power of two (a normal significand of one bit), except at the smallest exponent.
  const top = 1n << BigInt(x.bits - 1);
  const narrowBelow = x.mant === top && x.exp2 > -16445;
  for (let p = 1; ; p++) {
    let q = scaledRound(x, p - 1 - exp);
    let e = exp;
    if (q.toString().length > p) {
      q /= 10n;
      e += 1;
    }
    // Compare D = q·10^k with v = mant·2^exp2, all scaled to integers (×2^(2 - exp2) and ×10^-k where negative).
    const k = e - p + 1;
    const s2 = Math.max(0, 2 - x.exp2);
    const s10 = Math.max(0, -k);
    const scaled = (c: bigint, pow2: number, pow10: number): bigint => c * (1n << BigInt(pow2 + s2)) * 10n ** BigInt(pow10 + s10);
    const d = scaled(q, 0, k) - scaled(x.mant, x.exp2, 0);
    const halfGap = scaled(1n, x.exp2 - (d < 0n && narrowBelow ? 2 : 1), 0);
    if ((d < 0n ? -d : d) < halfGap) return { digits: q.toString().replace(/0+$/, '') || '0', exp: e };
  }
}

/**
 * The exponent of the first significant digit of |a| > 0, exactly (`guess` may be off by one).
 * @example
 * exactExponent(0.05, -1);   // -2
 */
export function exactExponent(a: number | ExactFloat, guess: number): number {
  // Zero has no first significant digit (the loop below would never end); nor has NaN or infinity.
  if (typeof a === 'number' && (!(Math.abs(a) > 0) || !Number.isFinite(a)))
    throw new NpyError('BAD_OPTION', `exactExponent takes a finite number other than 0, not ${a}`);
  if (!Number.isSafeInteger(guess)) throw new NpyError('BAD_OPTION', `exactExponent's guess must be an integer, not ${guess}`);
  let e = guess;
  while (scaledRound(a, -e, true) >= 10n) e++;
  while (scaledRound(a, -e, true) < 1n) e--;
  return e;
}

/**
 * |x| · 10^places rounded half to even (or down, with `floor`), exactly (x is a binary float, or a
 * wider one's {@link ExactFloat}).
 * @example
 * scaledRound(2.5, 0);   // 2n (half to even)
 */
export function scaledRound(x: number | ExactFloat, places: number, floor = false): bigint {
  let [num, den] = fractionOf(x);
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
 * A float (a long double as its exact value) as numpy's `str` of a scalar of its width prints it (`str(np.float32(x))`): the shortest
 * digits at that width, positional from 1e-4 up to a bound of the width (1e3 for float16, 1e6 for
 * float32, 1e16 for float64 and longer: `0.12573022`, `999999.0`), scientific outside (`1e-05`,
 * `1.5e+06`), and `nan`, `inf`, `-inf`, `-0.0`.
 * @example
 * numpyScalarText(Math.fround(0.1), 4);   // '0.1'
 * numpyScalarText(1e-5, 8);               // '1e-05'
 * numpyScalarText(longDoubleExact(bytes, 0), 16);   // '1e+400', as str(np.longdouble('1e400'))
 */
export function numpyScalarText(x: number | ExactFloat, itemsize: number): string {
  if (typeof x === 'number') {
    if (Number.isNaN(x)) return 'nan';
    if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
    if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  }
  const sign = (typeof x === 'number' ? x < 0 : x.neg) ? '-' : '';
  const { digits, exp } = shortestDigits(x, itemsize);
  // numpy's bounds for its scalars' str (scalartypes.c), asked of numpy 2.4 by the tests.
  const upper = itemsize === 2 ? 1e3 : itemsize === 4 ? 1e6 : 1e16;
  if (compareMagnitudes(x, 1e-4) < 0 || compareMagnitudes(x, upper) >= 0) {
    const mantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${mantissa}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  if (exp >= digits.length - 1) return `${sign}${digits}${'0'.repeat(exp - digits.length + 1)}.0`;
  if (exp >= 0) return `${sign}${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
  return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
}

/**
 * A decimal in Python's float() grammar (digits, an optional point, an optional exponent; no hex or
 * underscores) as the nearest x86 80-bit long double, rounded half to even, as numpy reads text
 * into `np.longdouble` (`np.loadtxt(dtype=np.longdouble)`, C's strtold): zeros and values past its
 * range (infinity) as numbers, anything else as an {@link ExactFloat}. Work grows with the digits
 * given, not with the exponent: an exponent far past the format's range gives zero or infinity at once.
 * @example
 * longDoubleOfDecimal('0.1');     // { neg: false, mant: 0xcccccccccccccccdn, exp2: -67, bits: 64 }
 * longDoubleOfDecimal('1e5000');  // Infinity
 */
export function longDoubleOfDecimal(text: string): number | ExactFloat {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!m || (m[2] === '' && !m[3])) throw new NpyError('BAD_VALUE', `'${text}' is not a decimal number`);
  const neg = m[1] === '-';
  const whole = `${m[2]}${m[3] ?? ''}`;
  const significant = whole.replace(/^0+/, '');
  if (significant === '') return neg ? -0 : 0;
  const digits = significant.replace(/0+$/, '');
  // value = digits · 10^e10; an exponent of hundreds of digits is only compared, never raised.
  const written = Number(m[4] ?? 0);
  const e10 = written - (m[3]?.length ?? 0) + (significant.length - digits.length);
  // Past 10^4933 is past the largest long double (1.19e4932); below 10^-4952, nearer 0 than half its
  // smallest subnormal (3.6e-4951).
  if (digits.length - 1 + e10 > 4933) return neg ? -Infinity : Infinity;
  if (digits.length + e10 < -4952) return neg ? -0 : 0;
  const d = BigInt(digits);
  const [num, den] = e10 >= 0 ? [d * 10n ** BigInt(e10), 1n] : [d, 10n ** BigInt(-e10)];
  const x = nearestLongDouble(num, den);
  if (typeof x === 'number') return neg ? -x : x;
  return neg ? { ...x, neg } : x;
}

/**
 * An exact value as a number where a float64 holds it exactly (at most 53 significant bits, within
 * its range, subnormals included); null where it does not.
 * @example
 * exactAsNumber(longDoubleExact(bytes, 0));   // 2.5 for np.longdouble(2.5), null for np.longdouble('1e400')
 */
export function exactAsNumber(x: ExactFloat): number | null {
  let { mant, exp2 } = x;
  if (mant === 0n) return x.neg ? -0 : 0;
  while ((mant & 1n) === 0n) {
    mant >>= 1n;
    exp2 += 1;
  }
  const bits = mant.toString(2).length;
  // Its lowest bit at 2^-1074 or above, its highest at 2^1023 or below: then mant · 2^exp2 is one
  // float64, and so is each factor of the product below.
  if (bits > 53 || exp2 < -1074 || exp2 + bits - 1 > 1023) return null;
  const value = exp2 >= -1022 ? Number(mant) * 2 ** exp2 : Number(mant) * 2 ** (exp2 + 1022) * 2 ** -1022;
  return x.neg ? -value : value;
}

/**
 * An x86 long double's exact value (as {@link longDoubleExact} reads it, or {@link longDoubleOfDecimal}
 * makes it) into 16 little-endian bytes at `at`: the inverse of {@link longDoubleExact}. A value the
 * format cannot hold exactly is refused (`NOT_REPRESENTABLE`), never rounded in silence.
 * @example
 * writeLongDoubleExact(longDoubleOfDecimal('0.1') as ExactFloat, out, 0);
 */
export function writeLongDoubleExact(x: ExactFloat, out: Uint8Array, at: number): void {
  let { mant, exp2 } = x;
  // Normalised: the integer bit set, unless at the smallest exponent (a subnormal).
  while (mant > 0n && mant < BIT63 && exp2 > LONG_DOUBLE_MIN_EXP2) {
    mant <<= 1n;
    exp2 -= 1;
  }
  if (mant <= 0n || mant >= BIT64 || exp2 < LONG_DOUBLE_MIN_EXP2 || exp2 > LONG_DOUBLE_MAX_EXP2) {
    throw new NpyError('NOT_REPRESENTABLE', `${mant}·2^${exp2} is not an x86 long double value`);
  }
  const biased = mant >= BIT63 ? exp2 + 63 + 16383 : 0;
  out.fill(0, at, at + 16);
  for (let i = 0; i < 8; i++) {
    out[at + i] = Number(mant & 0xffn);
    mant >>= 8n;
  }
  const se = ((x.neg ? 1 : 0) << 15) | biased;
  out[at + 8] = se & 0xff;
  out[at + 9] = se >> 8;
}
