// The descr algebra against numpy: every spelling numpy takes gives numpy's dtype.str, name,
// itemsize and descr; what numpy refuses we refuse.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { parseDescr, NpyError } from '@npyts/core';
import { numpy, python, scratch, writeJSON } from '../helpers/numpy.mjs';

const dir = scratch();

const spellings = [
  '<f4',
  '>i4',
  '|b1',
  '<c16',
  '|S5',
  '<U3',
  '<M8[ns]',
  '<m8[s]',
  '<M8',
  '<f2',
  '<f16',
  '<c32',
  '|V7',
  '|O',
  '=i4',
  'i4',
  'f',
  'd',
  '<d',
  'float64',
  'float32',
  'float16',
  'int8',
  'uint64',
  'bool',
  'complex64',
  'complex128',
  'longdouble',
  'clongdouble',
  '|O8',
  '<M8[2ns]',
  '|S0',
  'S',
  'U',
  'b',
  'B',
  'h',
  'H',
  'i',
  'I',
  'l',
  'L',
  'q',
  'Q',
  'e',
  'F',
  'D',
  'G',
  'g',
  '?',
  'c',
  'u1',
  'i1',
  'b1',
  '>u2',
  '>f8',
  '>c8',
  '>U10',
  '>M8[D]',
  '>m8[25us]',
  'M8[Y]',
  'M8[M]',
  'M8[W]',
  'M8[h]',
  'M8[m]',
  'M8[ms]',
  'M8[us]',
  'M8[ps]',
  'M8[fs]',
  'M8[as]',
  'datetime64[ns]',
  'timedelta64[3h]',
  'V0',
  'S100',
  'U1',
  'int',
  'float',
  'complex',
  'str',
  'bytes',
  'object',
  'half',
  'single',
  'double',
  // refused by numpy:
  '<x4',
  'i3',
  'f3',
  'b2',
  'M8[xs]',
  'i4[ns]',
  '',
  'float65',
  'c1',
  // records:
  [
    ['a', '<i4'],
    [
      'b',
      [
        ['c', '<f8'],
        ['d', '|S3'],
      ],
    ],
    ['e', '<u2', [2, 3]],
  ],
  [
    ['a', '|i1'],
    ['', '|V3'],
    ['b', '<i4'],
    ['c', '|i1'],
    ['', '|V3'],
  ],
  [
    [['my title', 'a'], '<i4'],
    ['b', '>f8'],
  ],
  [['', '|V8']],
  [],
  [['x', [['y', [['z', '>c8', [2]]]]], [3, 1]]],
  [
    ['t', '<M8[ms]'],
    ['', '|V2'],
    ['u', '<U2'],
  ],
  [
    ['a', '<i4'],
    ['a', '<i4'],
  ],
];

test('parseDescr agrees with numpy on every spelling', () => {
  const answers = numpy('dtypes', writeJSON(join(dir, 'spellings.json'), spellings));
  const wrong = [];
  spellings.forEach((s, i) => {
    const want = answers[i];
    const label = JSON.stringify(s);
    let dt;
    try {
      dt = parseDescr(s);
    } catch (e) {
      if (!(e instanceof NpyError && e.code === 'BAD_DESCR')) wrong.push(`${label}: unexpected ${e}`);
      else if (!want.error) wrong.push(`${label}: refused (${e.message}) but numpy gives ${want.str}`);
      return;
    }
    if (want.error) return wrong.push(`${label}: accepted as ${dt.str} but numpy refuses it`);
    const got = { str: dt.str, name: dt.name, itemsize: dt.itemsize, descr: want.descr === null ? null : dt.descr };
    if (JSON.stringify(got) !== JSON.stringify(want)) wrong.push(`${label}: ours ${JSON.stringify(got)} numpy ${JSON.stringify(want)}`);
  });
  assert.equal(wrong, []);
});

test('descr literal is numpy repr, and parses back to the same dtype', () => {
  const dt = parseDescr([
    [['my title', 'a'], '<i4'],
    ['é"\'', '>f8'],
    ['s', '|S2', [2]],
  ]);
  assert.is(dt.descrLiteral, `[(('my title', 'a'), '<i4'), ('é"\\'', '>f8'), ('s', '|S2', (2,))]`);
  assert.ok(parseDescr(dt.descrLiteral).equals(dt));
});

