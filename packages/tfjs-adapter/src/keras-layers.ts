/**
 * `@npyts/tfjs/keras-layers`: Keras 3 layers and activations that tfjs-layers 4.22 lacks, or cannot
 * build as Keras 3 configures them, as tfjs-layers layers registered for deserialization under
 * Keras's own class names: importing this entry is enough for `tf.loadLayersModel` to build a model
 * JSON (or a Keras config translated to one) that names them. Each layer's weights are Keras's, in
 * Keras's order and shapes (`layer.get_weights()`), and each computes what Keras computes at
 * inference and trains as Keras does (one SGD step gives Keras's weights; tested against Keras 3
 * itself). Initializers, regularizers and constraints in a Keras config are not read: the layers are
 * for models whose weights come from a file. `kerasHandler` imports this entry when a model needs it.
 *
 * Importing this entry replaces tfjs's `GRU` by one that builds Keras 3's default
 * `reset_after=True` as well as `reset_after=False` (same weights as tfjs's in that case).
 */
import * as tf from '@tensorflow/tfjs-core';
import * as tfl from '@tensorflow/tfjs-layers';
import { NpyError } from '@npyts/core';
import { KERAS_INFERENCE_IDENTITIES, KERAS_LAYER_CLASSES, kerasActivation } from './keras-entry-names.js';
import { registerRepeat } from './keras-repeats.js';

export { KERAS_INFERENCE_IDENTITIES, KERAS_LAYER_CLASSES, kerasActivation };

/** What every tfjs-layers layer takes (`name`, `inputShape`, …). */
export type KerasLayerArgs = NonNullable<ConstructorParameters<typeof tfl.layers.Layer>[0]>;

const single = (inputs: tf.Tensor | tf.Tensor[]): tf.Tensor => (Array.isArray(inputs) ? inputs[0]! : inputs);
const firstShape = (shape: tfl.Shape | tfl.Shape[]): tfl.Shape => (Array.isArray(shape[0]) ? shape[0] : shape) as tfl.Shape;
const shapesOf = (shape: tfl.Shape | tfl.Shape[]): tfl.Shape[] => (Array.isArray(shape[0]) ? (shape as tfl.Shape[]) : [shape as tfl.Shape]);

/** `value` when it is a positive integer; else a RangeError naming the layer's argument. */
function positiveInteger(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) throw new RangeError(`${what} must be a positive integer, not ${String(value)}`);
  return value;
}

/** A Keras size argument (one integer for both sides, or two) as [before, after], each at least `least`. */
function pairOf(value: unknown, fallback: number, what: string, least: number): [number, number] {
  const pair = value === undefined || value === null ? [fallback, fallback] : typeof value === 'number' ? [value, value] : value;
  if (!Array.isArray(pair) || pair.length !== 2 || !pair.every((v) => typeof v === 'number' && Number.isSafeInteger(v) && v >= least)) {
    throw new RangeError(`${what} must be an integer of at least ${least}, or two, not ${JSON.stringify(value)}`);
  }
  return [pair[0] as number, pair[1] as number];
}

