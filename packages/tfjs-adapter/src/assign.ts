/**
 * Weights from archives and back: a plan (which arrays make each weight, and how), checked before any
 * data is read, then assigned; saves write the inverse.
 */
import * as tf from '@tensorflow/tfjs-core';
import {
  NpyError,
  encodeNpz,
  transpose,
  type NdArray,
  type NpyErrorCode,
  type NpzWriteOptions,
  type OnProgress,
  type OpenWeightsOptions,
  type WeightFile,
} from '@npyts/core';
import { NPZ_WRITE_KEYS, knownKeys, pickOptions, progressReporter, settleAll, type KnownKeys } from '@npyts/core/plumbing';
import { checkFloat64, fromTensor, tensorDTypeOf, toTensor, type ToTensorOptions } from './tensors.js';
import { checkEntryOptions, openWeightSource, writeArchive, type NpzSink, type SourceOptions, type WeightSource } from './sources.js';
import { isIgnoredBuffer, looksLikeStateDict, planPytorch, type PlannedWeight, type PytorchLayoutOptions, type Suspect } from './pytorch.js';
import { applyTransform, describeTransform, invertTransform, type Transform } from './transform.js';
import { hasLayers, type LayerLike, type LayersModelLike } from './layers.js';
import { kerasRecordsOf } from './keras-file.js';
import { kerasNames, trainingState } from './keras-weights.js';
import { checkWith, hasCheck, type CheckModelOptions, type Findings } from './check.js';
import {
  CHECK_PREFIX,
  axesOf,
  inverseAxes,
  listKeys,
  mappedKey,
  mismatchError,
  savedName,
  weightList,
  type WeightLike,
  type WeightNames,
  type Weights,
} from './weights.js';

/** Options of {@link planWeights}: how the archive names and lays out the weights. */
export interface PlanWeightsOptions extends SourceOptions, PytorchLayoutOptions {
  /**
   * How the archive holds the weights. `'tfjs'` (default): one array per weight, named and shaped as
   * the model's (with `names` for other names). `'pytorch'`: a PyTorch `state_dict` (`np.savez` of it),
   * mapped layer by layer onto a tfjs-layers model: kernels transposed, BatchNorm's statistics, LSTM
   * biases summed, a Dense after a Flatten reordered; `names` then maps the weights it mentions.
   */
  layout?: 'tfjs' | 'pytorch';
  /**
   * Map a weight's name to its array in the archive. Default: the weight's `originalName`, then its
   * name, then its name without a `:0` suffix (Keras' variable names).
   */
  names?: WeightNames;
  /** Accept archive arrays that no weight uses (default: refuse, they usually mean a naming mistake). */
  ignoreUnused?: boolean;
}

/** The options of {@link planWeights} beside a source's. */
const PLAN_OWN = { layout: true, names: true, ignoreUnused: true, epsilon: true, flattenLayout: true } as const satisfies KnownKeys<
  Omit<PlanWeightsOptions, keyof SourceOptions>
>;
const PLAN_KEYS = knownKeys<Omit<PlanWeightsOptions, keyof SourceOptions>>(PLAN_OWN);

/** Options of {@link assignWeights}: the plan's, the tensors', and whether to check the result. */
export interface AssignWeightsOptions extends PlanWeightsOptions, ToTensorOptions, Pick<CheckModelOptions, 'rtol' | 'atol'> {
  /**
   * Run {@link checkModel} when the archive carries `check/input.npy` and `check/output.npy` (default
   * true; it needs a model that predicts), or with the check members of another file (`{ check:
   * 'check.npz' }`: a `.pt` or `.safetensors` of weights, checked against an `np.savez` of a sample
   * input and PyTorch's output). When the check fails the weights are put back as they were.
   */
  check?: boolean | WeightSource;
  /**
   * Map a weight file given by path (Node, with @npyts/native) instead of reading it, as
   * `openWeights(path, { mmap })`: a float32 or int32 tensor stored as itself is handed to tfjs as a
   * view of the map, which tfjs's CPU backend keeps as its values (no copy at all); other backends
   * copy once as they upload (docs/larger-than-memory.md, "Memory-mapped weight files").
   */
  mmap?: OpenWeightsOptions['mmap'];
  /**
   * Told as each weight's data arrives: `{ bytes, total, tensor }`, the bytes of the arrays read so far
   * out of all the weights need, never decreasing, ending at the total. Nothing is assigned until every
   * weight is read, so a load aborted by `signal` leaves the model as it was.
   */
  onProgress?: OnProgress;
}

