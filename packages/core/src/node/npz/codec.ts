/** node:zlib as the zip codec: native inflate (blocking or on libuv's threads), deflate and CRC-32. */
import { constants as zc, deflateRawSync, inflateRaw, inflateRawSync, type ZlibOptions } from 'node:zlib';
import { promisify } from 'node:util';
import { kMaxLength } from 'node:buffer';
import { NpyError } from '../../errors.js';
import { checkInflatedSize, type ZipCodec } from '../../npz/zip.js';
import { allocateBuffer } from '../../array/memory.js';
import { crc32, inflateRawNative, inflateRawNativeAsync, nativeInflate } from '../native.js';

const inflateRawAsync = promisify(inflateRaw);

/**
 * zlib's options for inflating a member of `size` bytes: maxOutputLength makes zlib stop (and throw)
 * instead of inflating past the declared size; one output chunk one byte larger than the member lets
 * zlib fill it in place, with no joining copy.
 */
function inflateOptions(size: number, member: string): ZlibOptions {
  if (size > kMaxLength) {
    throw new NpyError('TOO_LARGE', `member of ${size} bytes is larger than one buffer can hold (${kMaxLength}); read it in pieces with streamNpzMember()`, {
      member,
    });
  }
  return { maxOutputLength: Math.max(1, size), chunkSize: Math.max(64, size + 1) };
}

/** A zlib inflate that failed: past the declared size (ZIP_SIZE) or corrupt (ZIP_FORMAT), naming the member. */
function inflateFailure(e: unknown, size: number, member: string): never {
  const err = e as NodeJS.ErrnoException;
  if (err.code === 'ERR_BUFFER_TOO_LARGE') checkInflatedSize(size + 1, size, member);
  throw new NpyError('ZIP_FORMAT', `corrupt deflate stream: ${err.message}`, { member });
}

/** The output of a zlib inflate, checked to be exactly `size` bytes. */
function checkedOutput(out: Buffer, size: number, member: string): Uint8Array {
  checkInflatedSize(out.length, size, member);
  return new Uint8Array(out.buffer, out.byteOffset, out.length);
}

/** libdeflate's result (bytes written, -1 corrupt, -2 past `size`, -3 not started) as the checked output, or the error zlib's path gives. */
function nativeOutput(out: Uint8Array, written: number, size: number, member: string): Uint8Array {
  if (written === -2) checkInflatedSize(size + 1, size, member);
  if (written === -3)
    throw new NpyError('INTERNAL', 'libdeflate could not start (no memory for a decompressor, or the work was cancelled); NPYTS_LIBDEFLATE=0 uses zlib', {
      member,
    });
  if (written < 0) throw new NpyError('ZIP_FORMAT', 'corrupt deflate stream (libdeflate)', { member });
  checkInflatedSize(written, size, member);
  return out;
}

/**
 * node:zlib as the zip codec: native inflate/deflate and CRC-32, with the same size guards. Where
 * @npyts/native was built with libdeflate, whole members inflate with it instead (the same bytes and
 * the same errors, faster).
 * @example
 * const z = decodeNpz(bytes, { codec: zlibCodec });   // node:zlib instead of fflate
 */
export const zlibCodec: ZipCodec = {
  inflate(data, size, member) {
    const options = inflateOptions(size, member); // TOO_LARGE is its own error, not a corrupt stream
    if (nativeInflate()) {
      const out = new Uint8Array(allocateBuffer(size));
      return nativeOutput(out, inflateRawNative(data, out), size, member);
    }
    let out: Buffer;
    try {
      out = inflateRawSync(data, options);
    } catch (e) {
      inflateFailure(e, size, member);
    }
    return checkedOutput(out, size, member);
  },
  async inflateAsync(data, size, member) {
    const options = inflateOptions(size, member);
    if (nativeInflate()) {
      const out = new Uint8Array(allocateBuffer(size));
      return nativeOutput(out, await inflateRawNativeAsync(data, out), size, member);
    }
    let out: Buffer;
    try {
      out = await inflateRawAsync(data, options);
    } catch (e) {
      inflateFailure(e, size, member);
    }
    return checkedOutput(out, size, member);
  },
  deflater(level = 6) {
    // Each piece is deflated on its own and ended with a sync flush: the pieces join into one
    // valid raw-deflate stream, and no piece of the array is ever copied into a joined buffer.
    return {
      push(chunk, final) {
        const out = deflateRawSync(chunk, { level, finishFlush: final ? zc.Z_FINISH : zc.Z_SYNC_FLUSH });
        return [new Uint8Array(out.buffer, out.byteOffset, out.length)];
      },
    };
  },
  crc32: (bytes, crc) => crc32(bytes, crc),
};
