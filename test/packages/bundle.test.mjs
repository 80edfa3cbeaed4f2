// The browser promise: @npyts/core's main entry pulls in no Node built-ins and not the unpickler;
// the pickle entry is separate. Checked on the built files and their relative imports.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

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

/** The unpickler's own words: what a bundle holds when it carries it. */
const UNPICKLER = /the extension registry \(EXT opcodes\) is not supported/;

/** esbuild's minified browser bundle of `code` (an ES module): `{ entry, chunks }`, texts keyed by file name. */
async function bundleOf(code, splitting) {
  const r = await build({
    stdin: { contents: code, resolveDir: join(dirname(fileURLToPath(import.meta.url)), '..', '..'), loader: 'js' },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    splitting,
    outdir: '/virtual',
    write: false,
    logLevel: 'silent',
  });
  const files = Object.fromEntries(r.outputFiles.map((f) => [f.path.slice('/virtual/'.length), f.text]));
  return { entry: files['stdin.js'], chunks: files };
}

test('code that reads only safetensors does not pay for pickles: openSafetensors carries no unpickler, and openWeights loads it only as a chunk of its own (bundlers that split), as the browser guide says', async () => {
  const safetensorsOnly = `import { openSafetensors } from '@npyts/core';\nconst f = await openSafetensors('model.safetensors');\nconsole.log(await f.get('w'));\n`;
  const anyWeights = `import { openWeights } from '@npyts/core';\nconst w = await openWeights('model.safetensors');\nconsole.log(await w.get('w'));\n`;
  const single = await bundleOf(safetensorsOnly, false);
  assert.not.match(single.entry, UNPICKLER, 'openSafetensors bundled whole carries the unpickler');
  const split = await bundleOf(anyWeights, true);
  // What the page loads at start: the entry and the chunks it imports statically.
  const loaded = new Set(['stdin.js']);
  for (const name of loaded) for (const m of split.chunks[name].matchAll(/(?:^|[;}])import\s*(?:[^"'()]*?from\s*)?"\.\/([^"]+)"/g)) loaded.add(m[1]);
  for (const name of loaded) assert.not.match(split.chunks[name], UNPICKLER, `${name}, loaded at start, carries the unpickler`);
  assert.ok(
    Object.values(split.chunks).some((t) => UNPICKLER.test(t)),
    'the torch reader is a chunk of its own',
  );
  // A bundler that does not split inlines every dynamic import: openWeights then carries it (the guide says to split, or to use openSafetensors).
  const whole = await bundleOf(anyWeights, false);
  assert.match(whole.entry, UNPICKLER);
  const kib = (t) => `${(t.length / 1024).toFixed(0)} KiB`;
  console.log(
    `      minified: openSafetensors ${kib(single.entry)}; openWeights ${kib(whole.entry)} whole, ${kib([...loaded].map((n) => split.chunks[n]).join(''))} at start when split`,
  );
});

test.run();
