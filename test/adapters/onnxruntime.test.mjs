// @npyts/onnxruntime against onnxruntime (Python) and PyTorch: tensors of every mapped dtype through an
// Identity model in onnxruntime-node (values compared with what onnxruntime in Python returns for the
// same .npy), memory sharing, refusals; withWeights on exported models (see the second half).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { copyFileSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { createRequire } from 'node:module';
import { execFileSync, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import * as ort from 'onnxruntime-node';
import { checkSession, toOrtTensor, fromOrtTensor, withWeights } from '@npyts/onnxruntime';
import { NpyError, decodeNpy, decodeNpz, encodeNpz, memoryStore, parseDescr, NdArray, voidAsMlFloat } from '@npyts/core';
import { python, pythonAsync, scratch } from '../helpers/numpy.mjs';
import { refusedWith as refused } from '../helpers/refusal.mjs';
import { blocksOf, root } from '../packages/guide-blocks.mjs';
import { serveFiles } from '../helpers/serve-files.mjs';

const dir = scratch();

// One Identity model per ONNX type, an input .npy per case (C order, Fortran order, big-endian) and
// onnxruntime-python's output for it.
const cases = JSON.parse(
  python(`
import onnx, onnxruntime as rt, ml_dtypes
from onnx import helper, TensorProto
d = ${JSON.stringify(dir)}
def model(name, elem):
    g = helper.make_graph([helper.make_node('Identity', ['x'], ['y'])], 'id',
        [helper.make_tensor_value_info('x', elem, None)], [helper.make_tensor_value_info('y', elem, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 21)]); m.ir_version = 10
    onnx.save(m, f'{d}/{name}.onnx')
rng = np.random.default_rng(57)
types = {'float32': '<f4', 'float64': '<f8', 'float16': '<f2', 'int8': 'i1', 'int16': '<i2', 'int32': '<i4', 'int64': '<i8',
         'uint8': 'u1', 'uint16': '<u2', 'uint32': '<u4', 'uint64': '<u8', 'bool': '?'}
out = []
for t, descr in types.items():
    model(t, helper.np_dtype_to_tensor_dtype(np.dtype(descr)))
    if t == 'bool': a = rng.integers(0, 2, (3, 4)).astype('?')
    elif descr[-2] in 'iu': info = np.iinfo(descr); a = rng.integers(info.min, info.max, (3, 4), dtype=descr, endpoint=True)
    else: a = (rng.standard_normal((3, 4)) * 100).astype(descr); a.flat[0] = np.inf; a.flat[1] = -0.0
    variants = {'c': a, 'f': np.asfortranarray(a)}
    if a.dtype.itemsize > 1: variants['be'] = a.astype(a.dtype.newbyteorder('>'))
    for k, v in variants.items():
        np.save(f'{d}/{t}-{k}.npy', v)
        y = rt.InferenceSession(f'{d}/{t}.onnx').run(None, {'x': v.astype(v.dtype.newbyteorder('='))})[0]
        np.save(f'{d}/{t}-{k}-out.npy', np.ascontiguousarray(y))
        out.append({'type': t, 'variant': k})
model('string', TensorProto.STRING)
s = np.array([['a', 'héllo', ''], ['ünï', 'x' * 9, '日本']])
np.save(f'{d}/string-c.npy', s); np.save(f'{d}/string-f.npy', np.asfortranarray(s))
for k in 'cf':
    y = rt.InferenceSession(f'{d}/string.onnx').run(None, {'x': np.load(f'{d}/string-{k}.npy')})[0]
    np.save(f'{d}/string-{k}-out.npy', y.astype(str)); out.append({'type': 'string', 'variant': k})
b = (rng.standard_normal((2, 5)) * 1000).astype(ml_dtypes.bfloat16); np.save(f'{d}/bf16.npy', b)
np.save(f'{d}/bf16-f32.npy', b.astype(np.float32)); np.save(f'{d}/bf16-f16.npy', b.astype(np.float16))
e = rng.standard_normal((2, 5)).astype(ml_dtypes.float8_e4m3fn); np.save(f'{d}/f8.npy', e); np.save(f'{d}/f8-f16.npy', e.astype(np.float16))
np.save(f'{d}/bf16-big.npy', np.array([1e5], dtype=ml_dtypes.bfloat16))
print(json.dumps(out))
`),
);

const load = (name) => decodeNpy(readFileSync(join(dir, `${name}.npy`)));
// ml_dtypes saves its types as numpy void ('|V2'); the name says which one.
const loadMl = (name, ml) => {
  const a = load(name);
  const dt = voidAsMlFloat(a.dtype, ml);
  const data = dt.itemsize === 2 ? new Uint16Array(a.data.buffer, a.data.byteOffset, a.size) : a.data;
  return new NdArray(dt, a.shape, data, a.order);
};
const bytesOf = (a) => new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength);
const sessions = new Map();
async function identity(type, tensor) {
  if (!sessions.has(type)) sessions.set(type, await ort.InferenceSession.create(join(dir, `${type}.onnx`)));
  return (await sessions.get(type).run({ x: tensor })).y;
}

