/**
 * A PEFT LoRA adapter merged into its base as PEFT's `merge_and_unload()` merges it: each adapted
 * weight gains `scaling · B @ A` (transposed for `fan_in_fan_out` modules and for embeddings), with
 * PEFT's roundings (tuners/lora/layer.py: Linear and Conv add a float32 delta to the weight, rounding
 * once; Embedding rounds the delta to the weight's dtype first), and each tensor the adapter saves
 * whole (`modules_to_save`, trained biases) replaces the base's. Nothing is merged before it is asked
 * for: a merged weight file reads one base tensor and its two factors per `get`.
 */
import { NdArray } from '../array/ndarray.js';
import { float32sToBfloat16, float32sToFloat16 } from '../array/narrow.js';
import { toOrder } from '../array/order.js';
import { toFloat32 } from '../array/widen.js';
import { NpyError } from '../errors.js';
import { familyOf } from '../format/dtype-cases.js';
import type { DType } from '../format/dtype.js';
import { getEvery, settleAll } from '../io/settle.js';
import { matmulInto } from './matmul.js';
import type { ByteSource } from '../io/byte-source.js';
import { resolveUrl, sourceOf, type NpySource } from '../io/open.js';
import type { HttpOptions } from '../io/url.js';
import { OPEN_WEIGHTS_KEYS, openWeights, WeightFile } from '../weights/open.js';
import { checkNumber, checkOptions, knownKeys, pickOptions } from '../options.js';
import { HTTP_KEYS } from '../io/url.js';
import type { TensorInfo, TensorReadOptions } from '../weights/tensor-file.js';
import { isGgufAdapterName, planGgufLora } from './gguf-adapter.js';

/** Options of `mergeLora`. */
export interface MergeLoraOptions extends HttpOptions {
  /**
   * How much of the adapter to merge (default 1, PEFT's merge): each delta is multiplied by it, as
   * PEFT's `scale_layer(scale)` before `merge_and_unload()`; 0 gives the base unchanged (and the
   * base's tensors, not the adapter's, where the adapter saves whole modules).
   */
  scale?: number;
}

const MERGE_KEYS = knownKeys<MergeLoraOptions>({ ...HTTP_KEYS, scale: true });

/** An adapter given as its parts: `adapter_config.json`'s object, and `adapter_model.safetensors` opened. */
export interface LoraAdapterParts {
  readonly config: Readonly<Record<string, unknown>>;
  readonly weights: WeightFile;
}

/** The prefix PEFT's `save_pretrained` puts before each module's name. */
const PEFT_PREFIX = 'base_model.model.';

/** Config keys of PEFT features that change a merge and that npyts does not implement: refused when set. */
const REFUSED_FEATURES: readonly [key: string, what: string][] = [
  ['use_dora', 'DoRA (use_dora)'],
  ['lora_bias', 'a LoRA bias (lora_bias)'],
  ['layer_replication', 'layer_replication'],
  ['target_parameters', 'target_parameters (LoRA on parameters)'],
  ['trainable_token_indices', 'trainable_token_indices'],
  ['use_qalora', 'QALoRA (use_qalora)'],
  ['use_bdlora', 'block-diagonal LoRA (use_bdlora)'],
  ['alora_invocation_tokens', 'activated LoRA (alora_invocation_tokens)'],
  ['arrow_config', 'Arrow routing (arrow_config)'],
  ['kasa_config', 'KaSA (kasa_config)'],
  ['velora_config', 'VeLoRA (velora_config)'],
  ['monteclora_config', 'MonteCLoRA (monteclora_config)'],
];

/** One adapted weight: the base tensor, its factors, and how they combine. */
export interface LoraModule {
  readonly module: string;
  /** The base tensor it changes (`<module>.weight`). */
  readonly weight: string;
  readonly a: string;
  readonly b: string;
  readonly embedding: boolean;
  /** Whether the delta is transposed to the weight's layout (`fan_in_fan_out`, and every embedding). */
  transpose: boolean;
  readonly scaling: number;
}

/** What a merged tensor is: a base tensor with a delta, a tensor of the adapter's instead, or the base's as it is. */
type Plan = { kind: 'lora'; lora: LoraModule } | { kind: 'saved'; key: string };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const own = (o: Readonly<Record<string, unknown>>, key: string): unknown => (Object.hasOwn(o, key) ? o[key] : undefined);
const product = (shape: readonly number[]): number => shape.reduce((p, d) => p * d, 1);
const shapeText = (shape: readonly number[]): string => `(${shape.join(', ')})`;

