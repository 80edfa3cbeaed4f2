// Keras 3's sharded weights (model.save_weights('x.weights.json', max_shard_size=...)) against Keras itself
// (KERAS_BACKEND=torch): one Python process builds a model (Dense layers, a BatchNormalization with
// statistics that are not 0 and 1), saves it sharded so that one layer's variables are split over two
// shards, loads the shards back into a fresh model with Keras's load_weights and saves what Keras read
// as one .weights.h5, whose every dataset h5py dumps. openWeights of the map must list the same paths
// in the same order with the same bytes; assignWeights must give a tfjs model Keras's predictions.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import * as tfl from '@tensorflow/tfjs-layers';
import { bytesSource } from '@npyts/core';
import { openWeights } from '@npyts/core/node';
import { assignWeights } from '@npyts/tfjs';
import { scratch } from '../helpers/numpy.mjs';
import { useCpuBackend } from '../helpers/tfjs.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';
import { startNginx } from '../helpers/nginx.mjs';
import { serveFiles } from '../helpers/serve-files.mjs';

await useCpuBackend();

const dir = scratch('npyts-keras-sharded-');
const PY = `
import os, sys, json, shutil
import numpy as np, keras, h5py
out = sys.argv[1]
def build():
    return keras.Sequential([keras.Input((8,), name='x'), keras.layers.Dense(64, name='a', activation='relu'),
        keras.layers.Dense(32, name='b', activation='tanh'), keras.layers.Dense(4, name='c'),
        keras.layers.BatchNormalization(name='bn')])
rng = np.random.default_rng(5)
m = build()
m.set_weights([rng.standard_normal(w.shape).astype('float32') * 0.5 + (1.0 if 'variance' in w.path else 0.0) for w in m.weights])
for w in m.weights:
    if 'variance' in w.path:
        w.assign(np.abs(w.numpy()) + 0.5)
# 10500 bytes a shard: a (2304 B) and b's kernel (8192 B) fill the first, b's bias starts the second, which
# holds c and bn too: concatenating the shards' listings would put batch_normalization after dense_1.
m.save_weights(os.path.join(out, 'x.weights.json'), max_shard_size=10500 / 1024**3)
k = build()
k.load_weights(os.path.join(out, 'x.weights.json'))
k.save_weights(os.path.join(out, 'read.weights.h5'))
tensors = []
os.makedirs(os.path.join(out, 'expect'))
with h5py.File(os.path.join(out, 'read.weights.h5')) as h:
    def visit(name, o):
        if isinstance(o, h5py.Dataset):
            a = o[()]
            b = 't%d.bin' % len(tensors)
            open(os.path.join(out, 'expect', b), 'wb').write(a.tobytes())
            tensors.append({'name': name, 'shape': list(a.shape), 'dtype': a.dtype.str, 'bin': b})
    h.visititems(visit)
x = rng.standard_normal((3, 8)).astype('float32')
# Keras's test_load_sharded_weights: a fresh model whose layers Keras named otherwise loads the set all the same.
fresh = keras.Sequential([keras.Input((8,)), keras.layers.Dense(64, activation='relu'), keras.layers.Dense(32, activation='tanh'),
    keras.layers.Dense(4), keras.layers.BatchNormalization()])
assert [l.name for l in fresh.layers] != ['a', 'b', 'c', 'bn']
fresh.load_weights(os.path.join(out, 'x.weights.json'))
# The same shards under a map that puts dense (and dense_1, split over both shards) in the second shard alone:
# no group is read from the first, and dense's group in the second holds none of its variables.
os.makedirs(os.path.join(out, 'missing'))
for f in ('x_00000.weights.h5', 'x_00001.weights.h5'):
    shutil.copy(os.path.join(out, f), os.path.join(out, 'missing', f))
shard_map = json.load(open(os.path.join(out, 'x.weights.json')))
shard_map['weight_map']['/layers/dense/vars'] = 'x_00001.weights.h5'
shard_map['weight_map']['/layers/dense_1/vars'] = ['x_00001.weights.h5']
json.dump(shard_map, open(os.path.join(out, 'missing', 'x.weights.json'), 'w'))
try:
    build().load_weights(os.path.join(out, 'missing', 'x.weights.json'))
    missing = None
except Exception as e:
    missing = str(e)
print(json.dumps({'tensors': tensors, 'files': sorted(f for f in os.listdir(out) if f.startswith('x_')),
    'map': json.load(open(os.path.join(out, 'x.weights.json'))), 'x': x.tolist(), 'y': k.predict(x, verbose=0).tolist(),
    'fresh': fresh.predict(x, verbose=0).tolist(), 'missing': missing}))
`;
const keras = JSON.parse(
  execFileSync('python3', ['-W', 'ignore', '-c', PY, dir], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
    env: { ...process.env, KERAS_BACKEND: 'torch', TF_CPP_MIN_LOG_LEVEL: '3' },
    stdio: ['ignore', 'pipe', 'ignore'],
  }),
);
const at = (name) => join(dir, name);
const raw = (a) => new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength);

