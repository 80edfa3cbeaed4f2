// The third adversarial trial's findings (issue 39), each as the case that was wrong: a write option
// refused before any file is touched, values that wrapped, plumbing that looped, a zip count that wrapped.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { NpyError, arrayFromValues } from '@npyts/core';
import { createNpy, createNpySync, saveNpy, saveNpySync, saveNpz, saveNpzSync } from '@npyts/core/node';
import { python, scratch } from '../helpers/numpy.mjs';

const dir = scratch('npyts-round-three-');
const at = (name) => join(dir, name);

/** The NpyError `work` ends in (it must end in one). */
async function refused(work) {
  try {
    await work();
  } catch (e) {
    if (e instanceof NpyError) return e;
    throw new Error(`not an NpyError: ${e?.stack ?? e}`);
  }
  throw new Error('no error');
}

const array = { data: new Float32Array([1, 2, 3]) };
/** Every writer, given options: each must refuse a bad one and leave the good file there as it was. */
const writers = {
  saveNpySync: (path, o) => saveNpySync(path, array, o),
  saveNpy: (path, o) => saveNpy(path, array, o),
  saveNpzSync: (path, o) => saveNpzSync(path, { a: array }, o),
  saveNpz: (path, o) => saveNpz(path, { a: array }, o),
  createNpySync: (path, o) => createNpySync(path, { dtype: '<f4', shape: [3], ...o }).close(),
  createNpy: async (path, o) => (await createNpy(path, { dtype: '<f4', shape: [3], ...o })).close(),
};
const badOptions = [{ version: 4 }, { version: 7 }, { version: 255 }, { version: -1 }, { version: 0 }, { version: '1' }];
const badNpzOptions = [{ level: 10 }, { level: -2 }, { level: 1.5 }, { date: new Date(Number.NaN) }, { compress: 'yes' }];

test('every writer refuses a bad option (version 4, 7, 255, -1; a zlib level or date that is not one) before it touches the file: the good file stays, numpy still reads it, no temporary file is left', async () => {
  for (const [name, write] of Object.entries(writers)) {
    const npz = name.includes('Npz');
    const path = at(`good-${name}.${npz ? 'npz' : 'npy'}`);
    python(npz ? `np.savez(${JSON.stringify(path)}, a=np.arange(4.0))` : `np.save(${JSON.stringify(path)}, np.arange(4.0))`);
    const before = readFileSync(path);
    for (const options of npz ? [...badOptions, ...badNpzOptions] : badOptions) {
      const e = await refused(() => write(path, options));
      assert.is(e.code, 'BAD_OPTION', `${name} ${JSON.stringify(options)}: ${e.message}`);
      assert.ok(readFileSync(path).equals(before), `${name} ${JSON.stringify(options)} changed the file`);
    }
    const loaded = python(`print(np.load(${JSON.stringify(path)})${npz ? "['a']" : ''}.tolist())`).trim();
    assert.is(loaded, '[0.0, 1.0, 2.0, 3.0]');
  }
  assert.equal(
    readdirSync(dir).filter((f) => !f.startsWith('good-')),
    [],
  );
});

test('NdArray.set on datetime64/timedelta64 refuses a count past int64 (2**63 was stored as NaT, 1e300 as the epoch); -2**63 is NaT as numpy writes it', async () => {
  for (const descr of ['<M8[s]', '>m8[ns]']) {
    const a = arrayFromValues([0n, 1n], descr);
    for (const v of [2n ** 63n, -(2n ** 63n) - 1n, 1e300, -1e300]) {
      const e = await refused(() => a.set([0], v));
      assert.is(e.code, 'BAD_VALUE', `${descr} ${v}: ${e.message}`);
      assert.is(a.get(0), 0n, `${descr} ${v} changed the element`);
    }
    a.set([1], 2n ** 63n - 1n);
    a.set([0], -(2n ** 63n));
    const path = at(`t-${descr.replace(/\W/g, '')}.npy`);
    saveNpySync(path, a);
    assert.is(python(`a = np.load(${JSON.stringify(path)}); print(bool(np.isnat(a[0])), int(a[1].astype('i8')))`).trim(), `True ${2n ** 63n - 1n}`);
  }
});

test("a record's field is looked up among the value's own properties: a bool field named toString, hasOwnProperty, __proto__ or constructor is refused when the value lacks it, not set from Object.prototype", async () => {
  for (const name of ['toString', 'hasOwnProperty', '__proto__', 'constructor', 'valueOf']) {
    const dtype = [
      [name, '|b1'],
      ['x', '<i4'],
    ];
    const a = arrayFromValues([JSON.parse(`{"${name}": false, "x": 1}`)], dtype);
    const e = await refused(() => a.set([0], { x: 2 }));
    assert.is(e.code, 'BAD_VALUE', `${name}: ${e.message}`);
    assert.is(e.field, name);
    const read = a.get(0);
    assert.is(Object.getOwnPropertyDescriptor(read, name)?.value, false, name);
    assert.is(read.x, 1);
    // An own property of that name is used (JSON.parse makes __proto__ an own property).
    a.set([0], JSON.parse(`{"${name}": true, "x": 3}`));
    const path = at(`rec-${name}.npy`);
    saveNpySync(path, a);
    assert.is(python(`a = np.load(${JSON.stringify(path)}); print(bool(a[0][${JSON.stringify(name)}]), int(a[0]['x']))`).trim(), 'True 3', name);
  }
});

test.run();
