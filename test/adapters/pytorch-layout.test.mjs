// layout: 'pytorch' (issue 27): real PyTorch models (test/helpers/torch_models.py, Debian's python3-torch)
// exported as the README says, loaded into their tfjs twins without a names table, predict what PyTorch
// predicts; the mistakes that used to pass silently are refused or caught by the check; saves load back
// into PyTorch with load_state_dict(strict=True).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tfl from '@tensorflow/tfjs-layers';
import { assignWeights, checkModel, npzHandler, planWeights, saveWeights } from '@npyts/tfjs';
import { NpyError, decodeNpz, encodeNpz, transpose, toOrder } from '@npyts/core';
import { scratch } from '../helpers/numpy.mjs';
import { hasPythonModules } from '../helpers/python-session.mjs';
import { useCpuBackend } from '../helpers/tfjs.mjs';
import { twins } from '../helpers/torch-twins.mjs';

await useCpuBackend();
const dir = scratch('npyts-pytorch-layout-');
const TORCH_PYTHON = '/usr/bin/python3';
const script = join(dirname(fileURLToPath(import.meta.url)), '..', 'helpers', 'torch_models.py');
const hasTorch = hasPythonModules(TORCH_PYTHON, 'torch');
if (!hasTorch) console.log('PyTorch is missing (apt-get install python3-torch): the PyTorch layout tests are skipped');
const torch = (...args) => {
  const r = spawnSync(TORCH_PYTHON, [script, ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout);
};
const built = hasTorch ? torch('build', dir) : {};
const npz = (name) => join(dir, `${name}.npz`);
const maybe = hasTorch ? test : test.skip;

async function refusal(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.unreachable('did not refuse');
}

/** The model's weights as plain arrays, to see whether a refused load changed them. */
const snapshot = (model) => model.weights.map((w) => Array.from(w.read().dataSync()));

for (const name of ['mlp', 'cnn', 'text', 'lstm', 'bilstm', 'attention', 'upsampler']) {
  maybe(
    `${name}: PyTorch's state_dict loads with layout 'pytorch' and no names, and predicts PyTorch's output within 1e-5 (relative to the output's scale)`,
    async () => {
      const model = twins[name]();
      await assignWeights(model, npz(name), { layout: 'pytorch' }); // runs the check members itself
      const r = await checkModel(model, npz(name));
      const scale = Math.max(
        ...decodeNpz(readFileSync(npz(name)))
          .getSync('check/output')
          .data.map(Math.abs),
      );
      assert.ok(r.maxAbsDiff <= 1e-5 * scale, `${name}: largest difference ${r.maxAbsDiff} on a scale of ${scale}`);
      assert.ok(r.compared > 0);
    },
  );

  maybe(`${name}: saveWeights(…, { layout: 'pytorch', like }) loads into PyTorch with load_state_dict(strict=True) and predicts the same`, async () => {
    const model = twins[name]();
    await assignWeights(model, npz(name), { layout: 'pytorch' });
    const out = join(dir, `${name}-saved.npz`);
    await saveWeights(model, out, { layout: 'pytorch', like: npz(name) });
    const r = torch('load', name, out);
    assert.equal([r.missing, r.unexpected], [[], []]);
    // Exact but for an LSTM's bias, written as bias_ih = the sum and bias_hh = 0 (float32 rounding).
    assert.ok(r.maxAbsDiff <= 1e-6 * r.scale, `${name}: PyTorch with the saved weights is off by ${r.maxAbsDiff} (scale ${r.scale})`);
    const keys = decodeNpz(readFileSync(out)).names;
    assert.equal(keys, built[name].keys, "the state_dict's keys, in its order");
  });
}

maybe("npzHandler with layout 'pytorch' and the model as topology: tf.loadLayersModel gives a model that passes checkModel", async () => {
  const model = await tfl.loadLayersModel(npzHandler(npz('cnn'), { layout: 'pytorch', modelTopology: twins.cnn() }));
  const r = await checkModel(model, npz('cnn'));
  assert.ok(r.maxAbsDiff < 1e-4);
});

maybe(
  'planWeights shows the whole mapping: the Dense after the Flatten is reordered from (C, H, W), BatchNorm by its four names, LSTM biases summed',
  async () => {
    const cnn = await planWeights(twins.cnn(), npz('cnn'), { layout: 'pytorch' });
    const fc = cnn.find((p) => p.keys[0] === 'fc.weight');
    assert.ok(fc, 'fc.weight is planned');
    assert.match(fc.description, /viewed as \[5,4,3,2\], axes permuted \(2,3,1,0\), read as \[24,5\]/);
    const bn = cnn.filter((p) => p.keys[0].startsWith('features.1.')).map((p) => [p.weight.split('/').pop(), p.keys[0]]);
    assert.equal(bn, [
      ['gamma', 'features.1.weight'],
      ['beta', 'features.1.bias'],
      ['moving_mean', 'features.1.running_mean'],
      ['moving_variance', 'features.1.running_var'],
    ]);
    const lstm = await planWeights(twins.lstm(), npz('lstm'), { layout: 'pytorch' });
    const bias = lstm.filter((p) => p.transform.kind === 'sum').map((p) => p.keys);
    assert.equal(bias, [
      ['lstm.bias_ih_l0', 'lstm.bias_hh_l0'],
      ['lstm.bias_ih_l1', 'lstm.bias_hh_l1'],
    ]);
  },
);

maybe(
  "tfjs's default epsilon (1e-3) on BatchNormalization: refused where nothing can prove it, caught by the check members where they run, naming the layer",
  async () => {
    const model = twins.cnn({ epsilon: 1e-3 });
    const before = snapshot(model);
    // Without check members (or with the check turned off) the default's word is all there is.
    // One at a time: a second promise started beside the first would reject with no handler yet.
    for (const attempt of [
      () => assignWeights(model, npz('cnn'), { layout: 'pytorch', check: false }),
      () => planWeights(model, npz('cnn'), { layout: 'pytorch' }),
    ]) {
      const e = await refusal(attempt());
      assert.instance(e, NpyError);
      assert.is(e.code, 'LAYER_CONFIG');
      assert.match(e.message, /batch_normalization/);
      assert.match(e.message, /epsilon: 1e-5/);
    }
    assert.equal(snapshot(model), before, 'nothing assigned');
    // With them, the evidence decides: the check fails and names the layer whose epsilon differs.
    const e = await refusal(assignWeights(model, npz('cnn'), { layout: 'pytorch' }));
    assert.is(e.code, 'CHECK_FAILED', String(e));
    assert.match(e.message, /the first PyTorch module whose output differs is 'features\.1', computed by tfjs layer 'batch_normalization/);
    assert.match(e.message, /where the port differs from PyTorch's defaults: .*batch_normalization.*epsilon is 0\.001/);
    assert.equal(snapshot(model), before, 'a failed check puts the weights back');
    // Saying the PyTorch module had eps 1e-3 is believed, and the check then catches the difference.
    const c = await refusal(assignWeights(model, npz('cnn'), { layout: 'pytorch', epsilon: 1e-3 }));
    assert.is(c.code, 'CHECK_FAILED', String(c));
    assert.equal(snapshot(model), before, 'a failed check puts the weights back');
  },
);

maybe("a port with an epsilon that is not PyTorch's default (as MobileNetV3 has) is accepted when its check members prove it right", async () => {
  const path = join(dir, 'eps.npz');
  spawnSync(
    'python3',
    [
      '-c',
      `import torch, numpy as np
torch.manual_seed(3)
m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4, eps=1e-3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 2))
m.train(); m(torch.randn(8, 3, 6, 6) * 3); m.eval()
x = torch.randn(2, 3, 6, 6)
np.savez(${JSON.stringify(path)}, **{k: v.numpy() for k, v in m.state_dict().items()}, **{'check/input': x.numpy(), 'check/output': m(x).detach().numpy()})`,
    ],
    { stdio: 'inherit' },
  );
  const build = () =>
    tfl.sequential({
      layers: [
        tfl.layers.conv2d({ filters: 4, kernelSize: 3, padding: 'same', inputShape: [6, 6, 3] }),
        tfl.layers.batchNormalization({ epsilon: 1e-3 }),
        tfl.layers.reLU(),
        tfl.layers.flatten(),
        tfl.layers.dense({ units: 2 }),
      ],
    });
  await assignWeights(build(), path, { layout: 'pytorch' }); // the check runs and passes
  assert.is((await refusal(assignWeights(build(), path, { layout: 'pytorch', check: false }))).code, 'LAYER_CONFIG');
});

maybe('the layer-by-layer check names the first module whose output differs (an ELU where PyTorch has a ReLU)', async () => {
  const wrong = tfl.sequential({
    layers: [
      tfl.layers.conv2d({ filters: 8, kernelSize: 3, padding: 'same', inputShape: [12, 8, 3] }),
      tfl.layers.batchNormalization({ epsilon: 1e-5 }),
      tfl.layers.elu(),
      tfl.layers.maxPooling2d({ poolSize: 2 }),
      tfl.layers.conv2d({ filters: 4, kernelSize: 3, padding: 'same' }),
      tfl.layers.batchNormalization({ epsilon: 1e-5 }),
      tfl.layers.reLU(),
      tfl.layers.maxPooling2d({ poolSize: 2 }),
      tfl.layers.flatten(),
      tfl.layers.dense({ units: 5 }),
    ],
  });
  const e = await refusal(assignWeights(wrong, npz('cnn'), { layout: 'pytorch' }));
  assert.is(e.code, 'CHECK_FAILED');
  assert.match(
    e.message,
    /the first PyTorch module whose output differs is 'features\.4', computed by tfjs layer '[^']+' \(Conv2D\) \(the modules before it, up to 'features\.1', agree/,
  );
  // checkModel alone, on a model whose weights were assigned without the check, says the same.
  await assignWeights(wrong, npz('cnn'), { layout: 'pytorch', check: false });
  const c = await refusal(checkModel(wrong, npz('cnn')));
  assert.match(c.message, /the first PyTorch module whose output differs is 'features\.4'/);
});

maybe('a misfit of layers paired by order says so, and names the modules to name the layers after', async () => {
  // The cnn's weighted layers, but not in its modules' order (as a model with branches lists them).
  const reordered = tfl.sequential({
    layers: [
      tfl.layers.conv2d({ filters: 8, kernelSize: 3, padding: 'same', inputShape: [12, 8, 3] }),
      tfl.layers.conv2d({ filters: 4, kernelSize: 3, padding: 'same' }),
      tfl.layers.batchNormalization({ epsilon: 1e-5 }),
      tfl.layers.batchNormalization({ epsilon: 1e-5 }),
      tfl.layers.flatten(),
      tfl.layers.dense({ units: 5 }),
    ],
  });
  const e = await refusal(assignWeights(reordered, npz('cnn'), { layout: 'pytorch' }));
  assert.is(e.code, 'WEIGHT_MISMATCH');
  assert.match(e.message, /\(paired by order\)/);
  assert.match(e.message, /name the tfjs layers after their PyTorch modules \('features_0' for features\.0/);
  // The header counts the misfits it lists; the advice after them is not one.
  const count = Number(/^(\d+) weight mismatch/.exec(e.message)?.[1]);
  assert.is(count, e.message.split('\n').filter((line) => /^ {2}\S/.test(line)).length, e.message);
  assert.is(count, (e.message.match(/\(paired by order\):/g) ?? []).length, e.message);
});

maybe("a state_dict archive without layout 'pytorch' gets one hint, not every key for every weight", async () => {
  const e = await refusal(assignWeights(twins.cnn(), npz('cnn')));
  assert.is(e.code, 'WEIGHT_MISMATCH');
  assert.is(e.message.split('\n').length, 2, e.message);
  assert.match(e.message, /PyTorch state_dict .* pass \{ layout: 'pytorch' \}/);
});

maybe("an LSTM with tfjs's default hardSigmoid gates is refused", async () => {
  const e = await refusal(assignWeights(twins.lstm({ recurrentActivation: 'hardSigmoid' }), npz('lstm'), { layout: 'pytorch' }));
  assert.is(e.code, 'LAYER_CONFIG');
  assert.match(e.message, /recurrentActivation: 'sigmoid'/);
  assert.match(e.message, /hardSigmoid/);
});

maybe('a GRU is refused with the reason (reset_after), a grouped convolution too', async () => {
  const gru = tfl.sequential({ layers: [tfl.layers.gru({ units: 5, inputShape: [7, 6], recurrentInitializer: 'zeros' })] });
  const e = await refusal(planWeights(gru, npz('lstm'), { layout: 'pytorch' }));
  assert.is(e.code, 'LAYER_CONFIG');
  assert.match(e.message, /reset_after/);
});

maybe('a square weight transposed by mistake in the archive is caught by the check, and the model keeps its weights', async () => {
  const archive = decodeNpz(readFileSync(npz('attention')));
  const arrays = Object.fromEntries(archive.names.map((k) => [k, archive.getSync(k)]));
  arrays['q.weight'] = toOrder(transpose(arrays['q.weight'], [1, 0]), 'C');
  const wrong = join(dir, 'attention-wrong.npz');
  writeFileSync(wrong, encodeNpz(arrays));
  const model = twins.attention();
  const before = snapshot(model);
  const e = await refusal(assignWeights(model, wrong, { layout: 'pytorch' }));
  assert.is(e.code, 'CHECK_FAILED', String(e));
  assert.match(e.message, /differ from check\/output/);
  assert.equal(snapshot(model), before);
  // Without the check members nothing could tell; with { check: false } the caller says so.
  await assignWeights(model, wrong, { layout: 'pytorch', check: false });
});

maybe('models that do not pair are refused naming both sides: counts, kinds, shapes', async () => {
  const e = await refusal(assignWeights(twins.mlp(), npz('cnn'), { layout: 'pytorch' }));
  assert.is(e.code, 'WEIGHT_MISMATCH');
  assert.match(e.message, /2 layers with weights and the archive 5 PyTorch modules/);
  assert.match(e.message, /features\.1 \(weight, bias, running_mean/);
  const shapes = await refusal(
    assignWeights(tfl.sequential({ layers: [tfl.layers.dense({ units: 16, inputShape: [9] }), tfl.layers.dense({ units: 3 })] }), npz('mlp'), {
      layout: 'pytorch',
    }),
  );
  assert.is(shapes.code, 'WEIGHT_MISMATCH');
  assert.match(shapes.message, /'dense_Dense\d+' \(Dense\) ↔ PyTorch module '0'/);
  assert.match(shapes.message, /has shape \[9,16\], but 0\.weight \[16,8\]/);
});

maybe('a Flatten whose input layout cannot be told is refused, and { flattenLayout } settles it', async () => {
  const model = () =>
    tfl.sequential({ layers: [tfl.layers.reshape({ targetShape: [4, 3, 2], inputShape: [24] }), tfl.layers.flatten(), tfl.layers.dense({ units: 5 })] });
  const fc = decodeNpz(readFileSync(npz('cnn')));
  const source = encodeNpz({ 'fc.weight': fc.getSync('fc.weight'), 'fc.bias': fc.getSync('fc.bias') });
  const e = await refusal(planWeights(model(), source, { layout: 'pytorch' }));
  assert.match(e.message, /flattenLayout/);
  const plan = await planWeights(model(), source, { layout: 'pytorch', flattenLayout: 'channelsLast' });
  assert.match(plan[0].description, /viewed as/);
  const kept = await planWeights(model(), source, { layout: 'pytorch', flattenLayout: 'channelsFirst' });
  assert.is(kept[0].description, 'axes permuted (1,0)');
});

maybe(
  "npzHandler checks names and shapes itself when given the model, before tfjs sees anything: a state_dict without layout 'pytorch' gets the hint, other archives the list of their keys",
  async () => {
    const wrong = tfl.sequential({ layers: [tfl.layers.dense({ units: 4, inputShape: [16], name: 'l' })] });
    const e = await refusal(tfl.loadLayersModel(npzHandler(npz('mlp'), { modelTopology: wrong })));
    assert.instance(e, NpyError);
    assert.is(e.code, 'WEIGHT_MISMATCH');
    assert.match(e.message, /PyTorch state_dict \(\d+ keys such as '0\.weight'\).*pass \{ layout: 'pytorch' \}/);
    const other = encodeNpz({ a: { data: new Float32Array(4) }, b: { data: new Float32Array(2) } });
    const f = await refusal(tfl.loadLayersModel(npzHandler(other, { modelTopology: wrong })));
    assert.match(f.message, /l\/kernel: no array for it in the archive \(the archive has: a, b\)/);
  },
);

maybe("saveWeights with layout 'pytorch' and no { like } says what it needs", async () => {
  const e = await refusal(saveWeights(twins.mlp(), join(dir, 'x.npz'), { layout: 'pytorch' }));
  assert.match(e.message, /needs \{ like \}/);
});

// The PyTorch recipe of docs/tfjs.md runs as written, with its prediction check, in test/packages/guides.test.mjs.

test.run();
