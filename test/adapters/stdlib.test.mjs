// @npyts/stdlib against numpy: values of every mapped dtype through stdlib ndarrays (C and F order,
// both byte orders, 0-d, empty), zero-copy views, records as per-field views, explicit refusals,
// and fromStdlib of sliced and negative-stride views that numpy reads back equal.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import ndarray from '@stdlib/ndarray/ctor/lib/index.js';
import { toStdlib, toStdlibField, toStdlibFields, fromStdlib } from '@npyts/stdlib';
import { encodeNpy, decodeNpy, NpyError, arrayFromValues, getField } from '@npyts/core';
import { loadNpySync, saveNpySync } from '@npyts/core/node';
import { numpy, python, scratch } from '../helpers/numpy.mjs';

const dir = scratch();
const catalogue = numpy('catalogue', dir);
const byName = Object.fromEntries(catalogue.map((c) => [c.name, c]));
const jfloat = (x) => (Number.isNaN(x) ? 'NaN' : x === Infinity ? 'Infinity' : x === -Infinity ? '-Infinity' : x);
const jint = (v) => (typeof v === 'bigint' ? (v >= -(2n ** 53n) + 1n && v <= 2n ** 53n - 1n ? Number(v) : String(v)) : v);

function elementJSON(dtype, v) {
  switch (dtype.kind) {
    case 'f':
      return jfloat(v);
    case 'c':
      return [jfloat(v.re), jfloat(v.im)];
    case 'M':
    case 'm':
      return v === -(2n ** 63n) ? 'NaT' : jint(v);
    case 'i':
    case 'u':
      return jint(v);
    case 'V':
      return Buffer.from(v).toString('hex');
    default:
      return v;
  }
}

/** Every element of a stdlib ndarray (or record of them) as the JSON numpy's document holds. */
function stdlibJSON(x, dtype) {
  if (dtype.fields) {
    return { __fields: Object.fromEntries(dtype.fields.map((f) => [f.name, stdlibJSON(x[f.name], f.dtype.subarray?.base ?? f.dtype)])) };
  }
  const walk = (idx) =>
    idx.length === x.shape.length ? elementJSON(dtype, x.get(...idx)) : Array.from({ length: x.shape[idx.length] }, (_, i) => walk([...idx, i]));
  return walk([]);
}

/** numpy's document reshaped like stdlibJSON: records become per-field nested lists. */
function docByField(data, dtype, ndim) {
  if (!dtype.fields) return data;
  const pick = (d, depth, name) => (depth === ndim ? d[name] : d.map((e) => pick(e, depth + 1, name)));
  return {
    __fields: Object.fromEntries(
      dtype.fields.map((f) => {
        const sub = f.dtype.subarray;
        return [f.name, docByField(pick(data, 0, f.name), sub?.base ?? f.dtype, ndim + (sub ? sub.shape.length : 0))];
      }),
    ),
  };
}

const mapped = catalogue.filter((c) => !/^(i8|u8|M8|m8|f16|c32|rec_)/.test(c.name) || /^rec_(nested|aligned|titles|offsets|F|0d|latin1)/.test(c.name));

test("values through toStdlib equal numpy's for every mapped dtype, order and shape", () => {
  for (const { name, file, doc } of mapped) {
    const a = loadNpySync(file);
    const x = (a.dtype.fields ? toStdlibFields : toStdlib)(a, { int64: 'generic' }); // some records hold int64 fields
    assert.equal(stdlibJSON(x, a.dtype), docByField(doc.data, a.dtype, a.ndim), name);
  }
});

test('zero copy: stdlib ndarrays view the decoded memory, Fortran order as column-major', () => {
  for (const name of ['f8_C', 'f4_F', 'i2_C', 'u4_be_F', 'f2_C', 'b1_C', 'c8_F', 'c16_be_C']) {
    const a = loadNpySync(byName[name].file);
    const x = toStdlib(a);
    assert.is(x.data.buffer, a.data.buffer, `${name} copied`);
    assert.is(x.order, name.includes('_F') ? 'column-major' : 'row-major');
  }
});

