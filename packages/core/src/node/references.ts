/** Reference sets of files on disk: paths as well as what core's `referencesOf` takes. */
import { resolve } from 'node:path';
import type { NpySource } from '../io/open.js';
import { checkOptions } from '../options.js';
import { REFERENCES_OF_KEYS, referenceInput, referencesOfSources, type ReferenceSet, type ReferencesOfOptions } from '../refs/references.js';
import { sourceOf } from '../io/open.js';
import { pathOf } from './sources.js';
import { nodePlaceOf } from './weights.js';

/**
 * The reference set of a file, or of files joined with `concat: 0` (see core's `referencesOf`): paths
 * and `file:` URLs too, whose references point at the absolute path unless `{ url }` says otherwise.
 * @example
 * const set = await referencesOf(['part-0.npy', 'part-1.npy'], { concat: 0, zarrFormat: 2 });
 * await writeFile('refs.json', JSON.stringify(set));
 */
export async function referencesOf(input: string | NpySource | readonly (string | NpySource)[], options: ReferencesOfOptions = {}): Promise<ReferenceSet> {
  checkOptions('referencesOf', options, REFERENCES_OF_KEYS);
  const list = Array.isArray(input) ? (input as readonly (string | NpySource)[]) : [input as string | NpySource];
  const inputs = list.map((given) => {
    // A path is made absolute first: the references, and a sharded set's shards, name it so.
    const path = pathOf(given);
    const one = path === null ? given : resolve(path);
    const url = path !== null ? (one as string) : typeof one === 'string' ? one : one instanceof URL ? one.href : null;
    return referenceInput(one, url, nodePlaceOf(one, options), () => sourceOf(one, { ...options, tailBytes: 1 }, 'referencesOf'));
  });
  return referencesOfSources(inputs, options);
}
