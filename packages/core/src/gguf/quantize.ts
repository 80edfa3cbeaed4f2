/**
 * Quantizing float32 to ggml's block types as gguf-py's `gguf.quants.quantize` does, byte for byte:
 * its arithmetic is float32 throughout, one rounding per numpy operation, in numpy's order. Here
 * each operation is computed in float64 and rounded to float32 (`Math.fround`): for one +, −, ×, ÷
 * of two float32 values that gives the float32 result exactly (as quants.ts explains).
 *
 * Where gguf-py's result is not defined, the block is refused (NOT_REPRESENTABLE) rather than
 * written: a NaN or an infinity in a block, a block so small (every magnitude around 1e-37 or
 * below, by type) that its scale's reciprocal overflows float32, or one whose range (max − min)
 * overflows float32. numpy then casts a NaN or an infinity to an
 * integer, which C leaves undefined (x86 and ARM write different bytes).
 */
import { NpyError } from '../errors.js';
import { numberToFloat16 } from '../format/float-bits.js';

/** Writes the blocks of `src` (a whole number of them) into `out`; `where` names the tensor in errors. */
export type Quantize = (src: Float32Array, out: Uint8Array, where: string) => void;

const fr = Math.fround;
const F32_MAX = 3.4028234663852886e38;

const nonFinite = (where: string, i: number, value: number): NpyError =>
  new NpyError(
    'NOT_REPRESENTABLE',
    `${where}: element ${i} is ${value}, which a quantized block cannot hold (gguf-py's result is undefined there); write the tensor as f32 or f16, or replace the value`,
  );

/** The reciprocal of a block's scale, as gguf-py computes it (`np.where(d == 0, 0, 1 / d)`), refused where it overflows. */
function inverse(d: number, where: string, block: number): number {
  if (d === 0) return 0;
  const id = fr(1 / d);
  if (id === Infinity || id === -Infinity || !Number.isFinite(d)) {
    throw new NpyError(
      'NOT_REPRESENTABLE',
      `${where}: block ${block} has the scale ${d}, which float32 cannot invert (its values are too small, or their range overflows): gguf-py's result is undefined there; write the tensor as f32 or f16`,
    );
  }
  return id;
}

/** A float16 scale, little-endian, at `out[o]`. */
function putF16(out: Uint8Array, o: number, x: number): void {
  const h = numberToFloat16(x);
  out[o] = h & 0xff;
  out[o + 1] = h >>> 8;
}

/**
 * The largest magnitude of `src[i, i + n)`, refusing a NaN or an infinity. Compared as bits: a
 * float32's magnitude bits (sign cleared) order as its magnitude does, and every NaN and infinity
 * lies above the largest finite value, so one integer max per value (no branch) finds them all.
 */
function absMax(src: Float32Array, bits: Int32Array, i: number, n: number, where: string): number {
  let m = 0;
  for (let j = i, end = i + n; j < end; j++) {
    const a = bits[j]! & 0x7fffffff;
    m = Math.max(a, m);
  }
  if (m >= 0x7f800000) for (let j = i; j < i + n; j++) if (!(Math.abs(src[j]!) <= F32_MAX)) throw nonFinite(where, j, src[j]!);
  scratchBits[0] = m;
  return scratch[0]!;
}
const scratch = new Float32Array(1);
const scratchBits = new Int32Array(scratch.buffer);

/** The float32 values' bits, for {@link absMax}. */
const bitsOf = (src: Float32Array): Int32Array => new Int32Array(src.buffer, src.byteOffset, src.length);

/** The signed value of largest magnitude (the first of them: numpy's argmax), refusing a NaN or an infinity. */
function signedMax(src: Float32Array, i: number, n: number, where: string): number {
  let amax = -1;
  let max = 0;
  for (let j = i; j < i + n; j++) {
    const x = src[j]!;
    const a = Math.abs(x);
    if (!(a <= F32_MAX)) throw nonFinite(where, j, x);
    if (a > amax) {
      amax = a;
      max = x;
    }
  }
  return max;
}

