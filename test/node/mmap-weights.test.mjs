// Memory-mapped weight files (openWeights/loadWeights { mmap }): every tensor whose bytes have its
// layout is a view of one map of its file (of its shard), equal bit for bit to the copied read; the
// others are copies, and info() says why; 'c' writes stay in this process, 'r+' writes reach the
// file; a file truncated under a live map kills the process with SIGBUS, as numpy's maps do, and a
// file replaced by rename does not. Fixtures by safetensors, torch.save, numpy and gguf-py
// (mmap-weights.py, one Python process), and by Keras 3 (KERAS_BACKEND=torch) and h5py (below).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync, renameSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs-core';
import * as tfl from '@tensorflow/tfjs-layers';
import { assignWeights, kerasHandler } from '@npyts/tfjs';
import { loadWeights, openWeights } from '@npyts/core/node';
import { useCpuBackend } from '../helpers/tfjs.mjs';
import { python, scratch } from '../helpers/numpy.mjs';

const dir = scratch('npyts-mmap-weights-');
const here = dirname(fileURLToPath(import.meta.url));
execFileSync('python3', ['-W', 'ignore', join(here, 'mmap-weights.py'), dir], { encoding: 'utf8' });
// Keras's own files (a .weights.h5 with float32 and bfloat16 weights, a legacy .h5, a .keras whose
// stored model.weights.h5 starts where the zip puts it, and that .keras with the member deflated),
// and h5py datasets Keras does not write: a big-endian one and a compact one (bytes in its header).
// It prints each dataset's byte in its file as h5py and zipfile place it.
const h5Offsets = JSON.parse(
  execFileSync(
    'python3',
    [
      '-W',
      'ignore',
      '-c',
      `import json, os, struct, sys, zipfile
os.environ['KERAS_BACKEND'] = 'torch'
import h5py, keras, numpy as np
d = sys.argv[1]
keras.utils.set_random_seed(4)
inp = keras.Input((40,))
x = keras.layers.Dense(300, name='fc')(inp)
x = keras.layers.BatchNormalization(name='bn')(x)
y = keras.layers.Dense(7, dtype='bfloat16', name='head')(x)
model = keras.Model(inp, y)
model.save_weights(os.path.join(d, 'keras.weights.h5'))
model.save(os.path.join(d, 'model.keras'))
model.save(os.path.join(d, 'legacy.h5'))
with zipfile.ZipFile(os.path.join(d, 'model.keras')) as z, zipfile.ZipFile(os.path.join(d, 'deflated.keras'), 'w', zipfile.ZIP_DEFLATED) as out:
    for m in z.namelist(): out.writestr(m, z.read(m))
with h5py.File(os.path.join(d, 'other.h5'), 'w') as f:
    f.create_dataset('le', data=np.arange(1000, dtype='<f4'))
    f.create_dataset('be', data=np.arange(1000, dtype='>f8'))
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    h5py.h5d.create(f.id, b'compact', h5py.h5t.NATIVE_INT32, h5py.h5s.create_simple((16,)), dcpl=dcpl).write(h5py.h5s.ALL, h5py.h5s.ALL, np.arange(16, dtype='i4'))
with h5py.File(os.path.join(d, 'unallocated.h5'), 'w') as f:
    f.create_dataset('never_written', shape=(10,), dtype='<f4')
def offsets(f, base):
    out = {}
    f.visititems(lambda n, o: out.__setitem__(n, None if o.id.get_offset() is None else base + o.id.get_offset()) if isinstance(o, h5py.Dataset) else None)
    return out
res = {n: offsets(h5py.File(os.path.join(d, n), 'r'), 0) for n in ['keras.weights.h5', 'legacy.h5', 'other.h5']}
with zipfile.ZipFile(os.path.join(d, 'model.keras')) as z:
    i = z.getinfo('model.weights.h5')
    assert i.compress_type == zipfile.ZIP_STORED
    with open(os.path.join(d, 'model.keras'), 'rb') as raw:
        raw.seek(i.header_offset)
        n, e = struct.unpack('<HH', raw.read(30)[26:30])
    res['model.keras'] = offsets(h5py.File(z.open(i), 'r'), i.header_offset + 30 + n + e)
print(json.dumps(res))
`,
      dir,
    ],
    // stderr kept (Keras warns that .h5 is legacy), shown only if the script fails.
    { encoding: 'utf8', env: { ...process.env, KERAS_BACKEND: 'torch' }, stdio: ['ignore', 'pipe', 'pipe'] },
  ),
);
const at = (name) => join(dir, name);