function badAdapter(message: string): NpyError {
  return new NpyError('BAD_ADAPTER', message);
}

/** A regex of the adapter's config, compiled (a bad one is the adapter's fault, named). */
function regex(source: string, flags: string, what: string): RegExp {
  try {
    return new RegExp(source, flags);
  } catch (e) {
    throw badAdapter(`adapter_config.json: ${what} '${source}' is not a regular expression npyts can read (${(e as Error).message})`);
  }
}

/** PEFT's `get_pattern_key`: the first key of a rank or alpha pattern matching the module's name as a whole dotted suffix. */
function patternValue(pattern: Readonly<Record<string, unknown>>, module: string, fallback: number, what: string): number {
  for (const key of Object.keys(pattern)) {
    if (regex(`^(.*\\.)?(${key})$`, 's', `${what} key`).test(module)) return positive(pattern[key], `${what}['${key}']`);
  }
  return fallback;
}

function positive(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0)
    throw badAdapter(`adapter_config.json: ${what} must be a positive number, not ${JSON.stringify(v)}`);
  return v;
}

function stringList(v: unknown, what: string): string[] | null {
  if (v === undefined || v === null) return null;
  if (Array.isArray(v) && v.every((s) => typeof s === 'string')) return v as string[];
  throw badAdapter(`adapter_config.json: ${what} must be a list of strings, not ${JSON.stringify(v)}`);
}

/**
 * PEFT's `check_target_module_exists`: whether the config targets the module named `key` (a string
 * is a regex of the whole name, a list names suffixes), after `exclude_modules`, `modules_to_save`
 * and `layers_to_transform`.
 */
function targets(config: Readonly<Record<string, unknown>>, key: string): boolean {
  const exclude = own(config, 'exclude_modules');
  if (
    typeof exclude === 'string'
      ? regex(`^(?:${exclude})$`, 's', 'exclude_modules').test(key)
      : (stringList(exclude, 'exclude_modules') ?? []).some((e) => key === e || key.endsWith(`.${e}`))
  )
    return false;
  const saved = stringList(own(config, 'modules_to_save'), 'modules_to_save') ?? [];
  if (saved.some((m) => regex(`^(.*\\.)?${m}($|\\..*)`, 's', 'modules_to_save entry').test(key))) return false;
  const target = own(config, 'target_modules');
  if (typeof target === 'string') return regex(`^(?:${target})$`, 's', 'target_modules').test(key);
  const list = stringList(target, 'target_modules') ?? [];
  if (list.includes(key)) return true;
  if (!list.some((t) => key.endsWith(`.${t}`))) return false;
  const layers = own(config, 'layers_to_transform');
  if (layers === undefined || layers === null || (Array.isArray(layers) && layers.length === 0)) return true;
  const rawPattern = own(config, 'layers_pattern');
  const patterns = typeof rawPattern === 'string' ? [rawPattern] : (stringList(rawPattern, 'layers_pattern') ?? []);
  let index: string | undefined;
  if (patterns.length === 0) index = /^.*?\.[^.]*\.(\d+)\./s.exec(key)?.[1];
  else {
    for (const p of patterns) {
      index = regex(`^(?:.*?\\.)?${p}\\.(\\d+)\\.`, 's', 'layers_pattern').exec(key)?.[1];
      if (index !== undefined) break;
    }
  }
  if (index === undefined) return false;
  return Array.isArray(layers) ? layers.includes(Number(index)) : layers === Number(index);
}

/** The base dtypes a delta is added to; others (integers: quantized storage; float8) are refused. */
export function mergeable(dtype: DType): boolean {
  const family = familyOf(dtype);
  return (family === 'float' && [2, 4, 8].includes(dtype.realBytes)) || (family === 'mlfloat' && dtype.mlFloat === 'bfloat16');
}

/**
 * The base's tensors with a PEFT LoRA adapter merged into each that it adapts (see the module's
 * comment), checked now: every refusal (a feature npyts does not implement, a quantized base
 * weight) is listed in one `LORA_UNSUPPORTED`, every disagreement between the adapter and the base
 * in one `WEIGHT_MISMATCH`. `owned` files are closed with the result (or now, on an error).
 * @internal
 */
