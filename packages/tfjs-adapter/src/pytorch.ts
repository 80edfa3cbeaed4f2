/**
 * A PyTorch `state_dict` (saved with `np.savez`) mapped onto a tfjs-layers model, layer by layer: which
 * archive arrays make each tfjs weight and how. Every rule that tells the two frameworks apart lives
 * here: axis orders, BatchNorm's names, LSTM biases, the rows of a Dense after a Flatten, epsilons and
 * activations that must agree.
 *
 * Long on purpose: one rule per layer type, kept together so that the differences between the two
 * frameworks are read in one place.
 */
import { NpyError } from '@npyts/core';
import type { WeightFile } from '@npyts/core';
import { CHECK_PREFIX, mismatchError, savedName, type WeightLike } from './weights.js';
import { TORCH_LAYER_CLASS, configOf, inputShapeOf, layoutOf, producerOf, weightedLayers, type LayerLike, type LayersModelLike } from './layers.js';
import { describeTransform, transformedShape, type Transform } from './transform.js';

/** Options of the PyTorch layout. */
export interface PytorchLayoutOptions {
  /**
   * The `eps` the PyTorch BatchNorm and LayerNorm modules were built with: one for all, or by tfjs layer
   * name or PyTorch module name (default: PyTorch's `1e-5`). A tfjs layer with another epsilon is refused,
   * since tfjs's default (`1e-3`) silently changes every prediction.
   */
  epsilon?: number | Readonly<Record<string, number>>;
  /**
   * The layout of a Flatten's input where npyts cannot tell it from the layers before it (an input
   * layer, a Reshape or Permute): `'channelsLast'` reorders the next Dense's rows from PyTorch's
   * (C, H, W) flattening, `'channelsFirst'` keeps them. Without it such a Flatten is refused.
   */
  flattenLayout?: 'channelsLast' | 'channelsFirst';
}

/** One tfjs weight and where it comes from: the archive keys, in order, and the transform. */
export interface PlannedWeight {
  /** The tfjs weight (as saved: `dense/kernel`). */
  readonly weight: string;
  /** The archive arrays that make it (PyTorch's names: `fc1.weight`). */
  readonly keys: readonly string[];
  /** What is done to them. */
  readonly transform: Transform;
  /** The transform in words. */
  readonly description: string;
  /** The weight's shape in the model. */
  readonly shape: readonly number[];
}

/** A layer whose configuration differs from its module's default, planned because the check will judge it. */
export interface Suspect {
  /** The tfjs layer's name. */
  readonly layer: string;
  /** How it differs, and the fix if it is wrong. */
  readonly text: string;
}

/** A PyTorch module as the archive gives it: its name and its parameters' keys and shapes. */
interface TorchModule {
  readonly name: string;
  /** Parameter name (`weight`, `running_mean`, `weight_ih_l0`) → archive key and shape. */
  readonly params: Map<string, { key: string; shape: number[] }>;
  /** For one layer of a recurrent module: its number (PyTorch's `_l0`, `_l1` suffixes). */
  readonly rnnLayer?: number;
}

const RNN_PARAM = /^(weight_ih|weight_hh|bias_ih|bias_hh|weight_hr)_l(\d+)(_reverse)?$/;
/** Buffers PyTorch keeps that no tfjs weight holds. */
const IGNORED = new Set(['num_batches_tracked']);

/** A parameter or buffer name of a PyTorch module, as a state_dict key ends. */
const TORCH_PARAM = /(^|\.)(weight|bias|running_mean|running_var|num_batches_tracked|in_proj_weight|in_proj_bias|(weight|bias)_(ih|hh)_l\d+(_reverse)?)$/;

/**
 * Whether keys look like a PyTorch state_dict (`features.0.weight`, `fc.bias`, …): most of them end
 * with a module's parameter or buffer name.
 * @example
 * looksLikeStateDict(['conv.weight', 'conv.bias']);   // true
 */
export function looksLikeStateDict(keys: readonly string[]): boolean {
  const own = keys.filter((k) => !k.startsWith('check/'));
  return own.length > 0 && own.filter((k) => TORCH_PARAM.test(k)).length >= 0.8 * own.length;
}

/** True for an archive key of a buffer no tfjs weight holds (a BatchNorm's `num_batches_tracked`). */
export function isIgnoredBuffer(key: string): boolean {
  return IGNORED.has(key.slice(key.lastIndexOf('.') + 1));
}

/** Weights planned by other means (a `names` table) and the archive keys they take. */
export interface Excluded {
  readonly weights: ReadonlySet<string>;
  readonly keys: ReadonlySet<string>;
}

