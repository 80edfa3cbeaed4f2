/** The zip codec for browsers (and any runtime without node:zlib): fflate's deflate and a JS CRC-32. */
import { Deflate } from 'fflate';
import { inflateInto } from './inflate-pieces.js';
import { crc32 } from './crc32.js';
import { NpyError } from '../errors.js';
import { checkInflatedSize, type ZipCodec } from './zip.js';

/** Largest typed array this engine will allocate for one member. */
const MAX_MEMBER = 2 ** 32 - 2;
/**
 * Compressed bytes inflated per step. Deflate expands at most ~1032×, and fflate grows its output
 * for a step before the overflow can be seen, so a step is sized by the declared member: about its
 * size / 1032, between 4 KiB (≤ 4 MiB of output) and 64 KiB (≤ 66 MiB, for members at least that
 * large). A member that inflates past a small declared size then costs a few MiB, not hundreds.
 */
const inflatePiece = (size: number): number => Math.min(1 << 16, Math.max(1 << 12, Math.ceil(size / 1032 / 4096) * 4096));

/**
 * fflate as the zip codec: inflate and deflate in pure JavaScript, for browsers.
 * @example
 * decodeNpz(bytes, { codec: fflateCodec });   // the default outside Node
 */
export const fflateCodec: ZipCodec = {
  inflate(data, size, member) {
    if (size > MAX_MEMBER) {
      throw new NpyError('TOO_LARGE', `member of ${size} bytes is larger than one typed array can hold`, { member });
    }
    // Streamed in pieces so that a member inflating past its declared size is stopped at once.
    const out = new Uint8Array(size);
    const piece = inflatePiece(size);
    const count = Math.max(1, Math.ceil(data.length / piece));
    const pieces = Array.from({ length: count }, (_, k) => data.subarray(k * piece, (k + 1) * piece));
    let result: { produced: number; overflow: boolean };
    try {
      result = inflateInto(pieces, (k) => k === count - 1, out, false);
    } catch (e) {
      throw new NpyError('ZIP_FORMAT', `corrupt deflate stream: ${(e as Error).message}`, { member });
    }
    checkInflatedSize(result.overflow ? size + 1 : result.produced, size, member);
    return out;
  },
  deflater(level = 6) {
    const pending: Uint8Array[] = [];
    const d = new Deflate({ level: level as 6 }, (chunk) => pending.push(chunk));
    return {
      push(chunk, final) {
        d.push(chunk, final);
        return pending.splice(0);
      },
    };
  },
  crc32,
};
