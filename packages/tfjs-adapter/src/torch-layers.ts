/**
 * `@npyts/tfjs/torch-layers`: tfjs-layers layers that compute what PyTorch modules compute where
 * tfjs-layers has no layer of its own, or one of the same name that computes something else:
 * `nn.Hardsigmoid`, `nn.Hardswish`, `nn.AdaptiveAvgPool2d` to any output size, `nn.Conv2d` with
 * groups (and PyTorch's explicit padding), `nn.GRU` (whose reset gate acts after the recurrent
 * product, which tfjs-layers' GRU cannot compute), `nn.MultiheadAttention`, and ShuffleNet's channel
 * split and shuffle. They are ordinary
 * tfjs-layers layers (registered for serialization, so a model that uses them saves and loads),
 * channels-last like the rest of a ported model. This entry imports @tensorflow/tfjs-layers, which
 * the main entry does not.
 */
import * as tf from '@tensorflow/tfjs-core';
import * as tfl from '@tensorflow/tfjs-layers';
import { TORCH_LAYER_CLASS } from './layers.js';

/** What every tfjs-layers layer takes (`name`, `inputShape`, …). */
export type TorchLayerArgs = NonNullable<ConstructorParameters<typeof tfl.layers.Layer>[0]>;

const single = (inputs: tf.Tensor | tf.Tensor[]): tf.Tensor => (Array.isArray(inputs) ? inputs[0]! : inputs);

/** The shape of a layer's (first) input, as tfjs-layers hands it to build and computeOutputShape. */
const firstShape = (shape: tfl.Shape | tfl.Shape[]): tfl.Shape => (Array.isArray(shape[0]) ? shape[0] : shape) as tfl.Shape;

