// HDF5 against the real thing (h5py): files written at test time by h5py (its default format and
// libver='latest'), each walked through openHdf5 and compared with what h5py reads: every group's
// members in h5py's order, every attribute, every dataset's shape, dtype and bytes. What npyts does
// not read is refused by name; hostile files (patched h5py output) end in one NpyError.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Hdf5File, NdArray, bytesSource, hdf5Format, openHdf5, openWeights } from '@npyts/core';
import * as coreNode from '@npyts/core/node';
import { scratch } from '../helpers/numpy.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const dir = scratch('npyts-hdf5-');
const report = JSON.parse(
  execFileSync('python3', ['-W', 'ignore', join(here, '..', 'helpers', 'hdf5_fixtures.py'), dir], { encoding: 'utf8', maxBuffer: 1 << 28 }),
);
const bytesOf = (name) => new Uint8Array(readFileSync(join(dir, name)));
const open = (name, bytes = bytesOf(name)) => Hdf5File.open(bytesSource(bytes, name));
const raw = (a) => new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength);

/** An attribute as the fixture script wrote h5py's reading of it. */
function attrOf(v) {
  if (v === null) return { empty: true };
  if (typeof v === 'string') return { str: v };
  if (Array.isArray(v)) return { strs: v };
  if (typeof v === 'bigint' || Number.isInteger(v)) return typeof v === 'bigint' || Number.isSafeInteger(v) ? { int: String(v) } : { float: v };
  if (typeof v === 'number') return { float: v };
  if (v instanceof NdArray) return { array: Array.from(v.data, (x) => (typeof x === 'bigint' ? Number(x) : x)), shape: v.shape, dtype: v.dtype.str };
  throw new Error(`unexpected attribute ${v}`);
}

/** Walk a file as h5py did and compare every object. */
async function compareWithH5py(fname, skip = () => false) {
  const f = await open(fname);
  const objects = report.files[fname];
  let datasets = 0;
  for (const [path, want] of Object.entries(objects)) {
    if (want.kind === 'link' || skip(path, want)) continue;
    const got = await f.get(path);
    assert.is(got.kind, want.kind, path);
    assert.is(got.path, path, path);
    const attrs = await got.attrs();
    // As entries: in h5py's order, and an attribute named `constructor` is compared as any other.
    const wantAttrs = Object.entries(want.attrs).map(([k, v]) => [k, k === 'ratio' ? { float: v.float } : v]);
    assert.equal(
      Object.entries(attrs).map(([k, v]) => [k, attrOf(v)]),
      wantAttrs,
      `${path} attributes`,
    );
    assert.equal(Object.keys(attrs), Object.keys(want.attrs), `${path}: attributes in h5py's order`);
    if (want.kind === 'group') {
      assert.equal(await got.children(), want.children, `${path} members in h5py's order`);
    } else {
      assert.equal(got.shape, want.shape, path);
      assert.is(got.dtype.str, want.dtype, path);
      // Where h5py says the bytes are in the file (past a user block), where it says they are anywhere.
      assert.is(got.dataOffset !== null && got.dataOffset >= 0 ? got.dataOffset : null, want.offset, `${path} offset`);
      // h5py.Empty: no shape (None), and no values (Empty), read as null.
      if (want.shape === null) assert.is(await got.read(), null, path);
      if (!want.bin) continue;
      const a = await got.read();
      assert.equal(a.shape, want.shape, path);
      assert.is(a.dtype.str, want.dtype, path);
      assert.equal(raw(a), new Uint8Array(readFileSync(join(dir, 'expect', fname, want.bin))), `${path} values`);
      datasets++;
    }
  }
  return datasets;
}

test("h5py's default format (superblock 0, symbol tables, a 300-member group): every group, attribute and dataset as h5py reads it", async () => {
  const f = await open('default.h5');
  assert.is(f.superblockVersion, 0);
  // 20 numeric dtypes, a scalar, an empty, strings, opaque bytes, a compact dataset, 300 in 'many', 3 in 'tracked'.
  assert.is(await compareWithH5py('default.h5'), 20 + 5 + 300 + 3);
});

