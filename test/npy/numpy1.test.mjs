// Object arrays across numpy generations: numpy 1.x (run from a wheel on disk, extracted, not
// installed) reads what our encoder writes, and we read the object arrays numpy 1.x writes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { NdArray, parseDescr, arrayFromValues, readHeader, decodeNpy } from '@npyts/core';
import { npyDocument, pythonJSON } from '@npyts/core/plumbing';
import { pickleCodec, PyComplex, PyDecimal } from '@npyts/core/pickle';
import { saveNpySync } from '@npyts/core/node';
import { scratch, writeJSON } from '../helpers/numpy.mjs';

const wheelDirs = ['/opt/pypi/files', '/opt/pypi-more/files'].filter(existsSync);
const wheels = wheelDirs.flatMap((d) =>
  readdirSync(d)
    .filter((f) => /^numpy-1\.\d+\.\d+-cp311-.*\.whl$/.test(f))
    .map((f) => join(d, f)),
);
const versions = [...new Map(wheels.map((w) => [/numpy-(1\.\d+\.\d+)/.exec(w)[1], w])).entries()].sort();
const script = join(new URL('.', import.meta.url).pathname, '..', 'helpers', 'npyfixtures.py');
const dir = scratch();

function withNumpy(version, wheel, args) {
  const site = join(tmpdir(), `npyts-numpy-${version}`);
  if (!existsSync(join(site, 'numpy'))) {
    mkdirSync(site, { recursive: true });
    execFileSync('python3', ['-m', 'zipfile', '-e', wheel, site]);
  }
  return execFileSync('python3', ['-W', 'ignore', script, ...args], { encoding: 'utf8', env: { ...process.env, PYTHONPATH: site }, maxBuffer: 1 << 28 });
}

const values = [
  null,
  true,
  7,
  2n ** 70n,
  1.5,
  'é整',
  new Uint8Array([1, 255]),
  [1, [2]],
  { k: 'v' },
  new Set([3]),
  new PyComplex(1, -1),
  new PyDecimal('2.50'),
  arrayFromValues(
    [
      [1, 2],
      [3, 4],
    ],
    '>i4',
  ),
  arrayFromValues([0.5], '<f4'),
];
const ours = new NdArray(parseDescr('|O'), [values.length], values);
const expect = { dtype: '|O', shape: [values.length], data: pythonJSON(ours.toList(), 0, new Set()) };

if (versions.length === 0) {
  test.skip('numpy 1.x compatibility (no numpy 1.x wheel on this machine)', () => {});
} else {
  for (const [version, wheel] of versions) {
    test(`numpy ${version} loads our object arrays, and we load its own`, () => {
      const v = withNumpy(version, wheel, ['--version-probe']).trim();
      assert.is(v, version);
      const file = join(dir, `ours-${version}.npy`);
      saveNpySync(file, ours);
      const [r] = JSON.parse(withNumpy(version, wheel, ['check-objects', writeJSON(join(dir, `spec-${version}.json`), [{ file, expect }])]));
      assert.ok(r.ok, JSON.stringify(r.got));
      const made = JSON.parse(withNumpy(version, wheel, ['objects', join(dir, `np${version}`)]));
      for (const { name, file: theirs, doc } of made) {
        const bytes = readFileSync(theirs);
        assert.equal(npyDocument(readHeader(bytes), decodeNpy(bytes, { pickle: pickleCodec })), doc, `${version} ${name}`);
      }
    });
  }
}

test.run();