test('Keras writes a JSON map beside x_00000.weights.h5-style shards, one layer split over two', () => {
  assert.equal(keras.files, ['x_00000.weights.h5', 'x_00001.weights.h5']);
  assert.equal(keras.map.weight_map['/layers/dense_1/vars'], ['x_00000.weights.h5', 'x_00001.weights.h5']);
});

test('openWeights of x.weights.json: every weight by its path, in one file order, the bytes Keras reads', async () => {
  const f = await openWeights(at('x.weights.json'));
  assert.is(f.format, 'keras');
  assert.equal(
    [...f.names],
    keras.tensors.map((t) => t.name),
  );
  for (const t of keras.tensors) {
    const info = await f.info(t.name);
    assert.equal(info.shape, t.shape, t.name);
    const a = await f.get(t.name);
    assert.is(a.dtype.str, t.dtype, t.name);
    assert.equal(raw(a), new Uint8Array(readFileSync(join(dir, 'expect', t.bin))), t.name);
  }
  // Each layer's name, from the shard where its group was started (the split layer's second part has none).
  assert.equal(f.metadata.layers, {
    vars: 'sequential',
    'layers/dense/vars': 'a',
    'layers/batch_normalization/vars': 'bn',
    'layers/dense_1/vars': 'b',
    'layers/dense_2/vars': 'c',
  });
  assert.is(f.metadata.shardMap.total_size, keras.map.metadata.total_size);
  await f.close();
});

test('a get reads only the shard that holds the weight', async () => {
  const reads = new Map();
  const counted = (name) => {
    const s = bytesSource(new Uint8Array(readFileSync(at(name))), name);
    reads.set(name, 0);
    const read = (o, n, opt) => {
      reads.set(name, reads.get(name) + 1);
      return s.read(o, n, opt);
    };
    return { ...s, name, size: s.size, read, close: async () => {} };
  };
  const f = await openWeights(new Uint8Array(readFileSync(at('x.weights.json'))), { resolve: counted });
  const before = new Map(reads);
  const a = await f.get('layers/dense_2/vars/0');
  const t = keras.tensors.find((x) => x.name === 'layers/dense_2/vars/0');
  assert.equal(raw(a), new Uint8Array(readFileSync(join(dir, 'expect', t.bin))));
  assert.is(reads.get('x_00000.weights.h5'), before.get('x_00000.weights.h5'), 'the first shard is not read');
  await f.close();
});

test('assignWeights(model, x.weights.json): a tfjs model built by hand predicts what Keras predicts', async () => {
  const model = tfl.sequential({
    layers: [
      tfl.layers.dense({ name: 'a', inputShape: [8], units: 64, activation: 'relu' }),
      tfl.layers.dense({ name: 'b', units: 32, activation: 'tanh' }),
      tfl.layers.dense({ name: 'c', units: 4 }),
      tfl.layers.batchNormalization({ name: 'bn' }),
    ],
  });
  await assignWeights(model, at('x.weights.json'));
  const y = model.predict(tf.tensor(keras.x)).dataSync();
  const want = keras.y.flat();
  let err = 0;
  want.forEach((v, i) => (err = Math.max(err, Math.abs(y[i] - v) / Math.max(1, Math.abs(v)))));
  // 1e-5 relative, as test/adapters/keras.test.mjs: float32 in another order gives about 1e-7, a wrong pairing 1e-1.
  assert.ok(err < 1e-5, `largest relative difference from Keras ${err}`);
});

