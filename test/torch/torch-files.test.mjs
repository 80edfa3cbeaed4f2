// torch.save files read without Python and without running code, against PyTorch 2.x (python3) and
// Debian's PyTorch 1.13 (/usr/bin/python3): state_dicts of real modules, every dtype, views that
// share a storage, transposed and strided views, slices of larger storages (only the slice is read),
// 0-d and empty tensors, nested checkpoints (dotted names, { root }, metadata); a whole pickled module
// and a data.pkl that calls os.system are refused, and nothing runs. (The legacy format: torch-round-four.)
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bytesSource } from '@npyts/core';
import { openWeights } from '@npyts/core/node';
import { scratch } from '../helpers/numpy.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';
import { checkAgainstTorch, torchAsync } from '../helpers/torch-truth.mjs';

const dir = scratch('npyts-torch-');
const file = (name) => join(dir, name);

const MODULES = `
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.LSTM(8, 5, batch_first=True))
m[1].running_mean.uniform_(); m[1].running_var.uniform_(0.5, 2); m[1].num_batches_tracked += 12
torch.save(m.state_dict(), sys.argv[1] if len(sys.argv) > 1 else PATH)
`;

test('state_dicts of real modules (conv, BatchNorm with num_batches_tracked, LSTM): torch 2.x and torch 1.13', async () => {
  for (const [which, name] of [
    ['python3', 'new.pt'],
    ['/usr/bin/python3', 'old.pt'],
  ]) {
    await torchAsync(which, `PATH = ${JSON.stringify(file(name))}\n${MODULES}`);
    const got = await checkAgainstTorch(which, file(name));
    assert.ok(got.has('1.num_batches_tracked') && got.has('4.weight_hh_l0'));
    assert.is(got.get('1.num_batches_tracked').data[0], 12n);
  }
});

test('every dtype torch has, bfloat16 and float8 included', async () => {
  await torchAsync(
    'python3',
    `torch.manual_seed(1)
x = torch.randn(2, 3) * 20
d = {str(t).split('.')[1]: x.to(t) for t in [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool, torch.float8_e4m3fn, torch.float8_e5m2, torch.uint16, torch.uint32, torch.uint64]}
d['uint16'] = torch.arange(6, dtype=torch.int32).to(torch.uint16) * 9000; d['uint64'] = torch.tensor([2**63 + 1], dtype=torch.uint64)
d['complex64'] = torch.randn(3, dtype=torch.complex64); d['complex128'] = torch.randn(2, dtype=torch.complex128)
torch.save(d, ${JSON.stringify(file('dtypes.pt'))})`,
  );
  const got = await checkAgainstTorch('python3', file('dtypes.pt'));
  assert.is(got.get('bfloat16').dtype.name, 'bfloat16');
  assert.is(got.get('float8_e4m3fn').dtype.name, 'float8_e4m3fn');
  assert.is(got.get('uint64').data[0], 2n ** 63n + 1n);
});

test('views: shared storages, transposed and strided views, a slice of a larger storage (only the slice read), 0-d, empty', async () => {
  await torchAsync(
    'python3',
    `torch.manual_seed(2)
w = torch.randn(64, 1024)
torch.save({'w': w, 'same': w, 't': w.t(), 'strided': w[:, ::3], 'slice': w[40:42], 'col': w[:, 5], 'scalar': torch.tensor(2.5), 'empty': torch.zeros(0, 7), 'permuted': torch.randn(2, 3, 4).permute(2, 0, 1)}, ${JSON.stringify(file('views.pt'))})`,
  );
  const got = await checkAgainstTorch('python3', file('views.pt'));
  assert.is(got.get('t').order, 'F', 'a transposed view is read in place as Fortran order');
  // Only the slice's bytes are read from the 256 KiB storage: count a source's reads.
  const bytes = readFileSync(file('views.pt'));
  let moved = 0;
  let reads = 0;
  const base = bytesSource(bytes, 'views.pt');
  const counting = {
    size: base.size,
    name: 'views.pt',
    read: async (at, length) => {
      const b = base.read(at, length);
      moved += b.length;
      reads++;
      return b.slice();
    },
  };
  const w = await openWeights(counting);
  const before = moved;
  const slice = await w.get('slice');
  assert.equal(slice.shape, [2, 1024]);
  assert.ok(moved - before <= 2 * 1024 * 4 + (64 << 10), `read ${moved - before} bytes for an 8 KiB slice`);
  // Another view of the same storage finds it where the first did: one read, its bytes.
  const readsBefore = reads;
  assert.equal((await w.get('same')).shape, [64, 1024]);
  assert.is(reads - readsBefore, 1);
  await w.close();
});

