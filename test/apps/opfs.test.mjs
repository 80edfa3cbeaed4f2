// .npy files in the browser's Origin Private File System, in Debian's Chromium: one worker creates a
// file, two workers fill its halves at once through their own sync access handles, another appends
// rows, and numpy reads the file the page hands back. And the OPFS as a store (issue 67): a worker
// saves a .npy, a .npz and a .safetensors through opfsStore, reads regions back, and the files the
// page copies out are what numpy and safetensors read (the .npy byte for byte what np.save writes).
// A worker appends to a key in place and saves, appends and reads ragged files through the store.
// Sharded saves through opfsStore (issue 70): a worker saves a torch.save file's tensors, a page
// converts an .npz chosen through <input type=file>, each byte for byte what huggingface_hub's
// save_torch_state_dict writes for the same tensors and shard size.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { build } from 'esbuild';
import { python, scratch } from '../helpers/numpy.mjs';
import { startViewer } from '../../viewer/serve.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = scratch('npyts-opfs-');
const CHROMIUM = '/usr/bin/chromium';
if (!existsSync(CHROMIUM)) throw new Error("the browser tests need Debian's chromium at /usr/bin/chromium (.ci/run installs it)");

// The worker: @npyts/core's access-handle functions, bundled as a module the page can start.
const worker = `
import { createNpyAccessHandle, openNpyAccessHandle, appendNpyAccessHandle } from '@npyts/core';
import { opfsStore, saveNpy, saveNpz, saveSafetensors, openNpy, openNpz, openWeights, appendNpy, saveRagged, appendRagged, openRagged } from '@npyts/core';
const file = async (name) => (await navigator.storage.getDirectory()).getFileHandle(name, { create: true });
self.onmessage = async ({ data: m }) => {
  try {
    const fh = await file(m.name);
    if (m.op === 'create') {
      const access = await fh.createSyncAccessHandle();
      createNpyAccessHandle(access, { dtype: '<f8', shape: [m.rows, m.cols], name: m.name }).close();
      access.close();
    } else if (m.op === 'fill') {
      // 'readwrite-unsafe': several workers hold handles on one file at once (disjoint regions).
      const access = await fh.createSyncAccessHandle({ mode: 'readwrite-unsafe' });
      const h = openNpyAccessHandle(access, { expect: '<f8', name: m.name });
      const rows = m.to - m.from;
      const data = new Float64Array(rows * m.cols);
      for (let r = 0; r < rows; r++) for (let c = 0; c < m.cols; c++) data[r * m.cols + c] = (m.from + r) * 1000 + c;
      // Row by row, so that the two workers' writes interleave in time.
      for (let r = 0; r < rows; r++) h.writeRegion([m.from + r, 0], { data: data.subarray(r * m.cols, (r + 1) * m.cols), shape: [1, m.cols] });
      h.close();
      access.close();
    } else if (m.op === 'append') {
      const access = await fh.createSyncAccessHandle();
      appendNpyAccessHandle(access, { data: new Float64Array(m.cols).fill(-1), shape: [1, m.cols] }, { name: m.name });
      access.close();
    } else if (m.op === 'store') {
      const store = opfsStore(await navigator.storage.getDirectory());
      const a = { data: new Float32Array(m.values), shape: [6, 4] };
      await saveNpy('store/a.npy', { data: new Float32Array(24), shape: [6, 4] }, { store });
      await saveNpy('store/a.npy', a, { store }); // replaces the key written before
      await saveNpz('store/a.npz', { a, b: { data: new Int32Array([7, 8, 9]) } }, { store });
      await saveSafetensors('store/a.safetensors', { a }, { store, metadata: { format: 'pt' } });
      const npy = await openNpy('store/a.npy', { store });
      const npz = await openNpz('store/a.npz', { store });
      const st = await openWeights('store/a.safetensors', { store });
      const out = {
        ok: true,
        region: Array.from((await npy.read([2, 1], [2, 2])).data),
        member: Array.from((await (await npz.openMember('a')).read([5, 0], [1, 4])).data),
        b: Array.from((await npz.get('b')).data),
        tensor: Array.from((await st.get('a')).data),
        keys: (await store.list()).filter((k) => k.startsWith('store/')).sort(),
      };
      await npz.close();
      await st.close();
      self.postMessage(out);
      return;
    } else if (m.op === 'store-append') {
      // Appends and ragged files through the store: rows edited in place through sync access handles.
      const store = opfsStore(await navigator.storage.getDirectory());
      const rows = (from, to) => ({ data: new Float32Array(m.values.slice(4 * from, 4 * to)), shape: [to - from, 4] });
      await saveNpy('grow/g.npy', rows(0, 2), { store });
      await appendNpy('grow/g.npy', rows(2, 3), { store });
      // Two appenders at once wait for each other (the store's Web Lock of the key): both land.
      await Promise.all([appendNpy('grow/g.npy', rows(3, 5), { store }), appendNpy('grow/g.npy', rows(5, 6), { store })]);
      await saveRagged('grow/words.npy', m.words.slice(0, 2), { store, layout: 'offsets' });
      await appendRagged('grow/words.npy', m.words.slice(2), { store });
      const clips = m.clips.map((c) => ({ data: new Float32Array(c), shape: [c.length / 2, 2] }));
      await saveRagged('grow/clips.npy', clips.slice(0, 2), { store });
      await appendRagged('grow/clips.npy', clips.slice(2), { store });
      const npy = await openNpy('grow/g.npy', { store });
      const words = await openRagged('grow/words.npy', { store });
      const c = await openRagged('grow/clips.npy', { store });
      const out = {
        ok: true,
        shape: npy.shape,
        region: Array.from((await npy.read([1, 1], [2, 3])).data),
        words: await words.slice(0, words.length),
        clip: Array.from((await c.get(2)).data),
        clipShape: await c.shape(1),
        keys: (await store.list()).filter((k) => k.startsWith('grow/')).sort(),
      };
      await npy.close();
      await words.close();
      await c.close();
      self.postMessage(out);
      return;
    } else if (m.op === 'shards') {
      // A torch.save file's tensors, read one at a time, saved as Hugging Face's sharded layout.
      const store = opfsStore(await navigator.storage.getDirectory());
      const w = await openWeights(await (await fetch(m.url)).blob());
      await saveSafetensors('shards/', w, { store, maxShardSize: m.max });
      await w.close();
      self.postMessage({ ok: true });
      return;
    } else if (m.op === 'read') {
      const access = await fh.createSyncAccessHandle();
      const h = openNpyAccessHandle(access, { name: m.name });
      const region = h.read(m.start, m.count);
      h.close();
      access.close();
      self.postMessage({ ok: true, shape: h.shape, values: Array.from(region.data) });
      return;
    }
    self.postMessage({ ok: true });
  } catch (e) {
    self.postMessage({ ok: false, error: String(e && e.stack || e) });
  }
};`;
// tsconfigRaw: the package resolves through node_modules to its built dist, as in a user's project.
const bundle = await build({ stdin: { contents: worker, resolveDir: root }, bundle: true, format: 'esm', platform: 'browser', write: false, tsconfigRaw: {} });
writeFileSync(join(dir, 'opfs-worker.js'), bundle.outputFiles[0].contents);
// The page's own module: a page has no sync access handles, so opfsStore writes there through writable streams.
const pageModule = await build({
  stdin: {
    contents: "export { opfsStore, saveNpy, loadNpy, saveNpz, openNpz, appendNpy, openWeights, saveSafetensors } from '@npyts/core';",
    resolveDir: root,
  },
  bundle: true,
  format: 'esm',
  platform: 'browser',
  write: false,
  tsconfigRaw: {},
});
writeFileSync(join(dir, 'opfs-page.js'), pageModule.outputFiles[0].contents);