/** `value` when it is a positive integer; else a RangeError naming the layer's argument. */
function positiveInteger(value: number, what: string): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${what} must be a positive integer, not ${value}`);
  return value;
}

/**
 * PyTorch's `nn.Hardsigmoid`: relu6(x + 3) / 6, in PyTorch's order of operations. tfjs's
 * `hardSigmoid` activation is clip(0.2 x + 0.5, 0, 1), another function.
 * @example
 * const layer = new TorchHardsigmoid({ name: 'features_3_se_hsig' });
 */
export class TorchHardsigmoid extends tfl.layers.Layer {
  static readonly className = TORCH_LAYER_CLASS.hardsigmoid;
  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    return tf.tidy(() => tf.div(tf.relu6(tf.add(single(inputs), 3)), 6));
  }
}

/**
 * PyTorch's `nn.Hardswish`: x · relu6(x + 3) / 6, multiplied before the division as PyTorch does.
 * @example
 * const layer = new TorchHardswish({ name: 'features_0_2' });
 */
export class TorchHardswish extends tfl.layers.Layer {
  static readonly className = TORCH_LAYER_CLASS.hardswish;
  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    return tf.tidy(() => {
      const x = single(inputs);
      return tf.div(tf.mul(x, tf.relu6(tf.add(x, 3))), 6);
    });
  }
}

/** Arguments of {@link TorchAdaptiveAvgPool2d}: the output's height and width (one number for both). */
export interface AdaptiveAvgPool2dArgs extends TorchLayerArgs {
  outputSize: number | [number, number];
}

/** PyTorch's bins of adaptive pooling: output index i averages inputs floor(i·n/out) … ceil((i+1)·n/out) − 1. */
function bins(n: number, out: number): [number, number][] {
  return Array.from({ length: out }, (_, i) => [Math.floor((i * n) / out), Math.ceil(((i + 1) * n) / out)]);
}

/**
 * PyTorch's `nn.AdaptiveAvgPool2d(outputSize)` on channels-last input `[batch, height, width,
 * channels]`: each output cell the mean of PyTorch's bin of rows and columns (bins overlap where the
 * size does not divide). For output size 1, tfjs's `globalAveragePooling2d` is the same function.
 * @example
 * const layer = new TorchAdaptiveAvgPool2d({ outputSize: 7, name: 'avgpool' });   // VGG's
 */
export class TorchAdaptiveAvgPool2d extends tfl.layers.Layer {
  static readonly className = TORCH_LAYER_CLASS.adaptiveAvgPool2d;
  readonly outputSize: [number, number];

  constructor(args: AdaptiveAvgPool2dArgs) {
    super(args);
    const size = typeof args.outputSize === 'number' ? [args.outputSize, args.outputSize] : args.outputSize;
    if (size.length !== 2 || !size.every((s) => Number.isSafeInteger(s) && s > 0)) {
      throw new RangeError(`TorchAdaptiveAvgPool2d: outputSize must be a positive integer or two, not ${JSON.stringify(args.outputSize)}`);
    }
    this.outputSize = [size[0]!, size[1]!];
  }

  override computeOutputShape(inputShape: tfl.Shape | tfl.Shape[]): tfl.Shape {
    const shape = firstShape(inputShape);
    return [shape[0]!, this.outputSize[0], this.outputSize[1], shape[3]!];
  }

  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    return tf.tidy(() => {
      const x = single(inputs) as tf.Tensor4D;
      const [, h, w] = x.shape;
      const rows = bins(h, this.outputSize[0]).map(([r0, r1]) =>
        tf.stack(
          bins(w, this.outputSize[1]).map(([c0, c1]) => tf.mean(tf.slice(x, [0, r0, c0, 0], [-1, r1 - r0, c1 - c0, -1]), [1, 2])),
          1,
        ),
      );
      return tf.stack(rows, 1);
    });
  }

  override getConfig(): tf.serialization.ConfigDict {
    // Channels last, as tfjs's own pooling says of itself: the check and the pairing read this.
    return { ...super.getConfig(), outputSize: [...this.outputSize], dataFormat: 'channelsLast' };
  }
}

/** A PyTorch size argument: one number for every spatial axis, or one per axis. */
type Pair = number | [number, number];

function pairOf(value: Pair | undefined, fallback: number, what: string, least: number): [number, number] {
  const pair = value === undefined ? [fallback, fallback] : typeof value === 'number' ? [value, value] : value;
  if (pair.length !== 2 || !pair.every((v) => Number.isSafeInteger(v) && v >= least)) {
    throw new RangeError(`TorchConv2D: ${what} must be an integer of at least ${least}, or two, not ${JSON.stringify(value)}`);
  }
  return [pair[0]!, pair[1]!];
}

/** Arguments of {@link TorchConv2D}: `nn.Conv2d`'s, with tfjs's names for filters and bias. */
export interface TorchConv2DArgs extends TorchLayerArgs {
  /** Output channels (`out_channels`). */
  filters: number;
  kernelSize: Pair;
  /** Default 1. */
  strides?: Pair;
  /**
   * Zeros added on each side of each spatial axis, as PyTorch's `padding` (default 0); or PyTorch's
   * `'valid'` (no padding) or `'same'` (stride 1 only, as PyTorch: the output keeps the input's size,
   * with `dilation·(kernel − 1)` zeros per axis, half before and the rest after, so an even kernel
   * pads one more at the bottom and right).
   */
  padding?: Pair | 'same' | 'valid';
  /** Default 1. */
  dilation?: Pair;
  /** Channel groups (default 1): each group of output channels sees only its group of input channels. */
  groups?: number;
  /** Default true. */
  useBias?: boolean;
}

/**
 * PyTorch's `nn.Conv2d` on channels-last input, grouped convolutions (`groups`) included, with
 * PyTorch's explicit zero padding. The kernel is `[kh, kw, in_channels / groups, filters]`: each
 * group's output channels are a slice of the last axis (PyTorch's order), so a state_dict's weight
 * `(out, in / groups, kh, kw)` maps onto it as onto a Conv2D.
 * @example
 * const conv = new TorchConv2D({ filters: 64, kernelSize: 3, padding: 1, groups: 32, name: 'layer1_0_conv2' });
 */
export class TorchConv2D extends tfl.layers.Layer {
  static readonly className = TORCH_LAYER_CLASS.conv2d;
  readonly filters: number;
  readonly kernelSize: [number, number];
  readonly strides: [number, number];
  /** Zeros on each side of each spatial axis as given (`'valid'` is `[0, 0]`), or `'same'`. */
  readonly padding: [number, number] | 'same';
  readonly dilation: [number, number];
  readonly groups: number;
  readonly useBias: boolean;
  /** Zeros before and after, per spatial axis: [[top, bottom], [left, right]]. */
  private readonly pads: [[number, number], [number, number]];
  private kernel: tfl.LayerVariable | null = null;
  private bias: tfl.LayerVariable | null = null;

  constructor(args: TorchConv2DArgs) {
    super(args);
    this.filters = positiveInteger(args.filters, 'TorchConv2D: filters');
    this.kernelSize = pairOf(args.kernelSize, 1, 'kernelSize', 1);
    this.strides = pairOf(args.strides, 1, 'strides', 1);
    this.dilation = pairOf(args.dilation, 1, 'dilation', 1);
    if (args.padding === 'same') {
      // PyTorch refuses 'same' with strides (ValueError: padding='same' is not supported for strided convolutions).
      if (this.strides.some((v) => v > 1))
        throw new RangeError(`TorchConv2D: padding 'same' is not supported for strided convolutions (as in PyTorch); give the padding as numbers`);
      this.padding = 'same';
      const total = (axis: 0 | 1): [number, number] => {
        const all = this.dilation[axis] * (this.kernelSize[axis] - 1);
        return [Math.floor(all / 2), all - Math.floor(all / 2)];
      };
      this.pads = [total(0), total(1)];
    } else {
      this.padding = args.padding === 'valid' ? [0, 0] : pairOf(args.padding, 0, 'padding', 0);
      this.pads = [
        [this.padding[0], this.padding[0]],
        [this.padding[1], this.padding[1]],
      ];
    }
    this.groups = args.groups ?? 1;
    if (!Number.isSafeInteger(this.groups) || this.groups < 1 || this.filters % this.groups !== 0) {
      throw new RangeError(`TorchConv2D: groups must be a positive integer that divides filters (${this.filters}), not ${args.groups}`);
    }
    this.useBias = args.useBias ?? true;
  }

  override build(inputShape: tfl.Shape | tfl.Shape[]): void {
    const shape = firstShape(inputShape);
    const channels = shape[3];
    if (typeof channels !== 'number' || channels % this.groups !== 0) {
      throw new RangeError(`TorchConv2D '${this.name}': ${channels} input channels do not divide into ${this.groups} groups`);
    }
    const [kh, kw] = this.kernelSize;
    this.kernel = this.addWeight('kernel', [kh, kw, channels / this.groups, this.filters], 'float32', tfl.initializers.glorotUniform({}));
    if (this.useBias) this.bias = this.addWeight('bias', [this.filters], 'float32', tfl.initializers.zeros());
    this.built = true;
  }

  override computeOutputShape(inputShape: tfl.Shape | tfl.Shape[]): tfl.Shape {
    const shape = firstShape(inputShape);
    const out = (size: number | null, axis: 0 | 1): number | null =>
      size === null
        ? null
        : Math.floor((size + this.pads[axis][0] + this.pads[axis][1] - this.dilation[axis] * (this.kernelSize[axis] - 1) - 1) / this.strides[axis]) + 1;
    return [shape[0]!, out(shape[1]!, 0), out(shape[2]!, 1), this.filters];
  }

  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    return tf.tidy(() => {
      let x = single(inputs) as tf.Tensor4D;
      if (this.pads.flat().some((p) => p > 0)) x = tf.pad(x, [[0, 0], ...this.pads, [0, 0]]);
      const kernel = this.kernel!.read() as tf.Tensor4D;
      const strided = this.strides.some((v) => v > 1);
      const dilated = this.dilation.some((v) => v > 1);
      const conv = (input: tf.Tensor4D, k: tf.Tensor4D): tf.Tensor4D => {
        if (!(strided && dilated)) return tf.conv2d(input, k, this.strides, 'valid', 'NHWC', this.dilation);
        // tfjs takes strides or dilation, not both (PyTorch does): every position, then every stride-th.
        const full = tf.conv2d(input, k, 1, 'valid', 'NHWC', this.dilation);
        return tf.stridedSlice(full, [0, 0, 0, 0], full.shape, [1, this.strides[0], this.strides[1], 1]) as tf.Tensor4D;
      };
      let y: tf.Tensor4D;
      if (this.groups === 1) y = conv(x, kernel);
      else {
        // Group g: input channels g·C/G … and output channels g·F/G …, as PyTorch splits them.
        const xs = tf.split(x, this.groups, 3);
        const ks = tf.split(kernel, this.groups, 3);
        y = tf.concat(
          xs.map((part, g) => conv(part as tf.Tensor4D, ks[g] as tf.Tensor4D)),
          3,
        );
      }
      return this.bias ? tf.add(y, this.bias.read()) : y;
    });
  }

  override getConfig(): tf.serialization.ConfigDict {
    return {
      ...super.getConfig(),
      filters: this.filters,
      kernelSize: [...this.kernelSize],
      strides: [...this.strides],
      padding: this.padding === 'same' ? 'same' : [...this.padding],
      dilation: [...this.dilation],
      groups: this.groups,
      useBias: this.useBias,
      dataFormat: 'channelsLast',
    };
  }
}

/** Arguments of {@link TorchGRU}. */
export interface TorchGRUArgs extends TorchLayerArgs {
  /** The hidden size (`hidden_size`). */
  units: number;
  /** The output at every step `[batch, time, units]` (default: the last step's, `[batch, units]`). */
  returnSequences?: boolean;
  /**
   * Run from the last step to the first, as Keras' `goBackwards`: the outputs come in that order
   * (the last one is the first step's). `tf.layers.bidirectional` sets it on its backward copy, so a
   * bidirectional PyTorch GRU is `tf.layers.bidirectional({ layer: torchGRU({ units }), mergeMode: 'concat' })`.
   * With `returnSequences` that gives PyTorch's output `[batch, time, 2·units]`; without, each
   * direction's final state, PyTorch's `torch.cat([h_n[-2], h_n[-1]], 1)` (not `output[:, -1]`,
   * whose backward half is the backward pass's first step).
   */
  goBackwards?: boolean;
}

/** The weights of a {@link TorchGRU}, each gate's part apart (r, z, n), and one step of its recurrence. */
class TorchGRUCell extends tfl.layers.RNNCell {
  static readonly className = 'TorchGRUCell';
  readonly units: number;
  stateSize: number;
  kernel: tfl.LayerVariable | null = null;
  recurrentKernel: tfl.LayerVariable | null = null;
  bias: tfl.LayerVariable | null = null;
  recurrentBias: tfl.LayerVariable | null = null;

  constructor(units: number) {
    super({});
    this.units = units;
    this.stateSize = units;
  }

  override build(inputShape: tfl.Shape | tfl.Shape[]): void {
    const shape = firstShape(inputShape);
    const features = shape[shape.length - 1];
    if (typeof features !== 'number') throw new RangeError(`TorchGRU takes [batch, time, features] with a known feature size, not [${shape}]`);
    const gates = 3 * this.units;
    // Glorot-uniform, not tfjs's orthogonal default, which fails in some builds of tfjs-layers; a port's weights replace them.
    this.kernel = this.addWeight('kernel', [features, gates], 'float32', tfl.initializers.glorotUniform({}));
    this.recurrentKernel = this.addWeight('recurrent_kernel', [this.units, gates], 'float32', tfl.initializers.glorotUniform({}));
    this.bias = this.addWeight('bias', [gates], 'float32', tfl.initializers.zeros());
    this.recurrentBias = this.addWeight('recurrent_bias', [gates], 'float32', tfl.initializers.zeros());
    this.built = true;
  }

  /** Each weight split by gate (r, z, n). */
  gates(): { kernel: tf.Tensor2D[]; recurrentKernel: tf.Tensor2D[]; bias: tf.Tensor1D[]; recurrentBias: tf.Tensor1D[] } {
    const split = <T extends tf.Tensor>(w: tfl.LayerVariable, axis: number): T[] => tf.split(w.read(), 3, axis) as T[];
    return {
      kernel: split(this.kernel!, 1),
      recurrentKernel: split(this.recurrentKernel!, 1),
      bias: split(this.bias!, 0),
      recurrentBias: split(this.recurrentBias!, 0),
    };
  }

  /**
   * h' from h and the input's part of each gate at this step (x·W_i + b_i for r, z, n):
   * r = σ(xr + W_hr h + b_hr), z = σ(xz + W_hz h + b_hz), n = tanh(xn + r ⊙ (W_hn h + b_hn)),
   * h' = (1 − z) ⊙ n + z ⊙ h, computed as n + z ⊙ (h − n): one operation fewer.
   */
  static step(h: tf.Tensor2D, [xr, xz, xn]: tf.Tensor2D[], w: ReturnType<TorchGRUCell['gates']>): tf.Tensor2D {
    const [rr, rz, rn] = w.recurrentKernel;
    const [cr, cz, cn] = w.recurrentBias;
    const r = tf.sigmoid(tf.add(xr!, tf.add(tf.matMul(h, rr!), cr!)));
    const z = tf.sigmoid(tf.add(xz!, tf.add(tf.matMul(h, rz!), cz!)));
    const n = tf.tanh(tf.add(xn!, tf.mul(r, tf.add(tf.matMul(h, rn!), cn!))));
    return tf.add(n, tf.mul(z, tf.sub(h, n)));
  }

  /** One step, as tfjs-layers' RNN calls a cell: `[x_t, h]` → `[h', h']`. */
  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor[] {
    return tf.tidy(() => {
      const [x, h] = inputs as tf.Tensor2D[];
      const w = this.gates();
      const next = TorchGRUCell.step(
        h!,
        w.kernel.map((k, i) => tf.add(tf.matMul(x!, k), w.bias[i]!)),
        w,
      );
      return [next, next];
    });
  }
}

/**
 * One layer of PyTorch's `nn.GRU(batch_first=True)` on `[batch, time, features]`, from a zero state:
 * r = σ(W_ir x + b_ir + W_hr h + b_hr), z = σ(W_iz x + b_iz + W_hz h + b_hz),
 * n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)), h' = (1 − z) ⊙ n + z ⊙ h. The reset gate acts after
 * the recurrent product, which tfjs-layers' GRU cannot compute. Weights are PyTorch's, transposed:
 * `kernel` `[features, 3·units]`, `recurrent_kernel` `[units, 3·units]` (gates r, z, n), and the two
 * biases as PyTorch keeps them, `bias` (b_i) and `recurrent_bias` (b_h). A tfjs-layers `RNN`, so
 * that `tf.layers.bidirectional({ layer: torchGRU({ units }) })` takes it as it is.
 * @example
 * const gru = new TorchGRU({ units: 128, name: 'encoder_gru' });
 */
export class TorchGRU extends tfl.RNN {
  static override readonly className = TORCH_LAYER_CLASS.gru;
  readonly units: number;
  private readonly gru: TorchGRUCell;

  constructor(args: TorchGRUArgs) {
    const units = positiveInteger(args.units, 'TorchGRU: units');
    const cell = new TorchGRUCell(units);
    super({ ...args, cell });
    this.units = units;
    this.gru = cell;
  }

  override build(inputShape: tfl.Shape | tfl.Shape[]): void {
    const shape = firstShape(inputShape);
    if (shape.length !== 3 || typeof shape[2] !== 'number') throw new RangeError(`TorchGRU '${this.name}' takes [batch, time, features], not [${shape}]`);
    this.gru.build(shape);
    this.built = true;
  }

  override computeOutputShape(inputShape: tfl.Shape | tfl.Shape[]): tfl.Shape {
    const shape = firstShape(inputShape);
    return this.returnSequences ? [shape[0]!, shape[1]!, this.units] : [shape[0]!, this.units];
  }

  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    return tf.tidy(() => {
      const x = single(inputs) as tf.Tensor3D;
      const [batch, steps, features] = x.shape;
      const H = this.units;
      // Each gate's weights apart, so that no step slices across the last axis (tfjs's CPU backend
      // slices that element by element: it took most of the time).
      const w = this.gru.gates();
      // The input's part of a gate at every step in one product, then step by step: time first, so
      // each step is a contiguous slice.
      const flat = tf.reshape(x, [batch * steps, features]);
      const bySteps = (k: tf.Tensor2D, b: tf.Tensor1D): tf.Tensor2D[] =>
        tf.unstack(tf.transpose(tf.reshape(tf.add(tf.matMul(flat, k), b), [batch, steps, H]), [1, 0, 2])) as tf.Tensor2D[];
      const xs = w.kernel.map((k, i) => bySteps(k, w.bias[i]!));
      let h: tf.Tensor2D = tf.zeros([batch, H]);
      const outputs: tf.Tensor2D[] = [];
      for (let i = 0; i < steps; i++) {
        const t = this.goBackwards ? steps - 1 - i : i;
        h = TorchGRUCell.step(
          h,
          xs.map((gate) => gate[t]!),
          w,
        );
        if (this.returnSequences) outputs.push(h);
      }
      return this.returnSequences ? tf.stack(outputs, 1) : h;
    });
  }

  override getConfig(): tf.serialization.ConfigDict {
    return { ...super.getConfig(), units: this.units, returnSequences: this.returnSequences, goBackwards: this.goBackwards };
  }

  /** Built from its own configuration (RNN's reads a cell's, which a TorchGRU makes itself). */
  static override fromConfig<T extends tf.serialization.Serializable>(
    cls: tf.serialization.SerializableConstructor<T>,
    config: tf.serialization.ConfigDict,
  ): T {
    return new cls(config);
  }
}

/** Arguments of {@link TorchMultiheadAttention}. */
export interface TorchMultiheadAttentionArgs extends TorchLayerArgs {
  /** Heads (`num_heads`); the embedding size (the query's last axis) must divide by it. */
  numHeads: number;
  /** PyTorch's `bias` (default true): the projections' biases. */
  useBias?: boolean;
  /**
   * Each position attends only to itself and the positions before it: what PyTorch computes with
   * `attn_mask=torch.triu(torch.ones(L, S, dtype=torch.bool), 1)` (default false: no mask).
   */
  causal?: boolean;
}

/**
 * PyTorch's `nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)`: called on one tensor
 * `[batch, length, embed]` (self-attention), on `[query, keyAndValue]` or on `[query, key, value]`,
 * it gives the attention output (PyTorch's first result). Its weights are the module's, transposed:
 * `kernel` `[embed, 3·embed]` from the packed `in_proj_weight` (query, key, value), `bias` from
 * `in_proj_bias`, `out_kernel` and `out_bias` from `out_proj`. The query is scaled by 1/√head_dim
 * before the product, as PyTorch does. Padding masks, `add_bias_kv`, `add_zero_attn` and separate
 * key/value sizes (`kdim`, `vdim`) are not supported.
 * @example
 * const attn = new TorchMultiheadAttention({ numHeads: 8, causal: true, name: 'blocks_0_attn' });
 */
export class TorchMultiheadAttention extends tfl.layers.Layer {
  static readonly className = TORCH_LAYER_CLASS.multiheadAttention;
  readonly numHeads: number;
  readonly useBias: boolean;
  readonly causal: boolean;
  private kernel: tfl.LayerVariable | null = null;
  private bias: tfl.LayerVariable | null = null;
  private outKernel: tfl.LayerVariable | null = null;
  private outBias: tfl.LayerVariable | null = null;

  constructor(args: TorchMultiheadAttentionArgs) {
    super(args);
    this.numHeads = positiveInteger(args.numHeads, 'TorchMultiheadAttention: numHeads');
    this.useBias = args.useBias ?? true;
    this.causal = args.causal ?? false;
  }

  override build(inputShape: tfl.Shape | tfl.Shape[]): void {
    const query = firstShape(inputShape);
    const embed = query[query.length - 1];
    if (query.length !== 3 || typeof embed !== 'number' || embed % this.numHeads !== 0) {
      throw new RangeError(
        `TorchMultiheadAttention '${this.name}' takes [batch, length, embed] with embed a multiple of numHeads (${this.numHeads}), not [${query}]`,
      );
    }
    const glorot = tfl.initializers.glorotUniform({});
    this.kernel = this.addWeight('kernel', [embed, 3 * embed], 'float32', glorot);
    if (this.useBias) this.bias = this.addWeight('bias', [3 * embed], 'float32', tfl.initializers.zeros());
    this.outKernel = this.addWeight('out_kernel', [embed, embed], 'float32', glorot);
    if (this.useBias) this.outBias = this.addWeight('out_bias', [embed], 'float32', tfl.initializers.zeros());
    this.built = true;
  }

  override computeOutputShape(inputShape: tfl.Shape | tfl.Shape[]): tfl.Shape {
    return [...firstShape(inputShape)];
  }

  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    return this.callWith(inputs);
  }

  /**
   * What the layer computes with its weights, built with other options: the layer-by-layer check
   * tries them to name the option that makes a port differ from its module.
   * @example
   * const y = attn.callWith(x, { numHeads: 2, causal: true });
   */
  callWith(inputs: tf.Tensor | tf.Tensor[], options: { numHeads?: number; causal?: boolean } = {}): tf.Tensor {
    const heads = positiveInteger(options.numHeads ?? this.numHeads, 'TorchMultiheadAttention: numHeads');
    const causal = options.causal ?? this.causal;
    return tf.tidy(() => {
      const list = Array.isArray(inputs) ? inputs : [inputs];
      const query = list[0] as tf.Tensor3D;
      const key = (list[1] ?? query) as tf.Tensor3D;
      const value = (list[2] ?? list[1] ?? query) as tf.Tensor3D;
      const [batch, length, embed] = query.shape;
      const sourceLength = key.shape[1];
      if (embed % heads !== 0) throw new RangeError(`TorchMultiheadAttention '${this.name}': embed ${embed} does not divide into ${heads} heads`);
      const depth = embed / heads;
      const [wq, wk, wv] = tf.split(this.kernel!.read(), 3, 1) as tf.Tensor2D[];
      const [bq, bk, bv] = this.bias ? tf.split(this.bias.read(), 3, 0) : [null, null, null];
      /** x·W + b on the last axis, as [batch, heads, positions, depth]. */
      const project = (x: tf.Tensor3D, w: tf.Tensor2D, b: tf.Tensor | null): tf.Tensor4D => {
        const n = x.shape[1];
        const flat = tf.matMul(tf.reshape(x, [batch * n, embed]), w);
        return tf.transpose(tf.reshape(b ? tf.add(flat, b) : flat, [batch, n, heads, depth]), [0, 2, 1, 3]);
      };
      const q = tf.mul(project(query, wq!, bq!), Math.sqrt(1 / depth));
      const k = project(key, wk!, bk!);
      const v = project(value, wv!, bv!);
      let scores = tf.matMul(q, k, false, true); // [batch, heads, length, sourceLength]
      if (causal) {
        const rows = tf.reshape(tf.range(0, length), [length, 1]);
        const cols = tf.reshape(tf.range(0, sourceLength), [1, sourceLength]);
        scores = tf.where(tf.greater(cols, rows), tf.fill(scores.shape, Number.NEGATIVE_INFINITY), scores);
      }
      const attended = tf.matMul(tf.softmax(scores), v); // [batch, heads, length, depth]
      const joined = tf.reshape(tf.transpose(attended, [0, 2, 1, 3]), [batch * length, embed]);
      const out = tf.matMul(joined, this.outKernel!.read() as tf.Tensor2D);
      return tf.reshape(this.outBias ? tf.add(out, this.outBias.read()) : out, [batch, length, embed]);
    });
  }

  override getConfig(): tf.serialization.ConfigDict {
    return { ...super.getConfig(), numHeads: this.numHeads, useBias: this.useBias, causal: this.causal };
  }
}

/** Arguments of {@link TorchChannelShuffle}. */
export interface ChannelShuffleArgs extends TorchLayerArgs {
  /** Groups (ShuffleNet's 2); the channels must divide by it. */
  groups: number;
}

/**
 * ShuffleNet's channel shuffle (`torchvision.models.shufflenetv2.channel_shuffle`) on channels-last
 * input: the channels seen as `groups` rows of `channels / groups`, transposed. PyTorch's
 * `x.view(b, g, c // g, h, w).transpose(1, 2).reshape(b, c, h, w)`.
 * @example
 * const shuffle = new TorchChannelShuffle({ groups: 2 });
 */
export class TorchChannelShuffle extends tfl.layers.Layer {
  static readonly className = TORCH_LAYER_CLASS.channelShuffle;
  readonly groups: number;

  constructor(args: ChannelShuffleArgs) {
    super(args);
    this.groups = positiveInteger(args.groups, 'TorchChannelShuffle: groups');
  }

  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    return tf.tidy(() => {
      const x = single(inputs);
      const shape = x.shape;
      const channels = shape[shape.length - 1]!;
      if (channels % this.groups !== 0)
        throw new RangeError(`TorchChannelShuffle '${this.name}': ${channels} channels do not divide into ${this.groups} groups`);
      const lead = shape.slice(0, -1);
      const grouped = tf.reshape(x, [...lead, this.groups, channels / this.groups]);
      const axes = [...lead.map((_, i) => i), lead.length + 1, lead.length];
      return tf.reshape(tf.transpose(grouped, axes), shape);
    });
  }

  override getConfig(): tf.serialization.ConfigDict {
    return { ...super.getConfig(), groups: this.groups, dataFormat: 'channelsLast' };
  }
}

