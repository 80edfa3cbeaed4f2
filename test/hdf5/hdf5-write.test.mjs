// The HDF5 writer against the real thing: files written by encodeHdf5 are read back by h5py (every
// group's members, attribute and dataset byte) and by openHdf5. Groups of many members (several
// symbol nodes, a wide B-tree leaf) and every dtype the writer writes are covered.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Hdf5File, bytesSource, encodeHdf5 } from '@npyts/core';
import { scratch } from '../helpers/numpy.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const dir = scratch('npyts-hdf5w-');
const hex = (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
const bytes = (typed) => new Uint8Array(typed.buffer, typed.byteOffset, typed.byteLength);

/** A deterministic tree: all dtypes, a scalar, an empty dataset, string and number attributes, groups of 0, 1, 9 and 600 members. */
function tree() {
  const data = {
    f4: { descr: '<f4', shape: [2, 3], bytes: bytes(new Float32Array([1.5, -2, 3.25, 0, 1e-30, 65504])) },
    f2: { descr: '<f2', shape: [3], bytes: bytes(new Uint16Array([0x3c00, 0xc000, 0x7bff])) },
    f8: { descr: '<f8', shape: [], bytes: bytes(new Float64Array([Math.PI])) },
    i1: { descr: '|i1', shape: [2], bytes: bytes(new Int8Array([-1, 7])) },
    u1: { descr: '|u1', shape: [2], bytes: bytes(new Uint8Array([255, 0])) },
    i4: { descr: '<i4', shape: [2, 1], bytes: bytes(new Int32Array([-5, 1 << 30])) },
    u8: { descr: '<u8', shape: [1], bytes: bytes(new BigUint64Array([2n ** 63n + 5n])) },
    i8: { descr: '<i8', shape: [1], bytes: bytes(new BigInt64Array([-(2n ** 62n)])) },
    empty: { descr: '<f4', shape: [0, 4], bytes: new Uint8Array(0) },
  };
  const nine = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`dense_${i}`, { members: {}, attrs: { name: `d${i}` } }]));
  const many = Object.fromEntries(Array.from({ length: 600 }, (_, i) => [String(i), { descr: '<i2', shape: [1], bytes: bytes(new Int16Array([i])) }]));
  return {
    attrs: { note: 'root é ✓', ratio: 0.25 },
    members: {
      data: { members: data, attrs: { name: 'data' } },
      empty: { members: {} },
      one: { members: { vars: { members: { 0: data.f4 }, attrs: { name: 'dense' } } } },
      nine: { members: nine },
      many: { members: many },
    },
  };
}

const file = join(dir, 'tree.h5');
const encoded = encodeHdf5(tree());
writeFileSync(file, encoded);
const h5py = JSON.parse(execFileSync('python3', ['-W', 'ignore', join(here, '..', 'helpers', 'hdf5_read.py'), file], { encoding: 'utf8', maxBuffer: 1 << 26 }))[
  file
];

/** The objects the tree describes, keyed as h5py names them. */
function expected(group, path = '/', out = {}) {
  const sorted = Object.keys(group.members).sort();
  out[path] = { kind: 'group', members: sorted, attrs: group.attrs ?? {} };
  for (const name of sorted) {
    const node = group.members[name];
    const p = path === '/' ? name : `${path}/${name}`;
    if ('bytes' in node) out[p] = { kind: 'dataset', dtype: node.descr, shape: node.shape, hex: hex(node.bytes), attrs: node.attrs ?? {} };
    else expected(node, p, out);
  }
  return out;
}

test('h5py reads every group, attribute and dataset byte the writer wrote', () => {
  const want = expected(tree());
  assert.equal(Object.keys(h5py).sort(), Object.keys(want).sort());
  for (const [path, w] of Object.entries(want)) assert.equal(h5py[path], w, path);
});

test('openHdf5 reads the same back', async () => {
  const f = await Hdf5File.open(bytesSource(encoded, 'tree.h5'));
  for (const [path, w] of Object.entries(expected(tree()))) {
    const got = path === '/' ? f.root : await f.get(path);
    assert.is(got.kind, w.kind, path);
    // attrs() has no prototype (a name from the file is only an own property): compared as a plain object.
    const attrs = { ...(await got.attrs()) };
    assert.equal(attrs, w.attrs, `${path} attributes`);
    if (w.kind === 'group') assert.equal([...(await got.children())].sort(), w.members, path);
    else {
      const a = await got.read();
      assert.equal(a.shape, w.shape, path);
      assert.is(a.dtype.str, w.dtype, path);
      assert.is(hex(bytes(a.data)), w.hex, path);
    }
  }
});

test('the file is sized by what it holds', () => {
  const small = encodeHdf5({ members: { x: { descr: '<f4', shape: [1], bytes: new Uint8Array(4) } } });
  const big = encodeHdf5({ members: { x: { descr: '<f4', shape: [1000], bytes: new Uint8Array(4000) } } });
  assert.is(big.length - small.length, 4000 - 8);
});

test('what cannot be written is refused', async () => {
  assert.is((await npyErrorOf(() => encodeHdf5({ members: { x: { descr: '>f4', shape: [1], bytes: new Uint8Array(4) } } }))).code, 'HDF5_UNSUPPORTED');
  assert.is((await npyErrorOf(() => encodeHdf5({ members: { x: { descr: '<c8', shape: [1], bytes: new Uint8Array(8) } } }))).code, 'HDF5_UNSUPPORTED');
  assert.is((await npyErrorOf(() => encodeHdf5({ members: { x: { descr: '<f4', shape: [2], bytes: new Uint8Array(4) } } }))).code, 'BAD_SHAPE');
  assert.is((await npyErrorOf(() => encodeHdf5({ members: { 'a/b': { members: {} } } }))).code, 'BAD_OPTION');
});

test.run();