test('every dtype round-trips through an ORT Identity model as onnxruntime-python returns it', async () => {
  assert.ok(cases.length >= 30, `${cases.length} cases`);
  for (const { type, variant } of cases) {
    const a = load(`${type}-${variant}`);
    const t = toOrtTensor(a);
    assert.is(t.type, type, `${type}-${variant}`);
    assert.equal(t.dims, a.shape);
    const back = fromOrtTensor(await identity(type, t));
    const want = load(`${type}-${variant}-out`);
    assert.equal(back.shape, want.shape, `${type}-${variant}`);
    if (type === 'string') assert.equal(back.toList(), want.toList(), `${type}-${variant}`);
    else {
      assert.is(back.dtype.str, want.dtype.str, `${type}-${variant}`);
      assert.equal(bytesOf(back), bytesOf(want), `${type}-${variant}`);
    }
  }
});

test('C-order numeric arrays share memory both ways; Fortran order is copied', () => {
  for (const type of ['float32', 'float16', 'int64', 'uint8', 'bool']) {
    const a = load(`${type}-c`);
    const t = toOrtTensor(a);
    assert.ok(t.data === a.data, type);
    assert.ok(fromOrtTensor(t).data === t.data, type);
    const f = load(`${type}-f`);
    assert.is(f.order, 'F');
    assert.ok(toOrtTensor(f).data !== f.data, type);
  }
  assert.is(fromOrtTensor(toOrtTensor(load('float16-c'))).dtype.str, '<f2');
});

test('fromOrtTensor of 200 000 strings: the <U width numpy gives them (no spread of the lengths onto the stack)', () => {
  const n = 200_000;
  const strings = Array.from({ length: n }, (_, i) => 'ab'.repeat(i % 5) + (i === n - 1 ? 'é🙂' : ''));
  const want = python(`s = np.array(['ab' * (i % 5) + ('é🙂' if i == ${n} - 1 else '') for i in range(${n})]); print(s.dtype.str, s.shape[0])`).trim();
  const a = fromOrtTensor(new ort.Tensor('string', strings, [n]));
  assert.is(`${a.dtype.str} ${a.shape[0]}`, want);
  assert.is(a.get(n - 1), strings[n - 1]);
});

test("instanceof ort.Tensor: onnxruntime-node's own class under { Tensor }, in an ES module and in CommonJS", async () => {
  const a = load('float32-c');
  // The hazard: onnxruntime-node is CommonJS, its Tensor is onnxruntime-common's CommonJS copy, and
  // this ES module's toOrtTensor builds the ES copy. ORT runs either (it reads the fields).
  assert.not.ok(toOrtTensor(a) instanceof ort.Tensor, 'two copies of onnxruntime-common: the test would prove nothing');
  const t = toOrtTensor(a, { Tensor: ort.Tensor });
  assert.ok(t instanceof ort.Tensor);
  assert.is(t.data, a.data, 'still shares the memory');
  assert.equal(Array.from((await identity('float32', t)).data), Array.from(a.data));
  // CommonJS: one copy, with or without the option.
  const require = createRequire(import.meta.url);
  const cjsOrt = require('onnxruntime-node');
  const cjs = require('@npyts/onnxruntime');
  assert.ok(cjs.toOrtTensor(a) instanceof cjsOrt.Tensor);
  assert.ok(cjs.toOrtTensor(a, { Tensor: cjsOrt.Tensor }) instanceof cjsOrt.Tensor);
  assert.ok(cjs.toOrtTensor(a, { as: 'float32', Tensor: cjsOrt.Tensor }) instanceof cjsOrt.Tensor);
});

test('bfloat16 and float8 convert only when asked, as ml_dtypes converts them', () => {
  const b = loadMl('bf16', 'bfloat16');
  const err = (() => {
    try {
      toOrtTensor(b);
    } catch (e) {
      return e;
    }
  })();
  assert.instance(err, NpyError);
  assert.is(err.code, 'NO_COUNTERPART');
  assert.match(err.message, "{ as: 'float32' }");
  const f32 = toOrtTensor(b, { as: 'float32' });
  assert.is(f32.type, 'float32');
  assert.equal(bytesOf(fromOrtTensor(f32)), bytesOf(load('bf16-f32')));
  const f16 = toOrtTensor(b, { as: 'float16' });
  assert.is(f16.type, 'float16');
  assert.equal(bytesOf(fromOrtTensor(f16)), bytesOf(load('bf16-f16')));
  assert.equal(bytesOf(fromOrtTensor(toOrtTensor(loadMl('f8', 'float8_e4m3fn'), { as: 'float16' }))), bytesOf(load('f8-f16')));
  assert.throws(
    () => toOrtTensor(loadMl('bf16-big', 'bfloat16'), { as: 'float16' }),
    (e) => e.code === 'NOT_REPRESENTABLE' && /float16/.test(e.message),
  );
});

test('dtypes ORT has no type for are refused by name', () => {
  for (const descr of ['<c8', '<M8[s]', '|V4', '<f16' /* not every machine */]) {
    let dt;
    try {
      dt = parseDescr(descr);
    } catch {
      continue;
    }
    const a = new NdArray(dt, [0], dt.kind === 'c' ? new Float32Array(0) : dt.kind === 'M' ? new BigInt64Array(0) : new Uint8Array(0));
    assert.throws(
      () => toOrtTensor(a),
      (e) => e instanceof NpyError && e.code === 'NO_COUNTERPART',
    );
  }
  assert.throws(
    () => fromOrtTensor(new ort.Tensor('int4', new Uint8Array(2), [4])),
    (e) => e.code === 'NO_COUNTERPART',
  );
  assert.throws(
    () => fromOrtTensor({ type: 'float32', dims: [1], location: 'gpu-buffer', data: null }),
    (e) => e.code === 'NO_COUNTERPART' && /getData/.test(e.message),
  );
});

