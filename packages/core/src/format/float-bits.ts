/** Bit-level conversions for the float formats JavaScript has no typed array for. */

const f64 = new Float64Array(1);
const f64Bits = new BigUint64Array(f64.buffer);
const u32 = new Uint32Array(f64.buffer);
const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * IEEE binary16 bits → number (exact).
 * @example
 * float16ToNumber(0x3e00);   // 1.5
 */
export function float16ToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * (1024 + frac) * 2 ** (exp - 25);
}

/**
 * number → IEEE binary16 bits, rounding to nearest, ties to even (as numpy does).
 * @example
 * numberToFloat16(1.5);   // 0x3e00
 */
export function numberToFloat16(x: number): number {
  if (Math.fround(x) === x) return float32ToFloat16(x);
  f64[0] = x;
  const hi = u32[LITTLE ? 1 : 0]!;
  const lo = u32[LITTLE ? 0 : 1]!;
  const sign = (hi >>> 16) & 0x8000;
  const exp = (hi >>> 20) & 0x7ff;
  if (exp === 0x7ff) {
    const nan = (hi & 0xfffff) !== 0 || lo !== 0;
    return sign | 0x7c00 | (nan ? 0x200 | ((hi >>> 10) & 0x3ff) : 0);
  }
  const a = Math.abs(x);
  if (a >= 65520) return sign | 0x7c00; // rounds to infinity
  if (a < 2 ** -14) {
    // Subnormal half: a multiple of 2^-24; Math.round would round ties away from zero.
    const q = a * 2 ** 24;
    let n = Math.floor(q);
    const rem = q - n;
    if (rem > 0.5 || (rem === 0.5 && (n & 1) === 1)) n++;
    return sign | n;
  }
  const e = Math.floor(Math.log2(a));
  let ex = e;
  // log2 may be off by one near powers of two.
  if (2 ** ex > a) ex--;
  else if (2 ** (ex + 1) <= a) ex++;
  const scaled = a / 2 ** ex; // in [1, 2)
  const q = (scaled - 1) * 1024;
  let m = Math.floor(q);
  const rem = q - m;
  if (rem > 0.5 || (rem === 0.5 && (m & 1) === 1)) m++;
  if (m === 1024) {
    m = 0;
    ex++;
  }
  return sign | ((ex + 15) << 10) | m;
}

const f32 = new Float32Array(1);
const f32Bits = new Uint32Array(f32.buffer);

/** {@link numberToFloat16} of a float32 value (not NaN), from its bits: the quantizers' fast path (one per block). */
function float32ToFloat16(x: number): number {
  f32[0] = x;
  const f = f32Bits[0]!;
  const sign = (f >>> 16) & 0x8000;
  const e = ((f >>> 23) & 0xff) - 112; // the half's biased exponent
  const man = f & 0x7fffff;
  if (e >= 31) return sign | 0x7c00; // past the largest half, or infinity
  if (e <= 0) {
    // Below 2^-14: a subnormal half (a multiple of 2^-24), or zero below 2^-25.
    if (e < -10) return sign;
    const m = man | 0x800000;
    const shift = 14 - e;
    let h = m >>> shift;
    const rest = m & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rest > half || (rest === half && (h & 1) === 1)) h++;
    return sign | h;
  }
  // A carry out of the mantissa moves into the exponent (up to infinity), as it should.
  let h = (e << 10) | (man >>> 13);
  const rest = man & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1) === 1)) h++;
  return sign | h;
}

/**
 * x86 80-bit extended precision (numpy's `<f16` long double on x86-64, little-endian, in the
 * first 10 of 16 bytes) → the nearest float64, ties to even.
 * @example
 * longDoubleToNumber(bytes, 0);   // the x86 80-bit value at byte 0, rounded to a double
 */
