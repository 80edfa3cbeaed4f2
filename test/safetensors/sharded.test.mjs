// Sharded sets (issue 55): transformers' `pytorch_model.bin.index.json` (torch.save shards, split by
// huggingface_hub's splitter as save_pretrained(safe_serialization=False, max_shard_size=…) did in
// transformers 4) reads as torch.load reads each shard; and a remote set reads only the shards a call needs.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openWeights as openWeightsAnywhere, toFloat32 } from '@npyts/core';
import { loadWeights, openWeights } from '@npyts/core/node';
import { python, scratch } from '../helpers/numpy.mjs';
import { serveFiles } from '../helpers/serve-files.mjs';

const dir = scratch('npyts-sharded-');
const bin = join(dir, 'bin');
const st = join(dir, 'st');

// A small BERT (transformers' own modules, when installed; else an equivalent torch module), split
// by huggingface_hub's splitter (what save_pretrained calls; when it is missing, the same greedy split) and saved
// the ways transformers saves: .bin shards with their index, and (for the lazy test) four .safetensors shards.
python(`
import torch, json, os
try:
    from huggingface_hub import split_torch_state_dict_into_shards
except ImportError:
    # Without huggingface_hub (installed with transformers): its greedy split, in file order.
    from types import SimpleNamespace
    def split_torch_state_dict_into_shards(sd, filename_pattern, max_shard_size):
        shards, size = [[]], 0
        for n, t in sd.items():
            b = t.numel() * t.element_size()
            if shards[-1] and size + b > max_shard_size:
                shards.append([])
                size = 0
            shards[-1].append(n)
            size += b
        files = {filename_pattern.format(suffix=f'-{i + 1:05d}-of-{len(shards):05d}'): names for i, names in enumerate(shards)}
        return SimpleNamespace(filename_to_tensors=files, tensor_to_filename={n: f for f, names in files.items() for n in names},
                               metadata={'total_size': sum(t.numel() * t.element_size() for t in sd.values())})
from safetensors.torch import save_file
torch.manual_seed(3)
try:
    from transformers import BertConfig, BertModel
    model = BertModel(BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=16))
except ImportError:
    model = torch.nn.Sequential(torch.nn.Embedding(64, 16), torch.nn.Linear(16, 32), torch.nn.Linear(32, 16), torch.nn.LayerNorm(16))
sd = {k: v.contiguous() for k, v in model.state_dict().items()}
for folder, pattern, save in [(${JSON.stringify(bin)}, 'pytorch_model{suffix}.bin', torch.save), (${JSON.stringify(st)}, 'model{suffix}.safetensors', save_file)]:
    os.makedirs(folder, exist_ok=True)
    split = split_torch_state_dict_into_shards(sd, filename_pattern=pattern, max_shard_size=sum(t.numel() * 4 for t in sd.values()) // 4 + 1)
    for file, names in split.filename_to_tensors.items():
        save({n: sd[n] for n in names}, os.path.join(folder, file))
    index = {'metadata': split.metadata, 'weight_map': split.tensor_to_filename}
    json.dump(index, open(os.path.join(folder, pattern.format(suffix='') + '.index.json'), 'w'), indent=2)
# What torch.load gives, shard by shard (weights_only, as transformers loads them).
want = {}
for file in sorted(set(json.load(open(${JSON.stringify(join(bin, 'pytorch_model.bin.index.json'))}))['weight_map'].values())):
    for n, t in torch.load(os.path.join(${JSON.stringify(bin)}, file), weights_only=True).items():
        want[n] = {'shape': list(t.shape), 'values': t.flatten().tolist()}
json.dump(want, open(${JSON.stringify(join(dir, 'want.json'))}, 'w'))
`);
const want = JSON.parse(readFileSync(join(dir, 'want.json'), 'utf8'));
const binIndex = JSON.parse(readFileSync(join(bin, 'pytorch_model.bin.index.json'), 'utf8'));
const stIndex = JSON.parse(readFileSync(join(st, 'model.safetensors.index.json'), 'utf8'));

function checkAll(all) {
  assert.equal([...all.keys()].sort(), Object.keys(want).sort());
  for (const [name, { shape, values }] of Object.entries(want)) {
    const a = all.get(name);
    assert.equal(a.shape, shape, name);
    assert.equal(Array.from(toFloat32(a).data), values, name);
  }
}

test('a sharded pytorch_model.bin.index.json reads as torch.load reads each shard (on disk and over HTTP)', async () => {
  assert.ok(new Set(Object.values(binIndex.weight_map)).size >= 3, 'the set has several shards');
  const w = await openWeights(join(bin, 'pytorch_model.bin.index.json'));
  assert.is(w.format, 'sharded');
  assert.equal(w.names, Object.keys(binIndex.weight_map));
  assert.equal(w.metadata, binIndex.metadata);
  await w.close();
  checkAll(await loadWeights(join(bin, 'pytorch_model.bin.index.json')));
  const server = await serveFiles(dir);
  try {
    const remote = await openWeightsAnywhere(`${server.base}/bin/pytorch_model.bin.index.json`);
    checkAll(await remote.getAll());
    const [name] = remote.names;
    assert.equal((await remote.info(name)).shape, want[name].shape);
    await remote.close();
  } finally {
    await server.close();
  }
});

test('a remote set of four shards or more: opening it reads no shard, one get reads only its shard, listing every info reads each header', async () => {
  const shards = [...new Set(Object.values(stIndex.weight_map))];
  assert.ok(shards.length >= 4, `${shards.length} shards`);
  const server = await serveFiles(dir);
  const shardsAsked = () => [...new Set(server.log.map((r) => r.path.split('/').pop()).filter((f) => shards.includes(f)))].sort();
  try {
    const w = await openWeightsAnywhere(`${server.base}/st/model.safetensors.index.json`);
    assert.equal(shardsAsked(), []);
    const name = Object.keys(stIndex.weight_map).find((n) => stIndex.weight_map[n] === shards[2]);
    assert.equal(Array.from(toFloat32(await w.get(name)).data), want[name].values);
    assert.equal(shardsAsked(), [shards[2]]);
    // Another tensor of the same shard reads no other shard either.
    const again = Object.keys(stIndex.weight_map)
      .filter((n) => stIndex.weight_map[n] === shards[2])
      .at(-1);
    await w.get(again);
    assert.equal(shardsAsked(), [shards[2]]);
    for (const n of w.names) assert.equal((await w.info(n)).shape, want[n].shape, n);
    assert.equal(shardsAsked(), [...shards].sort());
    await w.close();
  } finally {
    await server.close();
  }
});

test.run();
