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

/** a(x)·b(x) modulo the CRC-32 polynomial, in the reflected bit order CRCs are kept in. */
function multiplyModP(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = b & 1 ? (b >>> 1) ^ 0xedb88320 : b >>> 1;
  }
  return p >>> 0;
}

/** x^(2^k) modulo the polynomial, k = 0…31 (x^1 is 0x40000000 reflected). */
const X_POW_2K: number[] = [0x40000000];
for (let k = 1; k < 32; k++) X_POW_2K.push(multiplyModP(X_POW_2K[k - 1]!, X_POW_2K[k - 1]!));

/**
 * The CRC-32 of two byte strings one after the other, from the CRC of each and the second's length
 * (zlib's `crc32_combine`): parts of one member written by different workers give the member's
 * CRC without any worker seeing the whole.
 * @example
 * crc32Combine(crc32(a), crc32(b), b.length) === crc32(b, crc32(a));   // true
 */
export function crc32Combine(first: number, second: number, secondLength: number): number {
  if (!Number.isSafeInteger(secondLength) || secondLength < 0) throw new RangeError(`a length must be a non-negative integer, not ${secondLength}`);
  // first · x^(8·secondLength) mod P, then the second CRC on top.
  let shift = 0x80000000; // x^0
  let k = 3; // 8 = 2^3: bytes to bits
  for (let n = secondLength; n > 0; n = Math.floor(n / 2), k++) if (n % 2) shift = multiplyModP(X_POW_2K[k & 31]!, shift);
  return (multiplyModP(shift, first) ^ second) >>> 0;
}
