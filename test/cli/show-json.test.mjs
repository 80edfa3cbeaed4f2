// `npyts show --json` of .npy files of any size: written as region reads come in, equal to numpy's
// values across block boundaries, orders, byte orders and dtypes; `--limit`; memory that does not
// grow with the file, also through a pipe to a slow reader.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeFileSync } from 'node:fs';
import { cliBin, python, runCli, scratch } from '../helpers/numpy.mjs';

const dir = scratch();
const peakHook = join(dirname(fileURLToPath(import.meta.url)), '..', 'helpers', 'peak-rss.cjs');

/** Run the CLI in a child with a pipe for stdout, read as slowly as `delayMs` per chunk asks. */
function run(args, delayMs = 0) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-r', peakHook, cliBin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [];
    let err = '';
    child.stdout.on('data', (c) => {
      out.push(c);
      if (delayMs) {
        child.stdout.pause();
        setTimeout(() => child.stdout.resume(), delayMs);
      }
    });
    child.stderr.on('data', (c) => {
      err += c;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout: Buffer.concat(out).toString('utf8'), peak: Number(/peak-rss: (\d+)/.exec(err)?.[1]), stderr: err }));
  });
}

const cases = {
  // Each crosses the 64 Ki-element blocks in another way.
  long_rows: "np.arange(3 * 70001, dtype='<f8').reshape(3, 70001) / 7",
  many_rows: "np.arange(200 * 1000, dtype='>i4').reshape(200, 1000)",
  three_d: "np.asfortranarray(np.arange(2 * 300 * 300, dtype='<f4').reshape(2, 300, 300) / 3)",
  strings: "np.array([['x' * (i % 5), 'é'] for i in range(40000)])",
  records: "np.array([(i, i / 2) for i in range(70000)], dtype=[('a', '<i8'), ('b', '>f8')])",
  empty: 'np.zeros((4, 0, 3))',
  // Datetimes as numpy's ISO 8601 text in their unit, across blocks (compared with datetime_as_string).
  times: "np.array(['2024-02-29T12:00:00.125', 'NaT', '1969-12-31T23:59:59.999'] * 30000, dtype='>M8[ms]')",
};

test("the streamed document equals numpy's values across blocks, orders, byte orders, strings and records", async () => {
  for (const [name, expr] of Object.entries(cases)) {
    const file = join(dir, `${name}.npy`);
    python(`np.save(${JSON.stringify(file)}, ${expr})`);
    const r = await run(['show', '--json', file]);
    assert.is(r.code, 0, r.stderr);
    writeFileSync(join(dir, `${name}.json`), r.stdout);
    const same = python(`
a = np.load(${JSON.stringify(file)})
d = json.load(open(${JSON.stringify(join(dir, `${name}.json`))}))
got, want = d['data'], a.tolist()
if a.dtype.names:   # records are objects by field name in the document, tuples in tolist()
    got, want = [[r[n] for n in a.dtype.names] for r in got], [list(r) for r in want]
if a.dtype.kind == 'M':   # made native first: datetime_as_string misreads big-endian values (numpy's bug)
    want = np.datetime_as_string(a.astype(a.dtype.newbyteorder('='))).tolist()
print(got == want and d['shape'] == list(a.shape))`).trim();
    assert.is(same, 'True', name);
  }
});

