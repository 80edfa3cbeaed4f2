/**
 * Files as byte sources, and the one rule of what a Node input names: a path or `file:` URL is a
 * file read by position (registered with core's input dispatch), a URL is read by range, anything
 * else is what core's readers take.
 */
import type { MapMode } from '../options.js';
import { mappedFileSource } from './mmap.js';
import { closeSync, fstatSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { allocateBuffer } from '../array/memory.js';
import { withWhere } from '../errors.js';
import type { AsyncByteSource, ByteSource, SyncByteSource } from '../io/byte-source.js';
import { namesFile, useLocalFiles } from '../io/open.js';
import { openFile, openFileSync, readFully, readFullyAsync } from './fd.js';

/**
 * Positional reads from an open file: memory is what is read, never the whole file.
 * @example
 * const z = new NpzArchive(fileSource('big.npz'));
 */
export function fileSource(path: string): SyncByteSource {
  const fd = openFileSync(path);
  try {
    const size = fstatSync(fd).size;
    return {
      size,
      name: path,
      read(offset, length) {
        const out = new Uint8Array(allocateBuffer(length));
        const got = readFully(fd, out, offset);
        return got === length ? out : out.subarray(0, got);
      },
      readInto: (target, offset) => readFully(fd, target, offset),
      close: () => closeSync(fd),
    };
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** An open file handle as an async source: positional reads of only the bytes asked for. */
export function fileHandleSource(fh: FileHandle, path: string, size: number): AsyncByteSource {
  return {
    size,
    name: path,
    async read(offset, length, options = {}) {
      const out = new Uint8Array(allocateBuffer(Math.max(0, Math.min(length, size - offset))));
      const got = await readFullyAsync(fh, out, offset, options.signal);
      return got === out.length ? out : out.subarray(0, got);
    },
    readInto: (target, offset, options = {}) => readFullyAsync(fh, target, offset, options.signal),
    close: () => fh.close(),
  };
}

/**
 * The path a Node input names (a path, or a `file:` URL as a `URL` or a string), or null for a URL
 * of another scheme (`http(s):`, `data:`, `blob:`: read as a URL) and for inputs that are not paths.
 * The one rule of it, registered with core's input dispatch (`locate`, io/open.ts).
 * @example
 * pathOf(new URL('file:///data/w.npz'));   // '/data/w.npz'
 * pathOf('C:\\data\\w.npz');               // 'C:\\data\\w.npz' (a drive letter is no scheme here)
 */
export function pathOf(input: unknown): string | null {
  if (input instanceof URL) return input.protocol === 'file:' ? fileURLToPath(input) : null;
  if (typeof input !== 'string') return null;
  if (!namesFile(input)) return null;
  return /^file:/i.test(input) ? fileURLToPath(input) : input;
}

/**
 * An async source over a path: an open file handle (closed with the source), or a map of the whole
 * file with `mmap` where maps can be made (else read as without, after one warning).
 */
async function openPath(path: string, options: { mmap?: MapMode | undefined }): Promise<ByteSource> {
  if (options.mmap) {
    try {
      const mapped = mappedFileSource(path, options.mmap);
      if (mapped) return mapped;
    } catch (e) {
      throw withWhere(e, { file: path });
    }
  }
  const fh = await openFile(path);
  try {
    const { size } = await fh.stat();
    return fileHandleSource(fh, path, size);
  } catch (e) {
    await fh.close();
    throw withWhere(e, { file: path });
  }
}

// Node's files, in the one input dispatch of every opener (core's and this entry's).
useLocalFiles({ pathOf, open: openPath });
