/** The in-memory array: dtype, shape, memory order and element data. */
import { allocateBuffer } from './memory.js';
import { DType, parseDescr, shapeRepr, shapeSize } from './dtype.js';
import { readItem, type Scalar } from './elements.js';
import { NpyError } from './errors.js';
import { storageOf, type ArrayData } from './storage.js';

export type Order = 'C' | 'F';

/**
 * An n-dimensional array. `data` holds the elements in `order` (row-major 'C' or column-major 'F')
 * in native byte order, as described by {@link storageOf}; `dtype` keeps the byte order the
 * array is written with.
 */
export class NdArray<T extends ArrayData = ArrayData> {
  readonly dtype: DType;
  readonly shape: number[];
  readonly order: Order;
  readonly data: T;

  constructor(dtype: DType, shape: readonly number[], data: T, order: Order = 'C') {
    for (const d of shape) {
      if (!Number.isSafeInteger(d) || d < 0) throw new NpyError('BAD_SHAPE', `invalid shape ${shapeRepr(shape)}`);
    }
    const size = shapeSize(shape);
    const expected = Array.isArray(data) ? size : size * storageOf(dtype).unitsPerItem;
    if (data.length !== expected) {
      throw new NpyError('BAD_ARRAY', `data has ${data.length} elements but shape ${shapeRepr(shape)} of ${dtype.str} needs ${expected}`);
    }
    if (order !== 'C' && order !== 'F') throw new NpyError('BAD_ARRAY', `order must be 'C' or 'F', not ${JSON.stringify(order)}`);
    this.dtype = dtype;
    this.shape = [...shape];
    this.order = order;
    this.data = data;
  }

  get ndim(): number {
    return this.shape.length;
  }

  /** Number of elements. */
  get size(): number {
    return shapeSize(this.shape);
  }

  /** Element strides in items for this array's memory order. */
  get strides(): number[] {
    return orderStrides(this.shape, this.order);
  }

  /** Memory position (in items) of a multi-index. */
  offsetOf(index: readonly number[]): number {
    if (index.length !== this.shape.length) {
      throw new NpyError('BAD_ARRAY', `index has ${index.length} axes, the array has ${this.shape.length}`);
    }
    const strides = this.strides;
    let p = 0;
    for (let a = 0; a < index.length; a++) {
      const i = index[a]!;
      if (!Number.isInteger(i) || i < 0 || i >= this.shape[a]!) {
        throw new NpyError('BAD_ARRAY', `index ${i} is out of bounds for axis ${a} with size ${this.shape[a]}`);
      }
      p += i * strides[a]!;
    }
    return p;
  }

  /** The element at a multi-index, as a JS value (see {@link Scalar}). */
  get(...index: number[]): Scalar {
    return readItem(this.dtype, this.data, this.offsetOf(index));
  }

  /** Nested arrays in logical (C) order, like numpy's `tolist()`; a bare value for 0-d. */
  toList(): unknown {
    const strides = this.strides;
    const walk = (axis: number, pos: number): unknown => {
      if (axis === this.shape.length) return readItem(this.dtype, this.data, pos);
      const out = new Array(this.shape[axis]!);
      for (let i = 0; i < out.length; i++) out[i] = walk(axis + 1, pos + i * strides[axis]!);
      return out;
    };
    return walk(0, 0);
  }
}

/** Item strides of a contiguous array of this shape in the given order. */
export function orderStrides(shape: readonly number[], order: Order): number[] {
  const n = shape.length;
  const strides = new Array<number>(n);
  let s = 1;
  if (order === 'C') {
    for (let a = n - 1; a >= 0; a--) { strides[a] = s; s *= shape[a]!; }
  } else {
    for (let a = 0; a < n; a++) { strides[a] = s; s *= shape[a]!; }
  }
  return strides;
}

/** True when C and F order lay the elements out identically (at most one axis longer than 1, or empty). */
export function isOrderFree(shape: readonly number[]): boolean {
  return shape.includes(0) || shape.filter((d) => d > 1).length <= 1;
}

/**
 * A zero-filled array of the given dtype and shape. With `shared`, its memory is a
 * SharedArrayBuffer that worker_threads can fill in place (post `array.data.buffer` to them).
 */
export function createArray(dtype: DType | string, shape: readonly number[], options: { order?: Order; shared?: boolean } = {}): NdArray {
  const dt = parseDescr(dtype);
  const { ctor, unitsPerItem } = storageOf(dt);
  const units = shapeSize(shape) * unitsPerItem;
  const bytes = units * ctor.BYTES_PER_ELEMENT;
  const buffer = allocateBuffer(bytes, options.shared);
  return new NdArray(dt, shape, new ctor(buffer, 0, units), options.order ?? 'C');
}