test("long doubles: a number where a float64 holds the value, else numpy's str() of it, which numpy reads back exactly (never rounded to a float64)", async () => {
  const file = join(dir, 'ld.npy');
  const recFile = join(dir, 'ld-rec.npy');
  python(`
L = np.longdouble
fi = np.finfo(L)
rng = np.random.default_rng(4)
vals = [L('1e400'), L(1) / 3, L(2.5), L(0.1), L('0.1'), fi.max, -fi.max, fi.smallest_subnormal, L(2) ** -1074, L(2) ** -1075, L(2) ** 1023, L(2) ** 1024, -L(0), np.inf, np.nan]
vals += list(L(m) * L(2) ** int(e) for m, e in zip(rng.integers(1, 2**63, 2000), rng.integers(-16400, 16300, 2000)))
np.save(${JSON.stringify(file)}, np.array(vals, dtype='>f16').reshape(-1, 5))
rec = np.zeros(3, [('x', '<f16'), ('z', '<c32'), ('s', '<f16', (2,))])
rec['x'], rec['z'], rec['s'] = vals[:3], [complex(1, 2), 0, 1j], [[vals[0], 1], [vals[1], 2], [3, vals[5]]]
rec['z'][0] += vals[0]
np.save(${JSON.stringify(recFile)}, rec)`);
  for (const f of [file, recFile]) {
    const r = await run(['show', '--json', f]);
    assert.is(r.code, 0, r.stderr);
    writeFileSync(`${f}.json`, r.stdout);
  }
  const verdict = python(`
L = np.longdouble
def back(v):
    # A JSON number is a float64 (exact as a long double); a string is read as numpy reads text.
    return L(float(v)) if isinstance(v, (int, float)) else L(v)
def same(x, y):
    # (JSON.stringify writes -0 as 0, for every float dtype alike: the sign of a zero is not compared.)
    return (np.isnan(x) and np.isnan(y)) or (x == y and (x == 0 or np.signbit(x) == np.signbit(y)))
a = np.load(${JSON.stringify(file)}).ravel()
d = json.load(open(${JSON.stringify(`${file}.json`)}))['data']
flat = [v for row in d for v in row]
# A number only where a float64 holds the value exactly; a string otherwise (and for NaN, inf).
numbers_exact = all(L(float(v)) == x for v, x in zip(flat, a) if isinstance(v, (int, float)))
strings_needed = all(isinstance(v, str) for v, x in zip(flat, a) if np.isfinite(x) and L(float(x)) != x)
rec = np.load(${JSON.stringify(recFile)})
rd = json.load(open(${JSON.stringify(`${recFile}.json`)}))['data']
rec_ok = all(same(back(r['x']), x['x']) and same(back(r['z'][0]), x['z'].real) and same(back(r['z'][1]), x['z'].imag)
             and all(same(back(u), w) for u, w in zip(r['s'], x['s'])) for r, x in zip(rd, rec))
print(json.dumps({'count': len(flat) == len(a), 'exact': all(same(back(v), x) for v, x in zip(flat, a)), 'numbers': numbers_exact, 'strings': strings_needed, 'records': rec_ok}))`);
  assert.equal(JSON.parse(verdict), { count: true, exact: true, numbers: true, strings: true, records: true });
});

test('--limit N: the first N elements in row-major order, flat', async () => {
  const file = join(dir, 'three_d.npy');
  const r = await run(['show', '--json', '--limit', '70000', file]);
  const d = JSON.parse(r.stdout);
  assert.is(d.limit, 70000);
  writeFileSync(join(dir, 'limit.json'), JSON.stringify(d.data));
  assert.is(
    python(`print(json.load(open(${JSON.stringify(join(dir, 'limit.json'))})) == np.load(${JSON.stringify(file)}).ravel()[:70000].tolist())`).trim(),
    'True',
  );
  const bad = await run(['show', '--limit', '5', file]);
  assert.is(bad.code, 2);
});

test('memory does not grow with the file: 8 MiB and 64 MiB of float64, the larger one read by a slow pipe', async () => {
  const small = join(dir, 'small.npy');
  const large = join(dir, 'large.npy');
  python(`np.save(${JSON.stringify(small)}, np.arange(2**20) / 3); np.save(${JSON.stringify(large)}, np.arange(2**23) / 3)`);
  const a = await run(['show', '--json', small]);
  const b = await run(['show', '--json', large], 1);
  assert.is(a.code, 0);
  assert.is(b.code, 0, b.stderr);
  assert.ok(b.stdout.length > 100e6, `${b.stdout.length} characters`);
  const grew = (b.peak - a.peak) / 2 ** 20;
  console.log(`      peak RSS: ${(a.peak / 2 ** 20).toFixed(0)} MiB for 8 MiB, ${(b.peak / 2 ** 20).toFixed(0)} MiB for 64 MiB through a slow pipe`);
  // Reading the file whole would add its 56 MiB more data (and far more JSON text); garbage collection
  // timing under a loaded machine moves the peaks by tens of MiB, so the bound sits below the data.
  assert.ok(grew < 40, `the peak grew by ${grew.toFixed(0)} MiB for 56 MiB more file`);
});

test('show --json reads a format-1.0 header with Python 2 L suffixes, as numpy, show and info do (one header reader)', async () => {
  const file = join(scratch(), 'py2.npy');
  const expected = python(`import struct
h = b"{'descr': '<i8', 'fortran_order': False, 'shape': (2L, 3L), }"
h += b' ' * (64 - 10 - len(h) - 1) + b'\\n'
open(${JSON.stringify(file)}, 'wb').write(b'\\x93NUMPY\\x01\\x00' + struct.pack('<H', len(h)) + h + np.arange(6, dtype='<i8').tobytes())
import warnings
warnings.simplefilter('ignore')
a = np.load(${JSON.stringify(file)})
print(json.dumps({'shape': list(a.shape), 'data': a.tolist()}))`);
  const r = await runCli(['show', '--json', file]);
  assert.is(r.code, 0, r.stderr);
  const doc = JSON.parse(r.stdout);
  assert.equal({ shape: doc.shape, data: doc.data }, JSON.parse(expected));
  assert.is(doc.descr, '<i8');
});

test.run();