/** The options of {@link assignWeights} beside a source's. */
const ASSIGN_KEYS = knownKeys<Omit<AssignWeightsOptions, keyof SourceOptions>>({
  ...PLAN_OWN,
  float64: true,
  int64: true,
  rtol: true,
  atol: true,
  check: true,
  mmap: true,
  onProgress: true,
});

/** How a load reads: tensors' conversion, `signal` checked before each weight, and progress told as each arrives. */
export interface ReadStepsOptions extends ToTensorOptions {
  signal?: AbortSignal | undefined;
  onProgress?: OnProgress | undefined;
}

/** A weight, and where its values come from. */
export interface PlanStep {
  target: WeightLike;
  step: PlannedWeight;
}

/**
 * Which archive arrays make each weight, and how, checked against the archive's headers before any
 * data is read: every missing, extra or mis-shaped weight is reported together.
 * @example
 * for (const p of await planWeights(model, 'weights.npz', { layout: 'pytorch' })) console.log(p.weight, '←', p.keys, p.description);
 */
export async function planWeights(weights: Weights, source: WeightSource, options: PlanWeightsOptions = {}): Promise<PlannedWeight[]> {
  checkEntryOptions('planWeights', options, PLAN_KEYS);
  const [archive, opened] = await openWeightSource(source, options);
  try {
    return (await planFrom(weights, archive, options)).map((p) => p.step);
  } finally {
    if (opened) await archive.close();
  }
}

/** {@link planWeights} on an opened archive, each step with its weight. */
export async function planFrom(
  weights: Weights,
  archive: WeightFile,
  options: PlanWeightsOptions & { ignoreUnusedKeys?: ReadonlySet<string>; evidence?: boolean },
  suspects: Suspect[] = [],
  pairing: [LayerLike, string][] = [],
): Promise<PlanStep[]> {
  // A Keras file pairs its weights with the model's layers through its own records.
  const records = kerasRecordsOf(archive);
  if (records && options.names === undefined && hasLayers(weights)) {
    const ignore = new Set([...trainingState(records), ...(options.ignoreUnusedKeys ?? [])]);
    options = { ...options, names: kerasNames(weights, records, 'the Keras file'), ignoreUnusedKeys: ignore };
  }
  const list = weightList(weights);
  const problems: string[] = [];
  const steps: PlanStep[] = [];
  const used = new Map<string, string>();
  const byName = new Map(list.map((w) => [savedName(w), w]));
  const claimed = new Set<string>(); // keys a weight asked for, whether or not they fit it
  const take = async (w: WeightLike, step: PlannedWeight): Promise<void> => {
    for (const key of step.keys) claimed.add(key);
    // A sum or a repetition is float work; otherwise the array's dtype decides the tensor's.
    const made = step.transform.kind === 'sum' || step.transform.kind === 'tile' ? 'float32' : tensorDTypeOf((await archive.info(step.keys[0]!)).dtype);
    if (made !== w.dtype) {
      problems.push(`${savedName(w)}: dtype ${made} in the archive, ${w.dtype} in the model`);
      return;
    }
    for (const key of step.keys) {
      const other = used.get(key);
      if (other !== undefined) {
        problems.push(`${savedName(w)}: its array ${key} is also taken by ${other}`);
        return;
      }
      used.set(key, savedName(w));
    }
    steps.push({ target: w, step });
  };
  const pytorch = options.layout === 'pytorch';
  if (pytorch && !hasLayers(weights)) throw new NpyError('WEIGHT_MISMATCH', "layout 'pytorch' needs the model itself (its layers), not a list of weights");
  const viaNames = pytorch
    ? list.filter((w) => mappedKey(options.names, savedName(w)) !== null || (w.name !== savedName(w) && mappedKey(options.names, w.name) !== null))
    : list;
  for (const w of viaNames) {
    const step = await stepByName(w, archive, options.names, problems, claimed);
    if (step) await take(w, step);
  }
  if (pytorch) {
    const byNames = new Set(viaNames.map(savedName));
    for (const step of await planPytorch(weights as LayersModelLike, archive, options, { weights: byNames, keys: new Set(used.keys()) }, suspects, pairing)) {
      await take(byName.get(step.weight)!, step);
    }
  }
  if (!options.ignoreUnused) {
    for (const key of archive.names) {
      if (claimed.has(key) || options.ignoreUnusedKeys?.has(key) || (pytorch && (key.startsWith(CHECK_PREFIX) || isIgnoredBuffer(key)))) continue;
      problems.push(`${key}: in the archive but no weight uses it (pass { ignoreUnused: true } to allow)`);
    }
  }
  if (problems.length) {
    // No weight found by name in what is a PyTorch state_dict: one hint, not a list of every key per weight.
    if (!pytorch && steps.length === 0 && looksLikeStateDict(archive.names)) {
      const example = archive.names.find((k) => !k.startsWith(CHECK_PREFIX));
      throw mismatchError([
        `the archive's arrays are a PyTorch state_dict (${archive.names.length} keys such as '${example}') and no weight of the model is named after them; pass { layout: 'pytorch' } to map its modules onto the model's layers`,
      ]);
    }
    throw mismatchError(problems);
  }
  return steps;
}