export async function mergeLoraFiles(
  base: WeightFile,
  adapter: LoraAdapterParts,
  options: MergeLoraOptions,
  owned: readonly WeightFile[],
): Promise<WeightFile> {
  try {
    return await planMerge(base, adapter, options, owned);
  } catch (e) {
    for (const f of owned) await f.close();
    throw e;
  }
}

async function planMerge(base: WeightFile, adapter: LoraAdapterParts, options: MergeLoraOptions, owned: readonly WeightFile[]): Promise<WeightFile> {
  const scale = options.scale ?? 1;
  if (typeof scale !== 'number' || !Number.isFinite(scale)) throw new NpyError('BAD_OPTION', `scale must be a finite number, not ${String(scale)}`);
  const config = adapter.config;
  if (!isObject(config)) throw badAdapter('adapter_config.json must hold a JSON object');
  const signal = options.signal;
  const peftType = own(config, 'peft_type');
  if (peftType !== 'LORA') {
    throw new NpyError('LORA_UNSUPPORTED', `the adapter is of the tuner ${JSON.stringify(peftType)} (its peft_type); npyts merges LORA adapters only`);
  }
  // Every refusal is listed in one error: the features the config turns on (with the modules whose
  // tensors show them), the adapter's tensors of no known part, and the quantized base weights.
  const refused: string[] = [];
  const modulesWith = (suffix: RegExp): string[] =>
    adapter.weights.names.filter((k) => suffix.test(k)).map((k) => `'${k.replace(suffix, '').replace(PEFT_PREFIX, '')}'`);
  for (const [key, what] of REFUSED_FEATURES) {
    const v = own(config, key);
    if (v === undefined || v === null || v === false || (isObject(v) && Object.keys(v).length === 0)) continue;
    const modules = key === 'use_dora' ? modulesWith(/\.lora_magnitude_vector(\.weight)?$/s) : key === 'lora_bias' ? modulesWith(/\.lora_B\.bias$/s) : [];
    refused.push(modules.length ? `${what} on ${modules.join(', ')}` : what);
  }
  const hasRefused = refused.length > 0;

  const r = positive(own(config, 'r'), 'r');
  const alpha = positive(own(config, 'lora_alpha'), 'lora_alpha');
  const rslora = own(config, 'use_rslora') === true;
  const fanInFanOut = own(config, 'fan_in_fan_out') === true;
  const rankPattern = own(config, 'rank_pattern') ?? {};
  const alphaPattern = own(config, 'alpha_pattern') ?? {};
  if (!isObject(rankPattern) || !isObject(alphaPattern)) throw badAdapter('adapter_config.json: rank_pattern and alpha_pattern must be objects');

  // The adapter's tensors by module: factors, and tensors saved whole.
  const factors = new Map<string, { a?: string; b?: string; embedding: boolean }>();
  const saved = new Map<string, string>(); // base name -> adapter key
  const unknown: string[] = [];
  for (const key of adapter.weights.names) {
    const name = key.startsWith(PEFT_PREFIX) ? key.slice(PEFT_PREFIX.length) : key;
    const m = /^(.+)\.(lora_A\.weight|lora_B\.weight|lora_embedding_A|lora_embedding_B)$/s.exec(name);
    if (m) {
      const part = m[2]!;
      const entry = factors.get(m[1]!) ?? { embedding: part.startsWith('lora_embedding') };
      if (entry.embedding !== part.startsWith('lora_embedding')) throw badAdapter(`the adapter has both lora_A/lora_B and lora_embedding_A/B for '${m[1]}'`);
      if (part.endsWith('A') || part.startsWith('lora_A')) entry.a = key;
      else entry.b = key;
      factors.set(m[1]!, entry);
    } else if (/(^|\.)lora_[^.]*(\.|$)/s.test(name)) unknown.push(key);
    else saved.set(name, key);
  }
  // Under a feature already refused, its tensors (DoRA's magnitudes) are named there.
  if (unknown.length && !hasRefused) refused.push(`LoRA tensors of no part npyts knows: ${unknown.map((k) => `'${k}'`).join(', ')}`);

  const mismatches: string[] = [];
  const quantized: string[] = [];
  const plans = new Map<string, Plan>();
  const baseNames = new Set(base.names);
  const loras: LoraModule[] = [];
  for (const [module, f] of factors) {
    if (f.a === undefined || f.b === undefined) {
      mismatches.push(`'${module}' has only ${f.a === undefined ? 'B' : 'A'} of its two factors`);
      continue;
    }
    if (!targets(config, module)) {
      mismatches.push(`'${module}' has factors, but target_modules does not name it (PEFT would not load them)`);
      continue;
    }
    const weight = `${module}.weight`;
    if (!baseNames.has(weight)) {
      mismatches.push(`the base has no '${weight}' for the adapter's module '${module}'`);
      continue;
    }
    const rank = patternValue(rankPattern, module, r, 'rank_pattern');
    const a = patternValue(alphaPattern, module, alpha, 'alpha_pattern');
    const lora: LoraModule = {
      module,
      weight,
      a: f.a,
      b: f.b,
      embedding: f.embedding,
      transpose: f.embedding || fanInFanOut,
      scaling: rslora ? a / Math.sqrt(rank) : a / rank,
    };
    const [wInfo, aInfo, bInfo] = await settleAll([
      base.info(weight, { signal }),
      adapter.weights.info(f.a, { signal }),
      adapter.weights.info(f.b, { signal }),
    ]);
    if (wInfo.quantization !== undefined || !mergeable(wInfo.dtype)) {
      quantized.push(`'${weight}' (${wInfo.quantization ?? wInfo.dtype.name})`);
      continue;
    }
    const why = checkFactors(lora, rank, wInfo, aInfo, bInfo, fanInFanOut);
    if (why !== null) mismatches.push(why);
    else {
      loras.push(lora);
      plans.set(weight, { kind: 'lora', lora });
    }
  }
  for (const [name, key] of saved) {
    if (!baseNames.has(name)) {
      mismatches.push(`the adapter saves '${key}', which the base has no '${name}' for`);
      continue;
    }
    const [wInfo, sInfo] = await settleAll([base.info(name, { signal }), adapter.weights.info(key, { signal })]);
    if (shapeText(wInfo.shape) !== shapeText(sInfo.shape))
      mismatches.push(`'${key}' is ${shapeText(sInfo.shape)}, the base's '${name}' ${shapeText(wInfo.shape)}`);
    else if (scale !== 0) plans.set(name, { kind: 'saved', key });
  }
  if (quantized.length) {
    refused.push(
      `quantized base weights (npyts adds a delta to float16, bfloat16, float32 and float64 weights only; merge into the unquantized base): ${quantized.join(', ')}`,
    );
  }
  if (refused.length) throw new NpyError('LORA_UNSUPPORTED', `the adapter needs what npyts does not merge: ${refused.join('; ')}`);
  if (mismatches.length) throw new NpyError('WEIGHT_MISMATCH', `the adapter does not fit the base: ${mismatches.join('; ')}`);
  if (scale === 0) plans.clear();
  return new WeightFile(mergedFile(base, adapter.weights, plans, scale, owned));
}

