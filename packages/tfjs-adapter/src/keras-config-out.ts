/**
 * A tfjs model's topology (Keras 2's JSON form, as `model.toJSON()` and `model.save()` give it) as
 * Keras 3's `config.json`: `module`/`class_name`/`config`/`registered_name` objects, `batch_shape`,
 * `inbound_nodes` as `{ args, kwargs }` of `__keras_tensor__` references. The inverse of keras-config.ts,
 * through its tables. Every layer and option Keras 3 has no counterpart for is refused at once.
 */
import { NpyError } from '@npyts/core';
import { RENAMED } from './keras-config.js';
import { kerasActivationOf } from './keras-entry-names.js';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** How deep models may nest in models (as keras-config.ts reads them). */
const MAX_NESTING = 64;

/**
 * The layer classes tfjs-layers and Keras 3 share by name (and config), and those `@npyts/tfjs/keras-layers`
 * registers under Keras's names. Others (tfjs's `ThresholdedReLU`, layers registered by an application)
 * have no Keras 3 class to load them.
 */
const KERAS_LAYERS = new Set(
  (
    'InputLayer Dense Activation Dropout SpatialDropout1D Flatten Reshape Permute RepeatVector Masking Embedding ' +
    'Conv1D Conv2D Conv3D Conv2DTranspose Conv3DTranspose SeparableConv1D SeparableConv2D DepthwiseConv2D ' +
    'Cropping2D UpSampling2D ZeroPadding2D MaxPooling1D MaxPooling2D MaxPooling3D AveragePooling1D AveragePooling2D AveragePooling3D ' +
    'GlobalMaxPooling1D GlobalMaxPooling2D GlobalAveragePooling1D GlobalAveragePooling2D ' +
    'Add Average Concatenate Dot Maximum Minimum Multiply BatchNormalization LayerNormalization ' +
    'GaussianNoise GaussianDropout AlphaDropout ReLU LeakyReLU PReLU ELU Softmax ' +
    'SimpleRNN GRU LSTM Bidirectional TimeDistributed Rescaling CenterCrop Resizing CategoryEncoding ' +
    'Subtract UnitNormalization Cropping1D ZeroPadding1D UpSampling1D Normalization GroupNormalization EinsumDense MultiHeadAttention Conv1DTranspose'
  ).split(' '),
);

/** Layers whose Keras call takes its input tensors as separate arguments, not as one list. */
const SEPARATE_TENSOR_ARGS = new Set(['MultiHeadAttention']);

/** The shape and dtype of a layer's output (by layer name, call node and output index, as tfjs counts them). */
export type TensorShapes = (layer: string, node: number, tensor: number) => { shape: readonly (number | null)[]; dtype: string } | undefined;

/** Keys of tfjs's configs that Keras 3's constructors do not take (an Embedding's sequence length is its input's shape in Keras 3). */
const DROPPED = new Set(['batch_input_shape', 'input_length', 'time_major']);

/** What {@link kerasConfigOf} gives: Keras 3's model config. */
export interface KerasConfigOut {
  /** The object of `config.json`. */
  readonly config: Json;
}

/** A serialized Keras 3 object of a module. */
function kerasObject(module: string, className: string, config: Json): Json {
  return { module, class_name: className, config, registered_name: null };
}

/**
 * Keras 3's `config.json` of a tfjs topology (`model.toJSON(null, false)`, or a save's `modelTopology`).
 * @param where what the model is, for messages.
 * @param shapes the output shapes of a functional model's layers (Keras 3 records each call argument's).
 */
