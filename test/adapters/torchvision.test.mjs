// Real architectures nobody here wrote (issue 42): torchvision 0.14's resnet18, mobilenet_v2,
// mobilenet_v3_small, efficientnet_b0, shufflenet_v2_x0_5, squeezenet1_1 and densenet121 (Debian's PyTorch 1.13 in /usr/bin/python3), with random
// weights of a trained net's scale from fixed seeds and BatchNorm statistics moved by a few
// training-mode passes, exported as numpy's state_dict archive with check members.
// Their tfjs twins, built channels-last with layers named after the modules, take the weights with
// layout 'pytorch' under the default check (a correct port of a deep net is accepted: the issue saw
// mobilenet_v2 with seed 0 refused when the check did not know float32), and predict what PyTorch
// predicts. A port with one wrong padding is refused, and the layer-by-layer check (each module's
// output recorded with forward hooks) names the module where it goes wrong.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import * as tfl from '@tensorflow/tfjs-layers';
import { decodeNpz, toOrder, transpose } from '@npyts/core';
import { assignWeights } from '@npyts/tfjs';
import { channelChunk, channelShuffle, hardsigmoid, hardswish, torchConv2d } from '@npyts/tfjs/torch-layers';
import { scratch } from '../helpers/numpy.mjs';
import { hasPythonModules, pythonSession } from '../helpers/python-session.mjs';
import { useCpuBackend } from '../helpers/tfjs.mjs';

await useCpuBackend();
const dir = scratch('npyts-torchvision-');
const hasTorchvision = hasPythonModules('/usr/bin/python3', 'torchvision');
if (!hasTorchvision) console.log('torchvision is missing (apt-get install python3-torchvision): the torchvision ports are skipped');
const maybe = hasTorchvision ? test : test.skip;

/** torchvision's `name` with random weights (seed), statistics moved, its state_dict and check members (and each module's output) in one archive. */
async function exportModel(name, seed, size) {
  const path = join(dir, `${name}.npz`);
  // One Debian Python for the file (its torch and torchvision imported once), not one per model.
  await pythonSession('/usr/bin/python3').run(
    `import numpy as np, torch, torchvision, sys
torch.manual_seed(${seed})
net = getattr(torchvision.models, ${JSON.stringify(name)})()
# Weights of a trained net's scale rather than torchvision's initialisation (whose classifier and
# zero biases make some outputs nearly constant): He-scaled weights, small biases, BatchNorm affine.
with torch.no_grad():
    for module in net.modules():
        if isinstance(module, (torch.nn.Conv2d, torch.nn.Linear)):
            module.weight.normal_(0, (2 / module.weight[0].numel()) ** 0.5)
            if module.bias is not None:
                module.bias.uniform_(-0.1, 0.1)
        elif isinstance(module, torch.nn.BatchNorm2d):
            module.weight.uniform_(0.5, 1.5)
            module.bias.uniform_(-0.2, 0.2)
net.train()
with torch.no_grad():
    for _ in range(3):
        net(torch.randn(4, 3, ${size}, ${size}))
net.eval()
outputs = {}
def record(name):
    def hook(module, inputs, output):
        # A copy: torchvision's activations work in place and would change it after the hook.
        outputs['check/module/' + name] = output.detach().clone().numpy()
    return hook
for n, m in net.named_modules():
    if n and not list(m.children()):
        m.register_forward_hook(record(n))
x = torch.randn(2, 3, ${size}, ${size})
with torch.no_grad():
    y = net(x)
arrays = {k: v.numpy() for k, v in net.state_dict().items()}
arrays.update(outputs)
arrays['check/input'] = x.numpy()
arrays['check/output'] = y.numpy()
np.savez(${JSON.stringify(path)}, **arrays)`,
  );
  return path;
}

const bn = (name) => tfl.layers.batchNormalization({ epsilon: 1e-5, momentum: 0.9, name });