/** A weight's plan from the names table or its own name, checked against the member's header. */
async function stepByName(
  w: WeightLike,
  archive: WeightFile,
  names: WeightNames | undefined,
  problems: string[],
  claimed: Set<string>,
): Promise<PlannedWeight | null> {
  const label = savedName(w); // dense/kernel, also when tfjs made the variable dense/kernel_1
  const mapped = mappedKey(names, w.name) ?? (w.originalName !== undefined ? mappedKey(names, w.originalName) : null);
  const spec =
    mapped !== null
      ? archive.has(typeof mapped === 'string' ? mapped : mapped.key)
        ? mapped
        : null
      : ([w.originalName, w.name, w.name.replace(/:\d+$/, '')].find((k): k is string => k !== undefined && archive.has(k)) ?? null);
  if (spec === null) {
    problems.push(
      `${label}: no array ${mapped !== null ? `${typeof mapped === 'string' ? mapped : mapped.key} ` : ''}for it in the archive${listKeys(archive.names)}`,
    );
    return null;
  }
  const key = archive.keyOf(typeof spec === 'string' ? spec : spec.key)!;
  claimed.add(key);
  let shape: number[];
  try {
    const header = await archive.info(key);
    tensorDTypeOf(header.dtype);
    const axes = axesOf(spec, header.shape.length);
    shape = axes ? axes.map((a) => header.shape[a]!) : [...header.shape];
  } catch (e) {
    problems.push(`${label}: ${(e as Error).message}`);
    return null;
  }
  const wanted = w.shape.map((d) => d ?? -1);
  if (shape.join() !== wanted.join()) {
    problems.push(`${label}: shape [${shape}] in the archive${typeof spec !== 'string' && spec.transpose ? ' (transposed)' : ''}, [${wanted}] in the model`);
    return null;
  }
  const axes = axesOf(spec, shape.length);
  const transform: Transform = axes ? { kind: 'permute', axes } : { kind: 'copy' };
  return { weight: label, keys: [key], transform, description: describeTransform(transform), shape };
}

/**
 * Assign a .npz's arrays to model weights, checking the shape and dtype of every one; every missing,
 * extra or mis-shaped weight is reported together and nothing is assigned unless all match. With
 * reference outputs in the archive (`check/…`), the model is then checked against them.
 * @example
 * await assignWeights(model, 'weights.npz');          // a tfjs-layers model, by originalName
 * await assignWeights(model, 'state_dict.npz', { layout: 'pytorch' });
 * await assignWeights(model, 'torch.npz', { names: { 'dense/kernel': { key: 'fc1.weight', transpose: true } } });
 */