/** The archive's modules, in the order the state_dict lists them; a recurrent module split by layer. */
async function modulesOf(archive: WeightFile, excluded: ReadonlySet<string>): Promise<TorchModule[]> {
  const byName = new Map<string, TorchModule>();
  for (const key of archive.names) {
    if (key.startsWith(CHECK_PREFIX) || excluded.has(key)) continue;
    const dot = key.lastIndexOf('.');
    const prefix = dot < 0 ? '' : key.slice(0, dot);
    const param = key.slice(dot + 1);
    const rnn = RNN_PARAM.exec(param);
    const name = rnn ? `${prefix}${prefix ? ' ' : ''}(layer ${rnn[2]})` : prefix;
    let module = byName.get(name);
    if (!module) byName.set(name, (module = { name, params: new Map(), ...(rnn ? { rnnLayer: Number(rnn[2]) } : {}) }));
    const header = await archive.info(key);
    module.params.set(rnn ? `${rnn[1]}${rnn[3] ?? ''}` : param, { key, shape: [...header.shape] });
  }
  // A MultiheadAttention keeps its output projection as a submodule that its forward never calls as
  // one: its parameters are the attention module's (out_proj.weight, out_proj.bias).
  for (const [name, module] of byName) {
    const owner = name.endsWith('.out_proj') ? byName.get(name.slice(0, -'.out_proj'.length)) : undefined;
    if (!owner?.params.has('in_proj_weight')) continue;
    for (const [param, value] of module.params) owner.params.set(`out_proj.${param}`, value);
    byName.delete(name);
  }
  return [...byName.values()];
}

/** What a module's parameters are, for messages. */
function describeModule(m: TorchModule): string {
  return `PyTorch module '${m.name || '(the model itself)'}' (${[...m.params.keys()].join(', ')})`;
}

/**
 * A layer's class for messages, a wrapper's with the class it wraps: `Bidirectional(TorchGRU)`.
 * @example
 * layerClass(model.getLayer('gru'));   // 'Bidirectional(TorchGRU)'
 */
export function layerClass(layer: LayerLike): string {
  return layer.getClassName() === 'Bidirectional' ? `Bidirectional(${innerClass(layer)})` : layer.getClassName();
}

/** The tfjs layer and its class, for messages. */
function describeLayer(layer: LayerLike): string {
  return `tfjs layer '${layer.name}' (${layerClass(layer)})`;
}

function innerClass(layer: LayerLike): string {
  const inner = configOf(layer).layer as { className?: unknown } | undefined;
  return typeof inner?.className === 'string' ? inner.className : '?';
}

/** The wrapped recurrent layer's configuration (Bidirectional), else the layer's own. */
function recurrentConfig(layer: LayerLike): Record<string, unknown> {
  if (layer.getClassName() !== 'Bidirectional') return configOf(layer);
  const inner = configOf(layer).layer as { config?: Record<string, unknown> } | undefined;
  return inner?.config ?? {};
}

/** A weight's short name inside its layer: `kernel`, `forward_lstm/bias` → `bias`. */
function weightRole(w: WeightLike): string {
  const name = savedName(w);
  return name.slice(name.lastIndexOf('/') + 1);
}

/** Is `actual` the epsilon asked for (as tfjs stores it, a float32 of the number given)? */
function sameEpsilon(actual: number, wanted: number): boolean {
  return Math.abs(actual - wanted) <= 1e-6 * Math.abs(wanted);
}

/** What one pairing of a tfjs layer with a PyTorch module gives, or why it does not fit. */
type Pairing = { planned: PlannedWeight[] } | { unfit: string };

/** The rules per tfjs layer class. */
class LayerRules {
  constructor(private readonly options: PytorchLayoutOptions) {}

  pair(layer: LayerLike, module: TorchModule): Pairing {
    const cls = layer.getClassName();
    switch (cls) {
      case 'Dense':
        return this.dense(layer, module);
      case 'Conv1D':
      case 'Conv2D':
      case 'Conv3D':
        return this.conv(layer, module);
      case 'DepthwiseConv2D':
        return this.depthwise(layer, module);
      case 'Conv2DTranspose':
      case 'Conv3DTranspose':
        return this.convTranspose(layer, module);
      case 'BatchNormalization':
        return this.batchNorm(layer, module);
      case 'LayerNormalization':
        return this.layerNorm(layer, module);
      case 'Embedding':
        return this.byRole(layer, module, (role) => (role === 'embeddings' ? ['weight', LayerRules.COPY] : undefined));
      case 'PReLU':
        return this.prelu(layer, module);
      case 'LSTM':
        return this.lstm(layer, module);
      case 'Bidirectional':
        return innerClass(layer) === TORCH_LAYER_CLASS.gru ? this.gru(layer, module) : this.lstm(layer, module);
      case TORCH_LAYER_CLASS.conv2d:
        return this.conv(layer, module);
      case TORCH_LAYER_CLASS.gru:
        return this.gru(layer, module);
      case TORCH_LAYER_CLASS.multiheadAttention:
        return this.attention(layer, module);
      default:
        return { unfit: 'npyts knows no PyTorch counterpart of this layer; map its weights with { names }' };
    }
  }

