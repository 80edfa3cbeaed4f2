/** Narrow floats widened to float32 exactly: the one conversion the adapters and users share. */
import { NpyError } from '../errors.js';
import { parseDescr } from '../format/dtype.js';
import { familyOf } from '../format/dtype-cases.js';
import { float16ToNumber } from '../format/float-bits.js';
import { mlFloatsToFloat32 } from '../format/ml-floats.js';
import { NdArray } from './ndarray.js';

const FLOAT32 = parseDescr('<f4');

/**
 * The same values as float32, in the same shape and order. Every narrow float (float16, bfloat16,
 * float8_e4m3fn, float8_e5m2) is exactly a float32, so nothing is rounded; a float32 array is
 * returned as it is. Other dtypes are refused (`DTYPE_MISMATCH`): converting them may round.
 * @example
 * const w = toFloat32(await loadNpy('w.npy', { voidAs: 'bfloat16' }));   // NdArray<'<f4'>
 */
export function toFloat32(array: NdArray): NdArray<'<f4'> {
  const dt = array.dtype;
  const family = familyOf(dt);
  if (family === 'float' && dt.realBytes === 4) return array as NdArray<'<f4'>;
  if (family === 'float' && dt.realBytes === 2) {
    return new NdArray(FLOAT32, array.shape, Float32Array.from(array.data as Uint16Array, float16ToNumber), array.order);
  }
  if (family === 'mlfloat') {
    return new NdArray(FLOAT32, array.shape, mlFloatsToFloat32(dt.mlFloat!, array.data as Uint16Array | Uint8Array), array.order);
  }
  throw new NpyError('DTYPE_MISMATCH', `toFloat32 widens float16, bfloat16 and float8 exactly; ${dt.name} would be rounded or is not a float`);
}
