// One store for where bytes live (issue 67): entries take a key and `{ store }`; a store written here
// from the public interfaces alone (a Map) runs saves, loads, region reads and a sharded set; a
// hostile index asks the store for no key outside it; every entry refuses an option it does not know.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { inspect } from 'node:util';
import { transformSync } from 'esbuild';
import * as core from '@npyts/core';
import * as node from '@npyts/core/node';
import * as pickleEntries from '@npyts/core/pickle';
import * as plumbing from '@npyts/core/plumbing';
const { bytesSource, memoryStore } = core;
const { folderStore } = node;
import { python, scratch } from '../helpers/numpy.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';
import { blocksOf, root } from '../packages/guide-blocks.mjs';

/** A store over a Map, written from the public interfaces only (read, written, edited in place and locked); `asked` records every key opened. */
function mapStore(files = new Map()) {
  const asked = [];
  const locks = new Map();
  return {
    files,
    asked,
    where: 'the map store',
    open(key) {
      asked.push(key);
      const bytes = files.get(key);
      if (bytes === undefined) throw new Error(`no ${key}`);
      return bytesSource(bytes, key);
    },
    create(key) {
      const writes = [];
      return {
        write: (bytes, at) => void writes.push([bytes.slice(), at]),
        commit() {
          const out = new Uint8Array(Math.max(0, ...writes.map(([b, at]) => at + b.length)));
          for (const [b, at] of writes) out.set(b, at);
          files.set(key, out);
        },
        abort: () => void (writes.length = 0),
      };
    },
    // Edits in place (appends): the bytes grow past their end, and the Map holds them at each flush.
    edit(key) {
      let file = files.get(key);
      if (file === undefined) throw new Error(`no ${key}`);
      const hold = () => void files.set(key, file);
      return {
        size: () => file.length,
        read: (at, length) => file.slice(at, at + length),
        write(bytes, at) {
          if (at + bytes.length > file.length) {
            const grown = new Uint8Array(at + bytes.length);
            grown.set(file);
            file = grown;
          }
          file.set(bytes, at);
        },
        flush: hold,
        close: hold,
      };
    },
    // One writer of a key at a time: each lock waits for the one before it.
    async lock(key) {
      const before = locks.get(key) ?? Promise.resolve();
      let release;
      const mine = new Promise((resolve) => {
        release = resolve;
      });
      locks.set(
        key,
        before.then(() => mine),
      );
      await before;
      return { release };
    },
    remove: (key) => void files.delete(key),
    list: () => [...files.keys()],
  };
}

const hex = (bytes) => Buffer.from(bytes).toString('hex');
/** numpy's reading of bytes written here: np.load of each, as JSON. */
const numpyOf = (code, bytes) => JSON.parse(python(`b = bytes.fromhex(${JSON.stringify(hex(bytes))})\n${code}`));

test("saveNpy(key, x, { store }) writes numpy's bytes into the store and nothing into the working folder", async () => {
  const dir = scratch('npyts-store-cwd-');
  const was = process.cwd();
  process.chdir(dir);
  try {
    const store = mapStore();
    const x = { data: new Int16Array([1, -2, 3, 4, 5, 6]), shape: [2, 3], dtype: '>i2' };
    await node.saveNpy('a.npy', x, { store });
    assert.not.ok(existsSync(join(dir, 'a.npy')), 'no a.npy in the working folder');
    const expected = python(`a = np.array([1, -2, 3, 4, 5, 6], dtype='>i2').reshape(2, 3)\nf = io.BytesIO(); np.save(f, a); print(f.getvalue().hex())`).trim();
    assert.is(hex(store.files.get('a.npy')), expected);
    // The main entry's saveNpy is the same write.
    await core.saveNpy('b.npy', x, { store });
    assert.is(hex(store.files.get('b.npy')), expected);
  } finally {
    process.chdir(was);
  }
});

