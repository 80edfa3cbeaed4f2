/**
 * Dequantizing ggml's block types to float32, as gguf-py's `gguf.quants.dequantize` does, bit for
 * bit: its arithmetic is float32 throughout (float16 scales widened to float32 first), one rounding
 * per numpy operation, in numpy's order. Here each operation is computed in float64 and rounded to
 * float32 (`Math.fround`, or the store into a Float32Array): for one +, −, × of two float32 values
 * that double rounding gives the float32 result exactly (float64 has more than 2·24 + 2 bits), so
 * where numpy computes `d * q - m` in two steps, so does this, with a rounding between.
 *
 * The lattice types (IQ*) are in iq.ts. Each dequantizer reads `blocks` whole blocks of `src` into
 * `out` (blocks × the type's block size values).
 */

/** Reads `blocks` blocks of `src` into `out`. */
export type Dequantize = (src: Uint8Array, out: Float32Array, blocks: number) => void;

let f16: Float32Array | null = null;

/** float16 bits to float32, by table (65 536 entries, made on first use). */
export function f16Table(): Float32Array {
  if (f16) return f16;
  const t = new Float32Array(65536);
  const bits = new Uint32Array(t.buffer);
  for (let h = 0; h < 65536; h++) {
    const sign = (h & 0x8000) << 16;
    const exp = (h >> 10) & 0x1f;
    const man = h & 0x3ff;
    if (exp === 0x1f) bits[h] = sign | 0x7f800000 | (man << 13);
    else if (exp !== 0) bits[h] = sign | ((exp + 112) << 23) | (man << 13);
    else t[h] = (sign ? -1 : 1) * man * 2 ** -24;
  }
  f16 = t;
  return t;
}

const fr = Math.fround;

/** Q8_0: a float16 scale, then 32 int8 (read 4 at a time, as Q4_K's nibbles are). */
const q8_0: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  const v = new DataView(s.buffer, s.byteOffset, s.length);
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 34, y += 32) {
    const d = H[s[o]! | (s[o + 1]! << 8)]!;
    for (let i = 0; i < 32; i += 4) {
      const x = v.getInt32(o + 2 + i, true);
      out[y + i] = ((x << 24) >> 24) * d;
      out[y + i + 1] = ((x << 16) >> 24) * d;
      out[y + i + 2] = ((x << 8) >> 24) * d;
      out[y + i + 3] = (x >> 24) * d;
    }
  }
};

/** Q4_0: a float16 scale, then 32 nibbles (low nibbles the first 16 values, high the next), less 8. */
const q4_0: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  const v = new DataView(s.buffer, s.byteOffset, s.length);
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 18, y += 32) {
    const d = H[s[o]! | (s[o + 1]! << 8)]!;
    for (let i = 0; i < 16; i += 4) {
      const x = v.getInt32(o + 2 + i, true);
      out[y + i] = d * ((x & 15) - 8);
      out[y + i + 1] = d * (((x >> 8) & 15) - 8);
      out[y + i + 2] = d * (((x >> 16) & 15) - 8);
      out[y + i + 3] = d * (((x >> 24) & 15) - 8);
      out[y + i + 16] = d * (((x >> 4) & 15) - 8);
      out[y + i + 17] = d * (((x >> 12) & 15) - 8);
      out[y + i + 18] = d * (((x >> 20) & 15) - 8);
      out[y + i + 19] = d * (((x >> 28) & 15) - 8);
    }
  }
};

/** Q4_1: float16 scale and minimum, then 32 nibbles: `d * q + m`. */
const q4_1: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 20, y += 32) {
    const d = H[s[o]! | (s[o + 1]! << 8)]!;
    const m = H[s[o + 2]! | (s[o + 3]! << 8)]!;
    for (let i = 0; i < 16; i++) {
      const q = s[o + 4 + i]!;
      out[y + i] = fr(d * (q & 15)) + m;
      out[y + 16 + i] = fr(d * (q >> 4)) + m;
    }
  }
};

