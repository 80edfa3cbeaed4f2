// Reference sets (issue 69): each array npyts finds in a .npy, a stored .npz, a .safetensors file or a torch.save zip,
// and .npy files joined along axis 0, is read through the set by the engines themselves, equal to
// numpy's own reading bit for bit: Zarr v2 by fsspec's reference filesystem with zarr-python, xarray
// and dask on a LocalCluster (Debian's /usr/bin/python3), Zarr v3 by tensorstore, whose zarr3 driver
// is strict about the metadata (the bytes each reference names are fetched for it by the test).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { encodeNpy, memoryStore, openNpz as openNpzAny, openWeights as openWeightsAny, referencesOf as referencesOfAny } from '@npyts/core';
import { openNpz, openWeights, referencesOf } from '@npyts/core/node';
import { python, runCli, scratch } from '../helpers/numpy.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';
import { serveFiles } from '../helpers/serve-files.mjs';

const dir = scratch('npyts-refs-');
const at = (name) => join(dir, name);

// Fixtures, written by numpy (and safetensors' own writer) at test time.
python(`import os
from safetensors.numpy import save_file
d = ${JSON.stringify(dir)}
rng = np.random.default_rng(5)
np.save(f'{d}/c.npy', rng.standard_normal((12, 3)).astype('<f4'))
np.save(f'{d}/f.npy', np.asfortranarray(rng.integers(-999, 999, (4, 5, 6)).astype('>i2')))
np.save(f'{d}/b.npy', rng.integers(0, 2, 7).astype(bool))
np.save(f'{d}/z.npy', (rng.standard_normal((6, 2)) + 1j * rng.standard_normal((6, 2))).astype('<c16'))
np.save(f'{d}/h.npy', np.array([1.5, -0.0, np.inf, 65504], '<f2'))
np.save(f'{d}/s.npy', np.array([b'ab', b'', b'xyzzy'], 'S5'))
np.save(f'{d}/u.npy', np.array(['é', 'ab', ''], '<U3'))
np.save(f'{d}/t.npy', np.array([0, -1, 2**40], '<M8[ns]'))
np.save(f'{d}/scalar.npy', np.float64(np.pi))
np.save(f'{d}/empty.npy', np.zeros((0, 3), '<f8'))
np.save(f'{d}/prime.npy', np.arange(13 * 2, dtype='<i8').reshape(13, 2))
np.savez(f'{d}/stored.npz', x=rng.standard_normal((10, 4)), y=np.arange(3, dtype='<i8'))
np.savez_compressed(f'{d}/deflated.npz', x=np.arange(3))
save_file({'w': rng.standard_normal((8, 4)).astype('<f4'), 'b': np.arange(4, dtype='<i8'), 'h': np.ones((2, 2), '<f2')}, f'{d}/m.safetensors')
for i, n in enumerate([6, 12, 6, 18, 6]):
    np.save(f'{d}/part-{i}.npy', np.arange(n * 2, dtype='<i8').reshape(n, 2) + 1000 * i)
os.makedirs(f'{d}/set', exist_ok=True)
shards = [{'a.w': rng.standard_normal((6, 2)).astype('<f4'), 'a.b': np.arange(5, dtype='<i4')}, {'b.w': rng.standard_normal((3, 3)).astype('<f8')}]
weight_map = {}
for i, t in enumerate(shards):
    name = f'model-0000{i + 1}-of-00002.safetensors'
    save_file(t, f'{d}/set/{name}')
    weight_map.update({k: name for k in t})
json.dump({'metadata': {}, 'weight_map': weight_map}, open(f'{d}/set/model.safetensors.index.json', 'w'))
import gguf
w = gguf.GGUFWriter(f'{d}/m.gguf', 'llama')
w.add_tensor('f32', rng.standard_normal((4, 6)).astype(np.float32))
w.add_tensor('f16', rng.standard_normal((2, 3, 4)).astype(np.float16))
w.add_tensor('i32', np.arange(7, dtype=np.int32))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
w = gguf.GGUFWriter(f'{d}/q.gguf', 'llama')
w.add_tensor('q', gguf.quants.quantize(np.ones((2, 32), np.float32), gguf.GGMLQuantizationType.Q8_0), raw_dtype=gguf.GGMLQuantizationType.Q8_0)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
# A bfloat16 tensor, written as safetensors writes one: no Zarr reader has a type for it.
head = json.dumps({'w': {'dtype': 'BF16', 'shape': [2], 'data_offsets': [0, 4]}}).encode()
head += b' ' * (-len(head) % 8)
open(f'{d}/bf16.safetensors', 'wb').write(len(head).to_bytes(8, 'little') + head + b'\\0' * 4)
# A torch.save zip: tensors of several dtypes, a slice of rows of a larger storage (a storage offset),
# a transposed view (Fortran order); other permutations (Zarr v3's transpose); a strided slice, refused.
import torch
g = torch.Generator().manual_seed(5)
big = torch.randn(8, 5, generator=g)
torch.save({'w': torch.randn(6, 4, generator=g), 'big': big, 'rows': big[2:5], 'wt': torch.randn(3, 7, generator=g).t(),
            'i8': torch.arange(-5, 5, dtype=torch.int8), 'flags': torch.tensor([True, False, True]), 'h': torch.randn(4, generator=g).half(),
            'z': torch.randn(3, dtype=torch.complex64, generator=g), 'n': torch.arange(12).reshape(3, 4), 'scalar': torch.tensor(2.5, dtype=torch.float64)}, f'{d}/m.pt')
torch.save({'s': big[:, ::2]}, f'{d}/strided.pt')
torch.save({'p': torch.randn(2, 3, 4, generator=g).permute(1, 0, 2), 'q': torch.randn(2, 3, 4, 5, generator=g).permute(2, 0, 3, 1)}, f'{d}/permuted.pt')
# Every integer width and both byte orders, for zarrita.
np.savez(f'{d}/ints.npz', **{k.strip('<>') + ('_be' if k[0] == '>' else ''): rng.integers(np.iinfo(k).min, np.iinfo(k).max, (5, 3), dtype=k[-2:], endpoint=True).astype(k) for k in ['i1', 'u1', '<i2', '>u2', '>i4', '<u4', '<i8', '>u8']})`);

