/**
 * Keras's model config (Keras 3's `config.json`, a legacy `.h5`'s `model_config` in Keras 2 or 3 form)
 * as the model JSON tfjs-layers deserializes (the Keras 2 form it was modelled on), with every layer
 * and option tfjs cannot build listed at once before anything is built.
 */
import * as tf from '@tensorflow/tfjs-core';
import { NpyError } from '@npyts/core';
import { MAX_JSON_DEPTH, nestsDeeperThan, putOwn } from '@npyts/core/plumbing';
import { KERAS_LAYER_CLASSES, kerasActivation } from './keras-entry-names.js';

type Json = Record<string, unknown>;

/** How deep a Keras config may nest models in models: far past any real one, and no walk overflows the stack. */
const MAX_NESTING = 64;

/** Dtype policies tfjs computes in float32: their weights are stored in 16 bits and read as float32 exactly. */
const FLOAT32_POLICIES = new Set(['float32', 'float16', 'bfloat16', 'mixed_float16', 'mixed_bfloat16']);

/** Keras's model classes (tfjs registers the functional one as `Model`). */
const MODEL_CLASSES = new Set(['Functional', 'Model', 'Sequential']);

/** The class names of translated nested models (tfjs's). */
const NESTED = new Set(['Model', 'Sequential']);

/**
 * Whether a translated InputLayer gives what a translated nested model's own first input takes (its
 * batch shape and dtype), so that the model can stand first in a Sequential without it.
 */
function sameInputs(input: Json, model: Json): boolean {
  const own = (l: unknown): Json => (isObject(l) && isObject(l.config) ? l.config : {});
  const config = own(model);
  const layers = Array.isArray(config.layers) ? (config.layers as unknown[]) : [];
  let inner: Json | undefined;
  if (model.class_name === 'Sequential') inner = isObject(layers[0]) && layers[0].class_name === 'InputLayer' ? own(layers[0]) : undefined;
  else {
    const refs = Array.isArray(config.input_layers) ? (config.input_layers as unknown[]) : [];
    if (refs.length !== 1 || !Array.isArray(refs[0])) return false;
    const name = refs[0][0];
    inner = own(layers.find((l) => isObject(l) && own(l).name === name));
  }
  const outer = own(input);
  return (
    inner !== undefined &&
    JSON.stringify(inner.batch_input_shape) === JSON.stringify(outer.batch_input_shape) &&
    (inner.dtype ?? 'float32') === (outer.dtype ?? 'float32')
  );
}

/** Keras 3's regularizers as tfjs's one class, `L1L2`. */
const REGULARIZERS: ReadonlyMap<string, (c: Json) => Json> = new Map([
  ['L1', (c: Json) => ({ l1: c.l1 ?? 0, l2: 0 })],
  ['L2', (c: Json) => ({ l1: 0, l2: c.l2 ?? 0 })],
  ['L1L2', (c: Json) => ({ l1: c.l1 ?? 0, l2: c.l2 ?? 0 })],
]);

/**
 * Keras's initializers that tfjs has under another name (the initializer only fills a weight that is then
 * read from the file, but tfjs must know its class to build the layer). Orthogonal: tfjs 4.22's throws
 * (its QR's result has no flatten()), so it is built with zeros.
 */
const INITIALIZERS: ReadonlyMap<string, (c: Json) => [string, Json]> = new Map([
  ['LecunNormal', (c: Json): [string, Json] => ['LeCunNormal', c]],
  ['LecunUniform', (c: Json): [string, Json] => ['LeCunUniform', c]],
  ['Orthogonal', (): [string, Json] => ['Zeros', {}]],
]);

/**
 * Options that count something a layer allocates (units, filters, …): positive integers in Keras
 * (its constructors refuse others), checked here before tfjs builds anything with them.
 */
const COUNTS: ReadonlySet<string> = new Set(['units', 'filters', 'input_dim', 'output_dim', 'depth_multiplier', 'num_heads', 'key_dim', 'value_dim', 'n']);

/** Keys of a serialized Keras object that tfjs does not read (Keras 3's bookkeeping). */
const BOOKKEEPING = new Set(['module', 'registered_name', 'build_config', 'compile_config', 'shared_object_id']);

