/**
 * How close computed values are to a reference's, under one rule that every model check (the tfjs
 * and ONNX Runtime adapters) applies: |got − want| ≤ atol + rtol·|want|, atol defaulting to rtol
 * times the reference's scale (its largest finite magnitude: one inf would make it infinite and
 * accept anything, one NaN would refuse everything), and a non-finite reference matched exactly.
 */

/** The element that fails the tolerance worst (or the first non-finite one that differs). */
export interface CloseFailure {
  /** Its index in the array's shape: [0, 3, 1]. */
  readonly index: number[];
  readonly got: number;
  readonly want: number;
  /** |got − want| (NaN where either is NaN). */
  readonly diff: number;
  /** What the tolerance allows at this element. */
  readonly allowed: number;
  /** The reference is inf or NaN here, and is matched exactly. */
  readonly nonFinite: boolean;
}

/** What {@link closeness} found. */
export interface Closeness {
  /** The largest |got − want| over finite references (Infinity where one is NaN). */
  readonly abs: number;
  /** The largest |got − want| / |want| over finite non-zero references. */
  readonly rel: number;
  /** How many finite reference values were compared. */
  readonly compared: number;
  /** The reference's largest finite magnitude. */
  readonly scale: number;
  readonly rtol: number;
  readonly atol: number;
  /** null where every element agrees. */
  readonly failure: CloseFailure | null;
}

/**
 * The index of flat position i (C order) in a shape, for messages.
 * @example
 * indexInShape(7, [2, 3, 2]);   // [1, 0, 1]
 */
export function indexInShape(i: number, shape: readonly number[]): number[] {
  const out = new Array<number>(shape.length);
  for (let k = shape.length - 1; k >= 0; k--) {
    out[k] = i % shape[k]!;
    i = Math.floor(i / shape[k]!);
  }
  return out;
}

/**
 * `got` against `want` (C order, of `shape`) within `rtol` and `atol` (default rtol × scale).
 * @example
 * const c = closeness(tfjsValues, referenceValues, [2, 3], 3e-5);
 * if (c.failure) console.log(c.failure.index, c.failure.diff, c.failure.allowed);
 */
export function closeness(got: ArrayLike<number>, want: ArrayLike<number>, shape: readonly number[], rtol: number, atol?: number): Closeness {
  let scale = 0;
  for (let i = 0; i < want.length; i++) if (Number.isFinite(want[i]!)) scale = Math.max(scale, Math.abs(want[i]!));
  const tol = atol ?? rtol * scale;
  let abs = 0;
  let rel = 0;
  let compared = 0;
  let worst = -Infinity;
  let failure: CloseFailure | null = null;
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const g = got[i]!;
    if (!Number.isFinite(w)) {
      if (!(Object.is(g, w) || (Number.isNaN(g) && Number.isNaN(w))) && failure === null) {
        failure = { index: indexInShape(i, shape), got: g, want: w, diff: Math.abs(g - w), allowed: 0, nonFinite: true };
      }
      continue;
    }
    compared++;
    const d = Math.abs(g - w);
    const allowed = tol + rtol * Math.abs(w);
    abs = Math.max(abs, Number.isNaN(d) ? Infinity : d);
    if (w !== 0) rel = Math.max(rel, d / Math.abs(w));
    const excess = Number.isNaN(d) ? Infinity : d - allowed;
    // A finite element over the tolerance outranks a non-finite mismatch: it says by how much.
    if (!(d <= allowed) && excess > worst) {
      worst = excess;
      failure = { index: indexInShape(i, shape), got: g, want: w, diff: d, allowed, nonFinite: false };
    }
  }
  return { abs, rel, compared, scale, rtol, atol: tol, failure };
}
