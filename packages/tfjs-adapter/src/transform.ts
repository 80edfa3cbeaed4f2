/**
 * How an archive's arrays become one tfjs weight, as data (so a plan can be shown before anything is
 * read) with its inverse (so a save writes what the load read).
 */
import { NdArray, NpyError, parseDescr, toOrder, transpose } from '@npyts/core';
import { tensorValues } from './tensors.js';

/**
 * What is done to the archive's array(s) to make the weight:
 * - `copy`: nothing;
 * - `permute`: viewed with shape `view` (omitted: its own), its axes permuted (numpy's
 *   `transpose(a, axes)`), then read with shape `to` (omitted: as permuted);
 * - `sum`: the arrays added (an LSTM's two biases); saving gives the first the sum and the others zeros;
 * - `tile`: the array repeated along leading axes to `to` (a PReLU's per-channel slopes where tfjs holds
 *   one per position); saving takes one row back, and refuses rows that differ.
 */
export type Transform =
  | { readonly kind: 'copy' }
  | { readonly kind: 'permute'; readonly axes: readonly number[]; readonly view?: readonly number[]; readonly to?: readonly number[] }
  | { readonly kind: 'sum' }
  | { readonly kind: 'tile'; readonly to: readonly number[] };

/** The transform in words, for a plan shown to a person. */
export function describeTransform(t: Transform): string {
  switch (t.kind) {
    case 'copy':
      return 'as is';
    case 'sum':
      return 'summed';
    case 'tile':
      return `repeated to [${t.to}]`;
    case 'permute': {
      const view = t.view ? `viewed as [${t.view}], ` : '';
      const to = t.to ? `, read as [${t.to}]` : '';
      return `${view}axes permuted (${t.axes})${to}`;
    }
  }
}

const size = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

/** The same values, row-major, with another shape of the same size. */
export function reshaped(array: NdArray, shape: readonly number[]): NdArray {
  if (size(shape) !== array.size) throw new NpyError('WEIGHT_MISMATCH', `an array of shape [${array.shape}] cannot be viewed as [${shape}]`);
  const c = toOrder(array, 'C');
  return new NdArray(c.dtype, [...shape], c.data);
}

function permuted(array: NdArray, axes: readonly number[], view?: readonly number[], to?: readonly number[]): NdArray {
  const p = toOrder(transpose(view ? reshaped(array, view) : array, [...axes]), 'C');
  return to ? reshaped(p, to) : p;
}

/** The shape a transform makes from the arrays' shapes (null: it cannot apply to them). */
export function transformedShape(t: Transform, shapes: readonly (readonly number[])[]): number[] | null {
  const [first] = shapes;
  if (!first) return null;
  switch (t.kind) {
    case 'copy':
      return [...first];
    case 'sum':
      return shapes.every((s) => s.join() === first.join()) ? [...first] : null;
    // One value for all, or one per channel (the last axis).
    case 'tile':
      return first.length === 1 && (first[0] === 1 || first[0] === t.to[t.to.length - 1]) ? [...t.to] : null;
    case 'permute': {
      const view = t.view ?? first;
      if (size(view) !== size(first) || t.axes.length !== view.length) return null;
      return t.to ? [...t.to] : t.axes.map((a) => view[a]!);
    }
  }
}

/** Float values of any float array (the sums and tiles are float work). */
function floats(array: NdArray): Float32Array {
  const v = tensorValues(array);
  if (v.dtype !== 'float32') throw new NpyError('WEIGHT_MISMATCH', `a ${array.dtype.name} array where float weights are summed or repeated`);
  return v.values;
}

/** The weight from the archive's arrays. */
export function applyTransform(t: Transform, arrays: readonly NdArray[]): NdArray {
  const [first] = arrays;
  if (!first) throw new NpyError('WEIGHT_MISMATCH', 'a transform of no arrays');
  switch (t.kind) {
    case 'copy':
      return first;
    case 'permute':
      return permuted(first, t.axes, t.view, t.to);
    case 'sum': {
      // In float64, rounded once: the sum PyTorch adds in float32 step by step differs by at most an ulp.
      const out = new Float32Array(first.size);
      const parts = arrays.map(floats);
      for (let i = 0; i < out.length; i++) {
        let s = 0;
        for (const p of parts) s += p[i]!;
        out[i] = s;
      }
      return new NdArray(parseDescr('<f4'), [...first.shape], out);
    }
    case 'tile': {
      const src = floats(first);
      const out = new Float32Array(size(t.to));
      for (let i = 0; i < out.length; i++) out[i] = src[i % src.length]!;
      return new NdArray(parseDescr('<f4'), [...t.to], out);
    }
  }
}

/**
 * The archive's arrays from the weight: the inverse of {@link applyTransform}, given the archive
 * shapes to make (`shapes`, one per key).
 */
export function invertTransform(t: Transform, weight: NdArray, shapes: readonly (readonly number[])[], what: string): NdArray[] {
  switch (t.kind) {
    case 'copy':
      return [weight];
    case 'permute': {
      const view = t.view ?? shapes[0]!;
      const inverse = new Array<number>(t.axes.length);
      t.axes.forEach((a, i) => {
        inverse[a] = i;
      });
      const out = permuted(
        weight,
        inverse,
        t.axes.map((a) => view[a]!),
      );
      return [reshaped(out, shapes[0]!)];
    }
    case 'sum': {
      // The documented split: the first array holds the sum, the others zeros.
      const zeros = new NdArray(parseDescr('<f4'), [...weight.shape], new Float32Array(weight.size));
      return [weight, ...shapes.slice(1).map(() => zeros)];
    }
    case 'tile': {
      const src = floats(weight);
      const n = size(shapes[0]!);
      for (let i = n; i < src.length; i++) {
        if (src[i] !== src[i % n])
          throw new NpyError(
            'WEIGHT_MISMATCH',
            `${what}: its values differ between positions (index ${i}), so they are not one PyTorch parameter of shape [${shapes[0]}]`,
          );
      }
      return [new NdArray(parseDescr('<f4'), [...shapes[0]!], src.slice(0, n))];
    }
  }
}
