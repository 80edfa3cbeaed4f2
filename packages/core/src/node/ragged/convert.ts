/** numpy's object arrays of arrays or strings to and from ragged arrays. */
import type { NdArray } from '../../array/ndarray.js';
import type { AsyncOptions } from '../../io/handles.js';
import { SAVE_RAGGED_KEYS, type SaveRaggedOptions } from '../../ragged/build.js';
import { checkOptions, knownKeys } from '../../options.js';
import { gridOption, objectItems } from '../../ragged/objects.js';
import { saveRagged, saveRaggedSync } from './save.js';

const SAVE_SYNC_KEYS = knownKeys<SaveRaggedOptions>(SAVE_RAGGED_KEYS);
const SAVE_KEYS = knownKeys<SaveRaggedOptions & AsyncOptions>({ ...SAVE_RAGGED_KEYS, signal: true });

/**
 * numpy's representation of ragged data — an object array (of any shape) of arrays or strings
 * (StringDType arrays decode to one) — written as a ragged array whose index has the object array's shape.
 * @example
 * saveObjectArrayAsRaggedSync('tokens.npy', loadNpySync('objects.npy', { allowPickle: true }));
 */
export function saveObjectArrayAsRaggedSync(path: string, objects: NdArray, options: SaveRaggedOptions = {}): void {
  checkOptions('saveObjectArrayAsRaggedSync', options, SAVE_SYNC_KEYS);
  saveRaggedSync(path, objectItems(objects), { ...options, ...gridOption(objects) });
}

/**
 * {@link saveObjectArrayAsRaggedSync}, off the event loop.
 * @example
 * await saveObjectArrayAsRagged('tokens.npy', await loadNpy('objects.npy', { allowPickle: true }));
 */
export function saveObjectArrayAsRagged(path: string, objects: NdArray, options: SaveRaggedOptions & AsyncOptions = {}): Promise<void> {
  checkOptions('saveObjectArrayAsRagged', options, SAVE_KEYS);
  return saveRagged(path, objectItems(objects), { ...options, ...gridOption(objects) });
}
