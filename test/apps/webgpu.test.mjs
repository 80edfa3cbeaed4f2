// tfjs's WebGPU backend in Debian's Chromium (headless, a SwiftShader adapter: a GPU in software): the
// numpy-built model (test/helpers/models.py) loaded through npzHandler onto the GPU predicts what
// the CPU backend predicts from the same file, and what numpy computes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleForPage, pageOverData } from '../helpers/chromium.mjs';
import { scratch } from '../helpers/numpy.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = scratch('npyts-webgpu-');
const expected = JSON.parse(execFileSync('python3', ['-W', 'ignore', join(root, 'test', 'helpers', 'models.py'), 'build', dir], { encoding: 'utf8' }));
await bundleForPage(
  "import '@tensorflow/tfjs-backend-cpu'; import '@tensorflow/tfjs-backend-webgpu'; export * as tf from '@tensorflow/tfjs-core'; export * as tfl from '@tensorflow/tfjs-layers'; export { npzHandler } from '@npyts/tfjs';",
  join(dir, 'bundle.js'),
);
const { page, problems, close } = await pageOverData(dir, [], { webgpu: true });

test('the model loaded onto the WebGPU backend predicts what the CPU backend predicts from the same file', async () => {
  const r = await page.evaluate(async (tokens) => {
    const { tf, tfl, npzHandler } = await import('/data/bundle.js');
    const out = {};
    for (const backend of ['cpu', 'webgpu']) {
      if (!(await tf.setBackend(backend))) return { missing: backend };
      const model = await tfl.loadLayersModel(npzHandler('keras.npz'));
      const onBackend = model.getWeights().every((w) => tf.engine().state.tensorInfo.get(w.dataId)?.backend === tf.backend());
      const y = model.predict(tf.tensor2d(tokens, undefined, 'float32'));
      out[backend] = { values: Array.from(await y.data()), onBackend, name: tf.getBackend() };
      model.dispose();
      y.dispose();
    }
    return out;
  }, expected.tokens);
  assert.is(r.missing, undefined, `no ${r.missing} backend in the page`);
  assert.equal([r.cpu.name, r.webgpu.name], ['cpu', 'webgpu']);
  assert.ok(r.webgpu.onBackend, 'the weights are held by the WebGPU backend');
  const want = expected.predictions.flat();
  // float32 on a GPU sums in another order than the CPU: equal within float32 rounding of the sums.
  const worst = (values) => Math.max(...values.map((v, i) => Math.abs(v - want[i]) / Math.max(1, Math.abs(want[i]))));
  assert.ok(worst(r.cpu.values) < 1e-5, `the CPU backend differs from numpy by ${worst(r.cpu.values)}`);
  assert.ok(worst(r.webgpu.values) < 1e-5, `the WebGPU backend differs from numpy by ${worst(r.webgpu.values)}`);
  assert.equal(problems, []);
});

test.after(close);
test.run();
