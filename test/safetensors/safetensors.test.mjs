// .safetensors against the real thing (PyTorch 2.x and Python's safetensors): every dtype read with
// torch's values, files written that safetensors loads (byte for byte what it writes), sharded sets
// through their index, hostile headers refused where the reference refuses them (and a key written
// twice, which it takes silently), one tensor of a remote file read by range.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NpyError, encodeSafetensors, openSafetensors as openAnywhere, openWeights as openWeightsAnywhere, toFloat32 } from '@npyts/core';
import { loadWeights, openSafetensors, openSafetensorsSync, openWeights, saveNpz, saveSafetensors, saveSafetensorsSync } from '@npyts/core/node';
import { pythonAsync, scratch } from '../helpers/numpy.mjs';
import { startNginx } from '../helpers/nginx.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';

const dir = scratch('npyts-safetensors-');
const file = (name) => join(dir, name);

// Every dtype torch and safetensors share, with 0-d, empty and odd-sized tensors; values as torch
// holds them (raw little-endian bytes, and float64 for comparison).
const truth = JSON.parse(
  await pythonAsync(`
import torch, base64
from safetensors.torch import save_file
torch.manual_seed(0)
t = {
  'bool': torch.rand(5) > 0.5, 'u8': torch.randint(0, 255, (3, 2), dtype=torch.uint8), 'i8': torch.randint(-128, 127, (7,), dtype=torch.int8),
  'i16': torch.randint(-3000, 3000, (2, 3), dtype=torch.int16), 'u16': torch.randint(0, 60000, (4,), dtype=torch.int32).to(torch.uint16),
  'i32': torch.randint(-2**31, 2**31 - 1, (3,), dtype=torch.int32), 'u32': torch.randint(0, 2**31, (2,), dtype=torch.int64).to(torch.uint32),
  'i64': torch.tensor([-2**63, 2**63 - 1, 0]), 'u64': torch.tensor([2**63 + 5], dtype=torch.uint64),
  'f16': torch.randn(2, 5).half(), 'bf16': torch.randn(3, 4, 2).bfloat16(), 'f32': torch.randn(6), 'f64': torch.randn(2, 2, dtype=torch.float64),
  'c64': torch.randn(3, dtype=torch.complex64), 'f8e4m3': (torch.randn(9) * 100).to(torch.float8_e4m3fn), 'f8e5m2': (torch.randn(9) * 1e4).to(torch.float8_e5m2),
  'scalar': torch.tensor(2.5), 'empty': torch.zeros(0, 3), 'odd': torch.randn(3).bfloat16(),
}
save_file(t, ${JSON.stringify(file('all.safetensors'))}, metadata={'format': 'pt'})
def raw(x):
    return base64.b64encode(x.contiguous().view(-1).view(torch.uint8).numpy().tobytes() if x.numel() else b'').decode()
def val(x):
    return x.to(torch.complex128).view(torch.float64).reshape(-1).tolist() if x.is_complex() else x.to(torch.float64).reshape(-1).tolist() if x.dtype not in (torch.uint64, torch.int64) else [str(v) for v in x.reshape(-1).tolist()]
print(json.dumps({k: {'shape': list(x.shape), 'raw': raw(x), 'values': val(x)} for k, x in t.items()}))
`),
);

const bytesOf = (a) => (a.data.byteLength === undefined ? null : Buffer.from(a.data.buffer, a.data.byteOffset, a.data.byteLength));