/** Q5_0: a float16 scale, 32 high bits (one uint32), 32 nibbles: 5-bit values less 16. */
const q5_0: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 22, y += 32) {
    const d = H[s[o]! | (s[o + 1]! << 8)]!;
    const qh = s[o + 2]! | (s[o + 3]! << 8) | (s[o + 4]! << 16) | (s[o + 5]! << 24);
    for (let i = 0; i < 16; i++) {
      const q = s[o + 6 + i]!;
      out[y + i] = d * ((q & 15) + (((qh >>> i) & 1) << 4) - 16);
      out[y + 16 + i] = d * ((q >> 4) + (((qh >>> (i + 16)) & 1) << 4) - 16);
    }
  }
};

/** Q5_1: float16 scale and minimum, 32 high bits, 32 nibbles: `d * q + m`. */
const q5_1: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 24, y += 32) {
    const d = H[s[o]! | (s[o + 1]! << 8)]!;
    const m = H[s[o + 2]! | (s[o + 3]! << 8)]!;
    const qh = s[o + 4]! | (s[o + 5]! << 8) | (s[o + 6]! << 16) | (s[o + 7]! << 24);
    for (let i = 0; i < 16; i++) {
      const q = s[o + 8 + i]!;
      out[y + i] = fr(d * ((q & 15) | (((qh >>> i) & 1) << 4))) + m;
      out[y + 16 + i] = fr(d * ((q >> 4) | (((qh >>> (i + 16)) & 1) << 4))) + m;
    }
  }
};

/** Q2_K: 16 scale bytes (low nibble scale, high nibble min), 64 bytes of 2-bit values, float16 d and dmin. */
const q2_K: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 84, y += 256) {
    const d = H[s[o + 80]! | (s[o + 81]! << 8)]!;
    const dmin = H[s[o + 82]! | (s[o + 83]! << 8)]!;
    // Value h*128 + k*32 + m is bits 2k of byte h*32 + m; its group of 16 is the value's index / 16.
    for (let h = 0; h < 2; h++) {
      for (let k = 0; k < 4; k++) {
        const base = h * 128 + k * 32;
        for (let half = 0; half < 2; half++) {
          const g = (base >> 4) + half;
          const sc = s[o + g]!;
          const dl = fr(d * (sc & 15));
          const ml = fr(dmin * (sc >> 4));
          for (let m = half * 16; m < half * 16 + 16; m++) {
            out[y + base + m] = fr(dl * ((s[o + 16 + h * 32 + m]! >> (2 * k)) & 3)) - ml;
          }
        }
      }
    }
  }
};

/** Q3_K: 32 bytes of high bits (set: no offset), 64 bytes of 2-bit values, 12 bytes of 6-bit scales, float16 d. */
const q3_K: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  const scales = new Float32Array(16);
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 110, y += 256) {
    const d = H[s[o + 108]! | (s[o + 109]! << 8)]!;
    for (let i = 0; i < 16; i++) {
      const low = i < 8 ? s[o + 96 + i]! & 15 : s[o + 96 + i - 8]! >> 4;
      const high = (s[o + 104 + (i & 3)]! >> (2 * (i >> 2))) & 3;
      scales[i] = d * ((low | (high << 4)) - 32);
    }
    for (let h = 0; h < 2; h++) {
      for (let k = 0; k < 4; k++) {
        const base = h * 128 + k * 32;
        const bit = h * 4 + k;
        for (let m = 0; m < 32; m++) {
          const idx = base + m;
          const ql = (s[o + 32 + h * 32 + m]! >> (2 * k)) & 3;
          const qh = ((s[o + m]! >> bit) & 1) ^ 1;
          out[y + idx] = scales[idx >> 4]! * (ql - (qh << 2));
        }
      }
    }
  }
};

/** The 6-bit scales and mins of Q4_K and Q5_K (12 bytes at `o`), into `sc` and `mn`. */
function scaleMin(s: Uint8Array, o: number, sc: Uint8Array, mn: Uint8Array): void {
  for (let j = 0; j < 4; j++) {
    const d = s[o + j]!;
    const m = s[o + 4 + j]!;
    const md = s[o + 8 + j]!;
    sc[j] = d & 0x3f;
    mn[j] = m & 0x3f;
    sc[j + 4] = (md & 0x0f) | ((d >> 2) & 0x30);
    mn[j + 4] = (md >> 4) | ((m >> 2) & 0x30);
  }
}

