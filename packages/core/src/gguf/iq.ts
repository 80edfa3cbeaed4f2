/**
 * Dequantizing ggml's lattice (IQ) types and IQ4_NL/IQ4_XS to float32, as gguf-py's
 * `gguf.quants.dequantize` does, bit for bit (see quants.ts for how float32 rounding is matched):
 * each group of 4 or 8 values is a row of a fixed lattice (iq-grids.ts), scaled, with signs.
 */
import { IQ1_S_GRID, IQ2_S_GRID, IQ2_XS_GRID, IQ2_XXS_GRID, IQ3_S_GRID, IQ3_XXS_GRID, type PackedGrid } from './iq-grids.js';
import { f16Table, type Dequantize } from './quants.js';

const fr = Math.fround;
const grids = new Map<PackedGrid, Float32Array>();

/** A lattice's values, row after row (decoded once). */
function gridOf(packed: PackedGrid): Float32Array {
  const known = grids.get(packed);
  if (known) return known;
  const bitsPer = Math.ceil(Math.log2(packed.values.length));
  const perByte = Math.floor(8 / bitsPer);
  const step = 8 / perByte;
  const mask = (1 << bitsPer) - 1;
  const out = new Float32Array(packed.rows * packed.width);
  for (let i = 0, k = 0; i < packed.hex.length; i += 2) {
    const byte = Number.parseInt(packed.hex.slice(i, i + 2), 16);
    for (let j = 0; j < perByte; j++) out[k++] = packed.values[(byte >> (j * step)) & mask]!;
  }
  grids.set(packed, out);
  return out;
}

/** ggml's sign patterns: 7 bits given, the 8th making the parity even. */
const KSIGNS = Uint8Array.from({ length: 128 }, (_, i) => {
  let p = 0;
  for (let b = i; b; b >>= 1) p ^= b & 1;
  return i | (p << 7);
});

const u16 = (s: Uint8Array, o: number): number => s[o]! | (s[o + 1]! << 8);
const u32 = (s: Uint8Array, o: number): number => (s[o]! | (s[o + 1]! << 8) | (s[o + 2]! << 16) | (s[o + 3]! << 24)) >>> 0;

/** IQ2_XXS: float16 d, then 8 × (4 grid bytes, a uint32 of 4 sign indices and a 4-bit scale). */
const iq2_xxs: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  const grid = gridOf(IQ2_XXS_GRID);
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 66) {
    const d = H[u16(s, o)]!;
    for (let ib = 0; ib < 8; ib++) {
      const at = o + 2 + ib * 8;
      const aux = u32(s, at + 4);
      const db = fr(fr(d * (0.5 + (aux >>> 28))) * 0.25);
      for (let l = 0; l < 4; l++) {
        const row = s[at + l]! * 8;
        const signs = KSIGNS[(aux >>> (7 * l)) & 127]!;
        for (let j = 0; j < 8; j++) out[y++] = fr(db * grid[row + j]!) * ((signs >> j) & 1 ? -1 : 1);
      }
    }
  }
};

/** IQ2_XS: float16 d, 32 uint16 (9-bit grid row, 7-bit sign index), 16 4-bit scales. */
const iq2_xs: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  const grid = gridOf(IQ2_XS_GRID);
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 74) {
    const d = H[u16(s, o)]!;
    for (let r = 0; r < 32; r++) {
      const sc = (s[o + 66 + (r >> 2)]! >> (4 * ((r >> 1) & 1))) & 15;
      const db = fr(fr(d * (0.5 + sc)) * 0.25);
      const q = u16(s, o + 2 + 2 * r);
      const row = (q & 511) * 8;
      const signs = KSIGNS[q >> 9]!;
      for (let j = 0; j < 8; j++) out[y++] = fr(db * grid[row + j]!) * ((signs >> j) & 1 ? -1 : 1);
    }
  }
};

/** IQ2_S: float16 d, 32 grid bytes, 32 sign bytes, 8 bytes of 2-bit row highs, 16 4-bit scales. */
const iq2_s: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  const grid = gridOf(IQ2_S_GRID);
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 82) {
    const d = H[u16(s, o)]!;
    for (let r = 0; r < 32; r++) {
      const sc = (s[o + 74 + (r >> 2)]! >> (4 * ((r >> 1) & 1))) & 15;
      const db = fr(fr(d * (0.5 + sc)) * 0.25);
      const row = (s[o + 2 + r]! | (((s[o + 66 + (r >> 2)]! >> (2 * (r & 3))) & 3) << 8)) * 8;
      const signs = s[o + 34 + r]!;
      for (let j = 0; j < 8; j++) out[y++] = fr(db * grid[row + j]!) * ((signs >> j) & 1 ? -1 : 1);
    }
  }
};

/** IQ3_XXS: float16 d, 64 grid bytes (rows of 4), 8 uint32 of 4 sign indices and a 4-bit scale. */
const iq3_xxs: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  const grid = gridOf(IQ3_XXS_GRID);
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 98) {
    const d = H[u16(s, o)]!;
    for (let ib = 0; ib < 8; ib++) {
      const aux = u32(s, o + 66 + ib * 4);
      const db = fr(fr(d * (0.5 + (aux >>> 28))) * 0.5);
      for (let l = 0; l < 4; l++) {
        const signs = KSIGNS[(aux >>> (7 * l)) & 127]!;
        for (let j = 0; j < 8; j++) {
          const g = grid[s[o + 2 + ib * 8 + l * 2 + (j >> 2)]! * 4 + (j & 3)]!;
          out[y++] = fr(db * g) * ((signs >> j) & 1 ? -1 : 1);
        }
      }
    }
  }
};