/**
 * torchvision's resnet18 as tfjs layers (functional), channels last. `wrongStem` builds the first
 * convolution with tfjs's 'same' padding, which pads a stride-2 convolution 2 rows above and 3 below
 * where PyTorch pads 3 and 3: the same shapes, other values.
 */
function resnet18(size, wrongStem = false) {
  const input = tfl.input({ shape: [size, size, 3] });
  const conv = (name, filters, kernel, stride, padding) => torchConv2d({ filters, kernelSize: kernel, strides: stride, padding, useBias: false, name });
  const convBn = (x, name, filters, kernel, stride, padding) =>
    bn(`${name.replace('conv', 'bn')}`).apply(conv(name, filters, kernel, stride, padding).apply(x));
  const stem = wrongStem
    ? tfl.layers.conv2d({ filters: 64, kernelSize: 7, strides: 2, padding: 'same', useBias: false, name: 'conv1' })
    : conv('conv1', 64, 7, 2, 3);
  let x = bn('bn1').apply(stem.apply(input));
  x = tfl.layers.reLU({ name: 'relu' }).apply(x);
  x = tfl.layers.maxPooling2d({ poolSize: 3, strides: 2, padding: 'valid', name: 'maxpool' }).apply(tfl.layers.zeroPadding2d({ padding: 1 }).apply(x)); // after a ReLU, zeros pad as -inf would
  let channels = 64;
  for (const [stage, filters] of [64, 128, 256, 512].entries()) {
    for (let block = 0; block < 2; block++) {
      const stride = stage > 0 && block === 0 ? 2 : 1;
      const at = `layer${stage + 1}_${block}`;
      let y = tfl.layers.reLU().apply(convBn(x, `${at}_conv1`, filters, 3, stride, 1));
      y = convBn(y, `${at}_conv2`, filters, 3, 1, 1);
      let shortcut = x;
      if (stride !== 1 || channels !== filters) {
        shortcut = tfl.layers
          .batchNormalization({ epsilon: 1e-5, name: `${at}_downsample_1` })
          .apply(torchConv2d({ filters, kernelSize: 1, strides: stride, useBias: false, name: `${at}_downsample_0` }).apply(x));
      }
      x = tfl.layers.reLU().apply(tfl.layers.add().apply([y, shortcut]));
      channels = filters;
    }
  }
  x = tfl.layers.globalAveragePooling2d({ name: 'avgpool' }).apply(x);
  return tfl.model({ inputs: input, outputs: tfl.layers.dense({ units: 1000, name: 'fc' }).apply(x) });
}

/** torchvision's mobilenet_v2 as tfjs layers, channels last: inverted residual blocks with depthwise convolutions. */
function mobilenetV2(size) {
  const input = tfl.input({ shape: [size, size, 3] });
  const relu6 = () => tfl.layers.reLU({ maxValue: 6 });
  const convBnRelu = (x, at, filters, stride) =>
    relu6().apply(bn(`${at}_1`).apply(torchConv2d({ filters, kernelSize: 3, strides: stride, padding: 1, useBias: false, name: `${at}_0` }).apply(x)));
  const pointwise = (x, at, filters) => bn(`${at}_1`).apply(torchConv2d({ filters, kernelSize: 1, useBias: false, name: `${at}_0` }).apply(x));
  const depthwise = (x, at, stride) =>
    relu6().apply(
      bn(`${at}_1`).apply(
        tfl.layers
          .depthwiseConv2d({ kernelSize: 3, strides: stride, padding: 'valid', useBias: false, name: `${at}_0` })
          .apply(tfl.layers.zeroPadding2d({ padding: 1 }).apply(x)),
      ),
    );
  let x = convBnRelu(input, 'features_0', 32, 2);
  let channels = 32;
  let index = 1;
  for (const [t, c, n, s] of [
    [1, 16, 1, 1],
    [6, 24, 2, 2],
    [6, 32, 3, 2],
    [6, 64, 4, 2],
    [6, 96, 3, 1],
    [6, 160, 3, 2],
    [6, 320, 1, 1],
  ]) {
    for (let i = 0; i < n; i++) {
      const stride = i === 0 ? s : 1;
      const at = `features_${index++}_conv`;
      let y = x;
      let k = 0;
      if (t !== 1) y = relu6().apply(pointwise(y, `${at}_${k++}`, channels * t));
      y = depthwise(y, `${at}_${k++}`, stride);
      y = torchConv2d({ filters: c, kernelSize: 1, useBias: false, name: `${at}_${k++}` }).apply(y);
      y = bn(`${at}_${k++}`).apply(y);
      x = stride === 1 && channels === c ? tfl.layers.add().apply([x, y]) : y;
      channels = c;
    }
  }
  x = relu6().apply(pointwise(x, 'features_18', 1280));
  x = tfl.layers.globalAveragePooling2d({ name: 'avgpool' }).apply(x);
  return tfl.model({ inputs: input, outputs: tfl.layers.dense({ units: 1000, name: 'classifier_1' }).apply(x) });
}