test('a Map store runs saveNpy, loadNpy, openNpy region reads, saveNpz, openNpz region reads and saveSafetensors', async () => {
  const store = mapStore();
  const data = Float32Array.from({ length: 12 }, (_, i) => i / 4);
  await core.saveNpy('dir/w.npy', { data, shape: [3, 4] }, { store });
  const w = await node.loadNpy('dir/w.npy', { store, expect: '<f4' });
  assert.equal([...w.data], [...data]);
  const h = await core.openNpy('dir/w.npy', { store });
  assert.equal([...(await h.read([1, 1], [2, 2])).data], [1.25, 1.5, 2.25, 2.5]);

  await node.saveNpz('w.npz', { a: { data, shape: [3, 4] }, b: { data: new Int32Array([7, 8]) } }, { store, compress: true });
  const np = numpyOf(`z = np.load(io.BytesIO(b)); print(json.dumps({k: z[k].tolist() for k in z.files}))`, store.files.get('w.npz'));
  assert.equal(np.b, [7, 8]);
  assert.equal(np.a.flat(), [...data]);
  await core.saveNpz('s.npz', { a: { data, shape: [3, 4] } }, { store });
  const z = await core.openNpz('s.npz', { store });
  assert.equal([...(await (await z.openMember('a')).read([2, 0], [1, 4])).data], [2, 2.25, 2.5, 2.75]);
  await z.close();

  await node.saveSafetensors('m.safetensors', { 'fc.weight': { data, shape: [3, 4] } }, { store, metadata: { format: 'pt' } });
  const st = numpyOf(`from safetensors.numpy import load\nprint(json.dumps({k: v.tolist() for k, v in load(b).items()}))`, store.files.get('m.safetensors'));
  assert.equal(st['fc.weight'].flat(), [...data]);
  const f = await core.openWeights('m.safetensors', { store });
  assert.equal([...(await f.get('fc.weight')).data], [...data]);
  await f.close();
});

test("appendNpy(key, x, { store }) grows a key in place to numpy's bytes of the whole array, in a Map store, memoryStore and folderStore", async () => {
  const rows = (from, n) => ({ data: Float32Array.from({ length: 3 * n }, (_, i) => from + i / 4), shape: [n, 3] });
  const expected =
    python(`a = np.concatenate([np.arange(6, dtype='<f4') / 4, 100 + np.arange(3, dtype='<f4') / 4, 200 + np.arange(6, dtype='<f4') / 4]).reshape(5, 3)
f = io.BytesIO(); np.save(f, a); print(f.getvalue().hex())`).trim();
  const dir = scratch('npyts-store-append-');
  for (const [name, store, bytesOf] of [
    ['map', mapStore(), (s) => s.files.get('logs/a.npy')],
    ['memory', memoryStore(), (s) => s.files.get('logs/a.npy')],
    ['folder', folderStore(dir), () => readFileSync(join(dir, 'logs', 'a.npy'))],
  ]) {
    await core.saveNpy('logs/a.npy', rows(0, 2), { store });
    await core.appendNpy('logs/a.npy', rows(100, 1), { store });
    // The path entry with { store } hands to the same append.
    await node.appendNpy('logs/a.npy', rows(200, 2), { store });
    assert.is(hex(bytesOf(store)), expected, name);
    const h = await core.openNpy('logs/a.npy', { store });
    assert.equal([...(await h.read([2, 1], [2, 2])).data], [100.25, 100.5, 200.25, 200.5], name);
    await h.close();
    assert.equal((await store.list()).sort(), ['logs/a.npy'], `${name}: no key left beside`);
  }
});

test("appenders of one key are serialised by the store's lock; a store without edit or lock is refused before anything is written", async () => {
  const store = memoryStore();
  await core.saveNpy('a.npy', { data: new Int32Array(0), shape: [0, 2] }, { store });
  // Three appends at once: each waits for the one before, none overwrites another's rows.
  await Promise.all([1, 2, 3].map((k) => core.appendNpy('a.npy', { data: new Int32Array([k, k]), shape: [1, 2] }, { store })));
  const a = await core.loadNpy('a.npy', { store });
  assert.equal(a.shape, [3, 2]);
  assert.equal([...a.data].sort(), [1, 1, 2, 2, 3, 3]);

  const map = mapStore();
  await core.saveNpy('b.npy', { data: new Int32Array([1, 2]) }, { store: map });
  const before = hex(map.files.get('b.npy'));
  const { lock: _lock, ...noLock } = map;
  const { edit: _edit, ...noEdit } = map;
  for (const [what, plain] of [
    ['lock', noLock],
    ['edit', noEdit],
  ]) {
    for (const append of [
      () => core.appendNpy('b.npy', { data: new Int32Array([3]) }, { store: plain }),
      () => node.appendNpy('b.npy', { data: new Int32Array([3]) }, { store: plain }),
      () => core.appendRagged('b.npy', ['x'], { store: plain }),
      () => core.saveRagged('c.npy', ['x'], { store: plain }),
    ]) {
      const e = await npyErrorOf(append);
      assert.is(e.code, 'BAD_OPTION');
      assert.match(e.message, `has no ${what}`);
    }
  }
  assert.is(hex(map.files.get('b.npy')), before, 'nothing written');
  assert.equal(map.list(), ['b.npy']);
});

