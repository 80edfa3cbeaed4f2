// PyTorch files meet @npyts/tfjs (issue 27): a torch.save file is refused with the numpy export that
// works, never read as an empty archive. Real PyTorch (Debian's python3-torch, /usr/bin/python3).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import * as tfl from '@tensorflow/tfjs-layers';
import { assignWeights, loadTensors, npzHandler } from '@npyts/tfjs';
import { NpyError, encodeNpz } from '@npyts/core';
import { scratch } from '../helpers/numpy.mjs';
import { useCpuBackend } from '../helpers/tfjs.mjs';

await useCpuBackend();
const dir = scratch('npyts-pytorch-');
const TORCH_PYTHON = '/usr/bin/python3';
const hasTorch = spawnSync(TORCH_PYTHON, ['-c', 'import torch'], { stdio: 'ignore' }).status === 0;
if (!hasTorch) console.log('PyTorch is missing (apt-get install python3-torch): the PyTorch tests are skipped');
const torch = (code) => {
  const r = spawnSync(TORCH_PYTHON, ['-c', `import torch, numpy as np, json\ntorch.manual_seed(0)\n${code}`], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return r.stdout;
};

async function refusal(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.unreachable('did not refuse');
}

(hasTorch ? test : test.skip)(
  "a torch.save file is refused by loadTensors, assignWeights and npzHandler, naming the numpy export; numpy's export loads",
  async () => {
    const pt = join(dir, 'model.pt');
    const npz = join(dir, 'model.npz');
    torch(`m = torch.nn.Linear(3, 2)
torch.save(m.state_dict(), ${JSON.stringify(pt)})
np.savez(${JSON.stringify(npz)}, **{k: v.detach().cpu().numpy() for k, v in m.state_dict().items()})`);
    const model = () => tfl.sequential({ layers: [tfl.layers.dense({ units: 2, inputShape: [3], name: 'l' })] });
    for (const attempt of [
      () => loadTensors(pt),
      () => assignWeights(model(), pt),
      () => tfl.loadLayersModel(npzHandler(pt, { modelTopology: model().toJSON(null, false) })),
    ]) {
      const e = await refusal(attempt());
      assert.instance(e, NpyError, String(e));
      assert.match(e.message, /torch\.save file/);
      assert.match(e.message, /np\.savez\('weights\.npz'/);
    }
    const tensors = await loadTensors(npz);
    assert.equal(Object.keys(tensors).sort(), ['bias', 'weight']);
  },
);

test('an archive without a .npy member is refused by loadTensors, never read as no tensors', async () => {
  const e = await refusal(loadTensors(encodeNpz({}, { files: { 'notes.txt': new TextEncoder().encode('hi') } })));
  assert.instance(e, NpyError);
  assert.match(e.message, /no \.npy member/);
  assert.match(e.message, /notes\.txt/);
});

test.run();
