/**
 * The narrow float formats of machine learning, named as ml_dtypes names them: `bfloat16`,
 * `float8_e4m3fn` and `float8_e5m2`. Elements are kept as their exact bits (Uint16Array, Uint8Array);
 * this module is the one place that knows their layouts and converts them to and from numbers.
 */

/** How one narrow float format lays out its bits. */
interface MlFloatFormat {
  /** Bytes per element. */
  readonly itemsize: 1 | 2;
  readonly exponentBits: number;
  readonly mantissaBits: number;
  readonly bias: number;
  /** Whether the format has infinities (`float8_e4m3fn` has none: `fn` = finite, NaN only at all-ones). */
  readonly infinities: boolean;
  /** The bits of a positive NaN that conversions produce (ml_dtypes' choice). */
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
  bfloat16: { itemsize: 2, exponentBits: 8, mantissaBits: 7, bias: 127, infinities: true, nanBits: 0x7fc0, maxBits: 0x7f7f },
  float8_e4m3fn: { itemsize: 1, exponentBits: 4, mantissaBits: 3, bias: 7, infinities: false, nanBits: 0x7f, maxBits: 0x7e },
  float8_e5m2: { itemsize: 1, exponentBits: 5, mantissaBits: 2, bias: 15, infinities: true, nanBits: 0x7e, maxBits: 0x7b },
} as const satisfies Record<string, MlFloatFormat>;

/** A narrow float format's name: `'bfloat16'`, `'float8_e4m3fn'` or `'float8_e5m2'`. */
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

/** The 256 values of each 8-bit format, built once from its layout. */
const byteTables = new Map<MlFloatName, Float32Array>();

function byteTable(name: MlFloatName): Float32Array {
  let table = byteTables.get(name);
  if (table) return table;
  const f: MlFloatFormat = ML_FLOATS[name];
  table = new Float32Array(256);
  const mantissaMask = (1 << f.mantissaBits) - 1;
  const exponentMax = (1 << f.exponentBits) - 1;
  for (let bits = 0; bits < 256; bits++) {
    const sign = bits & 0x80 ? -1 : 1;
    const exponent = (bits >> f.mantissaBits) & exponentMax;
    const mantissa = bits & mantissaMask;
    let value: number;
    if ((bits & 0x7f) === (f.infinities ? -1 : 0x7f)) value = NaN;
    else if (f.infinities && exponent === exponentMax) value = mantissa ? NaN : Infinity;
    else if (exponent === 0) value = mantissa * 2 ** (1 - f.bias - f.mantissaBits);
    else value = (mantissa + 2 ** f.mantissaBits) * 2 ** (exponent - f.bias - f.mantissaBits);
    table[bits] = sign * value;
  }
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
 * number itself (one rounding). Past the largest finite value: infinity, or NaN where the format
 * has no infinity (`float8_e4m3fn`), as ml_dtypes converts.
 * @example
 * numberToMlFloat('bfloat16', 1.5);          // 0x3fc0
 * numberToMlFloat('float8_e4m3fn', 1000);    // 0x7f (NaN: the format has no infinity)
 */
export function numberToMlFloat(name: MlFloatName, x: number): number {
  const f: MlFloatFormat = ML_FLOATS[name];
  const signBit = f.itemsize === 2 ? 0x8000 : 0x80;
  const sign = x < 0 || Object.is(x, -0) ? signBit : 0;
  if (Number.isNaN(x)) return f.nanBits;
  const a = Math.abs(x);
  const overflow = sign | (f.infinities ? ((1 << f.exponentBits) - 1) << f.mantissaBits : f.nanBits);
  if (a === Infinity) return overflow;
  if (a === 0) return sign;
  let e = Math.floor(Math.log2(a));
  // log2 may be off by one near powers of two.
  if (2 ** e > a) e--;
  else if (2 ** (e + 1) <= a) e++;
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
  return bits > f.maxBits ? overflow : sign | bits;
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