const V2_FILES = [
  'c.npy',
  'f.npy',
  'b.npy',
  'z.npy',
  'h.npy',
  's.npy',
  'u.npy',
  't.npy',
  'scalar.npy',
  'empty.npy',
  'prime.npy',
  'stored.npz',
  'm.safetensors',
];
const V3_FILES = [
  'c.npy',
  'f.npy',
  'b.npy',
  'z.npy',
  'h.npy',
  'scalar.npy',
  'prime.npy',
  'stored.npz',
  'm.safetensors',
  'm.gguf',
  'set/model.safetensors.index.json',
  'm.pt',
  'permuted.pt',
];

/** What numpy (or safetensors) reads from `file`: arrays by name, for Python to compare with. */
const ORIGINAL = `import os
def original(path, name):
    if path.endswith('.npz'): return {k: v for k, v in np.load(path).items()}
    if path.endswith('.pt'):
        import torch
        return {k: v.numpy() for k, v in torch.load(path, weights_only=True).items()}
    if path.endswith('.gguf'):
        import gguf
        return {t.name: np.array(t.data) for t in gguf.GGUFReader(path).tensors}
    if path.endswith('.index.json'):
        from safetensors.numpy import load_file
        folder = os.path.dirname(path)
        return {k: v for f in sorted(set(json.load(open(path))['weight_map'].values())) for k, v in load_file(os.path.join(folder, f)).items()}
    if path.endswith('.safetensors'):
        from safetensors.numpy import load_file
        return load_file(path)
    return {name: np.load(path)}
def little(a):
    # The same values in little-endian order: a reader may hand back native order (tensorstore does).
    return np.ascontiguousarray(a.astype(a.dtype.newbyteorder('<')) if a.dtype.byteorder == '>' else a)
def same(a, b):
    return little(a).dtype == little(b).dtype and a.shape == b.shape and little(a).tobytes() == little(b).tobytes()
`;

/**
 * Compare what an engine read (`.npy` files it wrote of each array, in `readDir`, named
 * `<set>__<array>.npy`) with numpy's own reading of the originals; returns the mismatches.
 */
function compareRead(sets, readDir) {
  return JSON.parse(
    python(`${ORIGINAL}
import os
bad = []
for path, refs, name in json.loads(${JSON.stringify(JSON.stringify(sets))}):
    want = original(path, name)
    stem = os.path.basename(refs)
    got = {f[len(stem) + 2:-4]: np.load(os.path.join(${JSON.stringify(readDir)}, f)) for f in os.listdir(${JSON.stringify(readDir)}) if f.startswith(stem + '__')}
    if sorted(got) != sorted(want): bad.append([path, sorted(got), sorted(want)])
    for k, v in want.items():
        if k in got and not same(got[k], v): bad.append([path, k, str(got[k].dtype), str(v.dtype), got[k].shape, v.shape])
print(json.dumps(bad))`),
  );
}

/** {@link debianPython} without blocking the event loop (for a server of this process that Python reads). */
function debianPythonAsync(code, ...argv) {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/python3', ['-c', `import json, os, sys, numpy as np\n${code}`, ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => {
      out += c;
    });
    child.stderr.on('data', (c) => {
      err += c;
    });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`python exited ${code}: ${err}`))));
  });
}

/** Run Debian's Python (zarr 2.13, xarray, dask, fsspec) on `code`; `argv` as sys.argv[1:]. */
function debianPython(code, ...argv) {
  const r = spawnSync('/usr/bin/python3', ['-c', `import json, os, sys, numpy as np\n${code}`, ...argv], { encoding: 'utf8', timeout: 300_000 });
  assert.is(r.status, 0, r.stderr);
  return r.stdout;
}

