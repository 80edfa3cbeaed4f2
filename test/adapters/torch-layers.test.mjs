// @npyts/tfjs/torch-layers (issue 42): the PyTorch modules tfjs-layers lacks, as tfjs-layers layers.
// PyTorch (python3's torch 2) computes Hardsigmoid, Hardswish and AdaptiveAvgPool2d on the same
// inputs; the layers give its values; a model that uses them saves and loads through npzHandler;
// and a small PyTorch network with all three ports with layout 'pytorch' and passes its check.
// Grouped convolutions (with PyTorch's padding, strides and dilation) and PyTorch's GRU port the same
// way and predict what PyTorch predicts; tfjs's own Conv2D and GRU are refused, naming these layers.
// MultiheadAttention (packed in_proj_weight, its out_proj folded into it) ports for self-attention
// with and without a causal mask, and computes PyTorch's cross-attention.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import * as tfl from '@tensorflow/tfjs-layers';
import { decodeNpz, toOrder, transpose } from '@npyts/core';
import { assignWeights, npzHandler } from '@npyts/tfjs';
import {
  TorchAdaptiveAvgPool2d,
  TorchConv2D,
  TorchGRU,
  TorchMultiheadAttention,
  adaptiveAvgPool2d,
  channelChunk,
  channelShuffle,
  hardsigmoid,
  hardswish,
  torchConv2d,
  torchGRU,
  torchMultiheadAttention,
} from '@npyts/tfjs/torch-layers';
import { readFileSync } from 'node:fs';
import { pythonAsync, scratch } from '../helpers/numpy.mjs';
import { useCpuBackend } from '../helpers/tfjs.mjs';

await useCpuBackend();
const dir = scratch('npyts-torch-layers-');
const made = join(dir, 'torch.npz');
const POOLS = [
  [1, 1],
  [3, 4],
  [7, 7],
  [5, 11],
  [13, 11],
  [17, 14],
];
// PyTorch's answers, channels last where there are channels.
await pythonAsync(`import torch
torch.manual_seed(0)
x = torch.cat([torch.linspace(-5, 5, 10001), torch.randn(10000) * 4])
img = torch.randn(2, 5, 13, 11)
out = {'x': x.numpy(), 'hardsigmoid': torch.nn.Hardsigmoid()(x).numpy(), 'hardswish': torch.nn.Hardswish()(x).numpy(),
       'img': img.permute(0, 2, 3, 1).contiguous().numpy()}
for h, w in ${JSON.stringify(POOLS)}:
    out[f'pool_{h}_{w}'] = torch.nn.AdaptiveAvgPool2d((h, w))(img).permute(0, 2, 3, 1).contiguous().numpy()
np.savez(${JSON.stringify(made)}, **out)`);
const truth = decodeNpz(readFileSync(made));
const tensorOf = (a) => tf.tensor(a.data, a.shape, 'float32');
const largest = (t, a) => {
  const got = t.dataSync();
  let worst = 0;
  for (let i = 0; i < got.length; i++) worst = Math.max(worst, Math.abs(got[i] - a.data[i]));
  return worst;
};

test("hardsigmoid and hardswish give PyTorch's values (tfjs's own hardSigmoid does not)", () => {
  const x = tensorOf(truth.getSync('x'));
  for (const [name, layer] of [
    ['hardsigmoid', hardsigmoid()],
    ['hardswish', hardswish()],
  ]) {
    const worst = largest(layer.apply(x), truth.getSync(name));
    assert.ok(worst <= 1e-6, `${name}: differs by ${worst}`);
  }
  // The check is sharp: tfjs's hardSigmoid is another function.
  assert.ok(largest(tfl.layers.activation({ activation: 'hardSigmoid' }).apply(x), truth.getSync('hardsigmoid')) > 0.05);
});