export function longDoubleToNumber(bytes: Uint8Array, at: number): number {
  let mant = 0n;
  for (let i = 7; i >= 0; i--) mant = (mant << 8n) | BigInt(bytes[at + i]!);
  const se = bytes[at + 8]! | (bytes[at + 9]! << 8);
  const sign = se & 0x8000 ? -1 : 1;
  const biased = se & 0x7fff;
  if (biased === 0x7fff) {
    return (mant & 0x7fffffffffffffffn) === 0n ? sign * Infinity : NaN;
  }
  if (mant === 0n) return sign * 0;
  // value = mant × 2^e2, with mant a 64-bit integer.
  const e2 = (biased === 0 ? 1 : biased) - 16383 - 63;
  const bits = mant.toString(2).length;
  const topExp = e2 + bits - 1;
  if (topExp >= -1022) {
    // Normal result: Number() rounds the mantissa to 53 bits correctly; scaling by 2^k is then exact.
    return sign * scaleByPowerOfTwo(Number(mant), e2);
  }
  // Subnormal result: round once, directly to a multiple of 2^-1074.
  const shift = BigInt(-1074 - e2);
  let q = mant >> shift;
  const rem = mant - (q << shift);
  const half = 1n << (shift - 1n);
  if (rem > half || (rem === half && (q & 1n) === 1n)) q++;
  return sign * Number(q) * 2 ** -1074;
}

/**
 * Whether the x86 80-bit value at `at` is exactly a float64 (so {@link longDoubleToNumber} loses
 * nothing): zero, an infinity or NaN, or a value within float64's range whose significant bits fit
 * its 53 (fewer for float64's subnormals). Values past float64's range, or with more precision, are not.
 * @example
 * longDoubleIsNumber(bytes, 0);   // false for np.finfo(np.longdouble).max
 */
export function longDoubleIsNumber(bytes: Uint8Array, at: number): boolean {
  const biased = (bytes[at + 8]! | (bytes[at + 9]! << 8)) & 0x7fff;
  if (biased === 0x7fff) return true;
  let zero = true;
  for (let i = 0; i < 8; i++) if (bytes[at + i] !== 0) zero = false;
  if (zero) return true;
  if (biased === 0) return false; // an 80-bit subnormal: far below float64's smallest
  const e = biased - 16383; // the value is 1.f × 2^e when the integer bit is set
  if (e > 1023 || e < -1074) return false;
  // Bits of the 64-bit mantissa below float64's precision at this exponent must be zero.
  const dropped = 11 + Math.max(0, -1022 - e);
  for (let bit = 0; bit < dropped; bit++) if (bytes[at + (bit >> 3)]! & (1 << (bit & 7))) return false;
  return (bytes[at + 7]! & 0x80) !== 0; // an unnormal (integer bit clear) is not a value numpy makes
}

function scaleByPowerOfTwo(x: number, e: number): number {
  // Split the scaling so that no intermediate power of two under- or overflows.
  while (e > 1000) {
    x *= 2 ** 1000;
    e -= 1000;
  }
  while (e < -1000) {
    x *= 2 ** -1000;
    e += 1000;
  }
  return x * 2 ** e;
}

/**
 * number → x86 80-bit extended in 16 little-endian bytes (exact: every float64 is representable).
 * @example
 * const out = new Uint8Array(16);
 * numberToLongDouble(Math.PI, out, 0);
 */
export function numberToLongDouble(x: number, out: Uint8Array, at: number): void {
  out.fill(0, at, at + 16);
  f64[0] = x;
  const bits = f64Bits[0]!;
  const sign = Number(bits >> 63n);
  const exp = Number((bits >> 52n) & 0x7ffn);
  const frac = bits & 0xfffffffffffffn;
  let mant: bigint;
  let biased: number;
  if (exp === 0x7ff) {
    biased = 0x7fff;
    mant = frac === 0n ? 1n << 63n : (1n << 63n) | (1n << 62n) | (frac << 11n);
  } else if (exp === 0) {
    if (frac === 0n) {
      biased = 0;
      mant = 0n;
    } else {
      // float64 subnormal: normalise into the explicit-integer-bit format.
      const len = frac.toString(2).length; // position of the top bit + 1
      mant = frac << BigInt(64 - len);
      biased = -1074 + len - 1 + 16383;
    }
  } else {
    biased = exp - 1023 + 16383;
    mant = ((1n << 52n) | frac) << 11n;
  }
  for (let i = 0; i < 8; i++) {
    out[at + i] = Number(mant & 0xffn);
    mant >>= 8n;
  }
  const se = (sign << 15) | biased;
  out[at + 8] = se & 0xff;
  out[at + 9] = se >> 8;
}