test('Zarr v2 sets read by zarr-python through fsspec, equal to numpy bit for bit; xarray opens one with named dimensions', async () => {
  const sets = [];
  for (const f of V2_FILES) {
    // Small chunks, so that arrays span several (13 rows, a prime: one row a chunk).
    const set = await referencesOf(at(f), { zarrFormat: 2, chunkBytes: 40 });
    const out = at(`${f}.v2.json`);
    writeFileSync(out, JSON.stringify(set));
    sets.push([at(f), out, f.replace(/\.npy$/, '')]);
  }
  const readDir = scratch('npyts-refs-read-');
  const xarray = JSON.parse(
    debianPython(
      `import fsspec, zarr, xarray as xr
sets, out = json.loads(sys.argv[1]), sys.argv[2]
for path, refs, name in sets:
    g = zarr.open_group(fsspec.filesystem('reference', fo=refs).get_mapper(''), mode='r')
    for k in g.array_keys(): np.save(os.path.join(out, os.path.basename(refs) + '__' + k + '.npy'), g[k][...])
ds = xr.open_dataset('reference://', engine='zarr', backend_kwargs={'storage_options': {'fo': sys.argv[3]}, 'consolidated': False})
print(json.dumps({k: [list(v.dims), v.values.tolist()] for k, v in ds.data_vars.items()}))`,
      JSON.stringify(sets),
      readDir,
      at('stored.npz.v2.json'),
    ),
  );
  assert.equal(compareRead(sets, readDir), []);
  // xarray: one variable per member, each with its own dimension names, and numpy's values.
  const want = JSON.parse(python(`a = np.load(${JSON.stringify(at('stored.npz'))}); print(json.dumps({k: a[k].tolist() for k in a}))`));
  assert.equal(xarray, { x: [['x_dim_0', 'x_dim_1'], want.x], y: [['y_dim_0'], want.y] });
});

test("Zarr v3 sets read by tensorstore (strict metadata: endian on every multi-byte type, transpose for Fortran order), equal to numpy bit for bit, a torch.save zip's tensors (a storage offset, a transposed view, permuted views) to torch.load's", async () => {
  const sets = [];
  for (const f of V3_FILES) {
    const set = await referencesOf(at(f), { chunkBytes: 40 });
    const out = at(`${f}.v3.json`);
    writeFileSync(out, JSON.stringify(set));
    sets.push([at(f), out, f.replace(/\.npy$/, '')]);
  }
  const readDir = scratch('npyts-refs-read3-');
  python(`import tensorstore as ts, os
for path, refs, name in json.loads(${JSON.stringify(JSON.stringify(sets))}):
    ctx = ts.Context()
    kv = ts.KvStore.open({'driver': 'memory'}, context=ctx).result()
    refs_doc = json.load(open(refs))['refs']
    for key, ref in refs_doc.items():
        if isinstance(ref, str): kv.write(key, ref.encode()).result()
        else:
            with open(ref[0], 'rb') as f: f.seek(ref[1]); kv.write(key, f.read(ref[2])).result()
    names = [k[:-len('/zarr.json')] for k, v in refs_doc.items() if k.endswith('/zarr.json') and json.loads(v)['node_type'] == 'array']
    for k in names:
        a = ts.open({'driver': 'zarr3', 'kvstore': {'driver': 'memory', 'path': k + '/'}}, context=ctx, open=True).result()
        np.save(os.path.join(${JSON.stringify(readDir)}, os.path.basename(refs) + '__' + k + '.npy'), a.read().result())`);
  assert.equal(compareRead(sets, readDir), []);
});

/** The Zarr arrays of a set (a group of arrays, some in groups), by path: what a reader is asked for. */
const arraysOf = (set) =>
  Object.entries(set.refs)
    .filter(([k, v]) => (k.endsWith('/zarr.json') && JSON.parse(v).node_type === 'array') || k.endsWith('/.zarray'))
    .map(([k]) => k.slice(0, k.lastIndexOf('/')));

/**
 * Save what zarrita read (`[set file, array, bytes of its data, shape, strides in items]`, the data in
 * the platform's order) as `<set>__<array>.npy` in `readDir`, with the dtype numpy reads the original
 * with (its little-endian form), for {@link compareRead}.
 */
function saveRead(sets, reads, readDir) {
  const raw = scratch('npyts-refs-raw-');
  const list = reads.map(([refs, name, bytes, shape, stride], i) => {
    writeFileSync(join(raw, `${i}`), bytes);
    return [refs, name, join(raw, `${i}`), shape, stride];
  });
  python(`${ORIGINAL}
import os
paths = {s[1]: [s[0], s[2]] for s in json.loads(${JSON.stringify(JSON.stringify(sets))})}
for refs, k, raw, shape, stride in json.loads(${JSON.stringify(JSON.stringify(list))}):
    want = little(original(*paths[refs])[k])
    a = np.ndarray(shape, want.dtype, open(raw, 'rb').read(), strides=[s * want.dtype.itemsize for s in stride])
    np.save(os.path.join(${JSON.stringify(readDir)}, os.path.basename(refs) + '__' + k + '.npy'), a)`);
}

