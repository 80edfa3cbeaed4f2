// `npyts convert` to and from .csv/.tsv: the text np.savetxt writes (floats with fmt='%.17g',
// integers exactly, record fields as columns under a header line), read back as np.loadtxt reads it;
// refusals for what text cannot hold.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { boundedChild, python, runCli, scratch } from '../helpers/numpy.mjs';
import fc from 'fast-check';
import { arrayFromValues } from '@npyts/core';
import { loadNpySync, saveNpySync } from '@npyts/core/node';

const dir = scratch();
const f = (n) => join(dir, n);
const cases = {
  f8: ['rng.standard_normal(30) * 10.0 ** rng.integers(-20, 20, 30)', "'%.17g'"],
  f8_special: [
    'np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-5, 1e17, 123456789012345678.0, 2**-1074, 0.1, 1e-7, 1e-3, 1e22, 1e23, 9.9999999999999995e-8, 0.30000000000000004, 1049 / 2**20, 213 / 2**21, 45 / 2**22])',
    "'%.17g'",
  ], // the last three: exact ties at the 17th digit
  // Odd 53-bit significands over small powers of two (many exact ties at the 17th digit: m / 8 has 18
  // digits ending in 5), and at every scale.
  f8_ties: ['(rng.integers(2**52, 2**53, 400) | 1) / 2.0 ** rng.integers(1, 8, 400)', "'%.17g'"],
  f8_scales: ['(rng.integers(2**52, 2**53, 400) | 1) * 2.0 ** rng.integers(-1000, 1000, 400)', "'%.17g'"],
  f8_2d: ['rng.standard_normal((5, 4))', "'%.17g'"],
  f4_2d: ['(rng.standard_normal((3, 3)) * 1e6).astype(np.float32)', "'%.17g'"],
  i8: ['np.array([0, -1, 2**63 - 1, -2**63, 12345])', "'%d'"],
  u1_2d: ['np.arange(12, dtype=np.uint8).reshape(3, 4)', "'%d'"],
  bool: ['np.array([True, False, True])', "'%d'"],
  text: ["np.array(['alpha', 'é', 'x y'])", "'%s'"],
  // Datetimes as ISO 8601 in their own unit (numpy's str of a datetime64): lossless, read back exactly.
  M_D: ["np.array(['2024-02-29', '1969-12-31', '-0001-01-01', 'NaT'], 'M8[D]')", "'%s'"],
  M_ms_2d: ["np.array([['2020-01-01T12:00:00.5', 'NaT'], ['1900-03-01T00:00:00.001', '10000-01-01']], 'M8[ms]')", "'%s'"],
};

test('export: the same text as np.savetxt, CSV and TSV', async () => {
  const specs = Object.entries(cases).map(
    ([name, [expr, fmt]]) =>
      `a = ${expr}\nnp.save(${JSON.stringify(f(`${name}.npy`))}, a)\nfor d, ext in ((',', 'csv'), ('\\t', 'tsv')): np.savetxt(${JSON.stringify(f(name))} + '.numpy.' + ext, a.astype(int) if a.dtype == bool else a, fmt=${fmt}, delimiter=d, encoding='utf-8')`,
  );
  python(`rng = np.random.default_rng(3)\n${specs.join('\n')}`);
  for (const name of Object.keys(cases)) {
    for (const ext of ['csv', 'tsv']) {
      const r = await runCli(['convert', f(`${name}.npy`), f(`${name}.ours.${ext}`)]);
      assert.is(r.code, 0, `${name}: ${r.stderr}`);
      assert.is(readFileSync(f(`${name}.ours.${ext}`), 'utf8'), readFileSync(f(`${name}.numpy.${ext}`), 'utf8'), `${name}.${ext}`);
    }
  }
});

