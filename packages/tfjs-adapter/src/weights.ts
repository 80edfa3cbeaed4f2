/** Model weights and .npz archives: by name, with every mismatch reported at once. */
import * as tf from '@tensorflow/tfjs-core';
import { NpyError, encodeNpz, transpose, type NdArray, type NpzWriteOptions } from '@npyts/core';
import { fromTensor, toTensor, type ToTensorOptions } from './tensors.js';
import { inNode, nodeEntry, openArchive, readMember, type AnyArchive, type NpzSource, type SourceOptions } from './sources.js';

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

/** Options of {@link assignWeights}: name mapping and unused arrays. */
export interface AssignWeightsOptions extends ToTensorOptions, SourceOptions {
  /**
   * Map a weight's name to its array in the archive. Default: the weight's `originalName`, then its
   * name, then its name without a `:0` suffix (Keras' variable names).
   */
  names?: WeightNames;
  /** Accept archive arrays that no weight uses (default: refuse, they usually mean a naming mistake). */
  ignoreUnused?: boolean;
}

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
  axes.forEach((a, i) => { out[a] = i; });
  return out;
}

/** The key spec a name maps to through `names`, or null when the table does not mention it. */
export function mappedKey(names: WeightNames | undefined, name: string): WeightKey | null {
  if (typeof names === 'function') return names(name);
  return names && Object.prototype.hasOwnProperty.call(names, name) ? names[name]! : null;
}

/** An array in the model's layout: the archive's, permuted when the key asks for it. */
export function inModelLayout(array: NdArray, spec: WeightKey): NdArray {
  const axes = axesOf(spec, array.shape.length);
  return axes ? transpose(array, axes) : array;
}

/** "1 weight mismatch:" / "3 weight mismatches:" and the list, as one error. */
export function mismatchError(problems: readonly string[]): NpyError {
  return new NpyError('WEIGHT_MISMATCH', `${problems.length} weight mismatch${problems.length === 1 ? '' : 'es'}:\n  ${problems.join('\n  ')}`);
}

/** The archive's members that are arrays (keys), without the ones named in `except`. */
export function arrayKeys(archive: AnyArchive, except: ReadonlySet<string> = new Set()): string[] {
  return archive.entries.filter((e) => e.name.endsWith('.npy') && !except.has(e.name)).map((e) => e.name.slice(0, -4));
}

/**
 * Assign a .npz's arrays to model weights by name, checking the shape and dtype of every one;
 * every missing, extra or mis-shaped weight is reported together and nothing is assigned unless all match.
 * @example
 * await assignWeights(model, 'weights.npz');          // a tfjs-layers model, by originalName
 * await assignWeights(model, 'torch.npz', { names: { 'dense/kernel': { key: 'fc1.weight', transpose: true } } });
 */
export async function assignWeights(weights: Weights, source: NpzSource, options: AssignWeightsOptions = {}): Promise<void> {
  const [archive, opened] = await openArchive(source, options);
  try {
    await assignFrom(weightList(weights), archive, options);
  } finally {
    if (opened) await archive.close(); // an archive this call opened (a file handle in Node)
  }
}

async function assignFrom(list: readonly WeightLike[], archive: AnyArchive, options: AssignWeightsOptions): Promise<void> {
  const keyFor = (w: WeightLike): WeightKey | null => {
    const mapped = mappedKey(options.names, w.name) ?? (w.originalName !== undefined ? mappedKey(options.names, w.originalName) : null);
    if (mapped !== null) return archive.has(typeof mapped === 'string' ? mapped : mapped.key) ? mapped : null;
    return [w.originalName, w.name, w.name.replace(/:\d+$/, '')].find((k): k is string => k !== undefined && archive.has(k)) ?? null;
  };
  const problems: string[] = [];
  const planned: [WeightLike, tf.Tensor][] = [];
  const used = new Map<string, string>();
  for (const w of list) {
    const label = savedName(w); // dense/kernel, also when tfjs made the variable dense/kernel_1
    const spec = keyFor(w);
    if (spec === null) { problems.push(`${label}: no array for it in the archive`); continue; }
    const member = archive.entry(typeof spec === 'string' ? spec : spec.key).name;
    const other = used.get(member);
    if (other !== undefined) { problems.push(`${label}: its array ${member} is also taken by ${other}`); continue; }
    used.set(member, label);
    let t: tf.Tensor;
    try {
      t = toTensor(inModelLayout(await readMember(archive, member), spec), options);
    } catch (e) {
      problems.push(`${label}: ${(e as Error).message}`);
      continue;
    }
    if (t.shape.join(',') !== w.shape.join(',')) problems.push(`${label}: shape [${t.shape}] in the archive, [${w.shape}] in the model`);
    else if (t.dtype !== w.dtype) problems.push(`${label}: dtype ${t.dtype} in the archive, ${w.dtype} in the model`);
    else { planned.push([w, t]); continue; }
    t.dispose();
  }
  if (!options.ignoreUnused) {
    for (const e of archive.entries) if (e.name.endsWith('.npy') && !used.has(e.name)) problems.push(`${e.name.replace(/\.npy$/, '')}: in the archive but no weight uses it (pass { ignoreUnused: true } to allow)`);
  }
  if (problems.length) {
    for (const [, t] of planned) t.dispose();
    throw mismatchError(problems);
  }
  for (const [w, t] of planned) {
    if (w.assign) w.assign(t);
    else if (w.write) w.write(t);
    else throw new NpyError('BAD_ARRAY', `${w.name} has neither assign() nor write()`);
    t.dispose();
  }
}