/** torchvision's rounding of channel counts (`_make_divisible(v, 8)`). */
const divisible = (v) => {
  const rounded = Math.max(8, Math.floor((v + 4) / 8) * 8);
  return rounded < 0.9 * v ? rounded + 8 : rounded;
};

/**
 * torchvision's mobilenet_v3_small as tfjs layers, channels last: PyTorch's Hardswish and
 * Hardsigmoid (from @npyts/tfjs/torch-layers), squeeze-excitation gates, and BatchNorm with
 * torchvision's eps 1e-3 (not PyTorch's default, which only the check members can vouch for).
 */
function mobilenetV3Small(size, gate = null) {
  // `gate`, when given, makes the squeeze-excitation gates' activation (else PyTorch's Hardsigmoid).
  const input = tfl.input({ shape: [size, size, 3] });
  const act = (kind) => (kind === 'HS' ? hardswish() : tfl.layers.reLU());
  const bn3 = (name) => tfl.layers.batchNormalization({ epsilon: 1e-3, momentum: 0.99, name });
  /** Conv2dNormActivation: a convolution (depthwise where groups = channels), BatchNorm, an activation (or none). */
  const convNormAct = (x, at, filters, kernel, stride, kind, depthwise = false) => {
    const padded = tfl.layers.zeroPadding2d({ padding: (kernel - 1) / 2 }).apply(x);
    const conv = depthwise
      ? tfl.layers.depthwiseConv2d({ kernelSize: kernel, strides: stride, padding: 'valid', useBias: false, name: `${at}_0` })
      : torchConv2d({ filters, kernelSize: kernel, strides: stride, useBias: false, name: `${at}_0` });
    const y = bn3(`${at}_1`).apply(conv.apply(kernel === 1 ? x : padded));
    return kind ? act(kind).apply(y) : y;
  };
  let x = convNormAct(input, 'features_0', 16, 3, 2, 'HS');
  let channels = 16;
  const blocks = [
    [3, 16, 16, true, 'RE', 2],
    [3, 72, 24, false, 'RE', 2],
    [3, 88, 24, false, 'RE', 1],
    [5, 96, 40, true, 'HS', 2],
    [5, 240, 40, true, 'HS', 1],
    [5, 240, 40, true, 'HS', 1],
    [5, 120, 48, true, 'HS', 1],
    [5, 144, 48, true, 'HS', 1],
    [5, 288, 96, true, 'HS', 2],
    [5, 576, 96, true, 'HS', 1],
    [5, 576, 96, true, 'HS', 1],
  ];
  for (const [n, [kernel, expanded, out, se, kind, stride]] of blocks.entries()) {
    const at = `features_${n + 1}_block`;
    let i = 0;
    let y = x;
    if (expanded !== channels) y = convNormAct(y, `${at}_${i++}`, expanded, 1, 1, kind);
    y = convNormAct(y, `${at}_${i++}`, expanded, kernel, stride, kind, true);
    if (se) {
      const squeezed = divisible(Math.floor(expanded / 4));
      let s = tfl.layers.reshape({ targetShape: [1, 1, expanded] }).apply(tfl.layers.globalAveragePooling2d({}).apply(y));
      s = tfl.layers.reLU().apply(torchConv2d({ filters: squeezed, kernelSize: 1, name: `${at}_${i}_fc1` }).apply(s));
      s = (gate ? gate() : hardsigmoid()).apply(torchConv2d({ filters: expanded, kernelSize: 1, name: `${at}_${i}_fc2` }).apply(s));
      y = tfl.layers.multiply().apply([y, s]);
      i++;
    }
    y = convNormAct(y, `${at}_${i++}`, out, 1, 1, null);
    x = stride === 1 && channels === out ? tfl.layers.add().apply([x, y]) : y;
    channels = out;
  }
  x = convNormAct(x, 'features_12', 576, 1, 1, 'HS');
  x = tfl.layers.globalAveragePooling2d({ name: 'avgpool' }).apply(x);
  x = hardswish().apply(tfl.layers.dense({ units: 1024, name: 'classifier_0' }).apply(x));
  return tfl.model({ inputs: input, outputs: tfl.layers.dense({ units: 1000, name: 'classifier_3' }).apply(x) });
}