// The tensors of the sharded saves, made by torch and numpy, and what save_torch_state_dict writes of them.
const MAX_SHARD = 200;
python(`import torch, os
from huggingface_hub import save_torch_state_dict
torch.manual_seed(3)
d = ${JSON.stringify(dir)}
sd = {'z.w': torch.randn(10, 4), 'a.h': torch.randn(30).half(), 'm.b': torch.randn(50).bfloat16(), 'i': torch.arange(5), 'big': torch.randn(64)}
torch.save(sd, os.path.join(d, 'net.pt'))
os.makedirs(os.path.join(d, 'net-hf'))
save_torch_state_dict(sd, os.path.join(d, 'net-hf'), max_shard_size=${MAX_SHARD})
rng = np.random.default_rng(4)
np.savez(os.path.join(d, 'arrays.npz'), w=rng.standard_normal((6, 5)).astype('<f4'), b=rng.standard_normal(20), n=np.arange(12, dtype='<i4').reshape(3, 4))
z = np.load(os.path.join(d, 'arrays.npz'))
os.makedirs(os.path.join(d, 'arrays-hf'))
save_torch_state_dict({k: torch.from_numpy(z[k]) for k in z.files}, os.path.join(d, 'arrays-hf'), max_shard_size=${MAX_SHARD})`);

