/**
 * Files as byte sources, and the one rule of what a Node input names: a path or `file:` URL is a
 * file read by position, an `http(s)` URL is read by range, anything else is what core's readers take.
 */
import { checkMapMode, checkReadOptions, type MapMode } from '../options.js';
import { warnNoMap } from '../weights/open.js';
import { mappedFileSource } from './mmap.js';
import { closeSync, fstatSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { allocateBuffer } from '../array/memory.js';
import { withWhere } from '../errors.js';
import type { AsyncByteSource, ByteSource, SyncByteSource } from '../io/byte-source.js';
import { sourceOf, type NpySource } from '../io/open.js';
import type { HttpOptions } from '../io/url.js';
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

/** Whether a string names a URL that `openNpz` reads by range rather than a path (`http:`, `https:`). */
export function isHttpUrl(text: string): boolean {
  return /^https?:\/\//i.test(text);
}

/**
 * The path a Node input names, or null for a URL read over HTTP and for inputs that are not paths.
 * @example
 * pathOf(new URL('file:///data/w.npz'));   // '/data/w.npz'
 */
export function pathOf(input: unknown): string | null {
  if (typeof input === 'string') return isHttpUrl(input) ? null : input;
  if (input instanceof URL && input.protocol === 'file:') return fileURLToPath(input);
  return null;
}

/**
 * An async source over a path (an open file handle, closed with the source), or what core's
 * `sourceOf` makes of any other input (an `http(s)` URL, a Blob, bytes, a source).
 * @example
 * const source = await nodeSourceOf('model.safetensors');
 */
export async function nodeSourceOf(
  input: string | NpySource,
  options: HttpOptions & { tailBytes?: number; mmap?: MapMode | undefined } = {},
): Promise<ByteSource> {
  checkReadOptions(options);
  checkMapMode(options.mmap);
  const path = pathOf(input);
  if (path === null) {
    if (options.mmap) warnNoMap('memory maps need a file given by path');
    return sourceOf(input, options);
  }
  options.signal?.throwIfAborted();
  if (options.mmap) {
    // A map of the whole file; without the addon (one warning), read as without mmap.
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