test("adaptiveAvgPool2d gives PyTorch's values for sizes that divide, do not divide, exceed half the input, and exceed the input", () => {
  const img = tensorOf(truth.getSync('img'));
  for (const [h, w] of POOLS) {
    const layer = adaptiveAvgPool2d({ outputSize: [h, w] });
    const out = layer.apply(img);
    assert.equal(out.shape, [2, h, w, 5]);
    const worst = largest(out, truth.getSync(`pool_${h}_${w}`));
    assert.ok(worst <= 1e-6, `${h}×${w}: differs by ${worst}`);
  }
  assert.throws(() => adaptiveAvgPool2d({ outputSize: 0 }), /positive integer/);
});

test('a model with the three layers saves through npzHandler and loads back with the same predictions', async () => {
  const model = tfl.sequential({
    layers: [
      tfl.layers.conv2d({ inputShape: [13, 11, 5], filters: 4, kernelSize: 3, padding: 'same', name: 'conv' }),
      hardswish({ name: 'act' }),
      adaptiveAvgPool2d({ outputSize: [3, 2], name: 'pool' }),
      hardsigmoid({ name: 'gate' }),
    ],
  });
  const img = tensorOf(truth.getSync('img'));
  const before = model.predict(img).dataSync();
  const path = join(dir, 'model.npz');
  await model.save(npzHandler(path));
  const loaded = await tfl.loadLayersModel(npzHandler(path));
  assert.ok(loaded.getLayer('pool') instanceof TorchAdaptiveAvgPool2d);
  assert.equal(loaded.getLayer('pool').getConfig().outputSize, [3, 2]);
  assert.equal(Array.from(loaded.predict(img).dataSync()), Array.from(before));
});

/**
 * A PyTorch network whose class body is `body`, built with `make` after seeding and run on `input`:
 * its state_dict and check members (the input in PyTorch's layout, the output) saved at `path`.
 * `more` runs after, with `net`, `x` and `arrays` (reference values of its own).
 */
async function exportNet(path, { body, seed, input, make = 'Net()', more = '' }) {
  await pythonAsync(`import torch
class Net(torch.nn.Module):
${body}
torch.manual_seed(${seed})
net = ${make}.eval()
x = ${input}
with torch.no_grad():
    y = net(x)
arrays = {k: v.numpy() for k, v in net.state_dict().items()}
arrays['check/input'] = x.numpy()   # in PyTorch's layout: the check moves channels last itself
arrays['check/output'] = y.numpy()
${more}
np.savez(${JSON.stringify(path)}, **arrays)`);
}

/** The tfjs twin of the network below, with `gate` as its last layer. */
const port = (gate) =>
  tfl.sequential({
    layers: [
      tfl.layers.conv2d({ inputShape: [13, 11, 5], filters: 8, kernelSize: 3, padding: 'same', name: 'conv1' }),
      hardswish({ name: 'act' }),
      adaptiveAvgPool2d({ outputSize: 3, name: 'pool' }),
      tfl.layers.conv2d({ filters: 4, kernelSize: 3, padding: 'valid', name: 'conv2' }),
      gate,
    ],
  });

test('a PyTorch network with Hardswish, AdaptiveAvgPool2d(3) and Hardsigmoid ports with layout "pytorch" and predicts what PyTorch predicts', async () => {
  const weights = join(dir, 'net.npz');
  await exportNet(weights, {
    seed: 1,
    input: 'torch.randn(3, 5, 13, 11)',
    body: `    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(5, 8, 3, padding=1)
        self.act = torch.nn.Hardswish()
        self.pool = torch.nn.AdaptiveAvgPool2d(3)
        self.conv2 = torch.nn.Conv2d(8, 4, 3)
        self.gate = torch.nn.Hardsigmoid()
    def forward(self, x):
        return self.gate(self.conv2(self.pool(self.act(self.conv1(x)))))`,
  });
  const model = port(hardsigmoid({ name: 'gate' }));
  // The archive's check members are compared after the weights are set: a wrong layer would fail here.
  await assignWeights(model, weights, { layout: 'pytorch' });
  const z = decodeNpz(readFileSync(weights));
  const channelsLast = (a) => toOrder(transpose(a, [0, 2, 3, 1]), 'C');
  const worst = largest(model.predict(tensorOf(channelsLast(z.getSync('check/input')))), channelsLast(z.getSync('check/output')));
  assert.ok(worst <= 1e-5, `differs from PyTorch by ${worst}`);
  // With tfjs's hardSigmoid in place of PyTorch's, the same port is refused by its check.
  const wrong = port(tfl.layers.activation({ activation: 'hardSigmoid', name: 'gate' }));
  const refused = await assignWeights(wrong, weights, { layout: 'pytorch' }).then(
    () => null,
    (e) => e.code,
  );
  assert.is(refused, 'CHECK_FAILED');
});

