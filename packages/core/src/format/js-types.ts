/**
 * The JavaScript values numpy's data becomes: the typed arrays that hold it and a complex number.
 * Types only, at the bottom of the format layer, so that the descr types above can name them.
 */
/** Every typed array an array's `data` can be. */
export type TypedArray =
  | Int8Array
  | Uint8Array
  | Uint8ClampedArray
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | Float32Array
  | Float64Array
  | BigInt64Array
  | BigUint64Array;

/** The constructors of {@link TypedArray}, typed loosely enough to take any ArrayBufferLike. */
export interface TypedArrayConstructor {
  new (length: number): TypedArray;
  new (buffer: ArrayBufferLike, byteOffset?: number, length?: number): TypedArray;
  readonly BYTES_PER_ELEMENT: number;
  readonly name: string;
}

/** Element data: a typed array for every fixed-size dtype; an array of JS values for object arrays. */
export type ArrayData = TypedArray | unknown[];

/** A complex element: real and imaginary parts. */
export interface Complex {
  re: number;
  im: number;
}
