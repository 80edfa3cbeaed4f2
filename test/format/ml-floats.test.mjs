// bfloat16 and float8 (ml_dtypes' names) against ml_dtypes: every bit pattern decodes to ml_dtypes'
// value, numbers encode to ml_dtypes' bits, and .npy files written by ml_dtypes read back with
// `voidAs` (or as they are, for float8_e5m2's `<f1`) and save byte for byte as ml_dtypes saves them.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ML_FLOATS, NpyError, decodeNpy, encodeNpy, mlFloatToNumber, numberToMlFloat, parseDescr, toFloat32 } from '@npyts/core';
import { python, scratch } from '../helpers/numpy.mjs';

const dir = scratch();
const NAMES = Object.keys(ML_FLOATS);

test("every float type ml_dtypes has is one npyts reads, with ml_dtypes' numbers of exponent and mantissa bits", () => {
  const theirs = JSON.parse(
    python(`
import ml_dtypes as m
out = {}
for n in dir(m):
    try:
        fi = m.finfo(getattr(m, n))
    except Exception:
        continue
    if n != 'finfo' and np.dtype(getattr(m, n)).itemsize <= 2:
        out[n] = [fi.nexp, fi.nmant, np.dtype(getattr(m, n)).itemsize]
print(json.dumps(out))`),
  );
  assert.ok(Object.keys(theirs).length >= 12, Object.keys(theirs).join());
  const ours = Object.fromEntries(NAMES.map((n) => [n, [ML_FLOATS[n].exponentBits, ML_FLOATS[n].mantissaBits, ML_FLOATS[n].itemsize]]));
  assert.equal(ours, theirs);
});

/** Float32 values as ml_dtypes sees them: every pattern of each format, widened by ml_dtypes. */
python(`
import ml_dtypes as m
for name in ${JSON.stringify(NAMES)}:
    t = getattr(m, name)
    n = 1 << (8 * np.dtype(t).itemsize)
    bits = np.arange(n, dtype=np.uint16 if n > 256 else np.uint8)
    bits.view(t).astype(np.float32).tofile('${dir}/' + name + '.decoded')
# Inputs for encoding: random float32 patterns (every exponent, NaNs of both signs, subnormals) and
# the values at and between each format's neighbours, where rounding ties are decided.
rng = np.random.default_rng(7)
x = rng.integers(0, 2**32, 200000, dtype=np.uint64).astype(np.uint32).view(np.float32)
edges = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan]
for name in ${JSON.stringify(NAMES)}:
    t = getattr(m, name)
    n = 1 << (8 * np.dtype(t).itemsize)
    vals = np.arange(n, dtype=np.uint16 if n > 256 else np.uint8).view(t).astype(np.float64)
    vals = vals[np.isfinite(vals)]
    vals.sort()
    mids = (vals[1:] + vals[:-1]) / 2
    edges += list(vals) + list(mids.astype(np.float32)) + list(np.nextafter(mids.astype(np.float32), np.float32(np.inf))) + list(vals * 1.5) + list(vals * 4)
x = np.concatenate([x, np.array(edges, dtype=np.float32)])
x.tofile('${dir}/inputs.f32')
for name in ${JSON.stringify(NAMES)}:
    t = getattr(m, name)
    x.astype(t).view(np.uint16 if np.dtype(t).itemsize == 2 else np.uint8).tofile('${dir}/' + name + '.encoded')
`);

const floats = (file) => {
  const b = readFileSync(join(dir, file));
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
};

for (const name of NAMES) {
  test(`${name}: every bit pattern decodes to ml_dtypes' value`, () => {
    const want = floats(`${name}.decoded`);
    let wrong = 0;
    for (let bits = 0; bits < want.length; bits++) {
      const got = mlFloatToNumber(name, bits);
      if (!Object.is(got, want[bits]) && !(Number.isNaN(got) && Number.isNaN(want[bits]))) wrong++;
    }
    assert.is(wrong, 0);
  });

  test(`${name}: numbers encode to ml_dtypes' bits (round to nearest, ties to even; overflow as ml_dtypes)`, () => {
    const inputs = floats('inputs.f32');
    const b = readFileSync(join(dir, `${name}.encoded`));
    const want = ML_FLOATS[name].itemsize === 2 ? new Uint16Array(b.buffer, b.byteOffset, b.byteLength / 2) : b;
    const wrong = [];
    let refused = 0;
    for (let i = 0; i < inputs.length; i++) {
      if (Number.isNaN(inputs[i]) && ML_FLOATS[name].nanBits < 0) {
        // No NaN in the format: ml_dtypes writes a zero; npyts refuses rather than write a number.
        try {
          numberToMlFloat(name, inputs[i]);
        } catch (e) {
          if (e instanceof NpyError && e.code === 'NOT_REPRESENTABLE') refused++;
        }
        continue;
      }
      const got = numberToMlFloat(name, inputs[i]);
      // A NaN's payload is not a value: any NaN of the format is right for a NaN.
      const nan = Number.isNaN(inputs[i]) && Number.isNaN(mlFloatToNumber(name, got)) && Number.isNaN(mlFloatToNumber(name, want[i]));
      if (got !== want[i] && !nan) wrong.push([inputs[i], got, want[i]]);
    }
    assert.equal(wrong.slice(0, 5), []);
    assert.is(refused, ML_FLOATS[name].nanBits < 0 ? inputs.filter(Number.isNaN).length : 0);
  });
}