/** Options of layers that tfjs builds but would compute otherwise than Keras does: refused when set so. */
const REFUSED_OPTIONS: ReadonlyMap<string, (c: Json) => string | null> = new Map(
  Object.entries({
    Conv1D: (c) =>
      c.groups !== undefined && c.groups !== 1
        ? `groups=${String(c.groups)} (tfjs has no grouped convolution)`
        : c.padding === 'causal'
          ? "padding='causal' (tfjs-layers 4.22 builds it and then throws when it runs)"
          : null,
    Conv2D: (c) => (c.groups !== undefined && c.groups !== 1 ? `groups=${String(c.groups)} (tfjs has no grouped convolution)` : null),
    Conv3D: (c) => (c.groups !== undefined && c.groups !== 1 ? `groups=${String(c.groups)} (tfjs has no grouped convolution)` : null),
    LayerNormalization: (c) => (c.rms_scaling === true ? 'rms_scaling=True (tfjs normalizes by the variance about the mean)' : null),
    Dense: (c) => (typeof c.lora_rank === 'number' && c.lora_rank > 0 ? `lora_rank=${c.lora_rank} (merge the LoRA weights in Keras first)` : null),
    Embedding: (c) => (typeof c.lora_rank === 'number' && c.lora_rank > 0 ? `lora_rank=${c.lora_rank} (merge the LoRA weights in Keras first)` : null),
    ReLU: (c) =>
      (typeof c.negative_slope === 'number' && c.negative_slope !== 0) || (typeof c.threshold === 'number' && c.threshold !== 0)
        ? `negative_slope=${String(c.negative_slope)}, threshold=${String(c.threshold)} (tfjs's ReLU has max_value only)`
        : null,
    ELU: (c) => (typeof c.alpha === 'number' && c.alpha !== 1 ? `alpha=${c.alpha} (tfjs's ELU layer has alpha=1 only)` : null),
    GlobalAveragePooling1D: (c) => (c.keepdims === true ? 'keepdims=True (tfjs drops the pooled axes)' : null),
    GlobalAveragePooling2D: (c) => (c.keepdims === true ? 'keepdims=True (tfjs drops the pooled axes)' : null),
    GlobalMaxPooling1D: (c) => (c.keepdims === true ? 'keepdims=True (tfjs drops the pooled axes)' : null),
    GlobalMaxPooling2D: (c) => (c.keepdims === true ? 'keepdims=True (tfjs drops the pooled axes)' : null),
    // Keras resizes with half-pixel centers (tf.image.resize), tfjs's layer without: 0.7 apart on random inputs.
    UpSampling2D: (c) =>
      c.interpolation !== undefined && c.interpolation !== 'nearest'
        ? `interpolation='${String(c.interpolation)}' (tfjs's UpSampling2D resizes without half-pixel centers; only 'nearest' computes as Keras does)`
        : null,
  } satisfies Record<string, (c: Json) => string | null>),
);

/**
 * Options Keras 2 writes that its layer never uses, and that tfjs refuses to be given at all: dropped.
 * Keras 2's SeparableConv1D/2D write Conv's kernel_* options beside their depthwise_* and pointwise_* ones.
 */
const UNUSED_OPTIONS: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  ['SeparableConv1D', new Set(['kernel_initializer', 'kernel_regularizer', 'kernel_constraint'])],
  ['SeparableConv2D', new Set(['kernel_initializer', 'kernel_regularizer', 'kernel_constraint'])],
]);

/** Options Keras 3 renamed (class → Keras 3's name → Keras 2's): tfjs reads them by Keras 2's names. */
export const RENAMED: ReadonlyMap<string, ReadonlyMap<string, string>> = new Map([['LeakyReLU', new Map([['negative_slope', 'alpha']])]]);

/** The classes tfjs can deserialize now (tfjs's own and those registered since, such as `@npyts/tfjs/keras-layers`). */
function registered(): Readonly<Record<string, unknown>> {
  return tf.serialization.SerializationMap.getMap().classNameMap as Record<string, unknown>;
}

/** Whether tfjs has registered a class of this name (an own entry: `constructor` and `__proto__` are none). */
const hasClass = (classes: Readonly<Record<string, unknown>>, name: string): boolean => Object.hasOwn(classes, name);

/**
 * Whether tfjs's registered class builds a GRU with Keras 3's default `reset_after=True` (tfjs's own
 * GRUCell throws; a layer registered in its place may not).
 */
function gruResetsAfter(): boolean {
  const entry = registered().GRU as [new (args: object) => unknown] | undefined;
  if (!entry) return false;
  try {
    new entry[0]({ units: 1, resetAfter: true });
    return true;
  } catch {
    return false;
  }
}

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

