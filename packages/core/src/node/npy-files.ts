/** .npy files on disk: the header of a file, whole loads straight into their buffer, saves. */
import { closeSync, fstatSync, openSync } from 'node:fs';
import { allocateBuffer } from '../array/memory.js';
import { preallocate } from './native.js';
import { checkDataPresent, encodeNpyParts, hasObject, type DecodeOptions, type EncodeOptions, type ArraySpec, type Expecting } from '../npy.js';
import type { DescrInput } from '../format/descr-types.js';
import type { NpyHeader } from '../format/header.js';
import { readHeaderFrom } from '../io/header-read.js';
import { bytesToData } from '../array/layout.js';
import { NpyError } from '../errors.js';
import { NdArray } from '../array/ndarray.js';
import { pickleCodec } from '../pickle/index.js';
import { readFully, writeBeside, writeFully } from './fd.js';

/** Read just the header of an open file (a few hundred bytes in the common case). */
export function readHeaderFromFd(fd: number, options: DecodeOptions = {}): NpyHeader {
  return readHeaderFrom((offset, length) => {
    const out = new Uint8Array(length);
    return out.subarray(0, readFully(fd, out, offset));
  }, options);
}

/** The header of a .npy file, reading only its first bytes. */
export function readNpyHeader(path: string, options: DecodeOptions = {}): NpyHeader {
  const fd = openSync(path, 'r');
  try {
    return readHeaderFromFd(fd, options);
  } finally {
    closeSync(fd);
  }
}

export interface LoadOptions extends DecodeOptions {
  /** Decode object arrays (pickles) with npyts' safe unpickler, which never runs code. */
  allowPickle?: boolean;
}

/**
 * Load a .npy file. The data is read straight into its own aligned buffer (memory is the data
 * size, not twice it) and byte-swapped there when the file is not in native order.
 * @example
 * const w = loadNpy('w.npy', { expect: '<f4' });   // w.data: Float32Array
 */
export function loadNpy<const S extends DescrInput>(path: string, options: LoadOptions & Expecting<S>): NdArray<S>;
export function loadNpy(path: string, options?: LoadOptions): NdArray;
export function loadNpy(path: string, options: LoadOptions = {}): NdArray {
  const fd = openSync(path, 'r');
  try {
    const header = readHeaderFromFd(fd, options);
    const fileSize = fstatSync(fd).size;
    const codec = options.pickle ?? (options.allowPickle ? pickleCodec : undefined);
    if (hasObject(header.dtype) && codec) {
      const whole = new Uint8Array(fileSize);
      readFully(fd, whole, 0);
      return codec.decode(whole, header, options);
    }
    checkDataPresent(header, fileSize - header.dataOffset);
    const buffer = allocateBuffer(header.dataBytes, options.shared);
    const got = readFully(fd, new Uint8Array(buffer), header.dataOffset);
    if (got < header.dataBytes) {
      throw new NpyError('DATA_TRUNCATED', `file ended after ${got} of ${header.dataBytes} data bytes`, { offset: header.dataOffset + got });
    }
    const data = bytesToData(header.dtype, buffer, 0, header.size, { ...options, owned: true, copy: false });
    return new NdArray(header.dtype, header.shape, data, header.fortranOrder ? 'F' : 'C');
  } finally {
    closeSync(fd);
  }
}
/**
 * Write an array as numpy's `np.save` would; native-endian data is written straight from its memory.
 * The file appears under its name only when complete (written beside it and renamed).
 * @example
 * saveNpy('out.npy', { data: new Float32Array([1, 2, 3]) });
 */
export function saveNpy(path: string, array: NdArray | ArraySpec, options: EncodeOptions = {}): void {
  const { header, body } = encodeNpyParts(array, { pickle: pickleCodec, ...options });
  writeBeside(path, (fd) => {
    preallocate(fd, header.length, body.length);
    writeFully(fd, header);
    writeFully(fd, body);
  });
}
