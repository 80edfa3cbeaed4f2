// The published types: test/packages/types/*.ts import the built packages as a user would and are compiled
// with tsc (TypeScript 5.9, and TypeScript 7, the Go port) under strict, exactOptionalPropertyTypes and noUncheckedIndexedAccess. Inferred types are
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
  const results = TYPESCRIPTS.flatMap((ts) => [types, workers].map((project) => [ts, tsc(ts, project)]));
  for (const d of [pages, workers]) rmSync(d, { recursive: true, force: true });
  for (const [ts, r] of results) assert.is(r.status, 0, `${ts}: ${r.stdout}${r.stderr}`);
  assert.ok(blocks >= 5, `${blocks} TypeScript blocks in the guides`);
});

// TypeScript 5.9 (the build's) and TypeScript 7 (the Go port, devDependency `typescript7`).
const TYPESCRIPTS = ['typescript', 'typescript7'];
const tsc = (ts, project) => spawnSync(process.execPath, [join(root, 'node_modules', ts, 'bin', 'tsc'), '-p', project], { encoding: 'utf8' });

test('every declaration file of @npyts/core (ESM .d.ts and CommonJS .d.cts) compiles itself, skipLibCheck off, under TypeScript 5.9 and 7', () => {
  // skipLibCheck (on in most projects, and above) hides errors inside the .d.ts files; a project
  // with it off checks ours, as TypeScript 7 users with exactOptionalPropertyTypes found (TS2320).
  // (The adapters' entries are left out: @stdlib/types' and tfjs' own declarations fail this check.)
  const entries = ['@npyts/core', '@npyts/core/node', '@npyts/core/pickle', '@npyts/core/plumbing'];
  const dir = join(root, 'test', 'packages', 'types', 'declarations');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
  writeFileSync(
    join(dir, 'esm.mts'),
    `${entries.map((e, i) => `import * as m${i} from '${e}';`).join('\n')}\nexport const all = [${entries.map((_, i) => `m${i}`).join(', ')}];\n`,
  );
  writeFileSync(
    join(dir, 'cjs.cts'),
    `${entries.map((e, i) => `import m${i} = require('${e}');`).join('\n')}\nexport const all = [${entries.map((_, i) => `m${i}`).join(', ')}];\n`,
  );
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({ extends: '../tsconfig.json', compilerOptions: { skipLibCheck: false }, include: ['esm.mts', 'cjs.cts'] }),
  );
  const results = TYPESCRIPTS.map((ts) => [ts, tsc(ts, dir)]);
  rmSync(dir, { recursive: true, force: true });
  for (const [ts, r] of results) assert.is(r.status, 0, `${ts}: ${r.stdout}${r.stderr}`);
});

test.run();