/** A folder's files, each the same bytes as huggingface_hub's in `theirs`. */
function sameAsHub(files, theirs) {
  const names = readdirSync(theirs).sort();
  assert.equal(Object.keys(files).sort(), names);
  assert.ok(names.length > 2, 'several shards and an index');
  for (const f of names) assert.ok(Buffer.compare(Buffer.from(files[f], 'base64'), readFileSync(join(theirs, f))) === 0, `${f} differs from huggingface_hub's`);
}

const server = await startViewer({ port: 0, dataDir: dir });
const base = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
const page = await browser.newPage();
const problems = [];
page.on('pageerror', (e) => problems.push(String(e)));
await page.goto(`${base}/`);

test('two workers fill halves of one OPFS .npy at once, a third appends; numpy reads the file', async () => {
  const result = await page.evaluate(async () => {
    const ask = (message) =>
      new Promise((resolve) => {
        const w = new Worker('/data/opfs-worker.js', { type: 'module' });
        w.onmessage = ({ data }) => {
          w.terminate();
          resolve(data);
        };
        w.onerror = (e) => {
          w.terminate();
          resolve({ ok: false, error: e.message });
        };
        w.postMessage(message);
      });
    const name = 'shared.npy';
    const steps = [];
    steps.push(await ask({ op: 'create', name, rows: 200, cols: 300 }));
    steps.push(...(await Promise.all([ask({ op: 'fill', name, from: 0, to: 100, cols: 300 }), ask({ op: 'fill', name, from: 100, to: 200, cols: 300 })])));
    steps.push(await ask({ op: 'append', name, cols: 300 }));
    const region = await ask({ op: 'read', name, start: [99, 298], count: [3, 2] });
    steps.push(region);
    const fileHandle = await (await navigator.storage.getDirectory()).getFileHandle(name);
    const bytes = new Uint8Array(await (await fileHandle.getFile()).arrayBuffer());
    let binary = '';
    for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    return { steps, file: btoa(binary) };
  });
  for (const s of result.steps) assert.ok(s.ok, s.error);
  const region = result.steps.at(-1);
  assert.equal(region.shape, [201, 300]);
  assert.equal(region.values, [99298, 99299, 99298 + 1000, 99299 + 1000, 101298, 101299]);
  const path = join(dir, 'from-opfs.npy');
  writeFileSync(path, Buffer.from(result.file, 'base64'));
  const check = python(`a = np.load(${JSON.stringify(path)})
r, c = np.indices((200, 300))
print(a.shape, a.dtype.str, int((a[:200] == r * 1000 + c).all()), int((a[200] == -1).all()))`).trim();
  assert.is(check, '(201, 300) <f8 1 1');
});

