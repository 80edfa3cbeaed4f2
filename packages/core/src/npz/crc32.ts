/**
 * CRC-32 (the zip polynomial) in plain JS for environments without a native one: slice-by-16,
 * reading four aligned 32-bit words per step on little-endian hosts (twice the speed of reading
 * bytes one by one), bytes one at a time elsewhere and at the ends.
 */

/**
 * Make the CRC-32 function. Self-contained (no reference outside its body), so that the browser's
 * inflate workers run the same code from its source text (see stream-inflate.ts).
 */
export function makeCrc32(): (bytes: Uint8Array, crc?: number) => number {
  const littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
  // 16 tables of 256 entries, table k at k·256: the CRC of a byte followed by k zero bytes.
  const t = new Int32Array(16 * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c;
  }
  for (let k = 1; k < 16; k++) {
    for (let n = 0; n < 256; n++) {
      const prev = t[(k - 1) * 256 + n]!;
      t[k * 256 + n] = (prev >>> 8) ^ t[prev & 0xff]!;
    }
  }
  /** Byte-at-a-time steps over bytes[from, to). */
  const crcBytes = (bytes: Uint8Array, from: number, to: number, c: number): number => {
    for (let i = from; i < to; i++) c = t[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
    return c;
  };
  return (bytes, crc = 0) => {
    let c = ~crc;
    const n = bytes.length;
    if (!littleEndian || n < 64) return ~crcBytes(bytes, 0, n, c) >>> 0;
    // Bytes up to a 4-byte boundary, then 16 bytes (four little-endian words) per step.
    const head = (4 - (bytes.byteOffset & 3)) & 3;
    c = crcBytes(bytes, 0, head, c);
    const steps = (n - head) >> 4;
    const words = new Int32Array(bytes.buffer, bytes.byteOffset + head, steps * 4);
    for (let w = 0; w < words.length; w += 4) {
      const a = c ^ words[w]!;
      const b = words[w + 1]!;
      const d = words[w + 2]!;
      const e = words[w + 3]!;
      c =
        t[0xf00 | (a & 0xff)]! ^
        t[0xe00 | ((a >>> 8) & 0xff)]! ^
        t[0xd00 | ((a >>> 16) & 0xff)]! ^
        t[0xc00 | (a >>> 24)]! ^
        t[0xb00 | (b & 0xff)]! ^
        t[0xa00 | ((b >>> 8) & 0xff)]! ^
        t[0x900 | ((b >>> 16) & 0xff)]! ^
        t[0x800 | (b >>> 24)]! ^
        t[0x700 | (d & 0xff)]! ^
        t[0x600 | ((d >>> 8) & 0xff)]! ^
        t[0x500 | ((d >>> 16) & 0xff)]! ^
        t[0x400 | (d >>> 24)]! ^
        t[0x300 | (e & 0xff)]! ^
        t[0x200 | ((e >>> 8) & 0xff)]! ^
        t[0x100 | ((e >>> 16) & 0xff)]! ^
        t[e >>> 24]!;
    }
    return ~crcBytes(bytes, head + steps * 16, n, c) >>> 0;
  };
}

/**
 * CRC-32 of `bytes`, continuing from `crc` (0 to start).
 * @example
 * crc32(new TextEncoder().encode('123456789')).toString(16);   // 'cbf43926'
 */
export const crc32: (bytes: Uint8Array, crc?: number) => number = makeCrc32();