  /** Refusals that do not depend on the module: configurations no weights can make agree. */
  refusal(layer: LayerLike): string | null {
    const cls = layer.getClassName();
    const rnn = cls === 'Bidirectional' ? innerClass(layer) : cls;
    if (rnn === 'GRU') {
      return `${describeLayer(layer)}: PyTorch's GRU applies the reset gate after the recurrent product (Keras' reset_after=True), which tfjs-layers' GRU cannot (it has only reset_after=False); no weights make them agree: build it as TorchGRU from '@npyts/tfjs/torch-layers' (torchGRU({ units }))`;
    }
    if (rnn === 'SimpleRNN')
      return `${describeLayer(layer)}: a SimpleRNN's activation cannot be checked against the PyTorch RNN's nonlinearity; map its weights with { names } and check the model with checkModel`;
    if (cls === 'SeparableConv2D')
      return `${describeLayer(layer)}: PyTorch writes a separable convolution as two modules; build it as DepthwiseConv2D then a 1×1 Conv2D`;
    if (rnn === 'LSTM') {
      const c = recurrentConfig(layer);
      if (c.recurrentActivation !== 'sigmoid')
        return `${describeLayer(layer)}: recurrentActivation is '${String(c.recurrentActivation)}' but PyTorch's LSTM gates with the sigmoid; build it with recurrentActivation: 'sigmoid' (tfjs's default is hardSigmoid)`;
      if (c.activation !== 'tanh')
        return `${describeLayer(layer)}: activation is '${String(c.activation)}' but PyTorch's LSTM uses tanh; build it with activation: 'tanh'`;
    }
    return null;
  }

  private epsilonFor(layerName: string, moduleName?: string): number {
    const e = this.options.epsilon;
    if (typeof e === 'number') return e;
    if (e && Object.hasOwn(e, layerName)) return e[layerName]!;
    if (e && moduleName !== undefined && Object.hasOwn(e, moduleName)) return e[moduleName]!;
    return 1e-5;
  }

  /** An epsilon stated by module name is checked once the module is known. */
  epsilonOfModule(layer: LayerLike, module: TorchModule): string | null {
    const cls = layer.getClassName();
    if (cls !== 'BatchNormalization' && cls !== 'LayerNormalization') return null;
    const eps = configOf(layer).epsilon;
    const wanted = this.epsilonFor(layer.name, module.name);
    if (typeof eps === 'number' && sameEpsilon(eps, wanted)) return null;
    const stated = this.options.epsilon !== undefined;
    // tfjs keeps an epsilon as float32: shown to 6 digits, small ones as 1e-5 the way they are written.
    const e = (v: unknown): string => {
      if (typeof v !== 'number') return String(v);
      const n = Number(v.toPrecision(6));
      return n !== 0 && Math.abs(n) < 1e-3 ? n.toExponential() : String(n);
    };
    if (stated)
      return `${describeLayer(layer)}: epsilon is ${e(eps)} but ${describeModule(module)} has eps ${e(wanted)} (as stated in { epsilon }); build the layer with epsilon: ${e(wanted)}`;
    // A state_dict does not record eps: the module has PyTorch's default unless it was built with another.
    return `${describeLayer(layer)}: epsilon is ${e(eps)}, but ${describeModule(module)} has PyTorch's default eps ${e(wanted)} unless it was built with another (a state_dict does not say; tfjs's default is 1e-3); build the layer with epsilon: ${e(wanted)}, or pass { epsilon } if the PyTorch module was built with another eps`;
  }

