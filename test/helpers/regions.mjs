// Arrays of one region of a larger array, for tests that write arrays in parts: the values are a
// function of each element's index in the whole array.
import { createArray } from '@npyts/core';

/**
 * The region `{ start, count }` of an array of `dtype` whose element at index `[i, j, …]` is
 * `valueAt([i, j, …])`, as an array of its own.
 */
export function regionOf(dtype, region, valueAt) {
  const a = createArray(dtype, region.count);
  const n = region.count.reduce((x, y) => x * y, 1);
  const strides = region.count.map((_, k) => region.count.slice(k + 1).reduce((x, y) => x * y, 1));
  for (let i = 0; i < n; i++) {
    const local = region.count.map((c, k) => Math.floor(i / strides[k]) % c);
    a.set(local, valueAt(local.map((v, k) => v + region.start[k])));
  }
  return a;
}