/**
 * Q4_K: float16 d and dmin, 12 bytes of scales, 128 bytes of nibbles in 4 chunks of 64 values.
 * The hot loop of a Q4_K model, so written for V8: the nibbles are read 4 bytes at a time (a
 * DataView, any alignment), 8 values per turn with one bounds check of the word, and the scales
 * unpacked inline. 1.6 × the speed of a byte at a time (a 240 MB tensor: 58 → 36 ms here); a table
 * of the 16 float32 results per sub-block, copied as int32, was no faster (60 ms): a table load
 * costs V8 a bounds check as a store does.
 */
const q4_K: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  const v = new DataView(s.buffer, s.byteOffset, s.length);
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 144, y += 256) {
    const d = H[s[o]! | (s[o + 1]! << 8)]!;
    const dmin = H[s[o + 2]! | (s[o + 3]! << 8)]!;
    for (let c = 0; c < 4; c++) {
      // The 6-bit scales and mins of sub-blocks 2c and 2c + 1 (scaleMin's, unpacked here).
      let s1: number, m1: number, s2: number, m2: number;
      if (c < 2) {
        s1 = s[o + 4 + 2 * c]! & 63;
        m1 = s[o + 8 + 2 * c]! & 63;
        s2 = s[o + 5 + 2 * c]! & 63;
        m2 = s[o + 9 + 2 * c]! & 63;
      } else {
        const j = o + 2 * c - 4;
        s1 = (s[j + 12]! & 15) | ((s[j + 4]! >> 2) & 0x30);
        m1 = (s[j + 12]! >> 4) | ((s[j + 8]! >> 2) & 0x30);
        s2 = (s[j + 13]! & 15) | ((s[j + 5]! >> 2) & 0x30);
        m2 = (s[j + 13]! >> 4) | ((s[j + 9]! >> 2) & 0x30);
      }
      // d * s and dmin * m: an 11-bit float16 by a 6-bit integer, exact in float32; so is d1 * q below.
      const d1 = d * s1;
      const n1 = dmin * m1;
      const d2 = d * s2;
      const n2 = dmin * m2;
      const q0 = o + 16 + c * 32;
      // Byte m of the 32 holds value m (low nibble) and value 32 + m (high nibble) of the 64.
      for (let m = 0, at = y + c * 64; m < 32; m += 4, at += 4) {
        const x = v.getUint32(q0 + m, true);
        out[at] = d1 * (x & 15) - n1;
        out[at + 1] = d1 * ((x >> 8) & 15) - n1;
        out[at + 2] = d1 * ((x >> 16) & 15) - n1;
        out[at + 3] = d1 * ((x >> 24) & 15) - n1;
        out[at + 32] = d2 * ((x >> 4) & 15) - n2;
        out[at + 33] = d2 * ((x >> 12) & 15) - n2;
        out[at + 34] = d2 * ((x >> 20) & 15) - n2;
        out[at + 35] = d2 * (x >>> 28) - n2;
      }
    }
  }
};

/** Q5_K: Q4_K's layout with 32 bytes of high bits before the nibbles (read 4 bytes at a time, as Q4_K is). */
const q5_K: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  const v = new DataView(s.buffer, s.byteOffset, s.length);
  const sc = new Uint8Array(8);
  const mn = new Uint8Array(8);
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 176, y += 256) {
    const d = H[s[o]! | (s[o + 1]! << 8)]!;
    const dmin = H[s[o + 2]! | (s[o + 3]! << 8)]!;
    scaleMin(s, o + 4, sc, mn);
    for (let c = 0; c < 4; c++) {
      const d1 = d * sc[2 * c]!;
      const n1 = dmin * mn[2 * c]!;
      const d2 = d * sc[2 * c + 1]!;
      const n2 = dmin * mn[2 * c + 1]!;
      const q0 = o + 48 + c * 32;
      for (let m = 0, at = y + c * 64; m < 32; m += 4, at += 4) {
        const x = v.getUint32(q0 + m, true);
        // Bits 2c (value m) and 2c + 1 (value 32 + m) of each high byte, at bits 0 and 1 of its byte of u.
        const u = v.getUint32(o + 16 + m, true) >>> (2 * c);
        out[at] = d1 * ((x & 15) | ((u << 4) & 16)) - n1;
        out[at + 1] = d1 * (((x >> 8) & 15) | ((u >> 4) & 16)) - n1;
        out[at + 2] = d1 * (((x >> 16) & 15) | ((u >> 12) & 16)) - n1;
        out[at + 3] = d1 * (((x >> 24) & 15) | ((u >> 20) & 16)) - n1;
        out[at + 32] = d2 * (((x >> 4) & 15) | ((u << 3) & 16)) - n2;
        out[at + 33] = d2 * (((x >> 12) & 15) | ((u >> 5) & 16)) - n2;
        out[at + 34] = d2 * (((x >> 20) & 15) | ((u >> 13) & 16)) - n2;
        out[at + 35] = d2 * (((x >> 28) & 15) | ((u >> 21) & 16)) - n2;
      }
    }
  }
};

