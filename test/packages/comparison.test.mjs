// The README's table "next to the alternatives": its npyjs and numpy-ts columns are what those
// libraries, as installed here, do with files numpy writes now. Each row is tried: values equal to
// numpy's are "yes", an exception is "refused", and the writes are read back by numpy.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as npyjs from 'npyjs';
import * as numpyTs from 'numpy-ts';
import { python, scratch } from '../helpers/numpy.mjs';
import { root } from './guide-blocks.mjs';

const dir = scratch('npyts-comparison-');
const cases = {
  f4: "np.arange(6, dtype='<f4').reshape(2, 3)",
  b1: 'np.array([True, False, True])',
  be: "np.arange(6, dtype='>f8').reshape(2, 3)",
  f2: "np.array([0.5, 1.5, -2.0], '<f2')",
  i8: "np.array([2**62 + 1, -3], '<i8')",
  c16: "np.array([1 + 2j, -3.5j], '<c16')",
  U: "np.array(['ab', 'çé'], '<U3')",
  rec: "np.array([(1, 2.5)], [('a', '<i4'), ('b', '<f8')])",
  M8: "np.array(['2024-02-29'], 'M8[D]')",
  F: "np.asfortranarray(np.arange(6, dtype='<i4').reshape(2, 3))",
};
// numpy's values, C order, as JSON-able lists (complex as [re, im], datetimes as day counts, 64-bit integers as text).
const expected = JSON.parse(
  python(`
out = {}
for name, expr in ${JSON.stringify(cases)}.items():
    a = eval(expr)
    np.save(${JSON.stringify(dir)} + '/' + name + '.npy', a)
    flat = a.ravel(order='C')
    if a.dtype.kind == 'c': v = [[float(x.real), float(x.imag)] for x in flat]
    elif a.dtype.kind == 'M': v = [int(x) for x in flat.astype('int64')]
    elif a.dtype.kind in 'iu' and a.dtype.itemsize == 8: v = [str(int(x)) for x in flat]
    elif a.dtype.names: v = [list(r) for r in flat.tolist()]
    else: v = flat.tolist()
    out[name] = v
np.savez_compressed(${JSON.stringify(join(dir, 'z.npz'))}, a=np.arange(3, dtype='<f4'))
print(json.dumps(out))
`),
);
const bytesOf = (name) => new Uint8Array(readFileSync(join(dir, `${name}.npy`)));
const flatten = (x) => (Array.isArray(x) ? x.flatMap(flatten) : [x]);
/** What a library's values are, in numpy's JSON form for the case. */
const jsonOf = (name, values) => {
  const list = flatten(Array.from(values, (v) => v));
  if (name === 'c16') {
    if (typeof list[0] === 'object') return list.map((c) => [c.re, c.im]);
    return list.filter((_, i) => i % 2 === 0).map((re, k) => [re, list[2 * k + 1]]);
  }
  if (name === 'i8') return list.map((v) => String(v));
  if (name === 'b1') return list.map((v) => Boolean(v));
  return list;
};

