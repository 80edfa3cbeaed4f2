// The steps of io/steps.ts are typed: an operation declares the steps it yields, each step's result is
// typed, and a driver is given only operations whose steps it performs. test/io/steps-types/guard.ts
// holds operations that drivers must refuse (`// @ts-expect-error` lines, which tsc reports when they
// are not errors) and ones they must take; it is compiled here with the Go port of TypeScript
// (`typescript7`, a second: TypeScript 5.9 takes ten on this graph; both agree on it).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

test('a blocking driver refuses an operation that awaits, and a read-only driver one of file steps, at compile time (tsc on test/io/steps-types)', () => {
  const tsc = join(root, 'node_modules', 'typescript7', 'bin', 'tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', join(root, 'test', 'io', 'steps-types')], { encoding: 'utf8' });
  assert.is(r.status, 0, `${r.stdout}${r.stderr}`);
});

test.run();