/** Keras layers that only take channels-last data here: refuse `channels_first` (tfjs spells it `channelsFirst`). */
function channelsLast(dataFormat: unknown, what: string): void {
  if (dataFormat !== undefined && dataFormat !== null && dataFormat !== 'channelsLast' && dataFormat !== 'channels_last') {
    throw new RangeError(`${what}: only data_format 'channels_last' is supported, not ${JSON.stringify(dataFormat)}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Activations
// ---------------------------------------------------------------------------------------------

/**
 * What a tfjs activation is: a serializable function of a tensor (tfjs's own base class is not
 * exported). The activations this entry registers are of this class.
 * @example
 * const [cls, fromConfig] = tf.serialization.SerializationMap.getMap().classNameMap[kerasActivation('hard_silu')!]!;
 * const y = (fromConfig(cls, {}) as KerasActivation).apply(x);
 */
export abstract class KerasActivation extends tf.serialization.Serializable {
  abstract apply(x: tf.Tensor): tf.Tensor;
  override getConfig(): tf.serialization.ConfigDict {
    return {};
  }
}

/** A registered activation class computing `fn`, named as tfjs looks it up (Keras's name in camelCase). */
function activationClass(className: string, fn: (x: tf.Tensor) => tf.Tensor): typeof KerasActivation & { className: string } {
  const cls = class extends KerasActivation {
    static readonly className = className;
    apply(x: tf.Tensor): tf.Tensor {
      return tf.tidy(() => fn(x));
    }
  };
  tf.serialization.registerClass(cls);
  return cls;
}

/**
 * `fn` with the gradient `dy · derivative(x)`: for functions chosen piecewise by `tf.where` on the
 * input, whose comparisons have no gradient in tfjs (backpropagation through them throws).
 */
function withDerivative(fn: (x: tf.Tensor) => tf.Tensor, derivative: (x: tf.Tensor) => tf.Tensor): (x: tf.Tensor) => tf.Tensor {
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [x, save] = args as [tf.Tensor, tf.GradSaveFunc];
    save([x]);
    return { value: fn(x), gradFunc: (dy: tf.Tensor, [saved]: tf.Tensor[]) => tf.mul(dy, derivative(saved!)) };
  });
  return (x) => f(x);
}

/** Keras 3's hard_sigmoid: relu6(x + 3) / 6 (Keras 2's and tfjs's `hardSigmoid` is clip(0.2·x + 0.5, 0, 1), another function). */
const hardSigmoid3 = (x: tf.Tensor): tf.Tensor => tf.div(tf.relu6(tf.add(x, 3)), 6);

/**
 * Keras 3's activations that tfjs has not, or has under the same name computing something else,
 * by the class name each is registered under here (Keras's name in camelCase, the form tfjs's
 * deserializer turns a Keras name into, except `kerasHardSigmoid`, whose camelCase name is tfjs's
 * other function).
 */
const REGISTERED_ACTIVATIONS = {
  hardSilu: activationClass('hardSilu', (x) => tf.mul(x, hardSigmoid3(x))),
  hardSwish: activationClass('hardSwish', (x) => tf.mul(x, hardSigmoid3(x))),
  kerasHardSigmoid: activationClass('kerasHardSigmoid', hardSigmoid3),
  leakyRelu: activationClass('leakyRelu', (x) => tf.leakyRelu(x, 0.2)),
  exponential: activationClass('exponential', (x) => tf.exp(x)),
  hardTanh: activationClass('hardTanh', (x) => tf.clipByValue(x, -1, 1)),
  // −softplus(−x), tf.logSigmoid's value: its own gradient reads its input after a layer's tidy disposed it.
  logSigmoid: activationClass('logSigmoid', (x) => tf.neg(tf.softplus(tf.neg(x)))),
  celu: activationClass('celu', (x) => tf.add(tf.relu(x), tf.minimum(0, tf.expm1(x)))),
  tanhShrink: activationClass('tanhShrink', (x) => tf.sub(x, tf.tanh(x))),
  // x − t·sign(x) beyond ±t, else 0 (x − x): Keras's values, differentiable without a comparison.
  softShrink: activationClass('softShrink', (x) => tf.sub(x, tf.clipByValue(x, -0.5, 0.5))),
  hardShrink: activationClass(
    'hardShrink',
    withDerivative(
      (x) => tf.where(tf.greater(tf.abs(x), 0.5), x, tf.zerosLike(x)),
      (x) => tf.cast(tf.greater(tf.abs(x), 0.5), 'float32'),
    ),
  ),
  squareplus: activationClass('squareplus', (x) => tf.div(tf.add(x, tf.sqrt(tf.add(tf.square(x), 4))), 2)),
  sparsePlus: activationClass(
    'sparsePlus',
    withDerivative(
      (x) => tf.where(tf.lessEqual(x, -1), tf.zerosLike(x), tf.where(tf.greaterEqual(x, 1), x, tf.div(tf.square(tf.add(x, 1)), 4))),
      (x) => tf.div(tf.add(tf.clipByValue(x, -1, 1), 1), 2),
    ),
  ),
  sparseSigmoid: activationClass('sparseSigmoid', (x) => tf.clipByValue(tf.div(tf.add(x, 1), 2), 0, 1)),
};

/** The activation registered under `name` (tfjs's own or this entry's), to call on tensors. */
function activationOf(name: unknown, where: string): { apply(x: tf.Tensor): tf.Tensor; getClassName(): string } {
  const id = name === undefined || name === null ? 'linear' : name;
  const entry = typeof id === 'string' ? tf.serialization.SerializationMap.getMap().classNameMap[id] : undefined;
  if (!entry) throw new RangeError(`${where}: tfjs has no activation ${JSON.stringify(id)} (kerasActivation() maps Keras's names)`);
  const [cls, fromConfig] = entry;
  return fromConfig(cls, {}) as unknown as { apply(x: tf.Tensor): tf.Tensor; getClassName(): string };
}

// ---------------------------------------------------------------------------------------------
// Layers without weights
// ---------------------------------------------------------------------------------------------

/**
 * Keras's `Subtract`: the first input minus the second (broadcast as Keras does).
 * @example
 * const diff = new KerasSubtract({ name: 'subtract' }).apply([a, b]);
 */
export class KerasSubtract extends tfl.layers.Layer {
  static readonly className = 'Subtract';
  override computeOutputShape(inputShape: tfl.Shape | tfl.Shape[]): tfl.Shape {
    const shapes = shapesOf(inputShape);
    if (shapes.length !== 2) throw new RangeError(`Subtract '${this.name}' takes exactly two inputs, not ${shapes.length}`);
    const [a, b] = shapes as [tfl.Shape, tfl.Shape];
    const rank = Math.max(a.length, b.length);
    return Array.from({ length: rank }, (_, i) => {
      const x = a[a.length - rank + i] ?? 1;
      const y = b[b.length - rank + i] ?? 1;
      return x === 1 ? y : x;
    });
  }
  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    if (!Array.isArray(inputs) || inputs.length !== 2) throw new RangeError(`Subtract '${this.name}' takes exactly two inputs`);
    return tf.sub(inputs[0]!, inputs[1]!);
  }
}

/** Arguments of {@link KerasUnitNormalization}. */
export interface UnitNormalizationArgs extends KerasLayerArgs {
  /** The axis or axes to normalize over (default -1). */
  axis?: number | number[];
}

/**
 * Keras's `UnitNormalization`: x divided by its L2 norm over `axis` (at least 1e-12, as Keras).
 * @example
 * const unit = new KerasUnitNormalization({ axis: -1 });
 */
export class KerasUnitNormalization extends tfl.layers.Layer {
  static readonly className = 'UnitNormalization';
  readonly axis: number[];
  constructor(args: UnitNormalizationArgs = {}) {
    super(args);
    this.axis = typeof args.axis === 'number' ? [args.axis] : Array.isArray(args.axis) ? [...args.axis] : [-1];
  }
  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    return tf.tidy(() => {
      const x = single(inputs);
      const squares = tf.sum(tf.square(x), this.axis, true);
      return tf.mul(x, tf.rsqrt(tf.maximum(squares, 1e-24)));
    });
  }
  override getConfig(): tf.serialization.ConfigDict {
    return { ...super.getConfig(), axis: [...this.axis] };
  }
}

/** Arguments of {@link KerasCropping1D}. */
export interface Cropping1DArgs extends KerasLayerArgs {
  /** Steps cut from the start and the end (one number for both; default 1). */
  cropping?: number | [number, number];
}

/**
 * Keras's `Cropping1D` on `[batch, steps, features]`.
 * @example
 * const crop = new KerasCropping1D({ cropping: [1, 2] });
 */
export class KerasCropping1D extends tfl.layers.Layer {
  static readonly className = 'Cropping1D';
  readonly cropping: [number, number];
  constructor(args: Cropping1DArgs = {}) {
    super(args);
    this.cropping = pairOf(args.cropping, 1, 'Cropping1D: cropping', 0);
  }
  override computeOutputShape(inputShape: tfl.Shape | tfl.Shape[]): tfl.Shape {
    const s = firstShape(inputShape);
    return [s[0]!, s[1] === null || s[1] === undefined ? null : s[1] - this.cropping[0] - this.cropping[1], s[2]!];
  }
  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    const x = single(inputs);
    const steps = x.shape[1]! - this.cropping[0] - this.cropping[1];
    if (steps < 0) throw new RangeError(`Cropping1D '${this.name}': cropping ${this.cropping} is longer than ${x.shape[1]} steps`);
    return tf.slice(x, [0, this.cropping[0], 0], [-1, steps, -1]);
  }
  override getConfig(): tf.serialization.ConfigDict {
    return { ...super.getConfig(), cropping: [...this.cropping] };
  }
}

/** Arguments of {@link KerasZeroPadding1D}. */
export interface ZeroPadding1DArgs extends KerasLayerArgs {
  /** Zero steps added at the start and the end (one number for both; default 1). */
  padding?: number | [number, number];
}

/**
 * Keras's `ZeroPadding1D` on `[batch, steps, features]`.
 * @example
 * const pad = new KerasZeroPadding1D({ padding: [2, 1] });
 */
export class KerasZeroPadding1D extends tfl.layers.Layer {
  static readonly className = 'ZeroPadding1D';
  readonly padding: [number, number];
  constructor(args: ZeroPadding1DArgs = {}) {
    super(args);
    this.padding = pairOf(args.padding, 1, 'ZeroPadding1D: padding', 0);
  }
  override computeOutputShape(inputShape: tfl.Shape | tfl.Shape[]): tfl.Shape {
    const s = firstShape(inputShape);
    return [s[0]!, s[1] === null || s[1] === undefined ? null : s[1] + this.padding[0] + this.padding[1], s[2]!];
  }
  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    return tf.pad(single(inputs), [[0, 0], this.padding, [0, 0]]);
  }
  override getConfig(): tf.serialization.ConfigDict {
    return { ...super.getConfig(), padding: [...this.padding] };
  }
}