test("toStdlibField takes getField's dotted path and gives what toStdlibFields gives at that path, for every (nested) field numpy names", () => {
  const all = numpy('fields', join(dir, 'fields'));
  // Every element of a stdlib ndarray (or an object of them), in C order, as text.
  const values = (x) => {
    if (typeof x.get !== 'function') return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, values(v)]));
    const out = [];
    const walk = (axis, index) => {
      if (axis === x.shape.length) {
        const v = x.get(...index);
        out.push(typeof v === 'object' && v !== null && 're' in v ? `${v.re},${v.im}` : String(v));
        return;
      }
      for (let i = 0; i < x.shape[axis]; i++) walk(axis + 1, [...index, i]);
    };
    walk(0, []);
    return out;
  };
  const options = { int64: 'generic' };
  let checked = 0;
  for (const { file, path } of all) {
    const rec = loadNpySync(file);
    const field = toStdlibField(rec, path, options);
    let byFields = toStdlibFields(rec, options);
    // The nested objects' keys are the field names: walk the path as getField resolves it.
    const got = getField(rec, path);
    const direct = got.dtype.fields ? toStdlibFields(got, options) : toStdlib(got, options);
    assert.equal(values(field), values(direct), `${file} ${path}`);
    if (!file.endsWith('dotted.npy')) {
      for (const name of path.split('.')) byFields = byFields[name];
      assert.equal(values(field), values(byFields), `${file} ${path}`);
    }
    checked++;
  }
  assert.ok(checked > 20);
  const dotted = loadNpySync(all.find((x) => x.file.endsWith('dotted.npy')).file);
  assert.equal(values(toStdlibField(dotted, 'p.q.r')), values(toStdlibFields(dotted).p['q.r']));
  assert.throws(
    () => toStdlibField(dotted, 'p.t'),
    (e) => e instanceof NpyError && e.code === 'NO_FIELD' && /'t'/.test(e.message),
  );
});

test('record fields are strided views of the record memory where the layout allows', () => {
  const a = loadNpySync(byName.rec_aligned.file); // i1, pad, i4, i1, pad: 12-byte records
  const x = toStdlibFields(a);
  assert.is(x.f1.data.buffer, a.data.buffer);
  assert.equal(x.f1.strides, [3]);
  assert.is(x.f1.offset, 1);
  const titled = toStdlibFields(loadNpySync(byName.rec_titles.file));
  assert.equal(Object.keys(titled), ['a', 'b']);
  // A record is several ndarrays: toStdlib says which function makes them.
  assert.throws(
    () => toStdlib(a),
    (e) => e instanceof NpyError && /toStdlibFields/.test(e.message),
  );
  assert.throws(
    () => toStdlibFields(loadNpySync(byName.f8_C.file)),
    (e) => e instanceof NpyError && /toStdlib/.test(e.message),
  );
});

test('64-bit integers, datetimes and long doubles are refused unless an option says how', () => {
  const i8 = loadNpySync(byName.i8_C.file);
  assert.throws(
    () => toStdlib(i8),
    (e) => e instanceof NpyError && /int64: 'generic'/.test(e.message) && /'float64'/.test(e.message),
  );
  assert.throws(
    () => toStdlib(i8, { int64: 'int32' }),
    (e) => e.code === 'NOT_REPRESENTABLE' && /does not fit int32/.test(e.message),
  );
  const generic = toStdlib(i8, { int64: 'generic' });
  assert.is(generic.dtype, 'generic');
  assert.equal(stdlibJSON(generic, i8.dtype), byName.i8_C.doc.data);
  const small = arrayFromValues(['-5', '7'], '<i8');
  assert.equal([toStdlib(small, { int64: 'float64' }).get(0), toStdlib(small, { int64: 'int32' }).get(1)], [-5, 7]);
  assert.throws(() => toStdlib(loadNpySync(byName.M8_ns_C.file)), /datetime64\[ns\] counts/);
  const ld = loadNpySync(byName.f16_C.file);
  assert.throws(() => toStdlib(ld), /longDouble/);
  // The option rounds each to the nearest float64, as numpy's astype(np.float64) does.
  const asDoubles = JSON.parse(
    python(`a = np.load(${JSON.stringify(byName.f16_C.file)}).astype(np.float64)
print(json.dumps([[('NaN' if x != x else 'Infinity' if x == np.inf else '-Infinity' if x == -np.inf else x) for x in row] for row in a.tolist()]))`),
  );
  assert.equal(stdlibJSON(toStdlib(ld, { longDouble: 'float64' }), { kind: 'f' }), asDoubles);
});

