/**
 * The narrow float formats of machine learning, named as ml_dtypes names them: `bfloat16`, the
 * float8 family (`float8_e4m3fn`, `float8_e5m2`, their `fnuz` variants, `float8_e8m0fnu`, ...), and
 * the OCP MX `float6_*` and `float4_e2m1fn`, which ml_dtypes keeps one per byte in the low bits.
 * Elements are kept as their exact bits (Uint16Array, Uint8Array); this module is the one place that
 * knows their layouts and converts them to and from numbers.
 */
import { NpyError } from '../errors.js';

/**
 * Where a format keeps its special values:
 * - `ieee`: infinities at the top exponent with a zero mantissa, NaNs above them;
 * - `fn` (finite): no infinities, NaN where exponent and mantissa are all ones;
 * - `fnuz` (finite, unsigned zero): no infinities, one NaN where the negative zero would be;
 * - `finite`: every pattern is a finite number (no NaN, no infinity);
 * - `e8m0`: no sign, no zero, no subnormals: `2^(bits - 127)`, NaN at all ones.
 */
type Specials = 'ieee' | 'fn' | 'fnuz' | 'finite' | 'e8m0';

/** How one narrow float format lays out its bits. */
interface MlFloatFormat {
  /** Bytes per element. */
  readonly itemsize: 1 | 2;
  /** Bits of the value: the low bits of its byte for the 4- and 6-bit formats. */
  readonly bits: 4 | 6 | 8 | 16;
  readonly exponentBits: number;
  readonly mantissaBits: number;
  readonly bias: number;
  readonly specials: Specials;
  /** The bits of the NaN that conversions produce (ml_dtypes' choice); -1 where the format has none. */
  readonly nanBits: number;
  /** The bits of the largest finite value. */
  readonly maxBits: number;
}

/**
 * The narrow float formats npyts reads and writes, by ml_dtypes' name.
 * @example
 * ML_FLOATS.bfloat16.itemsize;   // 2
 */
export const ML_FLOATS = {
  bfloat16: { itemsize: 2, bits: 16, exponentBits: 8, mantissaBits: 7, bias: 127, specials: 'ieee', nanBits: 0x7fc0, maxBits: 0x7f7f },
  float8_e3m4: { itemsize: 1, bits: 8, exponentBits: 3, mantissaBits: 4, bias: 3, specials: 'ieee', nanBits: 0x78, maxBits: 0x6f },
  float8_e4m3: { itemsize: 1, bits: 8, exponentBits: 4, mantissaBits: 3, bias: 7, specials: 'ieee', nanBits: 0x7c, maxBits: 0x77 },
  float8_e4m3fn: { itemsize: 1, bits: 8, exponentBits: 4, mantissaBits: 3, bias: 7, specials: 'fn', nanBits: 0x7f, maxBits: 0x7e },
  float8_e4m3fnuz: { itemsize: 1, bits: 8, exponentBits: 4, mantissaBits: 3, bias: 8, specials: 'fnuz', nanBits: 0x80, maxBits: 0x7f },
  float8_e4m3b11fnuz: { itemsize: 1, bits: 8, exponentBits: 4, mantissaBits: 3, bias: 11, specials: 'fnuz', nanBits: 0x80, maxBits: 0x7f },
  float8_e5m2: { itemsize: 1, bits: 8, exponentBits: 5, mantissaBits: 2, bias: 15, specials: 'ieee', nanBits: 0x7e, maxBits: 0x7b },
  float8_e5m2fnuz: { itemsize: 1, bits: 8, exponentBits: 5, mantissaBits: 2, bias: 16, specials: 'fnuz', nanBits: 0x80, maxBits: 0x7f },
  float8_e8m0fnu: { itemsize: 1, bits: 8, exponentBits: 8, mantissaBits: 0, bias: 127, specials: 'e8m0', nanBits: 0xff, maxBits: 0xfe },
  float6_e2m3fn: { itemsize: 1, bits: 6, exponentBits: 2, mantissaBits: 3, bias: 1, specials: 'finite', nanBits: -1, maxBits: 0x1f },
  float6_e3m2fn: { itemsize: 1, bits: 6, exponentBits: 3, mantissaBits: 2, bias: 3, specials: 'finite', nanBits: -1, maxBits: 0x1f },
  float4_e2m1fn: { itemsize: 1, bits: 4, exponentBits: 2, mantissaBits: 1, bias: 1, specials: 'finite', nanBits: -1, maxBits: 0x7 },
} as const satisfies Record<string, MlFloatFormat>;

/** A narrow float format's name: `'bfloat16'`, `'float8_e4m3fn'`, `'float4_e2m1fn'`, ... (the keys of {@link ML_FLOATS}). */
export type MlFloatName = keyof typeof ML_FLOATS;

/**
 * True for the name of a narrow float format.
 * @example
 * isMlFloatName('bfloat16');   // true
 */
export function isMlFloatName(name: string): name is MlFloatName {
  return Object.hasOwn(ML_FLOATS, name);
}

const widen32 = new Float32Array(1);
const widenBits = new Uint32Array(widen32.buffer);

/** The 256 values of each 1-byte format, built once from its layout. */
const byteTables = new Map<MlFloatName, Float32Array>();