// Every dtype zarrita 0.7 reads: bool, integers, float32/64 in v3 and v2, fixed-width bytes and strings
// in v2 (not float16 in Node 20, which lacks Float16Array, nor complex or datetimes, which it lacks).
const ZARRITA_V3 = ['c.npy', 'f.npy', 'b.npy', 'prime.npy', 'stored.npz', 'ints.npz', 'set/model.safetensors.index.json'];
const ZARRITA_V2 = ['c.npy', 'f.npy', 'b.npy', 's.npy', 'u.npy', 'prime.npy', 'ints.npz', 'stored.npz'];

/** Sets of `files` (v3 and v2) whose references are URLs under `base`, written beside them; `[original, set file, name]` each. */
async function zarritaSets(base, files3, files2, tag) {
  const sets = [];
  for (const [format, files] of [
    [3, files3],
    [2, files2],
  ]) {
    for (const f of files) {
      const set = await referencesOf(`${base}/${f}`, { zarrFormat: format, chunkBytes: 40 });
      const out = at(`${f}.${tag}${format}.json`);
      writeFileSync(out, JSON.stringify(set));
      sets.push([at(f), out, f.replace(/\.npy$/, ''), set]);
    }
  }
  return sets;
}

test('zarrita (Node) reads v3 and v2 sets through its reference store over HTTP, every dtype it has, equal to numpy bit for bit', async () => {
  const zarr = await import('zarrita');
  const { default: ReferenceStore } = await import('@zarrita/storage/ref');
  // zarrita fetches every reference of an array at once: a server with a deep backlog (Node's) keeps up.
  const server = await serveFiles(dir);
  try {
    const sets = await zarritaSets(server.base, ZARRITA_V3, ZARRITA_V2, 'zarrita');
    const reads = [];
    for (const [, out, , set] of sets) {
      const store = ReferenceStore.fromSpec(set);
      const root = zarr.root(store);
      for (const name of arraysOf(set)) {
        const a = await zarr.open(root.resolve(name), { kind: 'array' });
        const { data, shape, stride } = await zarr.get(a);
        reads.push([out, name, new Uint8Array(data.buffer, data.byteOffset, data.byteLength), shape, stride]);
      }
    }
    const readDir = scratch('npyts-refs-zarrita-');
    saveRead(sets, reads, readDir);
    assert.equal(
      compareRead(
        sets.map(([p, o, n]) => [p, o, n]),
        readDir,
      ),
      [],
    );
    // Chunks were read by range from the files themselves.
    assert.ok(server.log.some((r) => r.path === '/set/model-00002-of-00002.safetensors' && r.range));
  } finally {
    await server.close();
  }
});

test('zarrita bundled for a page reads v3 and v2 sets in Chromium over HTTP from 127.0.0.1 (float16 too: Chromium has Float16Array), equal to numpy bit for bit', async () => {
  const { bundleForPage, pageOverData } = await import('../helpers/chromium.mjs');
  await bundleForPage("export * as zarr from 'zarrita'; export { default as ReferenceStore } from '@zarrita/storage/ref';", at('zarrita.js'));
  const browser = await pageOverData(dir);
  try {
    const sets = await zarritaSets(
      `${browser.base}/data`,
      ['c.npy', 'f.npy', 'b.npy', 'h.npy', 'ints.npz', 'm.safetensors'],
      ['u.npy', 's.npy', 'h.npy', 'stored.npz'],
      'chromium',
    );
    const got = await browser.page.evaluate(
      async (sets) => {
        const { zarr, ReferenceStore } = await import('/data/zarrita.js');
        const out = [];
        for (const [file, set, names] of sets) {
          const root = zarr.root(ReferenceStore.fromSpec(set));
          for (const name of names) {
            const { data, shape, stride } = await zarr.get(await zarr.open(root.resolve(name), { kind: 'array' }));
            out.push([file, name, Array.from(new Uint8Array(data.buffer, data.byteOffset, data.byteLength)), shape, stride]);
          }
        }
        return out;
      },
      sets.map(([, out, , set]) => [out, set, arraysOf(set)]),
    );
    assert.equal(browser.problems, []);
    const readDir = scratch('npyts-refs-chromium-');
    saveRead(
      sets,
      got.map(([f, n, bytes, shape, stride]) => [f, n, Uint8Array.from(bytes), shape, stride]),
      readDir,
    );
    assert.equal(
      compareRead(
        sets.map(([p, o, n]) => [p, o, n]),
        readDir,
      ),
      [],
    );
  } finally {
    await browser.close();
  }
});