/** npyjs's verdict on one case: yes, refused, wrong, or "as stored, with a flag" for Fortran order. */
function npyjsDoes(name) {
  const bytes = bytesOf(name);
  let r;
  try {
    r = npyjs.parse(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  } catch {
    return 'refused';
  }
  const got = jsonOf(name, r.data);
  if (JSON.stringify(got) === JSON.stringify(expected[name])) return 'yes';
  if (name === 'F' && r.fortranOrder && JSON.stringify(got) === JSON.stringify([0, 3, 1, 4, 2, 5].map((i) => expected.F[i]))) return 'as stored, with a flag';
  return `wrong: ${JSON.stringify(got)}`;
}

function numpyTsDoes(name) {
  let r;
  try {
    r = numpyTs.parseNpy(bytesOf(name));
  } catch {
    return 'refused';
  }
  const got = jsonOf(name, flatten(r.toArray()));
  return JSON.stringify(got) === JSON.stringify(expected[name]) ? 'yes' : `wrong: ${JSON.stringify(got)}`;
}

/** The README's table: row label → { column → cell }. */
function readmeTable() {
  const lines = readFileSync(join(root, 'README.md'), 'utf8').split('\n');
  const start = lines.findIndex((l) => l.startsWith('| | npyts | numpy |'));
  const head = lines[start].split('|').map((c) => c.trim());
  const rows = {};
  for (let i = start + 2; lines[i]?.startsWith('|'); i++) {
    const cells = lines[i].split('|').map((c) => c.trim());
    rows[cells[1]] = Object.fromEntries(head.map((h, j) => [h, cells[j]]).filter(([h]) => h));
  }
  return rows;
}

const table = readmeTable();
const rows = {
  'reads `.npy` of numbers and booleans': ['f4', 'b1'],
  'big-endian data': ['be'],
  'float16, int64 as bigint, complex': ['f2', 'i8', 'c16'],
  'strings (`<U`)': ['U'],
  'records (structured dtypes)': ['rec'],
  datetime64: ['M8'],
  'Fortran order': ['F'],
};
const column = {
  npyjs: Object.keys(Object.values(table)[0]).find((h) => h.startsWith('npyjs')),
  numpyTs: Object.keys(Object.values(table)[0]).find((h) => h.startsWith('numpy-ts')),
};

test('the columns name the versions installed here (major.minor)', () => {
  for (const [pkg, header] of [
    ['npyjs', column.npyjs],
    ['numpy-ts', column.numpyTs],
  ]) {
    const { version } = JSON.parse(readFileSync(join(root, 'node_modules', pkg, 'package.json'), 'utf8'));
    assert.is(header, `${pkg} ${version.split('.').slice(0, 2).join('.')}`);
  }
});

test('the npyjs and numpy-ts columns of the reading rows are what those libraries do with files numpy wrote', () => {
  for (const [label, names] of Object.entries(rows)) {
    assert.ok(table[label], `the README has no row '${label}'`);
    const verdicts = (does) => [...new Set(names.map(does))].join(', ');
    assert.is(table[label][column.npyjs], verdicts(npyjsDoes), `${label}: npyjs`);
    assert.is(table[label][column.numpyTs], verdicts(numpyTsDoes), `${label}: numpy-ts`);
  }
});

test('the write and archive rows: numpy reads what each writes, byte for byte or not; numpy-ts reads and writes .npz, npyjs has no archives', async () => {
  const npyOf = (bytes) => Buffer.from(bytes);
  const mine = readFileSync(join(dir, 'f4.npy'));
  writeFileSync(join(dir, 'npyjs.npy'), npyOf(npyjs.dump(new Float32Array([0, 1, 2, 3, 4, 5]), [2, 3])));
  writeFileSync(
    join(dir, 'numpy-ts.npy'),
    npyOf(
      numpyTs.serializeNpy(
        numpyTs.array(
          [
            [0, 1, 2],
            [3, 4, 5],
          ],
          'float32',
        ),
      ),
    ),
  );
  const readBack = (file) =>
    execFileSync('python3', ['-c', `import numpy as np; print(np.load(${JSON.stringify(join(dir, file))}).tolist())`], { encoding: 'utf8' }).trim();
  const verdict = (file) => {
    if (Buffer.compare(readFileSync(join(dir, file)), mine) === 0) return 'yes';
    return readBack(file) === readBack('f4.npy') ? 'no: numpy reads it' : 'no';
  };
  const write = table['writes `.npy` byte for byte as `np.save`'];
  assert.is(write[column.npyjs], verdict('npyjs.npy'));
  assert.is(write[column.numpyTs], verdict('numpy-ts.npy'));

  const archives = table['reads and writes `.npz`'];
  assert.is(archives[column.npyjs], typeof npyjs.parseNpz === 'function' || typeof npyjs.loadNpz === 'function' ? 'yes' : 'no');
  const read = await numpyTs.parseNpz(new Uint8Array(readFileSync(join(dir, 'z.npz'))));
  writeFileSync(join(dir, 'numpy-ts.npz'), await numpyTs.serializeNpz({ a: numpyTs.array([0, 1, 2], 'float32') }));
  const back = execFileSync('python3', ['-c', `import numpy as np; print(np.load(${JSON.stringify(join(dir, 'numpy-ts.npz'))})['a'].tolist())`], {
    encoding: 'utf8',
  }).trim();
  const works = JSON.stringify(Array.from(read.arrays.get?.('a')?.toArray?.() ?? read.arrays.a?.toArray?.() ?? [])) === '[0,1,2]' && back === '[0.0, 1.0, 2.0]';
  assert.is(archives[column.numpyTs], works ? 'yes' : 'no');
});

test.run();