export async function assignWeights(weights: Weights, source: WeightSource, options: AssignWeightsOptions = {}): Promise<void> {
  checkEntryOptions('assignWeights', options, ASSIGN_KEYS);
  const [archive, opened] = await openWeightSource(source, options);
  let checks: WeightFile = archive;
  let checksOpened = false;
  try {
    if (options.check !== undefined && typeof options.check !== 'boolean') {
      [checks, checksOpened] = await openWeightSource(options.check, options);
      if (!hasCheck(checks)) {
        throw new NpyError(
          'NPZ_KEY',
          `the check file has no ${CHECK_PREFIX}input and ${CHECK_PREFIX}output: write a sample input and PyTorch's output for it with np.savez`,
        );
      }
    }
    // With check members to run, the check is the evidence: a configuration that differs from
    // PyTorch's defaults (an epsilon) is planned, and named if the check then fails.
    const checking = options.check !== false && hasCheck(checks) && isPredicting(weights);
    const suspects: Suspect[] = [];
    const pairing: [LayerLike, string][] = [];
    const steps = await planFrom(weights, archive, { ...options, evidence: checking }, suspects, pairing);
    const tensors = await readSteps(steps, archive, options);
    await assignChecked(weights, steps, tensors, checking ? checks : null, options, { suspects, pairing });
  } finally {
    try {
      if (checksOpened) await checks.close();
    } finally {
      if (opened) await archive.close(); // an archive this call opened (a file handle in Node)
    }
  }
}

/** Assign the tensors, then check the model against `checks` (when given); a failed check puts the weights back. */
async function assignChecked(
  weights: Weights,
  steps: readonly PlanStep[],
  tensors: readonly tf.Tensor[],
  checks: WeightFile | null,
  options: AssignWeightsOptions,
  found: Findings,
): Promise<void> {
  const before = checks ? steps.map((s) => s.target.read?.().clone()) : [];
  try {
    assignAll(steps, tensors);
    if (checks) await checkWith(weights as LayersModelLike, checks, { layout: options.layout === 'pytorch' ? 'pytorch' : 'asIs', ...pick(options) }, found);
  } catch (e) {
    // Put the weights back: a model that fails its check is not left half-converted.
    if (checks)
      assignAll(
        steps,
        before.map((t) => t ?? null),
      );
    throw e;
  } finally {
    tf.dispose(before.filter((t): t is tf.Tensor => t !== undefined));
  }
}

function pick(options: AssignWeightsOptions): CheckModelOptions {
  const out: CheckModelOptions = {};
  if (options.rtol !== undefined) out.rtol = options.rtol;
  if (options.atol !== undefined) out.atol = options.atol;
  return out;
}

function isPredicting(weights: Weights): boolean {
  return hasLayers(weights) && typeof (weights as { predict?: unknown }).predict === 'function';
}

/** A planned weight's array: its members read and transformed (float64 refused first where asked, since a sum or a repetition makes float32). */
export async function stepArray(archive: WeightFile, step: PlannedWeight, options: ToTensorOptions & { signal?: AbortSignal | undefined }): Promise<NdArray> {
  const arrays = await settleAll(step.keys.map((k) => archive.get(k, { signal: options.signal })));
  for (const a of arrays) checkFloat64(a, options);
  return applyTransform(step.transform, arrays);
}

/** The bytes of the arrays each step reads, from their headers (no data read): what a load's progress counts. */
export async function stepBytes(archive: WeightFile, steps: readonly PlannedWeight[]): Promise<number[]> {
  return settleAll(
    steps.map(async (step) => {
      let n = 0;
      for (const key of step.keys) {
        const { dtype, shape } = await archive.info(key);
        n += shape.reduce((a, d) => a * d, dtype.itemsize);
      }
      return n;
    }),
  );
}

/** Codes that say a weight's bytes could not be read, rather than that they do not fit the weight. */
const READ_FAILURES: ReadonlySet<NpyErrorCode> = new Set<NpyErrorCode>([
  'TRUNCATED',
  'DATA_TRUNCATED',
  'ZIP_CRC',
  'ZIP_SIZE',
  'ZIP_FORMAT',
  'NETWORK',
  'HTTP_STATUS',
  'SOURCE_CHANGED',
  'BAD_RESPONSE',
  'CLOSED',
]);

