/** numpy's object arrays of arrays or strings to and from ragged arrays. */
import { parseDescr, shapeRepr } from '../../format/dtype.js';
import { NpyError } from '../../errors.js';
import { NdArray } from '../../array/ndarray.js';
import type { AsyncOptions } from '../../io/handles.js';
import { toOrder } from '../../array/order.js';
import { decodeUtf8 } from '../../ragged/convention.js';
import type { SaveRaggedOptions } from '../../ragged/build.js';
import type { Input } from '../../ragged/build.js';
import type { RaggedHandle } from './read.js';
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

/** An N-d object array keeps its shape as the index's shape (1-d needs none, so any layout applies). */
const gridOption = (objects: NdArray): { shape?: number[] } => (objects.ndim === 1 ? {} : { shape: objects.shape });

/** The elements of an object array of arrays or strings in C order (bytes are UTF-8 text). */
function objectItems(objects: NdArray): Input[] {
  if (objects.dtype.kind !== 'O') {
    throw new NpyError('DTYPE_MISMATCH', `only object arrays convert to a ragged array; this is ${objects.dtype.str} of shape ${shapeRepr(objects.shape)}`);
  }
  return (toOrder(objects, 'C').data as unknown[]).map((v, i) => {
    if (typeof v === 'string' || v instanceof NdArray) return v as Input;
    if (v instanceof Uint8Array) return decodeUtf8(v) as Input;
    throw new NpyError('BAD_VALUE', `object array element ${i} is neither an array nor a string`);
  });
}

/**
 * A ragged array as numpy's object array of the index's shape (arrays, strings, or lists of them), e.g. to write with the pickle codec.
 * @example
 * const objects = raggedToObjectArray(openRaggedSync('words.npy'));   // an '|O' NdArray
 */
export function raggedToObjectArray(handle: RaggedHandle): NdArray {
  const all = handle.slice(0, handle.length);
  return new NdArray(parseDescr('|O'), handle.indexShape, all);
}
