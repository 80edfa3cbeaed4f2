// float16 and x86 long double conversions, memory-order changes and record fields, each against numpy.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import {
  float16ToNumber,
  numberToFloat16,
  longDoubleToNumber,
  numberToLongDouble,
  toOrder,
  transpose,
  getField,
  fieldView,
  arrayToJSON,
  NdArray,
} from '@npyts/core';
import { loadNpySync } from '@npyts/core/node';
import { numpy, python, scratch, writeJSON } from '../helpers/numpy.mjs';

const dir = scratch();
numpy('floats', dir);
const load = (name) => loadNpySync(join(dir, name));
const sameFloat = (a, b) => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));

test('float16 → number: all 65536 bit patterns as numpy, and back exactly', () => {
  const bits = load('f16_bits.npy').data; // Uint16Array of the raw half-float bits
  const want = load('f16_as_f8.npy').data; // numpy's widening of the same halves
  const wrong = [];
  for (let i = 0; i < bits.length; i++) {
    const x = float16ToNumber(bits[i]);
    if (!sameFloat(x, want[i])) wrong.push(`${i}: ${x} vs ${want[i]}`);
    else if (!Number.isNaN(x) && numberToFloat16(x) !== bits[i]) wrong.push(`${i}: no round trip`);
  }
  assert.equal(wrong, []);
});

test('number → float16 rounds exactly as numpy (ties to even, subnormals, overflow)', () => {
  const doubles = load('doubles.npy').data;
  const want = load('doubles_as_f16.npy').data;
  const wrong = [];
  for (let i = 0; i < doubles.length; i++) {
    const got = numberToFloat16(doubles[i]);
    if (got !== want[i] && !Number.isNaN(doubles[i])) wrong.push(`${doubles[i]}: ${got.toString(16)} vs ${want[i].toString(16)}`);
    if (wrong.length > 5) break;
  }
  assert.equal(wrong, []);
});

test('x86 long double → number rounds to nearest as numpy does', () => {
  const ld = load('ld.npy');
  const want = load('ld_as_f8.npy').data;
  const wrong = [];
  for (let i = 0; i < want.length; i++) {
    const got = longDoubleToNumber(ld.data, i * 16);
    if (!sameFloat(got, want[i])) wrong.push(`${i}: ${got} vs ${want[i]}`);
    if (wrong.length > 5) break;
  }
  assert.equal(wrong, []);
});

test('number → x86 long double is exact, byte for byte as numpy', () => {
  const d = load('d2.npy').data;
  const want = load('d2_as_ld.npy').data;
  const out = new Uint8Array(16);
  const wrong = [];
  for (let i = 0; i < d.length; i++) {
    numberToLongDouble(d[i], out, 0);
    for (let k = 0; k < 16; k++)
      if (out[k] !== want[i * 16 + k]) {
        wrong.push(`${d[i]}`);
        break;
      }
    if (wrong.length > 5) break;
  }
  assert.equal(wrong, []);
});

const orders = numpy('orders', join(dir, 'orders'));
const bytesOf = (a) => Buffer.from(a.data.buffer, a.data.byteOffset, a.data.byteLength);

test("toOrder C→F and F→C give numpy's bytes for every width, shape and NaN payload", () => {
  for (const { c, f, shape, descr } of orders) {
    const C = loadNpySync(c);
    const F = loadNpySync(f);
    const label = `${JSON.stringify(descr)} ${shape}`;
    assert.ok(bytesOf(toOrder(C, 'F')).equals(bytesOf(F)), `C→F ${label}`);
    assert.ok(bytesOf(toOrder(F, 'C')).equals(bytesOf(C)), `F→C ${label}`);
    assert.is(toOrder(F, 'C').order, 'C');
  }
});

