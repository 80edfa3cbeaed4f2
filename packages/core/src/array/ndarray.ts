/** The in-memory array: dtype, shape, memory order and element data. */
import { allocateBuffer } from './memory.js';
import { type DType, parseDescr, shapeRepr, shapeSize } from '../format/dtype.js';
import { readItem } from './read-value.js';
import { familyOf } from '../format/dtype-cases.js';
import type { DescrInput, ElementOf, InputOf, KindFamilies, KindFamily, Nested, StorageOf } from '../format/descr-types.js';
import { NpyError } from '../errors.js';
import { bytesToData, storageOf } from './layout.js';
import { writeValue } from './write-value.js';
import type { ArrayData, TypedArray } from '../format/js-types.js';
import { checkOptions, knownKeys } from '../options.js';

/** Memory order of an array: `'C'` (row-major, last axis fastest) or `'F'` (column-major). */
export type Order = 'C' | 'F';

/**
 * An n-dimensional array. `data` holds the elements in `order` (row-major 'C' or column-major 'F')
 * in native byte order, as described by {@link storageOf}; `dtype` keeps the byte order the
 * array is written with.
 * @example
 * const a = new NdArray(parseDescr('<f4'), [2, 2], new Float32Array([1, 2, 3, 4]));
 * a.get(1, 0);   // 3
 */
export class NdArray<S extends DescrInput = DescrInput> {
  readonly dtype: DType<S>;
  readonly shape: number[];
  readonly order: Order;
  /** The elements in `order`, native byte order: the exact typed array of the descr (`Float32Array` for `'<f4'`). */
  readonly data: StorageOf<S>;

