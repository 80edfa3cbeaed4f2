// @npyts/stdlib against numpy: values of every mapped dtype through stdlib ndarrays (C and F order,
// both byte orders, 0-d, empty), zero-copy views, records as per-field views, explicit refusals,
// and fromStdlib of sliced and negative-stride views that numpy reads back equal.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ndarray from '@stdlib/ndarray/ctor/lib/index.js';
import { toStdlib, toStdlibField, toStdlibFields, fromStdlib } from '@npyts/stdlib';
import { encodeNpy, decodeNpy, NpyError, arrayFromValues, getField } from '@npyts/core';
import { loadNpySync } from '@npyts/core/node';
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
  assert.throws(() => toStdlib(i8, { int64: 'int32' }), /does not fit int32/);
  const generic = toStdlib(i8, { int64: 'generic' });
  assert.is(generic.dtype, 'generic');
  assert.equal(stdlibJSON(generic, i8.dtype), byName.i8_C.doc.data);
  const small = arrayFromValues(['-5', '7'], '<i8');
  assert.equal([toStdlib(small, { int64: 'float64' }).get(0), toStdlib(small, { int64: 'int32' }).get(1)], [-5, 7]);
  assert.throws(() => toStdlib(loadNpySync(byName.M8_ns_C.file)), /datetime64\[ns\] counts/);
  const ld = loadNpySync(byName.f16_C.file);
  assert.throws(() => toStdlib(ld), /longDouble/);
  assert.equal(stdlibJSON(toStdlib(ld, { longDouble: 'float64' }), { kind: 'f' }), byName.f16_C.doc.data);
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

test.run();
