/** numpy's object arrays of arrays or strings to and from ragged arrays. */
import type { NdArray } from '../../array/ndarray.js';
import type { AsyncOptions } from '../../io/handles.js';
import type { SaveRaggedOptions } from '../../ragged/build.js';
import { gridOption, objectItems } from '../../ragged/objects.js';
import { saveRagged, saveRaggedSync } from './save.js';

/**
 * numpy's representation of ragged data — an object array (of any shape) of arrays or strings
 * (StringDType arrays decode to one) — written as a ragged array whose index has the object array's shape.
 * @example
 * saveObjectArrayAsRaggedSync('tokens.npy', loadNpySync('objects.npy', { allowPickle: true }));
 */
export function saveObjectArrayAsRaggedSync(path: string, objects: NdArray, options: SaveRaggedOptions = {}): void {
  saveRaggedSync(path, objectItems(objects), { ...options, ...gridOption(objects) });
}

/**
 * {@link saveObjectArrayAsRaggedSync}, off the event loop.
 * @example
 * await saveObjectArrayAsRagged('tokens.npy', await loadNpy('objects.npy', { allowPickle: true }));
 */
export function saveObjectArrayAsRagged(path: string, objects: NdArray, options: SaveRaggedOptions & AsyncOptions = {}): Promise<void> {
  return saveRagged(path, objectItems(objects), { ...options, ...gridOption(objects) });
}