/**
 * torchvision's efficientnet_b0 as tfjs layers, channels last: MBConv blocks with SiLU (tfjs's
 * 'swish'), squeeze-excitation gated by a sigmoid, and residuals (stochastic depth is the identity
 * when evaluating).
 */
function efficientnetB0(size) {
  const input = tfl.input({ shape: [size, size, 3] });
  const silu = () => tfl.layers.activation({ activation: 'swish' });
  const convNormAct = (x, at, filters, kernel, stride, activate, depthwise = false) => {
    const padded = kernel === 1 ? x : tfl.layers.zeroPadding2d({ padding: (kernel - 1) / 2 }).apply(x);
    const conv = depthwise
      ? tfl.layers.depthwiseConv2d({ kernelSize: kernel, strides: stride, padding: 'valid', useBias: false, name: `${at}_0` })
      : torchConv2d({ filters, kernelSize: kernel, strides: stride, useBias: false, name: `${at}_0` });
    const y = bn(`${at}_1`).apply(conv.apply(padded));
    return activate ? silu().apply(y) : y;
  };
  let x = convNormAct(input, 'features_0', 32, 3, 2, true);
  let channels = 32;
  const stages = [
    [1, 3, 1, 16, 1],
    [6, 3, 2, 24, 2],
    [6, 5, 2, 40, 2],
    [6, 3, 2, 80, 3],
    [6, 5, 1, 112, 3],
    [6, 5, 2, 192, 4],
    [6, 3, 1, 320, 1],
  ];
  for (const [stage, [expand, kernel, firstStride, out, count]] of stages.entries()) {
    for (let j = 0; j < count; j++) {
      const stride = j === 0 ? firstStride : 1;
      const at = `features_${stage + 1}_${j}_block`;
      const expanded = divisible(channels * expand);
      let i = 0;
      let y = x;
      if (expanded !== channels) y = convNormAct(y, `${at}_${i++}`, expanded, 1, 1, true);
      y = convNormAct(y, `${at}_${i++}`, expanded, kernel, stride, true, true);
      let s = tfl.layers.reshape({ targetShape: [1, 1, expanded] }).apply(tfl.layers.globalAveragePooling2d({}).apply(y));
      s = silu().apply(torchConv2d({ filters: Math.max(1, Math.floor(channels / 4)), kernelSize: 1, name: `${at}_${i}_fc1` }).apply(s));
      s = tfl.layers.activation({ activation: 'sigmoid' }).apply(torchConv2d({ filters: expanded, kernelSize: 1, name: `${at}_${i}_fc2` }).apply(s));
      y = tfl.layers.multiply().apply([y, s]);
      i++;
      y = convNormAct(y, `${at}_${i++}`, out, 1, 1, false);
      x = stride === 1 && channels === out ? tfl.layers.add().apply([x, y]) : y;
      channels = out;
    }
  }
  x = convNormAct(x, 'features_8', 1280, 1, 1, true);
  x = tfl.layers.globalAveragePooling2d({ name: 'avgpool' }).apply(x);
  return tfl.model({ inputs: input, outputs: tfl.layers.dense({ units: 1000, name: 'classifier_1' }).apply(x) });
}

