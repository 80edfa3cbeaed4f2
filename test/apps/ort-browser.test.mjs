// @npyts/onnxruntime with onnxruntime-web (its wasm backend) in a real Chromium (Debian's, through
// playwright-core): an MLP exported by torch.onnx.export runs in the page on an input read from a .npy
// with toOrtTensor, its output read back with fromOrtTensor, and equals what onnxruntime-python gives;
// a fine-tuned state_dict fetched by URL and swapped in with withWeights (each tensor fetched handed to
// ORT as external data in memory: a page has no file to point into) runs as the model re-exported with
// it does in onnxruntime-python; given as a Blob, its tensors are handed to ORT as slices of it, unread.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { copyFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleForPage, pageOverData } from '../helpers/chromium.mjs';
import { python, scratch } from '../helpers/numpy.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = scratch('npyts-ort-browser-');
python(`
import torch, onnxruntime as rt, safetensors.torch, contextlib, os, logging
torch.manual_seed(57)
d = ${JSON.stringify(dir)}
logging.disable(logging.WARNING)
def export(m, x, f):
    with open(os.devnull, 'w') as null, contextlib.redirect_stdout(null), contextlib.redirect_stderr(null):
        torch.onnx.export(m, (x,), f, input_names=['x'], output_names=['y'], dynamo=False, do_constant_folding=False)
mlp = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3)).eval()
x = torch.randn(4, 5)
np.save(f'{d}/x.npy', x.numpy())
export(mlp, x, f'{d}/mlp.onnx')
np.save(f'{d}/want.npy', rt.InferenceSession(f'{d}/mlp.onnx').run(None, {'x': x.numpy()})[0])
with torch.no_grad():
    for p in mlp.parameters(): p.add_(torch.randn_like(p) * 0.5)
safetensors.torch.save_file({k: v.contiguous() for k, v in mlp.state_dict().items()}, f'{d}/tuned.safetensors')
torch.save(mlp.state_dict(), f'{d}/tuned.pt')
np.savez(f'{d}/tuned.npz', **{k: v.numpy() for k, v in mlp.state_dict().items()})
np.savez_compressed(f'{d}/tuned-deflated.npz', **{k: v.numpy() for k, v in mlp.state_dict().items()})
export(mlp, x, f'{d}/tuned.onnx')
np.save(f'{d}/tuned-want.npy', rt.InferenceSession(f'{d}/tuned.onnx').run(None, {'x': x.numpy()})[0])
`);
const npy = (name) => python(`print(json.dumps(np.load(${JSON.stringify(join(dir, name))}).ravel().tolist()))`);
const want = JSON.parse(npy('want.npy'));
const tunedWant = JSON.parse(npy('tuned-want.npy'));

// The page's code: onnxruntime-web's wasm build and the built packages, as one browser bundle; the
// wasm binary beside it, handed to ORT as bytes.
await bundleForPage(
  "export * as ort from 'onnxruntime-web/wasm'; export { toOrtTensor, fromOrtTensor, withWeights } from '@npyts/onnxruntime'; export { decodeNpy } from '@npyts/core';",
  join(dir, 'bundle.js'),
);
copyFileSync(join(root, 'node_modules', 'onnxruntime-web', 'dist', 'ort-wasm-simd-threaded.wasm'), join(dir, 'ort.wasm'));

const { page, problems, close } = await pageOverData(dir);

/** In the page: the model (a URL, or withWeights' bytes) run on x.npy; the output's dtype, shape and values. `asBlob`: the weights fetched into a Blob first. */
const runInPage = (weights, asBlob = false) =>
  page.evaluate(
    async ([weights, asBlob]) => {
      const { ort, toOrtTensor, fromOrtTensor, withWeights, decodeNpy } = await import('/data/bundle.js');
      ort.env.wasm.numThreads = 1;
      ort.env.wasm.wasmBinary = await (await fetch('/data/ort.wasm')).arrayBuffer();
      const bytes = async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer());
      let model = await bytes('/data/mlp.onnx');
      let external = 'none';
      let why = [];
      let externalData = [];
      if (weights) {
        const given = asBlob ? await (await fetch(weights)).blob() : new URL(weights, location.href);
        const r = await withWeights(new URL('/data/mlp.onnx', location.href), given);
        model = r.model;
        externalData = r.externalData;
        const slices = externalData.filter((f) => f.data instanceof Blob);
        external = `${r.external.length} pointed, ${Object.keys(r.copied).length} copied, ${externalData.filter((f) => f.data instanceof Uint8Array).length} in memory, ${slices.length} slices of the Blob (${slices.reduce((n, f) => n + f.data.size, 0)} bytes)`;
        why = Object.values(r.copied);
      }
      const session = await ort.InferenceSession.create(model, { externalData });
      const x = decodeNpy(await bytes('/data/x.npy'));
      const { y } = await session.run({ x: toOrtTensor(x) });
      const out = fromOrtTensor(y);
      return { dtype: out.dtype.str, shape: out.shape, values: Array.from(out.data), external, why };
    },
    [weights, asBlob],
  );

const worstOf = (got, expected) => Math.max(...expected.map((v, i) => Math.abs(got[i] - v) / (1 + Math.abs(v))));

test("an exported MLP runs in onnxruntime-web in Chromium on toOrtTensor's input, and fromOrtTensor gives onnxruntime-python's output", async () => {
  const r = await runInPage(null);
  assert.equal(problems, []);
  assert.is(r.dtype, '<f4');
  assert.equal(r.shape, [4, 3]);
  const worst = worstOf(r.values, want);
  assert.ok(worst <= 1e-5, `largest relative difference from onnxruntime-python ${worst}`);
});

test('withWeights in the page: a state_dict fetched by URL is handed to ORT as external data in memory, and runs as the re-exported model does in onnxruntime-python', async () => {
  const r = await runInPage('/data/tuned.safetensors');
  assert.is(r.external, '0 pointed, 4 copied, 4 in memory, 0 slices of the Blob (0 bytes)');
  const worst = worstOf(r.values, tunedWant);
  assert.ok(worst <= 1e-5, `largest relative difference from onnxruntime-python ${worst}`);
  assert.ok(worstOf(r.values, want) > 1e-2, 'the swapped weights change the output');
});

// 5·16 + 16 + 16·3 + 3 float32 values: the four tensors' bytes, and none of a header's.
test("withWeights in the page: a Blob's tensors are handed to ORT as slices of it, unread, and run as the re-exported model does in onnxruntime-python, bit for bit as the fetched ones", async () => {
  const fetched = await runInPage('/data/tuned.safetensors');
  for (const file of ['tuned.safetensors', 'tuned.pt', 'tuned.npz']) {
    const r = await runInPage(`/data/${file}`, true);
    assert.is(r.external, `4 pointed, 0 copied, 0 in memory, 4 slices of the Blob (${(5 * 16 + 16 + 16 * 3 + 3) * 4} bytes)`, file);
    assert.equal(r.values, fetched.values, file);
  }
  // A deflated .npz has no bytes to slice: each tensor is read, saying why.
  const deflated = await runInPage('/data/tuned-deflated.npz', true);
  assert.is(deflated.external, '0 pointed, 4 copied, 4 in memory, 0 slices of the Blob (0 bytes)');
  for (const why of deflated.why) assert.match(why, /not as ORT reads them .*deflated/);
  assert.equal(deflated.values, fetched.values);
  const worst = worstOf(fetched.values, tunedWant);
  assert.ok(worst <= 1e-5, `largest relative difference from onnxruntime-python ${worst}`);
});

test.after(close);

test.run();
