// The blocking handle (openRaggedSync) and the async reader (openRagged) are one definition run by two
// drivers (issue 28): they tell the same facts and give the same elements, shapes and bounds, for every
// layout and kind, and both refuse what is out of range (the async one by rejecting, never throwing).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { arrayFromValues, arrayToJSON, NpyError } from '@npyts/core';
import { openRagged, openRaggedSync, saveRaggedSync, saveReferencesSync } from '@npyts/core/node';
import { scratch } from '../helpers/numpy.mjs';

const dir = scratch('npyts-readers-agree-');
const plain = (e) => (typeof e === 'string' ? e : Array.isArray(e) ? e.map(plain) : arrayToJSON(e));

const cases = {
  'strings, ranges': () => saveRaggedSync(join(dir, 's.npy'), ['a', 'bcd', '', 'éé']),
  'strings, offsets': () => saveRaggedSync(join(dir, 'so.npy'), ['x', 'yz'], { layout: 'offsets' }),
  'strings, zero-terminated': () => saveRaggedSync(join(dir, 'sz.npy'), ['p', 'qr', 'stu'], { layout: 'zero-terminated' }),
  'arrays with a tail': () =>
    saveRaggedSync(join(dir, 'a.npy'), [
      arrayFromValues(
        [
          [1, 2],
          [3, 4],
        ],
        '<f4',
      ),
      arrayFromValues([[5, 6]], '<f4'),
    ]),
  'two levels': () => saveRaggedSync(join(dir, 'n.npy'), [[arrayFromValues([1], '<i2'), arrayFromValues([2, 3], '<i2')], [arrayFromValues([4, 5, 6], '<i2')]]),
  references: () =>
    saveReferencesSync(
      join(dir, 'r.npy'),
      arrayFromValues([2, 0, 1], '<i8'),
      arrayFromValues(
        [
          [1, 2],
          [3, 4],
          [5, 6],
        ],
        '<f8',
      ),
    ),
};
const files = {
  'strings, ranges': 's.npy',
  'strings, offsets': 'so.npy',
  'strings, zero-terminated': 'sz.npy',
  'arrays with a tail': 'a.npy',
  'two levels': 'n.npy',
  references: 'r.npy',
};

for (const [name, make] of Object.entries(cases)) {
  test(`${name}: the blocking handle and the async reader agree on facts, elements, shapes and bounds`, async () => {
    make();
    const path = join(dir, files[name]);
    const s = openRaggedSync(path);
    const a = await openRagged(path);
    try {
      for (const k of ['path', 'heapPath', 'length', 'kind', 'layout', 'indexShape', 'raggedShape', 'heapLength', 'tail']) assert.equal(a[k], s[k], k);
      assert.is(a.heapDtype.str, s.heapDtype.str);
      for (let i = 0; i < s.length; i++) {
        assert.equal(plain(await a.get(i)), plain(s.get(i)), `element ${i}`);
        assert.equal(await a.shape(i), s.shape(i), `shape ${i}`);
        assert.equal(await a.bounds(i), s.bounds(i), `bounds ${i}`);
      }
      const chunks = [];
      for await (const c of a.chunks(2)) chunks.push(c.map(plain));
      assert.equal(
        chunks,
        [...s.chunks(2)].map((c) => c.map(plain)),
      );
      // Out of range: the blocking one throws, the async one rejects (a call never throws synchronously).
      assert.throws(
        () => s.get(s.length),
        (e) => e instanceof NpyError,
      );
      let rejected = null;
      const pending = a.get(a.length);
      await pending.catch((e) => {
        rejected = e;
      });
      assert.instance(rejected, NpyError);
    } finally {
      s.close();
      await a.close();
    }
  });
}

test.run();
