// safetensors (and torch.save) round four, against the real writers: the narrow floats the reference
// defines and npyts refused (F8_E8M0, F8_E4M3FNUZ, F8_E5M2FNUZ, F4; torch's fnuz, e8m0fnu) read with
// ml_dtypes' values; a tensor npyts cannot read (F6, torch's complex32 and float4_e2m1fn_x2) listed and
// refused only where it is read, and loadWeights naming every such tensor at once; a header length past
// the reference's 100 MB refused without reading it (a sparse file, peak memory measured); a file of
// 100 000 tensors opened.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { closeSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { toFloat32 } from '@npyts/core';
import { loadWeights, openSafetensorsSync, openWeights } from '@npyts/core/node';
import { pythonAsync, scratch } from '../helpers/numpy.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';

/** The NpyError `work` fails with, checked to have `code`. */
async function refused(work, code) {
  const e = await npyErrorOf(work);
  assert.is(e.code, code, e.message);
  return e;
}

const dir = scratch('npyts-st-four-');
const file = (name) => join(dir, name);

const floats = (name) => {
  const b = readFileSync(file(name));
  return Array.from(new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4));
};
const same = (got, want) => got.length === want.length && got.every((x, i) => Object.is(x, want[i]) || (Number.isNaN(x) && Number.isNaN(want[i])));

test("F8_E8M0, F8_E4M3FNUZ, F8_E5M2FNUZ and F4 written by safetensors.torch read with ml_dtypes' values", async () => {
  await pythonAsync(`
import torch, ml_dtypes as m
from safetensors.torch import save_file
torch.manual_seed(1)
x = torch.randn(3, 8) * 30
t = {
  'e4m3fnuz': x.to(torch.float8_e4m3fnuz),
  'e5m2fnuz': (x * 100).to(torch.float8_e5m2fnuz),
  'e8m0': (x.abs() + 1e-3).to(torch.float8_e8m0fnu),
}
# float4_e2m1fn_x2: torch packs two float4s a byte, the first in the low four bits (c10's
# Float4_e2m1fn_x2.h); torch has no conversion, so the bytes come from ml_dtypes' float4_e2m1fn.
f4 = (x.numpy() / 5).astype(m.float4_e2m1fn)
b = f4.view(np.uint8)
t['f4'] = torch.from_numpy(b[:, 0::2] | (b[:, 1::2] << 4)).view(torch.float4_e2m1fn_x2)
save_file(t, '${file('narrow.safetensors')}')
for k in ['e4m3fnuz', 'e5m2fnuz', 'e8m0']:
    t[k].view(torch.uint8).numpy().view(getattr(m, 'float8_' + {'e8m0': 'e8m0fnu'}.get(k, k))).astype(np.float32).tofile('${dir}/' + k + '.f32')
    # ml_dtypes and torch agree on every value.
    assert np.array_equal(t[k].float().numpy().reshape(-1), np.fromfile('${dir}/' + k + '.f32', np.float32), equal_nan=True)
f4.astype(np.float32).tofile('${dir}/f4.f32')
`);
  const w = await openWeights(file('narrow.safetensors'));
  const want = { e4m3fnuz: 'float8_e4m3fnuz', e5m2fnuz: 'float8_e5m2fnuz', e8m0: 'float8_e8m0fnu', f4: 'float4_e2m1fn' };
  for (const [name, dtype] of Object.entries(want)) {
    const info = await w.info(name);
    assert.is(info.dtype.name, dtype);
    // F4's shape counts elements, as safetensors writes it (torch's [3, 4] bytes are [3, 8] float4s).
    assert.equal(info.shape, [3, 8]);
    const a = await w.get(name);
    assert.is(a.dtype.name, dtype);
    assert.ok(same(Array.from(toFloat32(a).data), floats(`${name}.f32`)), name);
  }
  const sync = openSafetensorsSync(file('narrow.safetensors'));
  assert.ok(same(Array.from(toFloat32(sync.getSync('f4')).data), floats('f4.f32')));
  // Region reads do not unpack: refused, naming get().
  assert.match((await refused(() => sync.openTensor('f4'), 'NO_COUNTERPART')).message, /get\(\) it whole/);
  sync.close();
  await w.close();
});

