/**
 * A model checked against reference outputs an archive carries: `check/input.npy` (or `check/input_0.npy`,
 * `check/input_1.npy`, … for several inputs) and `check/output.npy` (or `check/output_0.npy`, …).
 */
import * as tf from '@tensorflow/tfjs-core';
import { NpyError, familyOf, transpose, toOrder, type NdArray, type WeightFile } from '@npyts/core';
import { closeness, knownKeys } from '@npyts/core/plumbing';
import { checkEntryOptions, openWeightSource, type SourceOptions, type WeightSource } from './sources.js';
import { toTensor } from './tensors.js';
import { CHECK_PREFIX } from './weights.js';
import { layerClass, planPytorch, type Suspect } from './pytorch.js';
import { TORCH_LAYER_CLASS, configOf, inputsOf, layoutOf, type LayerLike, type LayersModelLike, type SymbolicLike } from './layers.js';

/**
 * checkModel's default relative tolerance. Calibrated: a correct float32 port drifts from PyTorch by
 * rounding alone (deep convolutional nets in `bench/check-tolerance.mjs`: at most 1.2e-7 of the
 * output's scale; hand ports of torchvision architectures: up to 1.1e-5), while a normalisation
 * epsilon of 1e-3 where PyTorch's is 1e-5 moves the output by 1.3e-4 to 3.7e-4 of its scale. 3e-5
 * lies between, about three times from each.
 * @example
 * await checkModel(model, 'weights.npz', { rtol: 10 * DEFAULT_RTOL });   // a looser check, stated
 */
export const DEFAULT_RTOL = 3e-5;

/** Options of {@link checkModel}. */
export interface CheckModelOptions extends SourceOptions {
  /**
   * Relative tolerance (default {@link DEFAULT_RTOL}, 3e-5): |tfjs − reference| ≤ atol + rtol·|reference|,
   * as numpy's `allclose`.
   */
  rtol?: number;
  /** Absolute tolerance (default: rtol times the largest |reference| value, so that outputs near zero are judged on the output's scale). */
  atol?: number;
  /**
   * Where the reference came from. `'pytorch'` (the default when the archive's arrays are a state_dict)
   * hands a channels-first input to a model whose first layer is channels-last, transposed, and
   * compares a channels-first output likewise; `'asIs'` uses them as they are.
   */
  layout?: 'pytorch' | 'asIs';
}

/** The options of {@link checkModel} beside a source's. */
const CHECK_MODEL_KEYS = knownKeys<Omit<CheckModelOptions, keyof SourceOptions>>({ rtol: true, atol: true, layout: true });

/** What {@link checkModel} measured. */
export interface CheckResult {
  /** The largest |tfjs − reference| over all outputs. */
  maxAbsDiff: number;
  /** The largest |tfjs − reference| / |reference| where the reference is not zero. */
  maxRelDiff: number;
  /** How many values were compared. */
  compared: number;
}

/** The check members of a kind: `check/input` alone, or `check/input_0`, `check/input_1`, … */
function numbered(archive: WeightFile, base: string): string[] {
  const single = `${CHECK_PREFIX}${base}`;
  if (archive.has(single)) return [single];
  const out: string[] = [];
  for (let i = 0; archive.has(`${single}_${i}`); i++) out.push(`${single}_${i}`);
  return out;
}

/** True when the archive carries reference inputs and outputs. */
export function hasCheck(archive: WeightFile): boolean {
  return numbered(archive, 'input').length > 0 && numbered(archive, 'output').length > 0;
}

/** The layer that consumes a model input (through the InputLayer). */
function consumerOf(model: LayersModelLike, input: LayerLike | undefined): LayerLike | undefined {
  if (!input) return undefined;
  return model.layers.find((l) => inputsOf(l).includes(input));
}

/** The axes that take channels-first (N, C, d…) to channels-last (N, d…, C). */
function channelsLast(rank: number): number[] {
  return [0, ...Array.from({ length: rank - 2 }, (_, i) => i + 2), 1];
}