test('100 .npy files joined along axis 0: one array, chunks never straddling two files; dask on a LocalCluster of 2 worker processes sums it as numpy sums np.concatenate', async () => {
  const parts = [0, 1, 2, 3, 4].map((i) => at(`part-${i}.npy`));
  // The five files, each given 20 times: 100 inputs, rows of 16 bytes, 6 rows a chunk (gcd of 6, 12, 18).
  const inputs = Array.from({ length: 100 }, (_, i) => parts[i % 5]);
  const set = await referencesOf(inputs, { concat: 0, zarrFormat: 2, chunkBytes: 16 * 7 });
  const meta = JSON.parse(set.refs['part-0/.zarray']);
  assert.equal(meta.chunks, [6, 2]);
  writeFileSync(at('joined.json'), JSON.stringify(set));
  const [sum, equal] = JSON.parse(
    debianPython(
      `import fsspec, zarr, dask.array as da
from distributed import Client, LocalCluster
files = json.loads(sys.argv[2])
with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster):
    x = da.from_zarr(fsspec.filesystem('reference', fo=sys.argv[1]).get_mapper(''), component='part-0')
    total = int(x.sum().compute())
    whole = x.compute()
want = np.concatenate([np.load(f) for f in files])
print(json.dumps([total - int(want.sum()), whole.dtype == want.dtype and whole.tobytes() == want.tobytes()]))`,
      at('joined.json'),
      JSON.stringify(inputs),
    ),
  );
  assert.is(sum, 0);
  assert.ok(equal);
});

test('refused by name: a .npy cut short, torch views that are not the array as it lies (a strided slice; a permutation in Zarr v2), a deflated member, bfloat16, a dtype Zarr v3 lacks, mismatched files to join, several files not joined, bytes without a url', async () => {
  assert.is((await npyErrorOf(() => referencesOf(at('deflated.npz')))).code, 'ZIP_UNSUPPORTED');
  assert.match((await npyErrorOf(() => referencesOf(at('deflated.npz')))).message, /np\.savez/);
  const bf16 = await npyErrorOf(() => referencesOf(at('bf16.safetensors')));
  assert.is(bf16.code, 'NO_COUNTERPART');
  assert.match(bf16.message, /bfloat16/);
  // A hostile index: a shard outside its folder is refused before any shard is opened.
  (await import('node:fs')).mkdirSync(at('evil'), { recursive: true });
  writeFileSync(at('evil/model.safetensors.index.json'), JSON.stringify({ weight_map: { w: '../m.safetensors' } }));
  assert.is((await npyErrorOf(() => referencesOf(at('evil/model.safetensors.index.json')))).code, 'UNSAFE_PATH');
  // Rows of no bytes claiming 10^15 of them: one chunk, found at once (no divisor search over the claim).
  python(
    `np.lib.format.write_array_header_1_0(f := open(${JSON.stringify(at('claims.npy'))}, 'wb'), {'descr': '<f4', 'fortran_order': False, 'shape': (10**15, 0)}); f.close()`,
  );
  const started = performance.now();
  const claims = await referencesOf(at('claims.npy'), { zarrFormat: 2 });
  assert.ok(performance.now() - started < 5000, 'a claimed length costs no work');
  assert.equal(JSON.parse(claims.refs['claims/.zarray']).chunks, [10 ** 15, 1]);
  assert.equal(
    Object.keys(claims.refs).filter((k) => /\/\d/.test(k)),
    [],
  );
  // A .npy cut short: a reference past the end would give short chunks.
  writeFileSync(at('cut.npy'), (await import('node:fs')).readFileSync(at('c.npy')).subarray(0, 150));
  assert.is((await npyErrorOf(() => referencesOf(at('cut.npy')))).code, 'DATA_TRUNCATED');
  const strided = await npyErrorOf(() => referencesOf(at('strided.pt')));
  assert.is(strided.code, 'NO_COUNTERPART');
  assert.match(strided.message, /tensor 's' is a strided view.*\.contiguous\(\)/);
  const permuted = await npyErrorOf(() => referencesOf(at('permuted.pt'), { zarrFormat: 2 }));
  assert.is(permuted.code, 'NO_COUNTERPART');
  assert.match(permuted.message, /array 'p' lies in the order of axes 1, 0, 2 \(a permuted view\).*Zarr v3/);
  const quantized = await npyErrorOf(() => referencesOf(at('q.gguf')));
  assert.is(quantized.code, 'NO_COUNTERPART');
  assert.match(quantized.message, /quantized \(q\)/);
  const strings = await npyErrorOf(() => referencesOf(at('s.npy')));
  assert.is(strings.code, 'NO_COUNTERPART');
  assert.match(strings.message, /--zarr-format 2/);
  assert.is((await npyErrorOf(() => referencesOf([at('c.npy'), at('part-0.npy')], { concat: 0 }))).code, 'DTYPE_MISMATCH');
  assert.is((await npyErrorOf(() => referencesOf([at('f.npy'), at('f.npy')], { concat: 0 }))).code, 'SHAPE_MISMATCH');
  assert.is((await npyErrorOf(() => referencesOf([at('c.npy'), at('c.npy')]))).code, 'BAD_OPTION');
  const bytes = new Uint8Array(await (await import('node:fs/promises')).readFile(at('c.npy')));
  assert.is((await npyErrorOf(() => referencesOfAny(bytes))).code, 'BAD_OPTION');
  // With a url, bytes make a set that points there.
  const set = await referencesOfAny(bytes, { url: 'https://example.org/c.npy', zarrFormat: 2 });
  assert.equal(set.refs['array/0.0'], ['https://example.org/c.npy', 128, 12 * 3 * 4]);
});