// withWeights against PyTorch: an MLP and a CNN with BatchNorm exported by both exporters, a perturbed
// state_dict saved as .safetensors / .pt / .npz swapped in, run in onnxruntime-node, and compared with
// onnxruntime-python on the model re-exported (TorchScript exporter) with the perturbed weights. The TorchScript exporter is
// torch.onnx.export(dynamo=False); torch 2.x's default is the dynamo one (dynamo=True). Both give float32
// graphs; the two runs execute the same kernels on the same values, so outputs agree to float32 rounding
// of differently fused kernels: tolerance 1e-5 relative + 1e-6 absolute.
const wdir = scratch();
const exports = JSON.parse(
  python(`
import torch, onnx, onnxruntime as rt, safetensors.torch, contextlib, os, logging
torch.manual_seed(57)
d = ${JSON.stringify(wdir)}
mlp = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)).eval()
cnn = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(64, 2)).eval()
logging.disable(logging.WARNING)
# The TorchScript exporter fuses BatchNorm into Conv in eval mode even without constant folding: PRESERVE keeps it.
exporters = {'ts': dict(dynamo=False, do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE), 'dynamo': dict(dynamo=True, optimize=False),
             'ts-folded': dict(dynamo=False), 'dynamo-folded': dict(dynamo=True)}
def export(m, x, f, kw):
    with open(os.devnull, 'w') as null, contextlib.redirect_stdout(null), contextlib.redirect_stderr(null):
        torch.onnx.export(m, (x,), f, input_names=['x'], output_names=['y'], dynamic_axes=None, **kw)
inputs = {'mlp': torch.randn(2, 4), 'cnn': torch.randn(2, 3, 6, 6)}
# A trained BatchNorm's statistics: fresh ones (ones, zeros) equal its weight and bias, which the
# TorchScript exporter merges into one initializer (see the merged-names test).
fresh = __import__('copy').deepcopy(cnn)
with torch.no_grad():
    cnn[1].running_mean.uniform_(-1, 1); cnn[1].running_var.uniform_(0.5, 2); cnn[1].weight.uniform_(0.5, 2); cnn[1].bias.uniform_(-1, 1)
export(fresh, inputs['cnn'], f'{d}/cnn-fresh.onnx', dict(dynamo=False, do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE))
out = []
for name, m in [('mlp', mlp), ('cnn', cnn)]:
    x = inputs[name]
    np.save(f'{d}/{name}-x.npy', x.numpy())
    for ex, kw in exporters.items():
        if not ex.endswith('folded') or name == 'cnn': export(m, x, f'{d}/{name}-{ex}.onnx', kw)
    tuned = __import__('copy').deepcopy(m)
    with torch.no_grad():
        for k, v in tuned.state_dict().items():
            if v.is_floating_point(): v.add_(torch.randn_like(v) * 0.5)
            if k.endswith('running_var'): v.abs_().add_(0.1)
    sd = {k: v.contiguous() for k, v in tuned.state_dict().items()}
    safetensors.torch.save_file(sd, f'{d}/{name}.safetensors')
    torch.save(sd, f'{d}/{name}.pt')
    np.savez(f'{d}/{name}.npz', **{k: v.numpy() for k, v in sd.items()})
    # The reference: onnxruntime on the model re-exported (TorchScript exporter) with the perturbed weights.
    export(tuned, x, f'{d}/{name}-tuned.onnx', exporters['ts'])
    y = rt.InferenceSession(f'{d}/{name}-tuned.onnx').run(None, {'x': x.numpy()})[0]
    for ex in ['ts', 'dynamo']:
        y0 = rt.InferenceSession(f'{d}/{name}-{ex}.onnx').run(None, {'x': x.numpy()})[0]
        np.save(f'{d}/{name}-{ex}-want.npy', y)
        out.append({'model': name, 'exporter': ex, 'differs': float(np.abs(y - y0).max())})
# Wide enough that the dynamo exporter stores the first weight (over 1 KiB) in wide-dynamo.onnx.data.
wide = torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.ReLU(), torch.nn.Linear(64, 3)).eval()
export(wide, inputs['mlp'], f'{d}/wide-dynamo.onnx', exporters['dynamo'])
assert any(t.data_location == 1 for t in onnx.load(f'{d}/wide-dynamo.onnx', load_external_data=False).graph.initializer)
np.savez(f'{d}/wide.npz', **{k: v.numpy() for k, v in wide.state_dict().items()})
safetensors.torch.save_file({'0.bias': wide.state_dict()['0.bias'].contiguous()}, f'{d}/wide-bias.safetensors')
# Biases at their initial zeros when exported: the TorchScript exporter (defaults) merges 0.bias, 1.bias and
# 2.bias (the LayerNorm's) into one initializer; the state_dict trained since holds three different ones.
twin = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 8), torch.nn.LayerNorm(8)).eval()
with torch.no_grad():
    twin[0].bias.zero_(); twin[1].bias.zero_()
export(twin, inputs['mlp'], f'{d}/twin.onnx', dict(dynamo=False))
merged = [n for n in onnx.load(f'{d}/twin.onnx').graph.node if n.op_type == 'Identity']
assert sorted(n.output[0] for n in merged) == ['1.bias', '2.bias'] and merged[0].input[0] == '0.bias', merged
with torch.no_grad():
    for v in twin.parameters(): v.add_(torch.randn_like(v) * 0.5)
    np.save(f'{d}/twin-want.npy', twin(inputs['mlp']).numpy())
safetensors.torch.save_file({k: v.contiguous() for k, v in twin.state_dict().items()}, f'{d}/twin.safetensors')
# The same graph with 1.bias's Identity output under a generated name: a value of the kept one, not a tensor of its own.
m = onnx.load(f'{d}/twin.onnx')
for n in m.graph.node:
    n.output[:] = ['onnx::Gemm_7' if v == '1.bias' else v for v in n.output]
    n.input[:] = ['onnx::Gemm_7' if v == '1.bias' else v for v in n.input]
onnx.save(m, f'{d}/twin-generated.onnx')
# A state_dict of 106 KB in a .npz read by URL: its first member is larger than a 64 KiB read window.
remote = torch.nn.Sequential(torch.nn.Linear(128, 200), torch.nn.ReLU(), torch.nn.Linear(200, 8)).eval()
export(remote, torch.randn(2, 128), f'{d}/remote.onnx', exporters['ts'])
np.savez(f'{d}/remote.npz', **{k: (v + 1).numpy() for k, v in remote.state_dict().items()})
# Layouts ORT cannot read in place: big-endian, deflated.
tuned_sd = {k: v.numpy() for k, v in safetensors.torch.load_file(f'{d}/mlp.safetensors').items()}
np.savez(f'{d}/mlp-be.npz', **{k: v.astype(v.dtype.newbyteorder('>')) for k, v in tuned_sd.items()})
np.savez_compressed(f'{d}/mlp-deflated.npz', **tuned_sd)
# The same model whose external data claims to live elsewhere, or to be larger than its file.
for name, key, value in [('wide-parent', 'location', '../wide-dynamo.onnx.data'), ('wide-scheme', 'location', 'https:127.0.0.1:9/x'),
                         ('wide-huge', 'length', str(1 << 40))]:
    m = onnx.load(f'{d}/wide-dynamo.onnx', load_external_data=False)
    for t in m.graph.initializer:
        for e in t.external_data:
            if e.key == key: e.value = value
    onnx.save(m, f'{d}/{name}.onnx')
print(json.dumps(out))
`),
);