/** Does `shape` fit a model tensor's shape (null: any size)? */
function fits(shape: readonly number[], model: readonly (number | null)[]): boolean {
  return shape.length === model.length && shape.every((d, i) => model[i] === null || model[i] === d);
}

/**
 * Run the model on the archive's reference inputs and compare with its reference outputs; refuse
 * with the largest difference and where it is when they do not match within the tolerance.
 * @example
 * const { maxAbsDiff } = await checkModel(model, 'weights.npz');
 */
export async function checkModel(model: LayersModelLike, source: WeightSource, options: CheckModelOptions = {}): Promise<CheckResult> {
  checkEntryOptions('checkModel', options, CHECK_MODEL_KEYS);
  const [archive, opened] = await openWeightSource(source, options);
  try {
    // With module outputs recorded, which layer computes which module (the plan of assignWeights,
    // headers only); a model that does not pair is checked at its outputs alone.
    const pairing: [LayerLike, string][] = [];
    if ((options.layout ?? 'pytorch') === 'pytorch' && archive.names.some((n) => n.startsWith(MODULE_PREFIX))) {
      try {
        await planPytorch(model, archive, { evidence: true, ignoreUnused: true }, undefined, [], pairing);
      } catch {
        pairing.length = 0;
      }
    }
    return await checkWith(model, archive, options, { suspects: [], pairing });
  } finally {
    if (opened) await archive.close();
  }
}

/** {@link checkModel} on an opened archive. */
/** What planning found that a failed check should say: configurations that differ from PyTorch's defaults, and which module each layer computes. */
export interface Findings {
  readonly suspects: readonly Suspect[];
  readonly pairing: readonly (readonly [LayerLike, string])[];
}

/** The folder of the outputs of each PyTorch module, recorded with forward hooks (see the guide). */
export const MODULE_PREFIX = `${CHECK_PREFIX}module/`;

