// Memory-mapped weight files (openWeights/loadWeights { mmap }): every tensor whose bytes have its
// layout is a view of one map of its file (of its shard), equal bit for bit to the copied read; the
// others are copies, and info() says why; 'c' writes stay in this process, 'r+' writes reach the
// file; a file truncated under a live map kills the process with SIGBUS, as numpy's maps do, and a
// file replaced by rename does not. Fixtures by safetensors, torch.save, numpy and gguf-py
// (mmap-weights.py, one Python process).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync, renameSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs-core';
import { assignWeights } from '@npyts/tfjs';
import { loadWeights, openWeights } from '@npyts/core/node';
import { useCpuBackend } from '../helpers/tfjs.mjs';
import { python, scratch } from '../helpers/numpy.mjs';

const dir = scratch('npyts-mmap-weights-');
const here = dirname(fileURLToPath(import.meta.url));
execFileSync('python3', ['-W', 'ignore', join(here, 'mmap-weights.py'), dir], { encoding: 'utf8' });
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

test.run();