/** Arguments of {@link KerasUpSampling1D}. */
export interface UpSampling1DArgs extends KerasLayerArgs {
  /** How many times each step is repeated (default 2). */
  size?: number;
}

/**
 * Keras's `UpSampling1D`: each step of `[batch, steps, features]` repeated `size` times.
 * @example
 * const up = new KerasUpSampling1D({ size: 3 });
 */
export class KerasUpSampling1D extends tfl.layers.Layer {
  static readonly className = 'UpSampling1D';
  readonly size: number;
  constructor(args: UpSampling1DArgs = {}) {
    super(args);
    this.size = positiveInteger(args.size ?? 2, 'UpSampling1D: size');
  }
  override computeOutputShape(inputShape: tfl.Shape | tfl.Shape[]): tfl.Shape {
    const s = firstShape(inputShape);
    return [s[0]!, s[1] === null || s[1] === undefined ? null : s[1] * this.size, s[2]!];
  }
  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    return tf.tidy(() => {
      const x = single(inputs) as tf.Tensor3D;
      const [batch, steps, features] = x.shape;
      return tf.reshape(tf.tile(tf.expandDims(x, 2), [1, 1, this.size, 1]), [batch, steps * this.size, features]);
    });
  }
  override getConfig(): tf.serialization.ConfigDict {
    return { ...super.getConfig(), size: this.size };
  }
}

/**
 * A Keras layer that is the identity at inference: the random augmentations (`RandomFlip`,
 * `RandomRotation`, …, which Keras applies only in training), `SpatialDropout2D`/`3D` and
 * `ActivityRegularization`. Their options are kept in the config and not otherwise read; training
 * through one is refused (`UNSUPPORTED_LAYER`), since Keras's differs there. Each of
 * {@link KERAS_INFERENCE_IDENTITIES} is registered as a subclass of this one under its Keras name.
 * @example
 * const flip = new KerasInferenceIdentity({ name: 'random_flip' });
 */
export class KerasInferenceIdentity extends tfl.layers.Layer {
  static readonly className: string = 'KerasInferenceIdentity';
  private readonly options: tf.serialization.ConfigDict;
  constructor(args: KerasLayerArgs & Record<string, unknown> = {}) {
    super(args);
    const { name: _n, trainable: _t, dtype: _d, inputShape: _i, batchInputShape: _b, batchSize: _s, ...options } = args;
    this.options = options as tf.serialization.ConfigDict;
  }
  /** Refused in training (`fit`), where Keras augments, drops or adds a loss: the identity would train another model. */
  override call(inputs: tf.Tensor | tf.Tensor[], kwargs: Record<string, unknown> = {}): tf.Tensor {
    if (kwargs.training === true) {
      throw new NpyError(
        'UNSUPPORTED_LAYER',
        `${this.getClassName()} '${this.name}' is the identity at inference only: in training Keras applies it (random augmentation, dropout or an activity loss), ` +
          'which @npyts/tfjs/keras-layers does not; take the layer out of the model to train it in tfjs',
      );
    }
    return tf.clone(single(inputs));
  }
  override getConfig(): tf.serialization.ConfigDict {
    return { ...this.options, ...super.getConfig() };
  }
}

const identityClasses = KERAS_INFERENCE_IDENTITIES.map((className) => {
  const cls = class extends KerasInferenceIdentity {
    static override readonly className = className;
  };
  tf.serialization.registerClass(cls);
  return cls;
});
void identityClasses;

// ---------------------------------------------------------------------------------------------
// Normalizations
// ---------------------------------------------------------------------------------------------

/** Arguments of {@link KerasNormalization}. */
export interface NormalizationArgs extends KerasLayerArgs {
  /** The axes that keep their own mean and variance (default -1; `null` or `[]` for one over everything). */
  axis?: number | number[] | null;
  /** Given values (then the layer has no weights); else the weights `mean`, `variance`, `count`. */
  mean?: number | number[] | null;
  variance?: number | number[] | null;
  /** x · √variance + mean instead (default false). */
  invert?: boolean;
}

/**
 * Keras's `Normalization`: (x − mean) / max(√variance, 1e-7). Without `mean` and `variance` in the
 * config its weights are Keras's: `mean` and `variance` (one value per kept axis position) and
 * `count` (int32 scalar, not used at inference).
 * @example
 * const norm = new KerasNormalization({ axis: -1 });
 */
export class KerasNormalization extends tfl.layers.Layer {
  static readonly className = 'Normalization';
  readonly axis: number[];
  readonly invert: boolean;
  private readonly givenMean: number | number[] | null;
  private readonly givenVariance: number | number[] | null;
  private mean: tfl.LayerVariable | null = null;
  private variance: tfl.LayerVariable | null = null;
  private broadcast: number[] = [];

  constructor(args: NormalizationArgs = {}) {
    super(args);
    this.axis = args.axis === undefined ? [-1] : args.axis === null ? [] : typeof args.axis === 'number' ? [args.axis] : [...args.axis];
    this.invert = args.invert ?? false;
    this.givenMean = args.mean ?? null;
    this.givenVariance = args.variance ?? null;
    if ((this.givenMean === null) !== (this.givenVariance === null)) throw new RangeError('Normalization: give both mean and variance, or neither');
  }

  override build(inputShape: tfl.Shape | tfl.Shape[]): void {
    const shape = firstShape(inputShape);
    const rank = shape.length;
    const keep = this.axis.map((a) => (a < 0 ? a + rank : a));
    if (keep.some((a) => a < 1 || a >= rank))
      throw new RangeError(`Normalization '${this.name}': axis ${JSON.stringify(this.axis)} is outside a rank-${rank} input`);
    const dims = keep.map((a) => shape[a]);
    if (!dims.every((d): d is number => typeof d === 'number'))
      throw new RangeError(`Normalization '${this.name}': the kept axes need known sizes, not [${shape}]`);
    this.broadcast = shape.map((d, i) => (keep.includes(i) ? (d as number) : 1));
    if (this.givenMean === null) {
      this.mean = this.addWeight('mean', dims, 'float32', tfl.initializers.zeros(), undefined, false);
      this.variance = this.addWeight('variance', dims, 'float32', tfl.initializers.ones(), undefined, false);
      // Keras's count of adapted samples: kept for the weights' order, not read at inference.
      this.addWeight('count', [], 'int32', tfl.initializers.zeros(), undefined, false);
    }
    this.built = true;
  }

  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    return tf.tidy(() => {
      const x = single(inputs);
      const value = (w: tfl.LayerVariable | null, given: number | number[] | null): tf.Tensor => {
        const t = w ? w.read() : tf.tensor(given as number | number[], undefined, 'float32');
        return t.size === 1 ? tf.reshape(t, []) : tf.reshape(t, this.broadcast);
      };
      const mean = value(this.mean, this.givenMean);
      const std = tf.maximum(tf.sqrt(value(this.variance, this.givenVariance)), 1e-7);
      return this.invert ? tf.add(mean, tf.mul(x, std)) : tf.div(tf.sub(x, mean), std);
    });
  }

  override getConfig(): tf.serialization.ConfigDict {
    return { ...super.getConfig(), axis: [...this.axis], invert: this.invert, mean: this.givenMean, variance: this.givenVariance };
  }
}

