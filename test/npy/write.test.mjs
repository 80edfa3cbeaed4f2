// Writing: arrays made in JavaScript are saved exactly as numpy's np.save saves the same values,
// and CLI conversions produce what numpy writes for the converted array.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { arrayFromValues, encodeNpy, decodeNpy, NpyError, parseDescr, recordDType, toOrder } from '@npyts/core';
import { saveNpySync } from '@npyts/core/node';
import { numpy, runCli, scratch, writeJSON } from '../helpers/numpy.mjs';

const dir = scratch();
const big = (xs) => xs.map((x) => (typeof x === 'string' && /^-?\d+$/.test(x) ? BigInt(x) : x));

// Values are flat in C order; 64-bit integers are decimal strings here and BigInt on our side.
const specs = [
  { descr: '|b1', shape: [2, 2], values: [true, false, false, true] },
  { descr: '|i1', shape: [4], values: [-128, 127, 0, -1] },
  { descr: '|u1', shape: [3], values: [0, 255, 7] },
  { descr: '<i2', shape: [3], values: [-32768, 32767, 5] },
  { descr: '>u2', shape: [3], values: [0, 65535, 258] },
  { descr: '<i4', shape: [2, 3], order: 'F', values: [1, 2, 3, -2147483648, 2147483647, 0] },
  { descr: '>u4', shape: [2], values: [4294967295, 1] },
  { descr: '<i8', shape: [3], values: ['-9223372036854775808', '9223372036854775807', '-5'] },
  { descr: '>u8', shape: [2], values: ['18446744073709551615', '1'] },
  { descr: '<f2', shape: [8], values: [0.1, 65519, 65520, 1e-8, 2.9802322387695312e-8, -6e-8, 1 / 3, 2049] },
  { descr: '>f2', shape: [2], values: [1.5, -1e-5] },
  { descr: '<f4', shape: [2, 2, 2], order: 'F', values: [0.1, 1, 2, 3, 4, 5, 6, 1e-45] },
  { descr: '>f8', shape: [3], values: [Math.PI, 5e-324, -1.7976931348623157e308] },
  { descr: '<f16', shape: [4], values: [Math.PI, 5e-324, 1e300, -0.1] },
  { descr: '>f16', shape: [2], values: [2.5, -1e-310] },
  {
    descr: '<c8',
    shape: [2],
    values: [
      { re: 1, im: -2 },
      { re: 0.1, im: 0 },
    ],
  },
  {
    descr: '>c16',
    shape: [2],
    order: 'C',
    values: [
      { re: Math.E, im: -0.5 },
      { re: -1, im: 1e-300 },
    ],
  },
  { descr: '<c32', shape: [1], values: [{ re: 1 / 3, im: -3 }] },
  { descr: '|S5', shape: [3], values: ['abc', '', 'é\u00ffxyz'] },
  { descr: '<U4', shape: [3], values: ['ab', '整形', 'a😀'] },
  { descr: '>U2', shape: [2], values: ['x', 'yz'] },
  { descr: '<M8[ns]', shape: [3], values: ['1700000000000000000', '-1', 'NaT'] },
  { descr: '>m8[2s]', shape: [2], values: ['5', '-9223372036854775807'] },
  { descr: '<M8', shape: [1], values: ['NaT'] },
  { descr: '<f8', shape: [], values: [2.5] },
  { descr: '<f4', shape: [0, 3], values: [] },
  { descr: '<i4', shape: [2, 3], order: 'F', version: 2, values: [1, 2, 3, 4, 5, 6] },
  { descr: '<i4', shape: [2], version: 3, values: [1, 2] },
  {
    descr: [
      ['a', '<i4'],
      [
        'b',
        [
          ['c', '>f8'],
          ['d', '|S3'],
        ],
      ],
      ['e', '<u2', [2, 3]],
    ],
    shape: [2],
    values: [
      {
        a: 1,
        b: { c: 2.5, d: 'xy' },
        e: [
          [1, 2, 3],
          [4, 5, 6],
        ],
      },
      {
        a: -1,
        b: { c: -0.5, d: 'abc' },
        e: [
          [0, 0, 0],
          [65535, 1, 2],
        ],
      },
    ],
  },
  {
    descr: [
      ['a', '|i1'],
      ['', '|V3'],
      ['b', '<i4'],
      ['c', '|i1'],
      ['', '|V3'],
    ],
    shape: [2, 2],
    order: 'F',
    values: [
      { a: 1, b: 2, c: 3 },
      { a: 4, b: 5, c: 6 },
      { a: 7, b: 8, c: 9 },
      { a: -1, b: -2, c: -3 },
    ],
  },
  {
    descr: [
      [['my title', 'a'], '<i4'],
      ['é', '>f4'],
    ],
    shape: [1],
    values: [{ a: 7, é: 1.25 }],
  },
  { descr: [['整形', '<i4']], shape: [1], values: [{ 整形: 3 }] },
  {
    descr: [
      ['t', '>M8[ms]'],
      ['u', '<U2'],
      ['h', '<f2', [2]],
    ],
    shape: [1],
    values: [{ t: '123', u: 'é', h: [0.5, -2] }],
  },
  { descr: [['', '|V8']], shape: [2], values: [{}, {}] },
];