/**
 * An error met reading a weight's data (a read that failed, a file that ended early), its code kept
 * and the weight and its arrays named; a refusal of the caller's (an abort) is passed on as it is.
 */
export function namingWeight(e: unknown, step: PlannedWeight): unknown {
  if (!(e instanceof NpyError)) return e;
  return new NpyError(e.code, `${step.weight} (from ${step.keys.join(', ')}): ${e.message}`);
}

/**
 * Every step's tensor, read and transformed, one typed array each (tfjs's CPU backend keeps it as
 * the tensor's values: no copy on the way); all disposed if one fails or `signal` aborts.
 */
async function readSteps(steps: readonly PlanStep[], archive: WeightFile, options: ReadStepsOptions): Promise<tf.Tensor[]> {
  const sizes = options.onProgress
    ? await stepBytes(
        archive,
        steps.map((s) => s.step),
      )
    : [];
  const report = progressReporter(
    sizes.reduce((a, b) => a + b, 0),
    options.onProgress,
  );
  const tensors: tf.Tensor[] = [];
  const problems: string[] = [];
  try {
    for (const [i, { target, step }] of steps.entries()) {
      options.signal?.throwIfAborted();
      let array: NdArray;
      try {
        array = await stepArray(archive, step, options);
      } catch (e) {
        // Data that cannot be read (a file that ends early, a read that failed) is not a mismatch:
        // its own error at once, naming the weight; an abort is passed on as it is.
        if (!(e instanceof NpyError) || READ_FAILURES.has(e.code)) throw namingWeight(e, step);
        problems.push(`${step.weight}: ${e.message}`);
        continue;
      }
      try {
        const t = toTensor(array, options);
        tensors.push(t);
        if (t.dtype !== target.dtype) problems.push(`${step.weight}: dtype ${t.dtype} in the archive, ${target.dtype} in the model`);
      } catch (e) {
        problems.push(`${step.weight}: ${(e as Error).message}`);
      }
      report.add(step.weight, sizes[i] ?? 0);
    }
    if (problems.length) throw mismatchError(problems);
    report.end();
    return tensors;
  } catch (e) {
    tf.dispose(tensors);
    throw e;
  }
}

/**
 * Read every step's weight (see {@link readSteps}) and assign them all, or none: what a load does once
 * the plan is checked.
 */
export async function readAndAssign(steps: readonly PlanStep[], archive: WeightFile, options: ReadStepsOptions): Promise<void> {
  assignAll(steps, await readSteps(steps, archive, options));
}

function assignAll(steps: readonly PlanStep[], tensors: readonly (tf.Tensor | null)[]): void {
  // All or nothing: every tensor is checked against its weight before the first is assigned, so a
  // refusal leaves the model as it was (tfjs's own check would throw halfway through).
  const wrong: string[] = [];
  steps.forEach(({ target }, i) => {
    const t = tensors[i];
    if (!t) return;
    const want = target.shape.map((d) => d ?? -1);
    if (t.shape.join() !== want.join() || t.dtype !== target.dtype)
      wrong.push(`${savedName(target)}: made ${t.dtype} [${t.shape}], the model has ${target.dtype} [${want}]`);
  });
  if (wrong.length) throw mismatchError(wrong);
  steps.forEach(({ target }, i) => {
    const t = tensors[i];
    if (!t) return;
    if (target.assign) target.assign(t);
    else if (target.write) target.write(t);
    else throw new NpyError('BAD_TARGET', `${target.name} has neither assign() nor write()`);
    t.dispose();
  });
}

