/** Element strides of dense layouts, and the elements of a strided view gathered into C order: what torch.save views and reference sets share. */

/**
 * C-order (or, with `fortran`, F-order) element strides of a shape.
 */
export function denseStrides(shape: readonly number[], fortran: boolean): number[] {
  const out = new Array<number>(shape.length);
  let step = 1;
  for (let k = 0; k < shape.length; k++) {
    const axis = fortran ? k : shape.length - 1 - k;
    out[axis] = step;
    step *= shape[axis]!;
  }
  return out;
}

/**
 * The elements of a strided view, from the bytes of its extent (`span` starts at its first
 * element), into `out` in C order: an odometer over the axes, one element's bytes at a time.
 */
export function gather(span: Uint8Array, out: Uint8Array, shape: readonly number[], strides: readonly number[], itemsize: number): void {
  const size = shape.reduce((a, b) => a * b, 1);
  if (size === 0) return;
  const ndim = shape.length;
  const index = new Array<number>(ndim).fill(0);
  let from = 0;
  for (let i = 0; i < size; i++) {
    out.set(span.subarray(from * itemsize, (from + 1) * itemsize), i * itemsize);
    for (let k = ndim - 1; k >= 0; k--) {
      if (++index[k]! < shape[k]!) {
        from += strides[k]!;
        break;
      }
      from -= (shape[k]! - 1) * strides[k]!;
      index[k] = 0;
    }
  }
}