test('attributes as h5py reads them: float16 scalars decoded, h5py.Empty as null (datasets too), names such as __proto__ kept, creation order where tracked', async () => {
  const f = await open('default.h5');
  const meta = await (await f.get('meta')).attrs();
  // float16 scalars were their raw bits (20810 for 42.3125).
  assert.is(meta.half, report.files['default.h5']['/meta'].attrs.half.float);
  assert.is(meta.half_be, report.files['default.h5']['/meta'].attrs.half_be.float);
  // No prototype: `__proto__` is an attribute (it was dropped), and no name is inherited.
  assert.is(Object.getPrototypeOf(meta), null);
  assert.ok(Object.hasOwn(meta, '__proto__') && Object.hasOwn(meta, 'constructor'));
  assert.is(Object.getOwnPropertyDescriptor(meta, '__proto__')?.value, 'p');
  assert.is(meta.constructor, 7);
  assert.not.ok('toString' in meta);
  // h5py.Empty as a dataset was refused as corrupt; its attribute of Empty too is null.
  const nothing = await f.get('nothing');
  assert.is(nothing.kind, 'dataset');
  assert.is(nothing.shape, null);
  assert.is(nothing.byteLength, 0);
  assert.is(await nothing.read(), null);
  assert.is((await nothing.attrs()).nothing, null);
  // track_order=True: attributes and members in creation order, as h5py lists them.
  const tracked = await f.get('tracked');
  const want = report.files['default.h5']['/tracked'];
  assert.equal(Object.keys(await tracked.attrs()), Object.keys(want.attrs));
  assert.equal(await tracked.children(), want.children);
});

test("libver='latest' (superblock 3, object headers 2, link messages, track_order): as h5py reads it", async () => {
  const f = await open('latest.h5');
  assert.is(f.superblockVersion, 3);
  assert.is(await compareWithH5py('latest.h5'), 20 + 4 + 3);
  assert.equal(await (await f.get('ordered')).children(), ['zeta', 'alpha', 'mid'], 'creation order where the group tracks it');
});

test('paths: relative to a group, absolute from the root, a missing member named with those there are', async () => {
  const f = await open('default.h5');
  const meta = await f.get('/meta');
  assert.is((await meta.get('/num/f4')).path, '/num/f4');
  const c = await f.get('a/b');
  assert.is((await c.get('c/d')).path, '/a/b/c/d');
  const e = await npyErrorOf(() => f.get('a/nope'));
  assert.is(e.code, 'NPZ_KEY');
  assert.match(e.message, "'b'");
  const d = await npyErrorOf(() => f.get('num/f4/x'));
  assert.is(d.code, 'NPZ_KEY');
});

test('what npyts does not read is refused by name (HDF5_UNSUPPORTED): chunks, filters, links, enums, vlen datasets, dense groups', async () => {
  const f = await open('refused.h5');
  for (const [path, words] of [
    ['chunked', 'chunks'],
    ['gzip', 'chunks'],
    ['soft', 'soft link'],
    ['external', 'external link'],
    ['bools', 'enum'],
    ['vlen', 'variable-length'],
    ['external_storage', 'external storage'],
  ]) {
    const e = await npyErrorOf(() => f.get(path));
    assert.is(e.code, 'HDF5_UNSUPPORTED', `${path}: ${e.message}`);
    assert.match(e.message, words, path);
  }
  // External storage is named with its files (it was refused as "never written").
  const external = await npyErrorOf(() => f.get('external_storage'));
  assert.match(external.message, 'ext1.bin');
  assert.match(external.message, 'ext2.bin');
  assert.equal(raw(await (await f.get('plain')).read()), new Uint8Array(new Float32Array([0, 1, 2, 3]).buffer));
  const bool = await npyErrorOf(() => f.root.attrs());
  assert.is(bool.code, 'HDF5_UNSUPPORTED');
  const dense = await open('dense.h5');
  const e = await npyErrorOf(() => dense.root.children());
  assert.is(e.code, 'HDF5_UNSUPPORTED');
  assert.match(e.message, 'dense storage');
});

