/**
 * float32 values rounded to float16 or bfloat16 bits, to nearest with ties to even: the bulk form of
 * `numberToFloat16` and `numberToMlFloat('bfloat16', …)`, which give every value these do not handle
 * by bit arithmetic (float16's subnormals, overflow, NaN; bfloat16's NaN).
 */
import { numberToFloat16 } from '../format/float-bits.js';
import { numberToMlFloat } from '../format/ml-floats.js';

/**
 * Each float32 of `values` as float16 bits in `out`.
 * @example
 * float32sToFloat16(new Float32Array([1.5]), out);   // out[0] === 0x3e00
 */
export function float32sToFloat16(values: Float32Array, out: Uint16Array): void {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  for (let i = 0; i < bits.length; i++) {
    const x = bits[i]!;
    const a = x & 0x7fffffff;
    // Normal halves (2^-14 ≤ |v| < 65520): rebias the exponent and round the 13 dropped bits to even.
    if (a >= 0x38800000 && a < 0x477ff000) out[i] = ((x >>> 16) & 0x8000) | ((a + 0xfff + ((a >>> 13) & 1) - 0x38000000) >>> 13);
    else out[i] = numberToFloat16(values[i]!);
  }
}

/**
 * Each float32 of `values` as bfloat16 bits in `out`.
 * @example
 * float32sToBfloat16(new Float32Array([1.5]), out);   // out[0] === 0x3fc0
 */
export function float32sToBfloat16(values: Float32Array, out: Uint16Array): void {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  for (let i = 0; i < bits.length; i++) {
    const x = bits[i]!;
    // A carry out of the mantissa moves into the exponent (the largest finite values round to infinity).
    if ((x & 0x7fffffff) <= 0x7f800000) out[i] = (x + 0x7fff + ((x >>> 16) & 1)) >>> 16;
    else out[i] = numberToMlFloat('bfloat16', values[i]!);
  }
}
