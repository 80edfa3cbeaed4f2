// Formatting and lint rules (biome.json) hold for every source, test and bench file: `npm run format`
// fixes what it can, and this names what is left.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

test('biome ci: formatted and lint-clean', () => {
  const r = spawnSync(process.execPath, [`${root}node_modules/@biomejs/biome/bin/biome`, 'ci', '--error-on-warnings', '--reporter=summary', '.'], {
    cwd: root,
    encoding: 'utf8',
  });
  assert.is(r.status, 0, `${r.stdout}\n${r.stderr}\nrun \`npm run format\` to fix formatting`);
});
test.run();
