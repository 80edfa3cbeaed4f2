/**
 * The checksum of HDF5's version 2 structures (superblocks 2 and 3, object headers 2 and their
 * continuation blocks): Bob Jenkins' lookup3 `hashlittle`, as the HDF5 library computes it
 * (`H5_checksum_lookup3`, initial value 0). A structure whose checksum does not match is refused,
 * as h5py refuses it.
 */
import { bad } from './bytes.js';

const rot = (x: number, k: number): number => (x << k) | (x >>> (32 - k));

/**
 * lookup3's 32-bit hash of `k` (initial value `init`).
 * @example
 * lookup3(new TextEncoder().encode('Four score and seven years ago'));   // 0x17770551
 */
export function lookup3(k: Uint8Array, init = 0): number {
  let length = k.length;
  let a = (0xdeadbeef + length + init) | 0;
  let b = a;
  let c = a;
  let o = 0;
  const word = (at: number): number => k[at]! | (k[at + 1]! << 8) | (k[at + 2]! << 16) | (k[at + 3]! << 24);
  while (length > 12) {
    a = (a + word(o)) | 0;
    b = (b + word(o + 4)) | 0;
    c = (c + word(o + 8)) | 0;
    a = (a - c) | 0;
    a ^= rot(c, 4);
    c = (c + b) | 0;
    b = (b - a) | 0;
    b ^= rot(a, 6);
    a = (a + c) | 0;
    c = (c - b) | 0;
    c ^= rot(b, 8);
    b = (b + a) | 0;
    a = (a - c) | 0;
    a ^= rot(c, 16);
    c = (c + b) | 0;
    b = (b - a) | 0;
    b ^= rot(a, 19);
    a = (a + c) | 0;
    c = (c - b) | 0;
    c ^= rot(b, 4);
    b = (b + a) | 0;
    length -= 12;
    o += 12;
  }
  if (length === 0) return c >>> 0;
  // The last 1 to 12 bytes, little-endian into a, b and c.
  const lanes = [0, 0, 0];
  for (let i = 0; i < length; i++) lanes[i >> 2]! += k[o + i]! << ((i & 3) * 8);
  a = (a + lanes[0]!) | 0;
  b = (b + lanes[1]!) | 0;
  c = (c + lanes[2]!) | 0;
  c ^= b;
  c = (c - rot(b, 14)) | 0;
  a ^= c;
  a = (a - rot(c, 11)) | 0;
  b ^= a;
  b = (b - rot(a, 25)) | 0;
  c ^= b;
  c = (c - rot(b, 16)) | 0;
  a ^= c;
  a = (a - rot(c, 4)) | 0;
  b ^= a;
  b = (b - rot(a, 14)) | 0;
  c ^= b;
  c = (c - rot(b, 24)) | 0;
  return c >>> 0;
}

/** Check a structure whose last 4 bytes are the lookup3 checksum of the others: `BAD_HDF5` where they differ. */
export function checkChecksum(bytes: Uint8Array, at: number, what: string): void {
  const n = bytes.length - 4;
  const stored = (bytes[n]! | (bytes[n + 1]! << 8) | (bytes[n + 2]! << 16) | (bytes[n + 3]! << 24)) >>> 0;
  const computed = lookup3(bytes.subarray(0, n));
  if (stored !== computed) {
    throw bad(`${what} at byte ${at} has checksum ${stored.toString(16)}, its bytes sum to ${computed.toString(16)}: the file is corrupt`);
  }
}
