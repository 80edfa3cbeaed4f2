/** @npyts/core/node — .npy files on disk, read and written without whole-file intermediate copies. */
import { closeSync, fstatSync, openSync, readSync, writeSync } from 'node:fs';
import { checkDataPresent, encodeNpyParts, type DecodeOptions, type EncodeOptions, type ArraySpec } from './codec.js';
import { NpyError } from './errors.js';
import { headerBytesNeeded, readHeader, type NpyHeader } from './header.js';
import { NdArray } from './ndarray.js';
import { bytesToData } from './storage.js';

/** Largest single read or write; Node refuses more than 2 GiB per call. */
const IO_CHUNK = 1 << 30;

function readFully(fd: number, target: Uint8Array, position: number): number {
  let done = 0;
  while (done < target.length) {
    const n = readSync(fd, target, done, Math.min(target.length - done, IO_CHUNK), position + done);
    if (n === 0) break;
    done += n;
  }
  return done;
}

function writeFully(fd: number, bytes: Uint8Array): void {
  for (let done = 0; done < bytes.length;) {
    done += writeSync(fd, bytes, done, Math.min(bytes.length - done, IO_CHUNK));
  }
}

/** Read just the header of an open file (a few hundred bytes in the common case). */
export function readHeaderFromFd(fd: number, options: DecodeOptions = {}): NpyHeader {
  let prefix = new Uint8Array(4096);
  let got = readFully(fd, prefix, 0);
  prefix = prefix.subarray(0, got);
  const need = headerBytesNeeded(prefix);
  if (need > got && got === 4096) {
    const full = new Uint8Array(need);
    got = readFully(fd, full, 0);
    prefix = full.subarray(0, got);
  }
  return readHeader(prefix, options);
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

/**
 * Load a .npy file. The data is read straight into its own aligned buffer (memory is the data
 * size, not twice it) and byte-swapped there when the file is not in native order.
 */
export function loadNpy(path: string, options: DecodeOptions = {}): NdArray {
  const fd = openSync(path, 'r');
  try {
    const header = readHeaderFromFd(fd, options);
    const fileSize = fstatSync(fd).size;
    checkDataPresent(header, fileSize - header.dataOffset);
    const buffer = options.shared ? new SharedArrayBuffer(header.dataBytes) : new ArrayBuffer(header.dataBytes);
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

/** Write an array as numpy's `np.save` would; native-endian data is written straight from its memory. */
export function saveNpy(path: string, array: NdArray | ArraySpec, options: EncodeOptions = {}): void {
  const { header, body } = encodeNpyParts(array, options);
  const fd = openSync(path, 'w');
  try {
    writeFully(fd, header);
    writeFully(fd, body);
  } finally {
    closeSync(fd);
  }
}