  /**
   * Each weight of the layer from the module's parameters: `ruleOf` gives the parameter(s) and the
   * transform for a weight (its role: `kernel`, `bias`…; its index); every parameter must be used.
   */
  private byRole(layer: LayerLike, module: TorchModule, ruleOf: (role: string, index: number) => Rule | undefined): Pairing {
    const planned: PlannedWeight[] = [];
    const used = new Set<string>();
    for (const [index, w] of layer.weights.entries()) {
      const role = weightRole(w);
      const rule = ruleOf(role, index);
      if (!rule) return { unfit: `npyts does not know the tfjs weight '${savedName(w)}'` };
      const [names, transform] = rule;
      const list = [names].flat();
      const missing = list.filter((n) => !module.params.has(n));
      if (missing.length)
        return {
          unfit: `${savedName(w)} needs ${missing.join(' and ')}, which the module does not have${role === 'bias' || role === 'gamma' || role === 'beta' ? ' (is bias, affine or elementwise_affine off in PyTorch but on in tfjs?)' : ''}`,
        };
      const params = list.map((n) => module.params.get(n)!);
      for (const n of list) used.add(n);
      const shape = transformedShape(
        transform,
        params.map((p) => p.shape),
      );
      const wanted = w.shape.map((d) => d ?? -1);
      if (!shape || shape.join() !== wanted.join()) {
        return {
          unfit: `${savedName(w)} has shape [${wanted}], but ${params.map((p) => `${p.key} [${p.shape}]`).join(' and ')} ${describeTransform(transform)} ${shape ? `gives [${shape}]` : 'cannot make it'}`,
        };
      }
      planned.push({ weight: savedName(w), keys: params.map((p) => p.key), transform, description: describeTransform(transform), shape });
    }
    const left = [...module.params.keys()].filter((p) => !used.has(p) && !IGNORED.has(p));
    if (left.length)
      return {
        unfit: `the layer has no weight for ${left.join(', ')}${left.some((p) => p.startsWith('bias') || p === 'weight') ? ' (is useBias, center or scale off in tfjs but on in PyTorch?)' : ''}`,
      };
    return { planned };
  }

  private static readonly COPY: Transform = { kind: 'copy' };
  private static readonly TRANSPOSE: Transform = { kind: 'permute', axes: [1, 0] };

  private dense(layer: LayerLike, module: TorchModule): Pairing {
    const weight = module.params.get('weight');
    if (weight?.shape.length !== 2) return { unfit: "a Dense needs a Linear's 2-d weight" };
    const [out, inFeatures] = weight.shape as [number, number];
    let kernel = LayerRules.TRANSPOSE;
    // A Dense after a Flatten of a channels-last feature map: PyTorch flattened (C, H, W), tfjs (H, W, C).
    const producer = producerOf(layer);
    if (producer?.getClassName() === 'Flatten') {
      const dims = inputShapeOf(producer)?.slice(1) ?? null;
      if (dims && dims.length >= 2) {
        let layout = layoutOf(firstInput(producer));
        if (layout === 'unknown') {
          if (!this.options.flattenLayout) {
            return {
              unfit: `it follows Flatten '${producer.name}' of a [${dims}] input whose layout npyts cannot tell (PyTorch flattens channels first); pass { flattenLayout: 'channelsLast' } if that input is channels-last (the rows are then reordered), or 'channelsFirst' if it is in PyTorch's order`,
            };
          }
          layout = this.options.flattenLayout;
        }
        if (layout === 'channelsLast' && dims.every((d) => typeof d === 'number')) {
          const spatial = dims.slice(0, -1) as number[];
          const channels = dims[dims.length - 1] as number;
          // (out, C·d1·…·dk) viewed as (out, C, d1…dk) → (d1…dk, C, out) → (d1·…·dk·C, out)
          kernel = { kind: 'permute', view: [out, channels, ...spatial], axes: [...spatial.map((_, i) => i + 2), 1, 0], to: [inFeatures, out] };
        }
      }
    }
    return this.byRole(layer, module, (role) => ({ kernel: ['weight', kernel] as Rule, bias: ['bias', LayerRules.COPY] as Rule })[role]);
  }