const bytesOf = (a) => new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength);

/** Run an ES module snippet in a fresh Node process: its status, signal, stdout and stderr. */
function child(code, { env = {}, args = [] } = {}) {
  return spawnSync(process.execPath, [...args, '--input-type=module', '-e', code], { encoding: 'utf8', env: { ...process.env, ...env } });
}

/** Each tensor's file: the file itself, or the shard the index names. */
function fileOf(path, name) {
  if (!path.endsWith('.index.json')) return path;
  return at(JSON.parse(readFileSync(path, 'utf8')).weight_map[name]);
}

const FILES = [
  'model.safetensors',
  'model.safetensors.index.json',
  'unaligned.safetensors',
  'model.pt',
  'legacy.pt',
  'stored.npz',
  'deflated.npz',
  'model.gguf',
  'keras.weights.h5',
  'legacy.h5',
  'model.keras',
  'deflated.keras',
  'other.h5',
];

test('every format: the mapped read equals the copied read bit for bit; a view exactly where info() names no copy', async () => {
  let views = 0;
  let copies = 0;
  for (const f of FILES) {
    const path = at(f);
    const copied = await loadWeights(path);
    const w = await openWeights(path, { mmap: 'r' });
    const mapped = await w.getAll();
    assert.equal([...mapped.keys()], [...copied.keys()], f);
    for (const [name, a] of mapped) {
      const b = copied.get(name);
      const where = `${f}: ${name}`;
      assert.equal([a.dtype.str, a.shape, a.order], [b.dtype.str, b.shape, b.order], where);
      assert.equal(bytesOf(a), bytesOf(b), where);
      const info = await w.info(name);
      const plain = await openWeights(path);
      assert.is((await plain.info(name)).copied, undefined, `${where}: no reason without a map`);
      await plain.close();
      if (a.size === 0) continue;
      // A view of the map: its buffer is the whole file (the shard's).
      const isView = a.data.buffer.byteLength === statSync(fileOf(path, name)).size;
      assert.is(isView, info.copied === undefined, `${where}: ${info.copied}`);
      if (isView) views++;
      else copies++;
    }
    await w.close();
  }
  assert.ok(views >= 20 && copies >= 10, `${views} views, ${copies} copies`);
});

test('what is copied and why: unaligned, byte-swapped, deflated, quantized, strided, flagged', async () => {
  const reasons = async (f) => {
    const w = await openWeights(at(f), { mmap: 'r' });
    const out = Object.fromEntries(await Promise.all(w.names.map(async (n) => [n, (await w.info(n)).copied])));
    await w.close();
    return out;
  };
  const st = await reasons('model.safetensors');
  assert.ok(
    Object.values(st).every((r) => r === undefined),
    'a file the reference wrote: every tensor a view',
  );
  const pt = await reasons('model.pt');
  assert.equal(
    Object.keys(pt).filter((n) => pt[n] === undefined),
    ['w', 'b', 'h', 'bf', 't', 'rows', 'z'],
    'dense tensors, a transposed view (F order) and a slice are views',
  );
  assert.match(pt.cols, /strided view/);
  assert.match(pt.neg, /neg flag/);
  assert.match(pt.conj, /conj flag/);
  assert.match((await reasons('legacy.pt')).w, /starts at byte \d+, not a multiple of 4/);
  const npz = await reasons('stored.npz');
  assert.match(npz.big, /big-endian/);
  assert.match((await reasons('deflated.npz')).w, /deflated member/);
  const gg = await reasons('model.gguf');
  assert.equal([gg.f32, gg.f16, gg.i32], [undefined, undefined, undefined]);
  assert.match(gg.q8, /quantized \(Q8_0\)/);
});