test('every dtype: the bytes torch wrote, the shapes, and values (bfloat16, float8 widened exactly)', async () => {
  const f = await openSafetensors(file('all.safetensors'));
  assert.equal(f.metadata, Object.assign(Object.create(null), { format: 'pt' }));
  assert.equal([...f.names].sort(), Object.keys(truth).sort());
  for (const [name, want] of Object.entries(truth)) {
    const a = await f.get(name);
    assert.equal(a.shape, want.shape, name);
    assert.equal(f.info(name).shape, want.shape, name);
    assert.ok(bytesOf(a).equals(Buffer.from(want.raw, 'base64')), `${name}: bytes`);
    const family = a.dtype.mlFloat || a.dtype.realBytes === 2 ? Array.from(toFloat32(a).data) : null;
    if (family) assert.equal(family, want.values, `${name}: values`);
  }
  assert.is(f.info('bf16').dtype.name, 'bfloat16');
  assert.is(f.info('f8e4m3').dtype.name, 'float8_e4m3fn');
  assert.is(f.info('c64').dtype.str, '<c8');
  assert.is(f.storedDType('bf16'), 'BF16');
  await f.close();
  assert.is((await npyErrorOf(() => f.get('f32'))).code, 'CLOSED');
});

test('blocking reads: openSafetensorsSync and bytes in memory give the same arrays', async () => {
  const f = openSafetensorsSync(file('all.safetensors'));
  const fromBytes = await openAnywhere(readFileSync(file('all.safetensors')));
  for (const name of f.names) {
    assert.ok(bytesOf(f.getSync(name)).equals(Buffer.from(truth[name].raw, 'base64')), name);
    assert.ok(bytesOf(fromBytes.getSync(name)).equals(Buffer.from(truth[name].raw, 'base64')), name);
  }
  const typed = f.getSync('f32', { expect: '<f4' });
  assert.ok(typed.data instanceof Float32Array);
  const wrong = await npyErrorOf(() => f.getSync('f32', { expect: '<i4' }));
  assert.is(wrong.code, 'UNEXPECTED_DTYPE');
  const missing = await npyErrorOf(() => f.getSync('nope'));
  assert.is(missing.code, 'NPZ_KEY');
  assert.match(missing.message, /'bf16'/);
  f[Symbol.dispose]();
});

test('written files: byte for byte what safetensors writes, and loaded by it with the same values', async () => {
  const f = openSafetensorsSync(file('all.safetensors'));
  const arrays = f.getAllSync();
  f[Symbol.dispose]();
  await saveSafetensors(file('ours.safetensors'), arrays, { metadata: { format: 'pt' } });
  assert.ok(readFileSync(file('ours.safetensors')).equals(readFileSync(file('all.safetensors'))), 'the same bytes as safetensors.torch.save_file');
  // From plain values and typed data, Fortran order included: what safetensors.numpy reads back.
  const { arrayFromValues, transpose } = await import('@npyts/core');
  const m = transpose(
    arrayFromValues(
      [
        [1, 2, 3],
        [4, 5, 6],
      ],
      '<f8',
    ),
  );
  saveSafetensorsSync(file('f.safetensors'), { m, i: { data: new Int32Array([7, -8]) } });
  const back = JSON.parse(
    await pythonAsync(`from safetensors.numpy import load_file
d = load_file(${JSON.stringify(file('f.safetensors'))})
print(json.dumps({k: v.tolist() for k, v in d.items()}))`),
  );
  assert.equal(back, {
    m: [
      [1, 4],
      [2, 5],
      [3, 6],
    ],
    i: [7, -8],
  });
  assert.ok(Buffer.from(encodeSafetensors({ m, i: { data: new Int32Array([7, -8]) } })).equals(readFileSync(file('f.safetensors'))));
  // Refused before anything is written.
  for (const [tensors, options, code] of [
    [{ s: arrayFromValues(['a'], '<U1') }, {}, 'NO_COUNTERPART'],
    [{ __metadata__: m }, {}, 'BAD_OPTION'],
    [{ m }, { metadata: { n: 1 } }, 'BAD_OPTION'],
  ]) {
    const e = await npyErrorOf(() => saveSafetensors(file('refused.safetensors'), tensors, options));
    assert.is(e.code, code);
  }
  assert.throws(() => readFileSync(file('refused.safetensors')));
});