export async function checkWith(
  model: LayersModelLike,
  archive: WeightFile,
  options: CheckModelOptions = {},
  found: Findings = { suspects: [], pairing: [] },
): Promise<CheckResult> {
  const { suspects } = found;
  const inputKeys = numbered(archive, 'input');
  const outputKeys = numbered(archive, 'output');
  if (!inputKeys.length || !outputKeys.length) {
    throw new NpyError(
      'NPZ_KEY',
      `the archive has no ${CHECK_PREFIX}input.npy and ${CHECK_PREFIX}output.npy to check the model with; save a sample input and PyTorch's output beside the weights: np.savez(..., **{'check/input': x.numpy(), 'check/output': model(x).detach().numpy()})`,
    );
  }
  if (inputKeys.length !== model.inputs.length)
    throw new NpyError('NPZ_KEY', `the model takes ${model.inputs.length} inputs and the archive has ${inputKeys.length} (${inputKeys.join(', ')})`);
  if (outputKeys.length !== model.outputs.length)
    throw new NpyError('NPZ_KEY', `the model gives ${model.outputs.length} outputs and the archive has ${outputKeys.length} (${outputKeys.join(', ')})`);
  const pytorch = (options.layout ?? 'pytorch') === 'pytorch';
  const inputs: tf.Tensor[] = [];
  try {
    for (const [i, key] of inputKeys.entries()) {
      let x = await archive.get(key);
      const wanted = model.inputs[i]!.shape;
      const consumer = consumerOf(model, model.inputs[i]!.sourceLayer);
      const moved = pytorch && x.shape.length >= 3 && consumer !== undefined && configOf(consumer).dataFormat === 'channelsLast';
      if (moved) x = toOrder(transpose(x, channelsLast(x.shape.length)), 'C');
      if (!fits(x.shape, wanted))
        throw new NpyError(
          'NPZ_KEY',
          `${key} has shape [${x.shape}]${moved ? ' with channels moved last' : ''} but the model's input ${i} is [${wanted.map((d) => d ?? 'any')}]`,
        );
      // tfjs would fail inside predict with its own words: an empty batch, text or complex numbers.
      if (x.size === 0) throw new NpyError('NPZ_KEY', `${key} has shape [${x.shape}], no values: save a sample input of at least one example`);
      if (!['float', 'int', 'uint', 'bool'].includes(familyOf(x.dtype)))
        throw new NpyError('DTYPE_MISMATCH', `${key} is ${x.dtype.str} (${x.dtype.name}); a model's input is numbers: save it as float32`);
      inputs.push(toTensor(x, { int64: 'check' }));
    }
    const predicted = tf.tidy(() => {
      const y = model.predict(inputs.length === 1 ? inputs[0]! : inputs);
      return Array.isArray(y) ? y : [y];
    });
    try {
      let worst = { abs: 0, rel: 0, compared: 0, failure: '', bare: '' };
      for (const [i, key] of outputKeys.entries()) {
        let reference: NdArray = await archive.get(key);
        const producer = model.outputs[i]!.sourceLayer;
        const got = predicted[i]!;
        if (pytorch && reference.shape.length >= 3 && producer && layoutOf(producer) === 'channelsLast') {
          reference = toOrder(transpose(reference, channelsLast(reference.shape.length)), 'C');
        }
        if (reference.shape.join() !== got.shape.join()) {
          throw new NpyError('CHECK_FAILED', `output ${i}: the model gives shape [${got.shape}], ${key} is [${reference.shape}]`);
        }
        const r = compare((await got.data()) as Float32Array, referenceValues(reference), reference.shape, key, options);
        worst = {
          abs: Math.max(worst.abs, r.abs),
          rel: Math.max(worst.rel, r.rel),
          compared: worst.compared + r.compared,
          failure: worst.failure || r.failure,
          bare: worst.bare || r.bare,
        };
      }
      if (worst.failure) {
        // With each module's output recorded, the first layer that diverges is the place to look.
        const first = await firstDivergence(model, archive, inputs, found.pairing, pytorch, options);
        // A layer whose own output was seen to agree with its module's is cleared of suspicion.
        const open = suspects.filter((s) => !first?.agreed.has(s.layer)).map((s) => s.text);
        const noted = open.length ? `; where the port differs from PyTorch's defaults: ${listed(open)}` : '';
        if (first && !first.ran) throw new NpyError('CHECK_FAILED', `${worst.failure}${noted}; ${first.message}`);
        if (first) throw new NpyError('CHECK_FAILED', `${first.message}; at the output: ${worst.bare}${noted}`);
        // Where the port is known to differ from PyTorch's defaults, that is the likely cause: named
        // instead of the general judgement (which would offer a looser tolerance).
        throw new NpyError(
          'CHECK_FAILED',
          open.length ? `${worst.bare}; where the port differs from PyTorch's defaults (the likely cause): ${listed(open)}` : worst.failure,
        );
      }
      if (worst.compared === 0) {
        throw new NpyError(
          'CHECK_FAILED',
          `the reference outputs (${outputKeys.join(', ')}) have no finite value to compare with, so they prove nothing; save a sample input whose output is finite`,
        );
      }
      return { maxAbsDiff: worst.abs, maxRelDiff: worst.rel, compared: worst.compared };
    } finally {
      tf.dispose(predicted);
    }
  } finally {
    tf.dispose(inputs);
  }
}

/** The first few of many findings, and how many more (a net's 50 BatchNorms built alike make one point, not 50). */
function listed(findings: readonly string[], shown = 3): string {
  if (findings.length <= shown) return findings.join('; ');
  return `${findings.slice(0, shown).join('; ')}; and ${findings.length - shown} more layers like them`;
}