  private conv(layer: LayerLike, module: TorchModule): Pairing {
    const weight = module.params.get('weight');
    const rank = ({ Conv1D: 3, Conv2D: 4, Conv3D: 5, [TORCH_LAYER_CLASS.conv2d]: 4 } as Record<string, number>)[layer.getClassName()] ?? 4;
    if (!weight || weight.shape.length !== rank) return { unfit: `a ${layer.getClassName()} needs a convolution weight of ${rank} axes` };
    const kernel = layer.weights.find((w) => weightRole(w) === 'kernel');
    const torchConv = layer.getClassName() === TORCH_LAYER_CLASS.conv2d;
    const layerGroups = torchConv ? Number(configOf(layer).groups ?? 1) : 1;
    const perLayerGroup = kernel?.shape[kernel.shape.length - 2];
    const inChannels = typeof perLayerGroup === 'number' ? perLayerGroup * layerGroups : undefined;
    const perGroup = weight.shape[1]!;
    if (typeof inChannels === 'number' && perGroup !== perLayerGroup && inChannels % perGroup === 0) {
      const groups = inChannels / perGroup;
      // A TorchConv2D computes any grouping: its groups are what differs.
      if (torchConv)
        return { unfit: `the module is a grouped convolution (groups=${groups}) and the layer has groups ${layerGroups}: set \`groups: ${groups}\`` };
      return {
        unfit: `the module is a grouped convolution (groups=${groups}), which tfjs-layers' ${layer.getClassName()} cannot compute: build it as TorchConv2D from '@npyts/tfjs/torch-layers' (torchConv2d({ filters, kernelSize, groups: ${groups} }))${groups === inChannels ? ', or as a DepthwiseConv2D (groups = in_channels)' : ''}`,
      };
    }
    // (O, I, k…) → (k…, I, O)
    const axes = [...Array.from({ length: rank - 2 }, (_, i) => i + 2), 1, 0];
    return this.byRole(layer, module, (role) => ({ kernel: ['weight', { kind: 'permute', axes }] as Rule, bias: ['bias', LayerRules.COPY] as Rule })[role]);
  }

  private depthwise(layer: LayerLike, module: TorchModule): Pairing {
    const weight = module.params.get('weight');
    const kernel = layer.weights.find((w) => weightRole(w) === 'depthwise_kernel');
    const [channels, multiplier] = [kernel?.shape[2], kernel?.shape[3]];
    if (weight?.shape.length !== 4 || weight.shape[1] !== 1 || typeof channels !== 'number' || typeof multiplier !== 'number') {
      return { unfit: "a DepthwiseConv2D needs a depthwise Conv2d's weight (C·multiplier, 1, kh, kw)" };
    }
    const [, , kh, kw] = weight.shape as [number, number, number, number];
    // PyTorch's output channel c·M + j is input channel c's j-th filter: (C·M, 1, kh, kw) → (C, M, kh, kw) → (kh, kw, C, M).
    const depthwise: Rule = ['weight', { kind: 'permute', view: [channels, multiplier, kh, kw], axes: [2, 3, 0, 1] }];
    return this.byRole(layer, module, (role) => ({ depthwise_kernel: depthwise, bias: ['bias', LayerRules.COPY] as Rule })[role]);
  }

  private convTranspose(layer: LayerLike, module: TorchModule): Pairing {
    const weight = module.params.get('weight');
    const rank = layer.getClassName() === 'Conv2DTranspose' ? 4 : 5;
    if (!weight || weight.shape.length !== rank) return { unfit: `a ${layer.getClassName()} needs a ConvTranspose weight of ${rank} axes` };
    // (I, O, k…) → (k…, O, I): both frameworks compute the transpose of a correlation, no kernel flip.
    const axes = [...Array.from({ length: rank - 2 }, (_, i) => i + 2), 1, 0];
    return this.byRole(layer, module, (role) => ({ kernel: ['weight', { kind: 'permute', axes }] as Rule, bias: ['bias', LayerRules.COPY] as Rule })[role]);
  }

  private batchNorm(layer: LayerLike, module: TorchModule): Pairing {
    if (!module.params.has('running_mean'))
      return { unfit: "a BatchNormalization needs a BatchNorm's running_mean and running_var (track_running_stats=False cannot be reproduced)" };
    const axis = configOf(layer).axis;
    const rank = inputShapeOf(layer)?.length;
    if (rank !== undefined && axis !== -1 && axis !== rank - 1)
      return { unfit: `the layer normalises axis ${String(axis)}; PyTorch's BatchNorm normalises channels, the last axis in tfjs (axis: -1)` };
    const roles: Record<string, Rule> = {
      gamma: ['weight', LayerRules.COPY],
      beta: ['bias', LayerRules.COPY],
      moving_mean: ['running_mean', LayerRules.COPY],
      moving_variance: ['running_var', LayerRules.COPY],
    };
    return this.byRole(layer, module, (role) => roles[role]);
  }

  private layerNorm(layer: LayerLike, module: TorchModule): Pairing {
    const roles: Record<string, Rule> = { gamma: ['weight', LayerRules.COPY], beta: ['bias', LayerRules.COPY] };
    return this.byRole(layer, module, (role) => roles[role]);
  }