/** Where archive bytes go: a function receiving them (upload, IndexedDB, a download in the page). */
export type NpzSink = (npz: Uint8Array) => unknown;

/** Options of {@link saveWeights}: names on the archive's side, and the archive's own options. */
export interface SaveWeightsOptions extends NpzWriteOptions {
  /** Map a weight's saved name to the key to write (a `transpose` is undone, so that loading back with the same table round-trips). */
  names?: WeightNames;
  /** Aborts writing a file (Node). */
  signal?: AbortSignal;
}

/**
 * Archive bytes to a file (a path, Node only: written beside and renamed, like every npyts save) or to a sink.
 * @example
 * await writeArchive('out.npz', { w: a }, {});
 */
export async function writeArchive(target: string | NpzSink, arrays: Map<string, NdArray>, options: NpzWriteOptions & { signal?: AbortSignal | undefined }): Promise<void> {
  if (typeof target === 'function') {
    await target(encodeNpz(arrays, options));
    return;
  }
  if (!inNode()) throw new NpyError('BAD_ARRAY', `saving to '${target}' needs a file system; in a browser pass a function that receives the bytes, or browserDownload('${target}')`);
  await (await nodeEntry()).saveNpz(target, arrays, options);
}

/**
 * Save a model's weights (or any weights) as a .npz that numpy opens by name: each under tfjs-layers'
 * `originalName` (`dense/kernel`, never `dense/kernel_1`), as `np.load(f)['dense/kernel']`.
 * Without a target the archive's bytes are returned.
 * @example
 * await saveWeights(model, 'weights.npz');
 * const bytes = await saveWeights(model);
 */
export async function saveWeights(weights: Weights, target: string | NpzSink, options?: SaveWeightsOptions): Promise<void>;
export async function saveWeights(weights: Weights, target?: undefined, options?: SaveWeightsOptions): Promise<Uint8Array>;
export async function saveWeights(weights: Weights, target?: string | NpzSink, options: SaveWeightsOptions = {}): Promise<Uint8Array | void> {
  const arrays = new Map<string, NdArray>();
  const problems: string[] = [];
  for (const w of weightList(weights)) {
    const name = savedName(w);
    const spec = mappedKey(options.names, name) ?? name;
    const key = typeof spec === 'string' ? spec : spec.key;
    if (arrays.has(key)) { problems.push(`${w.name}: a second weight saved as '${key}'`); continue; }
    const tensor = w.read ? w.read() : w instanceof tf.Tensor ? w : null;
    if (!tensor) { problems.push(`${w.name}: neither a tensor nor has read()`); continue; }
    const array = await fromTensor(tensor);
    const axes = axesOf(spec, array.shape.length);
    arrays.set(key, axes ? transpose(array, inverseAxes(axes)) : array);
  }
  if (problems.length) throw mismatchError(problems);
  if (target === undefined) return encodeNpz(arrays, options);
  await writeArchive(target, arrays, options);
}

/**
 * A sink that offers the archive as a download in a browser page (like tfjs's `downloads://`).
 * @example
 * await saveWeights(model, browserDownload('weights.npz'));
 */
export function browserDownload(fileName: string): NpzSink {
  return (npz) => {
    const doc = (globalThis as { document?: Document }).document;
    if (!doc) throw new NpyError('BAD_ARRAY', 'browserDownload needs a page (document); in Node save to a path');
    const url = URL.createObjectURL(new Blob([npz as Uint8Array<ArrayBuffer>], { type: 'application/zip' }));
    const a = doc.createElement('a');
    a.href = url;
    a.download = fileName;
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 0);
  };
}