const wload = (name) => decodeNpy(readFileSync(join(wdir, `${name}.npy`)));
const close = (got, want, what) => {
  for (let i = 0; i < want.length; i++) {
    const ok = Math.abs(got[i] - want[i]) <= 1e-6 + 1e-5 * Math.abs(want[i]);
    assert.ok(ok, `${what}: element ${i}: ${got[i]} vs ${want[i]}`);
  }
};

const decodeNpzFile = (path) => {
  const z = decodeNpz(readFileSync(path));
  return Object.fromEntries(z.names.map((n) => [n, z.getSync(n)]));
};
const encodeNpzOf = (arrays) => encodeNpz(arrays);

test('withWeights: a perturbed state_dict runs as the model re-exported with it (both exporters, three file formats)', async () => {
  assert.is(exports.length, 4);
  for (const { model, exporter, differs } of exports) {
    assert.ok(differs > 1e-2, `${model}-${exporter}: the perturbation shows in the output (${differs})`);
    const bytes = readFileSync(join(wdir, `${model}-${exporter}.onnx`));
    const x = toOrtTensor(wload(`${model}-x`));
    const want = wload(`${model}-${exporter}-want`).data;
    for (const ext of ['safetensors', 'pt', 'npz']) {
      const r = await withWeights(bytes, join(wdir, `${model}.${ext}`));
      const session = await ort.InferenceSession.create(r.model, r.sessionOptions);
      const y = fromOrtTensor((await session.run({ x })).y);
      close(y.data, want, `${model}-${exporter}.${ext}`);
      assert.ok(r.replaced.length >= 4, `${model}-${exporter}: replaced ${r.replaced}`);
      // safetensors and torch.save align their tensors: every one is pointed at in the file. numpy's
      // savez stores each member's data wherever its zip header ends: the misaligned ones are copied.
      assert.equal([...r.external, ...Object.keys(r.copied)].sort(), [...r.replaced].sort(), `${model}-${exporter}.${ext}`);
      if (ext !== 'npz') assert.equal(r.copied, {}, `${model}-${exporter}.${ext}: copied`);
      for (const why of Object.values(r.copied)) assert.match(why, /not a multiple of \d/);
      assert.equal(r.kept, [], `${model}-${exporter}: kept`);
      assert.equal(r.unused, model === 'cnn' ? ['1.num_batches_tracked'] : [], `${model}-${exporter}.${ext}: unused`);
    }
  }
  // An option it does not know is refused before anything is read, not dropped (a misspelt `inline`).
  const { model } = exports[0];
  await refused(
    withWeights(readFileSync(join(wdir, `${model}-${exports[0].exporter}.onnx`)), join(wdir, `${model}.safetensors`), { inlne: true }),
    'BAD_OPTION',
    'inlne',
  );
});