test('in a worker, opfsStore runs saveNpy, saveNpz and saveSafetensors; reads and numpy agree with the page', async () => {
  const result = await page.evaluate(async () => {
    // What the page computes; the worker saves it and reads it back.
    const values = Array.from({ length: 24 }, (_, i) => Math.fround(i / 8 - 1));
    const got = await new Promise((resolve) => {
      const w = new Worker('/data/opfs-worker.js', { type: 'module' });
      w.onmessage = ({ data }) => {
        w.terminate();
        resolve(data);
      };
      w.onerror = (e) => {
        w.terminate();
        resolve({ ok: false, error: e.message });
      };
      w.postMessage({ op: 'store', name: 'unused', values });
    });
    const folder = await (await navigator.storage.getDirectory()).getDirectoryHandle('store');
    const files = {};
    for (const name of ['a.npy', 'a.npz', 'a.safetensors']) {
      const bytes = new Uint8Array(await (await (await folder.getFileHandle(name)).getFile()).arrayBuffer());
      let binary = '';
      for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
      files[name] = btoa(binary);
    }
    return { got, values, files };
  });
  const { got, values } = result;
  assert.ok(got.ok, got.error);
  const at = (r, c) => values[r * 4 + c];
  assert.equal(got.region, [at(2, 1), at(2, 2), at(3, 1), at(3, 2)]);
  assert.equal(got.member, [at(5, 0), at(5, 1), at(5, 2), at(5, 3)]);
  assert.equal(got.b, [7, 8, 9]);
  assert.equal(got.tensor, values);
  assert.equal(got.keys, ['store/a.npy', 'store/a.npz', 'store/a.safetensors'], 'no file left beside a key');
  for (const [name, b64] of Object.entries(result.files)) writeFileSync(join(dir, `store-${name}`), Buffer.from(b64, 'base64'));
  const check = python(`from safetensors.numpy import load_file
values = np.array(${JSON.stringify(values)}, dtype='<f4').reshape(6, 4)
f = io.BytesIO(); np.save(f, values)
same_npy = open(${JSON.stringify(join(dir, 'store-a.npy'))}, 'rb').read() == f.getvalue()
z = np.load(${JSON.stringify(join(dir, 'store-a.npz'))})
st = load_file(${JSON.stringify(join(dir, 'store-a.safetensors'))})
print(int(same_npy), int((z['a'] == values).all()), z['b'].tolist(), int((st['a'] == values).all()))`).trim();
  assert.is(check, '1 1 [7, 8, 9] 1');
});

test('in a worker, opfsStore appends in place and holds ragged files; reads equal what the page computed, the .npy what np.save writes', async () => {
  const result = await page.evaluate(async () => {
    const values = Array.from({ length: 24 }, (_, i) => Math.fround(i / 4 - 2));
    const words = ['ab', '', 'çé', 'xyz'];
    const clips = [
      [1, 2, 3, 4],
      [5, 6],
      [7, 8, 9, 10, 11, 12],
    ];
    const got = await new Promise((resolve) => {
      const w = new Worker('/data/opfs-worker.js', { type: 'module' });
      w.onmessage = ({ data }) => {
        w.terminate();
        resolve(data);
      };
      w.onerror = (e) => {
        w.terminate();
        resolve({ ok: false, error: e.message });
      };
      w.postMessage({ op: 'store-append', name: 'unused', values, words, clips });
    });
    const folder = await (await navigator.storage.getDirectory()).getDirectoryHandle('grow');
    const bytes = new Uint8Array(await (await (await folder.getFileHandle('g.npy')).getFile()).arrayBuffer());
    let binary = '';
    for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    return { got, values, words, clips, file: btoa(binary) };
  });
  const { got, values } = result;
  assert.ok(got.ok, got.error);
  assert.equal(got.shape, [6, 4]);
  const at = (r, c) => values[r * 4 + c];
  // Rows 3-4 and 5 were appended at once: either order, each whole.
  const rowOf = (r) => [at(r, 0), at(r, 1), at(r, 2), at(r, 3)];
  assert.equal(got.region.slice(0, 3), [at(1, 1), at(1, 2), at(1, 3)]);
  assert.equal(got.region.slice(3), [at(2, 1), at(2, 2), at(2, 3)]);
  assert.equal(got.words, result.words);
  assert.equal(got.clip, result.clips[2]);
  assert.equal(got.clipShape, [1, 2]);
  assert.equal(got.keys, ['grow/clips.npy', 'grow/clips.npy.heap', 'grow/g.npy', 'grow/words.npy', 'grow/words.npy.strings'], 'no file left beside a key');
  const path = join(dir, 'store-g.npy');
  writeFileSync(path, Buffer.from(result.file, 'base64'));
  const check = python(`a = np.load(${JSON.stringify(path)})
rows = [tuple(r) for r in a[3:6].tolist()]
order = [3, 4, 5] if rows[0] == tuple(${JSON.stringify(rowOf(3))}) else [5, 3, 4]
values = np.array(${JSON.stringify(values)}, dtype='<f4').reshape(6, 4)[[0, 1, 2, *order]]
f = io.BytesIO(); np.save(f, values)
print(int(open(${JSON.stringify(path)}, 'rb').read() == f.getvalue()))`).trim();
  assert.is(check, '1');
});