test("a folder store's lock: a ragged save makes a new key; a wait for a lock held stops at the signal, and the lock passes on", async () => {
  const dir = scratch('npyts-store-lock-');
  const folder = node.folderStore(dir);
  // Writes of one writer made at once land, each at its place (the writer takes them in turn).
  const writer = await folder.create('p.bin');
  await Promise.all([writer.write(new Uint8Array([1, 2]), 0), writer.write(new Uint8Array([3]), 2), writer.write(new Uint8Array([4]), 3)]);
  await writer.commit();
  assert.equal([...readFileSync(join(dir, 'p.bin'))], [1, 2, 3, 4]);
  await core.saveRagged('w.npy', ['a', 'bc'], { store: folder });
  await core.appendRagged('w.npy', ['d'], { store: folder });
  const w = await core.openRagged('w.npy', { store: folder });
  assert.equal(await w.slice(0, 3), ['a', 'bc', 'd']);
  await w.close();
  for (const store of [memoryStore(), folder]) {
    await core.saveNpy('a.npy', { data: new Int32Array(0) }, { store });
    const held = await store.lock('a.npy');
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 20);
    const waited = core.appendNpy('a.npy', { data: new Int32Array([1]) }, { store, signal: stop.signal }).then(
      () => 'appended',
      (e) => e.name,
    );
    const first = await Promise.race([waited, new Promise((r) => setTimeout(() => r('still waiting'), 3000))]);
    await held.release();
    assert.is(first, 'AbortError', store.where);
    // The lock passed on: the next append takes it.
    await core.appendNpy('a.npy', { data: new Int32Array([2]) }, { store });
    assert.equal([...(await core.loadNpy('a.npy', { store })).data], [2], store.where);
  }
});

