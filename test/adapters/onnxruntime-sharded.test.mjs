// withWeights over a sharded set (issue 57): a state_dict split into three shards by huggingface_hub's
// splitter (save_torch_state_dict for .safetensors; split_torch_state_dict_into_shards + torch.save for
// transformers' pytorch_model.bin.index.json), swapped into a model exported by PyTorch. Each
// initializer points into its own shard; onnxruntime-node, onnxruntime-web and onnxruntime (Python)
// run the result and give what onnxruntime (Python) gives on the exported model whose initializers
// were replaced (by onnx's numpy_helper) with the values safetensors' own reader gives from the shards.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync, mkdirSync, copyFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { toOrtTensor, fromOrtTensor, withWeights } from '@npyts/onnxruntime';
import { decodeNpy } from '@npyts/core';
import { openWeights } from '@npyts/core/node';
import { python, pythonAsync, scratch } from '../helpers/numpy.mjs';
import { refusedWith as refused } from '../helpers/refusal.mjs';
import { serveFiles } from '../helpers/serve-files.mjs';

const dir = scratch('npyts-ortshard-');
const fixture = JSON.parse(
  python(`
import json, os, shutil, contextlib, logging, torch, onnx, onnxruntime as rt, safetensors.torch, huggingface_hub
from onnx import numpy_helper
d = ${JSON.stringify(dir)}
torch.manual_seed(57)
model = torch.nn.Sequential(torch.nn.Linear(16, 24), torch.nn.ReLU(), torch.nn.Linear(24, 24), torch.nn.LayerNorm(24),
                            torch.nn.ReLU(), torch.nn.Linear(24, 5)).eval()
x = torch.randn(3, 16)
np.save(f'{d}/x.npy', x.numpy())
logging.disable(logging.WARNING)
with open(os.devnull, 'w') as null, contextlib.redirect_stdout(null), contextlib.redirect_stderr(null):
    torch.onnx.export(model, (x,), f'{d}/mlp.onnx', input_names=['x'], output_names=['y'], dynamo=False, do_constant_folding=False)
# Fine-tuned weights: every tensor moved, so that any one left at its exported value shows.
with torch.no_grad():
    for v in model.state_dict().values(): v.add_(torch.randn_like(v) * 0.5)
sd = {k: v.contiguous() for k, v in model.state_dict().items()}
limit = 2000
os.makedirs(f'{d}/st')
huggingface_hub.save_torch_state_dict(sd, f'{d}/st', max_shard_size=limit)
# transformers 4's save_pretrained(safe_serialization=False): the same splitter, torch.save per shard.
# In 'legacy' the second shard is a torch.save of before torch 1.6 (old checkpoints): storages where the pickle ends.
def bin_set(folder, legacy):
    os.makedirs(folder)
    split = huggingface_hub.split_torch_state_dict_into_shards(sd, filename_pattern='pytorch_model{suffix}.bin', max_shard_size=limit)
    for i, (file, names) in enumerate(split.filename_to_tensors.items()):
        kw = {'_use_new_zipfile_serialization': False} if legacy and i == 1 else {}
        torch.save({n: sd[n] for n in names}, os.path.join(folder, file), **kw)
    json.dump({'metadata': split.metadata, 'weight_map': split.tensor_to_filename}, open(f'{folder}/pytorch_model.bin.index.json', 'w'), indent=2)
bin_set(f'{d}/bin', False)
bin_set(f'{d}/legacy', True)
index = json.load(open(f'{d}/st/model.safetensors.index.json'))
shards = sorted(set(index['weight_map'].values()))
# 'be': the second shard as big-endian numpy arrays (np.savez), the others as written.
os.makedirs(f'{d}/be')
weight_map = {}
for i, f in enumerate(shards):
    names = [n for n, s in index['weight_map'].items() if s == f]
    if i == 1:
        f = f.replace('.safetensors', '.npz')
        np.savez(f'{d}/be/{f}', **{n: sd[n].numpy().astype('>f4') for n in names})
    else:
        shutil.copy(f'{d}/st/{f}', f'{d}/be/{f}')
    weight_map.update({n: f for n in names})
json.dump({'metadata': index['metadata'], 'weight_map': weight_map}, open(f'{d}/be/model.safetensors.index.json', 'w'))
# The reference: onnxruntime on the exported model with every initializer replaced by the shards' values.
m = onnx.load(f'{d}/mlp.onnx')
values = {}
for f in shards: values.update(safetensors.torch.load_file(f'{d}/st/{f}'))
for t in m.graph.initializer:
    if t.name in values: t.CopyFrom(numpy_helper.from_array(values[t.name].numpy(), t.name))
onnx.save(m, f'{d}/mlp-ref.onnx')
y = rt.InferenceSession(f'{d}/mlp-ref.onnx').run(None, {'x': x.numpy()})[0]
y0 = rt.InferenceSession(f'{d}/mlp.onnx').run(None, {'x': x.numpy()})[0]
np.save(f'{d}/want.npy', y)
print(json.dumps({'differs': float(np.abs(y - y0).max()), 'initializers': sorted(t.name for t in m.graph.initializer)}))
`),
);