/** PyTorch's channels-first check arrays as channels-last tensors. */
const channelsLast = (a) => toOrder(transpose(a, [0, 2, 3, 1]), 'C');
const refusal = (promise) =>
  promise.then(
    () => null,
    (e) => e,
  );

test('grouped convolutions (groups 4 and 3, padding, stride, dilation, no bias) port with layout "pytorch" and predict what PyTorch predicts; a tfjs Conv2D in their place is refused, naming TorchConv2D', async () => {
  const weights = join(dir, 'grouped.npz');
  await exportNet(weights, {
    seed: 2,
    input: 'torch.randn(2, 8, 15, 13)',
    body: `    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(8, 12, 3, padding=1, groups=4)
        self.act = torch.nn.ReLU()
        self.conv2 = torch.nn.Conv2d(12, 6, 3, stride=2, padding=(2, 1), dilation=2, groups=3, bias=False)
    def forward(self, x):
        return self.conv2(self.act(self.conv1(x)))`,
  });
  const model = tfl.sequential({
    layers: [
      torchConv2d({ inputShape: [15, 13, 8], filters: 12, kernelSize: 3, padding: 1, groups: 4, name: 'conv1' }),
      tfl.layers.reLU({ name: 'act' }),
      torchConv2d({ filters: 6, kernelSize: 3, strides: 2, padding: [2, 1], dilation: 2, groups: 3, useBias: false, name: 'conv2' }),
    ],
  });
  await assignWeights(model, weights, { layout: 'pytorch' }); // its check members pass
  const z = decodeNpz(readFileSync(weights));
  const out = model.predict(tensorOf(channelsLast(z.getSync('check/input'))));
  const want = channelsLast(z.getSync('check/output'));
  assert.equal(out.shape, want.shape);
  const worst = largest(out, want);
  assert.ok(worst <= 1e-5, `differs from PyTorch by ${worst}`);
  // tfjs's Conv2D cannot be grouped: the refusal names the layer to use.
  const plain = tfl.sequential({
    layers: [
      tfl.layers.conv2d({ inputShape: [15, 15, 8], filters: 12, kernelSize: 3, padding: 'same', name: 'conv1' }),
      tfl.layers.reLU({ name: 'act' }),
      torchConv2d({ filters: 6, kernelSize: 3, strides: 2, padding: [2, 1], dilation: 2, groups: 3, useBias: false, name: 'conv2' }),
    ],
  });
  const e = await refusal(assignWeights(plain, weights, { layout: 'pytorch' }));
  assert.match(e?.message ?? '', /grouped convolution \(groups=4\).*TorchConv2D from '@npyts\/tfjs\/torch-layers'/);
  // A TorchConv2D built without groups for a grouped module: its groups are what differs, and the fix names the number.
  const ungrouped = tfl.sequential({
    layers: [
      torchConv2d({ inputShape: [15, 13, 8], filters: 12, kernelSize: 3, padding: 1, name: 'conv1' }),
      tfl.layers.reLU({ name: 'act' }),
      torchConv2d({ filters: 6, kernelSize: 3, strides: 2, padding: [2, 1], dilation: 2, groups: 3, useBias: false, name: 'conv2' }),
    ],
  });
  const g = await refusal(assignWeights(ungrouped, weights, { layout: 'pytorch' }));
  assert.match(g?.message ?? '', /TorchConv2D\) ↔ PyTorch module 'conv1' .*grouped convolution \(groups=4\) and the layer has groups 1: set `groups: 4`/);
  assert.not.match(g?.message ?? '', /build it as TorchConv2D/);
  assert.throws(() => torchConv2d({ filters: 6, kernelSize: 3, groups: 4 }), /divides filters/);
});

