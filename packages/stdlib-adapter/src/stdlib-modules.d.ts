// @stdlib packages are CommonJS without an exports map: ESM needs their file paths, which carry no types.

/** stdlib's typed-array classes, built over existing memory (no copy). */
type StdlibArrayCtor = new (
  buffer: ArrayBufferLike,
  byteOffset?: number,
  length?: number,
) => {
  readonly length: number;
  readonly buffer: ArrayBufferLike;
  readonly byteOffset: number;
};

declare module '@stdlib/ndarray/ctor/lib/index.js' {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const ndarray: (dtype: string, buffer: unknown, shape: number[], strides: number[], offset: number, order: 'row-major' | 'column-major') => any;
  export default ndarray;
}
declare module '@stdlib/array/complex64/lib/index.js' {
  const C: StdlibArrayCtor;
  export default C;
}
declare module '@stdlib/array/complex128/lib/index.js' {
  const C: StdlibArrayCtor;
  export default C;
}
declare module '@stdlib/array/bool/lib/index.js' {
  const C: StdlibArrayCtor;
  export default C;
}
declare module '@stdlib/array/float16/lib/index.js' {
  const C: StdlibArrayCtor;
  export default C;
}