test('a sharded set through its index: every tensor from its shard; shards outside the folder and index lies refused', async () => {
  await pythonAsync(`
import torch
from safetensors.torch import save_file
torch.manual_seed(1)
parts = [{'a.weight': torch.randn(4, 3), 'a.bias': torch.randn(4)}, {'b.weight': torch.randn(2, 4).bfloat16()}, {'c': torch.arange(6)}]
wm = {}
for i, p in enumerate(parts):
    name = f'model-{i + 1:05d}-of-00003.safetensors'
    save_file(p, ${JSON.stringify(dir)} + '/' + name, metadata={'format': 'pt'})
    wm.update({k: name for k in p})
json.dump({'metadata': {'total_size': 100}, 'weight_map': wm}, open(${JSON.stringify(file('model.safetensors.index.json'))}, 'w'))
json.dump({'weight_map': {'a.weight': '../model-00001-of-00003.safetensors'}}, open(${JSON.stringify(file('escape.index.json'))}, 'w'))
json.dump({'weight_map': {'zz': 'model-00001-of-00003.safetensors'}}, open(${JSON.stringify(file('lie.index.json'))}, 'w'))
from safetensors.torch import load_file
out = {}
for p in wm.values(): out.update({k: v.float().reshape(-1).tolist() if v.is_floating_point() else v.reshape(-1).tolist() for k, v in load_file(${JSON.stringify(dir)} + '/' + p).items()})
json.dump(out, open(${JSON.stringify(file('sharded.json'))}, 'w'))
`);
  const want = JSON.parse(readFileSync(file('sharded.json'), 'utf8'));
  const w = await openWeights(file('model.safetensors.index.json'));
  assert.is(w.format, 'safetensors-sharded');
  assert.equal(w.metadata, { total_size: 100 });
  assert.equal([...w.names].sort(), Object.keys(want).sort());
  const all = await loadWeights(file('model.safetensors.index.json'));
  for (const [name, values] of Object.entries(want)) {
    const a = all.get(name);
    const got = a.dtype.mlFloat || a.dtype.realBytes === 4 ? Array.from(toFloat32(a).data) : Array.from(a.data, Number);
    assert.equal(got, values, name);
  }
  assert.equal((await w.info('b.weight')).shape, [2, 4]);
  await w.close();
  assert.is((await npyErrorOf(() => openWeights(file('escape.index.json')))).code, 'UNSAFE_PATH');
  // Shards are opened when a call needs them (issue 55): the lie is found by the first read of that shard.
  const lie = await openWeights(file('lie.index.json'));
  assert.is((await npyErrorOf(() => lie.get('zz'))).code, 'BAD_SAFETENSORS');
  assert.is((await npyErrorOf(() => lie.info('zz'))).code, 'BAD_SAFETENSORS');
  await lie.close();
  // An index given as bytes has no folder to find its shards in.
  assert.is((await npyErrorOf(() => openWeightsAnywhere(readFileSync(file('model.safetensors.index.json'))))).code, 'BAD_OPTION');
});