/** IQ3_S: float16 d, 64 grid bytes, 8 bytes of row high bits, 32 sign bytes, 8 4-bit scales. */
const iq3_s: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  const grid = gridOf(IQ3_S_GRID);
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 110) {
    const d = H[u16(s, o)]!;
    for (let e = 0; e < 256; e++) {
      const ib = e >> 5;
      const db = fr(d * (1 + 2 * ((s[o + 106 + (ib >> 1)]! >> (4 * (ib & 1))) & 15)));
      const r = e >> 2;
      const row = s[o + 2 + r]! | (((s[o + 66 + (r >> 3)]! >> (r & 7)) & 1) << 8);
      const sign = (s[o + 74 + (e >> 3)]! >> (e & 7)) & 1 ? -1 : 1;
      out[y++] = fr(db * grid[row * 4 + (e & 3)]!) * sign;
    }
  }
};

/** IQ1_S: float16 d, 32 grid bytes, 8 uint16 (3 bits of each of 4 rows' index, a 3-bit scale, the delta's sign). */
const iq1_s: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  const grid = gridOf(IQ1_S_GRID);
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 50) {
    const d = H[u16(s, o)]!;
    for (let i = 0; i < 8; i++) {
      const qh = u16(s, o + 34 + 2 * i);
      const dl = fr(d * (2 * ((qh >> 12) & 7) + 1));
      const delta = qh & 0x8000 ? -0.125 : 0.125;
      for (let t = 0; t < 4; t++) {
        const row = (s[o + 2 + i * 4 + t]! | (((qh >> (3 * t)) & 7) << 8)) * 8;
        for (let j = 0; j < 8; j++) out[y++] = dl * (grid[row + j]! + delta);
      }
    }
  }
};

/** IQ1_M: 32 grid bytes, 16 bytes of nibbles (3 high index bits, the delta's sign), 4 uint16 of 3-bit scales and a float16 split across their top nibbles. */
const iq1_m: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  const grid = gridOf(IQ1_S_GRID);
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 56) {
    const sc = [u16(s, o + 48), u16(s, o + 50), u16(s, o + 52), u16(s, o + 54)] as const;
    const d = H[((sc[0] & 0xf000) >> 12) | ((sc[1] & 0xf000) >> 8) | ((sc[2] & 0xf000) >> 4) | (sc[3] & 0xf000)]!;
    for (let r = 0; r < 32; r++) {
      const k = r >> 1;
      const dl = fr(d * (2 * ((sc[k >> 2]! >> (3 * (k & 3))) & 7) + 1));
      const nib = (s[o + 32 + (r >> 1)]! >> (4 * (r & 1))) & 15;
      const delta = nib & 8 ? -0.125 : 0.125;
      const row = (s[o + r]! | ((nib & 7) << 8)) * 8;
      for (let j = 0; j < 8; j++) out[y++] = dl * (grid[row + j]! + delta);
    }
  }
};

/** The non-linear 4-bit values of IQ4_NL and IQ4_XS. */
const KVALUES = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];

/** IQ4_NL: float16 d, 32 nibbles (low the first 16 values) into KVALUES. */
const iq4_nl: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 18, y += 32) {
    const d = H[u16(s, o)]!;
    for (let i = 0; i < 16; i++) {
      const q = s[o + 2 + i]!;
      out[y + i] = d * KVALUES[q & 15]!;
      out[y + 16 + i] = d * KVALUES[q >> 4]!;
    }
  }
};

/** IQ4_XS: float16 d, a uint16 of 2-bit scale highs, 4 bytes of 4-bit scale lows, 8 × 16 bytes of nibbles. */
const iq4_xs: Dequantize = (s, out, blocks) => {
  const H = f16Table();
  for (let b = 0, o = 0, y = 0; b < blocks; b++, o += 136) {
    const d = H[u16(s, o)]!;
    const high = u16(s, o + 2);
    for (let ib = 0; ib < 8; ib++) {
      const low = (s[o + 4 + (ib >> 1)]! >> (4 * (ib & 1))) & 15;
      const dl = d * ((low | (((high >> (2 * ib)) & 3) << 4)) - 32);
      const q0 = o + 8 + ib * 16;
      for (let i = 0; i < 16; i++) {
        const q = s[q0 + i]!;
        out[y + i] = dl * KVALUES[q & 15]!;
        out[y + 16 + i] = dl * KVALUES[q >> 4]!;
      }
      y += 32;
    }
  }
};

/** The lattice types and IQ4_NL/IQ4_XS, by ggml name. */
export const DEQUANTIZE_IQ: Readonly<Record<string, Dequantize>> = {
  IQ2_XXS: iq2_xxs,
  IQ2_XS: iq2_xs,
  IQ2_S: iq2_s,
  IQ3_XXS: iq3_xxs,
  IQ3_S: iq3_s,
  IQ1_S: iq1_s,
  IQ1_M: iq1_m,
  IQ4_NL: iq4_nl,
  IQ4_XS: iq4_xs,
};
