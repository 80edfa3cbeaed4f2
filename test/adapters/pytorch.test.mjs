// PyTorch files meet @npyts/tfjs (issue 41): the files PyTorch users hold (torch.save's .pt written by
// Debian's PyTorch 1.13, and .safetensors written from it by PyTorch 2.x's safetensors) load with
// layout 'pytorch' into their tfjs twins, which then predict PyTorch's output (the check members come
// from the numpy export, given as { check }); loadTensors reads them as tensors; npzHandler, which
// reads model archives, refuses a torch.save file naming assignWeights.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tfl from '@tensorflow/tfjs-layers';
import { assignWeights, checkModel, loadTensors, npzHandler } from '@npyts/tfjs';
import { NpyError, decodeNpz, encodeNpz } from '@npyts/core';
import { scratch } from '../helpers/numpy.mjs';
import { hasPythonModules } from '../helpers/python-session.mjs';
import { useCpuBackend } from '../helpers/tfjs.mjs';
import { twins } from '../helpers/torch-twins.mjs';

await useCpuBackend();
const dir = scratch('npyts-pytorch-');
const script = join(dirname(fileURLToPath(import.meta.url)), '..', 'helpers', 'torch_models.py');
const hasTorch = hasPythonModules('/usr/bin/python3', 'torch');
if (!hasTorch) console.log('PyTorch is missing (apt-get install python3-torch): the PyTorch tests are skipped');
if (hasTorch) {
  execFileSync('/usr/bin/python3', [script, 'build', dir], { encoding: 'utf8' });
  // The same state_dicts as .safetensors, written by safetensors from what torch 2.x loads.
  execFileSync('python3', [
    '-c',
    `import torch, sys, glob\nfrom safetensors.torch import save_file\nfor p in glob.glob(sys.argv[1] + '/*.pt'):\n    save_file({k: v.contiguous() for k, v in torch.load(p, weights_only=True).items()}, p[:-3] + '.safetensors')`,
    dir,
  ]);
}
const maybe = hasTorch ? test : test.skip;
const file = (name, ext) => join(dir, `${name}.${ext}`);

async function refusal(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.unreachable('did not refuse');
}

const weightsOf = (model) => model.weights.map((w) => Array.from(w.read().dataSync()));

for (const [name, ext, build] of [
  ['cnn', 'pt', () => twins.cnn()],
  ['lstm', 'pt', () => twins.lstm()],
  ['attention', 'pt', () => twins.attention()],
  // A .safetensors file keeps no module order: its layers are paired by name.
  ['cnn', 'safetensors', () => twins.cnn({ named: true })],
  ['attention', 'safetensors', () => twins.attention()],
]) {
  maybe(`${name}: the ${ext} file as it is loads with layout 'pytorch' and predicts PyTorch's output (checked with the .npz's check members)`, async () => {
    const model = build();
    await assignWeights(model, file(name, ext), { layout: 'pytorch', check: file(name, 'npz') }); // runs the check itself
    const r = await checkModel(model, file(name, 'npz'));
    assert.ok(r.compared > 0);
    // The very weights numpy's export gives.
    const twin = build();
    await assignWeights(twin, file(name, 'npz'), { layout: 'pytorch' });
    assert.equal(weightsOf(model), weightsOf(twin));
  });
}

maybe('a .safetensors file with layers left to pair by order is refused, naming the layers to name after their modules', async () => {
  const model = twins.cnn();
  const before = weightsOf(model);
  const e = await refusal(assignWeights(model, file('cnn', 'safetensors'), { layout: 'pytorch' }));
  assert.is(e.code, 'WEIGHT_MISMATCH');
  assert.match(e.message, /does not keep the state_dict's order/);
  assert.match(e.message, /features_0 for features\.0/);
  assert.equal(weightsOf(model), before);
});

maybe('loadTensors reads a .pt and a .safetensors as the tensors numpy exported', async () => {
  const fromNpz = await loadTensors(file('cnn', 'npz'));
  for (const ext of ['pt', 'safetensors']) {
    const tensors = await loadTensors(file('cnn', ext));
    assert.equal(
      Object.keys(tensors).sort(),
      Object.keys(fromNpz)
        .filter((k) => !k.startsWith('check/'))
        .sort(),
      ext,
    );
    for (const [k, t] of Object.entries(tensors)) assert.equal(Array.from(t.dataSync()), Array.from(fromNpz[k].dataSync()), `${ext}: ${k}`);
  }
});

maybe('a check file without check members is refused before any weight is assigned', async () => {
  const model = twins.cnn();
  const before = weightsOf(model);
  const e = await refusal(assignWeights(model, file('cnn', 'pt'), { layout: 'pytorch', check: file('cnn', 'safetensors') }));
  assert.is(e.code, 'NPZ_KEY');
  assert.equal(weightsOf(model), before);
});

maybe('npzHandler (model archives) refuses a torch.save file, naming assignWeights', async () => {
  const model = () => tfl.sequential({ layers: [tfl.layers.dense({ units: 2, inputShape: [3], name: 'l' })] });
  const e = await refusal(tfl.loadLayersModel(npzHandler(file('cnn', 'pt'), { modelTopology: model().toJSON(null, false) })));
  assert.instance(e, NpyError, String(e));
  assert.match(e.message, /torch\.save file/);
  assert.match(e.message, /assignWeights/);
});

test('an archive without a .npy member is refused by loadTensors, never read as no tensors', async () => {
  const bytes = encodeNpz({}, { files: { 'notes.txt': new TextEncoder().encode('hi') } });
  // By bytes, openWeights refuses the zip itself (nor a torch.save file nor a .keras model either).
  const e = await refusal(loadTensors(bytes));
  assert.instance(e, NpyError);
  assert.is(e.code, 'BAD_MAGIC');
  assert.match(e.message, /holds no \.npy member \(notes\.txt\)/);
  // An archive already opened is the adapter's to refuse.
  const opened = await refusal(loadTensors(decodeNpz(bytes)));
  assert.instance(opened, NpyError);
  assert.match(opened.message, /holds no arrays/);
});

test.run();