  private prelu(layer: LayerLike, module: TorchModule): Pairing {
    const alpha = layer.weights[0];
    const shape = alpha?.shape.map((d) => d ?? -1) ?? [];
    // PyTorch's slopes are per channel (or one for all); tfjs holds one per position unless sharedAxes says otherwise.
    const transform: Transform = shape.length === 1 && module.params.get('weight')?.shape[0] === shape[0] ? LayerRules.COPY : { kind: 'tile', to: shape };
    return this.byRole(layer, module, (role) => (role === 'alpha' ? ['weight', transform] : undefined));
  }

  private lstm(layer: LayerLike, module: TorchModule): Pairing {
    if (module.rnnLayer === undefined) return { unfit: 'an LSTM needs one layer of a PyTorch LSTM (weight_ih_l0, weight_hh_l0…)' };
    if (module.params.has('weight_hr')) return { unfit: "the module has a projection (proj_size), which tfjs-layers' LSTM does not have" };
    // Gates are i, f, g, o in both (tfjs calls g c): the kernels are PyTorch's weights transposed, and
    // PyTorch's two biases add up to tfjs's one.
    return this.recurrent(layer, module, { name: 'tfjs LSTM', wrapped: 'layer' }, (d) => ({
      kernel: [`weight_ih${d}`, LayerRules.TRANSPOSE],
      recurrent_kernel: [`weight_hh${d}`, LayerRules.TRANSPOSE],
      bias: [[`bias_ih${d}`, `bias_hh${d}`], { kind: 'sum' }],
    }));
  }

  private gru(layer: LayerLike, module: TorchModule): Pairing {
    if (module.rnnLayer === undefined) return { unfit: 'a TorchGRU needs one layer of a PyTorch GRU (weight_ih_l0, weight_hh_l0…)' };
    // PyTorch's gates r, z, n are TorchGRU's: its kernels are the weights transposed, its two biases PyTorch's two.
    return this.recurrent(layer, module, { name: 'TorchGRU', wrapped: 'layer: torchGRU({ units })' }, (d) => ({
      kernel: [`weight_ih${d}`, LayerRules.TRANSPOSE],
      recurrent_kernel: [`weight_hh${d}`, LayerRules.TRANSPOSE],
      bias: [`bias_ih${d}`, LayerRules.COPY],
      recurrent_bias: [`bias_hh${d}`, LayerRules.COPY],
    }));
  }

  /**
   * A recurrent layer, plain or wrapped in a Bidirectional, as the module is one or the other: its
   * weights by role from `roles(direction)`, where a Bidirectional lists the forward layer's weights,
   * then the backward's, which take the module's `_reverse` parameters.
   */
  private recurrent(
    layer: LayerLike,
    module: TorchModule,
    how: { name: string; wrapped: string },
    roles: (direction: '' | '_reverse') => Record<string, Rule>,
  ): Pairing {
    const bidirectional = layer.getClassName() === 'Bidirectional';
    if (bidirectional !== module.params.has('weight_ih_reverse')) {
      return bidirectional
        ? { unfit: `the module is not bidirectional; build the tfjs layer as a plain ${how.name}` }
        : { unfit: `the module is bidirectional; wrap the ${how.name} in tf.layers.bidirectional({ ${how.wrapped}, mergeMode: 'concat' })` };
    }
    const half = layer.weights.length / 2;
    return this.byRole(layer, module, (role, index) => roles(bidirectional && index >= half ? '_reverse' : '')[role]);
  }

  private attention(layer: LayerLike, module: TorchModule): Pairing {
    if (!module.params.has('in_proj_weight')) {
      return module.params.has('q_proj_weight')
        ? {
            unfit:
              'the module projects keys and values from other sizes (kdim, vdim: q_proj_weight, k_proj_weight, v_proj_weight), which TorchMultiheadAttention does not',
          }
        : { unfit: "a TorchMultiheadAttention needs a MultiheadAttention module's in_proj_weight and out_proj.weight" };
    }
    if (module.params.has('bias_k')) return { unfit: 'the module adds biases to the keys and values (add_bias_kv), which TorchMultiheadAttention does not' };
    // The packed projection (query, key, value rows) and the output projection, transposed.
    const roles: Record<string, Rule> = {
      kernel: ['in_proj_weight', LayerRules.TRANSPOSE],
      bias: ['in_proj_bias', LayerRules.COPY],
      out_kernel: ['out_proj.weight', LayerRules.TRANSPOSE],
      out_bias: ['out_proj.bias', LayerRules.COPY],
    };
    return this.byRole(layer, module, (role) => roles[role]);
  }
}