/** The value of one byte of a format of at most 8 bits, as ml_dtypes reads it. */
function byteValue(f: MlFloatFormat, byte: number): number {
  const v = byte & 0xff;
  const signBit = f.specials === 'e8m0' ? 0 : 1 << (f.bits - 1);
  const magnitude = f.specials === 'e8m0' ? v : v & (signBit - 1);
  // The 4- and 6-bit formats, as ml_dtypes reads a byte: any bit from the sign bit up makes it negative.
  const sign = v >= signBit && signBit ? -1 : 1;
  const exponent = magnitude >> f.mantissaBits;
  const mantissa = magnitude & ((1 << f.mantissaBits) - 1);
  const exponentMax = (1 << f.exponentBits) - 1;
  switch (f.specials) {
    case 'ieee':
      if (exponent === exponentMax) return mantissa ? NaN : sign * Infinity;
      break;
    case 'fn':
      if (magnitude === signBit - 1) return NaN;
      break;
    case 'fnuz':
      if (v === signBit) return NaN;
      break;
    case 'e8m0':
      return v === f.nanBits ? NaN : 2 ** (v - f.bias);
    case 'finite':
      break;
  }
  if (exponent === 0) return sign * mantissa * 2 ** (1 - f.bias - f.mantissaBits);
  return sign * (mantissa + 2 ** f.mantissaBits) * 2 ** (exponent - f.bias - f.mantissaBits);
}

function byteTable(name: MlFloatName): Float32Array {
  let table = byteTables.get(name);
  if (table) return table;
  const f: MlFloatFormat = ML_FLOATS[name];
  table = new Float32Array(256);
  for (let byte = 0; byte < 256; byte++) table[byte] = byteValue(f, byte);
  byteTables.set(name, table);
  return table;
}

/**
 * The exact value of one element's bits (every narrow float is exactly a float32).
 * @example
 * mlFloatToNumber('bfloat16', 0x3fc0);       // 1.5
 * mlFloatToNumber('float8_e4m3fn', 0x7e);    // 448
 */
export function mlFloatToNumber(name: MlFloatName, bits: number): number {
  if (name === 'bfloat16') {
    widenBits[0] = (bits & 0xffff) << 16;
    return widen32[0]!;
  }
  return byteTable(name)[bits & 0xff]!;
}

/**
 * A number's bits in a narrow float format, rounded to the nearest value, ties to even, from the
 * number itself (one rounding), as ml_dtypes converts: past the largest finite value, infinity
 * where the format has one, else NaN, else (the 4- and 6-bit formats) the largest value;
 * `float8_e8m0fnu` gives NaN for zero and negative numbers and its smallest value below it. A NaN
 * into a format without one (`float4_e2m1fn`, `float6_*`) is refused (`NOT_REPRESENTABLE`):
 * ml_dtypes writes a zero there.
 * @example
 * numberToMlFloat('bfloat16', 1.5);          // 0x3fc0
 * numberToMlFloat('float8_e4m3fn', 1000);    // 0x7f (NaN: the format has no infinity)
 */
export function numberToMlFloat(name: MlFloatName, x: number): number {
  const f: MlFloatFormat = ML_FLOATS[name];
  if (Number.isNaN(x)) {
    if (f.nanBits < 0) throw new NpyError('NOT_REPRESENTABLE', `${name} has no NaN (every one of its patterns is a number); ml_dtypes would write a zero`);
    return f.nanBits;
  }
  if (f.specials === 'e8m0' && !(x > 0)) return f.nanBits;
  const signBit = f.specials === 'e8m0' ? 0 : 2 ** (f.bits - 1);
  const sign = x < 0 || Object.is(x, -0) ? signBit : 0;
  const a = Math.abs(x);
  const overflow =
    f.specials === 'ieee'
      ? sign | (((1 << f.exponentBits) - 1) << f.mantissaBits)
      : f.specials === 'finite'
        ? sign | f.maxBits
        : f.specials === 'fn'
          ? sign | f.nanBits
          : f.nanBits;
  if (a === Infinity) return overflow;
  if (a === 0) return f.specials === 'fnuz' ? 0 : sign;
  let e = Math.floor(Math.log2(a));
  // log2 may be off by one near powers of two.
  if (2 ** e > a) e--;
  else if (2 ** (e + 1) <= a) e++;
  // float8_e8m0fnu rounds below 2^-126 as if its bits 0 were a zero (ml_dtypes' arithmetic): a value in
  // (2^-127, 2^-126) a hair above 2^-127 becomes 2^-126. Kept, to write the bits ml_dtypes writes.
  const minExponent = 1 - f.bias;
  // The spacing of representable values at this magnitude (subnormals share the smallest one).
  const quantumExponent = Math.max(e, minExponent) - f.mantissaBits;
  const q = a / 2 ** quantumExponent; // exact: a power-of-two scale
  let m = Math.floor(q);
  const rest = q - m;
  if (rest > 0.5 || (rest === 0.5 && (m & 1) === 1)) m++;
  // Normal: exponent field then the mantissa without its leading one; a carry out of the mantissa
  // moves into the exponent by the addition. Subnormal: the mantissa alone (it may carry to the first normal).
  const bits = e < minExponent ? m : ((e + f.bias) << f.mantissaBits) + m - (1 << f.mantissaBits);
  if (bits > f.maxBits) return overflow;
  // fnuz: a negative number that rounds to zero is zero (its negative zero is the NaN).
  return bits === 0 && f.specials === 'fnuz' ? 0 : sign | bits;
}

/**
 * Every element of narrow float bits widened to float32, exactly.
 * @example
 * mlFloatsToFloat32('bfloat16', new Uint16Array([0x3fc0]));   // Float32Array [1.5]
 */
export function mlFloatsToFloat32(name: MlFloatName, bits: Uint16Array | Uint8Array): Float32Array {
  const out = new Float32Array(bits.length);
  if (name === 'bfloat16') {
    const wide = new Uint32Array(out.buffer);
    for (let i = 0; i < bits.length; i++) wide[i] = bits[i]! << 16;
    return out;
  }
  const table = byteTable(name);
  for (let i = 0; i < bits.length; i++) out[i] = table[bits[i]!]!;
  return out;
}
