// Shortest digits at a float's own width (the one place of these rules: the CLI, CSV and the viewer
// use them), against numpy's Dragon4 (format_float_scientific / format_float_positional, unique=True).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { exactExponent, numpyScalarText, shortestDigits, shortestFloatText } from '@npyts/core/plumbing';
import { python } from '../helpers/numpy.mjs';

test("shortestDigits and shortestFloatText give numpy's digits for float16, float32 and float64", () => {
  const cases = JSON.parse(
    python(`
rng = np.random.default_rng(5)
out = []
for dt, size in (('<f2', 2), ('<f4', 4), ('<f8', 8)):
    xs = np.concatenate([rng.standard_normal(300) * 10.0 ** rng.integers(-6, 6, 300), [0.1, 1/3, 65504, 6e-8, 2.0**-24, 1e-45, 3.4028235e38]])
    with np.errstate(over='ignore', under='ignore'):
        vs = xs.astype(dt)
    for v in vs:
        if not np.isfinite(v) or v == 0: continue
        m, e = np.format_float_scientific(v, unique=True, trim='-').split('e')
        pos = np.format_float_positional(v, unique=True, trim='-') if 1e-4 <= abs(v) < 1e15 else None
        out.append([float(v), size, m.replace('-', '').replace('.', ''), int(e), pos])
print(json.dumps(out))`),
  );
  const wrong = [];
  for (const [x, size, digits, exp, positional] of cases) {
    const got = shortestDigits(x, size);
    if (got.digits !== digits || got.exp !== exp) wrong.push(`${x} (${size} bytes): ${JSON.stringify(got)}, numpy ${digits}e${exp}`);
    if (positional !== null && shortestFloatText(x, size) !== positional)
      wrong.push(`${x} (${size} bytes): ${shortestFloatText(x, size)}, numpy ${positional}`);
  }
  assert.ok(cases.length > 800);
  assert.equal(wrong, []);
});

test("numpyScalarText is numpy's str of a scalar of the width: notation switches at 1e-4 and 1e16, nan, inf, -0.0", () => {
  const cases = JSON.parse(
    python(`
rng = np.random.default_rng(6)
out = []
for dt, size in (('<f2', 2), ('<f4', 4), ('<f8', 8)):
    xs = np.concatenate([rng.standard_normal(200) * 10.0 ** rng.integers(-20, 20, 200),
                         [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-4, 9.99e-5, 1e16, 9.99e15, 65504, 6e-8, 1e-45, 3.4028235e38, 1.5, 100.0, -2.25]])
    with np.errstate(over='ignore', under='ignore', invalid='ignore'):
        vs = xs.astype(dt)
    for v in vs:
        out.append([None if np.isnan(v) else (float(v) if np.isfinite(v) else ('inf' if v > 0 else '-inf')), bool(np.signbit(v)), size, str(v)])
print(json.dumps(out))`),
  );
  const wrong = [];
  for (const [value, negative, size, text] of cases) {
    const x = value === null ? NaN : value === 'inf' ? Infinity : value === '-inf' ? -Infinity : value === 0 && negative ? -0 : value;
    const got = numpyScalarText(x, size);
    if (got !== text) wrong.push(`${x} (${size} bytes): ${got}, numpy ${text}`);
  }
  assert.ok(cases.length > 600);
  assert.equal(wrong, []);
});

test('exactExponent and shortestDigits refuse what has no first digit (0, NaN, infinities) instead of looping or failing inside BigInt', () => {
  for (const [run, what] of [
    [() => exactExponent(0, 0), 'exactExponent(0, 0)'],
    [() => exactExponent(NaN, 0), 'exactExponent(NaN, 0)'],
    [() => exactExponent(Infinity, 300), 'exactExponent(Infinity, 300)'],
    [() => exactExponent(1, NaN), 'exactExponent(1, NaN)'],
    [() => shortestDigits(NaN, 4), 'shortestDigits(NaN, 4)'],
    [() => shortestDigits(-Infinity, 2), 'shortestDigits(-Infinity, 2)'],
  ]) {
    try {
      run();
      assert.unreachable(`${what} returned`);
    } catch (e) {
      assert.is(e.code, 'BAD_OPTION', `${what}: ${e}`);
    }
  }
  assert.is(exactExponent(0.05, -1), -2);
});

test.run();
