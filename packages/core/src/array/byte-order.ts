/** Re-labelling an array's byte order; only record bytes (kept raw) need moving. */
import type { DType } from '../format/dtype.js';
import { NdArray } from './ndarray.js';
import { copyBytes, swapBytes } from './memory.js';
import { storageOf } from './layout.js';

/** [offset, groupSize, count]: swap `count` groups of `groupSize` bytes starting at `offset` in each record. */
type SwapRun = [number, number, number];

/** `to` is `from` with another byte order (`withByteOrder`), so both have the same form and layout. */
function swapRuns(from: DType, to: DType, base: number, out: SwapRun[]): void {
  if (from.form === 'record' && to.form === 'record') {
    from.fields.forEach((f, i) => swapRuns(f.dtype, to.fields[i]!.dtype, base + f.offset, out));
  } else if (from.form === 'subarray' && to.form === 'subarray') {
    const n = from.subarraySize;
    const inner: SwapRun[] = [];
    swapRuns(from.subarray.base, to.subarray.base, 0, inner);
    for (let k = 0; k < n; k++) for (const [o, g, c] of inner) out.push([base + k * from.subarray.base.itemsize + o, g, c]);
  } else if (from.byteOrder !== to.byteOrder && from.byteOrder !== '|') {
    const { swapUnit } = storageOf(from);
    out.push([base, swapUnit, from.itemsize / swapUnit]);
  }
}

/**
 * The same values, to be written with another byte order ('<', '>' or '=' for native). For typed
 * data this only changes the dtype (the data is native in memory either way, and is swapped when
 * written); record data is held as stored bytes, so its multi-byte fields are swapped here, in a copy.
 * @example
 * const be = withByteOrder(a, '>');   // written big-endian by encodeNpy / saveNpy
 */
export function withByteOrder(array: NdArray, order: '<' | '>' | '='): NdArray {
  const dtype = array.dtype.withByteOrder(order);
  if (!array.dtype.fields) {
    // Typed data is native in memory whatever the dtype says: only the label changes.
    return new NdArray(dtype, array.shape, array.data, array.order);
  }
  const runs: SwapRun[] = [];
  swapRuns(array.dtype, dtype, 0, runs);
  const bytes = copyBytes(array.data as Uint8Array);
  const rec = dtype.itemsize;
  for (let r = 0; r < array.size; r++) {
    for (const [o, g, c] of runs) swapBytes(bytes.subarray(r * rec + o, r * rec + o + g * c), g);
  }
  return new NdArray(dtype, array.shape, bytes, array.order);
}