test('arrays made from JS values are byte-identical to np.save of the same values', () => {
  const files = specs.map((s, i) => {
    const file = join(dir, `w${i}.npy`);
    let a = arrayFromValues(big(s.values), parseDescr(s.descr), { shape: s.shape });
    if (s.order === 'F') a = toOrder(a, 'F');
    saveNpySync(file, a, s.version ? { version: s.version } : {});
    return { ...s, file };
  });
  const results = numpy('check-writes', writeJSON(join(dir, 'specs.json'), files));
  results.forEach((r, i) => {
    assert.ok(r.values, `numpy reads different values from ${JSON.stringify(specs[i].descr)}`);
    assert.ok(r.identical, `${JSON.stringify(specs[i].descr)}: bytes differ\nnumpy ${r.numpy_bytes}\nours  ${r.our_bytes}`);
  });
});

test('typed arrays encode without a dtype, as numpy types them', () => {
  const cases = [
    [new Float32Array([1.5, -2]), '<f4'],
    [new Float64Array([1, 2, 3, 4]), '<f8'],
    [new Int8Array([-1]), '|i1'],
    [new Uint8Array([255]), '|u1'],
    [new Int16Array([-3]), '<i2'],
    [new Uint16Array([3]), '<u2'],
    [new Int32Array([7, 8]), '<i4'],
    [new Uint32Array([9]), '<u4'],
    [new BigInt64Array([-1n]), '<i8'],
    [new BigUint64Array([2n ** 64n - 1n]), '<u8'],
  ];
  const files = cases.map(([data, descr], i) => {
    const file = join(dir, `t${i}.npy`);
    writeFileSync(file, encodeNpy({ data, shape: data.length === 4 ? [2, 2] : [data.length] }));
    return { file, descr, shape: data.length === 4 ? [2, 2] : [data.length], values: Array.from(data, String) };
  });
  const results = numpy(
    'check-writes',
    writeJSON(
      join(dir, 'typed.json'),
      files.map((f) => ({ ...f, values: f.values.map((v) => (/^-?\d+$/.test(v) ? v : Number(v))) })),
    ),
  );
  for (const r of results) assert.ok(r.identical && r.values, r.file);
});