test("torchConv2d's padding 'same' (odd, even and dilated kernels: PyTorch's extra row and column after) and 'valid' compute PyTorch's; 'same' with strides is refused, as PyTorch refuses it", async () => {
  const path = join(dir, 'padding.npz');
  const cases = {
    same_odd: { torch: "3, 4, 3, padding='same'", js: { filters: 4, kernelSize: 3, padding: 'same' } },
    same_even: { torch: "3, 4, (4, 2), padding='same'", js: { filters: 4, kernelSize: [4, 2], padding: 'same' } },
    same_dilated: { torch: "3, 4, (2, 3), padding='same', dilation=(3, 2)", js: { filters: 4, kernelSize: [2, 3], padding: 'same', dilation: [3, 2] } },
    valid: { torch: "3, 4, (2, 3), padding='valid'", js: { filters: 4, kernelSize: [2, 3], padding: 'valid' } },
  };
  const refusedByTorch = await pythonAsync(`import torch
torch.manual_seed(9)
x = torch.randn(2, 3, 7, 9)
last = lambda t: t.permute(0, 2, 3, 1).contiguous().numpy()
out = {'x': last(x)}
for name, args in ${JSON.stringify(Object.fromEntries(Object.entries(cases).map(([k, v]) => [k, v.torch])))}.items():
    conv = eval(f'torch.nn.Conv2d({args})')
    with torch.no_grad():
        out[name] = last(conv(x))
    out[name + '_kernel'] = conv.weight.detach().permute(2, 3, 1, 0).contiguous().numpy()
    out[name + '_bias'] = conv.bias.detach().numpy()
np.savez(${JSON.stringify(path)}, **out)
try:
    torch.nn.Conv2d(3, 4, 3, stride=2, padding='same')
    print('accepted')
except ValueError as e:
    print('refused:', e)`);
  const z = decodeNpz(readFileSync(path));
  const x = tensorOf(z.getSync('x'));
  for (const [name, { js }] of Object.entries(cases)) {
    const conv = torchConv2d(js);
    conv.apply(tfl.input({ shape: [7, 9, 3] }));
    conv.setWeights([tensorOf(z.getSync(`${name}_kernel`)), tensorOf(z.getSync(`${name}_bias`))]);
    const y = conv.apply(x);
    assert.equal(y.shape, z.getSync(name).shape, name);
    const worst = largest(y, z.getSync(name));
    assert.ok(worst <= 1e-5, `${name}: differs from PyTorch by ${worst}`);
  }
  assert.equal(torchConv2d({ filters: 4, kernelSize: 3, padding: 'valid' }).padding, [0, 0]);
  assert.match(refusedByTorch, /^refused: .*strided/);
  assert.throws(() => torchConv2d({ filters: 4, kernelSize: 3, strides: 2, padding: 'same' }), /padding 'same' is not supported for strided convolutions/);
  // Saved and loaded, a 'same' layer keeps its padding.
  const restored = new TorchConv2D(torchConv2d(cases.same_even.js).getConfig());
  assert.is(restored.padding, 'same');
  assert.equal(restored.computeOutputShape([null, 7, 9, 3]), [null, 7, 9, 4]);
});