test('fromStdlib: contiguous arrays without a copy, strided views gathered; numpy reads them equal', () => {
  const { base, views } = JSON.parse(
    python(`
base = np.arange(24, dtype='<f8').reshape(4, 6) * 1.5
views = {'rev_rows': base[::-1], 'odd_cols': base[:, 1::2], 'rev_both_step': base[::-2, ::-3], 'col': base[:, 4], 'transposed': base.T, 'block': base[1:3, 2:5]}
out = []
for name, v in views.items():
    path = ${JSON.stringify(dir)} + '/view_' + name + '.npy'
    np.save(path, v)
    offset = (v.__array_interface__['data'][0] - base.__array_interface__['data'][0]) // 8
    out.append({'name': name, 'shape': list(v.shape), 'strides': [s // 8 for s in v.strides], 'offset': int(offset), 'expected': path})
print(json.dumps({'base': base.reshape(-1).tolist(), 'views': out}))
`),
  );
  const memory = new Float64Array(base);
  for (const v of views) {
    const x = ndarray('float64', memory, v.shape, v.strides, v.offset, 'row-major');
    const a = fromStdlib(x);
    const ours = join(dir, `ours_${v.name}.npy`);
    writeFileSync(ours, encodeNpy(a));
    const same = python(
      `a = np.load(${JSON.stringify(ours)}); b = np.load(${JSON.stringify(v.expected)}); print(a.shape == b.shape and np.array_equal(a, b))`,
    ).trim();
    assert.is(same, 'True', v.name);
    if (v.name === 'transposed') assert.is(a.data.buffer, memory.buffer, 'a column-major view is used as is');
  }
  const c = fromStdlib(toStdlib(loadNpySync(byName.c16_F.file)));
  assert.is(c.order, 'F');
  assert.ok(Buffer.from(encodeNpy(c)).equals(readFileSync(byName.c16_F.file)), "round trip gives numpy's bytes back");
  const strings = fromStdlib(ndarray('generic', ['a', 'bé', 'c'], [3], [-1], 2, 'row-major'));
  assert.equal(decodeNpy(encodeNpy(strings)).toList(), ['c', 'bé', 'a']);
});

/** numpy's .npy bytes of `values` (a Python expression) cast to `descr` with astype (the reference conversion). */
const numpyCast = (values, descr) =>
  Buffer.from(python(`b = io.BytesIO(); np.save(b, np.array(${values}).astype(${JSON.stringify(descr)})); sys.stdout.write(b.getvalue().hex())`), 'hex');