test("withWeights: a local file's tensors are pointed at, not copied: the model holds none of their bytes, and onnxruntime-python runs it as the re-export", async () => {
  const bytes = readFileSync(join(wdir, 'mlp-dynamo.onnx'));
  const file = join(wdir, 'mlp.safetensors');
  // A path relative to the working directory is made absolute: the session finds it from anywhere.
  const r = await withWeights(bytes, relative(process.cwd(), file));
  const inline = await withWeights(bytes, file, { inline: true });
  assert.equal(r.external.sort(), r.replaced.sort());
  assert.equal(r.externalData, [{ path: 'mlp.safetensors', data: file }]);
  assert.equal(r.sessionOptions, { extra: { session: { model_external_initializers_file_folder_path: `${wdir}/` } } });
  assert.equal(inline.external, []);
  assert.equal(Object.keys(inline.copied).sort(), inline.replaced.sort());
  assert.match(inline.copied['0.weight'], /inline: true/);
  // The model is plain ONNX with external data beside it: onnx reads where each initializer points,
  // and onnxruntime-python runs it from the weights' folder.
  writeFileSync(join(wdir, 'mlp-pointed.onnx'), r.model);
  const got = JSON.parse(
    await pythonAsync(`
import onnx, onnxruntime as rt
d = ${JSON.stringify(wdir)}
m = onnx.load(f'{d}/mlp-pointed.onnx', load_external_data=False)
inline = sorted(t.name for t in m.graph.initializer if t.data_location != onnx.TensorProto.EXTERNAL or len(t.raw_data))
y = rt.InferenceSession(f'{d}/mlp-pointed.onnx').run(None, {'x': np.load(f'{d}/mlp-x.npy')})[0]
print(json.dumps({'inline': inline, 'differs': float(np.abs(y - np.load(f'{d}/mlp-ts-want.npy')).max())}))
`),
  );
  assert.equal(got.inline, [], 'initializers holding bytes in the model');
  assert.ok(got.differs <= 1e-5, `onnxruntime-python differs by ${got.differs}`);
});

test('withWeights: onnxruntime-web in Node runs the pointed model from { externalData }, as onnxruntime-node does from sessionOptions', async () => {
  const web = await import('onnxruntime-web');
  web.env.wasm.numThreads = 1;
  const r = await withWeights(join(wdir, 'mlp-ts.onnx'), join(wdir, 'mlp.safetensors'));
  assert.equal(r.external.length, r.replaced.length);
  const session = await web.InferenceSession.create(r.model, { externalData: r.externalData });
  const y = fromOrtTensor((await session.run({ x: toOrtTensor(wload('mlp-x')) })).y);
  close(y.data, wload('mlp-ts-want').data, 'onnxruntime-web');
});

test('withWeights: big-endian, deflated or bytes-given tensors are read, each saying why, and handed to ORT as external data in memory (no whole-model buffer); the outputs equal the inlined model bit for bit', async () => {
  const bytes = readFileSync(join(wdir, 'mlp-ts.onnx'));
  const x = toOrtTensor(wload('mlp-x'));
  const want = wload('mlp-ts-want').data;
  const cases = [
    [join(wdir, 'mlp-be.npz'), /big-endian/],
    [join(wdir, 'mlp-deflated.npz'), /deflated/],
    [readFileSync(join(wdir, 'mlp.safetensors')), /not given as a local path/],
  ];
  const web = await import('onnxruntime-web');
  web.env.wasm.numThreads = 1;
  for (const [weights, why] of cases) {
    const seen = [];
    const r = await withWeights(bytes, weights, { onProgress: (p) => seen.push({ ...p }) });
    const what = typeof weights === 'string' ? weights : 'bytes';
    const order = [...r.replaced];
    assert.equal(r.external, [], what);
    assert.equal(Object.keys(r.copied).sort(), r.replaced.sort(), what);
    for (const reason of Object.values(r.copied)) assert.match(reason, why, what);
    // Every swapped tensor is its own buffer beside the model, which holds none of their bytes.
    const memory = r.sessionOptions.externalData;
    assert.is(memory.length, r.replaced.length, what);
    assert.equal(r.externalData, memory, what);
    assert.ok(r.model.byteLength < Math.min(...memory.map((m) => m.data.byteLength)) + 4096, `${what}: the model holds ${r.model.byteLength} bytes`);
    // Progress: one call per tensor, in the model's order, rising to the swapped tensors' bytes.
    const total = memory.reduce((n, m) => n + m.data.byteLength, 0);
    assert.equal(
      seen.map((p) => p.tensor),
      order,
      what,
    );
    assert.ok(
      seen.every((p, i) => p.total === total && p.bytes > (seen[i - 1]?.bytes ?? 0)),
      what,
    );
    assert.is(seen.at(-1).bytes, total, what);
    const inline = await withWeights(bytes, weights, { inline: true });
    assert.equal(inline.sessionOptions, {}, what);
    const [y, yInline] = await Promise.all(
      [ort.InferenceSession.create(r.model, r.sessionOptions), ort.InferenceSession.create(inline.model)].map(async (s) =>
        fromOrtTensor((await (await s).run({ x })).y),
      ),
    );
    close(y.data, want, what);
    assert.equal(bytesOf(y), bytesOf(yInline), `${what}: external data in memory and the inlined model differ`);
    // onnxruntime-web takes the same buffers from { externalData }.
    const yWeb = fromOrtTensor((await (await web.InferenceSession.create(r.model, { externalData: r.externalData })).run({ x })).y);
    close(yWeb.data, want, `${what} (onnxruntime-web)`);
  }
  // An abort halfway: rejects with AbortError after the first tensor, nothing reported after it.
  const controller = new AbortController();
  const told = [];
  const e = await withWeights(bytes, cases[2][0], {
    signal: controller.signal,
    onProgress: (p) => {
      told.push(p.tensor);
      controller.abort();
    },
  }).catch((x) => x);
  assert.is(e?.name, 'AbortError');
  assert.is(told.length, 1);
});

