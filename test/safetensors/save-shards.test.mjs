// Sharded .safetensors written (issue 70): `saveSafetensors(target, weights, { maxShardSize })`
// writes the files huggingface_hub's save_torch_state_dict writes for the same tensors, byte for
// byte, each rule of its split checked against the real function at test time.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync, readdirSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { memoryStore, parseShardSize, saveSafetensors as saveInStore } from '@npyts/core';
import { loadWeights, openWeights, saveSafetensors, saveSafetensorsSync } from '@npyts/core/node';
import { pythonAsync, runCli, scratch } from '../helpers/numpy.mjs';
import { refusedWith } from '../helpers/refusal.mjs';

const dir = scratch('npyts-save-shards-');

// Each case: tensors (name, dtype, shape, in insertion order) and a shard size; Python saves them
// with torch.save (what npyts reads) and with save_torch_state_dict (what npyts must write).
const cases = {
  // A shard closes when the next tensor would pass the limit; dtypes mixed (each shard's header orders them).
  order: {
    max: 64,
    tensors: [
      ['z.w', 'float32', [10]],
      ['a.w', 'float16', [12]],
      ['m.b', 'bfloat16', [20]],
      ['b', 'int64', [2]],
      ['flag', 'bool', [8]],
    ],
  },
  // A tensor over the limit is alone, numbered before the shard still filling.
  oversize: {
    max: 40,
    tensors: [
      ['a', 'float32', [4]],
      ['big', 'float32', [25]],
      ['b', 'float32', [4]],
      ['c', 'float32', [4]],
    ],
  },
  // One shard: model.safetensors, no index ("5GB", the default size, as a string).
  single: {
    max: '5GB',
    tensors: [
      ['x', 'float32', [3, 2]],
      ['y', 'int32', [5]],
    ],
  },
  // Names the index escapes as Python's json.dump does (ensure_ascii), a size string with spaces and lower case.
  names: {
    max: ' 0.05 kb',
    tensors: [
      ['café.wéight', 'float32', [8]],
      ['\u{1F600}', 'float32', [8]],
      ['q"\\', 'float32', [8]],
    ],
  },
  // Tied weights (one tensor under two names): saved once, the other name in the index's metadata.
  tied: {
    max: 48,
    tie: ['lm_head.weight', 'wte.weight'],
    tensors: [
      ['wte.weight', 'float32', [4, 2]],
      ['h.0', 'float32', [8]],
      ['h.1', 'float32', [8]],
    ],
  },
  // Tied, one file: the dropped name in the file's metadata (whose key order the Rust writer leaves to its hash map).
  tiedOne: {
    max: '1GB',
    tie: ['lm_head.weight', 'wte.weight'],
    tensors: [
      ['wte.weight', 'float32', [4, 2]],
      ['h.0', 'float32', [8]],
    ],
  },
};

const made = pythonAsync(`
import torch, json, os
from huggingface_hub import save_torch_state_dict
torch.manual_seed(7)
cases = json.loads(${JSON.stringify(JSON.stringify(cases))})
for name, case in cases.items():
    sd = {}
    for n, dtype, shape in case['tensors']:
        dt = getattr(torch, dtype)
        t = torch.randn(shape) * 100
        sd[n] = t > 0 if dtype == 'bool' else t.to(dt)
    if 'tie' in case:
        sd[case['tie'][0]] = sd[case['tie'][1]]
    torch.save(sd, os.path.join(${JSON.stringify(dir)}, name + '.pt'))
    out = os.path.join(${JSON.stringify(dir)}, name + '-hf')
    os.makedirs(out)
    save_torch_state_dict(sd, out, max_shard_size=case['max'])
`);

/** The tensors of a case as npyts reads its torch.save file: lazily, or in memory with its ties. */
async function caseTensors(name, lazy) {
  const pt = join(dir, `${name}.pt`);
  if (lazy) return openWeights(pt);
  const map = await loadWeights(pt);
  const tie = cases[name].tie;
  if (tie) map.set(tie[0], map.get(tie[1])); // the same array under two names, in torch's order
  return map;
}

