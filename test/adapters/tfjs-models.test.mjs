// tfjs models through .npz: tf.loadLayersModel / tf.loadGraphModel / model.save with npzHandler, against
// models built and evaluated by numpy alone (test/helpers/models.py), with real tfjs-layers and tfjs-converter.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs-core';
import * as tfl from '@tensorflow/tfjs-layers';
import { loadGraphModel } from '@tensorflow/tfjs-converter';
import { npzHandler, saveWeights, assignWeights, loadTensors } from '@npyts/tfjs';
import { NpyError, decodeNpz } from '@npyts/core';
import { scratch } from '../helpers/numpy.mjs';
import { useCpuBackend } from '../helpers/tfjs.mjs';

await useCpuBackend();

const models = join(dirname(fileURLToPath(import.meta.url)), '..', 'helpers', 'models.py');
const py = (...args) => JSON.parse(execFileSync('python3', ['-W', 'ignore', models, ...args], { encoding: 'utf8', maxBuffer: 1 << 28 }));
const dir = scratch();
const expected = py('build', dir);
const at = (name) => join(dir, name);
const tokens = () => tf.tensor2d(expected.tokens, undefined, 'float32');

/** Largest |a − b| relative to max(1, |b|) over two nested lists / typed arrays. */
function worst(actual, wanted) {
  const a = Array.from(actual);
  const b = wanted.flat(Infinity);
  assert.is(a.length, b.length);
  return Math.max(...a.map((v, i) => Math.abs(v - b[i]) / Math.max(1, Math.abs(b[i]))));
}

async function predict(model, x) {
  const y = model.predict(x);
  const out = await y.data();
  y.dispose();
  return out;
}

test('a model built by numpy (embedding, conv2d, batchnorm, dense) loads through loadLayersModel(npzHandler) and predicts what numpy computes', async () => {
  const model = await tfl.loadLayersModel(npzHandler(at('keras.npz')));
  assert.equal(
    model.layers.map((l) => l.getClassName()),
    ['InputLayer', 'Embedding', 'Reshape', 'Conv2D', 'BatchNormalization', 'Flatten', 'Dense'],
  );
  const err = worst(await predict(model, tokens()), expected.predictions);
  assert.ok(err < 1e-5, `largest relative difference from numpy ${err}`);
});

test('model.save(npzHandler) → numpy reads every weight by name, exactly → loadLayersModel gives identical predictions', async () => {
  const model = await tfl.loadLayersModel(npzHandler(at('keras.npz')));
  const result = await model.save(npzHandler(at('saved.npz')));
  assert.is(result.modelArtifactsInfo.modelTopologyType, 'JSON');
  const original = py('weights', at('keras.npz'));
  const saved = py('weights', at('saved.npz'));
  assert.equal(Object.keys(saved).sort(), Object.keys(original).sort());
  for (const [name, w] of Object.entries(original)) assert.equal(saved[name], w, name);
  const z = decodeNpz(readFileSync(at('saved.npz')));
  const json = JSON.parse(new TextDecoder().decode(z.bytesSync('model.json')));
  assert.is(z.entry('model.json').method, 0, 'model.json is stored');
  assert.equal(
    json.weightSpecs.map((s) => s.name),
    model.weights.map((w) => w.originalName),
  );
  const again = await tfl.loadLayersModel(npzHandler(at('saved.npz')));
  assert.equal(Array.from(await predict(again, tokens())), Array.from(await predict(model, tokens())));
});

// numpy reading a model that tfjs saved, as docs/tfjs.md shows it, runs in test/packages/guides.test.mjs.

test('a model built twice in one process (tfjs names the second dense/kernel_1) saves and loads by originalName', async () => {
  const first = await tfl.loadLayersModel(npzHandler(at('keras.npz')));
  const second = await tfl.loadLayersModel(npzHandler(at('keras.npz')));
  assert.ok(
    second.weights.some((w) => /_\d+$/.test(w.name)),
    `names: ${second.weights.map((w) => w.name)}`,
  );
  await saveWeights(second, at('second.npz'));
  const names = Object.keys(py('weights', at('second.npz'))).sort();
  assert.equal(names, Object.keys(py('weights', at('keras.npz'))).sort());
  const third = await tfl.loadLayersModel(npzHandler(at('keras.npz')));
  for (const w of third.weights) w.write(tf.zerosLike(w.read()));
  await assignWeights(third, at('second.npz'));
  assert.equal(Array.from(await predict(third, tokens())), Array.from(await predict(first, tokens())));
  await assignWeights(third.weights, at('second.npz')); // the LayerVariable list as well as the model
});