test("transpose gives numpy's ascontiguousarray(transpose(a, axes)) for every width, both orders and permutations of up to 5 axes", () => {
  const permutations = (n) =>
    n <= 1 ? [[0].slice(0, n)] : permutations(n - 1).flatMap((p) => Array.from({ length: n }, (_, i) => [...p.slice(0, i), n - 1, ...p.slice(i)]));
  const cases = [];
  for (const { c, f, shape } of orders) {
    for (const file of [c, f]) {
      // Every permutation up to 4 axes; every 7th of the 120 of 5 axes.
      for (const [i, axes] of permutations(shape.length).entries())
        if (shape.length < 5 || i % 7 === 0) cases.push({ file, axes, out: join(dir, `t${cases.length}.npy`) });
    }
  }
  python(`for case in json.load(open(${JSON.stringify(writeJSON(join(dir, 'transposes.json'), cases))})):
    np.save(case['out'], np.ascontiguousarray(np.transpose(np.load(case['file']), case['axes'])))`);
  assert.ok(cases.length > 50, `${cases.length} cases`);
  for (const { file, axes, out } of cases) {
    const t = transpose(loadNpySync(file), axes);
    const want = loadNpySync(out);
    assert.equal(t.shape, want.shape, `${file} ${axes}`);
    // numpy copies records field by field, leaving their padding bytes zero: compare records by value.
    if (t.dtype.fields) assert.equal(arrayToJSON(t), arrayToJSON(want), `${file} axes ${axes}`);
    else assert.ok(bytesOf(t).equals(bytesOf(want)), `${file} axes ${axes}`);
  }
  const a = loadNpySync(orders.find((o) => o.shape.length === 3).c);
  assert.equal(transpose(a).shape, [...a.shape].reverse(), 'no axes: reversed, as numpy');
  assert.throws(() => transpose(a, [0, 0, 1]), /not a permutation/);
});

test('toOrder does not copy when nothing changes', () => {
  const a = loadNpySync(orders[0].c);
  assert.is(toOrder(a, 'C'), a);
  const v = new NdArray(a.dtype, [1, a.size], a.data, 'C');
  assert.is(toOrder(v, 'F').data, a.data);
});

const fields = numpy('fields', join(dir, 'fields'));

test("getField gives numpy's values for every (nested) field, C and F order", () => {
  for (const { file, path, shape, data } of fields) {
    const f = getField(loadNpySync(file), path);
    assert.equal(f.shape, shape, `${file} ${path}`);
    assert.equal(arrayToJSON(f), data, `${file} ${path}`);
  }
});

test('fieldView is a zero-copy strided view where the layout allows', () => {
  for (const { file, path, data } of fields) {
    const rec = loadNpySync(file);
    const view = fieldView(rec, path);
    const copy = getField(rec, path);
    if (view === null) continue;
    assert.is(view.data.buffer, rec.data.buffer, 'shares memory');
    // Gather the view by its strides and compare with the copy.
    const units = copy.data.length / Math.max(1, copy.size);
    const gathered = [];
    const walk = (axis, pos) => {
      if (axis === view.shape.length) {
        for (let u = 0; u < units; u++) gathered.push(view.data[pos + u]);
        return;
      }
      for (let i = 0; i < view.shape[axis]; i++) walk(axis + 1, pos + i * view.strides[axis]);
    };
    walk(0, view.offset);
    const cData = copy.order === 'C' ? copy.data : toOrder(copy, 'C').data;
    assert.equal(gathered.map(String), Array.from(cData, String), `${file} ${path}`);
    void data;
  }
  const aligned = loadNpySync(fields.find((x) => x.file.endsWith('aligned.npy')).file);
  assert.ok(fieldView(aligned, 'f2') !== null, 'aligned f8 field is viewable');
  // A nested field is a view too, at the sum of the offsets on its path.
  const dotted = loadNpySync(fields.find((x) => x.file.endsWith('dotted.npy')).file);
  assert.ok(fieldView(dotted, 'p.s') !== null, 'nested i2 field is viewable');
  assert.ok(fieldView(aligned, 'f1') !== null, 'aligned i4 field is viewable');
  const nested = loadNpySync(fields.find((x) => x.file.endsWith('nested.npy')).file);
  assert.is(fieldView(nested, 'e'), null, 'a u2 field at odd offset 15 cannot be a Uint16Array view');
  assert.is(fieldView(nested, 'b'), null, 'a record field has no typed view');
  const odd = loadNpySync(fields.find((x) => x.file.endsWith('packed_odd.npy')).file);
  assert.is(fieldView(odd, 'b'), null, 'unaligned f8 field cannot be a Float64Array view');
});

test.run();