test('ml_dtypes files: bfloat16 (<V2) and float8_e4m3fn (<V1) read with voidAs, float8_e5m2 (<f1) as it is; saved byte for byte', () => {
  python(`
import ml_dtypes as m
v = np.array([[0.1, -2.5, 448, 1e-3], [3.0, -0.0, 1e4, 7.5]], dtype=np.float32)
np.save('${dir}/bf16.npy', v.astype(m.bfloat16))
np.save('${dir}/e4m3.npy', np.asfortranarray(v).astype(m.float8_e4m3fn, order='F'))
np.save('${dir}/e5m2.npy', v.astype(m.float8_e5m2))
for n in ['bf16', 'e4m3', 'e5m2']:
    t = {'bf16': m.bfloat16, 'e4m3': m.float8_e4m3fn, 'e5m2': m.float8_e5m2}[n]
    raw = np.load('${dir}/' + n + '.npy') if n != 'e5m2' else None
    arr = (raw.view(t) if raw is not None else None)
    if arr is None:
        # numpy cannot load <f1: read the data after the header as ml_dtypes' bytes.
        b = open('${dir}/' + n + '.npy', 'rb').read()
        arr = np.frombuffer(b[128:], dtype=t).reshape(2, 4)
    arr.astype(np.float32).tofile('${dir}/' + n + '.values')
`);
  for (const [file, voidAs, name, order] of [
    ['bf16', 'bfloat16', 'bfloat16', 'C'],
    ['e4m3', 'float8_e4m3fn', 'float8_e4m3fn', 'F'],
    ['e5m2', undefined, 'float8_e5m2', 'C'],
  ]) {
    const bytes = readFileSync(join(dir, `${file}.npy`));
    const a = decodeNpy(bytes, voidAs ? { voidAs } : {});
    assert.is(a.dtype.name, name);
    assert.is(a.order, order);
    const want = floats(`${file}.values`);
    const got = toFloat32(a);
    const rowMajor = order === 'C' ? got.data : Float32Array.from({ length: 8 }, (_, k) => got.data[(k % 4) * 2 + Math.floor(k / 4)]);
    assert.equal(Array.from(rowMajor), Array.from(want));
    assert.equal(Buffer.from(encodeNpy(a)), bytes, `${file}: the header and data ml_dtypes wrote`);
  }
  // Without the option the bytes are what numpy reads: raw void.
  assert.is(decodeNpy(readFileSync(join(dir, 'bf16.npy'))).dtype.str, '|V2');
});

test('ml_dtypes files of every narrow float: read with voidAs to its values, saved back byte for byte', () => {
  const names = NAMES.filter((n) => n !== 'float8_e5m2');
  python(`
import ml_dtypes as m
v = np.array([[0.1, -2.5, 448, 1e-3], [3.0, -0.0, 1e4, 0.3]], dtype=np.float32)
for n in ${JSON.stringify(names)}:
    a = v.astype(getattr(m, n))
    np.save('${dir}/file-' + n + '.npy', a)
    a.astype(np.float32).tofile('${dir}/file-' + n + '.values')
`);
  for (const name of names) {
    const bytes = readFileSync(join(dir, `file-${name}.npy`));
    const a = decodeNpy(bytes, { voidAs: name });
    assert.is(a.dtype.name, name);
    assert.equal(Array.from(toFloat32(a).data), Array.from(floats(`file-${name}.values`)), name);
    assert.equal(Buffer.from(encodeNpy(a)), bytes, `${name}: the header and data ml_dtypes wrote`);
  }
});

test('numpy + ml_dtypes load what npyts writes from numbers', () => {
  const a = decodeNpy(encodeNpy({ dtype: 'bfloat16', shape: [3], data: [1.5, -0.1, 3e38] }), { voidAs: 'bfloat16' });
  // Typed data of another kind would be rounded: refused, as for float16.
  try {
    encodeNpy({ dtype: 'bfloat16', data: new Float32Array([0.1]) });
    assert.unreachable();
  } catch (e) {
    assert.is(e.code, 'DTYPE_MISMATCH');
  }
  const path = join(dir, 'ours.npy');
  writeFileSync(path, encodeNpy(a));
  const back = python(`
import ml_dtypes as m
print(json.dumps(np.load('${path}').view(m.bfloat16).astype(np.float32).tolist()))`);
  assert.equal(JSON.parse(back), Array.from(toFloat32(a).data));
  assert.equal(Array.from(toFloat32(a).data), [
    1.5,
    mlFloatToNumber('bfloat16', numberToMlFloat('bfloat16', -0.1)),
    mlFloatToNumber('bfloat16', numberToMlFloat('bfloat16', 3e38)),
  ]);
});

test('refusals: voidAs on data that is not a void of the size; toFloat32 of a type it would round', () => {
  python(`np.save('${dir}/i2.npy', np.arange(3, dtype='<i2')); np.save('${dir}/v4.npy', np.zeros(3, dtype='V4'))`);
  for (const f of ['i2.npy', 'v4.npy']) {
    try {
      decodeNpy(readFileSync(join(dir, f)), { voidAs: 'bfloat16' });
      assert.unreachable();
    } catch (e) {
      assert.ok(e instanceof NpyError && e.code === 'DTYPE_MISMATCH', String(e));
    }
  }
  try {
    toFloat32(decodeNpy(readFileSync(join(dir, 'i2.npy'))));
    assert.unreachable();
  } catch (e) {
    assert.is(e.code, 'DTYPE_MISMATCH');
  }
  assert.is(parseDescr('float8_e5m2').str, '<f1');
  assert.is(parseDescr('<f1').name, 'float8_e5m2');
  assert.is(parseDescr('bfloat16').str, '<V2');
});

test.run();