function sameFolders(ours, theirs) {
  const names = readdirSync(theirs).sort();
  assert.equal(readdirSync(ours).sort(), names);
  for (const f of names) assert.ok(Buffer.compare(readFileSync(join(ours, f)), readFileSync(join(theirs, f))) === 0, `${f} differs from huggingface_hub's`);
}

for (const name of ['order', 'oversize', 'names', 'single']) {
  test(`${name}: the files save_torch_state_dict writes, byte for byte (from a lazy weight file)`, async () => {
    await made;
    const out = join(dir, `${name}-ours`);
    const w = await caseTensors(name, true);
    try {
      await saveSafetensors(out, w, { maxShardSize: cases[name].max });
    } finally {
      await w.close();
    }
    sameFolders(out, join(dir, `${name}-hf`));
  });
}

test('a lazy save reads every tensor of a torch.save file into one buffer, reused (not one buffer per tensor, freed late)', async () => {
  await made;
  const w = await caseTensors('order', true);
  const buffers = new Set();
  const source = {
    names: w.names,
    info: (name, o) => w.info(name, o),
    get: async (name, o) => {
      const a = await w.get(name, o);
      buffers.add(a.data.buffer);
      return a;
    },
  };
  const out = join(dir, 'order-one-buffer');
  try {
    await saveSafetensors(out, source, { maxShardSize: cases.order.max });
  } finally {
    await w.close();
  }
  sameFolders(out, join(dir, 'order-hf'));
  // The first tensor is the largest: every later one fits the buffer it was read into.
  assert.is(buffers.size, 1, `${cases.order.tensors.length} tensors read into ${buffers.size} buffers`);
});

test('tied: one tensor under two names is saved once, the other named in the index (sync, in memory)', async () => {
  await made;
  const out = join(dir, 'tied-ours');
  saveSafetensorsSync(out, await caseTensors('tied', false), { maxShardSize: cases.tied.max });
  sameFolders(out, join(dir, 'tied-hf'));
  assert.equal(JSON.parse(readFileSync(join(out, 'model.safetensors.index.json'), 'utf8')).metadata['wte.weight'], 'lm_head.weight');
});

test('tied in a torch.save file (one storage, two names), read lazily: saved once as huggingface_hub saves it', async () => {
  await made;
  const out = join(dir, 'tied-lazy');
  const w = await caseTensors('tied', true);
  try {
    await saveSafetensors(out, w, { maxShardSize: cases.tied.max });
  } finally {
    await w.close();
  }
  sameFolders(out, join(dir, 'tied-hf'));
});

test('tied, one file: the same header (metadata compared as a set) and data', async () => {
  await made;
  const out = join(dir, 'tiedOne-ours');
  await saveSafetensors(out, await caseTensors('tiedOne', false), { maxShardSize: cases.tiedOne.max });
  assert.equal(readdirSync(out), ['model.safetensors']);
  assert.equal(readdirSync(join(dir, 'tiedOne-hf')), ['model.safetensors']);
  const parts = (p) => {
    const b = readFileSync(p);
    const n = Number(b.readBigUInt64LE(0));
    const header = JSON.parse(b.subarray(8, 8 + n).toString());
    return { header, metadata: Object.entries(header.__metadata__).sort(), data: b.subarray(8 + n), n };
  };
  const ours = parts(join(out, 'model.safetensors'));
  const theirs = parts(join(dir, 'tiedOne-hf', 'model.safetensors'));
  assert.equal(ours.metadata, theirs.metadata);
  assert.equal(ours.metadata, [
    ['format', 'pt'],
    ['wte.weight', 'lm_head.weight'],
  ]);
  delete ours.header.__metadata__;
  delete theirs.header.__metadata__;
  assert.equal(ours.header, theirs.header);
  assert.is(ours.n, theirs.n);
  assert.ok(Buffer.compare(ours.data, theirs.data) === 0);
});