test('a nested checkpoint: dotted names, metadata, { root }', async () => {
  await torchAsync(
    'python3',
    `PATH = ${JSON.stringify(file('sd.pt'))}
${MODULES}
sd = torch.load(PATH)
m2 = torch.nn.Linear(3, 2)
opt = torch.optim.Adam(m2.parameters()); m2(torch.ones(1, 3)).sum().backward(); opt.step()
torch.save({'model': sd, 'optimizer': opt.state_dict(), 'epoch': 7, 'note': 'hi'}, ${JSON.stringify(file('nested.pt'))})`,
  );
  await checkAgainstTorch('python3', file('nested.pt'));
  const w = await openWeights(file('nested.pt'));
  assert.is(w.format, 'torch');
  assert.ok(w.names.includes('model.0.weight') && w.names.includes('optimizer.state.0.exp_avg'));
  assert.is(w.metadata.epoch, 7);
  assert.is(w.metadata.note, 'hi');
  assert.is(w.metadata['optimizer.param_groups.0.lr'], 0.001);
  await w.close();
  await checkAgainstTorch('python3', file('nested.pt'), { root: 'model' });
  const missing = await npyErrorOf(() => openWeights(file('nested.pt'), { root: 'nope' }));
  assert.is(missing.code, 'NPZ_KEY');
  assert.match(missing.message, /'model'/);
});

test('refused, with nothing run: a whole pickled module, a data.pkl that calls os.system', async () => {
  const marker = file('ran');
  await torchAsync(
    'python3',
    `import zipfile, pickle, os
torch.save(torch.nn.Linear(2, 2), ${JSON.stringify(file('module.pt'))})
class Evil:
    def __reduce__(self):
        return (os.system, ('touch ${marker}',))
torch.save({'w': torch.ones(2)}, ${JSON.stringify(file('good.pt'))})
src = zipfile.ZipFile(${JSON.stringify(file('good.pt'))})
with zipfile.ZipFile(${JSON.stringify(file('evil.pt'))}, 'w') as z:
    for i in src.infolist():
        z.writestr(i, pickle.dumps({'w': Evil()}, protocol=2) if i.filename.endswith('data.pkl') else src.read(i))
refused = []
for p in ['module.pt', 'evil.pt']:
    try:
        torch.load(${JSON.stringify(dir)} + '/' + p, weights_only=True)
    except Exception:
        refused.append(p)
print(json.dumps(refused))`,
  );
  const module = await npyErrorOf(() => openWeights(file('module.pt')));
  assert.is(module.code, 'PICKLE_FORBIDDEN');
  assert.match(module.message, /state_dict\(\)/);
  const evil = await npyErrorOf(() => openWeights(file('evil.pt')));
  assert.is(evil.code, 'PICKLE_FORBIDDEN');
  assert.match(evil.message, /posix\.system|os\.system/);
  assert.not.ok(existsSync(marker), 'os.system never ran');
});

test('hostile checkpoints: bounded by the bytes present, never by the shapes or sizes they declare', async () => {
  const reference = await torchAsync(
    'python3',
    `import zipfile, pickle, io
d = ${JSON.stringify(dir)}
# A view 10^12 elements large over one stored element: torch keeps it lazily; an array would not fit.
torch.save({'x': torch.zeros(1).expand(10**6, 10**6)}, d + '/expand.pt')
torch.save({'w': torch.ones(1000)}, d + '/good2.pt')
src = zipfile.ZipFile(d + '/good2.pt')
members = [(i.filename, src.read(i)) for i in src.infolist()]
def rewrite(path, change):
    with zipfile.ZipFile(path, 'w') as z:
        for n, b in members:
            z.writestr(n, change(n, b))
# The storage cut short; a storage key that climbs out of data/; two checkpoints in one zip.
rewrite(d + '/short.pt', lambda n, b: b[:100] if n.endswith('data/0') else b)
rewrite(d + '/climb.pt', lambda n, b: b.replace(b'X' + (1).to_bytes(4, 'little') + b'0', b'X' + (4).to_bytes(4, 'little') + b'../0') if n.endswith('data.pkl') else b)
with zipfile.ZipFile(d + '/two.pt', 'w') as z:
    for n, b in members:
        z.writestr(n, b)
        if n.endswith('data.pkl'): z.writestr('other/data.pkl', b)
out = {}
for p in ['short', 'climb', 'two']:
    try:
        x = torch.load(d + '/' + p + '.pt', weights_only=True)
        out[p] = 'loads'
    except Exception as e:
        out[p] = 'refuses'
print(json.dumps(out))`,
  );
  // PyTorch refuses each of the crafted files too.
  assert.equal(reference, { short: 'refuses', climb: 'refuses', two: 'refuses' });
  const expand = await openWeights(file('expand.pt'));
  assert.equal((await expand.info('x')).shape, [1e6, 1e6]);
  // torch reads it lazily; npyts copies repeated elements out only up to 1 GiB (see torch-round-four).
  const big = await npyErrorOf(() => expand.get('x'));
  assert.is(big.code, 'TOO_LARGE');
  assert.match(big.message, /contiguous/);
  await expand.close();
  const short = await openWeights(file('short.pt'));
  assert.is((await npyErrorOf(() => short.get('w'))).code, 'DATA_TRUNCATED');
  await short.close();
  assert.is((await npyErrorOf(() => openWeights(file('climb.pt')))).code, 'BAD_PICKLE');
  assert.is((await npyErrorOf(() => openWeights(file('two.pt')))).code, 'ZIP_FORMAT');
});

test.run();
