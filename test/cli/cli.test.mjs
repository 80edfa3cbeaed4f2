// The npyts command's human output: info lines and JSON, and the numpy-like printout.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { python, runCli, scratch } from '../helpers/numpy.mjs';

const dir = scratch();
const arrays = {
  i4: "np.arange(6, dtype='<i4').reshape(2, 3)",
  i8: 'np.arange(4).reshape(2, 2)',
  f8: 'np.array([0.5, 1.0, -2.25])',
  b1: 'np.array([True, False])',
  f4_F: "np.asfortranarray(np.arange(6, dtype='<f4').reshape(2, 3))",
  big: "np.arange(2000, dtype='<i2').reshape(40, 50)",
  rec: "np.zeros(2, [('a', '<i4'), ('b', 'S2')])",
};
const facts = JSON.parse(
  python(`
import numpy as np
out = {}
for name, expr in ${JSON.stringify(arrays)}.items():
    a = eval(expr)
    path = ${JSON.stringify(dir)} + '/' + name + '.npy'
    np.save(path, a)
    with open(path, 'rb') as fh:
        v = np.lib.format.read_magic(fh)
    out[name] = {'path': path, 'repr': repr(a), 'shape': list(a.shape), 'descr': np.lib.format.dtype_to_descr(a.dtype), 'name': a.dtype.name,
                 'fortran': bool(a.flags.f_contiguous and not a.flags.c_contiguous), 'nbytes': a.nbytes, 'version': list(v)}
print(json.dumps(out))
`),
);

test("info --json gives numpy's header facts", async () => {
  for (const f of Object.values(facts)) {
    const r = await runCli(['info', '--json', f.path]);
    assert.is(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout);
    assert.equal([doc.shape, doc.dtype, doc.fortran_order, doc.data_bytes, doc.version], [f.shape, f.name, f.fortran, f.nbytes, f.version]);
    if (typeof f.descr === 'string') assert.is(doc.descr, f.descr);
  }
});

test('info --ts prints a descr constant that loadNpy takes as expect, for scalars, records, padding, titles and subarrays, and archive members', async () => {
  const { loadNpySync, openNpzSync } = await import('@npyts/core/node');
  python(`
dt = np.dtype({'names': ['a', 'b', 'pos'], 'titles': [None, 'Title', None], 'formats': ['<i2', ('<f4', (2,)), [('x', '>f8'), ('y', 'u1')]], 'offsets': [0, 4, 16], 'itemsize': 40})
np.save(${JSON.stringify(join(dir, 'ts-rec.npy'))}, np.zeros(3, dt))
np.savez(${JSON.stringify(join(dir, 'ts.npz'))}, **{'w-1': np.zeros(2, '>i8'), 'names': np.array(['ab'], 'U3')})
`);
  // The constant as a value: what follows "= " up to " as const;".
  const constants = (text) => [...text.matchAll(/^export const (\w+) = (.*) as const;$/gm)].map((m) => [m[1], JSON.parse(m[2].replace(/'/g, '"'))]);
  const r = await runCli(['info', '--ts', join(dir, 'ts-rec.npy'), facts.f4_F.path]);
  assert.is(r.code, 0, r.stderr);
  const [[recName, rec], [fName, f]] = constants(r.stdout);
  assert.equal([recName, fName], ['tsRecDescr', 'f4FDescr']);
  assert.ok(r.stdout.includes('shape (3,), C order'), r.stdout);
  loadNpySync(join(dir, 'ts-rec.npy'), { expect: rec });
  loadNpySync(facts.f4_F.path, { expect: f });
  const z = await runCli(['info', '--ts', join(dir, 'ts.npz')]);
  const members = constants(z.stdout);
  assert.equal(
    members.map(([n]) => n),
    ['w1Descr', 'namesDescr'],
  );
  const archive = openNpzSync(join(dir, 'ts.npz'));
  archive.getSync('w-1', { expect: members[0][1] });
  archive.getSync('names', { expect: members[1][1] });
  archive.close();
  const twice = await runCli(['info', '--ts', facts.i4.path, facts.i4.path]);
  assert.equal(
    constants(twice.stdout).map(([n]) => n),
    ['i4Descr', 'i4Descr2'],
  );
  const both = await runCli(['info', '--ts', '--json', facts.i4.path]);
  assert.is(both.code, 2);
});

test('info prints one line per file', async () => {
  const r = await runCli(['info', facts.i4.path, facts.f4_F.path]);
  const lines = r.stdout.trim().split('\n');
  assert.is(lines.length, 2);
  assert.match(lines[0], /'<i4' \(int32, little-endian 32-bit signed integer\), shape \(2, 3\), C order, format 1\.0, 24 data bytes/);
  assert.match(lines[1], /Fortran \(F\) order/);
});

test("show prints what numpy's repr prints for plain arrays", async () => {
  for (const name of ['i4', 'i8', 'f8', 'b1', 'f4_F']) {
    const r = await runCli(['show', facts[name].path]);
    assert.is(r.code, 0, r.stderr);
    const body = r.stdout.split('\n').slice(1).join('\n').trim();
    assert.is(body, facts[name].repr, name);
  }
});

test('show summarises large arrays with ... like numpy', async () => {
  const r = await runCli(['show', facts.big.path]);
  const body = r.stdout.split('\n').slice(1).join('\n');
  assert.match(body, /\.\.\./);
  assert.ok(body.length < 2000, 'summarised output stays short');
  assert.is(body.trim(), python(`print(repr(np.load(${JSON.stringify(facts.big.path)})))`).trim(), "numpy 2's repr, with its shape=(…) suffix");
});

test('show prints records', async () => {
  const r = await runCli(['show', facts.rec.path]);
  // numpy's repr, 'S2' without the byte-order mark inside the record's dtype.
  assert.is(r.stdout.split('\n').slice(1).join('\n').trim(), python(`print(repr(np.load(${JSON.stringify(facts.rec.path)})))`).trim());
  assert.match(r.stdout, /dtype=\[\('a', '<i4'\), \('b', 'S2'\)\]/);
});

test('- reads standard input and writes standard output', async () => {
  const { main } = await import('@npyts/cli/dist/main.js');
  const input = readFileSync(facts.i4.path);
  let out = new Uint8Array(0);
  let text = '';
  const io = {
    stdout: (s) => {
      text += s;
    },
    stderr: () => {},
    stdin: () => input,
    stdoutBytes: (b) => {
      out = b;
    },
  };
  assert.is(await main(['convert', '-', '-', '--order', 'F'], io), 0);
  const back = JSON.parse(
    python(
      `import sys, io; a = np.load(io.BytesIO(bytes.fromhex(${JSON.stringify(Buffer.from(out).toString('hex'))}))); print(json.dumps({'v': a.tolist(), 'f': bool(a.flags.f_contiguous)}))`,
    ),
  );
  assert.equal(back, {
    v: [
      [0, 1, 2],
      [3, 4, 5],
    ],
    f: true,
  });
  assert.is(await main(['show', '--json', '-'], io), 0);
  assert.equal(JSON.parse(text).data, [
    [0, 1, 2],
    [3, 4, 5],
  ]);
});

void join;
test.run();