/** Arguments of {@link KerasGroupNormalization}. */
export interface GroupNormalizationArgs extends KerasLayerArgs {
  /** Channel groups (default 32); the channels must divide by it. */
  groups?: number;
  /** The channel axis: -1 only (channels last). */
  axis?: number;
  /** Default 1e-3. */
  epsilon?: number;
  /** With `beta` (default true). */
  center?: boolean;
  /** With `gamma` (default true). */
  scale?: boolean;
}

/**
 * Keras's `GroupNormalization` on channels-last input: the channels cut into `groups`, each group
 * normalized over every axis but the batch's by its mean and variance, then scaled by `gamma` and
 * shifted by `beta` (weights in that order, one value per channel).
 * @example
 * const gn = new KerasGroupNormalization({ groups: 8 });
 */
export class KerasGroupNormalization extends tfl.layers.Layer {
  static readonly className = 'GroupNormalization';
  readonly groups: number;
  readonly epsilon: number;
  readonly center: boolean;
  readonly scale: boolean;
  private gamma: tfl.LayerVariable | null = null;
  private beta: tfl.LayerVariable | null = null;

  constructor(args: GroupNormalizationArgs = {}) {
    super(args);
    this.groups = positiveInteger(args.groups ?? 32, 'GroupNormalization: groups');
    if (args.axis !== undefined && args.axis !== -1) throw new RangeError(`GroupNormalization: only axis -1 (channels last) is supported, not ${args.axis}`);
    this.epsilon = args.epsilon ?? 1e-3;
    this.center = args.center ?? true;
    this.scale = args.scale ?? true;
  }

  override build(inputShape: tfl.Shape | tfl.Shape[]): void {
    const shape = firstShape(inputShape);
    const channels = shape[shape.length - 1];
    if (typeof channels !== 'number' || channels % this.groups !== 0) {
      throw new RangeError(`GroupNormalization '${this.name}': ${String(channels)} channels do not divide into ${this.groups} groups`);
    }
    if (this.scale) this.gamma = this.addWeight('gamma', [channels], 'float32', tfl.initializers.ones());
    if (this.center) this.beta = this.addWeight('beta', [channels], 'float32', tfl.initializers.zeros());
    this.built = true;
  }

  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    return tf.tidy(() => {
      const x = single(inputs);
      const shape = x.shape;
      const channels = shape[shape.length - 1]!;
      const grouped = tf.reshape(x, [...shape.slice(0, -1), this.groups, channels / this.groups]);
      const rank = grouped.rank;
      const axes = Array.from({ length: rank }, (_, i) => i).filter((i) => i !== 0 && i !== rank - 2);
      const { mean, variance } = tf.moments(grouped, axes, true);
      let inv = tf.rsqrt(tf.add(variance, this.epsilon));
      const perGroup = [this.groups, channels / this.groups];
      if (this.gamma) inv = tf.mul(inv, tf.reshape(this.gamma.read(), perGroup));
      let res = tf.mul(tf.neg(mean), inv);
      if (this.beta) res = tf.add(res, tf.reshape(this.beta.read(), perGroup));
      return tf.reshape(tf.add(tf.mul(grouped, inv), res), shape);
    });
  }

  override getConfig(): tf.serialization.ConfigDict {
    return { ...super.getConfig(), groups: this.groups, axis: -1, epsilon: this.epsilon, center: this.center, scale: this.scale };
  }
}

// ---------------------------------------------------------------------------------------------
// EinsumDense and MultiHeadAttention
// ---------------------------------------------------------------------------------------------