/**
 * torchvision's shufflenet_v2_x0_5 as tfjs layers, channels last: each block splits its channels in
 * two (stride 1) or runs two branches (stride 2), joins them and shuffles the channels, with
 * channelChunk and channelShuffle from @npyts/tfjs/torch-layers.
 */
function shufflenetV2x05(size) {
  const input = tfl.input({ shape: [size, size, 3] });
  const relu = () => tfl.layers.reLU();
  const pointwise = (x, at, filters) => torchConv2d({ filters, kernelSize: 1, useBias: false, name: at }).apply(x);
  const depthwise = (x, at, stride) =>
    tfl.layers
      .depthwiseConv2d({ kernelSize: 3, strides: stride, padding: 'valid', useBias: false, name: at })
      .apply(tfl.layers.zeroPadding2d({ padding: 1 }).apply(x));
  let x = relu().apply(bn('conv1_1').apply(torchConv2d({ filters: 24, kernelSize: 3, strides: 2, padding: 1, useBias: false, name: 'conv1_0' }).apply(input)));
  x = tfl.layers.maxPooling2d({ poolSize: 3, strides: 2, padding: 'valid', name: 'maxpool' }).apply(tfl.layers.zeroPadding2d({ padding: 1 }).apply(x)); // after a ReLU, zeros pad as -inf would
  for (const [stage, [repeats, out]] of [
    [4, 48],
    [8, 96],
    [4, 192],
  ].entries()) {
    const half = out / 2;
    for (let j = 0; j < repeats; j++) {
      const at = `stage${stage + 2}_${j}`;
      const stride = j === 0 ? 2 : 1;
      const branch2 = (y) => {
        y = relu().apply(bn(`${at}_branch2_1`).apply(pointwise(y, `${at}_branch2_0`, half)));
        y = bn(`${at}_branch2_4`).apply(depthwise(y, `${at}_branch2_3`, stride));
        return relu().apply(bn(`${at}_branch2_6`).apply(pointwise(y, `${at}_branch2_5`, half)));
      };
      let left;
      let right;
      if (stride === 1) {
        left = channelChunk({ chunks: 2, index: 0 }).apply(x);
        right = branch2(channelChunk({ chunks: 2, index: 1 }).apply(x));
      } else {
        left = bn(`${at}_branch1_1`).apply(depthwise(x, `${at}_branch1_0`, 2));
        left = relu().apply(bn(`${at}_branch1_3`).apply(pointwise(left, `${at}_branch1_2`, half)));
        right = branch2(x);
      }
      x = channelShuffle({ groups: 2 }).apply(tfl.layers.concatenate({ axis: -1 }).apply([left, right]));
    }
  }
  x = relu().apply(bn('conv5_1').apply(pointwise(x, 'conv5_0', 1024)));
  x = tfl.layers.globalAveragePooling2d({ name: 'avgpool' }).apply(x);
  return tfl.model({ inputs: input, outputs: tfl.layers.dense({ units: 1000, name: 'fc' }).apply(x) });
}