test('Keras and HDF5 files: a contiguous dataset is a view exactly where its byte in the map (as h5py and zipfile place it) is aligned', async () => {
  let views = 0;
  let unaligned = 0;
  for (const [f, offsets] of Object.entries(h5Offsets)) {
    const w = await openWeights(at(f), { mmap: 'r' });
    for (const name of w.names) {
      const { dtype, copied } = await w.info(name);
      const where = `${f}: ${name}`;
      const offset = offsets[name];
      assert.ok(offset !== undefined, `${where}: h5py knows the dataset`);
      if (offset === null) {
        assert.match(copied, /compact dataset/, where);
      } else if (dtype.byteOrder === '>') {
        assert.match(copied, /big-endian/, where);
      } else if (offset % dtype.itemsize === 0) {
        assert.is(copied, undefined, where);
        views++;
      } else {
        assert.ok(copied?.startsWith(`its data starts at byte ${offset}, not a multiple of ${dtype.itemsize} `), `${where}: ${copied}`);
        unaligned++;
      }
    }
    await w.close();
  }
  // Both kinds, or the test proves less than it says (the .keras's member starts where the zip puts it).
  assert.ok(views >= 10 && unaligned >= 1, `${views} views, ${unaligned} unaligned copies`);
  const deflated = await openWeights(at('deflated.keras'), { mmap: 'r' });
  for (const name of deflated.names) assert.match((await deflated.info(name)).copied, /model\.weights\.h5 is a deflated member/, name);
  await deflated.close();
});

test('an HDF5 dataset never written (no storage, so no byte in the map): no copy reason, and get() refuses it', async () => {
  const w = await openWeights(at('unallocated.h5'), { mmap: 'r' });
  assert.is((await w.info('never_written')).copied, undefined);
  try {
    await w.get('never_written');
    assert.unreachable('read');
  } catch (e) {
    assert.is(e.code, 'HDF5_UNSUPPORTED', e.message);
  }
  await w.close();
});

test('an unaligned safetensors tensor (written by hand) comes back right, as a copy named as such', async () => {
  const want = JSON.parse(
    python(`from safetensors.numpy import load_file
print(json.dumps({k: v.tolist() for k, v in load_file(${JSON.stringify(at('unaligned.safetensors'))}).items()}))`),
  );
  const w = await openWeights(at('unaligned.safetensors'), { mmap: 'r' });
  const odd = await w.get('odd');
  assert.equal([...odd.data], want.odd.flat());
  assert.match((await w.info('odd')).copied, /starts at byte \d+, not a multiple of 4 \(Float32Array\)/);
  const even = await w.get('even');
  assert.equal([...even.data], want.even);
  assert.is((await w.info('even')).copied, undefined);
  assert.is(even.data.buffer.byteLength, statSync(at('unaligned.safetensors')).size);
  await w.close();
});

test('a file over 4 GiB: a tensor past 4 GiB is a view of the map, equal to what safe_open reads', async () => {
  const path = at('huge.safetensors');
  const want = JSON.parse(
    python(`from safetensors import safe_open
with safe_open(${JSON.stringify(path)}, framework='np') as f: print(json.dumps(f.get_tensor('tail').tolist()))`),
  );
  const w = await openWeights(path, { mmap: 'r' });
  const tail = await w.get('tail', { expect: '<f4' });
  assert.equal([...tail.data], want);
  assert.is(tail.data.buffer.byteLength, statSync(path).size);
  assert.ok(tail.data.byteOffset > 2 ** 32);
  await w.close();
});

test("'c': a write through a view changes the map (every view of it) and not the file", async () => {
  const path = at('model.safetensors');
  const before = readFileSync(path);
  const w = await openWeights(path, { mmap: 'c' });
  const a = await w.get('w');
  const was = a.data[5];
  a.data[5] = 12345.5;
  assert.is((await w.get('w')).data[5], 12345.5, 'another view of the same map');
  await w.close();
  assert.is(a.data[5], 12345.5, 'the view outlives close()');
  assert.equal(readFileSync(path), before, 'the file is unchanged');
  const again = await loadWeights(path, { mmap: 'c' });
  assert.is(again.get('w').data[5], was, 'a new map reads the file');
});

test("Keras .weights.h5, 'c': a write through a view changes the map and not the file", async () => {
  const path = at('keras.weights.h5');
  const before = readFileSync(path);
  const w = await openWeights(path, { mmap: 'c' });
  const name = 'layers/dense/vars/0';
  const a = await w.get(name, { expect: '<f4' });
  assert.is(a.data.buffer.byteLength, before.length, 'a view of the map');
  a.data[3] = 12345.5;
  assert.is((await w.get(name)).data[3], 12345.5, 'another view of the same map');
  await w.close();
  assert.equal(readFileSync(path), before, 'the file is unchanged');
  const kernel = python(`import h5py
with h5py.File(${JSON.stringify(path)}, 'r') as f: print(repr(float(f[${JSON.stringify(name)}][()].ravel()[3])))`).trim();
  assert.is(Number(kernel), (await loadWeights(path, { mmap: 'c' })).get(name).data[3], 'a new map reads the file, as h5py does');
  assert.is.not(Number(kernel), 12345.5);
});