test('a user block (h5py userblock_size=512, 2048): the superblock found after it, addresses counted from it, told apart by openWeights', async () => {
  for (const fname of ['userblock.h5', 'userblock_latest.h5']) {
    assert.is(await compareWithH5py(fname), 3, fname);
    // Zeros before the superblock passed safetensors' weak test (BAD_SAFETENSORS); text told no format.
    const w = await openWeights(bytesOf(fname));
    assert.is(w.format, 'hdf5', fname);
    const want = report.files[fname]['/w'];
    assert.equal(raw(await w.get('w')), new Uint8Array(readFileSync(join(dir, 'expect', fname, want.bin))), fname);
    await w.close();
  }
  // Not HDF5 anywhere the library looks: refused, naming where it looked.
  const e = await npyErrorOf(() => open('zeros.h5', new Uint8Array(4096)));
  assert.is(e.code, 'BAD_HDF5');
  assert.match(e.message, '512');
});

test("paths: @npyts/core/node's openHdf5 opens them (a path, a file: URL); the main entry alone refuses one, naming it", async () => {
  for (const input of [join(dir, 'userblock.h5'), pathToFileURL(join(dir, 'userblock.h5'))]) {
    const f = await coreNode.openHdf5(input);
    const want = report.files['userblock.h5']['/g/b'];
    assert.equal(raw(await (await f.get('g/b')).read()), new Uint8Array(readFileSync(join(dir, 'expect', 'userblock.h5', want.bin))));
    await f.close();
  }
  // The main entry alone (a process that has not loaded @npyts/core/node, so no paths are registered) refuses a path, naming the entry that opens it.
  const alone = execFileSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import('@npyts/core').then((m) => m.openHdf5(${JSON.stringify(join(dir, 'default.h5'))})).then(() => console.log('[]'), (e) => console.log(JSON.stringify([e.code, e.message])))`,
    ],
    { cwd: join(here, '../..'), encoding: 'utf8' },
  );
  const [code, message] = JSON.parse(alone);
  assert.is(code, 'NETWORK', message);
  assert.match(message, "import { openHdf5 } from '@npyts/core/node'");
  // With it loaded (as here), the main entry's openHdf5 opens the path too: paths are one rule, Node's.
  const f = await openHdf5(join(dir, 'default.h5'));
  await f.close();
});

test('openHdf5 over a Blob; a closed file refuses later reads with CLOSED', async () => {
  const f = await openHdf5(new Blob([bytesOf('default.h5')]));
  const d = await f.get('num/i8_be');
  assert.is(d.dtype.str, '>i8');
  await f.close();
  assert.is((await npyErrorOf(() => d.read())).code, 'CLOSED');
});

/** Where the data of the first message of `type` in the version 1 object header at `address` starts. */
function messageAt(bytes, address, type) {
  const view = new DataView(bytes.buffer, bytes.byteOffset);
  const length = view.getUint32(address + 8, true);
  for (let p = address + 16; p < address + 16 + length; ) {
    const t = view.getUint16(p, true);
    const size = view.getUint16(p + 2, true);
    if (t === type) return p + 8;
    p += 8 + size;
  }
  throw new Error(`no message ${type} at ${address}`);
}
const setU64 = (bytes, at, v) => new DataView(bytes.buffer, bytes.byteOffset).setBigUint64(at, BigInt(v), true);
/** Open a file's weights (every dataset walked) and read them all: what a hostile file must end in an NpyError doing. */
const walkAll = async (bytes) => {
  const f = await hdf5Format.open(bytesSource(bytes, 'hostile.h5'), null, {});
  await f.getAll();
  for (const name of f.names) await f.info(name);
};

test("as a weight file (the format list's hdf5 entry): every dataset by its path, read as h5py reads it", async () => {
  const f = await hdf5Format.open(bytesSource(bytesOf('default.h5'), 'default.h5'), null, {});
  assert.is(f.format, 'hdf5');
  // A dataset with no value (h5py.Empty) holds no tensor: it is not listed.
  const datasets = Object.entries(report.files['default.h5']).filter(([, o]) => o.kind === 'dataset' && o.shape !== null);
  assert.equal([...f.names].sort(), datasets.map(([p]) => p.slice(1)).sort());
  // A float32 dataset whose dtype attribute says bfloat16 (Keras's mark for 2-byte values) stays float32, as h5py reads it.
  assert.is((await f.info('num/f4')).dtype.str, '<f4');
  const all = await f.getAll();
  for (const [path, want] of datasets) {
    assert.equal(raw(all.get(path.slice(1))), new Uint8Array(readFileSync(join(dir, 'expect', 'default.h5', want.bin))), path);
  }
  await f.close();
});

test('hostile files: addresses past the end, huge dimensions, bad heaps, cycles: BAD_HDF5, nothing allocated for them', async () => {
  const good = bytesOf('default.h5');
  const f = await open('default.h5');
  const f4 = (await f.get('num/f4')).address;
  const patched = (patch) => {
    const b = good.slice();
    patch(b);
    return b;
  };
  const heap = good.findIndex((_, i) => good[i] === 0x48 && good[i + 1] === 0x45 && good[i + 2] === 0x41 && good[i + 3] === 0x50);
  const gcol = good.findIndex((_, i) => good[i] === 0x47 && good[i + 1] === 0x43 && good[i + 2] === 0x4f && good[i + 3] === 0x4c);
  const cases = {
    'root header past the end': [patched((b) => setU64(b, 64, 2 ** 50)), (x) => x.root.children()],
    'a dataspace of 255 dimensions': [patched((b) => (b[messageAt(b, f4, 1) + 1] = 255)), (x) => x.get('num/f4')],
    'a dimension of 2^50': [patched((b) => setU64(b, messageAt(b, f4, 1) + 8, 2 ** 50)), async (x) => (await x.get('num/f4')).read()],
    'data past the end': [patched((b) => setU64(b, messageAt(b, f4, 8) + 2, good.length - 8)), async (x) => (await x.get('num/f4')).read()],
    'a local heap of 2^50 bytes': [patched((b) => setU64(b, heap + 8, 2 ** 50)), (x) => x.root.children()],
    'a global heap collection of 2^50 bytes': [patched((b) => setU64(b, gcol + 8, 2 ** 50)), async (x) => (await x.get('meta')).attrs()],
    'an object header continued into itself': [patched((b) => setU64(b, messageAt(b, f4, 16), f4)), (x) => x.get('num/f4')],
  };
  for (const [what, [bytes, work]] of Object.entries(cases)) {
    const e = await npyErrorOf(async () => work(await open('hostile.h5', bytes)));
    assert.is(e.code, 'BAD_HDF5', `${what}: ${e.code} ${e.message}`);
  }
  // Version 2 structures carry checksums (lookup3), which h5py checks: a changed byte is refused.
  const latest = bytesOf('latest.h5');
  const rootAt = Number(new DataView(latest.buffer, latest.byteOffset).getBigUint64(36, true));
  for (const [what, at] of [
    ['the superblock', 30],
    ['the root object header', rootAt + 20],
  ]) {
    const b = latest.slice();
    b[at] ^= 1;
    const e = await npyErrorOf(async () => (await open('latest.h5', b)).root.children());
    assert.is(e.code, 'BAD_HDF5', what);
    assert.match(e.message, 'checksum', what);
  }
  const cycle = await npyErrorOf(() => walkAll(bytesOf('cycle.h5')));
  assert.is(cycle.code, 'BAD_HDF5');
  assert.match(cycle.message, 'cycle');
  // Cut anywhere, or a byte of the metadata flipped: a file read, or one NpyError.
  for (let n = 0; n < good.length; n += 4099) {
    const e = await npyErrorOf(() => walkAll(good.subarray(0, n)));
    assert.ok(['BAD_HDF5', 'DATA_TRUNCATED'].includes(e.code), `cut at ${n}: ${e.code} ${e.message}`);
  }
  for (let at = 0; at < 8192; at += 89) {
    try {
      await walkAll(patched((b) => (b[at] ^= 0xff)));
    } catch (e) {
      assert.ok(e?.name === 'NpyError', `byte ${at} flipped: ${e?.stack ?? e}`);
    }
  }
});

test.run();