/** torchvision's squeezenet1_1 as tfjs layers: Fire modules, and max pooling with ceil_mode (extra zeros at the bottom and right, after a ReLU). */
function squeezenet11(size) {
  const input = tfl.input({ shape: [size, size, 3] });
  const relu = () => tfl.layers.reLU();
  const conv = (x, name, filters, kernel, padding = 0, stride = 1) =>
    relu().apply(torchConv2d({ filters, kernelSize: kernel, strides: stride, padding, name }).apply(x));
  let n = Math.floor((size - 3) / 2) + 1;
  /** MaxPool2d(3, 2, ceil_mode=True): a last window that starts inside the input is kept. */
  const pool = (x) => {
    const out = Math.ceil((n - 3) / 2) + 1;
    const extra = (out - 1) * 2 + 3 - n;
    n = out;
    const padded = extra
      ? tfl.layers
          .zeroPadding2d({
            padding: [
              [0, extra],
              [0, extra],
            ],
          })
          .apply(x)
      : x;
    return tfl.layers.maxPooling2d({ poolSize: 3, strides: 2, padding: 'valid' }).apply(padded);
  };
  const fire = (x, at, squeeze, expand) => {
    const s = conv(x, `${at}_squeeze`, squeeze, 1);
    return tfl.layers.concatenate({ axis: -1 }).apply([conv(s, `${at}_expand1x1`, expand, 1), conv(s, `${at}_expand3x3`, expand, 3, 1)]);
  };
  let x = conv(input, 'features_0', 64, 3, 0, 2);
  x = pool(x);
  x = fire(fire(x, 'features_3', 16, 64), 'features_4', 16, 64);
  x = pool(x);
  x = fire(fire(x, 'features_6', 32, 128), 'features_7', 32, 128);
  x = pool(x);
  for (const [i, [squeeze, expand]] of [
    [48, 192],
    [48, 192],
    [64, 256],
    [64, 256],
  ].entries()) {
    x = fire(x, `features_${9 + i}`, squeeze, expand);
  }
  x = conv(x, 'classifier_1', 1000, 1);
  return tfl.model({ inputs: input, outputs: tfl.layers.globalAveragePooling2d({ name: 'avgpool' }).apply(x) });
}

/** torchvision's densenet121 as tfjs layers: dense blocks (BatchNorm, ReLU, convolution, each layer's output joined to all before it) and transitions. */
function densenet121(size) {
  const input = tfl.input({ shape: [size, size, 3] });
  const relu = () => tfl.layers.reLU();
  const normReluConv = (x, norm, conv, filters, kernel, padding) =>
    torchConv2d({ filters, kernelSize: kernel, padding, useBias: false, name: conv }).apply(relu().apply(bn(norm).apply(x)));
  let x = relu().apply(
    bn('features_norm0').apply(torchConv2d({ filters: 64, kernelSize: 7, strides: 2, padding: 3, useBias: false, name: 'features_conv0' }).apply(input)),
  );
  x = tfl.layers.maxPooling2d({ poolSize: 3, strides: 2, padding: 'valid' }).apply(tfl.layers.zeroPadding2d({ padding: 1 }).apply(x));
  let channels = 64;
  for (const [b, layers] of [6, 12, 24, 16].entries()) {
    for (let l = 1; l <= layers; l++) {
      const at = `features_denseblock${b + 1}_denselayer${l}`;
      const y = normReluConv(normReluConv(x, `${at}_norm1`, `${at}_conv1`, 128, 1, 0), `${at}_norm2`, `${at}_conv2`, 32, 3, 1);
      x = tfl.layers.concatenate({ axis: -1 }).apply([x, y]);
      channels += 32;
    }
    if (b < 3) {
      const at = `features_transition${b + 1}`;
      channels /= 2;
      x = tfl.layers.averagePooling2d({ poolSize: 2, strides: 2 }).apply(normReluConv(x, `${at}_norm`, `${at}_conv`, channels, 1, 0));
    }
  }
  x = relu().apply(bn('features_norm5').apply(x));
  x = tfl.layers.globalAveragePooling2d({ name: 'avgpool' }).apply(x);
  return tfl.model({ inputs: input, outputs: tfl.layers.dense({ units: 1000, name: 'classifier' }).apply(x) });
}