test("references to URLs: a set made over HTTP (headers only moved) points at the URLs, and zarr-python reads the arrays through them, a sharded set's shards too", async () => {
  const server = await serveFiles(dir);
  try {
    const sets = [];
    for (const f of ['c.npy', 'set/model.safetensors.index.json']) {
      const set = await referencesOf(`${server.base}/${f}`, { zarrFormat: 2, chunkBytes: 40 });
      writeFileSync(at(`${f}.http.json`), JSON.stringify(set));
      sets.push([at(f), at(`${f}.http.json`), f.replace(/\.npy$/, '')]);
    }
    // A signed URL's signature is not written into a set (where anyone reading it would have it), nor shown.
    const signed = await npyErrorOf(() => referencesOf(`${server.base}/c.npy?X-Amz-Signature=s3cret`));
    assert.is(signed.code, 'BAD_OPTION');
    assert.match(signed.message, /--url/);
    assert.not.match(signed.message, /s3cret/);
    const named = await referencesOf(`${server.base}/c.npy?X-Amz-Signature=s3cret`, { url: 's3://bucket/c.npy' });
    assert.not.match(JSON.stringify(named), /s3cret/);
    // Making the sets read headers only: no range past the first 64 KiB of any file.
    for (const r of server.log) assert.ok(!r.range || Number(/bytes=(\d*)/.exec(r.range)[1] || 0) < 65536, JSON.stringify(r));
    const refs = JSON.parse((await import('node:fs')).readFileSync(at('set/model.safetensors.index.json.http.json'), 'utf8')).refs;
    assert.is(refs['b.w/0.0'][0], `${server.base}/set/model-00002-of-00002.safetensors`);
    const readDir = scratch('npyts-refs-http-');
    await debianPythonAsync(
      `import fsspec, zarr
for path, refs, name in json.loads(sys.argv[1]):
    g = zarr.open_group(fsspec.filesystem('reference', fo=refs, remote_protocol='http').get_mapper(''), mode='r')
    for k in g.array_keys(): np.save(os.path.join(sys.argv[2], os.path.basename(refs) + '__' + k + '.npy'), g[k][...])`,
      JSON.stringify(sets),
      readDir,
    );
    assert.equal(compareRead(sets, readDir), []);
    assert.ok(
      server.log.some((r) => r.path === '/set/model-00001-of-00002.safetensors' && r.range),
      'zarr read the shard by range',
    );
  } finally {
    await server.close();
  }
});

test('openWeights of a set (v3 and v2, made for .npy, .npz, .safetensors, torch.save and a sharded set; paths and URLs): one weights object equal to the originals', async () => {
  const server = await serveFiles(dir);
  try {
    const files = [
      'c.npy',
      'f.npy',
      'b.npy',
      'z.npy',
      's.npy',
      'scalar.npy',
      'empty.npy',
      'prime.npy',
      'stored.npz',
      'm.safetensors',
      'm.pt',
      'permuted.pt',
      'set/model.safetensors.index.json',
    ];
    for (const [format, where] of [
      [3, 'path'],
      [2, 'path'],
      [3, 'url'],
    ]) {
      const sets = [];
      const readDir = scratch('npyts-refs-open-');
      for (const f of files) {
        if ((format === 3 && f === 's.npy') || (format === 2 && f === 'permuted.pt')) continue; // no v3 type for bytes, no v2 order for a permutation
        // Chunks of 40 bytes: arrays span several references, each read and joined.
        const set = await referencesOf(where === 'url' ? `${server.base}/${f}` : at(f), { zarrFormat: format, chunkBytes: 40 });
        const out = at(`${f}.open${format}${where}.json`);
        writeFileSync(out, JSON.stringify(set));
        sets.push([at(f), out, f.replace(/\.npy$/, '')]);
        const w = await openWeights(where === 'url' ? `${server.base}/${f}.open${format}${where}.json` : out);
        assert.is(w.format, 'references');
        for (const [k, a] of await w.getAll()) writeFileSync(join(readDir, `${basename(out)}__${k}.npy`), encodeNpy(a));
        await w.close();
      }
      assert.equal(compareRead(sets, readDir), [], `zarr ${format}, ${where}`);
    }
  } finally {
    await server.close();
  }
});