/**
 * Why the factors do not fit the weight (null when they do): A is `(r, in, …kernel)`, B `(out, r, 1…)`
 * (embeddings: A `(r, rows)`, B `(dim, r)`); the weight is `(out, in, …kernel)`, or `(in, out)` where
 * the delta is transposed. A Linear in a `fan_in_fan_out` config (and a transformers Conv1D in one
 * without) is laid out the other way, as PEFT does (it overrides the config by the module's class):
 * told by the shape where the weight is not square.
 */
function checkFactors(lora: LoraModule, rank: number, w: TensorInfo, a: TensorInfo, b: TensorInfo, fanInFanOut: boolean): string | null {
  const where = `'${lora.module}'`;
  if (a.shape.length < 2 || b.shape.length < 2) return `${where}: A ${shapeText(a.shape)} and B ${shapeText(b.shape)} must have two axes or more`;
  if (a.shape[0] !== rank || b.shape[1] !== rank)
    return `${where}: A ${shapeText(a.shape)} and B ${shapeText(b.shape)} are not of rank ${rank} (r, rank_pattern)`;
  if (!mergeable(a.dtype) || !mergeable(b.dtype)) return `${where}: A and B are ${a.dtype.name} and ${b.dtype.name}, not floats`;
  if (b.shape.slice(2).some((d) => d !== 1)) return `${where}: B ${shapeText(b.shape)} has a kernel other than 1`;
  const out = b.shape[0]!;
  const rest = a.shape.slice(1);
  const straight = lora.embedding ? [rest[0]!, out] : [out, ...rest];
  const turned = rest.length === 1 ? [rest[0]!, out] : null;
  const ws = shapeText(w.shape);
  if (lora.embedding) return ws === shapeText(straight) ? null : `${where}: the delta is ${shapeText(straight)}, the weight ${ws}`;
  if (turned === null) return ws === shapeText(straight) ? null : `${where}: the delta is ${shapeText(straight)}, the weight ${ws}`;
  const fitsStraight = ws === shapeText(straight);
  const fitsTurned = ws === shapeText(turned);
  if (!fitsStraight && !fitsTurned) return `${where}: the delta is ${shapeText(fanInFanOut ? turned : straight)}, the weight ${ws}`;
  if (fitsStraight && fitsTurned)
    lora.transpose = fanInFanOut; // square: as the config says
  else lora.transpose = fitsTurned;
  return null;
}