test('a sharded save through a store aborted as a shard ends: no writer of the next shard is made, every writer made is aborted', async () => {
  const base = memoryStore();
  const log = [];
  const stop = new AbortController();
  const writes = new Map();
  const store = {
    ...base,
    async create(key) {
      log.push(`create ${key}`);
      const w = base.create(key);
      return {
        async write(bytes, at) {
          writes.set(key, (writes.get(key) ?? 0) + 1);
          // The last write of the first shard (its header, then its one tensor): the abort comes while it is under way.
          if (key.includes('00001') && writes.get(key) === 2) setTimeout(() => stop.abort(), 1);
          await new Promise((r) => setTimeout(r, 20));
          return w.write(bytes, at);
        },
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
  };
  const tensors = { a: { data: new Float32Array(64) }, b: { data: new Float32Array(64) }, c: { data: new Float32Array(64) } };
  const e = await core.saveSafetensors('m/', tensors, { store, maxShardSize: 300, signal: stop.signal }).then(
    () => null,
    (err) => err,
  );
  assert.is(e?.name, 'AbortError');
  for (const entry of log.filter((l) => l.startsWith('create '))) assert.ok(log.includes(entry.replace('create', 'abort')), `${entry}: ${log.join(', ')}`);
  assert.equal(base.list(), []);
});

test('ragged arrays in a store: saveRagged, appendRagged and openRagged, the heap a key beside the index; the keys are the files the path entries write', async () => {
  const dir = scratch('npyts-store-ragged-');
  const store = mapStore();
  const words = ['a', 'bc', 'déf', '', 'x'.repeat(300)];
  const clips = [0, 3, 1, 2].map((n, k) => ({ data: Float32Array.from({ length: 2 * n }, (_, i) => k + i / 8), shape: [n, 2] }));
  await core.saveRagged('text/w.npy', words.slice(0, 3), { store, layout: 'offsets' });
  await core.appendRagged('text/w.npy', words.slice(3, 4), { store });
  // 300 more bytes: the offsets no longer fit one byte, and the index is written again wider.
  await core.appendRagged('text/w.npy', words.slice(4), { store });
  await core.saveRagged('c.npy', clips.slice(0, 3), { store });
  await core.appendRagged('c.npy', clips.slice(3), { store });
  const w = await core.openRagged('text/w.npy', { store });
  assert.is(w.length, 5);
  assert.equal(await w.slice(0, 5), words);
  await w.close();
  const c = await core.openRagged('c.npy', { store });
  assert.equal((await c.get(3)).shape, [2, 2]);
  assert.equal([...(await c.get(1)).data], [...clips[1].data]);
  await c.close();
  assert.equal(store.list().sort(), ['c.npy', 'c.npy.heap', 'text/w.npy', 'text/w.npy.strings']);
  // The same calls on files: the same bytes in every key.
  node.saveRaggedSync(join(dir, 'w.npy'), words.slice(0, 3), { layout: 'offsets' });
  node.appendRaggedSync(join(dir, 'w.npy'), words.slice(3, 4));
  node.appendRaggedSync(join(dir, 'w.npy'), words.slice(4));
  node.saveRaggedSync(join(dir, 'c.npy'), clips.slice(0, 3));
  node.appendRaggedSync(join(dir, 'c.npy'), clips.slice(3));
  for (const [key, file] of [
    ['text/w.npy', 'w.npy'],
    ['text/w.npy.strings', 'w.npy.strings'],
    ['c.npy', 'c.npy'],
    ['c.npy.heap', 'c.npy.heap'],
  ])
    assert.is(hex(store.files.get(key)), hex(readFileSync(join(dir, file))), key);
  // numpy reads the index and the heap as the elements.
  const np = numpyOf(
    `i = np.load(io.BytesIO(b[:${store.files.get('text/w.npy').length}])); h = np.load(io.BytesIO(b[${store.files.get('text/w.npy').length}:]))
o = [int(x[0]) for x in i]; print(json.dumps([h[o[k]:o[k + 1]].tobytes().decode() for k in range(len(o) - 1)]))`,
    Buffer.concat([store.files.get('text/w.npy'), store.files.get('text/w.npy.strings')]),
  );
  assert.equal(np, words);
  // Saved again: the new heap under the name the old index does not use, the old heap removed.
  await core.saveRagged('text/w.npy', ['z'], { store });
  assert.equal(store.list().sort(), ['c.npy', 'c.npy.heap', 'text/w.npy', 'text/w.npy.strings.1']);
  assert.equal(await (await core.openRagged('text/w.npy', { store })).slice(0, 1), ['z']);
  // A title naming a heap outside the index's folder is refused before the store is asked for it.
  const evil = core.encodeNpy(new core.NdArray(plumbing.raggedIndexDType({ kind: 'utf8', heap: '../c.npy.heap', layout: 'ranges' }), [1], new Uint8Array(16)));
  store.files.set('text/evil.npy', evil);
  store.asked.length = 0;
  assert.is((await npyErrorOf(() => core.openRagged('text/evil.npy', { store }))).code, 'UNSAFE_PATH');
  assert.is((await npyErrorOf(() => core.appendRagged('text/evil.npy', ['q'], { store }))).code, 'UNSAFE_PATH');
  assert.ok(!store.asked.includes('c.npy.heap'), 'the heap outside was never asked for');
  // The old index unreadable for a while (the network): the save is refused, not made as if there were
  // none, which would write the new heap under the name the old index still reads.
  await core.saveRagged('n/w.npy', ['a'], { store });
  const heapBefore = hex(store.files.get('n/w.npy.strings'));
  const flaky = {
    ...store,
    open: (key, o) => (key === 'n/w.npy' ? Promise.reject(new core.NpyError('NETWORK', 'the store is unreachable')) : store.open(key, o)),
  };
  assert.is((await npyErrorOf(() => core.saveRagged('n/w.npy', ['b'], { store: flaky }))).code, 'NETWORK');
  assert.is(hex(store.files.get('n/w.npy.strings')), heapBefore, 'the old heap as it was');
});

test('a sharded set in a store reads its shards from it; a hostile index asks for no key outside it', async () => {
  const store = mapStore();
  const a = { data: new Float32Array([1, 2, 3, 4]), shape: [2, 2] };
  const b = { data: new Float32Array([5, 6]), shape: [2] };
  await core.saveSafetensors('m-1.safetensors', { a }, { store });
  await core.saveSafetensors('m-2.safetensors', { b }, { store });
  const index = (map) => new TextEncoder().encode(JSON.stringify({ metadata: {}, weight_map: map }));
  store.files.set('model.safetensors.index.json', index({ a: 'm-1.safetensors', b: 'm-2.safetensors' }));
  const loaded = await node.loadWeights('model.safetensors.index.json', { store });
  assert.equal([...loaded.get('a').data], [1, 2, 3, 4]);
  assert.equal([...loaded.get('b').data], [5, 6]);

  for (const evil of ['../m-1.safetensors', '%2e%2e/m-1.safetensors', 'https://evil.example/x', '/etc/passwd', 'sub/m-1.safetensors', 'C:x']) {
    store.files.set('evil.json', index({ a: 'm-1.safetensors', x: evil }));
    store.asked.length = 0;
    const e = await npyErrorOf(() => core.openWeights('evil.json', { store }));
    assert.is(e.code, 'UNSAFE_PATH', evil);
    assert.equal(store.asked, ['evil.json'], `only the index was asked for (${evil})`);
  }
  // A key given to an entry passes the same rule.
  store.asked.length = 0;
  assert.is((await npyErrorOf(() => core.openNpy('../w.npy', { store }))).code, 'UNSAFE_PATH');
  assert.is((await npyErrorOf(() => core.saveNpy('../w.npy', a, { store }))).code, 'UNSAFE_PATH');
  assert.equal(store.asked, []);
});

test('memoryStore and folderStore are stores of the same interfaces', async () => {
  const x = { data: new Float64Array([1.5, 2.5]) };
  const mem = memoryStore();
  await core.saveNpy('x.npy', x, { store: mem });
  assert.equal([...(await core.loadNpy('x.npy', { store: mem })).data], [1.5, 2.5]);
  assert.is((await npyErrorOf(() => core.loadNpy('y.npy', { store: mem }))).code, 'NOT_FOUND');

  const dir = scratch('npyts-folder-store-');
  const disk = folderStore(dir);
  await node.saveNpy('sub/x.npy', x, { store: disk });
  assert.equal([...node.loadNpySync(join(dir, 'sub', 'x.npy')).data], [1.5, 2.5]);
  assert.equal(await disk.list(), ['sub/x.npy']);
  assert.equal(readFileSync(join(dir, 'sub', 'x.npy')), Buffer.from(mem.files.get('x.npy')));
  // A failed save leaves the key as it was, and no file beside it.
  const e = await npyErrorOf(() => node.saveNpy('sub/x.npy', { data: [1, 2], dtype: 'xx' }, { store: disk }));
  assert.ok(e);
  assert.equal(await disk.list(), ['sub/x.npy']);
  // A folder store writes a key by the steps every save writes a file by: a key that is a folder is refused first.
  mkdirSync(join(dir, 'sub', 'd.npy'));
  assert.is((await npyErrorOf(() => node.saveNpy('sub/d.npy', x, { store: disk })))?.code, 'NOT_A_FILE');
  assert.equal(await disk.list(), ['sub/x.npy']);
});

test('every entry refuses an option it does not know (BAD_OPTION naming it) before anything is read or written', async () => {
  const dir = scratch('npyts-bad-option-');
  const store = memoryStore();
  const x = { data: new Float32Array([1]) };
  await core.saveNpy('x.npy', x, { store });
  await core.saveNpz('x.npz', { x }, { store });
  const bogus = { bogus: 1 };
  const at = (name) => join(dir, name);
  const npy = core.encodeNpy(x);
  const noFetch = async () => {
    throw new Error('fetched');
  };
  const sunk = [];
  const sink = { write: (chunk) => sunk.push(chunk) > 0, once: () => undefined };
  // An OPFS access handle that counts every call made on it.
  const access = { touched: 0 };
  for (const m of ['read', 'write', 'getSize', 'truncate', 'flush', 'close']) access[m] = () => void access.touched++;
  const objects = new core.NdArray(core.parseDescr('|O'), [1], ['ab']);
  const entries = {
    'core openNpy': () => core.openNpy(new Uint8Array(store.files.get('x.npy')), bogus),
    'core openNpz': () => core.openNpz(new Uint8Array(store.files.get('x.npz')), bogus),
    'core openWeights': () => core.openWeights(new Uint8Array(store.files.get('x.npz')), bogus),
    'core saveNpy': () => core.saveNpy('y.npy', x, { store, ...bogus }),
    'core loadNpy': () => core.loadNpy('x.npy', { store, ...bogus }),
    'core saveNpz': () => core.saveNpz('y.npz', { x }, { store, ...bogus }),
    'core saveSafetensors': () => core.saveSafetensors('y.safetensors', { x }, { store, ...bogus }),
    'core appendNpy': () => core.appendNpy('x.npy', x, { store, ...bogus }),
    'core saveRagged': () => core.saveRagged('y.npy', ['ab'], { store, ...bogus }),
    'core appendRagged': () => core.appendRagged('y.npy', ['ab'], { store, ...bogus }),
    'core openRagged': () => core.openRagged('y.npy', { store, ...bogus }),
    saveNpy: () => node.saveNpy(at('a.npy'), x, bogus),
    saveNpySync: () => node.saveNpySync(at('a.npy'), x, bogus),
    loadNpy: () => node.loadNpy(at('a.npy'), bogus),
    loadNpySync: () => node.loadNpySync(at('a.npy'), bogus),
    saveNpz: () => node.saveNpz(at('a.npz'), { x }, bogus),
    saveNpzSync: () => node.saveNpzSync(at('a.npz'), { x }, bogus),
    openNpz: () => node.openNpz(at('a.npz'), bogus),
    loadNpz: () => node.loadNpz(at('a.npz'), bogus),
    openWeights: () => node.openWeights(at('a.npz'), bogus),
    loadWeights: () => node.loadWeights(at('a.npz'), bogus),
    saveSafetensors: () => node.saveSafetensors(at('a.safetensors'), { x }, bogus),
    saveSafetensorsSync: () => node.saveSafetensorsSync(at('a.safetensors'), { x }, bogus),
    folderStore: () => folderStore(dir, bogus),
    // Readers of bytes, URLs and files: the input need not be valid, the options are refused first.
    'core openSafetensors': () => core.openSafetensors(npy, bogus),
    'core openGguf': () => core.openGguf(npy, bogus),
    'core openHdf5': () => core.openHdf5(npy, bogus),
    'core referencesOf': () => core.referencesOf(npy, { url: 'x.npy', ...bogus }),
    'core decodeNpy': () => core.decodeNpy(npy, bogus),
    'core decodeNpyWithHeader': () => core.decodeNpyWithHeader(npy, bogus),
    'core readNpy': () => core.readNpy(new Blob([npy]), bogus),
    'core openNpyUrl': () => core.openNpyUrl('http://127.0.0.1:9/x.npy', { fetch: noFetch, ...bogus }),
    // Functions that took a wider options object and passed it through (issue 67): each checks its own names.
    'core urlSource': () => core.urlSource('http://127.0.0.1:9/x.npy', { fetch: noFetch, ...bogus }),
    'core decodeNpz': () => core.decodeNpz(new Uint8Array(store.files.get('x.npz')), bogus),
    'core encodeNpz': () => core.encodeNpz({ x }, bogus),
    'core openNpySource': () => core.openNpySource(bytesSource(npy), bogus),
    'core readHeader': () => core.readHeader(npy, bogus),
    'core openRaggedUrl': () => core.openRaggedUrl('http://127.0.0.1:9/x.npy', { fetch: noFetch, ...bogus }),
    'core openNpyAccessHandle': () => core.openNpyAccessHandle(access, bogus),
    'core createNpyAccessHandle': () => core.createNpyAccessHandle(access, { dtype: '<f4', shape: [1], ...bogus }),
    'core appendNpyAccessHandle': () => core.appendNpyAccessHandle(access, x, bogus),
    'core encodeNpy': () => core.encodeNpy(x, bogus),
    'core writeNpy': () => core.writeNpy(sink, x, bogus),
    'core encodeGguf': () => core.encodeGguf({ x }, bogus),
    'core ggufParts': () => core.ggufParts({ x }, bogus),
    unpickle: () => pickleEntries.unpickle(pickleEntries.pickle([1]), bogus),
    pickle: () => pickleEntries.pickle([1], bogus),
    openSafetensors: () => node.openSafetensors(at('a.safetensors'), bogus),
    openHdf5: () => node.openHdf5(at('a.h5'), bogus),
    referencesOf: () => node.referencesOf(at('a.npy'), bogus),
    readNpyHeader: () => node.readNpyHeader(at('a.npy'), bogus),
    readNpyHeaderSync: () => node.readNpyHeaderSync(at('a.npy'), bogus),
    openNpzSync: () => node.openNpzSync(at('a.npz'), bogus),
    loadNpzSync: () => node.loadNpzSync(at('a.npz'), bogus),
    openNpyFile: () => node.openNpyFile(at('a.npy'), bogus),
    openNpyFileSync: () => node.openNpyFileSync(at('a.npy'), bogus),
    openRagged: () => node.openRagged(at('a.npy'), bogus),
    openRaggedSync: () => node.openRaggedSync(at('a.npy'), bogus),
    openRaggedRecordsSync: () => node.openRaggedRecordsSync(at('a.npy'), bogus),
    isRagged: () => node.isRagged(at('a.npy'), bogus),
    heapPathOf: () => node.heapPathOf(at('a.npy'), 'a.npy.heap', bogus),
    mapNpy: () => node.mapNpy(at('a.npy'), 'r', bogus),
    openNpzMember: async () => node.openNpzMember(await core.openNpz(store.files.get('x.npz')), 'x', bogus),
    openNpzMemberSync: async () => node.openNpzMemberSync(await core.openNpz(store.files.get('x.npz')), 'x', bogus),
    'core arrayFromValues': () => core.arrayFromValues([1], '<f4', bogus),
    'core createArray': () => core.createArray('<f4', [1], bogus),
    // Writers: each would make its file (or write into one) in the folder, checked empty below.
    writeBeside: () => node.writeBeside(at('a.bin'), () => undefined, bogus),
    saveGguf: () => node.saveGguf(at('a.gguf'), { x }, bogus),
    saveGgufSync: () => node.saveGgufSync(at('a.gguf'), { x }, bogus),
    createNpy: () => node.createNpy(at('a.npy'), { dtype: '<f4', shape: [1], ...bogus }),
    createNpySync: () => node.createNpySync(at('a.npy'), { dtype: '<f4', shape: [1], ...bogus }),
    writeRegion: () => node.writeRegion(at('a.npy'), [0], x, bogus),
    appendNpy: () => node.appendNpy(at('a.npy'), x, bogus),
    saveRagged: () => node.saveRagged(at('a.npy'), ['ab'], bogus),
    saveRaggedSync: () => node.saveRaggedSync(at('a.npy'), ['ab'], bogus),
    appendRagged: () => node.appendRagged(at('a.npy'), ['ab'], bogus),
    appendRaggedSync: () => node.appendRaggedSync(at('a.npy'), ['ab'], bogus),
    saveReferences: () => node.saveReferences(at('a.npy'), { data: new Int32Array([0]) }, x, bogus),
    saveReferencesSync: () => node.saveReferencesSync(at('a.npy'), { data: new Int32Array([0]) }, x, bogus),
    saveObjectArrayAsRagged: () => node.saveObjectArrayAsRagged(at('a.npy'), objects, bogus),
    saveObjectArrayAsRaggedSync: () => node.saveObjectArrayAsRaggedSync(at('a.npy'), objects, bogus),
  };
  // Every entry is tried, and the ones that took the option (or failed otherwise) are named together.
  const notRefused = [];
  for (const [name, call] of Object.entries(entries)) {
    const e = await npyErrorOf(call).catch((error) => error);
    if (e.code !== 'BAD_OPTION' || !e.message.includes("'bogus'")) notRefused.push(`${name}: ${e.message.split('\n')[0]}`);
  }
  assert.equal(notRefused, []);
  assert.equal(store.list().sort(), ['x.npy', 'x.npz'], 'nothing written to the store');
  assert.equal(await folderStore(dir).list(), [], 'nothing written to the folder');
  assert.is(sunk.length, 0, 'nothing written to the stream');
  assert.is(access.touched, 0, 'the access handle untouched');
  // Options that do not apply beside a store are refused too.
  assert.is((await npyErrorOf(() => node.saveNpy('z.npy', x, { store, durable: true }))).code, 'BAD_OPTION');
  assert.is((await npyErrorOf(() => node.openWeights('x.npz', { store, place: 'https://h/' }))).code, 'BAD_OPTION');
  assert.is((await npyErrorOf(() => core.saveNpy('z.npy', x, { store: {} }))).code, 'BAD_OPTION');
});

test("one input dispatch: with @npyts/core/node loaded, core's openers read a path or a file: URL string; an option that does not apply beside a store is refused in one words", async () => {
  const dir = scratch('npyts-dispatch-');
  const x = { data: new Float32Array([1, 2, 3]) };
  const file = join(dir, 'w.safetensors');
  await node.saveSafetensors(file, { x });
  const npy = join(dir, 'n.npy');
  await node.saveNpy(npy, x);
  for (const given of [file, pathToFileURL(file).href, pathToFileURL(file)]) {
    const w = await core.openWeights(given);
    assert.equal(Array.from((await w.get('x')).data), [1, 2, 3], String(given));
    await w.close();
    // The node entry's opener reads a file: URL given as a string as the file it names too.
    const s = await node.openSafetensors(given);
    assert.equal(s.names, ['x'], String(given));
    await s.close();
  }
  const h = await core.openNpy(pathToFileURL(npy).href);
  assert.equal(Array.from((await h.read([0], [2])).data), [1, 2]);
  await h.close?.();
  // A name with a colon is a file, as np.save takes it (a timestamp, an epoch): every opener reads what the saves wrote.
  const cwd = process.cwd();
  process.chdir(dir);
  try {
    const colon = 'ckpt-T10:00';
    await node.saveNpz(`${colon}.npz`, { x });
    await node.saveSafetensors(`${colon}.safetensors`, { x });
    await node.saveNpy(`${colon}.npy`, x);
    for (const open of [() => node.openNpz(`${colon}.npz`), () => node.openWeights(`${colon}.safetensors`), () => core.openWeights(`${colon}.npz`)]) {
      const w = await open();
      assert.equal(Array.from((await w.get('x')).data), [1, 2, 3]);
      await w.close();
    }
    const c = await core.openNpy(`${colon}.npy`);
    assert.equal(Array.from((await c.read([1], [2])).data), [2, 3]);
    await c.close?.();
  } finally {
    process.chdir(cwd);
  }
  // mmap beside a store: the same refusal from every entry that takes one, naming the option and what to do.
  const store = memoryStore();
  await core.saveNpy('x.npy', x, { store });
  const messages = [];
  for (const call of [
    () => node.loadNpy('x.npy', { store, mmap: 'r' }),
    () => node.openWeights('x.npy', { store, mmap: 'r' }),
    () => core.openWeights('x.npy', { store, mmap: 'r' }),
  ]) {
    const e = await npyErrorOf(call);
    assert.is(e.code, 'BAD_OPTION', e.message);
    messages.push(e.message.replace(/^\w+: /, ''));
  }
  assert.is(new Set(messages).size, 1, messages.join('\n'));
  assert.match(messages[0], /option mmap does not apply beside store.*folderStore\(path, \{ mmap \}\)/);
});

test('docs/architecture.md, "Adding a place": its Map store runs as written and prints what the guide says', async () => {
  const blocks = blocksOf('docs/architecture.md');
  const at = blocks.findIndex((b) => b.attrs['run-by'] === 'test/store/stores.test.mjs');
  const block = blocks[at];
  assert.ok(block.code.split('\n').length < 60, 'a whole store in under 60 lines');
  // Beside the packages, so that '@npyts/core' resolves to the build as in a user's project.
  const modules = join(root, 'node_modules', '.cache', 'npyts-store');
  mkdirSync(modules, { recursive: true });
  const file = join(modules, `map-store-${process.pid}.mjs`);
  writeFileSync(file, transformSync(block.code, { loader: 'ts', format: 'esm', target: 'node20' }).code);
  const printed = [];
  const log = console.log;
  console.log = (...xs) => printed.push(xs.map((x) => (typeof x === 'string' ? x : inspect(x))).join(' '));
  let mapStoreOfGuide;
  try {
    ({ mapStore: mapStoreOfGuide } = await import(pathToFileURL(file).href));
  } finally {
    console.log = log;
  }
  assert.is(`${printed.join('\n')}\n`, blocks[at + 1].code);
  // The guide's store takes the other entries too: a .npz, read back by numpy's rules.
  const store = mapStoreOfGuide();
  await node.saveNpz('z.npz', { a: { data: new Int8Array([1, 2, 3]) } }, { store });
  assert.equal([...(await node.loadNpz('z.npz', { store })).get('a').data], [1, 2, 3]);
});

test.run();
