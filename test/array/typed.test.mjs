// The run-time side of the typed API: `expect` checks a file's dtype once (byte order free unless
// asked) with a clear error naming both dtypes; guards narrow by numpy's dtype; typed constructors
// build what numpy builds for the same descr.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { arrayFromValues, createArray, decodeNpy, decodeNpz, encodeNpy, getField, isDType, NpyError } from '@npyts/core';
import { loadNpySync, openNpzSync, openNpyFileSync } from '@npyts/core/node';
import { python, scratch } from '../helpers/numpy.mjs';

const dir = scratch('npyts-typed-');
python(`
np.save('${dir}/le.npy', np.arange(6, dtype='<f4').reshape(2, 3))
np.save('${dir}/be.npy', np.arange(6, dtype='>f4').reshape(2, 3))
np.save('${dir}/rec.npy', np.zeros(2, dtype=[('pos', [('x', '<f8'), ('y', '<f8')]), (('title', 'id'), '<u4'), ('m', '<f4', (2, 3))]))
np.savez('${dir}/w.npz', w=np.ones(3, dtype='<f8'))`);

test('expect: the dtype is checked once, byte order free unless exactByteOrder; the error names both dtypes', () => {
  const le = readFileSync(join(dir, 'le.npy'));
  const be = readFileSync(join(dir, 'be.npy'));
  assert.equal(Array.from(decodeNpy(le, { expect: '<f4' }).data), [0, 1, 2, 3, 4, 5]);
  assert.equal(Array.from(decodeNpy(be, { expect: '<f4' }).data), [0, 1, 2, 3, 4, 5]);
  assert.equal(Array.from(decodeNpy(be, { expect: 'float32' }).data), [0, 1, 2, 3, 4, 5]);
  assert.throws(
    () => decodeNpy(be, { expect: '<f4', exactByteOrder: true }),
    (e) => e instanceof NpyError && e.code === 'UNEXPECTED_DTYPE' && /'<f4'/.test(e.message) && /'>f4'/.test(e.message),
  );
  assert.throws(
    () => decodeNpy(le, { expect: '<f8' }),
    (e) => e instanceof NpyError && e.code === 'UNEXPECTED_DTYPE' && /expected dtype '<f8'.*the header says '<f4'/.test(e.message),
  );
  assert.throws(
    () => loadNpySync(join(dir, 'le.npy'), { expect: '<i4' }),
    (e) => e.code === 'UNEXPECTED_DTYPE',
  );
  assert.throws(
    () => openNpyFileSync(join(dir, 'le.npy'), { expect: '<i4' }),
    (e) => e.code === 'UNEXPECTED_DTYPE',
  );
  assert.equal(Array.from(openNpyFileSync(join(dir, 'be.npy'), { expect: '<f4' }).read([1, 0], [1, 3]).data), [3, 4, 5]);
  assert.equal(Array.from(openNpzSync(join(dir, 'w.npz')).getSync('w', { expect: '<f8' }).data), [1, 1, 1]);
  assert.throws(
    () => decodeNpz(readFileSync(join(dir, 'w.npz'))).getSync('w', { expect: '<f4' }),
    (e) => e.code === 'UNEXPECTED_DTYPE' && /member 'w\.npy'/.test(e.message) && e.member === 'w.npy',
  );
  // Records: the expected descr is compared as numpy compares dtypes (names, titles, offsets, shapes).
  const rec = loadNpySync(join(dir, 'rec.npy'), {
    expect: [
      [
        'pos',
        [
          ['x', '<f8'],
          ['y', '<f8'],
        ],
      ],
      [['title', 'id'], '<u4'],
      ['m', '<f4', [2, 3]],
    ],
  });
  assert.equal(getField(rec, 'pos.x').shape, [2]);
  assert.throws(
    () =>
      loadNpySync(join(dir, 'rec.npy'), {
        expect: [
          [
            'pos',
            [
              ['x', '<f8'],
              ['y', '<f8'],
            ],
          ],
          ['id', '<u4'],
          ['m', '<f4', [2, 3]],
        ],
      }),
    (e) => e.code === 'UNEXPECTED_DTYPE',
  );
});

test('guards: isDType and kind families narrow by the dtype numpy reports', () => {
  const families = JSON.parse(
    python(`
out = {}
for d in ['<f4', '>f8', '<f2', '|b1', '<i8', '>u2', '<c8', '|S3', '<U2', '|V4', '<M8[s]', '<m8[D]', '|O']:
    out[d] = np.dtype(d).kind
print(json.dumps(out))`),
  );
  const kindToFamily = {
    f: 'float',
    b: 'bool',
    i: 'int',
    u: 'uint',
    c: 'complex',
    S: 'bytes',
    U: 'str',
    V: 'void',
    M: 'datetime',
    m: 'timedelta',
    O: 'object',
  };
  for (const [descr, kind] of Object.entries(families)) {
    const a = createArray(descr, [1]);
    for (const family of Object.values(kindToFamily)) assert.is(a.is(family), family === kindToFamily[kind], `${descr} is ${family}`);
    assert.ok(isDType(a, descr));
  }
  assert.ok(createArray([['a', '<i4']], [1]).is('record'));
  const be = decodeNpy(readFileSync(join(dir, 'be.npy')));
  assert.ok(isDType(be, '<f4'));
  assert.not.ok(isDType(be, '<f4', { exactByteOrder: true }));
  assert.not.ok(isDType(be, '<f8'));
});

test('typed constructors build what numpy builds for the same descr and values', () => {
  const descr = [
    [
      'pos',
      [
        ['x', '<f8'],
        ['y', '<f8'],
      ],
    ],
    [['title', 'id'], '<u4'],
    ['m', '<f4', [2, 3]],
  ];
  const a = arrayFromValues(
    [
      {
        pos: { x: 1.5, y: -2 },
        id: 7,
        m: [
          [1, 2, 3],
          [4, 5, 6],
        ],
      },
    ],
    descr,
  );
  const expected = python(`
a = np.array([((1.5, -2.0), 7, [[1, 2, 3], [4, 5, 6]])], dtype=[('pos', [('x', '<f8'), ('y', '<f8')]), (('title', 'id'), '<u4'), ('m', '<f4', (2, 3))])
b = io.BytesIO(); np.save(b, a); sys.stdout.write(b.getvalue().hex())`);
  assert.is(Buffer.from(encodeNpy(a)).toString('hex'), expected);
  assert.equal(a.get(0), {
    pos: { x: 1.5, y: -2 },
    id: 7,
    m: [
      [1, 2, 3],
      [4, 5, 6],
    ],
  });
  const objects = createArray('|O', [2, 2]);
  assert.equal(objects.data, [null, null, null, null]);
  assert.is(python(`print(np.empty((2, 2), dtype=object).tolist())`).trim(), '[[None, None], [None, None]]');
});

test.run();