/** The largest difference between the model's prediction on the check input (moved channels last) and PyTorch's output, and that output's scale. */
function predictionGap(model, path) {
  const z = decodeNpz(readFileSync(path));
  const input = toOrder(transpose(z.getSync('check/input'), [0, 2, 3, 1]), 'C');
  const want = z.getSync('check/output');
  const got = model.predict(tf.tensor(input.data, input.shape)).dataSync();
  let worst = 0;
  let scale = 0;
  for (let i = 0; i < got.length; i++) {
    worst = Math.max(worst, Math.abs(got[i] - want.data[i]));
    scale = Math.max(scale, Math.abs(want.data[i]));
  }
  return { worst, scale };
}

maybe(
  "torchvision's resnet18, mobilenet_v2, mobilenet_v3_small (BatchNorm eps 1e-3), efficientnet_b0, shufflenet_v2_x0_5, squeezenet1_1 (ceil_mode pooling) and densenet121 (seed 0) port with layout 'pytorch' under the default check and predict PyTorch's output",
  async () => {
    for (const [name, build, size] of [
      ['resnet18', resnet18, 64],
      ['mobilenet_v2', mobilenetV2, 64],
      ['mobilenet_v3_small', mobilenetV3Small, 64],
      ['efficientnet_b0', efficientnetB0, 64],
      ['shufflenet_v2_x0_5', shufflenetV2x05, 64],
      ['squeezenet1_1', squeezenet11, 65],
      ['densenet121', densenet121, 64],
    ]) {
      const path = await exportModel(name, 0, size);
      const model = build(size);
      // The default check runs on the check members: it must accept a correct port.
      await assignWeights(model, path, { layout: 'pytorch' });
      const { worst, scale } = predictionGap(model, path);
      assert.ok(worst <= 1e-4 * scale, `${name}: differs from PyTorch by ${worst} (outputs up to ${scale})`);
    }
  },
);

maybe(
  "a resnet18 port with tfjs's 'same' padding in its stride-2 stem is refused, and the layer-by-layer check names the module where it goes wrong: 'conv1'",
  async () => {
    const path = await exportModel('resnet18', 1, 64);
    const wrong = resnet18(64, true);
    const error = await assignWeights(wrong, path, { layout: 'pytorch' }).then(
      () => null,
      (e) => e,
    );
    assert.is(error?.code, 'CHECK_FAILED');
    assert.match(error.message, /the first PyTorch module whose output differs is 'conv1'/);
  },
);

maybe(
  "a mobilenet_v3_small port with tfjs's hardSigmoid in its squeeze-excitation gates is refused at the first block after a gate; BatchNorm's eps 1e-3 is suspected only where no module output vouches for it, and summed up",
  async () => {
    const path = await exportModel('mobilenet_v3_small', 2, 64);
    const wrong = mobilenetV3Small(64, () => tfl.layers.activation({ activation: 'hardSigmoid' }));
    const error = await assignWeights(wrong, path, { layout: 'pytorch' }).then(
      () => null,
      (e) => e,
    );
    assert.is(error?.code, 'CHECK_FAILED');
    assert.match(error.message, /the first PyTorch module whose output differs is 'features\.1\.block\.2\.0'/);
    assert.match(error.message, /epsilon is 0\.001.*; and \d+ more layers like them/);
    // The BatchNorms before the gate were seen to agree with their modules: their epsilon is not suspected.
    assert.not.match(error.message, /tfjs layer 'features_0_1'/);
    assert.ok(error.message.length < 3000, `${error.message.length} characters`);
    // One gate layer called in every block: tfjs cannot run such a model layer by layer, and the refusal says so.
    const shared = tfl.layers.activation({ activation: 'hardSigmoid' });
    const sharing = await assignWeights(
      mobilenetV3Small(64, () => shared),
      path,
      { layout: 'pytorch' },
    ).then(
      () => null,
      (e) => e,
    );
    assert.is(sharing?.code, 'CHECK_FAILED');
    assert.match(sharing.message, /the layer-by-layer check could not run this model \(tfjs: Layer .* has multiple inbound nodes/);
  },
);

test.run();