test('a tensor npyts cannot read (F6) is listed with its dtype and refused only by get; loadWeights names every one', async () => {
  await pythonAsync(`
import json, struct
h = {'w': {'dtype': 'F32', 'shape': [2], 'data_offsets': [0, 8]},
     'a': {'dtype': 'F6_E2M3', 'shape': [4], 'data_offsets': [8, 11]},
     'b': {'dtype': 'F6_E3M2', 'shape': [2, 4], 'data_offsets': [11, 17]}}
j = json.dumps(h).encode()
open('${file('f6.safetensors')}', 'wb').write(struct.pack('<Q', len(j)) + j + np.array([1.5, -2], '<f4').tobytes() + bytes(9))
from safetensors import safe_open
with safe_open('${file('f6.safetensors')}', 'numpy') as f:
    assert sorted(f.keys()) == ['a', 'b', 'w']   # the reference opens it
`);
  const w = await openWeights(file('f6.safetensors'));
  assert.equal([...w.names], ['w', 'a', 'b']);
  const info = await w.info('a');
  assert.is(info.dtype.name, 'float6_e2m3fn');
  assert.equal(info.shape, [4]);
  assert.match(info.unreadable, /6-bit/);
  assert.is((await w.info('w')).unreadable, undefined);
  assert.equal(Array.from((await w.get('w')).data), [1.5, -2]);
  const e = await refused(() => w.get('b'), 'NO_COUNTERPART');
  assert.match(e.message, /'b' is F6_E3M2/);
  const all = await refused(() => loadWeights(file('f6.safetensors')), 'NO_COUNTERPART');
  assert.match(all.message, /2 of the 3 tensors cannot be read \('a': .*F6_E2M3.*; 'b': .*F6_E3M2/);
  assert.not.match(all.message, /'w'/);
  await w.close();
});

test("torch.save: float8_e4m3fnuz/e5m2fnuz/e8m0fnu read with torch's values; complex32 and float4_e2m1fn_x2 listed, refused by get, all named by loadWeights", async () => {
  await pythonAsync(`
import torch
torch.manual_seed(2)
x = torch.randn(5) * 20
t = {'fnuz4': x.to(torch.float8_e4m3fnuz), 'fnuz5': x.to(torch.float8_e5m2fnuz), 'e8m0': x.abs().to(torch.float8_e8m0fnu),
     'c32': torch.randn(3, dtype=torch.complex64).to(torch.complex32),
     'fp4': torch.randint(0, 255, (2, 3), dtype=torch.uint8).view(torch.float4_e2m1fn_x2), 'ok': torch.arange(3.0)}
torch.save(t, '${file('narrow.pt')}')
for k in ['fnuz4', 'fnuz5', 'e8m0']:
    t[k].float().numpy().tofile('${dir}/pt-' + k + '.f32')
`);
  const w = await openWeights(file('narrow.pt'));
  assert.equal([...w.names].sort(), ['c32', 'e8m0', 'fnuz4', 'fnuz5', 'fp4', 'ok']);
  for (const [k, name] of [
    ['fnuz4', 'float8_e4m3fnuz'],
    ['fnuz5', 'float8_e5m2fnuz'],
    ['e8m0', 'float8_e8m0fnu'],
  ]) {
    const a = await w.get(k);
    assert.is(a.dtype.name, name);
    assert.ok(same(Array.from(toFloat32(a).data), floats(`pt-${k}.f32`)), k);
  }
  assert.equal(Array.from((await w.get('ok')).data), [0, 1, 2]);
  assert.match((await refused(() => w.get('c32'), 'NO_COUNTERPART')).message, /torch\.complex32/);
  const all = await refused(() => loadWeights(file('narrow.pt')), 'NO_COUNTERPART');
  assert.match(all.message, /2 of the 6 tensors cannot be read/);
  assert.match(all.message, /'c32'.*torch\.complex32/);
  assert.match(all.message, /'fp4'.*torch\.float4_e2m1fn_x2/);
  await w.close();
});

test('a header length over 100 MB (a sparse 1 GiB file) is refused as the reference refuses it, without reading it', async () => {
  const path = file('sparse.safetensors');
  const fd = openSync(path, 'w');
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(1n << 30n);
  writeSync(fd, length);
  ftruncateSync(fd, (1 << 30) + 64);
  closeSync(fd);
  const reference = await pythonAsync(`
from safetensors import safe_open
try:
    safe_open('${path}', 'numpy')
except Exception as e:
    print(e)`);
  assert.match(reference, /header too large/);
  // In a process of its own, to measure its peak memory: reading the header would take 1 GiB.
  const here = dirname(fileURLToPath(import.meta.url));
  const script = `import('@npyts/core/node').then(async ({ openWeights }) => {
    try { await openWeights(${JSON.stringify(path)}); console.log('opened'); } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }
  })`;
  const run = spawnSync(process.execPath, ['-r', join(here, '..', 'helpers', 'peak-rss.cjs'), '--input-type=module', '-e', script], {
    cwd: here,
    encoding: 'utf8',
  });
  const { code, message } = JSON.parse(run.stdout.trim());
  assert.is(code, 'HEADER_TOO_LARGE');
  assert.match(message, /header length says 1073741824 bytes; safetensors refuses headers over 100000000 bytes/);
  const peak = Number(/peak-rss: (\d+)/.exec(run.stderr)[1]);
  assert.ok(peak < 300 * 2 ** 20, `peak ${peak} bytes`);
});

test('100 000 tensors: every one listed and read, as safetensors wrote them', async () => {
  await pythonAsync(`
from safetensors.numpy import save_file
save_file({f'layer.{i}.w': np.full(2, i, '<f4') for i in range(100000)}, '${file('many.safetensors')}')
`);
  const w = await openWeights(file('many.safetensors'));
  assert.is(w.names.length, 100000);
  assert.equal(Array.from((await w.get('layer.99999.w')).data), [99999, 99999]);
  await w.close();
  const all = await loadWeights(file('many.safetensors'));
  assert.is(all.size, 100000);
  assert.equal(Array.from(all.get('layer.12345.w').data), [12345, 12345]);
});

test.run();