/** The kernel's, the bias's and the output's shapes of an EinsumDense, as Keras's `_analyze_split_string` computes them (no ellipsis). */
function analyzeEinsum(
  equation: string,
  biasAxes: string | null,
  inputShape: readonly (number | null)[],
  outputShape: readonly (number | null)[],
  where: string,
): { kernel: number[]; bias: number[] | null; output: (number | null)[] } {
  const m = /^([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)$/.exec(equation);
  if (!m) throw new RangeError(`${where}: equation ${JSON.stringify(equation)} is not of the form 'ab,bc->ac' (an ellipsis '...' is not supported)`);
  const [, inputSpec, weightSpec, outputSpec] = m as unknown as [string, string, string, string];
  if (inputSpec.length !== inputShape.length)
    throw new RangeError(`${where}: equation ${equation} names ${inputSpec.length} input axes, the input has ${inputShape.length}`);
  const output = [inputShape[0] ?? null, ...outputShape];
  if (output.length !== outputSpec.length) throw new RangeError(`${where}: output_shape ${JSON.stringify(outputShape)} does not fit ${equation}`);
  const inputAt = new Map([...inputSpec].map((c, i) => [c, i]));
  const outputAt = new Map([...outputSpec].map((c, i) => [c, i]));
  for (const [c, i] of inputAt) {
    const o = outputAt.get(c);
    if (o !== undefined) {
      if (output[o] === null) output[o] = inputShape[i] ?? null;
      else if (inputShape[i] !== null && output[o] !== inputShape[i])
        throw new RangeError(`${where}: axis ${c} is ${inputShape[i]} in the input and ${output[o]} in output_shape`);
    }
  }
  const kernel = [...weightSpec].map((c) => {
    const size = inputAt.has(c) ? inputShape[inputAt.get(c)!] : outputAt.has(c) ? output[outputAt.get(c)!] : undefined;
    if (typeof size !== 'number') throw new RangeError(`${where}: the weight axis ${c} of ${equation} has no known size`);
    return size;
  });
  let bias: number[] | null = null;
  if (biasAxes) {
    for (const c of biasAxes) if (!outputAt.has(c)) throw new RangeError(`${where}: bias axis ${c} is not an output axis of ${equation}`);
    const first = Math.min(...[...biasAxes].map((c) => outputSpec.indexOf(c)));
    bias = [...outputSpec.slice(first)].map((c) => {
      if (!biasAxes.includes(c)) return 1;
      const size = output[outputAt.get(c)!];
      if (typeof size !== 'number') throw new RangeError(`${where}: bias axis ${c} has no known size`);
      return size;
    });
  }
  return { kernel, bias, output };
}

/**
 * `einsum(equation, a, b)` of two operands without an ellipsis or a letter repeated in one operand, as
 * sums, transposes, reshapes and one batched matMul: tfjs-core 4.22's `tf.einsum` has no gradient, so a
 * model using it could not train. Letters in both operands and the output are batch axes, in both
 * operands only are contracted, in one operand only are summed out first.
 */
function einsum(equation: string, a: tf.Tensor, b: tf.Tensor): tf.Tensor {
  const m = /^([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]*)$/.exec(equation);
  const [, specA, specB, specOut] = (m ?? []) as unknown as [string, string, string, string];
  const repeats = (spec: string): boolean => new Set(spec).size !== spec.length;
  if (!m || repeats(specA) || repeats(specB) || repeats(specOut) || [...specOut].some((c) => !specA.includes(c) && !specB.includes(c))) {
    throw new RangeError(`einsum: ${JSON.stringify(equation)} is not a two-operand equation this layer computes (no ellipsis, no repeated axis)`);
  }
  if (specA.length !== a.rank || specB.length !== b.rank) throw new RangeError(`einsum ${equation}: operands of ranks ${a.rank} and ${b.rank}`);
  return tf.tidy(() => {
    const size = new Map<string, number>();
    for (const [spec, t] of [
      [specA, a],
      [specB, b],
    ] as const) {
      [...spec].forEach((c, i) => {
        const d = t.shape[i]!;
        if (size.has(c) && size.get(c) !== d) throw new RangeError(`einsum ${equation}: axis ${c} is ${size.get(c)} in one operand and ${d} in the other`);
        size.set(c, d);
      });
    }
    const inOut = (c: string): boolean => specOut.includes(c);
    /** The operand with the axes only it has (and the output lacks) summed out, and its remaining letters. */
    const reduced = (spec: string, other: string, t: tf.Tensor): [tf.Tensor, string] => {
      const gone = [...spec].map((c, i) => [c, i] as const).filter(([c]) => !other.includes(c) && !inOut(c));
      return gone.length === 0
        ? [t, spec]
        : [
            tf.sum(
              t,
              gone.map(([, i]) => i),
            ),
            [...spec].filter((c) => other.includes(c) || inOut(c)).join(''),
          ];
    };
    const [ra, la] = reduced(specA, specB, a);
    const [rb, lb] = reduced(specB, specA, b);
    const batch = [...la].filter((c) => lb.includes(c) && inOut(c));
    const contracted = [...la].filter((c) => lb.includes(c) && !inOut(c));
    const freeA = [...la].filter((c) => !lb.includes(c));
    const freeB = [...lb].filter((c) => !la.includes(c));
    const n = (letters: string[]): number => letters.reduce((p, c) => p * size.get(c)!, 1);
    const arranged = (t: tf.Tensor, letters: string, order: string[], dims: number[]): tf.Tensor =>
      tf.reshape(
        tf.transpose(
          t,
          order.map((c) => letters.indexOf(c)),
        ),
        dims,
      );
    const left = arranged(ra, la, [...batch, ...freeA, ...contracted], [n(batch), n(freeA), n(contracted)]);
    const right = arranged(rb, lb, [...batch, ...contracted, ...freeB], [n(batch), n(contracted), n(freeB)]);
    const product = [...batch, ...freeA, ...freeB];
    const y = tf.reshape(
      tf.matMul(left, right),
      product.map((c) => size.get(c)!),
    );
    return tf.transpose(
      y,
      [...specOut].map((c) => product.indexOf(c)),
    );
  });
}

/** Arguments of {@link KerasEinsumDense}. */
export interface EinsumDenseArgs extends KerasLayerArgs {
  /** Keras's equation, `'<input>,<kernel>-><output>'` (`'abc,cde->abde'`); an ellipsis is not supported. */
  equation: string;
  /** The output's shape without the batch axis (`null` for a size taken from the input). */
  outputShape: number | (number | null)[];
  /** The output axes that have a bias (letters of the equation's output), or none. */
  biasAxes?: string | null;
  /** A registered activation's name (see {@link kerasActivation}); default linear. */
  activation?: string | null;
}

/**
 * Keras's `EinsumDense`: `einsum(equation, x, kernel) + bias`, then the activation. The kernel's and
 * the bias's shapes are Keras's.
 * @example
 * const proj = new KerasEinsumDense({ equation: 'abc,cde->abde', outputShape: [null, 4, 8], biasAxes: 'de' });
 */
export class KerasEinsumDense extends tfl.layers.Layer {
  static readonly className = 'EinsumDense';
  readonly equation: string;
  readonly partialOutputShape: (number | null)[];
  readonly biasAxes: string | null;
  private readonly activationFn: ReturnType<typeof activationOf>;
  private kernel: tfl.LayerVariable | null = null;
  private bias: tfl.LayerVariable | null = null;

  constructor(args: EinsumDenseArgs) {
    super(args);
    this.equation = args.equation;
    this.partialOutputShape = typeof args.outputShape === 'number' ? [args.outputShape] : [...args.outputShape];
    this.biasAxes = args.biasAxes ?? null;
    this.activationFn = activationOf(args.activation, `EinsumDense '${this.name}'`);
  }

  override build(inputShape: tfl.Shape | tfl.Shape[]): void {
    const { kernel, bias } = analyzeEinsum(this.equation, this.biasAxes, firstShape(inputShape), this.partialOutputShape, `EinsumDense '${this.name}'`);
    this.kernel = this.addWeight('kernel', kernel, 'float32', tfl.initializers.glorotUniform({}));
    if (bias) this.bias = this.addWeight('bias', bias, 'float32', tfl.initializers.zeros());
    this.built = true;
  }

  override computeOutputShape(inputShape: tfl.Shape | tfl.Shape[]): tfl.Shape {
    return analyzeEinsum(this.equation, this.biasAxes, firstShape(inputShape), this.partialOutputShape, `EinsumDense '${this.name}'`).output;
  }

  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    return tf.tidy(() => {
      let y = einsum(this.equation, single(inputs), this.kernel!.read());
      if (this.bias) y = tf.add(y, this.bias.read());
      return this.activationFn.apply(y);
    });
  }

  override getConfig(): tf.serialization.ConfigDict {
    return {
      ...super.getConfig(),
      equation: this.equation,
      outputShape: [...this.partialOutputShape],
      biasAxes: this.biasAxes,
      activation: this.activationFn.getClassName(),
    };
  }
}

/** Arguments of {@link KerasMultiHeadAttention}. */
export interface MultiHeadAttentionArgs extends KerasLayerArgs {
  numHeads: number;
  /** Each head's size for the query and the key. */
  keyDim: number;
  /** Each head's size for the value (default `keyDim`). */
  valueDim?: number | null;
  /** Default true. */
  useBias?: boolean;
  /** The output's last axis (default the query's). */
  outputShape?: number | number[] | null;
  /** Keras's default only: attention over the axis before the features of `[batch, length, features]`. */
  attentionAxes?: number | number[] | null;
  /** Keras's gated attention: not supported (refused when true). */
  useGate?: boolean;
  /** Keras's sliding window: not supported (refused unless null). */
  slidingWindow?: number | null;
}