test('DIR/NAME.safetensors names the files; an earlier save of more shards is cleared as huggingface_hub clears it', async () => {
  await made;
  const out = join(dir, 'named');
  mkdirSync(out);
  for (const f of ['w-00001-of-00003.safetensors', 'w-00003-of-00003.safetensors', 'w.safetensors.index.json', 'keep.txt', 'w.safetensors.bak'])
    writeFileSync(join(out, f), 'old');
  await saveSafetensors(join(out, 'w.safetensors'), await caseTensors('oversize', false), { maxShardSize: cases.oversize.max });
  assert.equal(readdirSync(out).sort(), [
    'keep.txt',
    'w-00001-of-00003.safetensors',
    'w-00002-of-00003.safetensors',
    'w-00003-of-00003.safetensors',
    'w.safetensors.bak',
    'w.safetensors.index.json',
  ]);
  for (const f of readdirSync(join(dir, 'oversize-hf')).filter((f) => !f.endsWith('.json')))
    assert.ok(readFileSync(join(out, f.replace(/^model/, 'w'))).length === readFileSync(join(dir, 'oversize-hf', f)).length, f);
  // Now one file: the stale shards and index go.
  await saveSafetensors(join(out, 'w.safetensors'), await caseTensors('oversize', false), { maxShardSize: '1GB' });
  assert.equal(readdirSync(out).sort(), ['keep.txt', 'w.safetensors', 'w.safetensors.bak']);
});

test('a save that fails midway leaves the earlier set whole: no shard renamed, no file beside; a get() that differs from its info() is refused', async () => {
  const out = join(dir, 'midway');
  const f32 = (n, v) => ({ data: new Float32Array(n).fill(v), shape: [n] });
  await saveSafetensors(out, { a: f32(256, 1), b: f32(256, 2), c: f32(256, 3) }, { maxShardSize: 1100 });
  const before = Object.fromEntries(readdirSync(out).map((f) => [f, readFileSync(join(out, f))]));
  assert.is(Object.keys(before).length, 4);
  // A lazy source in another order whose last tensor cannot be read: shards 1 and 2 are complete first.
  const lazy = (get) => ({
    names: ['c', 'b', 'a'],
    info: async (name) => ({ dtype: (await loadWeights(join(out, 'model.safetensors.index.json'))).get(name).dtype, shape: [256] }),
    get,
  });
  const failing = lazy(async (name) => {
    if (name === 'a') throw new Error('the disk went away');
    return { data: new Float32Array(256).fill(name === 'b' ? 20 : 30), shape: [256] };
  });
  const failed = await saveSafetensors(out, failing, { maxShardSize: 1100 }).then(
    () => null,
    (e) => e,
  );
  assert.match(String(failed), /the disk went away/, String(failed?.stack ?? failed));
  assert.equal(Object.fromEntries(readdirSync(out).map((f) => [f, readFileSync(join(out, f))])), before);
  // A size refused is refused before the folder is made.
  await refusedWith(saveSafetensors(join(dir, 'never', 'made'), { a: f32(4, 1) }, { maxShardSize: '5 GiB' }), 'BAD_OPTION');
  assert.not.ok(existsSync(join(dir, 'never')));
  // A source whose get() gives other data than its info() said is refused, not written under that header.
  const lying = lazy(async () => ({ data: new Int32Array(256), shape: [256] }));
  await refusedWith(saveSafetensors(join(dir, 'lying'), lying, { maxShardSize: 1100 }), 'UNEXPECTED_DTYPE', "'c' read as int32");
});