test("Keras .weights.h5, 'r+': a write through a view reaches the file h5py reads", async () => {
  const path = at('rplus.weights.h5');
  copyFileSync(at('keras.weights.h5'), path);
  const w = await openWeights(path, { mmap: 'r+' });
  const a = await w.get('layers/dense/vars/0', { expect: '<f4' });
  assert.is(a.data.buffer.byteLength, statSync(path).size, 'a view of the map');
  a.data[0] = -7.25;
  await w.close(); // writes the changed pages back
  const got = python(`import h5py
with h5py.File(${JSON.stringify(path)}, 'r') as f: print(float(f['layers/dense/vars/0'][0, 0]))`).trim();
  assert.is(got, '-7.25');
});

test("'r+': a write through a view reaches the file the reference reads", async () => {
  const path = at('rplus.safetensors');
  copyFileSync(at('model.safetensors'), path);
  const w = await openWeights(path, { mmap: 'r+' });
  const a = await w.get('w', { expect: '<f4' });
  a.data[0] = -7.25;
  await w.close(); // writes the changed pages back
  const got = python(`from safetensors import safe_open
with safe_open(${JSON.stringify(path)}, framework='pt') as f: print(float(f.get_tensor('w')[0, 0]))`).trim();
  assert.is(got, '-7.25');
});

test("'r+' is refused for a zip (.npz, torch.save, .keras): a write would leave the member's CRC-32 stale; 'c' writes stay in this process and the file still passes Python's CRC check", async () => {
  const paths = [];
  for (const f of ['stored.npz', 'model.pt', 'model.keras']) {
    const path = at(`rplus-${f}`);
    copyFileSync(at(f), path);
    paths.push(path);
    const before = readFileSync(path);
    for (const open of [() => openWeights(path, { mmap: 'r+' }), () => loadWeights(path, { mmap: 'r+' })]) {
      try {
        await open();
        assert.unreachable(`${f} opened 'r+'`);
      } catch (e) {
        assert.is(e.code, 'BAD_OPTION', `${f}: ${e.message}`);
        assert.ok(e.message.includes(path), e.message);
        assert.match(e.message, /CRC-32/);
        assert.match(e.message, /'c'/);
      }
    }
    // 'c': the same write changes the map only.
    const w = await openWeights(path, { mmap: 'c' });
    let name = null;
    for (const n of w.names) {
      const info = await w.info(n);
      if (name === null && info.copied === undefined && info.shape.length && info.shape.every((k) => k > 0)) name = n;
    }
    const a = await w.get(name);
    assert.is(a.data.buffer.byteLength, before.length, `${f}: ${name} is a view of the map`);
    const was = bytesOf(a)[0];
    bytesOf(a)[0] = was ^ 0xff;
    if (f.endsWith('.npz')) {
      // A stored .npz member is read whole and its CRC-32 checked: the changed map no longer matches it.
      try {
        await w.get(name);
        assert.unreachable();
      } catch (e) {
        assert.is(e.code, 'ZIP_CRC', e.message);
      }
    } else {
      assert.is(bytesOf(await w.get(name))[0], was ^ 0xff, `${f}: another view of the same map`);
    }
    await w.close();
    assert.equal(readFileSync(path), before, `${f}: the file is unchanged`);
  }
  // numpy, torch and zipfile (Keras's reader) read the files, every member's CRC-32 checked.
  const got = python(`import zipfile, torch
paths = ${JSON.stringify(paths)}
for p in paths: assert zipfile.ZipFile(p).testzip() is None, p
print(float(np.load(paths[0])['w'][0, 0]) == float(torch.load(paths[1], weights_only=True)['w'][0, 0]))`).trim();
  assert.is(got, 'True');
});