/** What usually makes a layer of this class compute something other than its PyTorch module. */
const LIKELY_CAUSE: Record<string, string> = {
  Conv1D:
    "padding or strides (tfjs's 'same' pads a stride-2 convolution at the end only, PyTorch's padding on both sides: use a zeroPadding layer, then 'valid'), dilation, or an activation fused into the layer",
  Conv2D:
    "padding or strides (tfjs's 'same' pads a stride-2 convolution at the bottom and right only, PyTorch's padding on every side: use zeroPadding2d, then 'valid'), dilation, or an activation fused into the layer",
  DepthwiseConv2D:
    "padding or strides (tfjs's 'same' pads a stride-2 convolution at the bottom and right only: use zeroPadding2d, then 'valid'), or an activation fused into the layer",
  Conv2DTranspose: 'padding, output padding or strides',
  BatchNormalization:
    "epsilon (PyTorch's 1e-5; tfjs's default 1e-3), or an activation or pooling layer just before it (PyTorch's hardsigmoid is not tfjs's hardSigmoid: use hardsigmoid() from @npyts/tfjs/torch-layers)",
  LayerNormalization: 'epsilon, or the axis it normalises',
  Dense: "the rows' order after a Flatten ({ flattenLayout }), an activation fused into the layer, or a layer just before it",
  Embedding: 'the token ids given to it',
  PReLU: 'the axes its slopes are shared over',
  [TORCH_LAYER_CLASS.conv2d]: "padding, strides, dilation or groups against the module's",
  [TORCH_LAYER_CLASS.gru]: "the sequence's axes (PyTorch's default batch_first=False takes (time, batch, features)), or the module's direction and layer",
  Bidirectional:
    "goBackwards set on the wrapped layer (leave it unset: the wrapper runs its backward copy itself), mergeMode (PyTorch's is 'concat'), returnSequences, or the sequence's axes (batch_first)",
  [TORCH_LAYER_CLASS.multiheadAttention]: 'numHeads or causal against the module (a state_dict records neither), or the layers before it',
  LSTM: "recurrentActivation ('sigmoid', as PyTorch's), the sequence's axes (batch_first), or the module's direction and layer",
};

/**
 * The first paired layer whose output differs from its module's recorded output (`check/module/NAME`
 * members, in the model's layer order), as a message naming both and the likely cause; null when no
 * module output was recorded or every recorded one agrees; `ran: false` with the reason where tfjs cannot
 * run the model layer by layer. Where modules that were not compared (a ReLU, a pooling, a recurrent
 * module whose output is not its layer's) lie between the last module that agrees and the first that
 * differs, the blame is the whole span, each tfjs layer in it named.
 */
async function firstDivergence(
  model: LayersModelLike,
  archive: WeightFile,
  inputs: readonly tf.Tensor[],
  pairing: readonly (readonly [LayerLike, string])[],
  pytorch: boolean,
  options: CheckModelOptions,
): Promise<{ ran: boolean; message: string; agreed: ReadonlySet<string> } | null> {
  if (!model.execute) return null;
  const recorded = pairing.filter(([layer, module]) => archive.has(`${MODULE_PREFIX}${module}`) && singleOutput(layer)?.name !== undefined);
  if (!recorded.length) return null;
  let outputs: tf.Tensor[];
  try {
    outputs = execute(
      model,
      inputs,
      recorded.map(([layer]) => layer),
    );
  } catch (e) {
    // tfjs-layers' execute refuses some models (one layer object called at several places).
    return {
      ran: false,
      agreed: new Set(),
      message: `the layer-by-layer check could not run this model (tfjs: ${(e as Error).message}); give each call its own layer to have it name the first module that differs`,
    };
  }
  try {
    const agreed = new Set<string>();
    const agreedLayers: LayerLike[] = [];
    const agreedModules: string[] = [];
    const compared = new Set<string>();
    for (const [i, [layer, module]] of recorded.entries()) {
      const got = outputs[i]!;
      const values = await referenceFor(archive, module, layer, got.shape, pytorch);
      // Judged where shapes agree (a module whose output is not its layer's cannot be compared).
      if (!values) continue;
      compared.add(module);
      const r = compare((await got.data()) as Float32Array, values, got.shape, `${MODULE_PREFIX}${module}`, options);
      if (r.failure) {
        const message = await blame(model, archive, inputs, { layer, module, bare: r.bare }, { agreedLayers, agreedModules, compared }, pytorch, options);
        return { ran: true, agreed, message };
      }
      agreed.add(layer.name);
      agreedLayers.push(layer);
      agreedModules.push(module);
    }
    return null;
  } finally {
    tf.dispose(outputs);
  }
}

