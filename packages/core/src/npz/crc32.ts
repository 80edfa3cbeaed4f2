/** CRC-32 (the zip polynomial), slice-by-8 in plain JS for environments without a native one. */

const TABLES: Uint32Array[] = (() => {
  const t0 = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t0[n] = c >>> 0;
  }
  const tables = [t0];
  for (let k = 1; k < 8; k++) {
    const prev = tables[k - 1]!;
    const t = new Uint32Array(256);
    for (let n = 0; n < 256; n++) t[n] = (prev[n]! >>> 8) ^ t0[prev[n]! & 0xff]!;
    tables.push(t);
  }
  return tables;
})();

/**
 * CRC-32 of `bytes`, continuing from `crc` (0 to start).
 * @example
 * crc32(new TextEncoder().encode('123456789')).toString(16);   // 'cbf43926'
 */
export function crc32(bytes: Uint8Array, crc = 0): number {
  const [t0, t1, t2, t3, t4, t5, t6, t7] = TABLES as [Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array];
  let c = ~crc >>> 0;
  let i = 0;
  const n = bytes.length;
  for (; i + 8 <= n; i += 8) {
    const a = (c ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24))) >>> 0;
    c = t7[a & 0xff]! ^ t6[(a >>> 8) & 0xff]! ^ t5[(a >>> 16) & 0xff]! ^ t4[a >>> 24]!
      ^ t3[bytes[i + 4]!]! ^ t2[bytes[i + 5]!]! ^ t1[bytes[i + 6]!]! ^ t0[bytes[i + 7]!]!;
  }
  for (; i < n; i++) c = t0[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}