test("torch.save over a map: a storage's local header is read when its tensor is asked for; a damaged one refuses that tensor, not the file", async () => {
  const path = at('damaged.pt');
  // torch.save numbers storages in the order it meets them: data/0 is a's, data/1 is b's.
  python(`import torch, zipfile
p = ${JSON.stringify(path)}
torch.save({'a': torch.arange(10, dtype=torch.float32), 'b': torch.arange(5, dtype=torch.int32)}, p)
z = zipfile.ZipFile(p)
(info,) = [i for i in z.infolist() if i.filename.endswith('/data/1')]
with open(p, 'r+b') as f:
    f.seek(info.header_offset + 3)
    f.write(b'\\x05')   # PK\\x03\\x05: no local header where the directory points`);
  for (const mmap of ['r', undefined]) {
    const w = await openWeights(path, { mmap });
    assert.equal([...(await w.get('a')).data], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], `${mmap}: a reads`);
    assert.is((await w.info('a')).copied, undefined);
    for (const ask of [() => w.get('b'), ...(mmap ? [() => w.info('b')] : [])]) {
      try {
        await ask();
        assert.unreachable();
      } catch (e) {
        assert.is(e.code, 'ZIP_FORMAT', e.message);
        assert.match(e.message, /no local header/);
        assert.match(e.message, /data\/1/);
      }
    }
    await w.close();
  }
  const w = await openWeights(path, { mmap: 'r' });
  await w.close();
  try {
    await w.info('a');
    assert.unreachable();
  } catch (e) {
    assert.is(e.code, 'CLOSED', e.message);
  }
});

test('a sharded set maps each shard: views of one map per shard', async () => {
  const all = await loadWeights(at('model.safetensors.index.json'), { mmap: 'r' });
  assert.is(all.get('w').data.buffer, all.get('b').data.buffer, 'one map for the first shard');
  assert.is(all.get('bf').data.buffer, all.get('u').data.buffer, 'one map for the second');
  assert.is.not(all.get('w').data.buffer, all.get('bf').data.buffer);
});

test('shards found through the resolve hook (paths) are mapped too', async () => {
  const all = await loadWeights(at('model.safetensors.index.json'), { mmap: 'r', resolve: (name) => at(name) });
  assert.is(all.get('w').data.buffer.byteLength, statSync(at('model-00001-of-00002.safetensors')).size);
  assert.is(all.get('w').data.buffer, all.get('h').data.buffer);
});

test('a bad mmap mode is refused before anything is opened', async () => {
  try {
    await openWeights(at('model.safetensors'), { mmap: 'w' });
    assert.unreachable();
  } catch (e) {
    assert.is(e.code, 'BAD_OPTION');
    assert.match(e.message, /mmap must be 'r', 'r\+' or 'c'/);
  }
});

test('without the addon: one warning, then the file is read as without mmap', () => {
  const r = child(
    `import { loadWeights } from '@npyts/core/node';
const a = await loadWeights(${JSON.stringify(at('model.safetensors'))}, { mmap: 'r' });
const b = await loadWeights(${JSON.stringify(at('model.pt'))}, { mmap: 'r' });
console.log(a.get('w').data[3], b.get('w').data[3], a.get('w').data.buffer.byteLength);`,
    { env: { NPYTS_NATIVE: '0' } },
  );
  assert.is(r.status, 0, r.stderr);
  assert.is(r.stderr.match(/NPYTS_NO_MMAP/g)?.length, 1, r.stderr);
  assert.match(r.stderr, /memory maps need @npyts\/native/);
  const [x, y, bytes] = r.stdout.trim().split(' ').map(Number);
  assert.is(x, y, 'the same tensor from both files');
  assert.ok(bytes < statSync(at('model.safetensors')).size, 'a copy, not the file');
});

test('the map is removed when the file is closed and its last view collected', () => {
  const path = at('model.safetensors');
  const r = child(
    `import { readFileSync } from 'node:fs';
import { loadWeights } from '@npyts/core/node';
const maps = () => readFileSync('/proc/self/maps', 'utf8').split('\\n').filter((l) => l.endsWith(${JSON.stringify(path)})).length;
let all = await loadWeights(${JSON.stringify(path)}, { mmap: 'r' });   // the file is closed: only the views hold the map
const held = maps();
const sum = all.get('w').data[0];
all = null;
for (let i = 0; i < 20 && maps() > 0; i++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 10)); }
console.log(held, maps(), typeof sum);`,
    { args: ['--expose-gc'] },
  );
  assert.is(r.status, 0, r.stderr);
  assert.is(r.stdout.trim(), '1 0 number');
});