test('weights written by numpy alone, with the topology passed in (an object or a model to take it from)', async () => {
  const topology = JSON.parse(readFileSync(at('topology.json'), 'utf8'));
  const model = await tfl.loadLayersModel(npzHandler(at('weights-only.npz'), { modelTopology: topology }));
  assert.ok(worst(await predict(model, tokens()), expected.predictions) < 1e-5);
  const again = await tfl.loadLayersModel(npzHandler(at('weights-only.npz'), { modelTopology: model }));
  assert.equal(Array.from(await predict(again, tokens())), Array.from(await predict(model, tokens())));
  try {
    await tfl.loadLayersModel(npzHandler(at('weights-only.npz')));
    assert.unreachable();
  } catch (e) {
    assert.instance(e, NpyError);
    assert.match(e.message, /no model\.json member with a model topology/);
  }
});

test('PyTorch names and layouts through a names table: fc.weight (out, in) transposed into dense/kernel', async () => {
  const topology = JSON.parse(readFileSync(at('topology.json'), 'utf8'));
  const names = { 'dense/kernel': { key: 'fc.weight', transpose: true }, 'dense/bias': 'fc.bias' };
  const model = await tfl.loadLayersModel(npzHandler(at('torch.npz'), { modelTopology: topology, names }));
  assert.ok(worst(await predict(model, tokens()), expected.predictions) < 1e-5);
  // saveWeights with the same table writes PyTorch's layout back: numpy sees the original arrays.
  await saveWeights(model, at('torch-again.npz'), { names });
  assert.equal(py('weights', at('torch-again.npz'))['fc.weight'], py('weights', at('torch.npz'))['fc.weight']);
  const rebuilt = await tfl.loadLayersModel(npzHandler(at('keras.npz')));
  await assignWeights(rebuilt, at('torch.npz'), { names });
  assert.equal(Array.from(await predict(rebuilt, tokens())), Array.from(await predict(model, tokens())));
});

test('float16 members travel as tfjs float16 quantization: half the bytes, the same values', async () => {
  const handler = npzHandler(at('half.npz'));
  const artifacts = await handler.load();
  assert.ok(artifacts.weightSpecs.every((s) => s.quantization?.dtype === 'float16' && s.dtype === 'float32'));
  const bytes = artifacts.weightData.reduce((n, b) => n + b.byteLength, 0);
  assert.is(bytes, 2 * artifacts.weightSpecs.reduce((n, s) => n + s.shape.reduce((a, b) => a * b, 1), 0));
  const model = await tfl.loadLayersModel(npzHandler(at('half.npz')));
  assert.ok(worst(await predict(model, tokens()), expected.half_predictions) < 1e-5);
});

test('mismatches are listed together: a missing, an extra and a mis-shaped weight (handler and assignWeights)', async () => {
  const model = await tfl.loadLayersModel(npzHandler(at('keras.npz')));
  // An archive of this model's save, with one weight removed, one added and one of the wrong shape.
  execFileSync('python3', [
    '-c',
    `
import numpy as np, zipfile, sys
src, dst = sys.argv[1], sys.argv[2]
z = np.load(src)
arrays = {k: z[k] for k in z.files if k not in ('model.json', 'dense/bias')}
arrays['dense/kernel'] = arrays['dense/kernel'][:20]
arrays['stray/weight'] = np.zeros(2, np.float32)
np.savez(dst, **arrays)
with zipfile.ZipFile(dst, 'a') as out: out.writestr('model.json', z['model.json'])
`,
    at('saved.npz'),
    at('broken.npz'),
  ]);
  for (const attempt of [() => tfl.loadLayersModel(npzHandler(at('broken.npz'))), () => assignWeights(model, at('broken.npz'))]) {
    try {
      await attempt();
      assert.unreachable();
    } catch (e) {
      assert.instance(e, NpyError);
      assert.is(e.code, 'WEIGHT_MISMATCH');
      assert.match(e.message, /^3 weight mismatches/);
      assert.match(e.message, /dense\/bias: no array/);
      assert.match(e.message, /dense\/kernel: shape \[20,3\] in the archive, \[40,3\] in the model/);
      assert.match(e.message, /stray\/weight: in the archive but/);
    }
  }
});

test('npzHandler: onProgress as each weight is read (weight data and stream), ending at the bytes of every weight; an abort halfway gives tfjs nothing', async () => {
  const model = await tfl.loadLayersModel(npzHandler(at('keras.npz')));
  const total = model.weights.reduce((n, w) => n + 4 * w.shape.reduce((a, b) => a * b, 1), 0);
  for (const stream of [false, true]) {
    const seen = [];
    const artifacts = await npzHandler(at('keras.npz'), { stream, onProgress: (p) => seen.push(p) }).load();
    if (stream) {
      const reader = artifacts.getWeightStream().getReader();
      while (!(await reader.read()).done);
    }
    assert.ok(seen.length >= model.weights.length / 2, `${seen.length} reports for ${model.weights.length} weights`);
    assert.ok(
      seen.every((p, i) => p.total === total && (i === 0 || p.bytes > seen[i - 1].bytes)),
      JSON.stringify(seen),
    );
    assert.is(seen.at(-1).bytes, total);
    assert.ok(seen.every((p) => artifacts.weightSpecs.some((s) => s.name === p.tensor)));
  }
  const controller = new AbortController();
  const err = await tfl.loadLayersModel(npzHandler(at('keras.npz'), { signal: controller.signal, onProgress: () => controller.abort() })).then(
    () => null,
    (e) => e,
  );
  assert.is(err?.name, 'AbortError', String(err));
  model.dispose();
});

