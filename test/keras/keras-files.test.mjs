// Keras files against Keras itself (KERAS_BACKEND=torch): one Python process builds a model (a
// Conv2D, a BatchNormalization with statistics that are not 0 and 1, Dense layers, one of them
// bfloat16) and saves it as .weights.h5, .keras and legacy .h5; each is opened with openWeights
// and every weight compared with what Keras's own store (or h5py, for a legacy file) reads.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KerasFile, openHdf5, urlSource } from '@npyts/core';
import { loadWeights, openWeights } from '@npyts/core/node';
import { runCli, scratch } from '../helpers/numpy.mjs';
import { startNginx } from '../helpers/nginx.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const dir = scratch('npyts-keras-');
const report = JSON.parse(
  execFileSync('python3', ['-W', 'ignore', join(here, '..', 'helpers', 'keras_fixtures.py'), dir], {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
    env: { ...process.env, KERAS_BACKEND: 'torch' },
    stdio: ['ignore', 'pipe', 'ignore'],
  }),
);
const file = (name) => join(dir, name);
const raw = (a) => new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength);
const expected = (fname, bin) => new Uint8Array(readFileSync(join(dir, 'expect', fname, bin)));
const dtypeName = (d) => (d.name === 'bfloat16' ? 'bfloat16' : d.str);

/** Every weight of `fname` by name, in Keras's order, equal to what Keras read. */
async function sameAsKeras(fname) {
  const want = report.files[fname];
  const f = await openWeights(file(fname));
  assert.is(f.format, 'keras', fname);
  assert.equal(
    [...f.names],
    want.tensors.map((t) => t.name),
    `${fname}: names in Keras's order`,
  );
  for (const t of want.tensors) {
    const info = await f.info(t.name);
    assert.equal(info.shape, t.shape, t.name);
    assert.is(dtypeName(info.dtype), t.dtype, t.name);
    const a = await f.get(t.name);
    assert.is(dtypeName(a.dtype), t.dtype, t.name);
    assert.equal(raw(a), expected(fname, t.bin), `${fname} ${t.name}`);
  }
  assert.equal(f.metadata.layers, want.layers, `${fname}: layer names by group`);
  return f;
}

test('a .weights.h5 (save_weights): every variable by its path, bfloat16 as bfloat16, layers by their vars group', async () => {
  const f = await sameAsKeras('model.weights.h5');
  assert.is(f.metadata.config, null);
  await f.close();
  // The layer of a weight is its vars group's name attribute, not the path's class-and-position name.
  const k = await KerasFile.fromHdf5(await openHdf5(readFileSync(file('model.weights.h5'))));
  assert.is(k.layerOf('layers/dense_2/vars/0'), 'head');
  assert.is(k.layerOf('layers/batch_normalization/vars/2'), 'bn');
});

test('a .keras zip: config.json and metadata.json parsed, model.weights.h5 read through the zip', async () => {
  const want = report.files['model.keras'];
  assert.ok(want.stored, 'Keras stores the weights member (read by range)');
  const f = await sameAsKeras('model.keras');
  assert.equal(f.metadata.config, want.config);
  assert.equal(f.metadata.metadata, want.metadata);
  await f.close();
  // loadWeights: no longer an empty map.
  const all = await loadWeights(file('model.keras'));
  assert.is(all.size, want.tensors.length);
});

test("a legacy .h5 (model.save('m.h5')): weights in layer_names/weight_names order, model_config parsed", async () => {
  const want = report.files['legacy.h5'];
  // Keras 3 writes bfloat16 weights into a legacy .h5 and then refuses to load it ("Invalid dtype:
  // void16"): its bug. npyts reads them as the layer's policy says (the saved model's own bfloat16).
  assert.is(want.kerasReadsBfloat16, false, 'Keras now loads its legacy bfloat16 files: compare with its load instead');
  const f = await sameAsKeras('legacy.h5');
  assert.equal(f.metadata.config, want.config);
  assert.is(f.metadata.kerasVersion, want.keras_version);
  assert.is(f.metadata.backend, want.backend);
  await f.close();
});

test('model.weights.npz in a .keras: refused as Keras itself refuses it; a zip of other things is not an empty set', async () => {
  assert.type(report.npz_loads, 'string', 'Keras cannot load its own npz weights');
  const e = await npyErrorOf(() => openWeights(file('npz.keras')));
  assert.is(e.code, 'KERAS_UNSUPPORTED');
  assert.match(e.message, 'model.weights.npz');
  const other = await npyErrorOf(() => loadWeights(file('other.zip')));
  assert.is(other.code, 'BAD_MAGIC');
  assert.match(other.message, 'no .npy member');
});

test('npyts info lists a .keras, a .weights.h5 and a legacy .h5 by their paths', async () => {
  for (const fname of ['model.keras', 'model.weights.h5', 'legacy.h5']) {
    const { code, stdout } = await runCli(['info', file(fname)]);
    assert.is(code, 0, fname);
    for (const t of report.files[fname].tensors) assert.ok(stdout.includes(`${fname}:${t.name}: `), `${fname}: ${t.name}`);
    assert.match(stdout, `keras, ${report.files[fname].tensors.length} tensors`);
  }
});

test('readAhead: the weights of a .keras read with a few reads of their neighbours, each as Keras reads it', async () => {
  const bytes = readFileSync(file('model.keras'));
  let reads = 0;
  const read = async (at, n) => {
    reads++;
    return bytes.slice(at, at + n);
  };
  const counting = () => ({ size: bytes.length, name: 'model.keras', read });
  const want = report.files['model.keras'].tensors;
  const each = async (ahead) => {
    const f = await openWeights(counting());
    reads = 0;
    if (ahead) f.readAhead(want.map((t) => t.name));
    for (const t of want) assert.equal(raw(await f.get(t.name)), expected('model.keras', t.bin), t.name);
    await f.close();
    return reads;
  };
  // Without the hint, a read per tensor; with it, one per run of neighbours (this file's weights are one run).
  assert.ok((await each(false)) >= want.length);
  assert.ok((await each(true)) <= 2, `read ahead: ${reads} reads for ${want.length} tensors`);
});

test('by range from a URL: one weight of a .keras moves its bytes and the metadata, not the file', async () => {
  const server = await startNginx(dir);
  try {
    const source = await urlSource(`${server.base}/model.keras`);
    const f = await openWeights(source);
    const opened = source.stats.bytes;
    const t = report.files['model.keras'].tensors.find((x) => x.name === 'layers/dense/vars/0');
    const a = await f.get(t.name);
    assert.equal(raw(a), expected('model.keras', t.bin));
    const size = readFileSync(file('model.keras')).length;
    assert.ok(source.stats.bytes - opened <= a.data.byteLength, `the weight moved ${source.stats.bytes - opened} bytes for ${a.data.byteLength}`);
    // Opening reads the zip's directory and local headers (the archive reads each in 64 KiB), the JSON
    // members and the HDF5 metadata (in 4 KiB blocks), not the 1.4 MB of weights.
    assert.ok(opened <= 4 * (64 << 10) + (64 << 10), `opening moved ${opened} of ${size}`);
    assert.ok(size > 1 << 20);
    await f.close();
  } finally {
    await server.stop();
  }
});

test.run();