test('in a page, opfsStore writes through writable streams: a save replaces the key, a failed one leaves it', async () => {
  const result = await page.evaluate(async () => {
    const { opfsStore, saveNpy, loadNpy, saveNpz, openNpz, appendNpy } = await import('/data/opfs-page.js');
    const store = opfsStore(await navigator.storage.getDirectory());
    await saveNpy('page/p.npy', { data: new Int16Array([1, 2, 3]) }, { store });
    await saveNpy('page/p.npy', { data: new Int16Array([4, 5, 6, 7]) }, { store });
    let refused = '';
    try {
      await saveNpy('page/p.npy', { data: [1], dtype: '|O' }, { store }); // object arrays need a pickle codec in the main entry
    } catch (e) {
      refused = e.code;
    }
    await saveNpz('page/q.npz', { q: { data: new Float64Array([0.5, 1.5]) } }, { store });
    const z = await openNpz('page/q.npz', { store });
    const q = Array.from((await z.get('q')).data);
    await z.close();
    // A page's OPFS has no writes in place: an append is refused by name, the key left as it was.
    let appendRefused = '';
    try {
      await appendNpy('page/p.npy', { data: new Int16Array([8]) }, { store });
    } catch (e) {
      appendRefused = e.code;
    }
    return {
      appendRefused,
      p: Array.from((await loadNpy('page/p.npy', { store })).data),
      q,
      refused,
      keys: (await store.list()).filter((k) => k.startsWith('page/')).sort(),
    };
  });
  assert.equal(result.p, [4, 5, 6, 7]);
  assert.equal(result.q, [0.5, 1.5]);
  assert.is(result.refused, 'PICKLE_UNSUPPORTED');
  assert.is(result.appendRefused, 'BAD_OPTION');
  assert.equal(result.keys, ['page/p.npy', 'page/q.npz']);
});

/** In the page: the files of an OPFS folder, base64 by name. */
const copyOut = async (folderName) => {
  const folder = await (await navigator.storage.getDirectory()).getDirectoryHandle(folderName);
  const files = {};
  for await (const [name, handle] of folder.entries()) {
    const bytes = new Uint8Array(await (await handle.getFile()).arrayBuffer());
    let binary = '';
    for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    files[name] = btoa(binary);
  }
  return files;
};

test("in a worker, a torch.save file's tensors saved sharded through opfsStore: the files save_torch_state_dict writes, byte for byte", async () => {
  const got = await page.evaluate(
    (max) =>
      new Promise((resolve) => {
        const w = new Worker('/data/opfs-worker.js', { type: 'module' });
        w.onmessage = ({ data }) => {
          w.terminate();
          resolve(data);
        };
        w.onerror = (e) => {
          w.terminate();
          resolve({ ok: false, error: e.message });
        };
        w.postMessage({ op: 'shards', name: 'unused', url: '/data/net.pt', max });
      }),
    MAX_SHARD,
  );
  assert.ok(got.ok, got.error);
  sameAsHub(await page.evaluate(copyOut, 'shards'), join(dir, 'net-hf'));
});

test('in a page, an .npz chosen through <input type=file> converted to sharded safetensors in the OPFS: the files save_torch_state_dict writes', async () => {
  await page.evaluate(() => document.body.insertAdjacentHTML('beforeend', '<input id="convert-in" type="file">'));
  await page.setInputFiles('#convert-in', join(dir, 'arrays.npz'));
  await page.evaluate(async (max) => {
    const { opfsStore, openWeights, saveSafetensors } = await import('/data/opfs-page.js');
    const store = opfsStore(await navigator.storage.getDirectory());
    const file = document.getElementById('convert-in').files[0];
    const w = await openWeights(file);
    try {
      await saveSafetensors('converted/model.safetensors', w, { store, maxShardSize: max });
    } finally {
      await w.close();
    }
  }, MAX_SHARD);
  sameAsHub(await page.evaluate(copyOut, 'converted'), join(dir, 'arrays-hf'));
});

test('no uncaught errors in the page', () => {
  assert.equal(problems, []);
});

test.after(async () => {
  await browser.close();
  server.close();
});

test.run();