test("a graph model: tf.loadGraphModel(npzHandler) streams the weights one member at a time and computes numpy's answer", async () => {
  const artifacts = await npzHandler(at('graph.npz')).load();
  assert.is(artifacts.weightData, undefined);
  assert.type(artifacts.getWeightStream, 'function');
  const sizes = [];
  const reader = artifacts.getWeightStream().getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) sizes.push(r.value.byteLength);
  assert.equal(sizes, [4 * 4 * 3, 3 * 4], 'one buffer per weight');
  const model = await loadGraphModel(npzHandler(at('graph.npz')));
  const y = model.execute(tf.tensor2d(expected.graph_x), 'out');
  assert.ok(worst(await y.data(), expected.graph_y) < 1e-5);
});

test("saving tfjs's weight data: views where a weight lies aligned in one buffer, copies across buffers and misaligned; numpy reads every value", async () => {
  // bool[3] leaves float32[2] at byte 3 (misaligned); int32[2] spans the two buffers; then float16 bits and strings.
  const whole = new Uint8Array(3 + 8 + 8 + 4 + (4 + 2) + (4 + 3));
  const dv = new DataView(whole.buffer);
  whole.set([1, 0, 1], 0);
  dv.setFloat32(3, 1.5, true);
  dv.setFloat32(7, -2.25, true);
  dv.setInt32(11, 7, true);
  dv.setInt32(15, -9, true);
  dv.setUint16(19, 0x3c00, true);
  dv.setUint16(21, 0xc000, true); // float16 1 and -2
  dv.setUint32(23, 2, true);
  whole.set([0x68, 0x69], 27);
  dv.setUint32(29, 3, true);
  whole.set([0xc3, 0xa9, 0x21], 33);
  const split = 14; // inside the int32 weight
  const weightData = [whole.slice(0, split).buffer, whole.slice(split).buffer];
  const weightSpecs = [
    { name: 'b', shape: [3], dtype: 'bool' },
    { name: 'f', shape: [2], dtype: 'float32' },
    { name: 'i', shape: [2], dtype: 'int32' },
    { name: 'h', shape: [2], dtype: 'float32', quantization: { dtype: 'float16' } },
    { name: 's', shape: [2], dtype: 'string' },
  ];
  await npzHandler(at('raw.npz')).save({ modelTopology: {}, weightSpecs, weightData });
  const got = JSON.parse(
    execFileSync(
      'python3',
      [
        '-c',
        `import numpy as np, json, sys
z = np.load(sys.argv[1])
print(json.dumps({k: [z[k].dtype.str, z[k].tolist()] for k in 'bfihs'}))`,
        at('raw.npz'),
      ],
      { encoding: 'utf8' },
    ),
  );
  assert.equal(got, { b: ['|b1', [true, false, true]], f: ['<f4', [1.5, -2.25]], i: ['<i4', [7, -9]], h: ['<f2', [1, -2]], s: ['<U2', ['hi', 'é!']] });
});

test("npz:// URLs through tfjs's routers, for loading and saving", async () => {
  const model = await tfl.loadLayersModel(`npz://${at('keras.npz')}`);
  await model.save(`npz://${at('routed.npz')}`);
  const again = await tfl.loadLayersModel(`npz://${at('routed.npz')}`);
  assert.equal(Array.from(await predict(again, tokens())), Array.from(await predict(model, tokens())));
});

test('saving to a function hands it the bytes; saveWeights without a target returns them; loadTensors skips model.json', async () => {
  const model = await tfl.loadLayersModel(npzHandler(at('keras.npz')));
  let bytes = null;
  await model.save(
    npzHandler((b) => {
      bytes = b;
    }),
  );
  const again = await tfl.loadLayersModel(npzHandler(bytes));
  assert.equal(Array.from(await predict(again, tokens())), Array.from(await predict(model, tokens())));
  const weights = await saveWeights(model);
  assert.instance(weights, Uint8Array);
  const tensors = await loadTensors(bytes);
  assert.equal(Object.keys(tensors).sort(), model.weights.map((w) => w.originalName).sort());
});

test.run();