/** Arguments of {@link TorchChannelChunk}. */
export interface ChannelChunkArgs extends TorchLayerArgs {
  /** How many chunks the channels are cut into (PyTorch's `chunks`). */
  chunks: number;
  /** Which chunk this layer gives, from 0. */
  index: number;
}

/**
 * One chunk of the channels of channels-last input: PyTorch's `x.chunk(chunks, dim=1)[index]`
 * (chunks of ⌈channels / chunks⌉, the last one shorter when they do not divide).
 * @example
 * const [left, right] = [0, 1].map((index) => new TorchChannelChunk({ chunks: 2, index }).apply(x));
 */
export class TorchChannelChunk extends tfl.layers.Layer {
  static readonly className = TORCH_LAYER_CLASS.channelChunk;
  readonly chunks: number;
  readonly index: number;

  constructor(args: ChannelChunkArgs) {
    super(args);
    this.chunks = positiveInteger(args.chunks, 'TorchChannelChunk: chunks');
    if (!Number.isSafeInteger(args.index) || args.index < 0 || args.index >= this.chunks) {
      throw new RangeError(`TorchChannelChunk: index must be an integer from 0 to ${this.chunks - 1}, not ${args.index}`);
    }
    this.index = args.index;
  }

  /**
   * [first channel, count] of this chunk of `channels`. PyTorch gives fewer chunks than asked where
   * the channels run out first (5 channels in chunks of 2: 3 chunks); a chunk it does not give is refused.
   */
  private range(channels: number): [number, number] {
    const size = Math.ceil(channels / this.chunks);
    const from = this.index * size;
    if (from >= channels) {
      throw new RangeError(
        `TorchChannelChunk '${this.name}': x.chunk(${this.chunks}) of ${channels} channels gives ${Math.ceil(channels / size)} chunks, so there is no chunk ${this.index}`,
      );
    }
    return [from, Math.min(size, channels - from)];
  }