test("datetimes go to text and back exactly (NaT included), and a text that is not the unit's form is refused with its line", async () => {
  for (const [name, descr] of [
    ['M_D', '<M8[D]'],
    ['M_ms_2d', '<M8[ms]'],
  ]) {
    const back = await runCli(['convert', f(`${name}.ours.csv`), f(`${name}.back.npy`), '--dtype', descr]);
    assert.is(back.code, 0, back.stderr);
    const same = python(`a = np.load(${JSON.stringify(f(`${name}.npy`))}); b = np.load(${JSON.stringify(f(`${name}.back.npy`))})
print(a.dtype == b.dtype, a.shape == b.shape, bool((a.view('i8') == b.view('i8')).all()))`);
    assert.is(same.trim(), 'True True True', name);
  }
  writeFileSync(f('bad-time.csv'), '2024-02-29\n2024-02-30\n');
  const r = await runCli(['convert', f('bad-time.csv'), f('bad-time.npy'), '--dtype', '<M8[D]']);
  assert.is.not(r.code, 0);
  assert.match(r.stderr, /bad-time\.csv:2: '2024-02-30' is not a datetime64\[D\]/);
  const coarse = await runCli(['convert', f('bad-time.csv'), f('bad-time.npy'), '--dtype', '<M8[s]']);
  assert.match(coarse.stderr, /bad-time\.csv:1: '2024-02-29' is not a datetime64\[s\]/);
});

test("records: one column per field under a header line, as np.savetxt(header=…, comments='') writes them", async () => {
  python(`a = np.array([(1, 0.5, 'ab'), (-2, 1e-7, 'c')], dtype=[('id', '<i8'), ('score', '>f8'), ('tag', '<U2')])
np.save(${JSON.stringify(f('rec.npy'))}, a)
np.savetxt(${JSON.stringify(f('rec.numpy.csv'))}, a, fmt=['%d', '%.17g', '%s'], delimiter=',', header='id,score,tag', comments='')`);
  const r = await runCli(['convert', f('rec.npy'), f('rec.ours.csv')]);
  assert.is(r.code, 0, r.stderr);
  assert.is(readFileSync(f('rec.ours.csv'), 'utf8'), readFileSync(f('rec.numpy.csv'), 'utf8'));
  // And back, with the record dtype: the header line is recognised and skipped.
  const back = await runCli(['convert', f('rec.ours.csv'), f('rec.back.npy'), '--dtype', "[('id', '<i8'), ('score', '>f8'), ('tag', '<U2')]"]);
  assert.is(back.code, 0, back.stderr);
  assert.is(python(`print(bool((np.load(${JSON.stringify(f('rec.back.npy'))}) == np.load(${JSON.stringify(f('rec.npy'))})).all()))`).trim(), 'True');
});

test('import: the array np.loadtxt reads, for floats, integers and text; every double comes back exactly', async () => {
  for (const [name, descr] of [
    ['f8', '<f8'],
    ['f8_special', '<f8'],
    ['f8_2d', '<f8'],
    ['i8', '<i8'],
    ['u1_2d', '|u1'],
    ['text', '<U5'],
  ]) {
    for (const ext of ['csv', 'tsv']) {
      const out = f(`${name}.${ext}.back.npy`);
      const r = await runCli(['convert', f(`${name}.numpy.${ext}`), out, '--dtype', descr]);
      assert.is(r.code, 0, `${name}.${ext}: ${r.stderr}`);
      const same = python(`
d = ${ext === 'csv' ? "','" : "'\\t'"}
want = np.loadtxt(${JSON.stringify(f(`${name}.numpy.${ext}`))}, delimiter=d, dtype=${JSON.stringify(descr)}, encoding='utf-8')
got = np.load(${JSON.stringify(out)})
orig = np.load(${JSON.stringify(f(`${name}.npy`))})
print(got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=got.dtype.kind == 'f') and (got.dtype.kind != 'f' or np.array_equal(got, orig, equal_nan=True)))`).trim();
      assert.is(same, 'True', `${name}.${ext}`);
    }
  }
});

