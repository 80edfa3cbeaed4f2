/** Model weights and the names they have in archives: the vocabulary the plans, loads and saves share. */
import type * as tf from '@tensorflow/tfjs-core';
import { NpyError, transpose, weightsOfArchive, type NdArray } from '@npyts/core';
import type { NpzArchive } from '@npyts/core';

/**
 * What a weight must offer. tfjs-layers' `LayerVariable` (from `model.weights`, with nullable shape
 * entries and the `originalName` tfjs gives it before making names unique) and `tf.Variable` both fit.
 */
export interface WeightLike {
  readonly name: string;
  /** tfjs-layers' name without the `_1` suffixes it adds when a model is built twice: matched first. */
  readonly originalName?: string;
  readonly shape: readonly (number | null)[];
  readonly dtype: string;
  assign?(value: tf.Tensor): void;
  write?(value: tf.Tensor): unknown;
  read?(): tf.Tensor;
}

/** A tfjs-layers model, or anything else that lists its weights. */
export interface ModelLike {
  readonly weights: readonly WeightLike[];
}

/** A model, a list of weights (`model.weights`, tf.Variables), or weights by name. */
export type Weights = ModelLike | readonly WeightLike[] | Readonly<Record<string, WeightLike>>;

/**
 * Where a weight's values are in an archive: its key, and optionally an axis permutation from the
 * archive's layout to the model's (numpy's `transpose(a, axes)`; `true` reverses the axes). PyTorch's
 * `fc1.weight` of shape `(out, in)` is `{ key: 'fc1.weight', transpose: true }` for a tfjs `dense/kernel`.
 */
export type WeightKey = string | { readonly key: string; readonly transpose?: boolean | readonly number[] };

/** Names from the model's side to the archive's: a table, or a function of the weight's name. */
export type WeightNames = Readonly<Record<string, WeightKey>> | ((weightName: string) => WeightKey);

/** The weights of any accepted form, as a list. */
export function weightList(weights: Weights): readonly WeightLike[] {
  if (isWeightArray(weights)) return weights;
  if ('weights' in weights && Array.isArray(weights.weights)) return (weights as ModelLike).weights;
  return Object.values(weights as Record<string, WeightLike>);
}

function isWeightArray(weights: Weights): weights is readonly WeightLike[] {
  return Array.isArray(weights);
}

/** The name a weight is saved under: tfjs-layers' `originalName`, else its name without `:0`. */
export function savedName(w: WeightLike): string {
  return w.originalName ?? w.name.replace(/:\d+$/, '');
}

/** A key and the permutation that takes the archive's array to the model's layout (null: none). */
export interface ResolvedKey {
  key: string;
  axes: number[] | null;
}

/** The permutation a {@link WeightKey} asks for, on an array of `rank` axes. */
export function axesOf(spec: WeightKey, rank: number): number[] | null {
  if (typeof spec === 'string' || !spec.transpose) return null;
  if (spec.transpose === true) return Array.from({ length: rank }, (_, i) => rank - 1 - i);
  return [...spec.transpose];
}

/** The inverse permutation: what takes the model's layout back to the archive's. */
export function inverseAxes(axes: readonly number[]): number[] {
  const out = new Array<number>(axes.length);
  axes.forEach((a, i) => {
    out[a] = i;
  });
  return out;
}

/** The key spec a name maps to through `names`, or null when the table does not mention it. */
export function mappedKey(names: WeightNames | undefined, name: string): WeightKey | null {
  if (typeof names === 'function') return names(name);
  return names && Object.hasOwn(names, name) ? names[name]! : null;
}

/** An array in the model's layout: the archive's, permuted when the key asks for it. */
export function inModelLayout(array: NdArray, spec: WeightKey): NdArray {
  const axes = axesOf(spec, array.shape.length);
  return axes ? transpose(array, axes) : array;
}

/** "1 weight mismatch:" / "3 weight mismatches:" and the list, as one error. */
export function mismatchError(problems: readonly string[], notes: readonly string[] = []): NpyError {
  // The header counts the problems listed; a problem's own lines (a list of layers) are indented
  // under it, and notes (how to fix several at once) follow, uncounted.
  const listed = problems.map((p) => p.replace(/\n/g, '\n    '));
  return new NpyError(
    'WEIGHT_MISMATCH',
    `${problems.length} weight mismatch${problems.length === 1 ? '' : 'es'}:\n  ${listed.join('\n  ')}${notes.map((n) => `\n${n}`).join('')}`,
  );
}

/** The archive's members that are arrays (keys), without the members named in `except` (a key that names two members is refused). */
export function arrayKeys(archive: NpzArchive, except: ReadonlySet<string> = new Set()): string[] {
  return weightsOfArchive(archive).names.filter((k) => !except.has(`${k}.npy`));
}

/** Array names, for a message: " (the archive has: a, b, c)" (at most 20). */
export function listKeys(keys: readonly string[]): string {
  if (!keys.length) return '';
  return ` (the archive has: ${keys.slice(0, 20).join(', ')}${keys.length > 20 ? `, and ${keys.length - 20} more` : ''})`;
}

/**
 * The folder of the archive members that hold reference inputs and outputs, not weights.
 * @example
 * np.savez('weights.npz', **state, **{'check/input': x.numpy(), 'check/output': y.numpy()})   # Python
 */
export const CHECK_PREFIX = 'check/';