test('hostile headers: refused where safetensors refuses them; a key written twice refused though safetensors takes the last', async () => {
  const header = (json, { data = 8, length } = {}) => {
    const h = Buffer.from(json);
    const b = Buffer.alloc(8 + h.length + data);
    b.writeBigUInt64LE(BigInt(length ?? h.length), 0);
    h.copy(b, 8);
    return b;
  };
  const t = (dtype, shape, begin, end) => `{"dtype":"${dtype}","shape":${JSON.stringify(shape)},"data_offsets":[${begin},${end}]}`;
  const cases = {
    length_past_end: [header(`{"a":${t('F32', [2], 0, 8)}}`, { length: 10 ** 6 }), 'BAD_SAFETENSORS'],
    // The reference says 'header too large' before it compares the length with the file.
    length_2_63: [header(`{"a":${t('F32', [2], 0, 8)}}`, { length: 2n ** 63n }), 'HEADER_TOO_LARGE'],
    overlapping: [header(`{"a":${t('F32', [2], 0, 8)},"b":${t('F32', [1], 4, 8)}}`), 'BAD_SAFETENSORS'],
    gap: [header(`{"a":${t('F32', [1], 0, 4)},"b":${t('F32', [1], 8, 12)}}`, { data: 12 }), 'BAD_SAFETENSORS'],
    shape_lies: [header(`{"a":${t('F32', [3], 0, 8)}}`), 'BAD_SAFETENSORS'],
    shape_overflows: [header(`{"a":${t('F32', [4294967296, 4294967296], 0, 0)}}`, { data: 0 }), 'BAD_SAFETENSORS'],
    unknown_dtype: [header(`{"a":${t('Q32', [2], 0, 8)}}`), 'BAD_SAFETENSORS'],
    negative_dim: [header(`{"a":${t('F32', [-2], 0, 8)}}`), 'BAD_SAFETENSORS'],
    metadata_not_strings: [header(`{"__metadata__":{"k":1},"a":${t('F32', [2], 0, 8)}}`), 'BAD_SAFETENSORS'],
    not_json: [header(`{"a":${t('F32', [2], 0, 8)}} x`), 'BAD_SAFETENSORS'],
    not_utf8: [Buffer.concat([Buffer.from([4, 0, 0, 0, 0, 0, 0, 0]), Buffer.from([0x7b, 0xff, 0x7d, 0x7d])]), 'BAD_SAFETENSORS'],
    data_past_tensors: [header(`{"a":${t('F32', [2], 0, 8)}}`, { data: 12 }), 'BAD_SAFETENSORS'],
    cut_short: [header(`{"a":${t('F32', [2], 0, 8)}}`, { data: 4 }), 'DATA_TRUNCATED'],
    too_small: [Buffer.from([1, 0]), 'BAD_SAFETENSORS'],
    duplicate_key: [header(`{"a":${t('F32', [2], 0, 8)},"\\u0061":${t('F32', [2], 0, 8)}}`), 'BAD_SAFETENSORS'],
  };
  const paths = {};
  for (const [name, [bytes]] of Object.entries(cases)) writeFileSync((paths[name] = file(`hostile-${name}.safetensors`)), bytes);
  const reference = JSON.parse(
    await pythonAsync(`from safetensors import safe_open
out = {}
for k, p in json.loads(sys.argv[1] if len(sys.argv) > 1 else ${JSON.stringify(JSON.stringify(paths))}).items():
    try:
        with safe_open(p, 'np') as f:
            [f.get_tensor(n) for n in f.keys()]
        out[k] = 'loads'
    except Exception as e:
        out[k] = 'refuses'
print(json.dumps(out))`),
  );
  for (const [name, [, code]] of Object.entries(cases)) {
    // The reference refuses each of these, except the key written twice (it keeps the last).
    assert.is(reference[name], name === 'duplicate_key' ? 'loads' : 'refuses', `safetensors on ${name}`);
    const e = await npyErrorOf(() => openSafetensors(paths[name]));
    assert.ok(e instanceof NpyError, `${name}: ${e}`);
    assert.is(e.code, code, `${name}: ${e.message}`);
    assert.ok(e.message.includes(paths[name]), `${name}: the message names the file`);
  }
});

test('openWeights tells files by their bytes: .npz, .safetensors; a plain pickle is refused with the fix', async () => {
  await saveNpz(file('w.npz'), { a: { data: new Float32Array([1, 2]) } });
  writeFileSync(file('w-as-bin'), readFileSync(file('all.safetensors')));
  const z = await openWeights(file('w.npz'));
  assert.is(z.format, 'npz');
  assert.equal(Array.from((await z.get('a', { expect: '<f4' })).data), [1, 2]);
  assert.equal((await z.info('a')).shape, [2]);
  const s = await openWeights(file('w-as-bin'));
  assert.is(s.format, 'safetensors');
  await s.close();
  await z.close();
  // A plain pickle (torch's legacy format, a pickle too, is read: test/torch/torch-round-four).
  await pythonAsync(`import pickle; pickle.dump([1.0, 2.0], open(${JSON.stringify(file('plain.pkl'))}, 'wb'), protocol=2)`);
  const { saveNpySync } = await import('@npyts/core/node');
  saveNpySync(file('one.npy'), { data: new Float32Array([1]) });
  const npy = await npyErrorOf(() => openWeights(file('one.npy')));
  assert.is(npy.code, 'BAD_MAGIC');
  assert.match(npy.message, /loadNpy/);
  const legacy = await npyErrorOf(() => openWeights(file('plain.pkl')));
  assert.is(legacy.code, 'BAD_MAGIC');
  assert.match(legacy.message, /torch\.save/);
});