// What `@npyts/tfjs/keras-layers` registers that tfjs (as registered now) lacks: one set of rules for
// the translator's messages, which name the entry, and for needsKerasLayers, which decides to load it.
/** A layer class tfjs has not registered and the entry registers. */
const entryLayer = (classes: Readonly<Record<string, unknown>>, className: string): boolean =>
  !hasClass(classes, className) && KERAS_LAYER_CLASSES.includes(className);
/** An activation (its tfjs name, `null` where neither has one) tfjs has not registered and the entry registers. */
const entryActivation = (classes: Readonly<Record<string, unknown>>, tfName: string | null): boolean => tfName !== null && !hasClass(classes, tfName);
/** A GRU with Keras 3's `reset_after=True`, which the entry's GRU builds and tfjs's throws on (`resetsAfter`: what is registered builds it). */
const entryGru = (className: string, config: Json, resetsAfter: () => boolean): boolean => className === 'GRU' && config.reset_after === true && !resetsAfter();

/** The name of an activation as Keras writes it: by name, or serialized as `{ class_name: 'function', config: name }`. */
function activationName(v: unknown): unknown {
  return isObject(v) ? (typeof v.config === 'string' ? v.config : isObject(v.config) ? v.config.name : v.class_name) : v;
}

/**
 * Whether a Keras config uses a layer class, activation or option that tfjs (as registered now) lacks and
 * `@npyts/tfjs/keras-layers` registers: decided from the config alone, before it is translated, so that
 * `kerasHandler` loads that entry for a model that needs it and never for one that does not (the entry
 * replaces tfjs's GRU). A config nested too deep to walk says no (the translator refuses it).
 */
export function needsKerasLayers(config: unknown, kerasMajor: 2 | 3 = 3): boolean {
  if (nestsDeeperThan(config, MAX_JSON_DEPTH)) return false;
  const classes = registered();
  let gru: boolean | undefined;
  const resetsAfter = (): boolean => (gru ??= gruResetsAfter());
  // Every object of the config, layers of nested models and wrapped layers (`layer`, `cell`) among them.
  const stack: unknown[] = [config];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    const values = Object.values(v);
    if (isObject(v) && typeof v.class_name === 'string' && isObject(v.config)) {
      const c = v.config;
      if (entryLayer(classes, v.class_name) || entryGru(v.class_name, c, resetsAfter)) return true;
      for (const key of ['activation', 'recurrent_activation']) {
        const name = Object.hasOwn(c, key) ? activationName(c[key]) : undefined;
        if (typeof name === 'string' && entryActivation(classes, kerasActivation(name, kerasMajor))) return true;
      }
    }
    for (const x of values) if (typeof x === 'object' && x !== null) stack.push(x);
  }
  return false;
}

/** What a Keras config translates to: tfjs's model JSON, and the Keras class of each layer by its name. */
export interface KerasTopology {
  /** The model JSON `tf.loadLayersModel` deserializes (`{ class_name, config }`, Keras 2's form). */
  topology: Json;
  /** The class name of the top-level model (`Sequential`, `Functional`). */
  className: string;
}

/**
 * Keras's model config (the object in `config.json`, or a legacy `.h5`'s `model_config`) as tfjs's
 * model JSON. Every layer class tfjs has not registered and every option it would compute otherwise
 * is collected, and all are refused together (`UNSUPPORTED_LAYER`) before anything is built.
 * @param where what the config came from, for messages (a file name).
 */
