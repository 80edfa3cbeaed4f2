/** The zip codec for browsers (and any runtime without node:zlib): fflate's deflate and a JS CRC-32. */
import { Deflate, inflateSync } from 'fflate';
import { crc32 } from './crc32.js';
import { NpyError } from './errors.js';
import { checkInflatedSize, type ZipCodec } from './zip.js';

/** Largest typed array this engine will allocate for one member. */
const MAX_MEMBER = 2 ** 32 - 2;

export const fflateCodec: ZipCodec = {
  inflate(data, size, member) {
    if (size > MAX_MEMBER) {
      throw new NpyError('TOO_LARGE', `member of ${size} bytes is larger than one typed array can hold`, { member });
    }
    // One spare byte: fflate stops silently at the end of a fixed buffer, so a longer stream shows as size + 1.
    let out: Uint8Array;
    try {
      out = inflateSync(data, { out: new Uint8Array(size + 1) });
    } catch (e) {
      throw new NpyError('ZIP_FORMAT', `corrupt deflate stream: ${(e as Error).message}`, { member });
    }
    checkInflatedSize(out.length, size, member);
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