/** The named layers' outputs for the model's inputs (tfjs-layers' execute). */
function execute(model: LayersModelLike, inputs: readonly tf.Tensor[], layers: readonly LayerLike[]): tf.Tensor[] {
  return tf.tidy(() => {
    const y = model.execute!(
      inputs.length === 1 ? inputs[0]! : [...inputs],
      layers.map((layer) => singleOutput(layer)!.name!),
    );
    return Array.isArray(y) ? y : [y];
  });
}

/** A module's recorded output as the layer gives it (channels moved last where the layer's are), or null where the shapes differ or it holds no numbers. */
async function referenceFor(
  archive: WeightFile,
  module: string,
  layer: LayerLike,
  shape: readonly number[],
  pytorch: boolean,
): Promise<ArrayLike<number> | null> {
  let reference = await archive.get(`${MODULE_PREFIX}${module}`);
  if (pytorch && reference.shape.length >= 3 && layoutOf(layer) === 'channelsLast')
    reference = toOrder(transpose(reference, channelsLast(reference.shape.length)), 'C');
  if (reference.shape.join() !== shape.join()) return null;
  try {
    return referenceValues(reference);
  } catch {
    return null;
  }
}

/** The layers a layer's output depends on, itself included, inputs first. */
function upstream(layer: LayerLike): LayerLike[] {
  const seen = new Set<LayerLike>();
  const order: LayerLike[] = [];
  const visit = (at: LayerLike): void => {
    if (seen.has(at)) return;
    seen.add(at);
    for (const before of inputsOf(at)) visit(before);
    order.push(at);
  };
  visit(layer);
  return order;
}

const named = (layer: LayerLike): string => `'${layer.name}' (${layerClass(layer)})`;

