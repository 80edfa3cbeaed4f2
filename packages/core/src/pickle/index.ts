/**
 * `@npyts/core/pickle` — a safe reader and writer for the pickles numpy stores object arrays in.
 *
 * The reader is a pickle virtual machine over the opcodes of protocols 0–5. It never imports or
 * calls anything: GLOBAL/STACK_GLOBAL resolve only names from a fixed allowlist of constructors
 * that it rebuilds as plain data (numpy arrays, dtypes and scalars, and the builtins and standard
 * library types object arrays carry); any other name is an error that names it. Memo size, MARK
 * depth, container nesting and allocated bytes are bounded, and every malformed input ends in an
 * NpyError.
 * @module @npyts/core/pickle
 */
import { NdArray } from '../array/ndarray.js';
import { encodeHeader, type NpyHeader } from '../format/header.js';
import type { ObjectArrayCodec, UnpickleLimits } from '../npy.js';
import { bad } from './vm-values.js';
import { UNPICKLE_KEYS, unpickle, type UnpickleOptions } from './unpickler.js';
import { pickOptions } from '../options.js';
import { isFortran, pickle } from './pickler.js';

export * from './python-values.js';
export { unpickle, pickle, type UnpickleOptions };
export type { ObjectArrayCodec, UnpickleLimits };

/**
 * The codec decodeNpy/encodeNpy take as `{ pickle: pickleCodec }` to read and write object arrays.
 * @example
 * decodeNpy(bytes, { pickle: pickleCodec });   // object arrays, decoded without running code
 */
export const pickleCodec: ObjectArrayCodec = {
  decode(bytes: Uint8Array, header: NpyHeader, options: UnpickleOptions = {}): NdArray {
    // The reader's options (a decode's, or a load's) hold more than the unpickler's limits.
    const value = unpickle(bytes.subarray(header.dataOffset), pickOptions(options, UNPICKLE_KEYS));
    if (!(value instanceof NdArray)) bad('the pickle after an object-array header does not hold an array');
    const expected = header.shape.join(',');
    if (value.shape.join(',') !== expected) bad(`the pickled array has shape (${value.shape.join(', ')}), the header says (${expected})`);
    return value;
  },
  encode(array: NdArray, version?: 1 | 2 | 3): { header: Uint8Array; body: Uint8Array } {
    const header = encodeHeader(array.dtype, array.shape, isFortran(array), version);
    return { header, body: pickle(array) };
  },
};

/**
 * {@link pickleCodec}, writing an object array of strings as numpy 2's `StringDType` array (numpy
 * pickles those too, with the text as a list of str); numpy 1.x cannot load the result.
 * @example
 * encodeNpy(new NdArray(parseDescr('|O'), [2], ['a', 'bc']), { pickle: stringDTypeCodec });   // np.load gives dtype StringDType()
 */
export const stringDTypeCodec: ObjectArrayCodec = {
  decode: pickleCodec.decode,
  encode(array: NdArray, version?: 1 | 2 | 3): { header: Uint8Array; body: Uint8Array } {
    if (array.dtype.kind !== 'O' || !(array.data as unknown[]).every((v) => typeof v === 'string')) bad('a StringDType array holds strings only');
    const header = encodeHeader(array.dtype, array.shape, isFortran(array), version);
    return { header, body: pickle(array, { stringDType: true }) };
  },
};