/**
 * gguf-py's `np_roundf`: to nearest, halves away from zero (`sign(v) * (floor|v| + floor(2·frac))`),
 * for a float32 |v| < 128 (quants of at most 8 bits). `(v + 128.5) | 0` is floor(v + 0.5) (its
 * argument is positive, and exact in float64), which rounds halves up; a negative half (q − v = ½
 * exactly) goes one further down. No branch on the sign, which is as often + as −.
 */
const roundf = (v: number): number => {
  const q = ((v + 128.5) | 0) - 128;
  return q - v === 0.5 && v < 0 ? q - 1 : q;
};

/** Q8_0: `d = max|x| / 127` as float16, then 32 int8 `roundf(x / d)`. */
const q8_0: Quantize = (src, out, where) => {
  const blocks = src.length / 32;
  const bits = bitsOf(src);
  for (let b = 0, i = 0, o = 0; b < blocks; b++, i += 32, o += 34) {
    const d = fr(absMax(src, bits, i, 32, where) / 127);
    const id = inverse(d, where, b);
    putF16(out, o, d);
    // A Uint8Array store wraps a negative integer to its int8 byte.
    for (let j = 0, k = o + 2; j < 32; j++) out[k + j] = roundf(fr(src[i + j]! * id));
  }
};

/** Q4_0 and Q5_0: `d = max / -half` (the signed value of largest magnitude), `q = trunc(x / d + half + 0.5)` clipped. */
function symmetric(bits: 4 | 5): Quantize {
  const half = bits === 4 ? 8 : 16;
  const top = 2 * half - 1;
  const size = bits === 4 ? 18 : 22;
  return (src, out, where) => {
    const blocks = src.length / 32;
    const q = new Uint8Array(32);
    for (let b = 0, i = 0, o = 0; b < blocks; b++, i += 32, o += size) {
      const d = fr(signedMax(src, i, 32, where) / -half);
      const id = inverse(d, where, b);
      for (let j = 0; j < 32; j++) q[j] = Math.min(top, Math.trunc(fr(fr(src[i + j]! * id) + (half + 0.5))));
      putF16(out, o, d);
      packNibbles(q, out, bits === 4 ? o + 2 : o + 6, bits === 5 ? o + 2 : -1);
    }
  };
}

/** Q4_1 and Q5_1: `d = (max - min) / top`, `m = min`, `q = trunc((x - min) / d + 0.5)` clipped. */
function affine(bits: 4 | 5): Quantize {
  const top = bits === 4 ? 15 : 31;
  const size = bits === 4 ? 20 : 24;
  return (src, out, where) => {
    const blocks = src.length / 32;
    const q = new Uint8Array(32);
    for (let b = 0, i = 0, o = 0; b < blocks; b++, i += 32, o += size) {
      let max = -Infinity;
      let min = Infinity;
      for (let j = i; j < i + 32; j++) {
        const x = src[j]!;
        if (!(Math.abs(x) <= F32_MAX)) throw nonFinite(where, j, x);
        if (x > max) max = x;
        if (x < min) min = x;
      }
      const d = fr(fr(max - min) / top);
      const id = inverse(d, where, b);
      for (let j = 0; j < 32; j++) q[j] = Math.min(top, Math.trunc(fr(fr(fr(src[i + j]! - min) * id) + 0.5)));
      putF16(out, o, d);
      putF16(out, o + 2, min);
      packNibbles(q, out, bits === 4 ? o + 4 : o + 8, bits === 5 ? o + 4 : -1);
    }
  };
}

/**
 * 32 quants as ggml packs them: byte j holds quant j's low nibble and quant j + 16's above it; for
 * 5 bits, the four bytes at `qh` hold each quant's fifth bit, quant k at bit k (numpy's packbits, little).
 */
function packNibbles(q: Uint8Array, out: Uint8Array, qs: number, qh: number): void {
  for (let j = 0; j < 16; j++) out[qs + j] = (q[j]! & 0x0f) | ((q[j + 16]! << 4) & 0xff);
  if (qh < 0) return;
  for (let k = 0; k < 4; k++) {
    let byte = 0;
    for (let bit = 0; bit < 8; bit++) byte |= ((q[8 * k + bit]! >> 4) & 1) << bit;
    out[qh + k] = byte;
  }
}