test('a file truncated under a live map: touching a view kills the process with SIGBUS, as numpy, in every mode', () => {
  for (const mode of ['r', 'c']) {
    const path = at(`truncated-${mode}.safetensors`);
    copyFileSync(at('model.safetensors'), path);
    const r = child(`import { truncateSync } from 'node:fs';
import { openWeights } from '@npyts/core/node';
const w = await openWeights(${JSON.stringify(path)}, { mmap: '${mode}' });
const a = await w.get('w');
truncateSync(${JSON.stringify(path)}, 0);
console.log('read', a.data[100]);`);
    assert.is(r.signal, 'SIGBUS', `${mode}: ${r.status} ${r.stdout} ${r.stderr}`);
    assert.is(r.stdout, '');
  }
  // numpy's own map of a truncated file dies the same way.
  const path = at('truncated-numpy.npy');
  const r = spawnSync(
    'python3',
    [
      '-c',
      `import numpy as np, os\nnp.save(${JSON.stringify(path)}, np.ones(100000))\nm = np.load(${JSON.stringify(path)}, mmap_mode='r')\nos.truncate(${JSON.stringify(path)}, 0)\nprint(m[50000])`,
    ],
    { encoding: 'utf8' },
  );
  assert.is(r.signal, 'SIGBUS');
});

test('a file replaced by rename (as npyts and safetensors write) leaves live views reading the old bytes', async () => {
  const path = at('replaced.safetensors');
  copyFileSync(at('model.safetensors'), path);
  const all = await loadWeights(path, { mmap: 'r' });
  const want = [...all.get('w').data.subarray(0, 8)];
  copyFileSync(at('unaligned.safetensors'), `${path}.new`);
  renameSync(`${path}.new`, path);
  assert.equal([...all.get('w').data.subarray(0, 8)], want);
});

test("tfjs (CPU backend): assignWeights from a mapped file keeps the view as the variable's values, no copy", async () => {
  await useCpuBackend();
  const path = at('model.safetensors');
  const w = tf.variable(tf.zeros([64, 48]), true, 'w:0');
  const d = tf.variable(tf.zeros([3, 3]), true, 'd:0');
  await assignWeights([w, d], path, { mmap: 'r', ignoreUnused: true });
  const values = w.dataSync();
  assert.is(values.buffer.byteLength, statSync(path).size, 'the float32 weight is the map');
  const want = (await loadWeights(path)).get('w').data;
  assert.equal(values, want);
  assert.is.not(d.dataSync().buffer.byteLength, statSync(path).size, 'a float64 weight is converted: a copy');
  w.dispose();
  d.dispose();
});

test('tfjs (CPU backend): kerasHandler with { mmap } builds the model once over views of the map, predicting bit for bit what the copied load predicts', async () => {
  await useCpuBackend();
  let total = 0;
  // The .keras's member starts where the zip puts it (its datasets unaligned here); the legacy .h5's are aligned.
  for (const name of ['model.keras', 'legacy.h5']) {
    const path = at(name);
    const mapped = await tfl.loadLayersModel(kerasHandler(path, { mmap: 'r' }));
    const copied = await tfl.loadLayersModel(kerasHandler(path));
    const size = statSync(path).size;
    // Each float32 weight the file holds aligned (info() names no copy) is the map; bfloat16 ones are widened copies.
    const file = await openWeights(path, { mmap: 'r' });
    let viewable = 0;
    for (const key of file.names) {
      const { dtype, copied } = await file.info(key);
      if (copied === undefined && dtype.kind === 'f' && dtype.itemsize === 4 && dtype.mlFloat === null) viewable++;
    }
    await file.close();
    const views = mapped.weights.filter((w) => w.read().dataSync().buffer.byteLength === size);
    assert.is(views.length, viewable, `${name}: ${views.map((w) => w.name)} are views of the map`);
    assert.ok(views.every((w) => !w.name.startsWith('head')));
    total += viewable;
    const x = tf.randomUniform([5, 40], -1, 1, 'float32', 3);
    assert.equal(mapped.predict(x).dataSync(), copied.predict(x).dataSync(), name);
    mapped.dispose();
    copied.dispose();
  }
  assert.ok(total >= 4, `${total} float32 weights stored aligned`);
});

test.run();