const sets = {
  st: join(dir, 'st', 'model.safetensors.index.json'),
  bin: join(dir, 'bin', 'pytorch_model.bin.index.json'),
  legacy: join(dir, 'legacy', 'pytorch_model.bin.index.json'),
  be: join(dir, 'be', 'model.safetensors.index.json'),
};
const weightMap = (set) => JSON.parse(readFileSync(sets[set], 'utf8')).weight_map;
const modelPath = join(dir, 'mlp.onnx');
const x = toOrtTensor(decodeNpy(readFileSync(join(dir, 'x.npy'))));
const want = decodeNpy(readFileSync(join(dir, 'want.npy'))).data;

const close = (got, what) => {
  assert.is(got.length, want.length, what);
  for (let i = 0; i < want.length; i++) {
    assert.ok(Math.abs(got[i] - want[i]) <= 1e-6 + 1e-5 * Math.abs(want[i]), `${what}: element ${i}: ${got[i]} vs ${want[i]}`);
  }
};
async function runNode(r) {
  const session = await ort.InferenceSession.create(r.model, r.sessionOptions);
  return fromOrtTensor((await session.run({ x })).y).data;
}

test('the fixture: three shards a set, and the fine-tuned weights change the output', async () => {
  assert.ok(fixture.differs > 1e-2, `the weights show in the output (${fixture.differs})`);
  for (const set of Object.keys(sets)) assert.is(new Set(Object.values(weightMap(set))).size, 3, set);
  // Each tensor's shard as the index names it.
  const w = await openWeights(sets.bin);
  for (const [name, shard] of Object.entries(weightMap('bin'))) assert.is((await w.info(name)).shard, shard, name);
  await w.close();
});

test('withWeights: every initializer points into its own shard (.safetensors and .bin sets), nothing is copied, and onnxruntime-node gives the reference', async () => {
  for (const set of ['st', 'bin']) {
    const r = await withWeights(modelPath, sets[set]);
    const map = weightMap(set);
    const folder = join(dir, set);
    assert.equal([...r.replaced].sort(), fixture.initializers, set);
    assert.equal([...r.external].sort(), fixture.initializers, set);
    assert.equal(r.copied, {}, set);
    assert.equal(r.kept, [], set);
    assert.equal(r.unused, [], set);
    assert.equal(r.sessionOptions, { extra: { session: { model_external_initializers_file_folder_path: `${folder}/` } } }, set);
    const shards = [...new Set(Object.values(map))].sort();
    assert.equal(
      r.externalData,
      shards.map((s) => ({ path: s, data: join(folder, s) })),
      set,
    );
    assert.ok(r.model.length < 4000, `${set}: the model holds no weights (${r.model.length} bytes)`);
    close(await runNode(r), set);
  }
});

test('withWeights: onnxruntime (Python) reads each initializer from the shard the index names, and runs the model saved beside the index', async () => {
  for (const set of ['st', 'bin']) {
    const r = await withWeights(modelPath, sets[set]);
    const saved = join(dir, set, 'mlp-pointed.onnx');
    writeFileSync(saved, r.model);
    const got = JSON.parse(
      await pythonAsync(`
import onnx, onnxruntime as rt
m = onnx.load(${JSON.stringify(saved)}, load_external_data=False)
where = {t.name: dict((e.key, e.value) for e in t.external_data).get('location') for t in m.graph.initializer}
holding = sorted(t.name for t in m.graph.initializer if len(t.raw_data) or t.data_location != onnx.TensorProto.EXTERNAL)
y = rt.InferenceSession(${JSON.stringify(saved)}).run(None, {'x': np.load(${JSON.stringify(join(dir, 'x.npy'))})})[0]
print(json.dumps({'where': where, 'holding': holding, 'y': y.flatten().tolist()}))
`),
    );
    assert.equal(got.holding, [], `${set}: initializers holding bytes in the model`);
    assert.equal(got.where, weightMap(set), set);
    close(got.y, `${set}: onnxruntime-python`);
  }
});

