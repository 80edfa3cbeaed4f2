// `npyts diff` against numpy's np.testing.assert_allclose (and assert_array_equal for text): the same
// verdict, mismatch count and largest differences for floats with NaN and infinities, integers,
// complex numbers, other tolerances; shapes that differ; archives member by member; usage errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { python, runCli, scratch, writeJSON } from '../helpers/numpy.mjs';

const dir = scratch();
const pairs = {
  floats: ['np.array([[1.0, 2.0, np.nan], [4.0, np.inf, 6.0]])', 'np.array([[1.0, 2.5, np.nan], [4.0, np.inf, 6.0000001]])'],
  nan_one_side: ['np.array([1.0, np.nan, 3.0])', 'np.array([1.0, 2.0, 3.0])'],
  inf_sign: ['np.array([np.inf, 1.0])', 'np.array([-np.inf, 1.0])'],
  ints: ["np.arange(1000, dtype='<i8')", "np.arange(1000, dtype='>i4') + (np.arange(1000) % 97 == 0)"],
  float32_vs_64: ["np.linspace(0, 1, 50, dtype='<f4')", 'np.linspace(0, 1, 50)'],
  complex: ['np.array([1+2j, 3-4j, 5j])', 'np.array([1+2j, 3-4.5j, 5j])'],
  zero_desired: ['np.array([0.0, 1e-9])', 'np.array([0.0, 0.0])'],
  relative_to_desired: ['np.array([1.0, 10.0])', 'np.array([1.15, 10.0])'], // rtol=0.14 passes against |desired|, not |actual|
  equal: ['np.eye(3)', 'np.eye(3)'],
  fortran_vs_c: ['np.asfortranarray(np.arange(12.0).reshape(3, 4))', 'np.where(np.arange(12).reshape(3, 4) == 6, 99.0, np.arange(12.0).reshape(3, 4))'],
  // Region slabs of 2**18 elements: several of rows, one file Fortran-ordered, mismatches in each;
  // rows longer than a slab (split along axis 1), and a 3-d array split along its middle axis.
  wide_rows: [
    'np.arange(1_200_000.0).reshape(2, 600_000)',
    'np.where(np.isin(np.arange(1_200_000).reshape(2, 600_000), [3, 599_999, 600_000, 1_199_999]), 0.5, np.arange(1_200_000.0).reshape(2, 600_000))',
  ],
  deep: [
    'np.arange(2_000_000.0).reshape(2, 1000, 1000)',
    'np.where(np.arange(2_000_000).reshape(2, 1000, 1000) % 333_333 == 7, -3.0, np.arange(2_000_000.0).reshape(2, 1000, 1000))',
  ],
  blocks: [
    'np.asfortranarray(np.arange(3_000_000.0).reshape(1500, 2000))',
    'np.where(np.isin(np.arange(3_000_000).reshape(1500, 2000), [5, 1_999_999, 2_999_999]), -1.0, np.arange(3_000_000.0).reshape(1500, 2000))',
  ],
};
const tolerances = [
  [1e-7, 0],
  [1e-3, 0],
  [0, 1e-8],
  [0.2, 0.1],
  [0.14, 0],
];

