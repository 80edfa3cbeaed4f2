/**
 * `@npyts/tfjs/torch-layers`: tfjs-layers layers that compute what PyTorch modules compute where
 * tfjs-layers has no layer of its own, or one of the same name that computes something else:
 * `nn.Hardsigmoid`, `nn.Hardswish` and `nn.AdaptiveAvgPool2d` to any output size. They are ordinary
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
    const shape = (Array.isArray(inputShape[0]) ? inputShape[0] : inputShape) as tfl.Shape;
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

for (const layer of [TorchHardsigmoid, TorchHardswish, TorchAdaptiveAvgPool2d]) tf.serialization.registerClass(layer);

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