test('withWeights: onnxruntime-web in Node runs the pointed model from { externalData }, one entry a shard', async () => {
  const web = await import('onnxruntime-web');
  web.env.wasm.numThreads = 1;
  const r = await withWeights(modelPath, sets.st);
  assert.is(r.externalData.length, 3);
  const session = await web.InferenceSession.create(r.model, { externalData: r.externalData });
  close(fromOrtTensor((await session.run({ x })).y).data, 'onnxruntime-web');
});

test("withWeights: a shard's tensor that is not aligned (a legacy torch.save shard) or big-endian (an .npz shard) is copied, saying why and in which shard; the others still point into theirs", async () => {
  for (const [set, why] of [
    ['legacy', /not a multiple of 4/],
    ['be', /big-endian/],
  ]) {
    const r = await withWeights(modelPath, sets[set]);
    const map = weightMap(set);
    const odd = [...new Set(Object.values(map))].sort()[1];
    const inOdd = Object.keys(map).filter((n) => map[n] === odd);
    assert.equal([...r.replaced].sort(), fixture.initializers, set);
    assert.equal([...r.external, ...Object.keys(r.copied)].sort(), fixture.initializers, set);
    assert.ok(Object.keys(r.copied).length > 0, `${set}: something is copied`);
    for (const [name, reason] of Object.entries(r.copied)) {
      assert.ok(inOdd.includes(name), `${set}: ${name} copied from ${map[name]}`);
      assert.match(reason, why, `${set}: ${name}`);
      assert.ok(reason.startsWith(`in ${odd}, `), `${set}: ${reason}`);
    }
    for (const name of r.external) assert.ok(set === 'legacy' || !inOdd.includes(name), `${set}: ${name} pointed into ${odd}`);
    assert.ok(
      r.external.some((n) => !inOdd.includes(n)),
      `${set}: the other shards are pointed into`,
    );
    const used = [...new Set(r.external.map((n) => map[n]))].sort();
    assert.equal(
      r.externalData.map((e) => e.path),
      used,
      set,
    );
    close(await runNode(r), set);
  }
});

test('withWeights: a sharded set given by URL is copied (only the swapped tensors fetched, by range), saying why, handed to ORT as external data in memory, and runs the same', async () => {
  const server = await serveFiles(dir);
  try {
    for (const set of ['st', 'bin']) {
      const url = `${server.base}/${set}/${sets[set].split('/').pop()}`;
      const r = await withWeights(modelPath, url);
      assert.equal(r.external, [], set);
      assert.equal(Object.keys(r.copied).sort(), fixture.initializers, set);
      for (const why of Object.values(r.copied)) assert.match(why, /not given as a local path/, set);
      // Each tensor fetched is its own buffer, for onnxruntime-node and -web alike.
      assert.equal(
        r.sessionOptions.externalData.map((f) => f.path),
        fixture.initializers.map((_, i) => `npyts-memory-${i}`),
        set,
      );
      assert.equal(r.externalData, r.sessionOptions.externalData, set);
      close(await runNode(r), `${set} by URL`);
    }
  } finally {
    await server.close();
  }
});

test("withWeights: a shard named outside the index's folder, or a link leading out of it, is refused before ORT is told to read it", async () => {
  const map = weightMap('st');
  const outward = join(dir, 'outward');
  mkdirSync(outward);
  const target = join(dir, 'outside');
  mkdirSync(target);
  for (const s of new Set(Object.values(map))) copyFileSync(join(dir, 'st', s), join(outward, s));
  const first = map['0.weight'];
  // A name through '..': the set refuses it.
  copyFileSync(join(dir, 'st', first), join(target, first));
  writeFileSync(join(outward, 'parent.index.json'), JSON.stringify({ metadata: {}, weight_map: { ...map, '0.weight': `../outside/${first}` } }));
  await refused(withWeights(modelPath, join(outward, 'parent.index.json')), 'UNSAFE_PATH', /outside|'\.\.'/);
  // A plain name that is a symbolic link to a file outside the folder.
  writeFileSync(join(outward, 'link.index.json'), JSON.stringify({ metadata: {}, weight_map: { ...map, '0.weight': 'linked.safetensors' } }));
  symlinkSync(join(target, first), join(outward, 'linked.safetensors'));
  await refused(withWeights(modelPath, join(outward, 'link.index.json')), 'UNSAFE_PATH', /symbolic link/);
});

test.run();