test("PyTorch's GRU (reset gate after the recurrent product) ports as TorchGRU: the last step and every step agree with PyTorch; tfjs's GRU is refused, naming TorchGRU", async () => {
  const weights = join(dir, 'gru.npz');
  await exportNet(weights, {
    seed: 3,
    input: 'torch.randn(4, 9, 5)',
    body: `    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRU(5, 7, batch_first=True)
        self.fc = torch.nn.Linear(7, 3)
    def forward(self, x):
        out, _ = self.gru(x)
        return self.fc(out[:, -1])`,
    more: `with torch.no_grad():
    seq, _ = net.gru(x)
arrays['sequence'] = seq.numpy()`,
  });
  const build = (recurrent) => tfl.sequential({ layers: [recurrent, tfl.layers.dense({ units: 3, name: 'fc' })] });
  const model = build(torchGRU({ inputShape: [9, 5], units: 7, name: 'gru' }));
  await assignWeights(model, weights, { layout: 'pytorch', ignoreUnused: true }); // the check members pass
  const z = decodeNpz(readFileSync(weights));
  const x = tensorOf(z.getSync('check/input'));
  const worst = largest(model.predict(x), z.getSync('check/output'));
  assert.ok(worst <= 1e-5, `differs from PyTorch by ${worst}`);
  // Every step: a TorchGRU that returns sequences, with the same weights.
  const everyStep = torchGRU({ units: 7, returnSequences: true });
  everyStep.apply(tfl.input({ shape: [9, 5] }));
  everyStep.setWeights(model.getLayer('gru').getWeights());
  const steps = everyStep.apply(x);
  assert.equal(steps.shape, [4, 9, 7]);
  const worstStep = largest(steps, z.getSync('sequence'));
  assert.ok(worstStep <= 1e-5, `a step differs from PyTorch by ${worstStep}`);
  // tfjs's GRU has only reset_after=false: refused before any weight is set, naming TorchGRU.
  const e = await refusal(
    assignWeights(build(tfl.layers.gru({ inputShape: [9, 5], units: 7, name: 'gru', recurrentInitializer: 'zeros' })), weights, {
      layout: 'pytorch',
      ignoreUnused: true,
    }),
  );
  assert.match(e?.message ?? '', /TorchGRU from '@npyts\/tfjs\/torch-layers'/);
  // Saved and loaded through npzHandler, the layer is a TorchGRU again and predicts the same.
  const path = join(dir, 'gru-model.npz');
  await model.save(npzHandler(path));
  const loaded = await tfl.loadLayersModel(npzHandler(path));
  assert.ok(loaded.getLayer('gru') instanceof TorchGRU);
  assert.equal(Array.from(loaded.predict(x).dataSync()), Array.from(model.predict(x).dataSync()));
});

test('MultiheadAttention (packed in_proj_weight, out_proj) ports with layout "pytorch": self-attention with and without a causal mask, and cross-attention, predict what PyTorch predicts', async () => {
  const weights = join(dir, 'attention.npz');
  await exportNet(weights, {
    seed: 4,
    input: 'torch.randn(3, 10, 6)',
    make: 'Net(False)',
    body: `    def __init__(self, causal):
        super().__init__()
        self.causal = causal
        self.embed = torch.nn.Linear(6, 16)
        self.attn = torch.nn.MultiheadAttention(16, 4, batch_first=True)
        self.fc = torch.nn.Linear(16, 3)
    def forward(self, x):
        h = self.embed(x)
        n = x.shape[1]
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool), 1) if self.causal else None
        a, _ = self.attn(h, h, h, attn_mask=mask)
        return self.fc(a)`,
    more: `q, kv = torch.randn(2, 5, 16), torch.randn(2, 8, 16)
with torch.no_grad():
    net.causal = True
    causal = net(x)
    cross, _ = net.attn(q, kv, kv)
np.savez(${JSON.stringify(join(dir, 'attention-truth.npz'))}, causal=causal.numpy(), q=q.numpy(), kv=kv.numpy(), cross=cross.numpy())`,
  });
  const build = (causal) =>
    tfl.sequential({
      layers: [
        tfl.layers.dense({ inputShape: [10, 6], units: 16, name: 'embed' }),
        torchMultiheadAttention({ numHeads: 4, causal, name: 'attn' }),
        tfl.layers.dense({ units: 3, name: 'fc' }),
      ],
    });
  const model = build(false);
  await assignWeights(model, weights, { layout: 'pytorch' }); // the check members pass
  const z = decodeNpz(readFileSync(weights));
  const truth = decodeNpz(readFileSync(join(dir, 'attention-truth.npz')));
  const x = tensorOf(z.getSync('check/input'));
  const worst = largest(model.predict(x), z.getSync('check/output'));
  assert.ok(worst <= 1e-5, `differs from PyTorch by ${worst}`);
  const causal = build(true);
  await assignWeights(causal, weights, { layout: 'pytorch', check: false });
  const worstCausal = largest(causal.predict(x), truth.getSync('causal'));
  assert.ok(worstCausal <= 1e-5, `the causal mask differs from PyTorch by ${worstCausal}`);
  // Cross-attention: a query of 5 positions over 8 keys and values.
  const attn = model.getLayer('attn');
  assert.ok(attn instanceof TorchMultiheadAttention);
  const cross = attn.apply([tensorOf(truth.getSync('q')), tensorOf(truth.getSync('kv'))]);
  assert.equal(cross.shape, [2, 5, 16]);
  const worstCross = largest(cross, truth.getSync('cross'));
  assert.ok(worstCross <= 1e-5, `cross-attention differs from PyTorch by ${worstCross}`);
  // Saved and loaded, it is a TorchMultiheadAttention again, with its mask.
  const path = join(dir, 'attention-model.npz');
  await causal.save(npzHandler(path));
  const loaded = await tfl.loadLayersModel(npzHandler(path));
  assert.equal(loaded.getLayer('attn').getConfig().causal, true);
  assert.equal(Array.from(loaded.predict(x).dataSync()), Array.from(causal.predict(x).dataSync()));
});

