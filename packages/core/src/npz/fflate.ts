/** The zip codec for browsers (and any runtime without node:zlib): fflate's deflate and a JS CRC-32. */
import { Deflate, Inflate } from 'fflate';
import { crc32 } from './crc32.js';
import { NpyError } from '../errors.js';
import { checkInflatedSize, type ZipCodec } from './zip.js';

/** Largest typed array this engine will allocate for one member. */
const MAX_MEMBER = 2 ** 32 - 2;
/** Compressed bytes inflated per step: deflate expands at most ~1032×, so one step makes at most ~66 MiB. */
const INFLATE_PIECE = 1 << 16;

export const fflateCodec: ZipCodec = {
  inflate(data, size, member) {
    if (size > MAX_MEMBER) {
      throw new NpyError('TOO_LARGE', `member of ${size} bytes is larger than one typed array can hold`, { member });
    }
    // Streamed in pieces so that a member inflating past its declared size is stopped at once:
    // fflate's one-shot inflate into a fixed buffer drops the excess but decodes all of it.
    const out = new Uint8Array(size);
    let produced = 0;
    const inflater = new Inflate((chunk) => {
      if (produced + chunk.length > size) checkInflatedSize(produced + chunk.length, size, member);
      out.set(chunk, produced);
      produced += chunk.length;
    });
    try {
      if (data.length === 0) inflater.push(data, true);
      for (let at = 0; at < data.length; at += INFLATE_PIECE) inflater.push(data.subarray(at, at + INFLATE_PIECE), at + INFLATE_PIECE >= data.length);
    } catch (e) {
      if (e instanceof NpyError) throw e;
      throw new NpyError('ZIP_FORMAT', `corrupt deflate stream: ${(e as Error).message}`, { member });
    }
    checkInflatedSize(produced, size, member);
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