test("assignWeights(model, x.weights.json): a model of the same layers under other names loads the set, as in Keras's test_load_sharded_weights", async () => {
  const model = tfl.sequential({
    layers: [
      tfl.layers.dense({ inputShape: [8], units: 64, activation: 'relu' }),
      tfl.layers.dense({ units: 32, activation: 'tanh' }),
      tfl.layers.dense({ units: 4 }),
      tfl.layers.batchNormalization(),
    ],
  });
  await assignWeights(model, at('x.weights.json'));
  const y = model.predict(tf.tensor(keras.x)).dataSync();
  let err = 0;
  keras.fresh.flat().forEach((v, i) => (err = Math.max(err, Math.abs(y[i] - v) / Math.max(1, Math.abs(v)))));
  assert.ok(err < 1e-5, `largest relative difference from Keras ${err}`);
});

test("a map that puts a layer's group in a shard holding none of its variables is refused, naming the layer, as Keras refuses it", async () => {
  // Keras: "Layer 'a' expected 2 variables, but received 0 variables during loading".
  assert.match(keras.missing, 'expected 2 variables, but received 0');
  const e = await npyErrorOf(() => openWeights(at('missing/x.weights.json')));
  assert.is(e.code, 'BAD_KERAS');
  assert.match(e.message, "layer group '/layers/dense'");
  assert.match(e.message, 'x_00001.weights.h5');
});

test('from a URL: the shards are found beside the map, every weight as Keras reads it', async () => {
  const server = await startNginx(dir);
  try {
    const f = await openWeights(`${server.base}/x.weights.json`);
    assert.equal(
      [...f.names],
      keras.tensors.map((t) => t.name),
    );
    for (const t of keras.tensors) assert.equal(raw(await f.get(t.name)), new Uint8Array(readFileSync(join(dir, 'expect', t.bin))), t.name);
    await f.close();
  } finally {
    await server.stop();
  }
});

test('a shard redirected to another origin is refused (UNSAFE_PATH) before the other origin is asked, which never sees the headers', async () => {
  const other = await serveFiles(dir);
  const server = await serveFiles(dir, (_req, url) =>
    url.pathname.endsWith('.weights.h5') ? { status: 302, headers: { location: `${other.base}${url.pathname}` } } : null,
  );
  try {
    const e = await npyErrorOf(() => openWeights(`${server.base}/x.weights.json`, { headers: { 'x-api-key': 'secret' } }));
    assert.is(e.code, 'UNSAFE_PATH', e.message);
    assert.match(e.message, /x_\d+\.weights\.h5 was redirected \(HTTP 302\) to/);
    assert.equal(other.log, []);
  } finally {
    await server.close();
    await other.close();
  }
});

test('a shard name that leads out of the folder is refused before any request (UNSAFE_PATH)', async () => {
  for (const bad of ['../x_00000.weights.h5', 'sub/x_00000.weights.h5', 'https://evil.example/x.h5', '%2e%2e/x.h5']) {
    const map = structuredClone(keras.map);
    map.weight_map['/layers/dense/vars'] = [bad];
    writeFileSync(at('bad.weights.json'), JSON.stringify(map));
    const e = await npyErrorOf(() => openWeights(at('bad.weights.json')));
    assert.is(e.code, 'UNSAFE_PATH', bad);
  }
});

test('a map that puts a layer in the wrong shard, or whose shards are not names, is refused (BAD_KERAS)', async () => {
  const map = structuredClone(keras.map);
  map.weight_map['/layers/dense_2/vars'] = ['x_00000.weights.h5'];
  writeFileSync(at('wrong.weights.json'), JSON.stringify(map));
  let e = await npyErrorOf(() => openWeights(at('wrong.weights.json')));
  assert.is(e.code, 'BAD_KERAS');
  assert.match(e.message, 'layers/dense_2/vars/0');
  map.weight_map['/layers/dense_2/vars'] = [7];
  writeFileSync(at('wrong.weights.json'), JSON.stringify(map));
  e = await npyErrorOf(() => openWeights(at('wrong.weights.json')));
  assert.is(e.code, 'BAD_KERAS');
});

test('a shard holding a layer its map does not put there is refused (BAD_KERAS)', async () => {
  copyFileSync(at('x_00000.weights.h5'), at('y_00000.weights.h5'));
  const map = { metadata: {}, weight_map: { '/layers/dense/vars': 'y_00000.weights.h5' } };
  writeFileSync(at('y.weights.json'), JSON.stringify(map));
  // y_00000 holds dense_1 too, which this map does not put in it.
  const e = await npyErrorOf(() => openWeights(at('y.weights.json')));
  assert.is(e.code, 'BAD_KERAS');
  assert.match(e.message, 'dense_1');
});

test.run();
