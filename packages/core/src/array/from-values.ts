/** Arrays built from plain JS values, like `np.array(values, dtype)`. */
import { parseDescr, shapeSize, type DType } from '../format/dtype.js';
import { MAX_DIMS } from '../format/header.js';
import type { DescrInput, InputOf, Nested } from '../format/descr-types.js';
import { NdArray, type Order } from './ndarray.js';
import { toOrder } from './order.js';
import { bytesToData } from './layout.js';
import { fail, writeValue } from './write-value.js';
import { checkOptions, knownKeys } from '../options.js';

/** Options of {@link arrayFromValues}: the shape and order when the values are flat. */
export interface ValuesOptions {
  /** The shape, when `values` is flat (memory order); otherwise it is taken from the nesting. */
  shape?: number[];
  /** Memory order of the result (default 'C'). */
  order?: Order;
}

const VALUES_KEYS = knownKeys<ValuesOptions>({ shape: true, order: true });

/**
 * Flatten nested JS arrays in C order, returning the values and the shape found. As numpy, at most
 * MAX_DIMS levels are axes: deeper lists are the elements of an object array, and refused otherwise.
 */
function flattenNested(values: unknown, objects: boolean): { flat: unknown[]; shape: number[] } {
  const shape: number[] = [];
  let probe = values;
  while (Array.isArray(probe)) {
    if (shape.length === MAX_DIMS) {
      if (objects) break;
      fail(`lists nested deeper than ${MAX_DIMS} levels: numpy's arrays have at most ${MAX_DIMS} dimensions`);
    }
    shape.push(probe.length);
    probe = probe[0];
    if (probe === undefined) break;
  }
  const flat: unknown[] = [];
  const walk = (x: unknown, axis: number): void => {
    if (axis === shape.length) {
      flat.push(x);
      return;
    }
    if (!Array.isArray(x) || x.length !== shape[axis]) fail(`ragged nested lists: expected length ${shape[axis]} at axis ${axis}`);
    for (const y of x) walk(y, axis + 1);
  };
  walk(values, 0);
  return { flat, shape };
}

/**
 * Build an array from plain JS values, like `np.array(values, dtype)`: nested lists give the
 * shape (or pass `shape` with flat values in C order). Values follow the element rules of
 * {@link readItem}: numbers or bigints for integers, `{re, im}` (or a real number) for complex,
 * strings for `S`/`U`, objects for records.
 * @example
 * const a = arrayFromValues([[1, 2], [3, 4]], '<i4');   // shape [2, 2]
 */
export function arrayFromValues<S extends DescrInput>(values: Nested<InputOf<S>>, dtype: DType<S>, options?: ValuesOptions): NdArray<S>;
export function arrayFromValues<const S extends DescrInput>(values: Nested<InputOf<S>>, descr: S, options?: ValuesOptions): NdArray<S>;
export function arrayFromValues(values: unknown, dtypeSpec: DType | DescrInput, options: ValuesOptions = {}): NdArray {
  checkOptions('arrayFromValues', options, VALUES_KEYS);
  const dtype = parseDescr(dtypeSpec as DescrInput);
  let flat: unknown[];
  let shape: number[];
  if (options.shape) {
    shape = [...options.shape];
    flat = Array.isArray(values) ? values : [values];
    if (flat.length !== shapeSize(shape)) fail(`${flat.length} values do not fill shape (${shape.join(', ')})`);
  } else {
    ({ flat, shape } = flattenNested(values, dtype.kind === 'O'));
  }
  const raw = new Uint8Array(flat.length * dtype.itemsize);
  const view = new DataView(raw.buffer);
  for (let i = 0; i < flat.length; i++) writeValue(dtype, view, raw, i * dtype.itemsize, flat[i]);
  const data = bytesToData(dtype, raw.buffer, 0, flat.length);
  const c = new NdArray(dtype, shape, data, 'C');
  return options.order === 'F' ? toOrder(c, 'F') : c;
}

/**
 * The `<U` width numpy gives a list of strings: the most code points of any (at least 1), by a loop,
 * never a spread into `Math.max` (which overflows the stack past about 100 000 strings).
 * @example
 * unicodeWidth(['a', 'héllo', '']);   // 5
 */
export function unicodeWidth(strings: readonly string[]): number {
  let width = 1;
  for (const s of strings) {
    // Code units bound code points from above: count the points only where the units could exceed the width.
    if (s.length <= width) continue;
    let points = 0;
    for (const _ of s) points++;
    if (points > width) width = points;
  }
  return width;
}