/** The merged tensor file: the base's names, order, dtypes and metadata. */
function mergedFile(base: WeightFile, adapter: WeightFile, plans: ReadonlyMap<string, Plan>, scale: number, owned: readonly WeightFile[]) {
  const get = async (name: string, options: TensorReadOptions = {}): Promise<NdArray> => {
    const key = base.keyOf(name) ?? name;
    const plan = plans.get(key);
    if (plan === undefined) return base.get(name, options);
    if (plan.kind === 'saved') return adapter.get(plan.key, options);
    const { lora } = plan;
    const weight = await base.get(name, options);
    const [a, b] = await settleAll([adapter.get(lora.a, { signal: options.signal }), adapter.get(lora.b, { signal: options.signal })]);
    return addDelta(toOrder(weight, 'C'), toOrder(a, 'C'), toOrder(b, 'C'), lora, scale);
  };
  return {
    format: base.format,
    names: base.names,
    metadata: base.metadata,
    ...(base.metadataTypes ? { metadataTypes: base.metadataTypes } : {}),
    keyOf: (name: string) => base.keyOf(name),
    info: async (name: string, options: { signal?: AbortSignal | undefined } = {}): Promise<TensorInfo> => {
      const plan = plans.get(base.keyOf(name) ?? name);
      if (plan?.kind === 'saved') return adapter.info(plan.key, options);
      return base.info(name, options);
    },
    get,
    getAll: ({ signal }: { signal?: AbortSignal | undefined } = {}) => getEvery(base.names, 2, (name) => get(name, { signal })),
    close: async () => {
      for (const f of owned) await f.close();
    },
  };
}

/**
 * `weight + scaling · scale · (B @ A)` in PEFT's order of rounding: the delta in float32 (the factors'
 * dtype where it is float64) — each sum of products rounded to float32 as PEFT's matmul rounds it,
 * then times the scaling —, rounded to the factors' dtype where they are narrower, for an embedding
 * to the weight's dtype first; then added in float32 (float64 for a float64 weight) and rounded once
 * to the weight's dtype.
 */
function addDelta(weight: NdArray, a: NdArray, b: NdArray, lora: LoraModule, scale: number): NdArray {
  const rank = a.shape[0]!;
  const inner = product(a.shape.slice(1));
  const out = b.shape[0]!;
  const wide = weight.dtype.realBytes === 8 && familyOf(weight.dtype) === 'float';
  const factorsWide = familyOf(a.dtype) === 'float' && a.dtype.realBytes === 8;
  const av = factorsWide ? (a.data as Float64Array) : Float64Array.from(toFloat32(a).data);
  const bv = familyOf(b.dtype) === 'float' && b.dtype.realBytes === 8 ? (b.data as Float64Array) : Float64Array.from(toFloat32(b).data);
  const scaling = factorsWide ? lora.scaling * scale : Math.fround(lora.scaling * scale);
  // The delta in the weight's layout: left (rows × rank) @ right (rank × cols), B @ A or, transposed,
  // Aᵀ @ Bᵀ; the kernel takes right transposed (Aᵀ, or B as it is). The factors are small: transposing
  // them is cheap; writing the delta by columns is not.
  const [rows, cols] = lora.transpose ? [inner, out] : [out, inner];
  const aT = transposed(av, rank, inner);
  const delta = factorsWide ? new Float64Array(rows * cols) : new Float32Array(rows * cols);
  matmulInto(lora.transpose ? aT : bv, lora.transpose ? bv : aT, rows, rank, cols, delta, scaling, !factorsWide);
  // Factors stored narrower than float32: PEFT rounds the delta back to their dtype.
  if (!factorsWide) roundTo(delta as Float32Array, a.dtype);
  if (lora.embedding && !wide) roundTo(delta as Float32Array, weight.dtype);
  const dtype = weight.dtype;
  if (wide) {
    const w = weight.data as Float64Array;
    const merged = new Float64Array(w.length);
    for (let i = 0; i < w.length; i++) merged[i] = w[i]! + delta[i]!;
    return new NdArray(dtype, weight.shape, merged);
  }
  const w = toFloat32(weight).data;
  const sum = new Float32Array(w.length);
  for (let i = 0; i < w.length; i++) sum[i] = w[i]! + delta[i]!;
  const narrow = narrowBits(sum, dtype);
  return new NdArray(dtype, weight.shape, narrow ?? sum);
}

