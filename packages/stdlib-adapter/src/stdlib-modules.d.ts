// @stdlib packages are CommonJS without an exports map: ESM needs their file paths, which carry no types.
declare module '@stdlib/ndarray/ctor/lib/index.js' {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const ndarray: (dtype: string, buffer: unknown, shape: number[], strides: number[], offset: number, order: 'row-major' | 'column-major') => any;
  export default ndarray;
}
declare module '@stdlib/array/complex64/lib/index.js' {
  const Complex64Array: new (buffer: ArrayBufferLike, byteOffset?: number, length?: number) => { readonly length: number; readonly buffer: ArrayBufferLike; readonly byteOffset: number };
  export default Complex64Array;
}
declare module '@stdlib/array/complex128/lib/index.js' {
  const Complex128Array: new (buffer: ArrayBufferLike, byteOffset?: number, length?: number) => { readonly length: number; readonly buffer: ArrayBufferLike; readonly byteOffset: number };
  export default Complex128Array;
}
declare module '@stdlib/array/bool/lib/index.js' {
  const BooleanArray: new (buffer: ArrayBufferLike, byteOffset?: number, length?: number) => { readonly length: number; readonly buffer: ArrayBufferLike; readonly byteOffset: number };
  export default BooleanArray;
}
declare module '@stdlib/array/float16/lib/index.js' {
  const Float16Array: new (buffer: ArrayBufferLike, byteOffset?: number, length?: number) => { readonly length: number; readonly buffer: ArrayBufferLike; readonly byteOffset: number };
  export default Float16Array;
}