/** A call's `useCausalMask` (Keras's `use_causal_mask`, camel-cased by tfjs's deserializer or not). */
const causalOf = (kwargs: Record<string, unknown> | undefined): boolean => kwargs?.useCausalMask === true || kwargs?.use_causal_mask === true;

/**
 * Keras's `MultiHeadAttention` on `[batch, length, features]` inputs: applied to `[query, value]` or
 * `[query, value, key]` (Keras's argument order), it gives the attention output. Its weights are
 * Keras's, in Keras's order: `query/kernel` `[features, heads, keyDim]`, `query/bias` `[heads, keyDim]`,
 * the same for `key` and `value` (`valueDim`), and `attention_output/kernel` `[heads, valueDim, out]`,
 * `attention_output/bias` `[out]`. The call option `useCausalMask` (Keras's `use_causal_mask`) masks
 * each query position from the keys after it; attention masks as tensors are not supported.
 * @example
 * const attn = new KerasMultiHeadAttention({ numHeads: 4, keyDim: 16 });
 * const y = attn.apply([x, x]);
 */
export class KerasMultiHeadAttention extends tfl.layers.Layer {
  static readonly className = 'MultiHeadAttention';
  readonly numHeads: number;
  readonly keyDim: number;
  readonly valueDim: number;
  readonly useBias: boolean;
  /** The output's last axis as configured (null: the query's). */
  readonly outputDim: number | null;
  private readonly w: Record<string, tfl.LayerVariable | null> = {};
  /** `useCausalMask` as the model's graph called the layer (tfjs's predict does not pass a node's call arguments on). */
  private graphCausal: boolean | null = null;

  constructor(args: MultiHeadAttentionArgs) {
    super(args);
    this.numHeads = positiveInteger(args.numHeads, 'MultiHeadAttention: numHeads');
    this.keyDim = positiveInteger(args.keyDim, 'MultiHeadAttention: keyDim');
    this.valueDim = args.valueDim === undefined || args.valueDim === null ? this.keyDim : positiveInteger(args.valueDim, 'MultiHeadAttention: valueDim');
    this.useBias = args.useBias ?? true;
    const out = args.outputShape;
    const outDims = out === undefined || out === null ? null : typeof out === 'number' ? [out] : out;
    if (outDims && outDims.length !== 1) throw new RangeError(`MultiHeadAttention: only a one-axis output_shape is supported, not ${JSON.stringify(out)}`);
    this.outputDim = outDims ? positiveInteger(outDims[0], 'MultiHeadAttention: outputShape') : null;
    const axes = args.attentionAxes;
    if (axes !== undefined && axes !== null && JSON.stringify(typeof axes === 'number' ? [axes] : axes) !== '[1]' && JSON.stringify(axes) !== '[-2]') {
      throw new RangeError(
        `MultiHeadAttention: only attention over axis 1 of [batch, length, features] is supported, not attention_axes ${JSON.stringify(axes)}`,
      );
    }
    if (args.useGate) throw new RangeError('MultiHeadAttention: use_gate=True is not supported');
    if (args.slidingWindow !== undefined && args.slidingWindow !== null) throw new RangeError('MultiHeadAttention: sliding_window is not supported');
  }

  override build(inputShape: tfl.Shape | tfl.Shape[]): void {
    const shapes = shapesOf(inputShape);
    const [query, value] = [shapes[0]!, shapes[1] ?? shapes[0]!];
    const key = shapes[2] ?? value;
    const dim = (s: tfl.Shape, what: string): number => {
      const d = s[s.length - 1];
      if (s.length !== 3 || typeof d !== 'number')
        throw new RangeError(`MultiHeadAttention '${this.name}': the ${what} must be [batch, length, features], not [${s}]`);
      return d;
    };
    const glorot = tfl.initializers.glorotUniform({});
    const zeros = tfl.initializers.zeros();
    const H = this.numHeads;
    const dense = (part: string, kernel: number[], bias: number[]): void => {
      this.w[`${part}/kernel`] = this.addWeight(`${part}/kernel`, kernel, 'float32', glorot);
      if (this.useBias) this.w[`${part}/bias`] = this.addWeight(`${part}/bias`, bias, 'float32', zeros);
    };
    dense('query', [dim(query, 'query'), H, this.keyDim], [H, this.keyDim]);
    dense('key', [dim(key, 'key'), H, this.keyDim], [H, this.keyDim]);
    dense('value', [dim(value, 'value'), H, this.valueDim], [H, this.valueDim]);
    const out = this.outputDim ?? dim(query, 'query');
    dense('attention_output', [H, this.valueDim, out], [out]);
    this.built = true;
  }

  override computeOutputShape(inputShape: tfl.Shape | tfl.Shape[]): tfl.Shape {
    const q = shapesOf(inputShape)[0]!;
    return [q[0]!, q[1]!, this.outputDim ?? q[2]!];
  }

  /** Applied in a model's graph, the call's `useCausalMask` is kept: tfjs's predict calls the layer without it. */
  override apply(
    inputs: tf.Tensor | tf.Tensor[] | tfl.SymbolicTensor | tfl.SymbolicTensor[],
    kwargs?: Record<string, unknown>,
  ): tf.Tensor | tf.Tensor[] | tfl.SymbolicTensor | tfl.SymbolicTensor[] {
    const list = Array.isArray(inputs) ? inputs : [inputs];
    if (list.some((x) => x instanceof tfl.SymbolicTensor)) {
      const causal = causalOf(kwargs);
      if (this.graphCausal !== null && this.graphCausal !== causal) {
        throw new RangeError(`MultiHeadAttention '${this.name}': a layer shared with and without use_causal_mask is not supported`);
      }
      this.graphCausal = causal;
    }
    return super.apply(inputs, kwargs);
  }

  override call(inputs: tf.Tensor | tf.Tensor[], kwargs: Record<string, unknown> = {}): tf.Tensor {
    return tf.tidy(() => {
      const list = Array.isArray(inputs) ? inputs : [inputs];
      const query = list[0] as tf.Tensor3D;
      const value = (list[1] ?? query) as tf.Tensor3D;
      const key = (list[2] ?? value) as tf.Tensor3D;
      const given = kwargs.useCausalMask ?? kwargs.use_causal_mask;
      const causal = given === undefined ? (this.graphCausal ?? false) : given === true;
      const project = (x: tf.Tensor3D, part: string): tf.Tensor => {
        const y = einsum('abc,cde->abde', x, this.w[`${part}/kernel`]!.read());
        const b = this.w[`${part}/bias`];
        return b ? tf.add(y, b.read()) : y;
      };
      // [batch, length, heads, dim]; the query scaled by 1/√keyDim before the product, as Keras does.
      const q = tf.mul(project(query, 'query'), 1 / Math.sqrt(this.keyDim));
      const k = project(key, 'key');
      const v = project(value, 'value');
      // Scores [batch, heads, length, source]: Keras's einsum 'aecd,abcd->acbe', as a batched product.
      const qh = tf.transpose(q, [0, 2, 1, 3]);
      const kh = tf.transpose(k, [0, 2, 1, 3]);
      const vh = tf.transpose(v, [0, 2, 1, 3]);
      let scores = tf.matMul(qh, kh, false, true);
      if (causal) {
        const [length, source] = [query.shape[1], key.shape[1]];
        const rows = tf.reshape(tf.range(0, length, 1, 'int32'), [length, 1]);
        const cols = tf.reshape(tf.range(0, source, 1, 'int32'), [1, source]);
        // Keras's masked softmax: a masked score becomes -1e9 (float32), so a row with every key masked is uniform, as there.
        scores = tf.where(tf.greater(cols, rows), tf.fill(scores.shape, -1e9), scores);
      }
      const attended = tf.transpose(tf.matMul(tf.softmax(scores), vh), [0, 2, 1, 3]); // [batch, length, heads, valueDim]
      const y = einsum('abcd,cde->abe', attended, this.w['attention_output/kernel']!.read());
      const b = this.w['attention_output/bias'];
      return b ? tf.add(y, b.read()) : y;
    });
  }

