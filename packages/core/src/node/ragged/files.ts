/** Where a ragged array's files are: heap paths confined to the index's folder, and the small file steps its writers share. */
import { dirname, resolve } from 'node:path';
import { siblingPath } from '../place.js';
import { checkDataPresent } from '../../npy.js';
import { NpyError } from '../../errors.js';
import { RAGGED_PATH_KEYS, type RaggedPathOptions } from '../../ragged/build.js';
import { checkOptions, knownKeys } from '../../options.js';

const PATH_KEYS = knownKeys<RaggedPathOptions>(RAGGED_PATH_KEYS);
import type { NdArray } from '../../array/ndarray.js';
import { readingNpyHeader } from '../npy-files.js';
import type { NpyHeader } from '../../format/header.js';
import { perform, withFile, type FileStep, type Operation } from '../../io/steps.js';
import { readingHeader } from '../../io/header-read.js';
import { readingRegion } from '../../io/region.js';

/**
 * The heap's path for an index at `indexPath`, confined to the index's folder unless allowed.
 * @example
 * heapPathOf('/data/words.npy', 'words.npy.strings');   // '/data/words.npy.strings'
 */
export function heapPathOf(indexPath: string, heap: string, options: RaggedPathOptions = {}): string {
  checkOptions('heapPathOf', options, PATH_KEYS);
  return heapPathIn(indexPath, heap, options);
}

/** {@link heapPathOf} for the ragged entries, whose options (checked by them) hold more than `allowHeapOutside`. */
export function heapPathIn(indexPath: string, heap: string, options: RaggedPathOptions): string {
  if (options.allowHeapOutside) return resolve(dirname(indexPath), heap);
  try {
    return siblingPath(indexPath, heap, 'the heap', false);
  } catch (e) {
    if (!(e instanceof NpyError)) throw e;
    throw new NpyError('UNSAFE_PATH', `the ragged index ${e.message}; pass { allowHeapOutside: true } to allow it`);
  }
}

/** The steps of a region read of the .npy at `path` (a few words of an index). */
export function* readingRegionAt(path: string, start: number[], count: number[]): Operation<NdArray, FileStep> {
  return yield* withFile(path, 'r', function* (file) {
    const header = yield* readingHeader(file);
    checkDataPresent(header, (yield* perform({ op: 'size', file })) - header.dataOffset);
    return yield* readingRegion(path, file, header, start, count);
  });
}

/** The header at `path`, or null where there is none to read. */
export function* headerOrNull(path: string): Operation<NpyHeader | null, FileStep> {
  try {
    return yield* readingNpyHeader(path);
  } catch {
    return null;
  }
}
