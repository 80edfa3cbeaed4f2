// The published types: test/types/*.ts import the built packages as a user would and are compiled
// with tsc under strict, exactOptionalPropertyTypes and noUncheckedIndexedAccess. Inferred types are
// asserted with expect-type; `// @ts-expect-error` lines must stay errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

test('a strict TypeScript program uses the typed API without one cast (tsc --noEmit on test/types)', () => {
  const r = spawnSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'test', 'types', 'tsconfig.json')], { encoding: 'utf8' });
  assert.is(r.status, 0, r.stdout + r.stderr);
});

test.run();