test("verdict, mismatch count and largest differences are numpy's, for every pair and tolerance", async () => {
  const cases = [];
  for (const [name, [a, b]] of Object.entries(pairs)) {
    const fa = join(dir, `${name}_a.npy`);
    const fb = join(dir, `${name}_b.npy`);
    python(`np.save(${JSON.stringify(fa)}, ${a}); np.save(${JSON.stringify(fb)}, ${b})`);
    for (const [rtol, atol] of tolerances) cases.push({ name, fa, fb, rtol, atol });
  }
  const expected = JSON.parse(
    python(`
import re
out = []
for c in json.load(open(${JSON.stringify(writeJSON(join(dir, 'cases.json'), cases))})):
    try:
        np.testing.assert_allclose(np.load(c['fa']), np.load(c['fb']), rtol=c['rtol'], atol=c['atol'])
        out.append({'equal': True})
    except AssertionError as e:
        m = str(e)
        count = re.search(r'Mismatched elements: (\\d+) /', m)
        absd = re.search(r'Max absolute difference among violations: (\\S+)', m)
        reld = re.search(r'Max relative difference among violations: (\\S+)', m)
        out.append({'equal': False, 'count': int(count.group(1)) if count else None,
                    'abs': absd.group(1) if absd else None, 'rel': reld.group(1) if reld else None})
print(json.dumps(out))`),
  ).map((w) => ({ ...w, abs: w.abs === null ? null : Number(w.abs), rel: w.rel === null ? null : Number(w.rel) }));
  for (const [i, c] of cases.entries()) {
    const want = expected[i];
    const label = `${c.name} rtol=${c.rtol} atol=${c.atol}`;
    const r = await runCli(['diff', c.fa, c.fb, '--rtol', String(c.rtol), '--atol', String(c.atol)]);
    assert.is(r.code, want.equal ? 0 : 1, `${label}: ${r.stdout}${r.stderr}`);
    if (want.equal) {
      assert.is(r.stdout, '', label);
      continue;
    }
    if (want.count !== null) assert.match(r.stdout, new RegExp(`Mismatched elements: ${want.count} / `), label);
    const num = (what) => Number(new RegExp(`Max ${what} difference among violations: (\\S+)`).exec(r.stdout)?.[1]);
    const close = (x, y) => (Number.isNaN(y) ? Number.isNaN(x) : Math.abs(x - y) <= 1e-6 * Math.max(1, Math.abs(y)) || x === y);
    if (want.abs !== null && !Number.isNaN(want.abs))
      assert.ok(close(num('absolute'), want.abs), `${label}: abs ${num('absolute')} vs ${want.abs}\n${r.stdout}`);
    if (want.rel !== null && !Number.isNaN(want.rel))
      assert.ok(close(num('relative'), want.rel), `${label}: rel ${num('relative')} vs ${want.rel}\n${r.stdout}`);
  }
});