/** The parameter(s) a tfjs weight is made of, and how. */
type Rule = readonly [string | readonly string[], Transform];

/** The layer a layer takes its (first) input from, or itself for an input layer. */
function firstInput(layer: LayerLike): LayerLike {
  return layer.inboundNodes[0]?.inboundLayers[0] ?? layer;
}

/** Layers whose configuration cannot compute what their modules compute, as one error. */
function configError(problems: readonly string[]): NpyError {
  return new NpyError(
    'LAYER_CONFIG',
    problems.length === 1 ? problems[0]! : `${problems.length} layers cannot compute what their PyTorch modules compute:\n  ${problems.join('\n  ')}`,
  );
}

/** How a recurrent module's layer is called when a tfjs layer is named after it. */
function rnnLayerName(module: TorchModule, count: number): string[] {
  const base = module.name.replace(/ \(layer \d+\)$/, '');
  return count === 1 ? [base, `${base}_l${module.rnnLayer}`] : [`${base}_l${module.rnnLayer}`];
}

/**
 * The names a tfjs layer may carry to be paired with a module by name: the module's own (`exact`),
 * and its dots as `_` or `/` (dots cannot be in tfjs names).
 */
function namesFor(module: TorchModule, rnnCount: number): { exact: string[]; normalised: string[] } {
  const exact = module.rnnLayer !== undefined ? rnnLayerName(module, rnnCount) : [module.name];
  return { exact, normalised: exact.flatMap((n) => [n.replace(/\./g, '_'), n.replace(/\./g, '/')]).filter((n) => !exact.includes(n)) };
}

/**
 * The module each tfjs layer name pairs with: a module named exactly so wins; else the one module
 * whose name becomes it with dots turned to `_` or `/`. A normalised name that two modules share
 * (`fc.1` and `fc_1` both give `fc_1`) pairs with neither unless one is exact: the layer is refused.
 */
function moduleNames(modules: readonly TorchModule[], rnnCount: Map<string, number>): (name: string) => TorchModule | undefined {
  const exact = new Map<string, TorchModule>();
  const normalised = new Map<string, Set<TorchModule>>();
  for (const m of modules) {
    const names = namesFor(m, rnnCount.get(m.name.replace(/ \(layer \d+\)$/, '')) ?? 1);
    for (const n of names.exact) if (!exact.has(n)) exact.set(n, m);
    for (const n of names.normalised) normalised.set(n, (normalised.get(n) ?? new Set()).add(m));
  }
  return (name) => {
    const m = exact.get(name);
    if (m) return m;
    const candidates = [...(normalised.get(name) ?? [])];
    if (candidates.length > 1) {
      throw new NpyError(
        'NAME_CLASH',
        `tfjs layer '${name}' could be PyTorch module ${candidates.map((c) => `'${c.name}'`).join(' or ')} (dots read as '_' or '/'): name the layer exactly after one module, or map it with { names }`,
      );
    }
    return candidates[0];
  };
}

/**
 * The whole mapping of a PyTorch archive onto a model: tfjs layers and PyTorch modules are paired by
 * name where a tfjs layer is named after a module (`fc1`, `features_0` for `features.0`), the rest in
 * order (tfjs's layer order and the state_dict's module order). Every misfit is reported together.
 */