test('a two-layer PyTorch GRU ports as two TorchGRU layers named after its layers (gru_l0, gru_l1)', async () => {
  const weights = join(dir, 'gru2.npz');
  await exportNet(weights, {
    seed: 6,
    input: 'torch.randn(3, 7, 4)',
    body: `    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRU(4, 6, num_layers=2, batch_first=True)
        self.fc = torch.nn.Linear(6, 2)
    def forward(self, x):
        out, _ = self.gru(x)
        return self.fc(out[:, -1])`,
  });
  const model = tfl.sequential({
    layers: [
      torchGRU({ inputShape: [7, 4], units: 6, returnSequences: true, name: 'gru_l0' }),
      torchGRU({ units: 6, name: 'gru_l1' }),
      tfl.layers.dense({ units: 2, name: 'fc' }),
    ],
  });
  await assignWeights(model, weights, { layout: 'pytorch' }); // the check members pass
  const z = decodeNpz(readFileSync(weights));
  const worst = largest(model.predict(tensorOf(z.getSync('check/input'))), z.getSync('check/output'));
  assert.ok(worst <= 1e-5, `differs from PyTorch by ${worst}`);
});

test('a bidirectional PyTorch GRU (one and two layers) ports as tf.layers.bidirectional of TorchGRU: the last step and every step agree with PyTorch; a plain TorchGRU is refused, naming the wrapper', async () => {
  const weights = join(dir, 'bigru.npz');
  await exportNet(weights, {
    seed: 7,
    input: 'torch.randn(3, 8, 5)',
    body: `    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRU(5, 6, num_layers=2, batch_first=True, bidirectional=True)
        self.fc = torch.nn.Linear(12, 2)
    def forward(self, x):
        # Each direction's final state (Keras' Bidirectional without sequences): h_n of the last layer.
        _, h = self.gru(x)
        return self.fc(torch.cat([h[-2], h[-1]], 1))`,
    more: `with torch.no_grad():
    seq, _ = net.gru(x)
arrays['sequence'] = seq.numpy()`,
  });
  const bi = (args) =>
    tfl.layers.bidirectional({ layer: torchGRU(args), mergeMode: 'concat', name: args.name, ...(args.inputShape ? { inputShape: args.inputShape } : {}) });
  const build = (last) =>
    tfl.sequential({
      layers: [
        bi({ inputShape: [8, 5], units: 6, returnSequences: true, name: 'gru_l0' }),
        bi({ units: 6, returnSequences: !last, name: 'gru_l1' }),
        ...(last ? [tfl.layers.dense({ units: 2, name: 'fc' })] : []),
      ],
    });
  const model = build(true);
  await assignWeights(model, weights, { layout: 'pytorch', ignoreUnused: true }); // the check members pass
  const z = decodeNpz(readFileSync(weights));
  const x = tensorOf(z.getSync('check/input'));
  const worst = largest(model.predict(x), z.getSync('check/output'));
  assert.ok(worst <= 1e-5, `differs from PyTorch by ${worst}`);
  // Every step of the second layer: both directions, each at the step PyTorch puts it.
  const steps = build(false);
  await assignWeights(steps, weights, { layout: 'pytorch', ignoreUnused: true, check: false });
  const seq = steps.predict(x);
  assert.equal(seq.shape, [3, 8, 12]);
  const worstStep = largest(seq, z.getSync('sequence'));
  assert.ok(worstStep <= 1e-5, `a step differs from PyTorch by ${worstStep}`);
  // A plain TorchGRU for a bidirectional module is refused, and the message says how to wrap it.
  const plain = tfl.sequential({
    layers: [
      torchGRU({ inputShape: [8, 5], units: 6, returnSequences: true, name: 'gru_l0' }),
      torchGRU({ units: 6, name: 'gru_l1' }),
      tfl.layers.dense({ units: 2, name: 'fc' }),
    ],
  });
  const e = await refusal(assignWeights(plain, weights, { layout: 'pytorch', ignoreUnused: true }));
  assert.match(e?.message ?? '', /bidirectional; wrap the TorchGRU in tf\.layers\.bidirectional/);
  // Saved and loaded through npzHandler, the wrapper holds TorchGRUs again and predicts the same.
  const path = join(dir, 'bigru-model.npz');
  await model.save(npzHandler(path));
  const loaded = await tfl.loadLayersModel(npzHandler(path));
  assert.equal(Array.from(loaded.predict(x).dataSync()), Array.from(model.predict(x).dataSync()));
});