test("long doubles to text and back exactly: each cell numpy's str() of it, which np.loadtxt(dtype=np.longdouble) reads back; import rounds decimals as np.loadtxt does, ties included", async () => {
  python(`
from fractions import Fraction
rng = np.random.default_rng(5)
L = np.longdouble
fi = np.finfo(L)
special = [L('1e400'), L(1) / 3, L(2.5), L(0.1), L('0.1'), -L('1e-4940'), fi.max, -fi.max, fi.smallest_subnormal, fi.tiny, -L(0), L(0), 1 + fi.eps, np.inf, -np.inf, np.nan, L(7)]
bits = [L(m) * L(2) ** int(e) for m, e in zip(rng.integers(2**62, 2**63, 200), rng.integers(-16400, 16300, 200))]
values = np.array(special + bits, dtype=L)
np.save(${JSON.stringify(f('ld.npy'))}, values)
np.save(${JSON.stringify(f('ld_be.npy'))}, values.astype('>f16'))
rec = np.zeros(len(values), [('x', '<f16'), ('y', '>f16'), ('i', '<i4')])
rec['x'], rec['y'], rec['i'] = values, values[::-1], np.arange(len(values))
np.save(${JSON.stringify(f('ld_rec.npy'))}, rec)
open(${JSON.stringify(f('ld.str.txt'))}, 'w').write('\\n'.join(str(v) for v in values) + '\\n')
# Text to import: 25-digit decimals at every scale, values past the range both ways, and exact
# midpoints between neighbouring long doubles (ties, which round to the even one).
def exact(q):
    n, d = q.numerator, q.denominator
    k = d.bit_length() - 1
    assert d == 1 << k
    digits = str(abs(n) * 5 ** k)
    return ('-' if n < 0 else '') + digits + 'e-' + str(k)
cells = ['%d%se%d' % (rng.integers(1, 10), ''.join(map(str, rng.integers(0, 10, 24))), e) for e in rng.integers(-4980, 4910, 300)]
cells += ['1e5000', '-1e5000', '1e-5000', '0e999999999', '0.000', '.5', '5.', '+3', '1e99999999999999999999', '1' + '0' * 300 + 'e-300']
import sys
limit = sys.get_int_max_str_digits()
sys.set_int_max_str_digits(0)  # a tiny midpoint's exact decimal has thousands of digits
try:
    for v in list(values[np.isfinite(values) & (values != 0)][:40]):
        up = np.nextafter(v, L(np.inf))
        if np.isfinite(up):
            cells.append(exact((Fraction(*v.as_integer_ratio()) + Fraction(*up.as_integer_ratio())) / 2))
finally:
    sys.set_int_max_str_digits(limit)
open(${JSON.stringify(f('ld_in.csv'))}, 'w').write('\\n'.join(cells) + '\\n')
`);
  for (const name of ['ld', 'ld_be']) {
    const r = await runCli(['convert', f(`${name}.npy`), f(`${name}.csv`)]);
    assert.is(r.code, 0, r.stderr);
    assert.is(readFileSync(f(`${name}.csv`), 'utf8'), readFileSync(f('ld.str.txt'), 'utf8'), `${name}: each cell is numpy's str()`);
  }
  assert.is((await runCli(['convert', f('ld_rec.npy'), f('ld_rec.csv')])).code, 0);
  assert.is((await runCli(['convert', f('ld_in.csv'), f('ld_in.npy'), '--dtype', '<f16'])).code, 0);
  assert.is((await runCli(['convert', f('ld.csv'), f('ld_back.npy'), '--dtype', '>f16'])).code, 0);
  const verdict = python(`
import warnings
warnings.simplefilter('ignore')
L = np.longdouble
same = lambda a, b: a.shape == b.shape and a.tobytes() == b.tobytes() or (a.shape == b.shape and all((x == y and np.signbit(x) == np.signbit(y)) or (np.isnan(x) and np.isnan(y)) for x, y in zip(a, b)))
values = np.load(${JSON.stringify(f('ld.npy'))})
rec = np.load(${JSON.stringify(f('ld_rec.npy'))})
print(json.dumps({
  'numpy reads the text back': bool(same(np.loadtxt(${JSON.stringify(f('ld.csv'))}, dtype=L), values)),
  'records': bool(all(same(np.loadtxt(${JSON.stringify(f('ld_rec.csv'))}, dtype=rec.dtype, delimiter=',', skiprows=1)[k], rec[k]) for k in ('x', 'y', 'i'))),
  'import is numpy': bool(same(np.load(${JSON.stringify(f('ld_in.npy'))}), np.loadtxt(${JSON.stringify(f('ld_in.csv'))}, dtype=L))),
  'round trip': bool(same(np.load(${JSON.stringify(f('ld_back.npy'))}).astype(L), values)),
}))`);
  assert.equal(JSON.parse(verdict), { 'numpy reads the text back': true, records: true, 'import is numpy': true, 'round trip': true });
});