/** Words in a list: 'a', 'a and b', 'a, b and c'; past `shown`, the first ones, how many more, and the last. */
function andList(items: readonly string[], shown = 12): string {
  if (items.length > shown) return `${items.slice(0, shown - 1).join(', ')}, ${items.length - shown} more and ${items[items.length - 1]}`;
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

/**
 * The message for the first module that differs: the span from the last module that agrees to it.
 * Modules recorded between them but not compared (no paired layer) are compared by value with the
 * span's layers without weights: one that agrees with a layer clears that layer and those before it.
 */
async function blame(
  model: LayersModelLike,
  archive: WeightFile,
  inputs: readonly tf.Tensor[],
  failing: { layer: LayerLike; module: string; bare: string },
  seen: { agreedLayers: readonly LayerLike[]; agreedModules: readonly string[]; compared: ReadonlySet<string> },
  pytorch: boolean,
  options: CheckModelOptions,
): Promise<string> {
  const { layer, module } = failing;
  // Modules in the order their hooks ran (np.savez keeps it), the model itself ('') aside.
  const order = archive.names.filter((n) => n.startsWith(MODULE_PREFIX)).map((n) => n.slice(MODULE_PREFIX.length));
  const at = order.indexOf(module);
  let last = '';
  for (const m of seen.agreedModules) if (order.indexOf(m) < at && (!last || order.indexOf(m) > order.indexOf(last))) last = m;
  // Not compared: recorded after the last agreeing module and before this one; not a container of a
  // compared module (its hook runs after its children's), nor part of this one.
  const all = [...seen.compared];
  let between = order
    .slice(last ? order.indexOf(last) + 1 : 0, Math.max(at, 0))
    .filter((m) => m && !seen.compared.has(m) && !all.some((c) => c.startsWith(`${m}.`)) && !m.startsWith(`${module}.`));
  // The span: the layers this one's output depends on, less those an agreeing layer's depends on.
  const cleared = new Set(seen.agreedLayers.flatMap(upstream));
  let span = upstream(layer).filter((l) => !cleared.has(l) && l.getClassName() !== 'InputLayer');
  if (between.length && model.execute) {
    const candidates = span.filter((l) => l !== layer && singleOutput(l)?.name !== undefined);
    let values: tf.Tensor[] = [];
    try {
      values = candidates.length ? execute(model, inputs, candidates) : [];
      const matched = new Set<string>();
      for (const m of between) {
        for (const [i, l] of candidates.entries()) {
          if (!span.includes(l)) continue;
          const want = await referenceFor(archive, m, l, values[i]!.shape, pytorch);
          if (!want || compare((await values[i]!.data()) as Float32Array, want, values[i]!.shape, m, options).failure) continue;
          // The module's output is this layer's: it and the layers before it agree.
          matched.add(m);
          last = m;
          const before = new Set(upstream(l));
          span = span.filter((s) => !before.has(s));
          break;
        }
      }
      between = between.filter((m) => !matched.has(m) && order.indexOf(m) > order.indexOf(last));
    } catch {
      // A model tfjs cannot run layer by layer here keeps the wider span.
    } finally {
      tf.dispose(values);
    }
  }
  const cls = layer.getClassName();
  let where = '';
  const others = span.filter((l) => l !== layer);
  if (between.length || others.length) {
    const skipped = between.length
      ? `; PyTorch's ${andList(between.map((m) => `'${m}'`))} between them ${between.length === 1 ? 'was' : 'were'} recorded but not compared, since no tfjs layer gives ${between.length === 1 ? 'its' : 'their'} output`
      : '';
    const from = last ? `after '${last}'` : 'from the input';
    where = `${last ? ` (the modules before it, up to '${last}', agree` : ' (no module before it was seen to agree'}${skipped}: the mistake lies in the span ${from} up to '${module}', which tfjs computes with layers ${andList(span.map(named))}${between.length ? ` and PyTorch with ${andList([...between, module].map((m) => `'${m}'`))}` : ''})`;
  } else if (last) where = ` (the modules before it, up to '${last}', agree)`;
  const inferred = await inferOptions(model, archive, inputs, layer, module, pytorch, options);
  const cause =
    inferred ??
    `the likely cause${others.length ? `, if it is this layer,` : ''} for a ${layerClass(layer)}: ${LIKELY_CAUSE[cls] ?? 'its configuration against the module'}`;
  return `the first PyTorch module whose output differs is '${module}', computed by tfjs layer ${named(layer)}${where}: ${failing.bare}; ${cause}`;
}

/** A layer that computes its output under other options (TorchMultiheadAttention). */
interface CallsWith {
  callWith(inputs: tf.Tensor | tf.Tensor[], options: Record<string, unknown>): tf.Tensor;
}

/**
 * For a layer whose options a state_dict does not record (attention's numHeads and causal): the
 * options under which its output is the module's, tried on its own inputs (numHeads: each divisor of
 * the embedding size; causal: both), as words naming the options that differ; null where none agrees.
 */
async function inferOptions(
  model: LayersModelLike,
  archive: WeightFile,
  inputs: readonly tf.Tensor[],
  layer: LayerLike,
  module: string,
  pytorch: boolean,
  options: CheckModelOptions,
): Promise<string | null> {
  if (layer.getClassName() !== TORCH_LAYER_CLASS.multiheadAttention || typeof (layer as Partial<CallsWith>).callWith !== 'function') return null;
  const sources = inputsOf(layer);
  if (!sources.length || !sources.every((l) => singleOutput(l)?.name !== undefined)) return null;
  const config = configOf(layer);
  let given: tf.Tensor[] = [];
  try {
    given = execute(model, inputs, sources);
    const embed = given[0]!.shape[given[0]!.shape.length - 1]!;
    const heads = Array.from({ length: embed }, (_, i) => i + 1).filter((h) => embed % h === 0);
    // One option changed before both: the fewest differences that explain the output.
    const tries: { numHeads: number; causal: boolean }[] = [];
    const now = { numHeads: Number(config.numHeads), causal: config.causal === true };
    tries.push({ ...now, causal: !now.causal });
    for (const h of heads) if (h !== now.numHeads) tries.push({ ...now, numHeads: h });
    for (const h of heads) if (h !== now.numHeads) tries.push({ numHeads: h, causal: !now.causal });
    for (const t of tries) {
      const y = (layer as unknown as CallsWith).callWith(given.length === 1 ? given[0]! : given, t);
      try {
        const want = await referenceFor(archive, module, layer, y.shape, pytorch);
        if (!want || compare((await y.data()) as Float32Array, want, y.shape, module, options).failure) continue;
      } finally {
        y.dispose();
      }
      const differ = (['numHeads', 'causal'] as const).filter((k) => t[k] !== now[k]);
      return `the module's output is what this layer gives with ${andList(differ.map((k) => `${k}: ${t[k]}`))} (it has ${andList(differ.map((k) => `${k}: ${now[k]}`))}): build it with ${andList(differ.map((k) => `${k}: ${t[k]}`))}`;
    }
    return null;
  } catch {
    return null;
  } finally {
    tf.dispose(given);
  }
}

/** A layer's one output tensor (null for a layer with several). */
function singleOutput(layer: LayerLike): SymbolicLike | null {
  const out = layer.output;
  if (!out) return null;
  return Array.isArray(out) ? (out.length === 1 ? (out[0] as SymbolicLike) : null) : (out as SymbolicLike);
}

/** A reference output's values as numbers, row-major. */
function referenceValues(a: NdArray): ArrayLike<number> {
  const c = toOrder(a, 'C');
  const data = c.data as ArrayLike<number | bigint>;
  if (typeof data[0] === 'bigint') return Array.from(data as ArrayLike<bigint>, Number);
  if (!['float', 'int', 'uint', 'bool'].includes(familyOf(a.dtype)))
    throw new NpyError('CHECK_FAILED', `a reference output of dtype ${a.dtype.name} cannot be compared`);
  if (a.dtype.realBytes === 2)
    throw new NpyError('CHECK_FAILED', 'a float16 reference output is too coarse to check a float32 model against; save it as float32');
  return data as ArrayLike<number>;
}

/** Above this many times the allowed difference, a difference is structural, not rounding. */
const ROUNDING_BAND = 10;

/**
 * What a failed difference says: near the allowed one, float32 rounding in a deep network looks like
 * it (and so does an epsilon), and the option that accepts it is named; far above it, the port
 * computes something else.
 */
function judged(d: number, allowed: number, scale: number): string {
  const ofScale = scale > 0 ? `, ${(d / scale).toPrecision(2)} of the output's scale` : '';
  if (Number.isFinite(d) && d <= ROUNDING_BAND * allowed) {
    const rtol = Number(((2 * d) / (scale || 1)).toPrecision(1));
    return `near float32 rounding (${(d / allowed).toPrecision(2)} times the allowed${ofScale}): a correct port of a very deep network can drift this far, and so can a configuration that differs a little (a normalisation epsilon shows as about 1e-4 of the scale); if the port is right, accept it with { rtol: ${rtol} }`;
  }
  return `far above float32 rounding (${Number.isFinite(d) ? `${(d / allowed).toPrecision(2)} times the allowed` : 'not a number'}${ofScale}): the tfjs model computes something else; check the layers' pairing and configuration (padding, strides, activations, epsilons) against the PyTorch model`;
}

/** tfjs's values against the reference's under the one rule (`closeness`), with what a failure says. */
function compare(
  got: ArrayLike<number>,
  want: ArrayLike<number>,
  shape: readonly number[],
  key: string,
  options: CheckModelOptions,
): { abs: number; rel: number; compared: number; failure: string; bare: string } {
  const c = closeness(got, want, shape, options.rtol ?? DEFAULT_RTOL, options.atol);
  const f = c.failure;
  if (f === null) return { abs: c.abs, rel: c.rel, compared: c.compared, failure: '', bare: '' };
  const at = `${key}: at [${f.index}] tfjs gives ${f.got} and the reference ${f.want}`;
  if (f.nonFinite) {
    const failure = `the model's predictions differ from ${at} (a non-finite reference is matched exactly)`;
    return { abs: c.abs, rel: c.rel, compared: c.compared, failure, bare: failure };
  }
  const bare = `the model's predictions differ from ${at} (difference ${f.diff.toPrecision(3)}, allowed ${f.allowed.toPrecision(3)} with rtol ${c.rtol}, atol ${c.atol.toPrecision(3)})`;
  return { abs: c.abs, rel: c.rel, compared: c.compared, failure: `${bare}; ${judged(f.diff, f.allowed, c.scale)}`, bare };
}
