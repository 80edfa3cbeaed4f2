/** Reference sets of files on disk: paths as well as what core's `referencesOf` takes. */
import { resolve } from 'node:path';
import type { NpySource } from '../io/open.js';
import type { HttpOptions } from '../io/url.js';
import { closeOwn, referencesOfSources, type ReferenceInput, type ReferenceOptions, type ReferenceSet } from '../refs/references.js';
import { isHttpUrl, nodeSourceOf, pathOf } from './sources.js';

/**
 * The reference set of a file, or of files joined with `concat: 0` (see core's `referencesOf`): paths
 * and `file:` URLs too, whose references point at the absolute path unless `{ url }` says otherwise.
 * @example
 * const set = await referencesOf(['part-0.npy', 'part-1.npy'], { concat: 0, zarrFormat: 2 });
 * await writeFile('refs.json', JSON.stringify(set));
 */
export async function referencesOf(
  input: string | NpySource | readonly (string | NpySource)[],
  options: ReferenceOptions & HttpOptions = {},
): Promise<ReferenceSet> {
  const list = Array.isArray(input) ? (input as readonly (string | NpySource)[]) : [input as string | NpySource];
  const sources: ReferenceInput[] = [];
  try {
    for (const one of list) {
      const source = await nodeSourceOf(one, { ...options, tailBytes: 1 });
      const path = pathOf(one);
      const url = path !== null ? resolve(path) : typeof one === 'string' && isHttpUrl(one) ? one : one instanceof URL ? one.href : null;
      sources.push({ source, url, own: source !== one });
    }
    return await referencesOfSources(sources, options);
  } finally {
    await closeOwn(sources);
  }
}