  override computeOutputShape(inputShape: tfl.Shape | tfl.Shape[]): tfl.Shape {
    const shape = [...firstShape(inputShape)];
    const channels = shape[shape.length - 1];
    if (typeof channels === 'number') shape[shape.length - 1] = this.range(channels)[1];
    return shape;
  }

  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    return tf.tidy(() => {
      const x = single(inputs);
      const [from, count] = this.range(x.shape[x.shape.length - 1]!);
      const begin = x.shape.map(() => 0);
      const size = x.shape.map(() => -1);
      begin[begin.length - 1] = from;
      size[size.length - 1] = count;
      return tf.slice(x, begin, size);
    });
  }

  override getConfig(): tf.serialization.ConfigDict {
    return { ...super.getConfig(), chunks: this.chunks, index: this.index, dataFormat: 'channelsLast' };
  }
}

for (const layer of [
  TorchHardsigmoid,
  TorchHardswish,
  TorchAdaptiveAvgPool2d,
  TorchConv2D,
  TorchGRU,
  TorchMultiheadAttention,
  TorchChannelShuffle,
  TorchChannelChunk,
]) {
  tf.serialization.registerClass(layer);
}

/**
 * PyTorch's `nn.Hardsigmoid` as a layer.
 * @example
 * tfl.sequential({ layers: [tfl.layers.dense({ units: 4, inputShape: [3] }), hardsigmoid()] });
 */