/** A row-major `rows × cols` matrix transposed. */
function transposed(m: Float64Array, rows: number, cols: number): Float64Array {
  const t = new Float64Array(m.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = m[r * cols + c]!;
  return t;
}

/** float32 values as the bits of a float16 or bfloat16 `dtype`; null for any other dtype. */
function narrowBits(values: Float32Array, dtype: DType): Uint16Array | null {
  // bfloat16 is an ml_dtypes float (kind 'V', so no realBytes): told by its family.
  const family = familyOf(dtype);
  const bf16 = family === 'mlfloat' && dtype.mlFloat === 'bfloat16';
  if (!bf16 && !(family === 'float' && dtype.realBytes === 2)) return null;
  const bits = new Uint16Array(values.length);
  if (bf16) float32sToBfloat16(values, bits);
  else float32sToFloat16(values, bits);
  return bits;
}

/** float32 values rounded to a float16 or bfloat16 `dtype` and back, in place (other dtypes: left as they are). */
function roundTo(values: Float32Array, dtype: DType): void {
  const bits = narrowBits(values, dtype);
  if (bits !== null) values.set(toFloat32(new NdArray(dtype, [bits.length], bits)).data);
}

/** The most bytes an `adapter_config.json` may have (PEFT writes a few KiB). */
const MAX_CONFIG_BYTES = 16 << 20;

/**
 * An `adapter_config.json`'s object, read from its source (closed after).
 * @internal
 */
export async function readAdapterConfig(source: ByteSource): Promise<Record<string, unknown>> {
  try {
    const where = source.name ?? 'adapter_config.json';
    if (source.size > MAX_CONFIG_BYTES) throw new NpyError('TOO_LARGE', `${where} is ${source.size} bytes; an adapter config is at most ${MAX_CONFIG_BYTES}`);
    const text = new TextDecoder().decode(await source.read(0, source.size));
    let config: unknown;
    try {
      config = JSON.parse(text);
    } catch (e) {
      throw badAdapter(`${where} is not JSON: ${(e as Error).message}`);
    }
    if (!isObject(config)) throw badAdapter(`${where} must hold a JSON object`);
    return config;
  } finally {
    await source.close?.();
  }
}

/** Where an adapter folder's two files are, and how to open them: the entry's (core's URLs, Node's paths too). */
export interface AdapterOpeners {
  openWeights(input: NpySource, options: MergeLoraOptions): Promise<WeightFile>;
  source(input: string | URL, options: MergeLoraOptions): Promise<ByteSource>;
  inFolder(folder: string | URL, file: string): string | URL;
}

/**
 * `mergeLora` over the openers of an entry (core, Node): the base opened unless it is open already,
 * the adapter's folder read unless its parts are given.
 * @internal
 */
export async function mergeLoraWith(
  openers: AdapterOpeners,
  base: NpySource | WeightFile,
  adapter: string | URL | LoraAdapterParts | WeightFile,
  options: MergeLoraOptions,
): Promise<WeightFile> {
  checkOptions('mergeLora', options, MERGE_KEYS);
  checkNumber('scale', options.scale, { integer: false, min: Number.NEGATIVE_INFINITY });
  options.signal?.throwIfAborted();
  // The files are opened with the options an opener takes (the HTTP ones); `scale` is the merge's.
  const opening = pickOptions(options, OPEN_WEIGHTS_KEYS) as MergeLoraOptions;
  const owned: WeightFile[] = [];
  try {
    const baseFile = base instanceof WeightFile ? base : await openers.openWeights(base, opening);
    if (baseFile !== base) owned.push(baseFile);
    // A llama.cpp GGUF LoRA adapter (a .gguf file, or one open): its own names and checks, the same merge.
    if (adapter instanceof WeightFile || ((typeof adapter === 'string' || adapter instanceof URL) && isGgufAdapterName(adapter))) {
      const weights = adapter instanceof WeightFile ? adapter : await openers.openWeights(adapter, opening);
      if (weights !== adapter) owned.push(weights);
      const { loras, factors } = await planGgufLora(baseFile, weights, options.signal, mergeable);
      const scale = options.scale ?? 1;
      const plans = new Map<string, Plan>(scale === 0 ? [] : loras.map((lora) => [lora.weight, { kind: 'lora', lora }]));
      return new WeightFile(mergedFile(baseFile, factors, plans, scale, owned));
    }
    let parts: LoraAdapterParts;
    if (typeof adapter === 'string' || adapter instanceof URL) {
      const config = await readAdapterConfig(await openers.source(openers.inFolder(adapter, 'adapter_config.json'), opening));
      const weights = await openers.openWeights(openers.inFolder(adapter, 'adapter_model.safetensors'), opening);
      owned.push(weights);
      parts = { config, weights };
    } else if (isObject(adapter) && adapter.weights instanceof WeightFile) parts = adapter;
    else
      throw new NpyError(
        'BAD_OPTION',
        'the adapter must be a folder (a path or URL) holding adapter_config.json and adapter_model.safetensors, { config, weights }, or a llama.cpp GGUF LoRA adapter (a .gguf path or URL, or the file open)',
      );
    return await mergeLoraFiles(baseFile, parts, options, owned);
  } catch (e) {
    for (const f of owned) await f.close().catch(() => {});
    throw e;
  }
}

/**
 * A URL of a file in a folder given by URL (with or without its closing `/`).
 * @internal
 */
export function urlInFolder(folder: string | URL, file: string): URL {
  const url = new URL(resolveUrl(folder));
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return new URL(file, url);
}

/**
 * A weight file of `base`'s tensors with a PEFT LoRA adapter merged into them, as PEFT's
 * `merge_and_unload()` merges it (its order of rounding: float32 within 1e-6 relative, float16 and
 * bfloat16 within one unit in the last place). `base` is anything `openWeights` opens, or an open
 * weight file (left open); `adapter` the URL of a folder holding `adapter_config.json` and
 * `adapter_model.safetensors` (as `save_pretrained` writes them), or `{ config, weights }`. Each
 * tensor is merged when it is asked for: one base tensor and its two factors at a time. Honours
 * `r`, `lora_alpha`, `use_rslora`, `rank_pattern`, `alpha_pattern`, `fan_in_fan_out`,
 * `target_modules` (and `exclude_modules`, `layers_to_transform`) on Linear, Conv1d/2d/3d and
 * Embedding weights, and `modules_to_save`; refuses (`LORA_UNSUPPORTED`, all listed at once)
 * DoRA, other tuners, other PEFT features and quantized base weights. `adapter` may also be a
 * llama.cpp GGUF LoRA adapter (`convert_lora_to_gguf.py`'s: a `.gguf` URL, or the file open), merged
 * into a base of GGUF's tensor names (a GGUF model, or any file of those names) as llama.cpp applies
 * it: each `<name>.lora_a`/`.lora_b` pair scaled by `adapter.lora.alpha / rank` (see lora/gguf-adapter.ts);
 * quantized factors are dequantized first, bit for bit as gguf-py does. `@npyts/core/node` adds paths.
 * @example
 * await using merged = await mergeLora('https://example.org/base/model.safetensors', 'https://example.org/adapter/');
 * const w = await merged.get('transformer.h.0.attn.c_attn.weight');
 */
export async function mergeLora(
  base: NpySource | WeightFile,
  adapter: string | URL | LoraAdapterParts | WeightFile,
  options: MergeLoraOptions = {},
): Promise<WeightFile> {
  return mergeLoraWith(
    {
      openWeights: (input, o) => openWeights(input, o),
      source: (input, o) => sourceOf(input, o),
      inFolder: urlInFolder,
    },
    base,
    adapter,
    options,
  );
}
