/** numpy's object arrays of arrays or strings as the elements of a ragged array, and back. */
import { parseDescr, shapeRepr } from '../format/dtype.js';
import { NpyError } from '../errors.js';
import { NdArray } from '../array/ndarray.js';
import { toOrder } from '../array/order.js';
import { decodeUtf8, type RaggedElement } from './convention.js';
import type { Input } from './build.js';

/**
 * The layout option that keeps an N-d object array's shape as the index's (1-d needs none, so any layout applies).
 * @example
 * saveRaggedSync(path, objectItems(objects), gridOption(objects));
 */
export const gridOption = (objects: NdArray): { shape?: number[] } => (objects.ndim === 1 ? {} : { shape: objects.shape });

/**
 * The elements of an object array of arrays or strings in C order (bytes are UTF-8 text).
 * @example
 * const items = objectItems(loadNpySync('objects.npy', { allowPickle: true }));
 */
export function objectItems(objects: NdArray): Input[] {
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
export function raggedToObjectArray(handle: {
  readonly indexShape: number[];
  readonly length: number;
  slice(from: number, to: number): RaggedElement[];
}): NdArray {
  const all = handle.slice(0, handle.length);
  return new NdArray(parseDescr('|O'), handle.indexShape, all);
}