test("channelShuffle and channelChunk give PyTorch's channel_shuffle and chunk (channels last), also where the chunks do not divide", async () => {
  const path = join(dir, 'channels.npz');
  await pythonAsync(`import torch
torch.manual_seed(5)
x = torch.randn(2, 12, 3, 4)
b, c, h, w = x.shape
shuffled = x.view(b, 3, c // 3, h, w).transpose(1, 2).reshape(b, c, h, w)
y = torch.randn(2, 7, 3, 4)
last = lambda t: t.permute(0, 2, 3, 1).contiguous().numpy()
np.savez(${JSON.stringify(path)}, x=last(x), shuffled=last(shuffled), y=last(y), **{f'chunk{i}': last(t) for i, t in enumerate(y.chunk(3, dim=1))})`);
  const z = decodeNpz(readFileSync(path));
  const shuffled = channelShuffle({ groups: 3 }).apply(tensorOf(z.getSync('x')));
  assert.equal(Array.from(shuffled.dataSync()), Array.from(z.getSync('shuffled').data));
  for (let i = 0; i < 3; i++) {
    const chunk = channelChunk({ chunks: 3, index: i }).apply(tensorOf(z.getSync('y')));
    assert.equal(chunk.shape, z.getSync(`chunk${i}`).shape);
    assert.equal(Array.from(chunk.dataSync()), Array.from(z.getSync(`chunk${i}`).data));
  }
  assert.throws(() => channelChunk({ chunks: 2, index: 2 }), /index must be an integer from 0 to 1/);
  // PyTorch cuts 5 channels into 3 chunks of 2, 2 and 1 when asked for 4: there is no fourth to give.
  assert.throws(() => channelChunk({ chunks: 4, index: 3 }).apply(tfl.input({ shape: [3, 4, 5] })), /x\.chunk\(4\) of 5 channels gives 3 chunks/);
  assert.equal((await pythonAsync('import torch; print(len(torch.zeros(1, 5, 3, 4).chunk(4, dim=1)))')).trim(), '3');
});

test.run();
