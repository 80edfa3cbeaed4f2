// Weight files past 4 GiB in a real Chromium, one of every format npyts reads by range: a stored .npz,
// a torch.save zip, a GGUF, a sharded .safetensors set and a .keras, each chosen through
// `<input type=file>` and fetched by HTTP ranges, each giving the tensor that lies past 4 GiB, equal to what the format's
// reference reader gives (big-files.py, sparse files: only the headers and the tensors read are
// real bytes), with the renderer's peak memory far below the files' size.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleForPage, pageOverData, rendererPeaks } from '../helpers/chromium.mjs';
import { scratch } from '../helpers/numpy.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const dir = scratch('npyts-big-browser-');
const want = JSON.parse(
  execFileSync('python3', ['-W', 'ignore', join(here, 'big-files.py'), dir], { encoding: 'utf8', env: { ...process.env, KERAS_BACKEND: 'torch' } }),
);
await bundleForPage("export { openWeights } from '@npyts/core'; export { withWeights } from '@npyts/onnxruntime';", join(dir, 'bundle.js'));
const marker = `--npyts-big-browser=${process.pid}`;
const { page, base, problems, close } = await pageOverData(dir, [marker]);
await page.setContent('<input id="files" type="file" multiple>');

const files = ['big.npz', 'big.pt', 'big.gguf', 'big.safetensors.index.json', 'big-00001-of-00002.safetensors', 'big-00002-of-00002.safetensors', 'big.keras'];

test('every format past 4 GiB, chosen through <input type=file>, gives its tensor past 4 GiB exactly, the renderer staying small', async () => {
  await page.setInputFiles(
    '#files',
    files.map((f) => join(dir, f)),
  );
  const got = await page.evaluate(async (base) => {
    const { openWeights } = await import(`${base}/data/bundle.js`);
    const chosen = [...document.getElementById('files').files];
    const file = (name) => chosen.find((f) => f.name === name);
    const out = {};
    for (const [name, tensor, options] of [
      ['big.npz', 'tail', {}],
      ['big.pt', 'tail', {}],
      ['big.gguf', 'tail', {}],
      ['big.safetensors.index.json', 'tail', { resolve: file }],
      ['big.keras', 'layers/dense/vars/1', {}],
    ]) {
      const w = await openWeights(file(name), options);
      const info = await w.info(tensor);
      const t = await w.get(tensor);
      out[name] = { names: [...w.names], size: file(name).size, shape: info.shape, values: [...t.data.slice(0, 8)] };
      await w.close();
    }
    return out;
  }, base);
  for (const name of ['big.npz', 'big.pt', 'big.gguf', 'big.safetensors.index.json']) {
    assert.equal(got[name].values, want.tail, name);
    assert.equal(got[name].shape, [4], name);
  }
  assert.equal(got['big.safetensors.index.json'].names, ['first', 'big', 'tail']);
  assert.equal(got['big.keras'].shape, [want.units]);
  assert.equal(got['big.keras'].values, want.bias);
  for (const name of ['big.npz', 'big.pt', 'big.gguf', 'big.keras']) assert.ok(got[name].size > 2 ** 32, `${name} is past 4 GiB`);
  // Each file is over 4 GiB; what the page read is a few KiB of headers and the tensors asked for.
  const peak = Math.max(...rendererPeaks(marker));
  assert.ok(peak < 512 * 2 ** 20, `the renderer's peak is ${(peak / 2 ** 20).toFixed(0)} MiB`);
  assert.equal(problems, []);
});

test('the same files read by HTTP ranges give the same tensors past 4 GiB', async () => {
  const got = await page.evaluate(async (base) => {
    const { openWeights } = await import(`${base}/data/bundle.js`);
    const out = {};
    for (const [name, tensor] of [
      ['big.npz', 'tail'],
      ['big.pt', 'tail'],
      ['big.gguf', 'tail'],
      ['big.safetensors.index.json', 'tail'],
      ['big.keras', 'layers/dense/vars/1'],
    ]) {
      const w = await openWeights(`${base}/data/${name}`);
      out[name] = [...(await w.get(tensor)).data.slice(0, 8)];
      await w.close();
    }
    return out;
  }, base);
  for (const name of ['big.npz', 'big.pt', 'big.gguf', 'big.safetensors.index.json']) assert.equal(got[name], want.tail, name);
  assert.equal(got['big.keras'], want.bias);
  assert.equal(problems, []);
});

test("withWeights in a page refuses weights past onnxruntime-web's 4 GiB (wasm32) before reading them", async () => {
  const got = await page.evaluate(async (base) => {
    const { withWeights } = await import(`${base}/data/bundle.js`);
    const model = new Uint8Array(await (await fetch(`${base}/data/big.onnx`)).arrayBuffer());
    const file = [...document.getElementById('files').files].find((f) => f.name === 'big.npz');
    let read = 0;
    // The File, counting the bytes of every slice taken of it.
    const slice = (...a) => {
      read += (a[1] ?? file.size) - (a[0] ?? 0);
      return file.slice(...a);
    };
    const watched = new Proxy(file, { get: (f, k) => (k === 'slice' ? slice : typeof f[k] === 'function' ? f[k].bind(f) : f[k]) });
    try {
      await withWeights(model, watched);
      return { error: null };
    } catch (e) {
      return { code: e.code, message: e.message, read };
    }
  }, base);
  assert.is(got.code, 'TOO_LARGE', got.message);
  assert.match(got.message, /4 GiB/);
  assert.ok(got.read < 2 ** 20, `read ${got.read} bytes before refusing`);
});

test.after(close);
test.run();