  override getConfig(): tf.serialization.ConfigDict {
    return {
      ...super.getConfig(),
      numHeads: this.numHeads,
      keyDim: this.keyDim,
      valueDim: this.valueDim,
      useBias: this.useBias,
      outputShape: this.outputDim,
      attentionAxes: [1],
    };
  }
}

// ---------------------------------------------------------------------------------------------
// Conv1DTranspose
// ---------------------------------------------------------------------------------------------

/** Arguments of {@link KerasConv1DTranspose}. */
export interface Conv1DTransposeArgs extends KerasLayerArgs {
  filters: number;
  kernelSize: number | [number];
  strides?: number | [number];
  padding?: 'valid' | 'same';
  /** Keras's default (null) only. */
  outputPadding?: number | [number] | null;
  /** 1 only. */
  dilationRate?: number | [number];
  dataFormat?: string;
  useBias?: boolean;
  /** A registered activation's name (see {@link kerasActivation}); default linear. */
  activation?: string | null;
}

const oneOf = (v: number | [number] | undefined, fallback: number, what: string): number => positiveInteger(Array.isArray(v) ? v[0] : (v ?? fallback), what);

/**
 * Keras's `Conv1DTranspose` on `[batch, steps, channels]`: kernel `[kernelSize, filters, channels]`
 * (Keras's), bias `[filters]`; output length `steps·strides` (`'same'`) or
 * `steps·strides + max(kernelSize − strides, 0)` (`'valid'`), as Keras.
 * @example
 * const up = new KerasConv1DTranspose({ filters: 8, kernelSize: 3, strides: 2, padding: 'same' });
 */
export class KerasConv1DTranspose extends tfl.layers.Layer {
  static readonly className = 'Conv1DTranspose';
  readonly filters: number;
  readonly kernelSize: number;
  readonly strides: number;
  readonly padding: 'valid' | 'same';
  readonly useBias: boolean;
  private readonly activationFn: ReturnType<typeof activationOf>;
  private kernel: tfl.LayerVariable | null = null;
  private bias: tfl.LayerVariable | null = null;

  constructor(args: Conv1DTransposeArgs) {
    super(args);
    this.filters = positiveInteger(args.filters, 'Conv1DTranspose: filters');
    this.kernelSize = oneOf(args.kernelSize, 1, 'Conv1DTranspose: kernelSize');
    this.strides = oneOf(args.strides, 1, 'Conv1DTranspose: strides');
    this.padding = args.padding ?? 'valid';
    if (this.padding !== 'valid' && this.padding !== 'same')
      throw new RangeError(`Conv1DTranspose: padding must be 'valid' or 'same', not ${JSON.stringify(args.padding)}`);
    if (args.outputPadding !== undefined && args.outputPadding !== null)
      throw new RangeError('Conv1DTranspose: output_padding is not supported (only its default, None)');
    if (oneOf(args.dilationRate, 1, 'Conv1DTranspose: dilationRate') !== 1)
      throw new RangeError('Conv1DTranspose: dilation_rate other than 1 is not supported');
    channelsLast(args.dataFormat, 'Conv1DTranspose');
    this.useBias = args.useBias ?? true;
    this.activationFn = activationOf(args.activation, `Conv1DTranspose '${this.name}'`);
  }

  override build(inputShape: tfl.Shape | tfl.Shape[]): void {
    const shape = firstShape(inputShape);
    const channels = shape[2];
    if (shape.length !== 3 || typeof channels !== 'number')
      throw new RangeError(`Conv1DTranspose '${this.name}' takes [batch, steps, channels], not [${shape}]`);
    this.kernel = this.addWeight('kernel', [this.kernelSize, this.filters, channels], 'float32', tfl.initializers.glorotUniform({}));
    if (this.useBias) this.bias = this.addWeight('bias', [this.filters], 'float32', tfl.initializers.zeros());
    this.built = true;
  }

  private length(steps: number): number {
    return this.padding === 'same' ? steps * this.strides : steps * this.strides + Math.max(this.kernelSize - this.strides, 0);
  }

  override computeOutputShape(inputShape: tfl.Shape | tfl.Shape[]): tfl.Shape {
    const s = firstShape(inputShape);
    return [s[0]!, typeof s[1] === 'number' ? this.length(s[1]) : null, this.filters];
  }

  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    return tf.tidy(() => {
      const x = single(inputs) as tf.Tensor3D;
      const [batch, steps] = x.shape;
      const kernel = tf.expandDims(this.kernel!.read(), 0) as tf.Tensor4D; // [1, k, filters, channels]
      const y = tf.conv2dTranspose(tf.expandDims(x, 1) as tf.Tensor4D, kernel, [batch, 1, this.length(steps), this.filters], [1, this.strides], this.padding);
      const out = tf.squeeze(y, [1]);
      return this.activationFn.apply(this.bias ? tf.add(out, this.bias.read()) : out);
    });
  }

  override getConfig(): tf.serialization.ConfigDict {
    return {
      ...super.getConfig(),
      filters: this.filters,
      kernelSize: [this.kernelSize],
      strides: [this.strides],
      padding: this.padding,
      dilationRate: [1],
      outputPadding: null,
      dataFormat: 'channelsLast',
      useBias: this.useBias,
      activation: this.activationFn.getClassName(),
    };
  }
}

// ---------------------------------------------------------------------------------------------
// GRU
// ---------------------------------------------------------------------------------------------

/** Arguments of {@link KerasGRU}: tfjs's, with Keras 3's `resetAfter`. */
export interface KerasGRUArgs extends Omit<tfl.GRULayerArgs, 'activation' | 'recurrentActivation'> {
  /** Keras 3's default true: the reset gate acts after the recurrent product, with two biases `[2, 3·units]`. */
  resetAfter?: boolean;
  /** A registered activation's name (default 'tanh'). */
  activation?: string | null;
  /** A registered activation's name (default 'sigmoid', Keras 3's; tfjs's own GRU defaults to 'hardSigmoid'). */
  recurrentActivation?: string | null;
}