test('two large files are compared by regions: memory does not grow with them, and positions in later blocks are right', async () => {
  const { spawn } = await import('node:child_process');
  const { cliBin } = await import('../helpers/numpy.mjs');
  const peakHook = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..', 'helpers', 'peak-rss.cjs');
  const peakOf = (args) =>
    new Promise((resolve) => {
      const child = spawn(process.execPath, ['-r', peakHook, cliBin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (c) => (out += c));
      child.stderr.on('data', (c) => (err += c));
      child.on('close', (code) => resolve({ code, out, err, peak: Number(/peak-rss: (\d+)/.exec(err)?.[1]) }));
    });
  const f = (n) => join(dir, n);
  python(`
for n, name in ((2**23, 'small'), (2**24, 'large')):
    # Two rows, each longer than a block: memory must not follow a row either.
    a = (np.arange(n) / 3).reshape(2, n // 2)
    b = a.copy(); b[-1, -1] = -1
    np.save(${JSON.stringify(dir)} + f'/{name}_a.npy', a); np.save(${JSON.stringify(dir)} + f'/{name}_b.npy', b)`);
  const small = await peakOf(['diff', f('small_a.npy'), f('small_b.npy')]);
  const large = await peakOf(['diff', f('large_a.npy'), f('large_b.npy')]);
  assert.is(large.code, 1, large.err);
  assert.match(large.out, /Mismatched elements: 1 \/ 16777216/);
  assert.match(large.out, /at \(1, 8388607\): 5592405 vs -1/);
  const grew = (large.peak - small.peak) / 2 ** 20;
  console.log(`      peak RSS: ${(small.peak / 2 ** 20).toFixed(0)} MiB for 2 × 64 MiB, ${(large.peak / 2 ** 20).toFixed(0)} MiB for 2 × 128 MiB`);
  // Loading both whole would add their 128 MiB more data. The blocks' garbage waits for V8's next
  // collection (a bounded amount, reached by both runs), so the bound sits well below the data.
  assert.ok(grew < 48, `the peak grew by ${grew.toFixed(0)} MiB for 128 MiB more files`);
});

test('positions of mismatches are listed; text compares exactly; shapes and archives', async () => {
  const f = (n) => join(dir, n);
  python(`
np.save(${JSON.stringify(f('s1.npy'))}, np.array(['a', 'b', 'c'])); np.save(${JSON.stringify(f('s2.npy'))}, np.array(['a', 'B', 'c']))
np.save(${JSON.stringify(f('r1.npy'))}, np.zeros((2, 3))); np.save(${JSON.stringify(f('r2.npy'))}, np.zeros((3, 2)))
np.savez(${JSON.stringify(f('z1.npz'))}, w=np.arange(4.0), only1=np.zeros(1)); np.savez(${JSON.stringify(f('z2.npz'))}, w=np.arange(4.0) * 1.5, only2=np.zeros(1))
np.savez(${JSON.stringify(f('z3.npz'))}, w=np.arange(4.0))`);
  const text = await runCli(['diff', f('s1.npy'), f('s2.npy')]);
  assert.is(text.code, 1);
  assert.match(text.stdout, /Arrays are not equal/);
  assert.match(text.stdout, /at \(1,\): "b" vs "B"/);
  // Datetimes are shown as numpy prints them (ISO 8601 in their unit), not as counts.
  python(
    `np.save(${JSON.stringify(f('t1.npy'))}, np.array(['2024-02-29T12:00', 'NaT'], 'M8[m]')); np.save(${JSON.stringify(f('t2.npy'))}, np.array(['2024-02-29T12:01', 'NaT'], 'M8[m]'))`,
  );
  const times = await runCli(['diff', f('t1.npy'), f('t2.npy')]);
  assert.is(times.code, 1);
  assert.match(times.stdout, /at \(0,\): 2024-02-29T12:00 vs 2024-02-29T12:01/);
  const shapes = await runCli(['diff', f('r1.npy'), f('r2.npy')]);
  assert.is(shapes.code, 1);
  assert.match(shapes.stdout, /shapes differ: \(2, 3\) and \(3, 2\)/);
  const archives = await runCli(['diff', f('z1.npz'), f('z2.npz')]);
  assert.is(archives.code, 1);
  assert.match(archives.stdout, /only1: only in/);
  assert.match(archives.stdout, /only2: only in/);
  assert.match(archives.stdout, /w: Not equal to tolerance/);
  assert.match(archives.stdout, /at \(1,\): 1 vs 1\.5/);
  assert.is((await runCli(['diff', `${f('z1.npz')}:w`, f('z3.npz') + ':w'])).code, 0, 'one member against one member');
  assert.is((await runCli(['diff', f('s1.npy')])).code, 2);
  assert.is((await runCli(['diff', f('s1.npy'), f('s2.npy'), '--rtol', '-1'])).code, 2);
});

test("the mismatch percentage is numpy's (.3g): 100%, 33.3%, 0.0005%, 3.33e-05%", async () => {
  for (const [k, n] of [
    [3, 3],
    [1, 3],
    [1, 200000],
    [1, 3000000],
    [2, 7],
  ]) {
    const fa = join(dir, `pct_${k}_${n}_a.npy`);
    const fb = join(dir, `pct_${k}_${n}_b.npy`);
    const line = python(`a = np.zeros(${n}); b = a.copy(); b[:${k}] = 1
np.save(${JSON.stringify(fa)}, a); np.save(${JSON.stringify(fb)}, b)
try:
    np.testing.assert_allclose(a, b)
except AssertionError as e:
    print([l for l in str(e).splitlines() if l.startswith('Mismatched')][0])`).trim();
    const r = await runCli(['diff', fa, fb]);
    assert.is(r.code, 1);
    assert.ok(r.stdout.includes(line), `${k}/${n}: numpy says '${line}', npyts:\n${r.stdout}`);
  }
});

test("float128 (x86 long double): compared exactly past float64's range and precision, with numpy's verdict, count and largest differences", async () => {
  const cases = [];
  const make = [];
  const pairsLd = {
    // Past float64's range: a relative difference of 1e-6 fails rtol 1e-7 and passes rtol 1e-5.
    huge: [
      "np.array([np.longdouble('1e400'), -np.longdouble('3e4000'), 1.5], dtype='<f16')",
      "np.array([np.longdouble('1e400') * (1 + np.longdouble('1e-6')), -np.longdouble('3e4000'), 1.5], dtype='<f16')",
    ],
    tiny: [
      "np.array([np.longdouble('1e-4000'), np.longdouble('2e-4900')], dtype='<f16')",
      "np.array([np.longdouble('1.0000001e-4000'), np.longdouble('2e-4900') * 3], dtype='<f16')",
    ],
    // Finer than float64: 1 + 2^-60 against 1 is equal as float64, and not for atol below 2^-60.
    precision: [
      "np.array([1 + np.longdouble(2) ** -60, 1 / np.longdouble(3)], dtype='<f16')",
      "np.array([np.longdouble(1), np.longdouble(1) / 3 + np.longdouble(2) ** -62], dtype='<f16')",
    ],
    inf_nan: [
      "np.array([np.longdouble('1e400'), np.inf, np.nan, np.nan], dtype='<f16')",
      "np.array([np.inf, np.inf, np.nan, np.longdouble('1e400')], dtype='<f16')",
    ],
    zero_desired: ["np.array([np.longdouble('1e-4000'), 0], dtype='<f16')", "np.array([0, 0], dtype='<f16')"],
    against_f8: ["np.array([np.longdouble('1e400'), 1 + np.longdouble(2) ** -60], dtype='<f16')", 'np.array([1e300, 1.0])'],
    // A 64-bit integer past 2^53 is compared exactly too (as a float64 it would round to 2^62).
    int64_vs_long_double: ["np.array([2**62 + 1, 5], dtype='<i8')", "np.array([np.longdouble(2**62), 5], dtype='<f16')"],
    big_endian: ["np.array([np.longdouble('1e400'), 2], dtype='>f16')", "np.array([np.longdouble('1.5e400'), 2], dtype='<f16')"],
    // Complex long doubles (complex256): |x − y| is the hypotenuse, past float64's range and precision.
    c32_huge: ["np.array([C('1e400', '2e400'), C(3, 0)], dtype='<c32')", "np.array([C(L('1e400') * (1 + L('1e-6')), '2e400'), C(3, 0)], dtype='<c32')"],
    c32_precision: ["np.array([C(1 + L(2) ** -60, 1), C(0, L(1) / 3)], dtype='<c32')", "np.array([C(1, 1), C(0, L(1) / 3 + L(2) ** -62)], dtype='>c32')"],
    c32_inf_nan: [
      "np.array([C(np.inf, 1), C(np.nan, 0), C(0, '1e400'), C(np.inf, np.inf)], dtype='<c32')",
      "np.array([C(np.inf, 1), C(0, np.nan), C(np.inf, 0), C(np.inf, np.inf)], dtype='<c32')",
    ],
    c32_max: ["np.array([C(np.finfo(L).max, 0), C(1, 0)], dtype='<c32')", "np.array([C(np.finfo(L).max / 2, 0), C(1, 0)], dtype='<c32')"],
    c32_against_c16: ["np.array([C('1e400', 1), C(1 + L(2) ** -60, 0)], dtype='<c32')", 'np.array([1e300 + 1j, 1.0 + 0j])'],
    c32_against_f16: ["np.array([C('1e400', '1e-4000'), C(2, 0)], dtype='<c32')", "np.array([np.longdouble('1e400'), 2], dtype='<f16')"],
  };
  for (const [name, [a, b]] of Object.entries(pairsLd)) {
    const fa = join(dir, `ld_${name}_a.npy`);
    const fb = join(dir, `ld_${name}_b.npy`);
    make.push(`np.save(${JSON.stringify(fa)}, ${a}); np.save(${JSON.stringify(fb)}, ${b})`);
    for (const [rtol, atol] of [
      [1e-7, 0],
      [1e-5, 0],
      [0, 2 ** -61],
      [1e-7, 1e-300],
    ])
      cases.push({ name, fa, fb, rtol, atol });
  }
  python(`L = np.longdouble
def C(re, im):
    z = np.zeros(1, np.clongdouble)
    z.real, z.imag = L(re), L(im)
    return z[0]
${make.join('\n')}`);
  const expected = JSON.parse(
    python(
      `
out = []
for c in json.load(open(${JSON.stringify(writeJSON(join(dir, 'ld-cases.json'), cases))})):
    x, y = np.load(c['fa']), np.load(c['fb'])
    with np.errstate(all='ignore'):
        try:
            np.testing.assert_allclose(x, y, rtol=c['rtol'], atol=c['atol'])
            out.append({'equal': True})
            continue
        except AssertionError as e:
            m = str(e)
        wide = np.clongdouble if 'c' in (x.dtype.kind, y.dtype.kind) else np.longdouble
        x, y = x.astype(wide), y.astype(wide)
        err = abs(x - y)
        bad = ~((err <= c['atol'] + c['rtol'] * abs(y)) | (np.isnan(x) & np.isnan(y)) | ((x == y) & np.isinf(x)))
        fin = bad & np.isfinite(err)
        count = re.search(r'Mismatched elements: (\\d+) /', m)
        out.append({'equal': False, 'count': int(count.group(1)) if count else None,
                    'abs': None if not fin.any() else str(err[fin].max()), 'rel': None if not fin.any() else str((err[fin] / abs(y[fin])).max())})
print(json.dumps(out))`.replace('out = []', 'import re\nout = []'),
    ),
  );
  const checks = [];
  for (const [i, c] of cases.entries()) {
    const want = expected[i];
    const label = `${c.name} rtol=${c.rtol} atol=${c.atol}`;
    const r = await runCli(['diff', c.fa, c.fb, '--rtol', String(c.rtol), '--atol', String(c.atol)]);
    assert.is(r.code, want.equal ? 0 : 1, `${label}: ${r.stdout}${r.stderr}`);
    if (want.equal) continue;
    if (want.count !== null) assert.match(r.stdout, new RegExp(`Mismatched elements: ${want.count} / `), `${label}\n${r.stdout}`);
    const ours = (what) => new RegExp(`Max ${what} difference among violations: (\\S+)`).exec(r.stdout)?.[1] ?? null;
    if (want.rel !== null) checks.push({ label, abs: [ours('absolute'), want.abs], rel: [ours('relative'), want.rel] });
  }
  // Our largest differences, read back as long doubles: the absolute one of reals is numpy's to the
  // bit (both are |x − y| rounded once); the relative one, and a complex one (numpy's hypotl of the
  // rounded parts, ours the exact hypotenuse rounded once), within two units in the last place.
  const wrong = JSON.parse(
    python(`
bad = []
for c in json.load(open(${JSON.stringify(writeJSON(join(dir, 'ld-checks.json'), checks))})):
    (oa, na), (orl, nr) = c['abs'], c['rel']
    if c['label'].startswith('c32'):
        if abs(np.longdouble(oa) - np.longdouble(na)) > 2 * np.spacing(np.longdouble(na)): bad.append([c['label'], 'abs', oa, na])
    elif np.longdouble(oa) != np.longdouble(na): bad.append([c['label'], 'abs', oa, na])
    o, n = np.longdouble(orl), np.longdouble(nr)
    if abs(o - n) > 2 * np.spacing(n): bad.append([c['label'], 'rel', orl, nr])
print(json.dumps(bad))`),
  );
  assert.equal(wrong, []);
  assert.ok(checks.length >= 8, `${checks.length} cases measured`);
});

test('records and subarrays holding long doubles are compared exactly (read as float64, 1e400 and 2e400 were both inf, and "equal")', async () => {
  const at = (n) => join(dir, n);
  const numpySays = python(`
L = np.longdouble
dt = np.dtype([('a', '<f16'), ('b', '>f16'), ('s', '<f16', (2,)), ('i', '<i4')])
r = np.zeros(2, dt)
r['a'], r['b'], r['s'], r['i'] = [L('1e400'), L(1) / 3], [L('-3e-4000'), 7], [[L('1e4000'), 1], [2, 3]], [1, 2]
np.save(${JSON.stringify(at('ldrec1.npy'))}, r)
for name, field, k, value in [('a', 'a', 0, L('2e400')), ('b', 'b', 0, L('-3.0000000000000000001e-4000')), ('s', 's', 0, [L('1e4000') * (1 + np.finfo(L).eps), 1]), ('third', 'a', 1, L(1) / 3 + np.finfo(L).eps / 4)]:
    q = r.copy(); q[field][k] = value
    np.save(${JSON.stringify(at('ldrec-'))} + name + '.npy', q)
    print(name, bool((q == r).all()))
`);
  const same = await runCli(['diff', at('ldrec1.npy'), at('ldrec1.npy')]);
  assert.is(same.code, 0, same.stdout + same.stderr);
  for (const name of ['a', 'b', 's', 'third']) {
    assert.ok(numpySays.includes(`${name} False`), `numpy finds ${name} different: ${numpySays}`);
    const r = await runCli(['diff', at('ldrec1.npy'), at(`ldrec-${name}.npy`)]);
    assert.is(r.code, 1, `${name}: ${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /Mismatched elements: 1 \/ 2/, name);
  }
  const shown = (await runCli(['diff', at('ldrec1.npy'), at('ldrec-a.npy')])).stdout;
  assert.match(shown, /"a": 1e\+400,.* vs \{"a": 2e\+400,/);
});

test.run();
