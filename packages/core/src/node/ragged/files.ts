/** Where a ragged array's files are: heap paths confined to the index's folder, and the small file steps its writers share. */
import { existsSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, resolve, sep } from 'node:path';
import { checkDataPresent } from '../../npy.js';
import { NpyError } from '../../errors.js';
import type { RaggedPathOptions } from '../../ragged/build.js';
import type { NdArray } from '../../array/ndarray.js';
import { readingNpyHeader } from '../npy-files.js';
import type { NpyHeader } from '../../format/header.js';
import { withFile, type Operation } from '../../io/steps.js';
import { readingHeader } from '../../io/header-read.js';
import { readingRegion } from '../../io/region.js';

/**
 * The heap's path for an index at `indexPath`, confined to the index's folder unless allowed.
 * @example
 * heapPathOf('/data/words.npy', 'words.npy.strings');   // '/data/words.npy.strings'
 */
export function heapPathOf(indexPath: string, heap: string, options: RaggedPathOptions = {}): string {
  const folder = resolve(dirname(indexPath));
  const target = resolve(folder, heap);
  if (options.allowHeapOutside) return target;
  const inside = (root: string, p: string): boolean => p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);
  const refuse = (why: string): never => {
    throw new NpyError('UNSAFE_PATH', `the ragged index ${indexPath} names the heap '${heap}', ${why}; pass { allowHeapOutside: true } to allow it`);
  };
  if (isAbsolute(heap)) refuse('an absolute path');
  if (heap.split(/[\\/]/).includes('..') || !inside(folder, target)) refuse("outside the index's folder");
  // Symlinks: the nearest part of the path that exists must resolve inside the folder too.
  let existing = target;
  while (!existsSync(existing) && inside(folder, dirname(existing)) && existing !== folder) existing = dirname(existing);
  if (existsSync(existing) && !inside(realpathSync(folder), realpathSync(existing))) refuse("which a symbolic link leads outside the index's folder");
  return target;
}

/** The steps of a region read of the .npy at `path` (a few words of an index). */
export function* readingRegionAt(path: string, start: number[], count: number[]): Operation<NdArray> {
  return yield* withFile(path, 'r', function* (file) {
    const header = yield* readingHeader(file);
    checkDataPresent(header, ((yield { op: 'size', file }) as number) - header.dataOffset);
    return yield* readingRegion(path, file, header, start, count);
  });
}

/** The header at `path`, or null where there is none to read. */
export function* headerOrNull(path: string): Operation<NpyHeader | null> {
  try {
    return yield* readingNpyHeader(path);
  } catch {
    return null;
  }
}