test('openNpz of a set (v3 and v2, paths and URLs): the archive of its arrays, equal to numpy (members, region reads); a set of contiguous chunks mapped gives views of the map', async () => {
  const server = await serveFiles(dir);
  try {
    // Chunks of 40 bytes: members span several references (prime.npy's last one is short, f.npy is Fortran order and big-endian).
    const files = ['stored.npz', 'c.npy', 'f.npy', 'prime.npy', 'z.npy'];
    for (const [format, where] of [
      [3, 'path'],
      [2, 'url'],
    ]) {
      const sets = [];
      const readDir = scratch('npyts-refs-npz-');
      for (const f of files) {
        const set = await referencesOf(where === 'url' ? `${server.base}/${f}` : at(f), { zarrFormat: format, chunkBytes: 40 });
        const out = at(`${f}.npz${format}.json`);
        writeFileSync(out, JSON.stringify(set));
        sets.push([at(f), out, f.replace(/\.npy$/, '')]);
        const z = await openNpz(where === 'url' ? `${server.base}/${basename(out)}` : out);
        for (const [k, a] of await z.getAll()) writeFileSync(join(readDir, `${basename(out)}__${k}.npy`), encodeNpy(a));
        await z.close();
      }
      assert.equal(compareRead(sets, readDir), [], `zarr ${format}, ${where}`);
    }
    // A region of a member read through the archive: the bytes of its rows only.
    const z = await openNpz(at('stored.npz.npz3.json'));
    assert.equal(z.names, ['x', 'y']);
    const region = await (await z.openMember('x')).read([3, 1], [4, 2]);
    await z.close();
    writeFileSync(at('region.npy'), encodeNpy(region));
    assert.is(
      python(`print(np.array_equal(np.load(${JSON.stringify(at('region.npy'))}), np.load(${JSON.stringify(at('stored.npz'))})['x'][3:7, 1:3]))`).trim(),
      'True',
    );
    // A set in a store (a key of it), its file a key beside it: named relative to the set.
    const store = memoryStore(
      new Map([
        ['stored.npz', new Uint8Array(readFileSync(at('stored.npz')))],
        ['refs.json', new TextEncoder().encode(JSON.stringify(await referencesOf(at('stored.npz'), { url: '{name}' })))],
      ]),
    );
    const inStore = await openNpzAny('refs.json', { store });
    assert.equal((await inStore.get('y')).data, new BigInt64Array([0n, 1n, 2n]));
    await inStore.close();
    // Refused by name: a CRC asked of a set (it records none), an order a .npy cannot describe.
    assert.is((await npyErrorOf(() => openNpz(at('stored.npz.npz3.json'), { checkCrc: true }))).code, 'BAD_OPTION');
    writeFileSync(at('permuted.npz.json'), JSON.stringify(await referencesOf(at('permuted.pt'))));
    const permuted = await npyErrorOf(() => openNpz(at('permuted.npz.json')));
    assert.is(permuted.code, 'NO_COUNTERPART');
    assert.match(permuted.message, /openWeights/);
  } finally {
    await server.close();
  }
  // Mapped: one chunk, or adjacent chunks of one file, are one read of the map: a view of it.
  for (const chunkBytes of [undefined, 40]) {
    writeFileSync(at('mapped.json'), JSON.stringify(await referencesOf(at('prime.npy'), chunkBytes ? { chunkBytes } : {})));
    const w = await openWeights(at('mapped.json'), { mmap: 'r' });
    const a = await w.get('prime');
    await w.close();
    assert.is(a.data.buffer.byteLength, statSync(at('prime.npy')).size, `chunks of ${chunkBytes ?? 'the default'} bytes`);
  }
});

test('openWeights of a set with inline references (base64 and text, as kerchunk inlines small chunks): equal to numpy, as zarr-python reads the same set', async () => {
  const { readFileSync } = await import('node:fs');
  const set = await referencesOf([at('part-0.npy'), at('part-1.npy')], { concat: 0, zarrFormat: 2, chunkBytes: 96 });
  // The first chunk as base64, the second as text (bytes below 0x80 are their own UTF-8), the rest by range.
  const range = (ref) => readFileSync(ref[0]).subarray(ref[1], ref[1] + ref[2]);
  set.refs['part-0/0.0'] = `base64:${range(set.refs['part-0/0.0']).toString('base64')}`;
  const small = python(`print(json.dumps(np.arange(12, dtype='<i8').reshape(6, 2).tobytes().decode('ascii')))`);
  set.refs['part-0/1.0'] = JSON.parse(small);
  writeFileSync(at('inline.json'), JSON.stringify(set));
  const w = await openWeights(at('inline.json'));
  const got = await w.get('part-0');
  await w.close();
  writeFileSync(at('inline-got.npy'), encodeNpy(got));
  const same = debianPython(
    `import fsspec, zarr
z = zarr.open_array(fsspec.filesystem('reference', fo=sys.argv[1]).get_mapper('part-0'), mode='r')[...]
got = np.load(sys.argv[2])
print(json.dumps([got.dtype == z.dtype, got.shape == z.shape, got.tobytes() == z.tobytes(), bool((got[6:12] == np.arange(12).reshape(6, 2)).all())]))`,
    at('inline.json'),
    at('inline-got.npy'),
  );
  assert.equal(JSON.parse(same), [true, true, true, true]);
});