export function hardsigmoid(args: TorchLayerArgs = {}): TorchHardsigmoid {
  return new TorchHardsigmoid(args);
}

/**
 * PyTorch's `nn.Hardswish` as a layer.
 * @example
 * const act = hardswish({ name: 'features_0_2' });
 */
export function hardswish(args: TorchLayerArgs = {}): TorchHardswish {
  return new TorchHardswish(args);
}

/**
 * PyTorch's `nn.AdaptiveAvgPool2d(outputSize)` as a layer (channels last).
 * @example
 * const pool = adaptiveAvgPool2d({ outputSize: [7, 7], name: 'avgpool' });
 */
export function adaptiveAvgPool2d(args: AdaptiveAvgPool2dArgs): TorchAdaptiveAvgPool2d {
  return new TorchAdaptiveAvgPool2d(args);
}

/**
 * PyTorch's `nn.Conv2d` (groups and explicit padding included) as a layer (channels last).
 * @example
 * const conv = torchConv2d({ filters: 64, kernelSize: 3, padding: 1, groups: 32, name: 'conv2' });
 */
export function torchConv2d(args: TorchConv2DArgs): TorchConv2D {
  return new TorchConv2D(args);
}

/**
 * One layer of PyTorch's `nn.GRU(batch_first=True)` as a layer.
 * @example
 * const gru = torchGRU({ units: 64, returnSequences: true, name: 'gru' });
 */
export function torchGRU(args: TorchGRUArgs): TorchGRU {
  return new TorchGRU(args);
}

/**
 * PyTorch's `nn.MultiheadAttention(batch_first=True)` as a layer.
 * @example
 * const attn = torchMultiheadAttention({ numHeads: 4, name: 'attn' });
 */
export function torchMultiheadAttention(args: TorchMultiheadAttentionArgs): TorchMultiheadAttention {
  return new TorchMultiheadAttention(args);
}

/**
 * ShuffleNet's channel shuffle as a layer (channels last).
 * @example
 * const y = channelShuffle({ groups: 2 }).apply(tfl.layers.concatenate().apply([a, b]));
 */
export function channelShuffle(args: ChannelShuffleArgs): TorchChannelShuffle {
  return new TorchChannelShuffle(args);
}

/**
 * One chunk of the channels as a layer: PyTorch's `x.chunk(chunks, dim=1)[index]`, channels last.
 * @example
 * const right = channelChunk({ chunks: 2, index: 1 }).apply(x);
 */
export function channelChunk(args: ChannelChunkArgs): TorchChannelChunk {
  return new TorchChannelChunk(args);
}
