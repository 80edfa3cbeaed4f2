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

/** Q8_0: a float16 scale, then 32 int8. */
const q8_0: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 34) {
    const d = H[s[o]! | (s[o + 1]! << 8)]!;
    for (let i = 0; i < 32; i++) out[y++] = ((s[o + 2 + i]! << 24) >> 24) * d;
  }
};

/** Q4_0: a float16 scale, then 32 nibbles (low nibbles the first 16 values, high the next), less 8. */
const q4_0: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 18, y += 32) {
    const d = H[s[o]! | (s[o + 1]! << 8)]!;
    for (let i = 0; i < 16; i++) {
      const q = s[o + 2 + i]!;
      out[y + i] = d * ((q & 15) - 8);
      out[y + 16 + i] = d * ((q >> 4) - 8);
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

/** Q4_K: float16 d and dmin, 12 bytes of scales, 128 bytes of nibbles in 4 chunks of 64 values. */
const q4_K: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  const sc = new Uint8Array(8);
  const mn = new Uint8Array(8);
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 144, y += 256) {
    const d = H[s[o]! | (s[o + 1]! << 8)]!;
    const dmin = H[s[o + 2]! | (s[o + 3]! << 8)]!;
    scaleMin(s, o + 4, sc, mn);
    for (let c = 0; c < 4; c++) {
      // d * sc and dmin * mn: an 11-bit float16 by a 6-bit integer, exact in float32; so is d1 * q below.
      const d1 = d * sc[2 * c]!;
      const m1 = dmin * mn[2 * c]!;
      const d2 = d * sc[2 * c + 1]!;
      const m2 = dmin * mn[2 * c + 1]!;
      const q0 = o + 16 + c * 32;
      const y0 = y + c * 64;
      for (let m = 0; m < 32; m++) {
        const q = s[q0 + m]!;
        out[y0 + m] = d1 * (q & 15) - m1;
        out[y0 + 32 + m] = d2 * (q >> 4) - m2;
      }
    }
  }
};

/** Q5_K: Q4_K's layout with 32 bytes of high bits before the nibbles. */
const q5_K: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  const sc = new Uint8Array(8);
  const mn = new Uint8Array(8);
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 176, y += 256) {
    const d = H[s[o]! | (s[o + 1]! << 8)]!;
    const dmin = H[s[o + 2]! | (s[o + 3]! << 8)]!;
    scaleMin(s, o + 4, sc, mn);
    for (let c = 0; c < 4; c++) {
      const d1 = d * sc[2 * c]!;
      const m1 = dmin * mn[2 * c]!;
      const d2 = d * sc[2 * c + 1]!;
      const m2 = dmin * mn[2 * c + 1]!;
      const q0 = o + 48 + c * 32;
      const y0 = y + c * 64;
      for (let m = 0; m < 32; m++) {
        const q = s[q0 + m]!;
        const qh = s[o + 16 + m]!;
        out[y0 + m] = d1 * ((q & 15) | (((qh >> (2 * c)) & 1) << 4)) - m1;
        out[y0 + 32 + m] = d2 * ((q >> 4) | (((qh >> (2 * c + 1)) & 1) << 4)) - m2;
      }
    }
  }
};

/** Q6_K: 128 bytes of low nibbles, 64 of 2-bit highs, 16 int8 scales, float16 d: `(d * scale) * (q - 32)`. */
const q6_K: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  const scales = new Float32Array(16);
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 210, y += 256) {
    const d = H[s[o + 208]! | (s[o + 209]! << 8)]!;
    for (let i = 0; i < 16; i++) scales[i] = d * ((s[o + 192 + i]! << 24) >> 24);
    for (let h = 0; h < 2; h++) {
      for (let k = 0; k < 4; k++) {
        const base = h * 128 + k * 32;
        for (let m = 0; m < 32; m++) {
          const idx = base + m;
          // Value h*128 + k*32 + m: nibble (k >> 1) of low byte h*64 + (k & 1)*32 + m, bits 2k of high byte h*32 + m.
          const ql = (s[o + h * 64 + (k & 1) * 32 + m]! >> (4 * (k >> 1))) & 15;
          const qh = (s[o + 128 + h * 32 + m]! >> (2 * k)) & 3;
          out[y + idx] = scales[idx >> 4]! * ((ql | (qh << 4)) - 32);
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