test('openWeights of a set refuses by name: a reference outside its place, a chunk past the end of its file, chunks sharing bytes, a grid its references do not fill, a set as bytes without a place', async () => {
  const base = await referencesOf(at('c.npy'), { chunkBytes: 48 });
  const write = (name, edit) => {
    const set = structuredClone(base);
    edit(set.refs);
    writeFileSync(at(name), JSON.stringify(set));
    return at(name);
  };
  const outside = write('outside.json', (r) => {
    r['c/c/1/0'][0] = '/etc/passwd';
  });
  assert.is((await npyErrorOf(() => openWeights(outside))).code, 'UNSAFE_PATH');
  const up = write('up.json', (r) => {
    r['c/c/1/0'][0] = '../c.npy';
  });
  assert.is((await npyErrorOf(() => openWeights(up))).code, 'UNSAFE_PATH');
  const url = write('url.json', (r) => {
    r['c/c/1/0'][0] = 'https://example.org/c.npy';
  });
  assert.is((await npyErrorOf(() => openWeights(url))).code, 'UNSAFE_PATH');
  const past = write('past.json', (r) => {
    r['c/c/2/0'][1] = 10_000;
  });
  const w = await openWeights(past);
  const e = await npyErrorOf(() => w.get('c'));
  await w.close();
  assert.is(e.code, 'DATA_TRUNCATED');
  const long = write('long.json', (r) => {
    r['c/c/0/0'][2] += 4;
  });
  const w2 = await openWeights(long);
  assert.is((await npyErrorOf(() => w2.get('c'))).code, 'BAD_SHAPE');
  await w2.close();
  // Every chunk naming the first chunk's bytes: an array as large as the set claims from a few bytes of file.
  const repeated = write('repeated.json', (r) => {
    r['c/c/1/0'] = [...r['c/c/0/0']];
    r['c/c/2/0'] = [...r['c/c/0/0']];
  });
  const w3 = await openWeights(repeated);
  assert.is((await npyErrorOf(() => w3.get('c'))).code, 'BAD_REFERENCES');
  await w3.close();
  const missing = write('missing.json', (r) => {
    delete r['c/c/2/0'];
  });
  assert.is((await npyErrorOf(() => openWeights(missing))).code, 'BAD_REFERENCES');
  const grid = write('grid.json', (r) => {
    const m = JSON.parse(r['c/zarr.json']);
    m.shape = [10 ** 15, 3];
    r['c/zarr.json'] = JSON.stringify(m);
  });
  assert.is((await npyErrorOf(() => openWeights(grid))).code, 'BAD_REFERENCES');
  const compressed = write('gzip.json', (r) => {
    const m = JSON.parse(r['c/zarr.json']);
    m.codecs.push({ name: 'gzip', configuration: { level: 1 } });
    r['c/zarr.json'] = JSON.stringify(m);
  });
  assert.is((await npyErrorOf(() => openWeights(compressed))).code, 'NO_COUNTERPART');
  const bytes = new Uint8Array((await import('node:fs')).readFileSync(at('outside.json')));
  assert.is((await npyErrorOf(() => openWeightsAny(bytes))).code, 'BAD_OPTION');
});

test('npyts refs: the CLI writes the set (-o), with a {name} template for the URL, and one clean line for an error', async () => {
  const out = at('cli.json');
  const r = await runCli(['refs', at('part-0.npy'), at('part-1.npy'), '--concat', '0', '--zarr-format', '2', '--url', 's3://bucket/run/{name}', '-o', out]);
  assert.is(r.code, 0, r.stderr);
  const set = JSON.parse((await import('node:fs')).readFileSync(out, 'utf8'));
  assert.equal(set.refs['part-0/0.0'], ['s3://bucket/run/part-0.npy', 128, 6 * 2 * 8]);
  assert.equal(set.refs['part-0/1.0'], ['s3://bucket/run/part-1.npy', 128, 6 * 2 * 8]);
  assert.equal(set.refs['part-0/2.0'], ['s3://bucket/run/part-1.npy', 128 + 6 * 2 * 8, 6 * 2 * 8]);
  const bad = await runCli(['refs', at('deflated.npz')]);
  assert.is(bad.code, 1);
  assert.match(bad.stderr, /^npyts: error: .*deflated\.npz: .*np\.savez/);
  assert.is(bad.stderr.trim().split('\n').length, 1);
});

test.run();
