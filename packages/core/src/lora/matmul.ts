/**
 * The LoRA delta's matrix product, `left (rows × inner) @ right (inner × cols)` given as `left` and
 * `rightT` (right transposed: cols × inner, so that both operands of a sum are read in order), for an
 * inner size of a LoRA rank (a few to a few hundred). Each sum of products is taken in float64 (exact
 * enough that its rounding to float32 is PEFT's float32 matmul's to within an ulp), then written times
 * `scaling`.
 *
 * The kernel keeps a block of 4 rows × 2 columns of sums in registers over the whole inner loop: 6
 * loads per 8 multiply-adds and no stores until the sums are done (a row-by-row pass over the output
 * loads and stores its running sums once per few ranks): about twice as fast in V8.
 */

/** A sum rounded as {@link matmulInto} rounds it, times the scaling. */
const finish = (s: number, scaling: number, toFloat32: boolean): number => (toFloat32 ? Math.fround(s) : s) * scaling;

/**
 * `out[r·cols + c] = round(Σₖ left[r·inner + k] · rightT[c·inner + k]) · scaling`, where `round` is
 * `Math.fround` when `toFloat32` (the product is then rounded once more by the store into a
 * Float32Array) and the identity otherwise.
 * @internal
 */
export function matmulInto(
  left: Float64Array,
  rightT: Float64Array,
  rows: number,
  inner: number,
  cols: number,
  out: Float32Array | Float64Array,
  scaling: number,
  toFloat32: boolean,
): void {
  const rt = rightT;
  let r = 0;
  for (; r + 4 <= rows; r += 4) {
    const a0 = r * inner;
    const a1 = a0 + inner;
    const a2 = a1 + inner;
    const a3 = a2 + inner;
    const o0 = r * cols;
    const o1 = o0 + cols;
    const o2 = o1 + cols;
    const o3 = o2 + cols;
    let c = 0;
    for (; c + 2 <= cols; c += 2) {
      const b0 = c * inner;
      const b1 = b0 + inner;
      let s00 = 0;
      let s01 = 0;
      let s10 = 0;
      let s11 = 0;
      let s20 = 0;
      let s21 = 0;
      let s30 = 0;
      let s31 = 0;
      for (let k = 0; k < inner; k++) {
        const r0 = rt[b0 + k]!;
        const r1 = rt[b1 + k]!;
        const l0 = left[a0 + k]!;
        const l1 = left[a1 + k]!;
        const l2 = left[a2 + k]!;
        const l3 = left[a3 + k]!;
        s00 += l0 * r0;
        s01 += l0 * r1;
        s10 += l1 * r0;
        s11 += l1 * r1;
        s20 += l2 * r0;
        s21 += l2 * r1;
        s30 += l3 * r0;
        s31 += l3 * r1;
      }
      out[o0 + c] = finish(s00, scaling, toFloat32);
      out[o0 + c + 1] = finish(s01, scaling, toFloat32);
      out[o1 + c] = finish(s10, scaling, toFloat32);
      out[o1 + c + 1] = finish(s11, scaling, toFloat32);
      out[o2 + c] = finish(s20, scaling, toFloat32);
      out[o2 + c + 1] = finish(s21, scaling, toFloat32);
      out[o3 + c] = finish(s30, scaling, toFloat32);
      out[o3 + c + 1] = finish(s31, scaling, toFloat32);
    }
    // An odd last column.
    for (; c < cols; c++) for (let i = r; i < r + 4; i++) out[i * cols + c] = finish(dot(left, i * inner, rt, c * inner, inner), scaling, toFloat32);
  }
  // The last rows (fewer than 4).
  for (; r < rows; r++) for (let c = 0; c < cols; c++) out[r * cols + c] = finish(dot(left, r * inner, rt, c * inner, inner), scaling, toFloat32);
}

/** Σₖ x[i + k] · y[j + k] for k < n. */
function dot(x: Float64Array, i: number, y: Float64Array, j: number, n: number): number {
  let s = 0;
  for (let k = 0; k < n; k++) s += x[i + k]! * y[j + k]!;
  return s;
}