test('a remote .safetensors: one tensor moves that tensor, the header and at most 64 KiB more', async () => {
  await pythonAsync(`
import torch
from safetensors.torch import save_file
torch.manual_seed(2)
save_file({f'layer{i}.weight': torch.randn(512, 1024) for i in range(8)}, ${JSON.stringify(file('remote.safetensors'))})
from safetensors import safe_open
with safe_open(${JSON.stringify(file('remote.safetensors'))}, 'pt') as f:
    f.get_tensor('layer5.weight')[100:103, :4].numpy().tofile(${JSON.stringify(file('rows.f32'))})
`);
  const server = await startNginx(dir);
  try {
    const url = `${server.base}/remote.safetensors`;
    const f = await openAnywhere(url);
    const { dataStart } = { dataStart: f.header('layer0.weight').dataOffset };
    const w = await f.get('layer5.weight', { expect: '<f4' });
    const want = new Float32Array(new Uint8Array(readFileSync(file('rows.f32'))).buffer);
    assert.equal(Array.from(w.data.subarray(100 * 1024, 100 * 1024 + 4)), Array.from(want.subarray(0, 4)));
    const moved = f.source.stats.bytes;
    assert.ok(moved <= 512 * 1024 * 4 + dataStart + (64 << 10), `moved ${moved} bytes`);
    // A region of one tensor moves only its rows.
    const before = f.source.stats.bytes;
    const rows = await f.openTensor('layer5.weight').read([100, 0], [3, 1024]);
    assert.equal(Array.from(rows.data.subarray(1024, 1028)), Array.from(want.subarray(4, 8)));
    assert.ok(f.source.stats.bytes - before <= 3 * 4096 + (64 << 10));
    await f.close();
    // And through openWeights, the same values and the same bound (every body counted by a fetch hook).
    let hooked = 0;
    const counting = async (href, init) => {
      const r = await fetch(href, init);
      const body = new Uint8Array(await r.arrayBuffer());
      hooked += body.length;
      return new Response(body, { status: r.status, headers: r.headers });
    };
    const viaWeights = await openWeightsAnywhere(url, { fetch: counting });
    const one = await viaWeights.get('layer5.weight');
    assert.is(one.size, 512 * 1024);
    assert.ok(hooked <= 512 * 1024 * 4 + dataStart + (64 << 10) + 64, `openWeights moved ${hooked} bytes`);
    await viaWeights.close();
    const w2 = await openWeightsAnywhere(url);
    assert.equal(Array.from((await w2.get('layer5.weight')).data.subarray(100 * 1024, 100 * 1024 + 4)), Array.from(want.subarray(0, 4)));
    // An aborted read rejects with the signal's reason.
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    let aborted = null;
    try {
      await w2.get('layer1.weight', { signal: controller.signal });
    } catch (e) {
      aborted = e;
    }
    assert.is(aborted?.message, 'stop');
    await w2.close();
    // A sharded set by URL: its shards are read from beside the index, by range.
    const shardedValues = JSON.parse(readFileSync(file('sharded.json'), 'utf8'));
    const sharded = await openWeightsAnywhere(`${server.base}/model.safetensors.index.json`);
    assert.is(sharded.format, 'safetensors-sharded');
    assert.equal(Array.from(toFloat32(await sharded.get('b.weight')).data), shardedValues['b.weight']);
    await sharded.close();
  } finally {
    server.stop();
  }
});