/**
 * Q6_K: 128 bytes of low nibbles, 64 of 2-bit highs, 16 int8 scales, float16 d: `(d * scale) * (q - 32)`.
 * Value h*128 + k*32 + m (h < 2, k < 4, m < 32): nibble (k >> 1) of low byte h*64 + (k & 1)*32 + m,
 * bits 2k of high byte h*32 + m, scale h*8 + 2k + (m >> 4). Read as Q4_K is, 4 bytes at a time:
 * each turn makes 4 values of each k from a word of each low half and one of highs (3 × the speed
 * of a value at a time here: 158 → 51 ms of CPU for 60 M values).
 */
const q6_K: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  const v = new DataView(s.buffer, s.byteOffset, s.length);
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 210, y += 256) {
    const d = H[s[o + 208]! | (s[o + 209]! << 8)]!;
    for (let h = 0; h < 2; h++) {
      for (let half = 0; half < 2; half++) {
        // d * scale: an 11-bit float16 by an 8-bit integer, exact in float32 (numpy's first product).
        const sc = o + 192 + h * 8 + half;
        const d0 = d * ((s[sc]! << 24) >> 24);
        const d1 = d * ((s[sc + 2]! << 24) >> 24);
        const d2 = d * ((s[sc + 4]! << 24) >> 24);
        const d3 = d * ((s[sc + 6]! << 24) >> 24);
        for (let m = half * 16, at = y + h * 128 + m; m < half * 16 + 16; m += 4, at += 4) {
          const lo = v.getUint32(o + h * 64 + m, true);
          const hi = v.getUint32(o + h * 64 + 32 + m, true);
          const qh = v.getUint32(o + 128 + h * 32 + m, true);
          // Value k of byte i: its nibble, and bits 2k, 2k + 1 of high byte i moved to bits 4, 5.
          out[at] = d0 * (((lo & 15) | ((qh << 4) & 48)) - 32);
          out[at + 1] = d0 * ((((lo >> 8) & 15) | ((qh >> 4) & 48)) - 32);
          out[at + 2] = d0 * ((((lo >> 16) & 15) | ((qh >> 12) & 48)) - 32);
          out[at + 3] = d0 * ((((lo >> 24) & 15) | ((qh >> 20) & 48)) - 32);
          out[at + 32] = d1 * (((hi & 15) | ((qh << 2) & 48)) - 32);
          out[at + 33] = d1 * ((((hi >> 8) & 15) | ((qh >> 6) & 48)) - 32);
          out[at + 34] = d1 * ((((hi >> 16) & 15) | ((qh >> 14) & 48)) - 32);
          out[at + 35] = d1 * ((((hi >> 24) & 15) | ((qh >> 22) & 48)) - 32);
          out[at + 64] = d2 * ((((lo >> 4) & 15) | (qh & 48)) - 32);
          out[at + 65] = d2 * ((((lo >> 12) & 15) | ((qh >> 8) & 48)) - 32);
          out[at + 66] = d2 * ((((lo >> 20) & 15) | ((qh >> 16) & 48)) - 32);
          out[at + 67] = d2 * ((((lo >> 28) & 15) | ((qh >> 24) & 48)) - 32);
          out[at + 96] = d3 * ((((hi >> 4) & 15) | ((qh >> 2) & 48)) - 32);
          out[at + 97] = d3 * ((((hi >> 12) & 15) | ((qh >> 10) & 48)) - 32);
          out[at + 98] = d3 * ((((hi >> 20) & 15) | ((qh >> 18) & 48)) - 32);
          out[at + 99] = d3 * ((((hi >> 28) & 15) | ((qh >> 26) & 48)) - 32);
        }
      }
    }
  }
};

