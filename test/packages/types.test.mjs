// The published types: test/packages/types/*.ts import the built packages as a user would and are compiled
// with tsc under strict, exactOptionalPropertyTypes and noUncheckedIndexedAccess. Inferred types are
// asserted with expect-type; `// @ts-expect-error` lines must stay errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

test("a strict TypeScript program uses the typed API without one cast (tsc --noEmit on test/packages/types, with the README's typed example)", () => {
  // The README's example is compiled too, as written (it uses a `bytes` it does not declare).
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const block = /### Types that follow the descr[\s\S]*?```ts\n([\s\S]*?)```/.exec(readme)[1];
  const generated = join(root, 'test', 'packages', 'types', 'readme.generated.ts');
  writeFileSync(generated, `// Generated from README.md by test/packages/types.test.mjs.\ndeclare const bytes: Uint8Array;\n${block}\nexport {};\n`);
  const r = spawnSync(
    process.execPath,
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'test', 'packages', 'types', 'tsconfig.json')],
    { encoding: 'utf8' },
  );
  rmSync(generated, { force: true });
  assert.is(r.status, 0, r.stdout + r.stderr);
});

test.run();