test('field offsets from padding, titles and nested subarrays', () => {
  const dt = parseDescr([
    ['a', '|i1'],
    ['', '|V3'],
    ['b', '<i4'],
    [['T', 'c'], [['d', '<f2', [2, 2]]], [3]],
  ]);
  assert.equal(
    dt.fields.map((f) => [f.name, f.title, f.offset, f.dtype.itemsize]),
    [
      ['a', null, 0, 1],
      ['b', null, 4, 4],
      ['c', 'T', 8, 24],
    ],
  );
  const c = dt.fields[2].dtype;
  assert.equal(c.subarray.shape, [3]);
  assert.is(c.subarray.base.fields[0].dtype.subarray.base.str, '<f2');
});

test.run();

test("typeCode and realBytes: numpy's dtype.str without its byte order, and the bytes of each real number of a float or complex", () => {
  const plain = spellings
    .filter((s) => typeof s === 'string')
    .filter((s) => {
      try {
        parseDescr(s);
        return true;
      } catch {
        return false;
      }
    });
  plain.push(
    [
      ['a', '<i4'],
      ['b', '<f8'],
    ],
    [['x', '>c8', [2]]],
  );
  const want = JSON.parse(
    python(`
specs = json.loads(${JSON.stringify(JSON.stringify(plain))})
def dt(s): return np.dtype([tuple(f) if len(f) == 2 else (f[0], f[1], tuple(f[2])) for f in s]) if isinstance(s, list) else np.dtype(s)
out = []
for s in specs:
    d = dt(s)
    real = d.itemsize // (2 if d.kind == 'c' else 1) if d.kind in 'fc' and d.fields is None else 0
    out.append([d.str[1:], real])
print(json.dumps(out))`),
  );
  const got = plain.map((s) => {
    const d = parseDescr(s);
    return [d.typeCode, d.realBytes];
  });
  assert.equal(got, want);
});

test("a dtype prints as numpy's repr(dtype), on one line: toString, repr, util.inspect and console.log", () => {
  const cases = JSON.parse(
    python(`
import ml_dtypes
specs = ['<f4', '<f8', '>f4', '|i1', '|u1', '?', '>i8', '<u2', '<f2', '<f16', '<c8', '>c16', '|S5', 'S0', '<U3', '>U2', 'V4',
         'O', '<M8[ns]', '<m8[2s]', '<M8', '>M8[D]', ('<f4', (2, 3)), ('>i2', (4,)),
         [('a', '<f4'), ('b', '>i8', (2, 3))], [('x', [('y', '?'), ('z', '<U2')]), ('w', 'S3')],
         [(('Title', 'a'), '<i4'), ('b', '<m8[us]')],
         {'names': ['a', 'b'], 'formats': ['<f4', '<i2'], 'offsets': [0, 8], 'itemsize': 12},
         {'names': ['a'], 'formats': ['<f8'], 'offsets': [0], 'titles': ['T'], 'itemsize': 16}]
def tojson(d):
    return [tojson(x) for x in d] if isinstance(d, (list, tuple)) else d
# A subarray's descr is its void ('|V8'): give it as the (base, shape) pair it was made from.
out = [[tojson(s) if isinstance(s, tuple) else tojson(np.lib.format.dtype_to_descr(np.dtype(s))), repr(np.dtype(s))] for s in specs]
for name in ['bfloat16', 'float8_e4m3fn', 'float8_e5m2', 'float8_e8m0fnu', 'float4_e2m1fn']:
    out.append([name, repr(np.dtype(getattr(ml_dtypes, name)))])
print(json.dumps(out))`),
  );
  assert.ok(cases.length > 30);
  const wrong = [];
  for (const [descr, want] of cases) {
    const dt = parseDescr(descr);
    for (const [how, got] of [
      ['repr', dt.repr],
      ['String', String(dt)],
      ['template', `${dt}`],
      ['inspect', inspect(dt)],
      // Inside an object, inspect may break the line before a long value: compare without that.
      ['inspect in an object', inspect({ dtype: dt }).replace(/\n\s*/g, ' ')],
    ]) {
      const expected = how === 'inspect in an object' ? `{ dtype: ${want} }` : want;
      if (got !== expected) wrong.push([JSON.stringify(descr), how, got, expected]);
    }
  }
  assert.equal(wrong, []);
  // The header's spelling is still there, and bfloat16's str stays as ml_dtypes writes it.
  assert.is(parseDescr('bfloat16').str, '<V2');
  assert.is(parseDescr('<f4').descrLiteral, "'<f4'");
});

test.run();