/** TQ1_0: 48 bytes of five base-3 digits each, 4 bytes of four each, float16 d: values −1, 0, 1. */
const tq1_0: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  const pow3 = [1, 3, 9, 27, 81];
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 54, y += 256) {
    const d = H[s[o + 52]! | (s[o + 53]! << 8)]!;
    let at = y;
    // (byte × 3^j mod 256) × 3 >> 8 is digit j; bytes 0–31, then 32–47, then the 4 high bytes.
    for (const [from, count, digits] of [
      [0, 32, 5],
      [32, 16, 5],
      [48, 4, 4],
    ] as const) {
      for (let j = 0; j < digits; j++) {
        for (let m = 0; m < count; m++) {
          const q = (s[o + from + m]! * pow3[j]!) & 255;
          out[at++] = d * (((q * 3) >> 8) - 1);
        }
      }
    }
  }
};

/** TQ2_0: 64 bytes of 2-bit values (less 1), float16 d. */
const tq2_0: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 66, y += 256) {
    const d = H[s[o + 64]! | (s[o + 65]! << 8)]!;
    for (let h = 0; h < 2; h++) {
      for (let k = 0; k < 4; k++) {
        for (let m = 0; m < 32; m++) out[y + h * 128 + k * 32 + m] = d * (((s[o + h * 32 + m]! >> (2 * k)) & 3) - 1);
      }
    }
  }
};

/** e2m1 values, doubled (MXFP4 and NVFP4 halve their scales instead). */
const FP4 = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/** MXFP4: an e8m0 exponent (as ggml's half of it), then 32 e2m1 nibbles. */
const mxfp4: Dequantize = (s, out, blocks) => {
  const bits = new Uint32Array(1);
  const f = new Float32Array(bits.buffer);
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 17, y += 32) {
    const e = s[o]!;
    bits[0] = e < 2 ? 0x00200000 << e : (e - 1) << 23;
    const d = f[0]!;
    for (let i = 0; i < 16; i++) {
      const q = s[o + 1 + i]!;
      out[y + i] = d * FP4[q & 15]!;
      out[y + 16 + i] = d * FP4[q >> 4]!;
    }
  }
};

/** NVFP4's unsigned e4m3 scale (bias 7), halved; 0 and 0x7f are zero (gguf-py's `ue4m3_to_fp32`). */
function ue4m3(x: number): number {
  if (x === 0 || x === 0x7f) return 0;
  const exp = (x >> 3) & 15;
  const man = x & 7;
  return (exp === 0 ? man * 2 ** -9 : (1 + man / 8) * 2 ** (exp - 7)) * 0.5;
}

/** NVFP4: 4 ue4m3 scales, then 4 sub-blocks of 8 bytes (16 e2m1 values: low nibbles, then high). */
const nvfp4: Dequantize = (s, out, blocks) => {
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 36, y += 64) {
    for (let k = 0; k < 4; k++) {
      const d = ue4m3(s[o + k]!);
      for (let i = 0; i < 8; i++) {
        const q = s[o + 4 + k * 8 + i]!;
        out[y + k * 16 + i] = d * FP4[q & 15]!;
        out[y + k * 16 + 8 + i] = d * FP4[q >> 4]!;
      }
    }
  }
};

/** The non-lattice quantized types, by ggml name. */
export const DEQUANTIZE: Readonly<Record<string, Dequantize>> = {
  Q8_0: q8_0,
  Q4_0: q4_0,
  Q4_1: q4_1,
  Q5_0: q5_0,
  Q5_1: q5_1,
  Q2_K: q2_K,
  Q3_K: q3_K,
  Q4_K: q4_K,
  Q5_K: q5_K,
  Q6_K: q6_K,
  TQ1_0: tq1_0,
  TQ2_0: tq2_0,
  MXFP4: mxfp4,
  NVFP4: nvfp4,
};
