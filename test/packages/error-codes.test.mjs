// Every NpyError code has a doc line (what TypeDoc lists under NpyErrorCode) and is thrown somewhere:
// a code nobody throws, or one that users cannot look up, is a bug of the API.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, readdirSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import * as esm from '@npyts/core';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const errors = readFileSync(join(root, 'packages/core/src/errors.ts'), 'utf8');
const union = errors.slice(errors.indexOf('export type NpyErrorCode ='), errors.indexOf(';', errors.indexOf('export type NpyErrorCode =')));
const codes = [...union.matchAll(/\|\s*'([A-Z_0-9]+)'/g)].map((m) => m[1]);

function sources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? sources(join(dir, d.name)) : d.name.endsWith('.ts') && !d.name.endsWith('.d.ts') ? [join(dir, d.name)] : [],
  );
}

test('every error code has a doc line of its own', () => {
  assert.ok(codes.length > 40, `${codes.length} codes found`);
  const undocumented = codes.filter((code) => !new RegExp(`\\*/\\s*\\|\\s*'${code}'`).test(union));
  assert.equal(undocumented, []);
});

test('every error code is thrown somewhere in the packages', () => {
  const text = ['core', 'tfjs-adapter', 'stdlib-adapter', 'cli']
    .flatMap((p) => sources(join(root, 'packages', p, 'src')))
    .filter((f) => !f.endsWith('errors.ts'))
    .map((f) => readFileSync(f, 'utf8'))
    .join('\n');
  const unused = codes.filter((code) => !text.includes(`'${code}'`));
  assert.equal(unused, []);
});

test('an NpyError of the ESM build is instanceof the CommonJS NpyError and back, in one process; other errors are not', () => {
  const cjs = createRequire(import.meta.url)('@npyts/core');
  assert.is.not(cjs.NpyError, esm.NpyError, 'one build: the test would prove nothing');
  const thrown = (decode) => {
    try {
      decode(new Uint8Array(3));
    } catch (e) {
      return e;
    }
  };
  const fromEsm = thrown(esm.decodeNpy);
  const fromCjs = thrown(cjs.decodeNpy);
  assert.ok(fromEsm instanceof cjs.NpyError && fromCjs instanceof esm.NpyError);
  assert.ok(fromEsm instanceof esm.NpyError && fromCjs instanceof cjs.NpyError);
  assert.ok(fromEsm instanceof Error);
  for (const other of [new Error('x'), new TypeError('x'), {}, null, 'NpyError', { code: 'TRUNCATED', name: 'NpyError' }]) {
    assert.not.ok(other instanceof esm.NpyError || other instanceof cjs.NpyError, String(other));
  }
});

test.run();
