// HDF5 against the real thing (h5py): files written at test time by h5py (its default format and
// libver='latest'), each walked through openHdf5 and compared with what h5py reads: every group's
// members in h5py's order, every attribute, every dataset's shape, dtype and bytes. What npyts does
// not read is refused by name; hostile files (patched h5py output) end in one NpyError.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Hdf5File, NdArray, bytesSource, openHdf5 } from '@npyts/core';
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
    const wantAttrs = Object.fromEntries(Object.entries(want.attrs).map(([k, v]) => [k, k === 'ratio' ? { float: v.float } : v]));
    assert.equal(Object.fromEntries(Object.entries(attrs).map(([k, v]) => [k, attrOf(v)])), wantAttrs, `${path} attributes`);
    assert.equal(Object.keys(attrs), Object.keys(want.attrs), `${path}: attributes in h5py's order`);
    if (want.kind === 'group') {
      assert.equal(await got.children(), want.children, `${path} members in h5py's order`);
    } else {
      assert.equal(got.shape, want.shape, path);
      assert.is(got.dtype.str, want.dtype, path);
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
  // 20 numeric dtypes, a scalar, an empty, a strings, a compact dataset, 300 in 'many'.
  assert.is(await compareWithH5py('default.h5'), 20 + 4 + 300);
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
  ]) {
    const e = await npyErrorOf(() => f.get(path));
    assert.is(e.code, 'HDF5_UNSUPPORTED', `${path}: ${e.message}`);
    assert.match(e.message, words, path);
  }
  assert.equal(raw(await (await f.get('plain')).read()), new Uint8Array(new Float32Array([0, 1, 2, 3]).buffer));
  const bool = await npyErrorOf(() => f.root.attrs());
  assert.is(bool.code, 'HDF5_UNSUPPORTED');
  const dense = await open('dense.h5');
  const e = await npyErrorOf(() => dense.root.children());
  assert.is(e.code, 'HDF5_UNSUPPORTED');
  assert.match(e.message, 'dense storage');
});

test('openHdf5 over a Blob; a closed file refuses later reads with CLOSED', async () => {
  const f = await openHdf5(new Blob([bytesOf('default.h5')]));
  const d = await f.get('num/i8_be');
  assert.is(d.dtype.str, '>i8');
  await f.close();
  assert.is((await npyErrorOf(() => d.read())).code, 'CLOSED');
});

test.run();