export function kerasTopology(config: unknown, where: string, kerasMajor: 2 | 3 = 3): KerasTopology {
  const problems: string[] = [];
  const bad = (why: string): never => {
    throw new NpyError('BAD_MODEL', `${where}: ${why}`);
  };
  if (!isObject(config) || typeof config.class_name !== 'string' || !isObject(config.config)) {
    bad('the model config is not a Keras object ({ class_name, config })');
  }
  // Files are checked as they are read (KerasFile); a config given otherwise is checked here, before any walk.
  if (nestsDeeperThan(config, MAX_JSON_DEPTH)) bad(`the model config nests deeper than ${MAX_JSON_DEPTH} levels (Keras's JSON parser stops there too)`);
  const classes = registered();
  let gru: boolean | undefined;

  /** A serialized Keras object ({ class_name, config, ... }) without Keras 3's bookkeeping, or null/a string as given. */
  const objectRef = (v: unknown, kind: string, at: string, map?: (name: string, c: Json) => [string, Json] | null): unknown => {
    if (v === null || v === undefined) return v;
    if (typeof v === 'string') return v;
    if (!isObject(v) || typeof v.class_name !== 'string') {
      problems.push(`${at}: ${kind} ${JSON.stringify(v).slice(0, 80)} is not one tfjs reads`);
      return null;
    }
    const c = isObject(v.config) ? v.config : {};
    const mapped: [string, Json] | null = map ? map(v.class_name, c) : [v.class_name, c];
    if (!mapped || !hasClass(classes, mapped[0])) {
      problems.push(`${at}: ${kind} ${v.class_name} (tfjs has none)`);
      return null;
    }
    return { class_name: mapped[0], config: Object.fromEntries(Object.entries(mapped[1]).filter(([, x]) => x !== null)) };
  };

  const activation = (v: unknown, at: string): unknown => {
    if (v === null || v === undefined) return v;
    const name = activationName(v);
    if (typeof name !== 'string') {
      problems.push(`${at}: activation ${JSON.stringify(v).slice(0, 80)} is not one tfjs reads`);
      return 'linear';
    }
    // One table (keras-activations.ts) says which tfjs activation computes Keras's function: Keras 3's
    // hard_sigmoid is not tfjs's hardSigmoid (Keras 2's), so the file's Keras version decides.
    const tfName = kerasActivation(name, kerasMajor);
    if (tfName === null || entryActivation(classes, tfName)) {
      problems.push(
        tfName === null
          ? `${at}: activation '${name}' (tfjs has none)`
          : `${at}: activation '${name}' (import '@npyts/tfjs/keras-layers' first: it registers ${tfName})`,
      );
      return 'linear';
    }
    return tfName;
  };

  const dtype = (v: unknown, at: string, input: boolean): string | undefined => {
    if (v === null || v === undefined) return undefined;
    const name = isObject(v) ? (isObject(v.config) ? v.config.name : undefined) : v;
    if (typeof name !== 'string') {
      problems.push(`${at}: dtype ${JSON.stringify(v).slice(0, 80)} is not one tfjs reads`);
      return undefined;
    }
    if (FLOAT32_POLICIES.has(name)) return 'float32';
    if (input && (name === 'int32' || name === 'int64' || name === 'int16' || name === 'int8' || name === 'uint8')) return 'int32';
    if (input && name === 'bool') return 'bool';
    problems.push(`${at}: dtype '${name}' (tfjs computes in float32 and int32 only)`);
    return undefined;
  };

  /** One layer's config, Keras 3 → tfjs. */
  const layerConfig = (className: string, config: Json, at: string, depth: number): Json => {
    const out: Json = {};
    for (const [key, value] of Object.entries(config)) {
      if (BOOKKEEPING.has(key) || UNUSED_OPTIONS.get(className)?.has(key)) continue;
      // An activity regularizer adds a loss term in training and never changes a layer's outputs; tfjs
      // 4.22 builds it and then throws when the layer runs. Dropped: the model predicts what Keras's does.
      if (key === 'activity_regularizer') continue;
      if (COUNTS.has(key) && value !== null && value !== undefined && !(Number.isSafeInteger(value) && (value as number) > 0)) {
        bad(`${at}: ${key}=${JSON.stringify(value)} is not a positive integer below 2**53 (Keras refuses those below 1; no file holds weights that large)`);
      }
      if (key === 'dtype') {
        const d = dtype(value, at, className === 'InputLayer');
        if (d) out.dtype = d;
      } else if (key === 'activation' || key === 'recurrent_activation') {
        out[key] = activation(value, at);
      } else if (key.endsWith('_initializer')) {
        out[key] = objectRef(value, 'initializer', at, (name, c) => INITIALIZERS.get(name)?.(c) ?? [name, c]);
      } else if (key.endsWith('_regularizer')) {
        out[key] = objectRef(value, 'regularizer', at, (name, c) => {
          const l1l2 = REGULARIZERS.get(name);
          return l1l2 ? ['L1L2', l1l2(c)] : [name, c];
        });
      } else if (key.endsWith('_constraint')) {
        out[key] = objectRef(value, 'constraint', at);
      } else if ((key === 'layer' || key === 'backward_layer' || key === 'cell') && isObject(value)) {
        out[key] = layer(value, `${at} → ${key}`, depth + 1).layer;
      } else {
        putOwn(out, RENAMED.get(className)?.get(key) ?? key, value);
      }
    }
    if (className === 'InputLayer') {
      const shape = config.batch_shape ?? config.batch_input_shape;
      if (shape !== undefined && shape !== null && !(Array.isArray(shape) && shape.every((d) => d === null || (Number.isSafeInteger(d) && d >= 0)))) {
        bad(`${at}: batch_shape ${JSON.stringify(shape).slice(0, 80)} is not a list of sizes (non-negative integers or None)`);
      }
      if (config.batch_shape !== undefined) out.batch_input_shape = config.batch_shape;
      delete out.batch_shape;
      if (config.sparse === true) problems.push(`${at}: sparse=True (tfjs has no sparse tensors)`);
      if (config.ragged === true) problems.push(`${at}: ragged=True (tfjs has no ragged tensors)`);
      if (config.optional === true) problems.push(`${at}: optional=True (tfjs needs every input)`);
      for (const k of ['sparse', 'ragged', 'optional']) delete out[k];
    }
    // tfjs's Bidirectional builds its backward layer from `layer`; Keras 3 writes that same layer going backwards.
    if (className === 'Bidirectional' && isObject(out.backward_layer)) {
      const configOf = (l: unknown): Json => (isObject(l) && isObject(l.config) ? l.config : {});
      const f = configOf(out.layer);
      const b = configOf(out.backward_layer);
      const same = Object.keys({ ...f, ...b }).every((k) => k === 'name' || k === 'go_backwards' || JSON.stringify(f[k]) === JSON.stringify(b[k]));
      if (!same || b.go_backwards !== !f.go_backwards) problems.push(`${at}: a backward_layer other than the forward layer reversed (tfjs builds only that)`);
      delete out.backward_layer;
    }
    if (entryGru(className, config, () => (gru ??= gruResetsAfter()))) {
      problems.push(`${at}: reset_after=True (tfjs's GRU throws on it; import '@npyts/tfjs/keras-layers' first: it registers a GRU that builds it)`);
    }
    const refused = REFUSED_OPTIONS.get(className)?.(config);
    if (refused) problems.push(`${at}: ${refused}`);
    return out;
  };

  /** One serialized layer (or nested model) → tfjs's form; `inbound_nodes` in Keras 2's nested lists. */
  const layer = (raw: unknown, at: string, depth: number): { layer: Json; name: string } => {
    if (depth > MAX_NESTING) bad(`${at}: models nest more than ${MAX_NESTING} deep`);
    if (!isObject(raw) || typeof raw.class_name !== 'string') bad(`${at}: a layer is not a Keras object ({ class_name, config })`);
    const r = raw as Json;
    const className = r.class_name as string;
    const config = isObject(r.config) ? r.config : {};
    const name = typeof config.name === 'string' ? config.name : typeof r.name === 'string' ? r.name : '';
    const here = `${at}${name ? ` '${name}'` : ''} (${className})`;
    const out: Json = { class_name: className };
    if (MODEL_CLASSES.has(className)) {
      Object.assign(out, model(className, config, here, depth + 1));
    } else {
      if (!hasClass(classes, className)) {
        const hint = entryLayer(classes, className) ? ` (import '@npyts/tfjs/keras-layers' first: it registers ${className})` : '';
        problems.push(`${here}: tfjs has no ${className} layer${hint}`);
      }
      out.config = layerConfig(className, config, here, depth);
    }
    if (r.name !== undefined) out.name = r.name;
    if (Array.isArray(r.inbound_nodes)) out.inbound_nodes = r.inbound_nodes.map((n, i) => inboundNode(n, `${here} call ${i}`));
    return { layer: out, name };
  };

  /** A Keras 3 call record ({ args, kwargs }) → Keras 2's list of [layer, node, tensor, kwargs]; Keras 2's form as it is. */
  const inboundNode = (node: unknown, at: string): unknown[] => {
    if (Array.isArray(node)) return node; // Keras 2 (a legacy .h5)
    if (!isObject(node)) bad(`${at}: an inbound node is neither Keras 2's list nor Keras 3's { args, kwargs }`);
    const n = node as Json;
    const tensors: unknown[][] = [];
    const walk = (v: unknown, depthLeft: number): void => {
      if (depthLeft === 0) bad(`${at}: call arguments nest too deep`);
      if (Array.isArray(v)) for (const x of v) walk(x, depthLeft - 1);
      else if (isObject(v) && v.class_name === '__keras_tensor__') {
        const h = isObject(v.config) ? v.config.keras_history : undefined;
        if (!Array.isArray(h) || h.length !== 3) bad(`${at}: a tensor without keras_history [layer, node, tensor]`);
        tensors.push([...(h as unknown[])]);
      } else if (isObject(v)) bad(`${at}: a call argument ${JSON.stringify(v).slice(0, 80)} tfjs cannot pass`);
    };
    walk(n.args ?? [], MAX_NESTING);
    const kwargs: Json = {};
    for (const [k, v] of Object.entries(isObject(n.kwargs) ? n.kwargs : {})) {
      if (v === null || v === undefined) continue;
      if (JSON.stringify(v).includes('__keras_tensor__')) problems.push(`${at}: the tensor argument ${k}= (tfjs passes tensors positionally only)`);
      else putOwn(kwargs, k, v);
    }
    return tensors.map((t) => [...t, kwargs]);
  };

  /** A tensor reference list of a model (`input_layers`, `output_layers`): one [name, node, tensor] or several. */
  const refs = (v: unknown, at: string, what: string): unknown[] => {
    if (isObject(v)) {
      problems.push(`${at}: ${what} given as a dict (tfjs takes lists)`);
      return [];
    }
    if (!Array.isArray(v)) bad(`${at}: ${what} is not a list`);
    const list = v as unknown[];
    // Copies: the references to nested models are renumbered below, and the file's config stays as read.
    return (typeof list[0] === 'string' ? [list] : list).map((r) => (Array.isArray(r) ? [...r] : r));
  };

  /** A model's config → tfjs's: Sequential's layers, or Functional's graph. */
  const model = (className: string, config: Json, at: string, depth: number): Json => {
    if (!Array.isArray(config.layers)) bad(`${at}: the model has no list of layers`);
    const layers = (config.layers as unknown[]).map((l, i) => layer(l, `${at} → layers[${i}]`, depth).layer);
    const out: Json = { name: config.name, layers };
    if (className === 'Sequential') {
      // Keras writes a Sequential whose first layer is a model as [InputLayer, model]. tfjs's Sequential
      // calls that model on the InputLayer's tensor, which takes a reference to it that the outer model's
      // dispose() never gives back (its weights outlive the model). tfjs's own form starts with the nested
      // model, which has inputs of its own: the InputLayer is dropped where they are the same.
      const [first, second] = layers as Json[];
      if (first?.class_name === 'InputLayer' && second && NESTED.has(second.class_name as string) && sameInputs(first, second)) layers.shift();
      return { class_name: 'Sequential', config: out };
    }
    out.input_layers = refs(config.input_layers, at, 'input_layers');
    out.output_layers = refs(config.output_layers, at, 'output_layers');
    // A nested model has one node more in tfjs than Keras 3 counts in call records (the one its own
    // inputs made; Keras 2 counted it too): Keras 3's references to a nested model's calls move up by one.
    // Keras 3's output_layers already count that node for a nested Functional (its get_config starts a
    // Functional's count at 1, and functional_from_config takes 1 off again), not for a Sequential.
    const raw = config.layers as Json[];
    if (raw.some((l) => Array.isArray(l?.inbound_nodes) && l.inbound_nodes.some((n) => !Array.isArray(n)))) {
      const nameOf = (l: Json): unknown => (isObject(l.config) ? l.config.name : l.name);
      const nested = new Set(raw.filter((l) => MODEL_CLASSES.has(l?.class_name as string)).map(nameOf));
      const sequential = new Set(raw.filter((l) => l?.class_name === 'Sequential').map(nameOf));
      const shift = (ref: unknown, among: ReadonlySet<unknown>): void => {
        if (Array.isArray(ref) && among.has(ref[0]) && typeof ref[1] === 'number') ref[1] += 1;
      };
      for (const l of layers) for (const node of (l.inbound_nodes as unknown[][] | undefined) ?? []) for (const ref of node) shift(ref, nested);
      for (const ref of out.output_layers as unknown[]) shift(ref, sequential);
    }
    return { class_name: 'Model', config: out };
  };

  const top = config as Json;
  if (!MODEL_CLASSES.has(top.class_name as string)) bad(`the top-level object is a ${String(top.class_name)}, not a Sequential or Functional model`);
  const translated = model(top.class_name as string, top.config as Json, String(top.class_name), 0);
  if (problems.length > 0) {
    throw new NpyError(
      'UNSUPPORTED_LAYER',
      `${where}: tfjs cannot build ${problems.length === 1 ? 'one part' : `${problems.length} parts`} of this Keras model:\n  ${problems.join('\n  ')}\n` +
        'Register tfjs layers and activations under these class names (tf.serialization.registerClass) before loading, or change the model in Keras.',
    );
  }
  return { topology: translated, className: top.class_name as string };
}