  constructor(dtype: DType<S>, shape: readonly number[], data: StorageOf<S>, order: Order = 'C') {
    for (const d of shape) {
      if (!Number.isSafeInteger(d) || d < 0) throw new NpyError('BAD_SHAPE', `invalid shape ${shapeRepr(shape)}`);
    }
    const size = shapeSize(shape);
    // Zero-size items make any element count fit in no bytes: the count itself must stay exact.
    if (!Number.isSafeInteger(size)) throw new NpyError('SIZE_OVERFLOW', `shape ${shapeRepr(shape)} has more than 2^53 elements`);
    const stored = data as ArrayData;
    const expected = Array.isArray(stored) ? size : size * storageOf(dtype).unitsPerItem;
    if (stored.length !== expected) {
      throw new NpyError('SHAPE_MISMATCH', `data has ${stored.length} elements but shape ${shapeRepr(shape)} of ${dtype.str} needs ${expected}`);
    }
    if (order !== 'C' && order !== 'F') throw new NpyError('BAD_OPTION', `order must be 'C' or 'F', not ${JSON.stringify(order)}`);
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

  /**
   * Narrow an array of a run-time dtype to a kind family: `if (a.is('float')) a.data` is a float
   * typed array and `a.get()` a number.
   * @example
   * const a = await loadNpy('x.npy');
   * if (a.is('int')) console.log(a.get(0));   // number | bigint
   */
  is<K extends KindFamily>(kind: K): this is NdArray<KindFamilies[K]> {
    return familyOf(this.dtype) === kind;
  }

  /** Memory position (in items) of a multi-index. */
  offsetOf(index: readonly number[]): number {
    if (index.length !== this.shape.length) {
      throw new NpyError('BAD_INDEX', `index has ${index.length} axes, the array has ${this.shape.length}`);
    }
    const strides = this.strides;
    let p = 0;
    for (let a = 0; a < index.length; a++) {
      const i = index[a]!;
      if (!Number.isInteger(i) || i < 0 || i >= this.shape[a]!) {
        throw new NpyError('BAD_INDEX', `index ${i} is out of bounds for axis ${a} with size ${this.shape[a]}`);
      }
      p += i * strides[a]!;
    }
    return p;
  }

  /** The element at a multi-index, as a JS value of the descr's element type ({@link ElementOf}). */
  get(...index: number[]): ElementOf<S> {
    return readItem(this.dtype, this.data as ArrayData, this.offsetOf(index)) as ElementOf<S>;
  }

  /**
   * Set the element at a multi-index (`a[i, j] = value` in numpy) from a JS value, by the rules of
   * `arrayFromValues`: a value its dtype cannot hold (an integer out of range, a string too long, a
   * fraction into an integer) is refused with `BAD_VALUE`, never wrapped; float16 and long double
   * round to nearest, as numpy's casts do.
   * @example
   * const a = createArray('<i4', [2, 2]);
   * a.set([1, 0], 7);
   * a.get(1, 0);   // 7
   */
  set(index: readonly number[], value: InputOf<S>): void {
    const at = this.offsetOf(index);
    if (familyOf(this.dtype) === 'object') {
      (this.data as unknown as unknown[])[at] = value;
      return;
    }
    const bytes = new Uint8Array(this.dtype.itemsize);
    writeValue(this.dtype, new DataView(bytes.buffer), bytes, 0, value);
    const units = bytesToData(this.dtype, bytes.buffer, 0, 1) as TypedArray;
    (this.data as TypedArray).set(units as never, at * units.length);
  }

  /** Nested arrays in logical (C) order, like numpy's `tolist()`; a bare value for 0-d. */
  toList(): Nested<ElementOf<S>> {
    const strides = this.strides;
    const walk = (axis: number, pos: number): Nested<ElementOf<S>> => {
      if (axis === this.shape.length) return readItem(this.dtype, this.data as ArrayData, pos) as ElementOf<S>;
      const out = new Array(this.shape[axis]!);
      for (let i = 0; i < out.length; i++) out[i] = walk(axis + 1, pos + i * strides[axis]!);
      return out;
    };
    return walk(0, 0);
  }
}

/**
 * Item strides of a contiguous array of this shape in the given order.
 * @example
 * orderStrides([2, 3], 'C');   // [3, 1]
 * orderStrides([2, 3], 'F');   // [1, 2]
 */
export function orderStrides(shape: readonly number[], order: Order): number[] {
  const n = shape.length;
  const strides = new Array<number>(n);
  let s = 1;
  if (order === 'C') {
    for (let a = n - 1; a >= 0; a--) {
      strides[a] = s;
      s *= shape[a]!;
    }
  } else {
    for (let a = 0; a < n; a++) {
      strides[a] = s;
      s *= shape[a]!;
    }
  }
  return strides;
}

/**
 * True when C and F order lay the elements out identically (at most one axis longer than 1, or empty).
 * @example
 * isOrderFree([1, 5]);   // true: C and F layouts coincide
 * isOrderFree([2, 3]);   // false
 */
export function isOrderFree(shape: readonly number[]): boolean {
  return shape.includes(0) || shape.filter((d) => d > 1).length <= 1;
}

/**
 * A zero-filled array of the given dtype and shape. With `shared`, its memory is a
 * SharedArrayBuffer that worker_threads can fill in place (post `array.data.buffer` to them).
 * @example
 * const a = createArray('<f8', [3, 4]);   // zero-filled NdArray<'<f8'>
 */
export function createArray<S extends DescrInput>(dtype: DType<S>, shape: readonly number[], options?: CreateArrayOptions): NdArray<S>;
export function createArray<const S extends DescrInput>(dtype: S, shape: readonly number[], options?: CreateArrayOptions): NdArray<S>;
export function createArray(dtype: DType | DescrInput, shape: readonly number[], options: CreateArrayOptions = {}): NdArray {
  checkOptions('createArray', options, CREATE_ARRAY_KEYS);
  const dt = parseDescr(dtype as DescrInput);
  if (dt.kind === 'O') return new NdArray(dt, shape, new Array<unknown>(shapeSize(shape)).fill(null), options.order ?? 'C');
  const { ctor, unitsPerItem } = storageOf(dt);
  const units = shapeSize(shape) * unitsPerItem;
  const bytes = units * ctor.BYTES_PER_ELEMENT;
  const buffer = allocateBuffer(bytes, options.shared);
  return new NdArray(dt, shape, new ctor(buffer, 0, units), options.order ?? 'C');
}

/** Options of {@link createArray}. */
export interface CreateArrayOptions {
  /** Memory order (default 'C'). */
  order?: Order;
  /** Place the data in a SharedArrayBuffer (for worker_threads). */
  shared?: boolean;
}

const CREATE_ARRAY_KEYS = knownKeys<CreateArrayOptions>({ order: true, shared: true });