test('refused, with one line each: 3-d arrays, complex numbers, a delimiter inside a string, bad cells, other names', async () => {
  python(`np.save(${JSON.stringify(f('cube.npy'))}, np.zeros((2, 2, 2))); np.save(${JSON.stringify(f('cplx.npy'))}, np.array([1j])); np.save(${JSON.stringify(f('comma.npy'))}, np.array(['a,b']))
open(${JSON.stringify(f('bad.csv'))}, 'w').write('1,2\\n3,x\\n'); open(${JSON.stringify(f('ragged.csv'))}, 'w').write('1,2\\n3\\n')`);
  for (const [args, pattern] of [
    [['convert', f('cube.npy'), f('cube.csv')], /3 dimensions has no table form/],
    [['convert', f('cplx.npy'), f('cplx.csv')], /complex128 values have no lossless CSV form/],
    [['convert', f('comma.npy'), f('comma.csv')], /holds the delimiter/],
    [['convert', f('bad.csv'), f('bad.npy')], /bad\.csv:2:2: 'x' is not a float64/],
    [['convert', f('ragged.csv'), f('ragged.npy')], /ragged\.csv:2: 1 columns, the first row has 2/],
  ]) {
    const r = await runCli(args);
    assert.is(r.code, 1, `${args.join(' ')}: ${r.stdout}`);
    assert.is(r.stderr.trim().split('\n').length, 1);
    assert.match(r.stderr, pattern);
  }
  assert.is((await runCli(['convert', f('cube.npy'), f('cube.txt')])).code, 2);
  assert.is((await runCli(['convert', f('cube.npy'), f('cube2.npy'), '--dtype', '<f8'])).code, 2);
});

