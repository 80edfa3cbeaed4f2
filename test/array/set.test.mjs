// NdArray.set: one element written from a JS value, checked against numpy doing `a[index] = value`
// on an array of the same dtype; values a dtype cannot hold are refused, never wrapped.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { createArray, NpyError } from '@npyts/core';
import { saveNpySync } from '@npyts/core/node';
import { python, scratch } from '../helpers/numpy.mjs';

const dir = scratch();

// [descr, JS value, the same value in Python source]
const cases = [
  ['<i4', -7, '-7'],
  ['>u2', 65535, '65535'],
  ['<i8', 2n ** 62n, '2**62'],
  ['>f8', Math.PI, 'np.pi'],
  ['<f4', 0.1, '0.1'],
  ['<f2', 1 / 3, '1/3'],
  ['<c16', { re: 1.5, im: -2 }, '1.5-2j'],
  ['|b1', true, 'True'],
  ['|S5', 'abc', "b'abc'"],
  ['>U3', 'é整x', "'é整x'"],
  ['<M8[s]', 1_700_000_000n, "np.datetime64(1700000000, 's')"],
  [
    [
      ['a', '<i2'],
      ['b', '>f4'],
    ],
    { a: -3, b: 2.5 },
    '(-3, 2.5)',
  ],
];

test('set writes what numpy writes for a[1, 2] = value, in C and F order, and nothing else', () => {
  for (const [descr, value, py] of cases) {
    for (const order of ['C', 'F']) {
      const a = createArray(descr, [2, 3], { order });
      a.set([1, 2], value);
      const file = join(dir, `set-${cases.indexOf(cases.find((c) => c[0] === descr))}-${order}.npy`);
      saveNpySync(file, a);
      const same = python(`
a = np.load(${JSON.stringify(file)})
b = np.zeros((2, 3), dtype=a.dtype, order=${JSON.stringify(order)})
b[1, 2] = ${py}
print(a.tobytes() == b.tobytes() and a.flags.f_contiguous == b.flags.f_contiguous)`).trim();
      assert.is(same, 'True', `${JSON.stringify(descr)} ${order}`);
    }
  }
});

test('set refuses what the dtype cannot hold (BAD_VALUE) and indexes outside the array (BAD_INDEX)', () => {
  const code = (fn) => {
    try {
      fn();
    } catch (e) {
      return e instanceof NpyError ? e.code : String(e);
    }
    return 'set';
  };
  const i1 = createArray('|i1', [2]);
  assert.is(
    code(() => i1.set([0], 128)),
    'BAD_VALUE',
  );
  assert.is(
    code(() => i1.set([0], 1.5)),
    'BAD_VALUE',
  );
  assert.is(
    code(() => createArray('|S2', [1]).set([0], 'abc')),
    'BAD_VALUE',
  );
  assert.is(
    code(() => i1.set([2], 1)),
    'BAD_INDEX',
  );
  assert.is(
    code(() => i1.set([0, 0], 1)),
    'BAD_INDEX',
  );
  assert.equal(Array.from(i1.data), [0, 0], 'a refused set changes nothing');
});

test.run();