/** A memory store that records what is done to it, in order: creates, commits, aborts, removes. */
function loggedStore() {
  const store = memoryStore();
  const log = [];
  return {
    log,
    store: {
      ...store,
      create(key) {
        log.push(`create ${key}`);
        const w = store.create(key);
        return {
          write: w.write,
          commit() {
            log.push(`commit ${key}`);
            return w.commit();
          },
          abort() {
            log.push(`abort ${key}`);
            return w.abort();
          },
        };
      },
      remove(key) {
        log.push(`remove ${key}`);
        return store.remove(key);
      },
    },
    files: store.files,
  };
}

test('through a store, from a lazy weight file: the files save_torch_state_dict writes; every shard written before any is committed, the old index removed first, the new one last', async () => {
  await made;
  const { store, files, log } = loggedStore();
  files.set('m/model-00009-of-00009.safetensors', new Uint8Array(1)); // an earlier save's shard: cleared
  files.set('m/sub/model.safetensors', new Uint8Array(1)); // in a folder below: kept
  const w = await caseTensors('oversize', true);
  try {
    await saveInStore('m/', w, { store, maxShardSize: cases.oversize.max });
  } finally {
    await w.close();
  }
  const hf = join(dir, 'oversize-hf');
  const names = readdirSync(hf).sort();
  assert.equal([...files.keys()].sort(), [...names.map((f) => `m/${f}`), 'm/sub/model.safetensors'].sort());
  for (const f of names) assert.ok(Buffer.compare(files.get(`m/${f}`), readFileSync(join(hf, f))) === 0, `${f} differs from huggingface_hub's`);
  const shards = names.filter((f) => !f.endsWith('.json')).map((f) => `m/${f}`);
  assert.equal(log, [
    ...shards.map((k) => `create ${k}`),
    'remove m/model.safetensors.index.json',
    ...shards.map((k) => `commit ${k}`),
    'create m/model.safetensors.index.json',
    'commit m/model.safetensors.index.json',
    'remove m/model-00009-of-00009.safetensors',
  ]);
});

test('through a store: DIR/NAME.safetensors names the files (held arrays, sync store); a save that fails midway commits nothing', async () => {
  await made;
  const { store, files, log } = loggedStore();
  await saveInStore('x/w.safetensors', await caseTensors('order', false), { store, maxShardSize: cases.order.max });
  const hf = join(dir, 'order-hf');
  for (const f of readdirSync(hf)) {
    // The index names the shards by the pattern: huggingface_hub's with `w` for `model`.
    const theirs = f.endsWith('.json') ? Buffer.from(readFileSync(join(hf, f), 'utf8').replaceAll('"model-', '"w-')) : readFileSync(join(hf, f));
    assert.ok(Buffer.compare(files.get(`x/${f.replace(/^model/, 'w')}`) ?? new Uint8Array(), theirs) === 0, f);
  }
  assert.is(files.size, readdirSync(hf).length);
  const before = new Map(files);
  log.length = 0;
  // A lazy source whose last tensor cannot be read: the earlier shards are written, none committed.
  const f32 = { data: new Float32Array(256), shape: [256] };
  const source = {
    names: ['c', 'b', 'a'],
    info: async () => ({ dtype: (await loadWeights(join(dir, 'order.pt'))).get('z.w').dtype, shape: [256] }),
    get: async (name) => {
      if (name === 'a') throw new Error('the network went away');
      return f32;
    },
  };
  const failed = await saveInStore('x/w.safetensors', source, { store, maxShardSize: 1100 }).then(
    () => null,
    (e) => e,
  );
  assert.match(String(failed), /the network went away/);
  assert.equal(log, [
    'create x/w-00001-of-00003.safetensors',
    'create x/w-00002-of-00003.safetensors',
    'create x/w-00003-of-00003.safetensors',
    'abort x/w-00001-of-00003.safetensors',
    'abort x/w-00002-of-00003.safetensors',
    'abort x/w-00003-of-00003.safetensors',
  ]);
  assert.equal(files, before);
});