test("import takes numpy's cells and only those: no hex, binary, octal or underscores; # comments (np.savetxt's header) skipped; batches joined exactly", async () => {
  const cells = ['0x10', '0b11', '0o7', '1_000', '1e3', '.5', '5.', '+inf', '-Infinity', 'nan', '1.5e+', '  7 ', '1d3', '0X1p3', '-0'];
  const verdicts = JSON.parse(
    python(`import io
out = {}
for cell in ${JSON.stringify(cells)}:
    for dt in ['<f8', '<i8']:
        try: out[cell + ' ' + dt] = repr(np.loadtxt(io.StringIO(cell + '\\n'), dtype=dt, delimiter=',').item())
        except Exception: out[cell + ' ' + dt] = 'refused'
print(json.dumps(out))`),
  );
  for (const cell of cells) {
    for (const dt of ['<f8', '<i8']) {
      const file = f('cell.csv');
      (await import('node:fs')).writeFileSync(file, `${cell}\n`);
      const r = await runCli(['convert', file, f('cell.npy'), '--dtype', dt]);
      const ours = r.code === 0 ? python(`print(repr(np.load(${JSON.stringify(f('cell.npy'))}).item()))`).trim() : 'refused';
      assert.is(ours, verdicts[`${cell} ${dt}`], `'${cell}' as ${dt}: ${r.stderr}`);
    }
  }
  // The same cells after a first row (rows after the first take the fast path for floats).
  for (const cell of cells) {
    const file = f('cell2.csv');
    (await import('node:fs')).writeFileSync(file, `1\n${cell}\n`);
    const want = python(`import io
try: print(repr(np.loadtxt(io.StringIO('1\\n' + ${JSON.stringify(cell)} + '\\n'), delimiter=',')[1].item()))
except Exception: print('refused')`).trim();
    const r = await runCli(['convert', file, f('cell2.npy')]);
    const ours = r.code === 0 ? python(`print(repr(np.load(${JSON.stringify(f('cell2.npy'))})[1].item()))`).trim() : 'refused';
    assert.is(ours, want, `'${cell}' on the second row: ${r.stderr}`);
  }
  // CRLF, spaces around cells, empty and comment lines, and rows numpy refuses after the first: the
  // wrong width, a cell it cannot read, a line of spaces (numpy skips only empty lines).
  const fs = await import('node:fs');
  fs.writeFileSync(f('mixed.csv'), '1,2\r\n  3 , 4\n\n5,6 # c\n# x\nnan,-inf\r\n\r\n7,8');
  const rm = await runCli(['convert', f('mixed.csv'), f('mixed.npy')]);
  assert.is(rm.code, 0, rm.stderr);
  assert.is(
    python(
      `a = np.load(${JSON.stringify(f('mixed.npy'))}); b = np.loadtxt(${JSON.stringify(f('mixed.csv'))}, delimiter=','); print(a.shape == b.shape and np.array_equal(a, b, equal_nan=True))`,
    ).trim(),
    'True',
  );
  for (const [text, where] of [
    ['1,2\n3\n', 'mixed.csv:2'],
    ['1,2\n3,4,5\n', 'mixed.csv:2'],
    ['1,2\n3,0x10\n', 'mixed.csv:2:2'],
    ['1,2\n \t\n3,4\n', 'mixed.csv:2'],
    ['1\n   \n2\n', 'mixed.csv:2'],
  ]) {
    fs.writeFileSync(f('mixed.csv'), text);
    const bad = await runCli(['convert', f('mixed.csv'), f('mixed.npy')]);
    assert.is(bad.code, 1, text);
    assert.ok(bad.stderr.includes(where), `${JSON.stringify(text)}: ${bad.stderr}`);
  }
  // np.savetxt with a header writes '# a,b' first; comments may also end a line. 10 000 rows span several batches.
  python(`a = np.arange(20000.0).reshape(10000, 2) / 7; np.savetxt(${JSON.stringify(f('commented.csv'))}, a, delimiter=',', header='a,b', fmt='%.17g')
open(${JSON.stringify(f('commented.csv'))}, 'a').write('1,2 # a note\\n# the end\\n')`);
  const r = await runCli(['convert', f('commented.csv'), f('commented.npy')]);
  assert.is(r.code, 0, r.stderr);
  assert.is(
    python(`want = np.loadtxt(${JSON.stringify(f('commented.csv'))}, delimiter=',')
got = np.load(${JSON.stringify(f('commented.npy'))})
print(got.shape, np.array_equal(got, want))`).trim(),
    '(10001, 2) True',
  );
});