test('records built with recordDType and explicit offsets round-trip through numpy', () => {
  const dt = recordDType(
    [
      { name: 'x', dtype: '<f8', offset: 4 },
      { name: 'y', dtype: '>i2', offset: 16, title: 'the y' },
    ],
    24,
  );
  assert.equal(dt.descr, [
    ['', '|V4'],
    ['x', '<f8'],
    ['', '|V4'],
    [['the y', 'y'], '>i2'],
    ['', '|V6'],
  ]);
  const file = join(dir, 'offsets.npy');
  saveNpySync(file, arrayFromValues([{ x: 1.5, y: -3 }], dt));
  const [r] = numpy('check-writes', writeJSON(join(dir, 'o.json'), [{ file, descr: dt.descr, shape: [1], values: [{ x: 1.5, y: -3 }] }]));
  assert.ok(r.identical && r.values, `numpy ${r.numpy_bytes}\nours  ${r.our_bytes}`);
});

test('values that do not fit are refused, never wrapped', () => {
  const refuse = (values, descr) =>
    assert.throws(
      () => arrayFromValues(values, descr),
      (e) => e instanceof NpyError && e.code === 'BAD_VALUE',
    );
  refuse([128], '|i1');
  refuse([-1], '<u4');
  refuse([2n ** 63n], '<i8');
  refuse(['abcdef'], '|S5');
  refuse(['整'], '|S2');
  refuse(['abc'], '<U2');
  refuse([1.5], '<i4');
  refuse(
    [{ a: 1 }],
    [
      ['a', '<i4'],
      ['b', '<i4'],
    ],
  );
  assert.throws(() => encodeNpy({ data: new Float32Array(5), shape: [2, 3] }), /needs 6/);
});

const transforms = [
  { order: 'F' },
  { order: 'C' },
  { byteorder: 'big' },
  { byteorder: 'little' },
  { version: 2 },
  { version: 3 },
  { order: 'F', byteorder: 'big' },
];

test('CLI convert --order/--byteorder/--version writes what numpy writes for the converted array', async () => {
  const catalogue = numpy('catalogue', join(dir, 'cat'));
  const pairs = [];
  let n = 0;
  for (const { name, file } of catalogue) {
    for (const t of transforms) {
      const ours = join(dir, `conv${n++}.npy`);
      const args = ['convert', file, ours];
      if (t.order) args.push('--order', t.order);
      if (t.byteorder) args.push('--byteorder', t.byteorder);
      if (t.version) args.push('--version', String(t.version));
      const r = await runCli(args);
      if (name === 'rec_utf8_name_v3' && t.version === 2) {
        // numpy refuses this too: format 2.0 headers are latin-1.
        assert.is(r.code, 1);
        assert.match(r.stderr, /latin-1/);
        continue;
      }
      assert.is(r.code, 0, `${name} ${args.join(' ')}: ${r.stderr}`);
      if (/^M8_(be_)?[CF]$/.test(name) && t.byteorder === 'big') {
        // numpy's astype to a byte-swapped generic datetime64 does not swap (its bug): compare values instead.
        const [src, out] = numpy('documents', file, ours);
        assert.equal(out.data, src.data, name);
        assert.is(out.descr, '>M8');
        continue;
      }
      pairs.push({ source: file, ours, name, ...t });
    }
  }
  const same = numpy('check-transform', writeJSON(join(dir, 'pairs.json'), pairs));
  const bad = pairs.filter((_, i) => !same[i]).map((p) => `${p.name} ${JSON.stringify({ order: p.order, byteorder: p.byteorder, version: p.version })}`);
  assert.equal(bad, []);
});

test('format 1.0 is refused for headers that need 2.0 or 3.0', () => {
  const many = arrayFromValues(
    [Object.fromEntries(Array.from({ length: 4000 }, (_, i) => [`field_${i}`, i]))],
    parseDescr(Array.from({ length: 4000 }, (_, i) => [`field_${i}`, '<i4'])),
  );
  assert.throws(() => encodeNpy(many, { version: 1 }), /does not fit format 1.0/);
  assert.is(encodeNpy(many)[6], 2);
  const utf = arrayFromValues([{ 整形: 1 }], [['整形', '<i4']]);
  assert.throws(() => encodeNpy(utf, { version: 2 }), /latin-1/);
  assert.is(decodeNpy(encodeNpy(utf)).get(0).整形, 1);
});

test.run();