/** One step of Keras's GRU; weights `kernel` `[features, 3·units]`, `recurrent_kernel` `[units, 3·units]` (gates z, r, h), `bias`. */
class KerasGRUCell extends tfl.layers.RNNCell {
  static readonly className = 'KerasGRUCell';
  readonly units: number;
  stateSize: number;
  readonly resetAfter: boolean;
  readonly useBias: boolean;
  readonly activation: ReturnType<typeof activationOf>;
  readonly recurrentActivation: ReturnType<typeof activationOf>;
  kernel: tfl.LayerVariable | null = null;
  recurrentKernel: tfl.LayerVariable | null = null;
  bias: tfl.LayerVariable | null = null;

  constructor(args: KerasGRUArgs) {
    super({});
    this.units = positiveInteger(args.units, 'GRU: units');
    this.stateSize = this.units;
    this.resetAfter = args.resetAfter ?? true;
    this.useBias = args.useBias ?? true;
    this.activation = activationOf(args.activation === undefined ? 'tanh' : args.activation, 'GRU');
    this.recurrentActivation = activationOf(args.recurrentActivation === undefined ? 'sigmoid' : args.recurrentActivation, 'GRU');
  }

  override build(inputShape: tfl.Shape | tfl.Shape[]): void {
    const shape = firstShape(inputShape);
    const features = shape[shape.length - 1];
    if (typeof features !== 'number') throw new RangeError(`GRU takes [batch, time, features] with a known feature size, not [${shape}]`);
    const gates = 3 * this.units;
    // Glorot-uniform, not tfjs's orthogonal default, which fails in some builds of tfjs-layers; the file's weights replace them.
    this.kernel = this.addWeight('kernel', [features, gates], 'float32', tfl.initializers.glorotUniform({}));
    this.recurrentKernel = this.addWeight('recurrent_kernel', [this.units, gates], 'float32', tfl.initializers.glorotUniform({}));
    if (this.useBias) this.bias = this.addWeight('bias', this.resetAfter ? [2, gates] : [gates], 'float32', tfl.initializers.zeros());
    this.built = true;
  }

  /**
   * z = σ(x·Wz + bz + h·Uz + b'z), r likewise; reset after: hh = tanh(x·Wh + bh + r ⊙ (h·Uh + b'h)),
   * before: hh = tanh(x·Wh + bh + (r ⊙ h)·Uh); h' = z ⊙ h + (1 − z) ⊙ hh (Keras's GRUCell).
   */
  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor[] {
    return tf.tidy(() => {
      const [x, h] = inputs as tf.Tensor2D[];
      const [wz, wr, wh] = tf.split(this.kernel!.read(), 3, 1) as tf.Tensor2D[];
      const [uz, ur, uh] = tf.split(this.recurrentKernel!.read(), 3, 1) as tf.Tensor2D[];
      let inBias: tf.Tensor[] = [0, 0, 0].map(() => tf.scalar(0));
      let recBias: tf.Tensor[] = inBias;
      if (this.bias) {
        const b = this.bias.read();
        if (this.resetAfter) {
          const [bi, br] = tf.unstack(b);
          inBias = tf.split(bi!, 3);
          recBias = tf.split(br!, 3);
        } else inBias = tf.split(b, 3);
      }
      const xz = tf.add(tf.matMul(x!, wz!), inBias[0]!);
      const xr = tf.add(tf.matMul(x!, wr!), inBias[1]!);
      const xh = tf.add(tf.matMul(x!, wh!), inBias[2]!);
      const z = this.recurrentActivation.apply(tf.add(xz, tf.add(tf.matMul(h!, uz!), recBias[0]!)));
      const r = this.recurrentActivation.apply(tf.add(xr, tf.add(tf.matMul(h!, ur!), recBias[1]!)));
      const recurrent = this.resetAfter ? tf.mul(r, tf.add(tf.matMul(h!, uh!), recBias[2]!)) : tf.matMul(tf.mul(r, h!), uh!);
      const hh = this.activation.apply(tf.add(xh, recurrent));
      const next = tf.add(tf.mul(z, h!), tf.mul(tf.sub(1, z), hh));
      return [next, next];
    });
  }
}

/**
 * Keras's `GRU`, registered as `GRU` in place of tfjs's: Keras 3's default `reset_after=True`
 * (weights `kernel`, `recurrent_kernel`, `bias` `[2, 3·units]`) and `reset_after=False` (bias
 * `[3·units]`, tfjs's GRU). Dropout is not applied (inference). A tfjs-layers `RNN`, so
 * `returnSequences`, `returnState`, `goBackwards` and `tf.layers.bidirectional` work as for tfjs's.
 * @example
 * const gru = new KerasGRU({ units: 32, returnSequences: true });
 */
export class KerasGRU extends tfl.RNN {
  static override readonly className = 'GRU';
  readonly units: number;
  private readonly gru: KerasGRUCell;

  constructor(args: KerasGRUArgs) {
    const cell = new KerasGRUCell(args);
    super({ ...(args as tfl.RNNLayerArgs), cell });
    this.units = cell.units;
    this.gru = cell;
  }

  get resetAfter(): boolean {
    return this.gru.resetAfter;
  }

  override getConfig(): tf.serialization.ConfigDict {
    const base = super.getConfig();
    delete base.cell;
    return {
      ...base,
      units: this.units,
      resetAfter: this.gru.resetAfter,
      useBias: this.gru.useBias,
      activation: this.gru.activation.getClassName(),
      recurrentActivation: this.gru.recurrentActivation.getClassName(),
    };
  }

  /** Built from its own configuration (RNN's reads a cell's, which a KerasGRU makes itself). */
  static override fromConfig<T extends tf.serialization.Serializable>(
    cls: tf.serialization.SerializableConstructor<T>,
    config: tf.serialization.ConfigDict,
  ): T {
    return new cls(config);
  }
}

// The layer kerasHandler puts in for a tensor given twice to one call: a model it loaded, saved with
// another handler (npzHandler, tfjs's own), loads again where this entry is imported.
registerRepeat(tfl);

for (const layer of [
  KerasSubtract,
  KerasUnitNormalization,
  KerasCropping1D,
  KerasZeroPadding1D,
  KerasUpSampling1D,
  KerasNormalization,
  KerasGroupNormalization,
  KerasEinsumDense,
  KerasMultiHeadAttention,
  KerasConv1DTranspose,
  KerasGRU,
]) {
  tf.serialization.registerClass(layer);
}

/**
 * The activation classes registered here, by name (for tests and translators that check what is registered).
 * @example
 * KERAS_ACTIVATION_CLASSES.includes('hardSilu');   // true
 */
export const KERAS_ACTIVATION_CLASSES: readonly string[] = Object.keys(REGISTERED_ACTIVATIONS);