/** The ternary quants of TQ1_0 and TQ2_0: `d = max|x|`, `q = roundf(x / d) + 1` (0, 1 or 2) into `q`; returns d. */
function ternary(src: Float32Array, bits: Int32Array, i: number, q: Uint8Array, where: string, block: number): number {
  const d = absMax(src, bits, i, 256, where);
  const id = inverse(d, where, block);
  for (let j = 0; j < 256; j++) q[j] = roundf(fr(src[i + j]! * id)) + 1;
  return d;
}

/** TQ2_0: 64 bytes of four 2-bit quants (quant 32k + j of each 128 at bits 2k of byte j), then d. */
const tq2_0: Quantize = (src, out, where) => {
  const blocks = src.length / 256;
  const q = new Uint8Array(256);
  const bits = bitsOf(src);
  for (let b = 0, i = 0, o = 0; b < blocks; b++, i += 256, o += 66) {
    const d = ternary(src, bits, i, q, where, b);
    for (let g = 0; g < 2; g++) {
      for (let j = 0; j < 32; j++) {
        const at = 128 * g + j;
        out[o + 32 * g + j] = q[at]! | (q[at + 32]! << 2) | (q[at + 64]! << 4) | (q[at + 96]! << 6);
      }
    }
    putF16(out, o + 64, d);
  }
};

/**
 * TQ1_0: five ternary quants per byte in base 3 (the first 240 quants), four per byte (the last 16),
 * each sum scaled to a byte as `(sum · 256 + 242) // 243`; then d.
 */
const tq1_0: Quantize = (src, out, where) => {
  const blocks = src.length / 256;
  const q = new Uint8Array(256);
  const byte = (sum: number): number => Math.floor((sum * 256 + 242) / 243);
  const bits = bitsOf(src);
  for (let b = 0, i = 0, o = 0; b < blocks; b++, i += 256, o += 54) {
    const d = ternary(src, bits, i, q, where, b);
    for (let j = 0; j < 32; j++) out[o + j] = byte(q[j]! * 81 + q[32 + j]! * 27 + q[64 + j]! * 9 + q[96 + j]! * 3 + q[128 + j]!);
    for (let j = 0; j < 16; j++) out[o + 32 + j] = byte(q[160 + j]! * 81 + q[176 + j]! * 27 + q[192 + j]! * 9 + q[208 + j]! * 3 + q[224 + j]!);
    for (let j = 0; j < 4; j++) out[o + 48 + j] = byte(q[240 + j]! * 81 + q[244 + j]! * 27 + q[248 + j]! * 9 + q[252 + j]! * 3);
    putF16(out, o + 52, d);
  }
};

/** The block types gguf-py quantizes (its `quantize_blocks`), by ggml name. */
export const QUANTIZE: ReadonlyMap<string, Quantize> = new Map([
  ['Q8_0', q8_0],
  ['Q4_0', symmetric(4)],
  ['Q5_0', symmetric(5)],
  ['Q4_1', affine(4)],
  ['Q5_1', affine(5)],
  ['TQ1_0', tq1_0],
  ['TQ2_0', tq2_0],
]);

/**
 * float32 bits to bfloat16 bits as gguf-py's BF16 does (ggml's `ggml_compute_fp32_to_bf16`): a NaN
 * made quiet keeping its sign and top bits, every other value rounded to nearest, ties to even.
 */
export function float32ToBf16(src: Float32Array, out: Uint16Array): void {
  const bits = new Uint32Array(src.buffer, src.byteOffset, src.length);
  for (let i = 0; i < bits.length; i++) {
    const n = bits[i]!;
    out[i] = (n & 0x7fffffff) > 0x7f800000 ? ((n >>> 16) & 0xffff) | 64 : (n + 0x7fff + ((n >>> 16) & 1)) / 65536;
  }
}
