// The published types: test/packages/types/*.ts import the built packages as a user would and are compiled
// with tsc under strict, exactOptionalPropertyTypes and noUncheckedIndexedAccess. Inferred types are
// asserted with expect-type; `// @ts-expect-error` lines must stay errors. Every TypeScript block of the
// README and the guides is compiled with them, as written (guide-blocks.mjs finds them).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { blocksOf, guides, root, runnable } from './guide-blocks.mjs';

test('a strict TypeScript program uses the typed API without one cast (tsc --noEmit on test/packages/types, with every ts block of the README and the guides)', () => {
  // Blocks for a page or Node compile with the DOM library; a worker's blocks with WebWorker's, as a
  // project compiles its worker code.
  const types = join(root, 'test', 'packages', 'types');
  const pages = join(types, 'guides');
  const workers = join(types, 'guides-worker');
  for (const d of [pages, workers]) {
    rmSync(d, { recursive: true, force: true });
    mkdirSync(d);
  }
  writeFileSync(
    join(workers, 'tsconfig.json'),
    JSON.stringify({ extends: '../tsconfig.json', compilerOptions: { lib: ['ES2022', 'ESNext.Disposable', 'WebWorker'], types: [] }, include: ['*.ts'] }),
  );
  let blocks = 0;
  for (const guide of guides()) {
    for (const block of blocksOf(guide)) {
      if (block.lang !== 'ts' || !(runnable(block) || block.attrs.worker)) continue;
      const name = `${guide.replace(/[/.]/g, '-')}-${block.line}.ts`;
      writeFileSync(
        join(block.attrs.worker ? workers : pages, name),
        `// Generated from ${guide}:${block.line} by test/packages/types.test.mjs.\n${block.code}export {};\n`,
      );
      blocks++;
    }
  }
  const tsc = (project) => spawnSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', project], { encoding: 'utf8' });
  const r = tsc(join(types, 'tsconfig.json'));
  const w = tsc(join(workers, 'tsconfig.json'));
  for (const d of [pages, workers]) rmSync(d, { recursive: true, force: true });
  assert.is(r.status, 0, r.stdout + r.stderr);
  assert.is(w.status, 0, w.stdout + w.stderr);
  assert.ok(blocks >= 5, `${blocks} TypeScript blocks in the guides`);
});

test.run();
