// The CLI over weight files (issue 41): `info` lists the tensors of a torch.save file and a
// .safetensors file as PyTorch names them, `show` prints one, `convert` writes what numpy and
// safetensors read with PyTorch's values; errors are one line naming the file.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pythonAsync, runCli, scratch } from '../helpers/numpy.mjs';

const dir = scratch('npyts-cli-weights-');
const file = (name) => join(dir, name);
const keys = JSON.parse(
  await pythonAsync(`import torch
from safetensors.torch import save_file
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Linear(4, 2))
sd = m.state_dict()
sd['half'] = torch.randn(3).bfloat16()
torch.save({'model': sd, 'epoch': 3}, ${JSON.stringify(file('ck.pt'))})
save_file({k: v.contiguous() for k, v in sd.items()}, ${JSON.stringify(file('m.safetensors'))}, metadata={'format': 'pt'})
print(json.dumps(list(sd.keys())))`),
);

test('info lists every tensor with its dtype and shape, and the metadata; --json as one document', async () => {
  const pt = await runCli(['info', file('ck.pt')]);
  assert.is(pt.code, 0, pt.stderr);
  const lines = pt.stdout.trim().split('\n');
  assert.equal(
    lines.slice(0, -1).map((l) => l.slice(file('ck.pt').length + 1).split(':')[0]),
    keys.map((k) => `model.${k}`),
  );
  assert.match(
    lines.find((l) => l.includes(':model.0.weight:')),
    /'<f4' \(float32, .*\), shape \(4, 3, 3, 3\), 432 data bytes/,
  );
  assert.match(
    lines.find((l) => l.includes(':model.half:')),
    /\(bfloat16, /,
  );
  assert.match(lines.at(-1), new RegExp(`torch, ${keys.length} tensors; metadata: epoch=3`));
  const st = await runCli(['info', '--json', file('m.safetensors')]);
  assert.is(st.code, 0, st.stderr);
  const doc = JSON.parse(st.stdout);
  assert.is(doc.format, 'safetensors');
  assert.equal(doc.metadata, { format: 'pt' });
  assert.equal(doc.tensors.map((t) => t.name).sort(), [...keys].sort());
  assert.equal(doc.tensors.find((t) => t.name === '2.weight').shape, [2, 4]);
});

test('show prints one tensor as numpy (with ml_dtypes) prints it', async () => {
  const r = await runCli(['show', `${file('ck.pt')}:model.half`]);
  assert.is(r.code, 0, r.stderr);
  const want = (
    await pythonAsync(`import torch, ml_dtypes
print(repr(torch.load(${JSON.stringify(file('ck.pt'))})['model']['half'].view(torch.int16).numpy().view(ml_dtypes.bfloat16)))`)
  ).trim();
  assert.is(r.stdout.split('\n').slice(1).join('\n').trim(), want);
});

test('convert writes a .npz numpy loads and a .safetensors safetensors loads, with the values PyTorch holds', async () => {
  for (const args of [
    ['convert', file('ck.pt'), file('ck.npz')],
    ['convert', file('m.safetensors'), file('again.safetensors')],
    ['convert', `${file('ck.pt')}:model.0.weight`, file('w.npy')],
  ]) {
    const r = await runCli(args);
    assert.is(r.code, 0, r.stderr);
  }
  const same = JSON.parse(
    await pythonAsync(`import torch
sd = torch.load(${JSON.stringify(file('ck.pt'))})['model']
z = np.load(${JSON.stringify(file('ck.npz'))})
from safetensors.torch import load_file as load_torch
st = load_torch(${JSON.stringify(file('again.safetensors'))})
ok = all(np.array_equal(z['model.' + k], v.numpy()) for k, v in sd.items() if v.dtype != torch.bfloat16)
ok = ok and all(torch.equal(st[k], v) for k, v in sd.items())
ok = ok and np.array_equal(np.load(${JSON.stringify(file('w.npy'))}), sd['0.weight'].numpy())
print(json.dumps([ok, sorted(z.files) == sorted('model.' + k for k in sd)]))`),
  );
  assert.equal(same, [true, true]);
});

test('diff compares bfloat16 tensors with tolerances, as numpy does (with ml_dtypes)', async () => {
  const verdicts = JSON.parse(
    await pythonAsync(`import torch
from safetensors.torch import save_file
torch.manual_seed(1)
w = torch.randn(20).bfloat16()
save_file({'w': w}, ${JSON.stringify(file('bf-a.safetensors'))})
save_file({'w': w + 0.05}, ${JSON.stringify(file('bf-b.safetensors'))})
a, b = w.float().numpy(), (w + 0.05).float().numpy()
out = []
for atol in [0, 0.2]:
    try:
        np.testing.assert_allclose(a, b, atol=atol); out.append(0)
    except AssertionError:
        out.append(1)
print(json.dumps(out))`),
  );
  for (const [i, atol] of ['0', '0.2'].entries()) {
    const r = await runCli(['diff', '--atol', atol, file('bf-a.safetensors'), file('bf-b.safetensors')]);
    assert.is(r.code, verdicts[i], `--atol ${atol}: ${r.stdout}${r.stderr}`);
  }
});

test('diff compares weight files tensor by tensor, and one tensor with a .npy', async () => {
  for (const [args, code] of [
    [['diff', file('m.safetensors'), file('again.safetensors')], 0],
    [['diff', `${file('ck.pt')}:model.0.weight`, file('w.npy')], 0],
    [['diff', `${file('ck.pt')}:model.0.weight`, `${file('ck.pt')}:model.0.bias`], 1],
  ]) {
    const r = await runCli(args);
    assert.is(r.code, code, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
  }
});

test('errors are one line naming the file', async () => {
  const r = await runCli(['show', `${file('ck.pt')}:model.nope`]);
  assert.is(r.code, 1);
  assert.is(r.stderr.trim().split('\n').length, 1);
  assert.match(r.stderr, /^npyts: error: .*ck\.pt:model\.nope: no array 'model\.nope' in the checkpoint/);
});

test('info lists a tensor npyts cannot read (complex32, sparse) with the reason, and the others as usual', async () => {
  const path = file('unread.pt');
  await pythonAsync(`import torch
torch.save({'c32': torch.randn(3, dtype=torch.complex64).to(torch.complex32), 'sp': torch.eye(3).to_sparse(), 'ok': torch.arange(3.0)}, ${JSON.stringify(path)})`);
  const r = await runCli(['info', path]);
  assert.is(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.match(
    lines.find((l) => l.includes(':c32:')),
    /: not read: .*torch\.complex32/,
  );
  assert.match(
    lines.find((l) => l.includes(':sp:')),
    /: not read: .*sparse.*to_dense/,
  );
  assert.match(
    lines.find((l) => l.includes(':ok:')),
    /'<f4' \(float32, .*\), shape \(3,\), 12 data bytes$/,
  );
  const json = JSON.parse((await runCli(['info', '--json', path])).stdout);
  assert.match(json.tensors.find((t) => t.name === 'c32').unreadable, /complex32/);
});

test('info and show read a GGUF file: quantized tensors named with their ggml type, shown as gguf-py dequantizes them', async () => {
  const path = file('m.gguf');
  const q8 = JSON.parse(
    await pythonAsync(`import gguf
w = gguf.GGUFWriter(${JSON.stringify(path)}, 'llama')
w.add_uint32('answer', 42)
w.add_tensor('plain', np.arange(6, dtype=np.float32).reshape(2, 3))
rng = np.random.default_rng(0)
q = gguf.quants.quantize(rng.random((2, 32), dtype=np.float32), gguf.GGMLQuantizationType.Q8_0)
w.add_tensor('q', q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
r = gguf.GGUFReader(${JSON.stringify(path)})
t = [t for t in r.tensors if t.name == 'q'][0]
print(json.dumps(gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64).ravel().tolist()))`),
  );
  const info = await runCli(['info', path]);
  assert.is(info.code, 0, info.stderr);
  const lines = info.stdout.trim().split('\n');
  assert.match(lines[0], /:plain: '<f4' \(float32, .*\), shape \(2, 3\), 24 data bytes$/);
  assert.match(lines[1], /:q: '<f4' \(float32, .*\), shape \(2, 32\), 256 data bytes, stored as Q8_0 \(dequantized when read\)$/);
  assert.match(lines.at(-1), /gguf, 2 tensors; metadata: .*answer=42/);
  const json = JSON.parse((await runCli(['info', '--json', path])).stdout);
  assert.is(json.tensors.find((t) => t.name === 'q').quantization, 'Q8_0');
  const shown = await runCli(['show', '--json', `${path}:q`]);
  assert.is(shown.code, 0, shown.stderr);
  assert.equal(JSON.parse(shown.stdout).data.flat(), q8);
});

test("info of a GGUF's metadata: arrays as lists, in --json as gguf-py's field values; float32 printed as numpy prints it", async () => {
  const path = file('meta.gguf');
  const want = JSON.parse(
    await pythonAsync(`import gguf
w = gguf.GGUFWriter(${JSON.stringify(path)}, 'llama')
w.add_float32('eps', 1e-5)
w.add_float32('third', 1 / 3)
w.add_float64('eps64', 1e-5)
w.add_array('scores', [0.0, -1.0, 0.1, 1e-5, 3e38])
w.add_array('ids', [1, 2, 3])
w.add_array('tokens', ['<s>', 'a b', 'é'])
w.add_uint64('big', 2**63 + 5)
w.add_tensor('plain', np.arange(6, dtype=np.float32))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
r = gguf.GGUFReader(${JSON.stringify(path)})
out = {'contents': {}, 'text': {}}
for k in ['eps', 'third', 'eps64', 'scores', 'ids', 'tokens', 'big']:
    f = r.fields[k]
    v = f.contents()
    out['contents'][k] = str(v) if isinstance(v, int) and v > 2**53 else v
    t = f.types[-1]
    num = {gguf.GGUFValueType.FLOAT32: np.float32, gguf.GGUFValueType.FLOAT64: np.float64}.get(t)
    item = (lambda x: str(num(x))) if num else (lambda x: json.dumps(x, ensure_ascii=False) if isinstance(x, str) else str(x))
    out['text'][k] = '[' + ', '.join(item(x) for x in v) + ']' if isinstance(v, list) else item(v)
print(json.dumps(out))`),
  );
  const doc = JSON.parse((await runCli(['info', '--json', path])).stdout);
  for (const [k, v] of Object.entries(want.contents)) assert.equal(doc.metadata[k], v, k);
  const info = await runCli(['info', path]);
  assert.is(info.code, 0, info.stderr);
  const line = info.stdout.trim().split('\n').at(-1);
  assert.is(want.text.eps, '1e-05');
  for (const [k, text] of Object.entries(want.text)) assert.ok(line.includes(`, ${k}=${text}`), `${k}=${text} in ${line}`);
});

test("convert IN OUT.gguf --type: gguf-py's reader reads gguf.quants.quantize's bytes, llama.cpp's rule for what a block type cannot hold, a GGUF's metadata kept", async () => {
  const [st, src, out, again] = ['q-src.safetensors', 'q-src.gguf', 'q-out.gguf', 'q-again.gguf'].map(file);
  await pythonAsync(`import gguf
from safetensors.numpy import save_file
rng = np.random.default_rng(3)
save_file({'w': rng.standard_normal((4, 64), dtype=np.float32), 'b': rng.standard_normal(64, dtype=np.float32),
           'e': rng.standard_normal((3, 40)).astype(np.float16), 'i': np.arange(5, dtype=np.int32)}, ${JSON.stringify(st)})
w = gguf.GGUFWriter(${JSON.stringify(src)}, 'llama')
w.add_uint32('answer', 42)
w.add_float32('eps', 1e-5)
w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
w.add_tensor('t', rng.standard_normal((2, 64), dtype=np.float32))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()`);
  for (const args of [
    ['convert', st, out, '--type', 'q8_0'],
    ['convert', src, again, '--type', 'q4_0'],
  ]) {
    const r = await runCli(args);
    assert.is(r.code, 0, r.stderr);
  }
  const checked = JSON.parse(
    await pythonAsync(`import gguf
from safetensors.numpy import load_file
from gguf import GGMLQuantizationType as Q
def check(path, inputs, qtype):
    # llama.cpp's convert: 1-D tensors F32, rows that are not whole blocks F16, integers as they are.
    r = gguf.GGUFReader(path)
    got = []
    for t in r.tensors:
        x = inputs[t.name]
        want = f'I{x.dtype.itemsize * 8}' if x.dtype.kind == 'i' else 'F32' if x.ndim <= 1 else 'F16' if x.shape[-1] % 32 else qtype.name
        data = x if x.dtype.kind == 'i' else gguf.quants.quantize(x, Q[want])
        got.append([t.name, t.tensor_type.name == want, bytes(t.data) == data.tobytes()])
    return got, {k: [f.types[0].name, f.contents()] for k, f in r.fields.items() if not k.startswith('GGUF.')}
src = gguf.GGUFReader(${JSON.stringify(src)})
print(json.dumps([check(${JSON.stringify(out)}, load_file(${JSON.stringify(st)}), Q.Q8_0), check(${JSON.stringify(again)}, {t.name: np.array(t.data) for t in src.tensors}, Q.Q4_0), int(gguf.LlamaFileType.MOSTLY_Q4_0)]))`),
  );
  // In the order the .safetensors file holds them (its writer's: by dtype, then name).
  assert.equal(checked[0][0].sort(), [
    ['b', true, true],
    ['e', true, true],
    ['i', true, true],
    ['w', true, true],
  ]);
  assert.equal(checked[0][1], {});
  const [tensors, metadata] = checked[1];
  assert.equal(tensors, [['t', true, true]]);
  assert.equal(metadata.answer, ['UINT32', 42]);
  assert.equal(metadata.eps, ['FLOAT32', Math.fround(1e-5)]);
  assert.equal(metadata['general.architecture'], ['STRING', 'llama']);
  // Requantized, the file says its new type (llama.cpp reads general.file_type), as gguf-py numbers it.
  assert.equal(metadata['general.file_type'], ['UINT32', checked[2]]);
  const refused = await runCli(['convert', st, file('q.npz'), '--type', 'q8_0']);
  assert.is(refused.code, 2);
  assert.match(refused.stderr, /--type is for writing a \.gguf/);
  // Options of other outputs are refused, not ignored: a GGUF's and a .safetensors' layout is the format's.
  for (const [out, flag] of [
    [again, '--order'],
    [file('q.safetensors'), '--byteorder'],
    [again, '--compress'],
  ]) {
    const ignored = await runCli(['convert', st, out, flag, ...(flag === '--order' ? ['F'] : flag === '--byteorder' ? ['big'] : [])]);
    assert.is(ignored.code, 2, `${flag}: ${ignored.stderr}`);
    assert.match(ignored.stderr, new RegExp(`${flag} is not for writing`));
  }
});

test("what holds tensors is the format list's word (its entries' `tensors`), which the CLI and the tfjs adapter ask", async () => {
  const { formatOf, SNIFF_BYTES } = await import('@npyts/core');
  const { openNpzSync } = await import('@npyts/core/node');
  await pythonAsync(`import numpy as np, pickle
np.save(${JSON.stringify(file('one.npy'))}, np.arange(3))
np.savez(${JSON.stringify(file('two.npz'))}, a=np.arange(3))
pickle.dump([1, 2], open(${JSON.stringify(file('plain.pkl'))}, 'wb'), protocol=2)
# A dict's 8th byte is 0 at protocols 2 and 4, as a .safetensors header length's is: its 9th is not '{'.
pickle.dump({'a': 1}, open(${JSON.stringify(file('dict2.pkl'))}, 'wb'), protocol=2)
pickle.dump({'a': 1}, open(${JSON.stringify(file('dict4.pkl'))}, 'wb'), protocol=4)`);
  const holds = (name) => {
    const bytes = readFileSync(file(name));
    const format = formatOf(bytes.subarray(0, SNIFF_BYTES), bytes.length);
    if (typeof format.tensors !== 'function') return format.tensors ?? true;
    const zip = openNpzSync(file(name));
    try {
      return format.tensors(zip.entries.map((e) => e.name));
    } finally {
      zip.closeSync();
    }
  };
  assert.equal(['one.npy', 'plain.pkl', 'two.npz', 'ck.pt', 'm.safetensors'].map(holds), [false, false, false, true, true]);
  for (const name of ['dict2.pkl', 'dict4.pkl']) {
    const bytes = readFileSync(file(name));
    assert.is(bytes[7], 0, name);
    assert.is(formatOf(bytes.subarray(0, SNIFF_BYTES), bytes.length).name, 'pickle', name);
  }
  // The CLI reads each as the list says: the .npz by its members, the checkpoint by its tensors.
  const npz = await runCli(['info', file('two.npz')]);
  assert.is(npz.code, 0, npz.stderr);
  assert.match(npz.stdout, /two\.npz:a: /);
  assert.not.match(npz.stdout, /tensors?;|, 1 tensor/);
});

test.run();
