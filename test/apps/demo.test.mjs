// The `npm start` demo: its archive is consistent with numpy, and tfjs reproduces numpy exactly.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { python } from '../helpers/numpy.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const archive = join(root, 'demo', 'digits-mlp.npz');

test('numpy recomputes the predictions stored in the demo archive', () => {
  const out = python(`
z = np.load(${JSON.stringify(archive)})
x = z['x_test'].astype(np.float32) / np.float32(16)
h = np.maximum(x @ z['dense/kernel'] + z['dense/bias'], 0)
logits = h @ z['dense_1/kernel'].astype(np.float32) + z['dense_1/bias'].astype(np.float32)
pred = logits.argmax(1)
print(json.dumps({'same': bool((pred == z['numpy_predictions']).all()), 'accuracy': float((pred == z['y_test']).mean()), 'stored': float(z['numpy_accuracy']), 'n': int(len(pred))}))
`);
  const r = JSON.parse(out);
  assert.ok(r.same);
  assert.is(r.accuracy, r.stored);
  assert.ok(r.accuracy > 0.9);
});

test('npm start: tfjs agrees with numpy on every test digit', () => {
  const out = execFileSync(process.execPath, [join(root, 'demo', 'run.mjs')], { encoding: 'utf8', cwd: root });
  assert.match(out, /predictions agreeing with numpy's: 360\/360/);
  assert.match(out, /OK: tfjs reproduces numpy exactly, and PyTorch's CNN on every digit/);
  assert.match(out, /predictions agreeing with PyTorch's: 360\/360/);
  const acc = Number(/accuracy (\d\.\d+)/.exec(out)[1]);
  const stored = Number(python(`print(float(np.load(${JSON.stringify(archive)})['numpy_accuracy']))`));
  assert.is(acc.toFixed(4), stored.toFixed(4));
});

test.run();
