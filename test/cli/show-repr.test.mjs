// `npyts show` prints numpy 2's repr exactly for numbers, booleans and text: notation and padding of
// floats of every width, line wrapping at 75 columns, summaries past 1000 elements with the shape,
// dtype suffixes; and it reads only the elements it shows.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { cliBin, python, runCli, scratch, writeJSON } from '../helpers/numpy.mjs';
import { spawnSync } from 'node:child_process';

const dir = scratch();
const arrays = {
  f8_small: 'np.array([0.5, 1.0, 2.25])',
  f8_rounding: 'rng.standard_normal(20)',
  f8_ties: 'np.array([1/512, 3/512, 0.125, 1.0])',
  f8_sci_small: 'np.array([1e-5, 1.5e-5, np.nan, -2e-7])',
  f8_sci_large: 'np.array([1e10, -1.0, np.inf, -np.inf, 123456789.0])',
  f8_ratio: 'np.array([0.001, 5.0, -3.0])',
  f8_negzero: 'np.array([-0.0, 0.0, 1.5])',
  f8_nan_only: 'np.array([np.nan, np.inf])',
  f8_wide: 'rng.standard_normal((4, 13)) * 1000',
  f4: 'rng.standard_normal(12).astype(np.float32)',
  f4_thirds: 'np.arange(10, dtype=np.float32) / 3',
  f2: 'np.linspace(-2, 2, 9).astype(np.float16)',
  f8_be_F: "np.asfortranarray(np.arange(12.0).reshape(3, 4) / 7).astype('>f8')",
  f8_summary_1d: 'np.arange(2000.0)',
  f8_threshold_1000: 'np.arange(1000.0)',
  f8_threshold_1001: 'np.arange(1001.0)',
  f8_summary_2d: 'np.arange(2000.0).reshape(40, 50) / 3',
  f8_summary_3d: 'rng.standard_normal((10, 20, 30))',
  i8: 'np.arange(-5, 40)',
  i2: 'np.arange(30, dtype=np.int16) * -300',
  u1: 'np.arange(256, dtype=np.uint8).reshape(16, 16)',
  u8_big: 'np.array([0, 2**63, 2**64 - 1], dtype=np.uint64)',
  i4_summary: 'np.arange(5000, dtype=np.int32).reshape(50, 100)',
  bool: 'np.array([[True, False, True], [False, False, True]])',
  c16: 'np.array([1+2j, 3.5-1j, -0.25j, np.nan + 1j])',
  c8: 'np.array([1+2j, 1e-6 + 3j], dtype=np.complex64)',
  U: "np.array(['a', 'bc', \"it's\", 'é'])",
  S: "np.array([b'x', b'yz', b'\\x00q'])",
  zero_d: 'np.float64(2.5)',
  zero_d_f4: 'np.array(3.25, dtype=np.float32)',
  zero_d_int: 'np.array(7)',
  empty_1d: 'np.zeros(0)',
  empty_2d: 'np.zeros((2, 0), dtype=np.int16)',
  long_row_ints: 'np.arange(10**6, 10**6 + 40)',
  f4_sci_columns: 'np.arange(4000 * 3000, dtype=np.float32).reshape(4000, 3000) / 7',
  f4_ties: 'np.array([2**-14, 1713000.25, 1.5, 3e-5], dtype=np.float32)',
  f2_sci: 'np.array([1e-4, 0.5, 65504, np.nan], dtype=np.float16)',
  f8_sci_fill: 'np.array([1e-5, 1.23456789012e-5, 1/3 * 1e9])',
  f4_random_sci: '(rng.standard_normal(50) * 10.0 ** rng.integers(-8, 8, 50)).astype(np.float32)',
  f8_random_sci: 'rng.standard_normal(50) * 10.0 ** rng.integers(-12, 12, 50)',
};

test('the printout after the info line is numpy\'s repr, for every case', async () => {
  const files = Object.fromEntries(Object.keys(arrays).map((k) => [k, join(dir, `${k}.npy`)]));
  python(`rng = np.random.default_rng(7)\n${Object.entries(arrays).map(([k, e]) => `np.save(${JSON.stringify(files[k])}, ${e})`).join('\n')}`);
  const reprs = JSON.parse(python(`print(json.dumps({k: repr(np.load(f)) for k, f in json.load(open(${JSON.stringify(writeJSON(join(dir, 'files.json'), files))})).items()}))`));
  const wrong = [];
  for (const [name, file] of Object.entries(files)) {
    const r = await runCli(['show', file]);
    assert.is(r.code, 0, r.stderr);
    const ours = r.stdout.split('\n').slice(1).join('\n').replace(/\n$/, '');
    if (ours !== reprs[name]) wrong.push(`${name}:\nours:\n${ours}\nnumpy:\n${reprs[name]}`);
  }
  assert.equal(wrong, []);
});

test('a summarised printout reads only the rows it shows: a 64 MiB file prints with a few KiB read', () => {
  const file = join(dir, 'big.npy');
  python(`np.save(${JSON.stringify(file)}, np.arange(2**23, dtype='<f8').reshape(2**12, 2**11))`);
  // strace would be exact; the process's read counter (rchar) is enough to tell a few KiB from 64 MiB.
  const r = spawnSync(process.execPath, ['-e', `
    const { execFileSync } = require('node:child_process');
    const fs = require('node:fs');
    const before = Number(/rchar: (\\d+)/.exec(fs.readFileSync('/proc/self/io', 'utf8'))[1]);
    import(${JSON.stringify(cliBin.replace(/bin\/npyts\.js$/, 'dist/main.js'))}).then(async ({ main }) => {
      let out = '';
      await main(['show', ${JSON.stringify(file)}], { stdout: (s) => { out += s; }, stderr: () => {} });
      const after = Number(/rchar: (\\d+)/.exec(fs.readFileSync('/proc/self/io', 'utf8'))[1]);
      console.log(JSON.stringify({ read: after - before, out }));
    });`], { encoding: 'utf8' });
  const { read, out } = JSON.parse(r.stdout);
  assert.ok(read < 1 << 20, `read ${read} bytes`);
  assert.is(out.split('\n').slice(1).join('\n').trim(), python(`print(repr(np.load(${JSON.stringify(file)})))`).trim());
});

test.run();