test('withWeights: without memory maps (NPYTS_NATIVE=0) every tensor is copied, saying why, and runs the same', () => {
  const code = `
import * as ort from 'onnxruntime-node';
import { withWeights, toOrtTensor, fromOrtTensor } from '@npyts/onnxruntime';
import { loadNpy } from '@npyts/core/node';
const d = ${JSON.stringify(wdir)};
const r = await withWeights(d + '/mlp-ts.onnx', d + '/mlp.safetensors');
const session = await ort.InferenceSession.create(r.model, r.sessionOptions);
const y = fromOrtTensor((await session.run({ x: toOrtTensor(await loadNpy(d + '/mlp-x.npy')) })).y);
console.log(JSON.stringify({ external: r.external, copied: r.copied, replaced: r.replaced, y: Array.from(y.data) }));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', code], {
    cwd: join(import.meta.dirname, '..', '..'),
    env: { ...process.env, NPYTS_NATIVE: '0' },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const r = JSON.parse(out);
  assert.equal(r.external, []);
  assert.equal(Object.keys(r.copied).sort(), r.replaced.sort());
  for (const why of Object.values(r.copied)) assert.match(why, /memory maps are unavailable/);
  close(r.y, wload('mlp-ts-want').data, 'without maps');
});

test('withWeights: names the model has and the file lacks keep their values; unused tensors are listed', async () => {
  const bytes = readFileSync(join(wdir, 'mlp-ts.onnx'));
  const sd = decodeNpzFile(join(wdir, 'mlp.npz'));
  const partial = { '0.weight': sd['0.weight'], 'extra.bias': sd['2.bias'] };
  const r = await withWeights(bytes, encodeNpzOf(partial));
  assert.equal(r.replaced, ['0.weight']);
  assert.equal(r.kept.sort(), ['0.bias', '2.bias', '2.weight']);
  assert.equal(r.unused, ['extra.bias']);
});

test('withWeights: kept initializers the dynamo exporter stored beside the model are read in from its path; from bytes it is refused', async () => {
  const path = join(wdir, 'wide-dynamo.onnx');
  assert.ok(existsSync(`${path}.data`), 'the dynamo exporter wrote its initializers beside the model');
  const sd = decodeNpzFile(join(wdir, 'wide.npz'));
  const partial = { '0.bias': sd['0.bias'] };
  await refused(withWeights(readFileSync(path), encodeNpzOf(partial)), 'BAD_MODEL', 'wide-dynamo.onnx.data');
  const r = await withWeights(path, encodeNpzOf(partial));
  assert.equal(r.replaced, ['0.bias']);
  const full = await withWeights(path, encodeNpzOf(sd));
  // Kept ones inlined from model.onnx.data, the swapped one pointed at in the weight file.
  const pointed = await withWeights(path, join(wdir, 'wide-bias.safetensors'));
  assert.equal(pointed.external, ['0.bias']);
  const x = new ort.Tensor('float32', new Float32Array([0.5, -1, 2, 0.25, 1, 1, -0.5, 0]), [2, 4]);
  const [a, b, c] = await Promise.all(
    [r, full, pointed].map(async (w) => (await (await ort.InferenceSession.create(w.model, w.sessionOptions)).run({ x })).y.data),
  );
  // The file holds the exported values: swapping one or all of them gives the same outputs.
  assert.equal(Array.from(a), Array.from(b));
  assert.equal(Array.from(c), Array.from(b));
});

test('withWeights(modelKey, weightsKey, { store }): the model, its external data and the weights are keys of the store, and the outputs are those from their paths', async () => {
  const path = join(wdir, 'wide-dynamo.onnx');
  const sd = decodeNpzFile(join(wdir, 'wide.npz'));
  const store = memoryStore(
    new Map([
      ['m.onnx', readFileSync(path)],
      // The model names its external data 'wide-dynamo.onnx.data': a key beside it in the store.
      ['wide-dynamo.onnx.data', readFileSync(`${path}.data`)],
      ['w.npz', encodeNpzOf(sd)],
    ]),
  );
  const fromStore = await withWeights('m.onnx', 'w.npz', { store });
  const fromPaths = await withWeights(path, encodeNpzOf(sd));
  assert.equal(fromStore.replaced.sort(), fromPaths.replaced.sort());
  const x = new ort.Tensor('float32', new Float32Array([0.5, -1, 2, 0.25, 1, 1, -0.5, 0]), [2, 4]);
  const [a, b] = await Promise.all(
    [fromStore, fromPaths].map(async (w) => (await (await ort.InferenceSession.create(w.model, w.sessionOptions)).run({ x })).y.data),
  );
  assert.equal(Array.from(a), Array.from(b));
  // A key the store lacks is not looked for on disk or by URL.
  await refused(withWeights('m.onnx', 'nowhere.npz', { store }), 'NOT_FOUND', 'nowhere.npz');
  // checkSession took { store } and dropped what it did not know: it refuses it now, before any read.
  await refused(checkSession(null, 'w.npz', { store, modle: 'm.onnx' }), 'BAD_OPTION', "'modle'");
});

test('withWeights: a remote .npz moves about its own size (directory, headers and tensors once), and swaps the same values as from its path', async () => {
  const path = join(wdir, 'remote.npz');
  const size = statSync(path).size;
  const server = await serveFiles(wdir);
  try {
    const r = await withWeights(join(wdir, 'remote.onnx'), `${server.base}/remote.npz`);
    assert.equal([...r.replaced].sort(), ['0.bias', '0.weight', '2.bias', '2.weight']);
    // What each answer carried, as the server answers a range (`bytes=a-b`, `bytes=-n`).
    const moved = server.log.reduce((n, { range }) => {
      const [, a, b] = /^bytes=(\d*)-(\d*)$/.exec(range ?? '') ?? [];
      if (a === undefined) return n + size;
      return n + (a === '' ? Math.min(size, Number(b)) : Math.min(b === '' ? size - 1 : Number(b), size - 1) - Number(a) + 1);
    }, 0);
    assert.ok(moved <= size + 1024, `${moved} bytes moved for an archive of ${size} (${server.log.map((l) => l.range).join(', ')})`);
    const local = await withWeights(join(wdir, 'remote.onnx'), path, { inline: true });
    const x = new ort.Tensor(
      'float32',
      Float32Array.from({ length: 256 }, (_, i) => Math.sin(i)),
      [2, 128],
    );
    // The inlined model (its 64 KiB weights written around protobufjs, the graph field by hand) decodes
    // again (protobufjs, in withWeights) and runs the same once more.
    const again = await withWeights(local.model, path);
    const [a, b, c] = await Promise.all(
      [r, local, again].map(async (w) => (await (await ort.InferenceSession.create(w.model, w.sessionOptions)).run({ x })).y.data),
    );
    assert.equal(Array.from(a), Array.from(b));
    assert.equal(Array.from(c), Array.from(b));
  } finally {
    await server.close();
  }
});

test("withWeights: external data named outside the model's folder, by a scheme, or past its file's end is refused before any read", async () => {
  const sd = decodeNpzFile(join(wdir, 'wide.npz'));
  const partial = encodeNpzOf({ '0.bias': sd['0.bias'] });
  await refused(withWeights(join(wdir, 'wide-parent.onnx'), partial), 'UNSAFE_PATH', '../wide-dynamo.onnx.data');
  await refused(withWeights(join(wdir, 'wide-scheme.onnx'), partial), 'UNSAFE_PATH', 'scheme');
  await refused(withWeights(join(wdir, 'wide-huge.onnx'), partial), 'TRUNCATED', String(2 ** 40));
});

test("withWeights: external data reached through a symbolic link that leads out of the model's folder is refused (UNSAFE_PATH), as a sharded set's shard is; one inside it reads", async () => {
  const sd = decodeNpzFile(join(wdir, 'wide.npz'));
  const partial = encodeNpzOf({ '0.bias': sd['0.bias'] });
  const linked = join(wdir, 'linked');
  rmSync(linked, { recursive: true, force: true });
  mkdirSync(join(linked, 'inner'), { recursive: true });
  copyFileSync(join(wdir, 'wide-dynamo.onnx'), join(linked, 'wide-dynamo.onnx'));
  symlinkSync(join(wdir, 'wide-dynamo.onnx.data'), join(linked, 'wide-dynamo.onnx.data'));
  await refused(withWeights(join(linked, 'wide-dynamo.onnx'), partial), 'UNSAFE_PATH', 'symbolic link');
  // A link that stays inside the folder is a file beside the model.
  rmSync(join(linked, 'wide-dynamo.onnx.data'));
  copyFileSync(join(wdir, 'wide-dynamo.onnx.data'), join(linked, 'inner', 'data'));
  symlinkSync(join(linked, 'inner', 'data'), join(linked, 'wide-dynamo.onnx.data'));
  assert.equal((await withWeights(join(linked, 'wide-dynamo.onnx'), partial)).replaced, ['0.bias']);
});

test('withWeights: a shape or dtype mismatch is refused naming the initializer, before anything is built', async () => {
  const bytes = readFileSync(join(wdir, 'mlp-ts.onnx'));
  const sd = decodeNpzFile(join(wdir, 'mlp.npz'));
  const wrongShape = { ...sd, '2.weight': sd['0.weight'] };
  await refused(withWeights(bytes, encodeNpzOf(wrongShape)), 'SHAPE_MISMATCH', /2\.weight \(model \(3, 8\), file \(8, 4\)\)/);
  const f64 = { ...sd, '0.bias': new NdArray(parseDescr('<f8'), sd['0.bias'].shape, Float64Array.from(sd['0.bias'].data)) };
  await refused(withWeights(bytes, encodeNpzOf(f64)), 'DTYPE_MISMATCH', /0\.bias \(model float32, file float64\)/);
});

test('withWeights: exports that folded BatchNorm or renamed weights are refused, saying how to export', async () => {
  for (const exporter of ['ts-folded', 'dynamo-folded']) {
    const bytes = readFileSync(join(wdir, `cnn-${exporter}.onnx`));
    await refused(withWeights(bytes, join(wdir, 'cnn.safetensors')), 'WEIGHT_MISMATCH', /running_mean.*do_constant_folding=False.*optimize=False/);
  }
  // Without the BatchNorm's tensors in the file, the folded convolution's generated names (onnx::Conv_16)
  // give it away: the file's 0.weight matches no initializer but one of its size.
  const sd = decodeNpzFile(join(wdir, 'cnn.npz'));
  const convOnly = { '0.weight': sd['0.weight'], '0.bias': sd['0.bias'], '4.weight': sd['4.weight'] };
  await refused(withWeights(readFileSync(join(wdir, 'cnn-ts-folded.onnx')), encodeNpzOf(convOnly)), 'WEIGHT_MISMATCH', /0\.weight.*generated.*onnx::Conv_\d+/);
});

test("withWeights: names the exporter merged into one initializer (biases at their initial zeros) get their own, and the outputs are PyTorch's", async () => {
  // twin.onnx: 1.bias and 2.bias are Identity(0.bias); the trained state_dict's three differ.
  const x = toOrtTensor(wload('mlp-x'));
  for (const weights of [join(wdir, 'twin.safetensors'), readFileSync(join(wdir, 'twin.safetensors'))]) {
    const r = await withWeights(join(wdir, 'twin.onnx'), weights);
    assert.equal([...r.replaced].sort(), ['0.bias', '0.weight', '1.bias', '1.weight', '2.bias', '2.weight']);
    assert.equal(r.kept, []);
    assert.equal(r.unused, []);
    const y = fromOrtTensor((await (await ort.InferenceSession.create(r.model, r.sessionOptions)).run({ x })).y);
    close(y.data, wload('twin-want').data, `twin from ${typeof weights === 'string' ? 'a path' : 'bytes'}`);
  }
  // An Identity of 0.bias under a generated name is no PyTorch tensor: it would take 0.bias's new value or keep the old, which cannot be told.
  await refused(
    withWeights(join(wdir, 'twin-generated.onnx'), join(wdir, 'twin.safetensors')),
    'WEIGHT_MISMATCH',
    /onnx::Gemm_7, a name the exporter made up, is an alias of the initializer 0\.bias.*save the values onnx::Gemm_7 should hold/,
  );
  // A fresh BatchNorm's running_var and running_mean were merged into its weight and bias: the trained
  // state_dict runs as the model re-exported with it.
  const fresh = readFileSync(join(wdir, 'cnn-fresh.onnx'));
  const cx = toOrtTensor(wload('cnn-x'));
  const run = async (r) => fromOrtTensor((await (await ort.InferenceSession.create(r.model, r.sessionOptions)).run({ x: cx })).y).data;
  const swapped = await withWeights(fresh, join(wdir, 'cnn.safetensors'));
  assert.ok(swapped.replaced.includes('1.running_var') && swapped.replaced.includes('1.running_mean'), String(swapped.replaced));
  close(await run(swapped), wload('cnn-ts-want').data, 'cnn-fresh');
  // A name the file lacks keeps its exported value: swapping 1.weight leaves 1.running_var at its ones.
  const sd = decodeNpzFile(join(wdir, 'cnn.npz'));
  const partial = await withWeights(fresh, encodeNpzOf({ '1.weight': sd['1.weight'] }));
  assert.equal(partial.replaced, ['1.weight']);
  assert.ok(partial.kept.includes('1.running_var'), String(partial.kept));
  const ones = await withWeights(
    fresh,
    encodeNpzOf({ '1.weight': sd['1.weight'], '1.running_var': new NdArray(parseDescr('<f4'), [4], new Float32Array(4).fill(1)) }),
  );
  assert.equal(Array.from(await run(partial)), Array.from(await run(ones)));
});

// docs/onnxruntime.md's offline setting, run as written before npm runs onnxruntime-node's install
// script (npm rebuild: the package as installed, without unpacking its 290 MB again) in a project of
// its own, offline, behind a proxy that counts connections (global-agent, which the script loads,
// sends its downloads through GLOBAL_AGENT_HTTP_PROXY). Without the setting the script does connect.
test("docs/onnxruntime.md's offline setting: npm does not warn, onnxruntime-node's install script downloads nothing", async () => {
  const block = blocksOf('docs/onnxruntime.md').find((b) => b.lang === 'sh' && b.attrs['run-by'] === 'test/adapters/onnxruntime.test.mjs');
  assert.ok(block, 'docs/onnxruntime.md has the block this test runs');
  // The installed package, hard-linked file by file into the project (nothing in it is written).
  const project = scratch();
  const link = (from, to) => {
    mkdirSync(to, { recursive: true });
    for (const e of readdirSync(from, { withFileTypes: true })) {
      if (e.isDirectory()) link(join(from, e.name), join(to, e.name));
      else if (e.isFile()) linkSync(join(from, e.name), join(to, e.name));
    }
  };
  const installed = dirname(createRequire(import.meta.url).resolve('onnxruntime-node/package.json'));
  link(installed, join(project, 'node_modules', 'onnxruntime-node'));
  const version = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')).version;
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'offline', version: '1.0.0', dependencies: { 'onnxruntime-node': version } }));
  const connections = [];
  const proxy = createServer((socket) => {
    connections.push(socket.remoteAddress);
    socket.destroy();
  });
  await new Promise((r) => proxy.listen(0, '127.0.0.1', r));
  // A clean environment: none of the npm settings or flags of the npm that may run this test.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(npm_|ONNXRUNTIME_NODE_INSTALL)/i.test(k)));
  Object.assign(env, { NODE_PATH: join(root, 'node_modules'), GLOBAL_AGENT_HTTP_PROXY: `http://127.0.0.1:${proxy.address().port}` });
  const run = (command, args) =>
    new Promise((resolve) => {
      const child = spawn(command, args, { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (out += d));
      child.on('close', (code) => resolve({ code, out }));
    });
  try {
    const r = await run('bash', ['-c', `${block.code}\nnpm rebuild onnxruntime-node --offline --foreground-scripts`]);
    assert.is(r.code, 0, r.out);
    assert.ok(r.out.includes('node ./script/install'), `npm ran the install script: ${r.out}`);
    assert.not.match(r.out, /config/i, 'npm warns of no setting');
    assert.equal(connections, [], 'no download attempted');
    // The control: on Linux x64 (where it has CUDA binaries to fetch) the script without the setting connects.
    if (process.platform === 'linux' && process.arch === 'x64') {
      await run(process.execPath, [join(project, 'node_modules', 'onnxruntime-node', 'script', 'install.js')]);
      assert.ok(connections.length > 0, 'without the setting the script tries to download');
    }
  } finally {
    await new Promise((r) => proxy.close(r));
  }
});

test.run();