test('size strings read as parse_size_to_int reads them; what it refuses is refused', async () => {
  const sizes = ['5GB', '1.5gb', ' 2 KB ', '0.001TB', '3MB', '.5KB', '1e3KB', '12.34567MB'];
  const want = JSON.parse(
    await pythonAsync(`
import json
from huggingface_hub.serialization._base import parse_size_to_int
print(json.dumps([parse_size_to_int(s) for s in ${JSON.stringify(sizes)}]))
for bad in ['5MiB', '5', 'GB']:
    try:
        parse_size_to_int(bad)
        raise SystemExit(bad + ' was accepted')
    except ValueError:
        pass
`),
  );
  assert.equal(
    sizes.map((s) => parseShardSize(s)),
    want,
  );
  for (const bad of ['5MiB', '5', 'GB'])
    assert.throws(
      () => parseShardSize(bad),
      (e) => e.code === 'BAD_OPTION',
      bad,
    );
  await refusedWith(saveSafetensors(join(dir, 'none'), new Map(), { maxShardSize: 10 }), 'BAD_OPTION', /no tensors/);
  assert.not.ok(existsSync(join(dir, 'none', 'model.safetensors')));
});

test('npyts convert of a pytorch_model.bin.index.json set: the shards save_torch_state_dict writes of its tensors', async () => {
  const bins = join(dir, 'bins');
  const hf = join(dir, 'bins-hf');
  await pythonAsync(`
import torch, json, os
from huggingface_hub import save_torch_state_dict, split_torch_state_dict_into_shards
torch.manual_seed(2)
sd = {f'layer.{i}.weight': torch.randn(4, 6) for i in range(5)}
sd['head.bias'] = torch.randn(3).to(torch.float16)
os.makedirs(${JSON.stringify(bins)})
split = split_torch_state_dict_into_shards(sd, filename_pattern='pytorch_model{suffix}.bin', max_shard_size=200)
for file, names in split.filename_to_tensors.items():
    torch.save({n: sd[n] for n in names}, os.path.join(${JSON.stringify(bins)}, file))
json.dump({'metadata': split.metadata, 'weight_map': split.tensor_to_filename}, open(os.path.join(${JSON.stringify(bins)}, 'pytorch_model.bin.index.json'), 'w'), indent=2)
# The set's tensors as transformers gathers them, in the index's order, saved by huggingface_hub.
index = json.load(open(os.path.join(${JSON.stringify(bins)}, 'pytorch_model.bin.index.json')))['weight_map']
loaded = {f: torch.load(os.path.join(${JSON.stringify(bins)}, f), weights_only=True) for f in set(index.values())}
os.makedirs(${JSON.stringify(hf)})
save_torch_state_dict({n: loaded[f][n] for n, f in index.items()}, ${JSON.stringify(hf)}, max_shard_size='0.25KB')
`);
  const out = join(dir, 'bins-ours');
  const r = await runCli(['convert', join(bins, 'pytorch_model.bin.index.json'), join(out, 'model.safetensors'), '--max-shard-size', '0.25KB']);
  assert.is(r.code, 0, r.stderr);
  sameFolders(out, hf);
});

test('npyts convert streams a .pt into shards with --max-shard-size; huggingface_hub loads them into the model', async () => {
  await made;
  const pt = join(dir, 'net.pt');
  await pythonAsync(`
import torch
torch.manual_seed(1)
net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
torch.save(net.state_dict(), ${JSON.stringify(pt)})
`);
  const out = join(dir, 'net-st');
  const r = await runCli(['convert', pt, join(out, 'model.safetensors'), '--max-shard-size', '300']);
  assert.is(r.code, 0, r.stderr);
  assert.ok(existsSync(join(out, 'model.safetensors.index.json')));
  await pythonAsync(`
import torch
from huggingface_hub import load_torch_model
net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
load_torch_model(net, ${JSON.stringify(out)}, strict=True)
want = torch.load(${JSON.stringify(pt)}, weights_only=True)
for k, v in net.state_dict().items():
    assert torch.equal(v, want[k]), k
`);
});

test.run();