test("CSV import and export stream: memory stays far below the data for a 60 MB table, both ways, and the results are numpy's", () => {
  const npy = f('wide.npy');
  python(`rng = np.random.default_rng(7); np.save(${JSON.stringify(npy)}, rng.standard_normal((400_000, 8)))`);
  const cli = join(process.cwd(), 'packages/cli/dist/main.js');
  const run = (args) =>
    boundedChild(
      dir,
      `import { main } from ${JSON.stringify(cli)};
let err = '';
const code = await main(${JSON.stringify(args)}, { stdout: () => {}, stderr: (s) => { err += s; } });
globalThis.result = { code, err };`,
      { timeoutMs: 120_000, maxOldSpaceMiB: 512 },
    );
  const out = run(['convert', npy, f('wide.csv')]);
  assert.is(out.code, 0, out.err);
  const back = run(['convert', f('wide.csv'), f('wide.back.npy')]);
  assert.is(back.code, 0, back.err);
  const bytes = (name) => readFileSync(f(name)).length / 2 ** 20;
  for (const [what, r] of [
    ['export', out],
    ['import', back],
  ])
    assert.ok(r.rssMiB < 200, `${what}: peak ${r.rssMiB.toFixed(0)} MiB for ${bytes('wide.csv').toFixed(0)} MB of text`);
  assert.is(
    python(`a = np.load(${JSON.stringify(npy)}); b = np.load(${JSON.stringify(f('wide.back.npy'))})
t = np.loadtxt(${JSON.stringify(f('wide.csv'))}, delimiter=',')
print(np.array_equal(a, b), np.array_equal(a, t))`).trim(),
    'True True',
  );
});

test('a table of two rows of 1.1 M columns imports as numpy reads it, reserving no more rows than it has', () => {
  const csv = f('two-rows.csv');
  python(`np.savetxt(${JSON.stringify(csv)}, (np.arange(2_200_000) % 10).reshape(2, 1_100_000), delimiter=',', fmt='%d')`);
  const cli = join(process.cwd(), 'packages/cli/dist/main.js');
  const r = boundedChild(
    dir,
    `import { main } from ${JSON.stringify(cli)};
let err = '';
const code = await main(${JSON.stringify(['convert', csv, f('two-rows.npy')])}, { stdout: () => {}, stderr: (s) => { err += s; } });
globalThis.result = { code, err };`,
    { timeoutMs: 60_000, maxOldSpaceMiB: 512 },
  );
  assert.is(r.code, 0, r.err);
  // 4096 rows reserved ahead at this width would be 4.5 G cells: more than one typed array can hold.
  assert.ok(r.rssMiB < 300, `peak ${r.rssMiB.toFixed(0)} MiB`);
  assert.is(python(`print(np.array_equal(np.load(${JSON.stringify(f('two-rows.npy'))}), np.loadtxt(${JSON.stringify(csv)}, delimiter=',')))`).trim(), 'True');
});

// The round trip as a property: every array that export writes comes back from import exactly (the
// same dtype, shape and values), or export refuses it with one line; numpy's loadtxt reads what was
// written as import does.
const specials = ['#', ',', '\t', '"', "'", ' ', '\r', '\n', '', 'é', '\u00ff', '\ud83d\ude00', '\ud800', '\\', '\u0000', 'nan', 'inf', '-'];
const text = (max) =>
  fc.array(fc.oneof(fc.constantFrom(...specials), fc.string({ unit: 'binary', maxLength: 2 })), { maxLength: max }).map((p) => p.join('').slice(0, max));