// Three tensors of 24 KB, 1.2 MB and 8 MB as safetensors writes them (the first two read together, the last alone).
const progressFile = file('progress.safetensors');
await pythonAsync(`
import torch
from safetensors.torch import save_file
save_file({'a': torch.arange(6000, dtype=torch.float32), 'b': torch.arange(300000, dtype=torch.float32), 'c': torch.ones(2000000)}, ${JSON.stringify(progressFile)})
`);

test('progress: loadWeights and getAll tell each tensor as it arrives, never going back, ending at the total', async () => {
  const { statSync } = await import('node:fs');
  const seen = [];
  const all = await loadWeights(progressFile, { onProgress: (p) => seen.push({ ...p }) });
  const total = 9224000; // the tensors' bytes: the file less its header
  assert.is(total, statSync(progressFile).size - 8 - Number(readFileSync(progressFile).readBigUInt64LE(0)));
  // Tensors are read a few at a time, so they arrive in any order: each is told once, as it arrives,
  // the bytes growing by exactly its size, never going back, ending at the total.
  const sizes = { a: 24000, b: 1200000, c: 8000000 };
  assert.equal(seen.map((p) => p.tensor).sort(), ['a', 'b', 'c']);
  let before = 0;
  for (const p of seen) {
    assert.equal([p.bytes, p.total], [before + sizes[p.tensor], total], p.tensor);
    before = p.bytes;
  }
  assert.is(before, total);
  assert.equal([...all.keys()], ['a', 'b', 'c']);
  // openWeights' onProgress is the default of every later getAll; get of one tensor reports nothing.
  const later = [];
  const w = await openWeights(progressFile, { onProgress: (p) => later.push(p.tensor) });
  await w.get('a');
  assert.equal(later, []);
  await w.getAll();
  assert.equal(later.sort(), ['a', 'b', 'c']);
  await w.close();
  // A .npz (its own reader's getAll) reports the same way.
  await saveNpz(file('progress.npz'), { x: { data: new Float32Array(3) }, y: { data: new Float64Array(5) } });
  const npz = [];
  await loadWeights(file('progress.npz'), { onProgress: (p) => npz.push([p.tensor, p.bytes, p.total]) });
  assert.equal(npz.map((p) => p[0]).sort(), ['x', 'y']);
  let npzBefore = 0;
  for (const [name, bytes, npzTotal] of npz) {
    assert.equal([bytes, npzTotal], [npzBefore + { x: 12, y: 40 }[name], 52], name);
    npzBefore = bytes;
  }
  assert.is(npzBefore, 52);
  assert.is((await npyErrorOf(() => openWeights(progressFile, { onProgress: 'yes' }))).code, 'BAD_OPTION');
});

test('progress: an abort halfway rejects with AbortError and nothing is read after it; a file cut mid-load names the tensor', async () => {
  const { copyFileSync, truncateSync, statSync } = await import('node:fs');
  const controller = new AbortController();
  const seen = [];
  const w = await openWeights(progressFile);
  const e = await w
    .getAll({
      signal: controller.signal,
      onProgress: (p) => {
        seen.push(p.tensor);
        controller.abort();
      },
    })
    .catch((x) => x);
  assert.is(e?.name, 'AbortError');
  await new Promise((wake) => setTimeout(wake, 20));
  assert.equal(seen, ['a']); // nothing still in flight reported after the rejection
  await w.close();
  // Cut short after it was opened: the one it cuts is named, and never reported as arrived.
  copyFileSync(progressFile, file('cut.safetensors'));
  const cut = await openWeights(file('cut.safetensors'));
  truncateSync(file('cut.safetensors'), statSync(progressFile).size - 4000000);
  const arrived = [];
  const err = await npyErrorOf(() => cut.getAll({ onProgress: (p) => arrived.push(p.tensor) }));
  assert.is(err.code, 'DATA_TRUNCATED');
  assert.match(err.message, /'c'/);
  assert.ok(!arrived.includes('c') && arrived.every((t) => t === 'a' || t === 'b'), String(arrived));
  await cut.close();
});
test.run();