/** Options of {@link saveWeights}: names on the archive's side, and the archive's own options. */
export interface SaveWeightsOptions extends NpzWriteOptions, PytorchLayoutOptions, SourceOptions {
  /** Map a weight's saved name to the key to write (a `transpose` is undone, so that loading back with the same table round-trips). */
  names?: WeightNames;
  /**
   * `'pytorch'`: write a PyTorch `state_dict` that `model.load_state_dict` takes, keyed and laid out as
   * the archive given in `like` (the one the weights were loaded from, or `np.savez` of the PyTorch
   * model's state_dict). An LSTM's summed bias is written as `bias_ih` with `bias_hh` zero, and
   * `num_batches_tracked` is copied from `like`.
   */
  layout?: 'tfjs' | 'pytorch';
  /** With `layout: 'pytorch'`: the archive whose keys, order and shapes to write. */
  like?: WeightSource;
  /** Aborts writing a file (Node). */
  signal?: AbortSignal;
  /** Writing a file (Node): make it durable before it replaces the old one, as `saveNpz`'s `durable` (`fsync`). */
  durable?: boolean;
}

/** The options of {@link saveWeights} beside a source's (the `like` file's). */
const SAVE_WEIGHTS_KEYS = knownKeys<Omit<SaveWeightsOptions, keyof SourceOptions>>({
  ...NPZ_WRITE_KEYS,
  ...PLAN_OWN,
  like: true,
  durable: true,
});

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
  checkEntryOptions('saveWeights', options, SAVE_WEIGHTS_KEYS);
  const arrays = options.layout === 'pytorch' ? await pytorchArrays(weights, options) : await namedArrays(weights, options);
  if (target === undefined) return encodeNpz(arrays, pickOptions(options, NPZ_WRITE_KEYS));
  await writeArchive(target, arrays, options);
}

/** A weight's current value as an array. */
async function currentValue(w: WeightLike): Promise<NdArray | null> {
  const tensor = w.read ? w.read() : w instanceof tf.Tensor ? w : null;
  return tensor ? fromTensor(tensor) : null;
}

/** Each weight under its saved name (or the `names` table's key, a transpose undone). */
async function namedArrays(weights: Weights, options: SaveWeightsOptions): Promise<Map<string, NdArray>> {
  const arrays = new Map<string, NdArray>();
  const problems: string[] = [];
  for (const w of weightList(weights)) {
    const name = savedName(w);
    const spec = mappedKey(options.names, name) ?? name;
    const key = typeof spec === 'string' ? spec : spec.key;
    if (arrays.has(key)) {
      problems.push(`${w.name}: a second weight saved as '${key}'`);
      continue;
    }
    const array = await currentValue(w);
    if (!array) {
      problems.push(`${w.name}: neither a tensor nor has read()`);
      continue;
    }
    const axes = axesOf(spec, array.shape.length);
    arrays.set(key, axes ? transpose(array, inverseAxes(axes)) : array);
  }
  if (problems.length) throw mismatchError(problems);
  return arrays;
}

/** The state_dict `like` describes, from the model's weights: the load's plan run backwards. */
async function pytorchArrays(weights: Weights, options: SaveWeightsOptions): Promise<Map<string, NdArray>> {
  if (options.like === undefined) {
    throw new NpyError(
      'NPZ_KEY',
      "saveWeights with layout 'pytorch' needs { like }: the archive whose keys to write (the one the weights were loaded from, or np.savez of the PyTorch model's state_dict), since a tfjs model does not know PyTorch's module names",
    );
  }
  const [archive, opened] = await openWeightSource(options.like, options);
  try {
    const steps = await planFrom(weights, archive, { ...options, ignoreUnused: true });
    const made = new Map<string, NdArray>();
    for (const { target, step } of steps) {
      const value = await currentValue(target);
      if (!value) throw mismatchError([`${target.name}: neither a tensor nor has read()`]);
      const shapes = await settleAll(step.keys.map(async (k) => (await archive.info(k)).shape));
      invertTransform(step.transform, value, shapes, step.weight).forEach((a, i) => made.set(step.keys[i]!, a));
    }
    // In the state_dict's order; buffers no weight holds (num_batches_tracked) as they were.
    const arrays = new Map<string, NdArray>();
    for (const key of archive.names) {
      if (key.startsWith(CHECK_PREFIX)) continue;
      const array = made.get(key) ?? (isIgnoredBuffer(key) ? await archive.get(key) : null);
      if (!array) throw mismatchError([`${key}: in the archive given as { like } but no weight of the model makes it`]);
      arrays.set(key, array);
    }
    return arrays;
  } finally {
    if (opened) await archive.close();
  }
}