const latin = (max) => fc.array(fc.integer({ min: 1, max: 255 }), { maxLength: max }).map((b) => Uint8Array.from(b));
const kinds = {
  '<f8': fc.double(),
  '<f4': fc.float().map(Math.fround),
  '<i8': fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  '|u1': fc.integer({ min: 0, max: 255 }),
  '|b1': fc.boolean(),
  '<U4': text(4),
  '|S3': latin(3),
};
const recordDescr = [
  ['a b', '<U3'],
  ['n', '<i8'],
  ['x', '<f8'],
];
const anArray = fc.oneof(
  fc.constantFrom(...Object.keys(kinds)).chain((descr) =>
    fc.oneof(
      fc.array(kinds[descr], { maxLength: 6 }).map((values) => ({ descr, shape: [values.length], values })),
      fc
        .tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 3 }))
        .chain(([r, c]) => fc.array(kinds[descr], { minLength: r * c, maxLength: r * c }).map((values) => ({ descr, shape: [r, c], values }))),
    ),
  ),
  fc
    .array(fc.record({ 'a b': text(3), n: kinds['<i8'], x: kinds['<f8'] }), { maxLength: 4 })
    .map((values) => ({ descr: recordDescr, shape: [values.length], values })),
  // A field name that holds what the header line cannot.
  fc.constantFrom('a#b', 'a,b', 'a\nb', '').map((name) => ({
    descr: [
      [name, '<i4'],
      ['z', '<i4'],
    ],
    shape: [1],
    values: [{ [name]: 1, z: 2 }],
  })),
);

test('CSV and TSV round trips are exact or refused: dtypes, strings with every special character, empty and zero-size shapes (fast-check), and numpy reads what was written as import does', async () => {
  let n = 0;
  const written = [];
  await fc.assert(
    fc.asyncProperty(anArray, fc.constantFrom('csv', 'tsv'), async ({ descr, shape, values }, ext) => {
      const a = arrayFromValues(values, descr, { shape });
      const npy = f(`prop-${n}.npy`);
      const table = f(`prop-${n}.${ext}`);
      const back = f(`prop-${n}.back.npy`);
      n++;
      saveNpySync(npy, a);
      const out = await runCli(['convert', npy, table]);
      if (out.code !== 0) {
        assert.is(out.code, 1, out.stderr);
        assert.is(out.stderr.trim().split('\n').length, 1, out.stderr);
        assert.match(out.stderr, /^npyts: error: /);
        return;
      }
      const descrText = typeof descr === 'string' ? descr : `[${descr.map(([k, t]) => `(${JSON.stringify(k)}, '${t}')`).join(', ')}]`;
      const r = await runCli(['convert', table, back, '--dtype', descrText]);
      assert.is(r.code, 0, `${table}: ${r.stderr}`);
      const got = loadNpySync(back);
      assert.is(got.dtype.str, a.dtype.str, `${table}: dtype`);
      assert.equal(got.shape, a.shape, `${table}: shape ${JSON.stringify(got.shape)} for ${JSON.stringify(a.shape)}`);
      assert.ok(sameBytes(got, a), `${table}: values differ`);
      if (written.length < 60) written.push([npy, table, descrText, ext]);
    }),
    { seed: 39, numRuns: 300 },
  );
  // numpy's loadtxt reads the same arrays from the same text (floats exactly; the other dtypes as written).
  const checked = JSON.parse(
    python(`
out = []
for npy, table, descr, ext in ${JSON.stringify(written)}:
    a = np.load(npy)
    d = eval(descr) if descr.startswith('[') else descr
    try:
        b = np.loadtxt(table, delimiter=',' if ext == 'csv' else '\t', dtype=d, encoding='utf-8', skiprows=1 if a.dtype.names else 0, ndmin=a.ndim, comments='#')
        same = b.shape == a.shape and (a.size == 0 or (np.array_equal(a, b, equal_nan=True) if a.dtype.names is None and a.dtype.kind == 'f' else bool((a == b).all())))
    except Exception as e:
        same = repr(e)
    out.append([table, same])
print(json.dumps(out))`),
  );
  assert.ok(checked.length > 20, `only ${checked.length} arrays were written`);
  assert.equal(
    checked.filter(([, same]) => same !== true),
    [],
  );
});

/** Whether two arrays hold the same bytes (NaN payloads and -0 included). */
function sameBytes(x, y) {
  const bytes = (a) => new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength);
  const [p, q] = [bytes(x), bytes(y)];
  return p.length === q.length && p.every((v, i) => v === q[i]);
}

test.run();