test("fromStdlib(x, { dtype }) converts to the dtype asked, exactly, as numpy's astype writes it; a value it cannot hold exactly is refused with its index", () => {
  const x = ndarray('float64', new Float64Array([0.5, -1.25, 2 ** 60, 3]), [2, 2], [2, 1], 0, 'row-major');
  const values = '[[0.5, -1.25], [2**60, 3.0]]';
  for (const descr of ['<f4', '>f8', '>f4', '<c8']) {
    assert.ok(Buffer.from(encodeNpy(fromStdlib(x, { dtype: descr }))).equals(numpyCast(values, descr)), descr);
  }
  // Integers: exact values convert (2^60 too); a fraction is refused, naming the value and its index.
  const whole = ndarray('float64', new Float64Array([2 ** 60, -7]), [2], [1], 0, 'row-major');
  assert.ok(Buffer.from(encodeNpy(fromStdlib(whole, { dtype: '<i8' }))).equals(numpyCast('[2**60, -7]', '<i8')));
  assert.throws(
    () => fromStdlib(x, { dtype: '<i8' }),
    (e) => e instanceof NpyError && e.code === 'NOT_REPRESENTABLE' && /value 0\.5 at index \[0, 0\] is not exact in <i8/.test(e.message),
  );
  assert.throws(
    () => fromStdlib(x, { dtype: '<i2' }),
    (e) => e.code === 'NOT_REPRESENTABLE' && /0\.5 at index \[0, 0\]/.test(e.message),
  );
  assert.throws(
    () => fromStdlib(whole, { dtype: '<u8' }),
    (e) => e.code === 'NOT_REPRESENTABLE' && /-7 at index \[1\]/.test(e.message),
  );
  // Floats: 0.1 has no float32 of its own; { round: true } takes the nearest, as numpy's astype does.
  const tenth = ndarray('float64', new Float64Array([1, 0.1]), [2], [1], 0, 'row-major');
  assert.throws(
    () => fromStdlib(tenth, { dtype: '<f4' }),
    (e) => e.code === 'NOT_REPRESENTABLE' && /value 0\.1 at index \[1\] is not exact in <f4/.test(e.message) && /round: true/.test(e.message),
  );
  assert.ok(Buffer.from(encodeNpy(fromStdlib(tenth, { dtype: '<f4', round: true }))).equals(numpyCast('[1, 0.1]', '<f4')));
  assert.throws(
    () => fromStdlib(tenth, { dtype: '<i4', round: true }),
    (e) => e.code === 'NOT_REPRESENTABLE',
    'integers are never rounded',
  );
  // Column-major stays column-major; int32 to float64 and bool to uint8 convert; generic ndarrays too.
  const f = fromStdlib(ndarray('int32', new Int32Array([1, 2, 3, 4, 5, 6]), [2, 3], [1, 2], 0, 'column-major'), { dtype: '>f8' });
  assert.is(f.order, 'F');
  assert.equal(f.toList(), [
    [1, 3, 5],
    [2, 4, 6],
  ]);
  assert.equal(fromStdlib(toStdlib(arrayFromValues([true, false], '|b1')), { dtype: '|u1' }).toList(), [1, 0]);
  assert.throws(
    () => fromStdlib(ndarray('generic', [1, 0.1], [2], [1], 0, 'row-major'), { dtype: '<f4' }),
    (e) => e.code === 'NOT_REPRESENTABLE',
  );
  // An unknown descr is refused, whatever the array.
  for (const y of [x, ndarray('generic', ['a'], [1], [1], 0, 'row-major')]) {
    assert.throws(
      () => fromStdlib(y, { dtype: 'nonsense' }),
      (e) => e instanceof NpyError && e.code === 'BAD_DESCR',
    );
  }
});

test("int64 and datetime64 to float64: every value exact in float64 is taken (2^60, NaT's count), others refused as 'not exact in float64'; NaT becomes NaN when asked", () => {
  const file = join(dir, 'counts.npy');
  const reference = JSON.parse(
    python(`
a = np.array([2**60, -2**62, 2**53, 7], dtype='<i8')
np.save(${JSON.stringify(file)}, a)
t = np.array(['2024-01-02', 'NaT'], dtype='<M8[D]')
np.save(${JSON.stringify(file)} + '.t.npy', t)
print(json.dumps({'a': [float(v) for v in a.astype('<f8')], 'nat': int(t.view('<i8')[1])}))
`),
  );
  const a = loadNpySync(file);
  assert.equal(Array.from(toStdlib(a, { int64: 'float64' }).data), reference.a);
  const inexact = arrayFromValues([1n, 2n ** 53n + 1n], '<i8');
  assert.throws(
    () => toStdlib(inexact, { int64: 'float64' }),
    (e) => e.code === 'NOT_REPRESENTABLE' && /9007199254740993 at index \[1\] is not exact in float64/.test(e.message),
  );
  const t = loadNpySync(`${file}.t.npy`);
  assert.equal(Array.from(toStdlib(t, { int64: 'float64' }).data), [19724, reference.nat], "NaT's count is exact in float64");
  const nan = toStdlib(t, { int64: 'float64', nat: 'NaN' });
  assert.equal([nan.get(0), Number.isNaN(nan.get(1))], [19724, true]);
  assert.throws(
    () => toStdlib(t, { int64: 'int32' }),
    (e) => e.code === 'NOT_REPRESENTABLE' && /NaT: pass \{ nat: 'NaN' \}/.test(e.message),
  );
});