export function kerasConfigOf(topology: unknown, where: string, shapes: TensorShapes = () => undefined): KerasConfigOut {
  const problems: string[] = [];
  const bad = (why: string): never => {
    throw new NpyError('BAD_MODEL', `${where}: ${why}`);
  };

  const objectRef = (v: unknown, module: string): unknown => {
    if (!isObject(v) || typeof v.class_name !== 'string') return v;
    const c: Json = { ...(isObject(v.config) ? v.config : {}) };
    // tfjs writes Keras 2's 'normal' (a truncated normal) that Keras 3 names so.
    if (v.class_name === 'VarianceScaling' && c.distribution === 'normal') c.distribution = 'truncated_normal';
    return kerasObject(module, v.class_name, c);
  };

  // One table (keras-entry-names.ts), read backwards: tfjs's hardSigmoid is Keras 2's function, which
  // Keras 3 does not have; an activation Keras 3 lacks is refused with the others.
  const activation = (v: unknown, at: string): unknown => {
    if (typeof v !== 'string') return v;
    const keras = kerasActivationOf(v);
    if (keras === null) {
      problems.push(
        v === 'hard_sigmoid' || v === 'hardSigmoid'
          ? `${at}: activation '${v}' (Keras 3's hard_sigmoid is relu6(x + 3) / 6, tfjs's hardSigmoid 0.2x + 0.5: use 'sigmoid')`
          : `${at}: activation '${v}' (Keras 3 has none)`,
      );
    }
    return keras ?? v;
  };

  const renamedBack = (className: string, key: string): string => {
    for (const [keras3, tfjs] of RENAMED.get(className) ?? []) if (tfjs === key) return keras3;
    return key;
  };

  const layerConfig = (className: string, config: Json, at: string, depth: number): Json => {
    const out: Json = {};
    for (const [key, value] of Object.entries(config)) {
      if (DROPPED.has(key)) continue;
      if (key === 'activation' || key === 'recurrent_activation') out[key] = activation(value, at);
      else if (key.endsWith('_initializer')) out[key] = objectRef(value, 'keras.initializers');
      else if (key.endsWith('_regularizer')) out[key] = objectRef(value, 'keras.regularizers');
      else if (key.endsWith('_constraint')) out[key] = objectRef(value, 'keras.constraints');
      else if (key === 'layer' && isObject(value)) out[key] = layer(value, `${at} → layer`, depth + 1, false);
      else out[renamedBack(className, key)] = value;
    }
    if (className === 'InputLayer') out.batch_shape = config.batch_input_shape;
    // tfjs's GRU is Keras 2's (reset_after=False); Keras 3's default is True.
    if (className === 'GRU' && out.reset_after === undefined) out.reset_after = false;
    return out;
  };

  /** A tfjs layer → Keras 3's; `functional` when its call records are a Functional model's. */
  const layer = (raw: unknown, at: string, depth: number, functional: boolean): Json => {
    if (depth > MAX_NESTING) bad(`${at}: models nest more than ${MAX_NESTING} deep`);
    if (!isObject(raw) || typeof raw.class_name !== 'string') return bad(`${at}: a layer is not a { class_name, config } object`);
    const className = raw.class_name;
    const config = isObject(raw.config) ? raw.config : {};
    const name = typeof config.name === 'string' ? config.name : String(raw.name ?? '');
    const here = `${at} '${name}' (${className})`;
    let out: Json;
    if (className === 'Sequential' || className === 'Model' || className === 'Functional') {
      out = model(className, config, here, depth + 1);
    } else {
      if (!KERAS_LAYERS.has(className)) problems.push(`${here}: Keras 3 has no ${className} layer`);
      out = kerasObject('keras.layers', className, layerConfig(className, config, here, depth));
    }
    if (functional) {
      out.name = name;
      out.inbound_nodes = Array.isArray(raw.inbound_nodes) ? raw.inbound_nodes.map((n) => inboundNode(n, here, className)) : [];
    }
    return out;
  };

  /** Keras 2's call record (a list of [layer, node, tensor, kwargs]) → Keras 3's { args, kwargs }. */
  const inboundNode = (node: unknown, at: string, className: string): Json => {
    if (!Array.isArray(node) || node.length === 0) return bad(`${at}: an inbound node is not a list of [layer, node, tensor, kwargs]`);
    const tensors = (node as unknown[]).map((ref) => {
      if (!Array.isArray(ref) || ref.length < 3) bad(`${at}: an inbound tensor is not [layer, node, tensor]`);
      const r = ref as [string, number, number];
      const known = shapes(r[0], r[1], r[2]);
      if (!known) bad(`${at}: the shape of ${r[0]}'s output [${r[1]}, ${r[2]}] is not known (save the model itself, not its JSON)`);
      return { class_name: '__keras_tensor__', config: { shape: known!.shape, dtype: known!.dtype, keras_history: [r[0], r[1], r[2]] } };
    });
    const first = (node as unknown[][])[0]!;
    const kwargs = isObject(first[3]) ? first[3] : {};
    // Several tensors are one list argument (Add, Concatenate), or separate ones where Keras's call
    // takes them so (MultiHeadAttention's query, value and key).
    return { args: tensors.length === 1 || SEPARATE_TENSOR_ARGS.has(className) ? tensors : [tensors], kwargs };
  };

  const model = (className: string, config: Json, at: string, depth: number): Json => {
    if (!Array.isArray(config.layers)) bad(`${at}: the model has no list of layers`);
    const raw = config.layers as unknown[];
    if (className === 'Sequential') {
      const layers = raw.map((l, i) => layer(l, `${at} → layers[${i}]`, depth, false));
      const first = isObject(raw[0]) && isObject(raw[0].config) ? raw[0].config : {};
      const batchShape = first.batch_input_shape;
      const out: Json = { name: config.name, trainable: true, dtype: 'float32', layers };
      if (Array.isArray(batchShape) && (raw[0] as Json).class_name !== 'InputLayer') {
        layers.unshift(
          kerasObject('keras.layers', 'InputLayer', { batch_shape: batchShape, dtype: first.dtype ?? 'float32', name: `${String(config.name)}_input` }),
        );
      }
      return {
        module: 'keras',
        class_name: 'Sequential',
        config: out,
        registered_name: null,
        ...(Array.isArray(batchShape) ? { build_config: { input_shape: batchShape } } : {}),
      };
    }
    const layers = raw.map((l, i) => layer(l, `${at} → layers[${i}]`, depth, true));
    // A nested model has one call node fewer in Keras 3 than in tfjs (keras-config.ts adds it back).
    const nested = new Set(raw.filter((l) => isObject(l) && (l.class_name === 'Model' || l.class_name === 'Sequential')).map((l) => (l as Json).name));
    const shift = (ref: unknown): void => {
      if (Array.isArray(ref) && nested.has(ref[0]) && typeof ref[1] === 'number') ref[1] -= 1;
    };
    for (const l of layers) {
      for (const n of (l.inbound_nodes as Json[]) ?? []) {
        const walk = (v: unknown): void => (Array.isArray(v) ? v.forEach(walk) : isObject(v) && isObject(v.config) ? shift(v.config.keras_history) : undefined);
        walk(n.args);
      }
    }
    const refs = (v: unknown): unknown[] => (Array.isArray(v) ? (v as unknown[]).map((r) => (Array.isArray(r) ? [...r] : r)) : []);
    const outputs = refs(config.output_layers);
    for (const r of outputs) shift(r);
    return {
      module: 'keras.src.models.functional',
      class_name: 'Functional',
      config: { name: config.name, trainable: true, layers, input_layers: refs(config.input_layers), output_layers: outputs },
      registered_name: 'Functional',
    };
  };

  if (!isObject(topology) || typeof topology.class_name !== 'string' || !isObject(topology.config)) {
    bad('the model topology is not a { class_name, config } object (a binary topology cannot be saved as Keras)');
  }
  const top = topology as Json;
  if (top.class_name !== 'Sequential' && top.class_name !== 'Model') bad(`the topology is a ${String(top.class_name)}, not a Sequential or functional model`);
  const config = model(top.class_name as string, top.config as Json, String(top.class_name), 0);
  if (problems.length > 0) {
    throw new NpyError(
      'UNSUPPORTED_LAYER',
      `${where}: Keras 3 cannot load ${problems.length === 1 ? 'one part' : `${problems.length} parts`} of this tfjs model:\n  ${problems.join('\n  ')}\n` +
        'Replace them with layers Keras 3 has, or save the model with npzHandler.',
    );
  }
  return { config };
}
