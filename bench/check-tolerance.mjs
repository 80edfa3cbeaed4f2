// `node bench/check-tolerance.mjs [SEEDS]`: how far a correct float32 port drifts from PyTorch, to
// calibrate checkModel's default tolerance. Deep convolutional nets (VGG-like stacks of 3×3
// convolutions with BatchNorm and ReLU, 8 to 32 layers, BatchNorm statistics moved) are built in
// PyTorch with fixed seeds, ported with layout 'pytorch', and each output's largest difference is
// printed relative to the output's scale (its largest |value|), the measure checkModel judges by;
// beside them, the same nets ported with a mistake a state_dict cannot show (tfjs's BatchNorm
// epsilon, 1e-3, where PyTorch's is 1e-5), to see how far above rounding such a mistake lands.
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import '@tensorflow/tfjs-backend-cpu';
import * as tf from '@tensorflow/tfjs-core';
import * as tfl from '@tensorflow/tfjs-layers';
import { assignWeights, checkModel } from '@npyts/tfjs';

await tf.setBackend('cpu');
const seeds = Number(process.argv[2] ?? 3);
const dir = mkdtempSync(join(tmpdir(), 'npyts-tolerance-'));
const rows = [];
for (const [depth, mistake] of [
  [8, null],
  [16, null],
  [32, null],
  [8, 'epsilon'],
  [32, 'epsilon'],
]) {
  for (let seed = 0; seed < seeds; seed++) {
    const path = join(dir, `d${depth}-s${seed}.npz`);
    execFileSync('python3', [
      '-c',
      `import torch, numpy as np
torch.manual_seed(${seed})
layers, c = [], 3
for i in range(${depth}):
    out = min(64, 16 * (1 + i // 4))
    layers += [torch.nn.Conv2d(c, out, 3, padding=1), torch.nn.BatchNorm2d(out), torch.nn.ReLU()]
    if i % 4 == 3 and i < 16: layers.append(torch.nn.MaxPool2d(2))
    c = out
layers += [torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(c, 10)]
m = torch.nn.Sequential(*layers)
m.train()
with torch.no_grad():
    for _ in range(3): m(torch.randn(8, 3, 32, 32) * 2 + 0.5)
m.eval()
x = torch.randn(4, 3, 32, 32)
np.savez(${JSON.stringify(path)}, **{k: v.numpy() for k, v in m.state_dict().items()}, **{'check/input': x.numpy(), 'check/output': m(x).detach().numpy()})`,
    ]);
    const layers = [];
    for (let i = 0; i < depth; i++) {
      const out = Math.min(64, 16 * (1 + Math.floor(i / 4)));
      layers.push(tfl.layers.conv2d({ filters: out, kernelSize: 3, padding: 'same', ...(i === 0 ? { inputShape: [32, 32, 3] } : {}) }));
      layers.push(tfl.layers.batchNormalization({ epsilon: mistake === 'epsilon' ? 1e-3 : 1e-5 }), tfl.layers.reLU());
      if (i % 4 === 3 && i < 16) layers.push(tfl.layers.maxPooling2d({ poolSize: 2 }));
    }
    layers.push(tfl.layers.globalAveragePooling2d({}), tfl.layers.dense({ units: 10 }));
    const model = tfl.sequential({ layers });
    await assignWeights(model, path, { layout: 'pytorch', check: false, ...(mistake === 'epsilon' ? { epsilon: 1e-3 } : {}) });
    const r = await checkModel(model, path, { rtol: 1 });
    const scale = JSON.parse(
      execFileSync('python3', ['-c', `import numpy as np; print(float(np.abs(np.load(${JSON.stringify(path)})['check/output']).max()))`], { encoding: 'utf8' }),
    );
    rows.push({ depth, mistake, seed, maxAbsDiff: r.maxAbsDiff, scale, relativeToScale: r.maxAbsDiff / scale });
    model.dispose();
  }
}
console.log(JSON.stringify(rows));