test("float16 becomes float32 when asked ({ float16: 'float32' }), which @stdlib's own functions take; by default it stays a float16 view", () => {
  const require = createRequire(import.meta.url);
  const copy = require('@stdlib/ndarray/copy');
  const a = loadNpySync(byName.f2_C.file);
  assert.throws(() => copy(toStdlib(a)), /ctor is not a constructor/, "@stdlib 0.4 has no float16 kernels (if this passes, revisit the option's default)");
  const x = toStdlib(a, { float16: 'float32' });
  assert.is(x.dtype, 'float32');
  const expected = JSON.parse(
    python(`print(json.dumps([float(v) if np.isfinite(v) else str(v) for v in np.load(${JSON.stringify(byName.f2_C.file)}).astype('<f4').ravel()]))`),
  );
  const got = Array.from(copy(x).data, (v) => (Number.isFinite(v) ? v : String(v).replace('Infinity', 'inf').replace('NaN', 'nan')));
  assert.equal(got, expected);
  const rec = toStdlibFields(loadNpySync(byName.rec_F_sub.file), { float16: 'float32' });
  assert.is(rec.b.dtype, 'float32');
  assert.is(rec.b.isView, false);
});

test('toStdlibFields marks each field as a view or a copy (isView); { view: true } refuses a copy, naming the field and why', () => {
  const aligned = loadNpySync(byName.rec_aligned.file);
  const x = toStdlibFields(aligned, { view: true });
  for (const name of ['f0', 'f1', 'f2']) assert.is(x[name].isView, true, name);
  x.f1.set(2, 12345);
  assert.is(aligned.get(2).f1, 12345, 'a set on a view reaches the records');
  // Packed records (27 bytes here), text and big-endian records are copies.
  const nested = toStdlibFields(loadNpySync(byName.rec_nested.file));
  assert.equal([nested.a.isView, nested.b.c.isView, nested.b.d.isView, nested.e.isView], [false, false, false, false]);
  const offsets = toStdlibFields(loadNpySync(byName.rec_offsets.file));
  assert.equal([offsets.x.isView, offsets.y.isView], [false, true]); // x: '<f8' at offset 4
  const be = toStdlibFields(loadNpySync(byName.rec_mixed_be.file), { int64: 'generic', longDouble: 'float64' });
  assert.ok(Object.values(be).every((f) => f.isView === false));
  const copy = toStdlibFields(loadNpySync(byName.rec_nested.file)).b.c;
  copy.set(0, 99);
  assert.is.not(loadNpySync(byName.rec_nested.file).get(0).b.c, 99);
  const cases = [
    [byName.rec_nested.file, {}, 'b.c', /offset 4 is not a multiple of 8 bytes \(a packed record\)/],
    [byName.rec_nested.file, {}, 'a', /record size 27 is not a multiple of 4 bytes/],
    [byName.rec_nested.file, {}, 'b.d', /stdlib has no bytes24 dtype/],
    [byName.rec_mixed_be.file, { int64: 'generic' }, 't', /not in this machine's byte order/],
  ];
  for (const [file, options, field, why] of cases) {
    assert.throws(
      () => toStdlibField(loadNpySync(file), field, { ...options, view: true }),
      (e) => e instanceof NpyError && e.message.includes(`field '${field}'`) && why.test(e.message) && /leave out \{ view: true \}/.test(e.message),
      field,
    );
  }
  assert.throws(
    () => toStdlibFields(loadNpySync(byName.rec_nested.file), { view: true }),
    (e) => /field 'a'/.test(e.message),
  );
  // int64 fields with { int64: 'generic' } are views too.
  const ints = arrayFromValues(
    [{ a: 1n, b: 2 }],
    [
      ['a', '<i8'],
      ['b', '<f8'],
    ],
  );
  const g = toStdlibFields(ints, { int64: 'generic', view: true });
  g.a.set(0, 5n);
  assert.is(ints.get(0).a, 5n);
});

test('saveNpy and encodeNpy given a @stdlib ndarray say to convert it with fromStdlib', () => {
  const x = ndarray('float64', new Float64Array(6), [2, 3], [1, 2], 0, 'column-major');
  for (const f of [() => encodeNpy(x), () => saveNpySync(join(dir, 'stdlib.npy'), x)]) {
    assert.throws(
      f,
      (e) => e instanceof NpyError && e.code === 'BAD_VALUE' && /fromStdlib/.test(e.message) && !/column-major|values do not fill/.test(e.message),
    );
  }
  saveNpySync(join(dir, 'stdlib.npy'), fromStdlib(x));
  assert.equal(loadNpySync(join(dir, 'stdlib.npy')).shape, [2, 3]);
});

test.run();
