// The browser promise: @npyts/core's main entry pulls in no Node built-ins and not the unpickler;
// the pickle entry is separate. Checked on the built files and their relative imports.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'packages', 'core', 'dist');

/**
 * Every file an entry loads through relative imports, and the bare specifiers it imports; with
 * `staticOnly`, only what it loads when imported (not the chunks it imports when it meets a case).
 */
function closure(entry, staticOnly = false) {
  const files = new Map();
  const bare = new Set();
  const visit = (file) => {
    if (files.has(file)) return;
    const text = readFileSync(file, 'utf8');
    files.set(file, text);
    // Statements at the start of a line (rollup's output), so that import-like text in strings does not count.
    for (const m of text.matchAll(/^(?:import|export)\s[^'"\n]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^import\s*['"]([^'"]+)['"]/gm)) {
      if (staticOnly && m[2] !== undefined) continue;
      const spec = m[1] ?? m[2] ?? m[3];
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec));
      else bare.add(spec);
    }
  };
  visit(join(dist, entry));
  return { files, bare };
}

test('the main entry imports no Node built-ins and does not load the unpickler (a torch.save checkpoint loads it when met)', () => {
  const { files, bare } = closure('index.js');
  assert.equal([...bare].sort(), ['fflate']);
  for (const [file, text] of closure('index.js', true).files) assert.not.match(text, /refusing to load global|weights_only loader/, file);
  // The checkpoint reader is a chunk of its own, imported by openWeights when it meets one.
  assert.ok([...files.values()].some((t) => /weights_only loader/.test(t)));
});

test('the pickle entry is separate and holds the unpickler', () => {
  const { files, bare } = closure('pickle.js');
  assert.ok([...files.values()].some((t) => /refusing to load global/.test(t)));
  assert.not.ok([...bare].some((b) => b.startsWith('node:')));
});

test('bundle sizes are reported (gzip)', () => {
  const size = (entry) => [...closure(entry).files.values()].reduce((n, t) => n + gzipSync(t).length, 0);
  const main = size('index.js');
  const withPickle = size('pickle.js');
  console.log(
    `      @npyts/core main entry: ${(main / 1024).toFixed(1)} KiB gzip (unminified, without fflate); pickle entry with what it shares: ${(withPickle / 1024).toFixed(1)} KiB`,
  );
  assert.ok(main > 0 && withPickle > 0);
});

test.run();