export async function planPytorch(
  model: LayersModelLike,
  archive: WeightFile,
  options: PytorchLayoutOptions & { ignoreUnused?: boolean | undefined; evidence?: boolean | undefined } = {},
  excluded: Excluded = { weights: new Set(), keys: new Set() },
  suspects: Suspect[] = [],
  pairing: [LayerLike, string][] = [],
): Promise<PlannedWeight[]> {
  const rules = new LayerRules(options);
  const layers = weightedLayers(model).filter((l) => l.weights.some((w) => !excluded.weights.has(savedName(w))));
  const modules = await modulesOf(archive, excluded.keys);
  const problems: string[] = [];
  const misfits: string[] = [];
  for (const layer of layers) {
    const why = rules.refusal(layer);
    if (why) problems.push(why);
  }
  if (problems.length) throw configError(problems);

  const rnnCount = new Map<string, number>();
  for (const m of modules)
    if (m.rnnLayer !== undefined) {
      const base = m.name.replace(/ \(layer \d+\)$/, '');
      rnnCount.set(base, (rnnCount.get(base) ?? 0) + 1);
    }
  const moduleNamed = moduleNames(modules, rnnCount);
  const pairs = new Map<LayerLike, TorchModule>();
  const taken = new Set<TorchModule>();
  for (const layer of layers) {
    const m = moduleNamed(layer.name);
    if (m && !taken.has(m)) {
      pairs.set(layer, m);
      taken.add(m);
    }
  }
  const restLayers = layers.filter((l) => !pairs.has(l));
  const restModules = modules.filter((m) => !taken.has(m) && [...m.params.keys()].some((p) => !IGNORED.has(p)));
  // Every layer paired by name: modules left over (an auxiliary head) are what ignoreUnused allows.
  if (restLayers.length === 0 && options.ignoreUnused) restModules.length = 0;
  // A .safetensors file keeps its tensors in its own order (by dtype, then name), not the state_dict's:
  // pairing by order would pair the wrong modules.
  if (restLayers.length && (archive.format === 'safetensors' || archive.format === 'safetensors-sharded')) {
    throw mismatchError(
      restLayers.map((l) => `tfjs layer '${l.name}' (${l.getClassName()}) is not named after a PyTorch module`),
      [
        "a .safetensors file does not keep the state_dict's order, so modules cannot be paired with layers by order: name these tfjs layers after their PyTorch modules (features_0 for features.0), or map them with { names }",
      ],
    );
  }
  if (restLayers.length !== restModules.length) {
    // One problem (the layers and modules do not pair up), listing what is left on each side.
    throw mismatchError(
      [
        [
          `the model has ${layers.length} layers with weights and the archive ${modules.length} PyTorch modules with parameters; after pairing by name, ${restLayers.length} layer${restLayers.length === 1 ? '' : 's'} and ${restModules.length} module${restModules.length === 1 ? '' : 's'} are left:`,
          `tfjs: ${restLayers.map((l) => `${l.name} (${l.getClassName()})`).join(', ') || 'none'}`,
          `PyTorch: ${restModules.map((m) => `${m.name || '(the model itself)'} (${[...m.params.keys()].join(', ')})`).join(', ') || 'none'}`,
        ].join('\n'),
      ],
      ['build the tfjs model with the same weighted layers, or map the others with { names }'],
    );
  }
  restLayers.forEach((l, i) => pairs.set(l, restModules[i]!));
  const byOrder = new Set(restLayers);
  const notes: string[] = [];
  let misfitByOrder = false;
  // Which module each layer computes, for the layer-by-layer check. PyTorch's hook sees a recurrent
  // module whole: its output (every step of its last layer) is its last layer's.
  for (const layer of layers) {
    const m = pairs.get(layer)!;
    if (m.rnnLayer === undefined) pairing.push([layer, m.name]);
    else {
      const base = m.name.replace(/ \(layer \d+\)$/, '');
      if (m.rnnLayer === (rnnCount.get(base) ?? 1) - 1) pairing.push([layer, base]);
    }
  }

  const planned: PlannedWeight[] = [];
  for (const layer of layers) {
    const module = pairs.get(layer)!;
    const eps = rules.epsilonOfModule(layer, module);
    // An epsilon that is not PyTorch's default is refused on the default's word alone, unless the
    // check members will run (evidence decides: a right epsilon passes, a wrong one fails the check,
    // which then names it). An epsilon stated in { epsilon } that the layer contradicts is refused.
    if (eps && options.evidence && options.epsilon === undefined) suspects.push({ layer: layer.name, text: eps });
    else if (eps) {
      problems.push(eps);
      continue;
    }
    const result = rules.pair(layer, module);
    if ('unfit' in result) {
      misfits.push(`${describeLayer(layer)} ↔ ${describeModule(module)}${byOrder.has(layer) ? ' (paired by order)' : ''}: ${result.unfit}`);
      if (byOrder.has(layer)) misfitByOrder = true;
    } else for (const p of result.planned) planned.push(p);
  }
  if (problems.length) throw configError(problems);
  if (misfitByOrder) {
    // Pairing by order assumes tfjs lists the layers in the state_dict's module order; a model with
    // branches (a ResNet's downsample, a ShuffleNet's branch1) breaks it, and the misfit above may
    // be a consequence, not a fault of the layer named.
    const examples = restModules.slice(0, 3).map((m) => `'${m.name.replace(/ \(layer \d+\)$/, '').replace(/\./g, '_')}' for ${m.name}`);
    notes.push(
      `layers marked "paired by order" were paired with modules by their order (tfjs's layer order, the state_dict's module order), which a model with branches does not keep: name the tfjs layers after their PyTorch modules (${examples.join(', ')}), or map them with { names }`,
    );
  }
  if (misfits.length) throw mismatchError(misfits, notes);
  return planned;
}
