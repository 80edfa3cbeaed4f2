// The code blocks of the README and the guides in docs/, as the guide test runs them and the type test
// compiles them. A block's info string is its language and then words that say how it runs:
//   ```ts / ```js           run by Node in the guide's working directory (ts: types stripped by esbuild,
//                           and compiled strictly by the type test)
//   ```js cjs               run by Node as CommonJS
//   ```ts browser           bundled by esbuild and run as a module in Chromium, on a page served from
//                           the guide's working directory
//   ```js browser worker=F  bundled to F in that directory for a later browser block to start; not run
//   ```html browser         a whole page, served beside the files (and node_modules at /node_modules/);
//                           what it prints is the text of its body
//   ```python               python3 (numpy 2); ```python torch: Debian's /usr/bin/python3 with PyTorch
//   ```sh                   bash, with `npyts` on the PATH
//   ```ts excerpt=PATH     lines quoted from the source file PATH: each must be there, in this order
//   ```LANG norun           shown, not run (only where running it here is impossible: say why beside it)
//   ```LANG run-by=PATH     not run here: the test PATH takes this very block from the guide and runs
//                           it with what it needs (a server it starts, arguments)
//   ```LANG file=F          also saved as F in the working directory (a module later blocks import)
//   ```text                 what the block before it prints, compared exactly
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The README and every guide, as paths relative to the repository. */
export function guides() {
  const docs = readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs];
}

/**
 * The fenced blocks of one markdown file: { lang, words, attrs, code, line, output }, where `output`
 * is the text block that follows a runnable one (its expected standard output).
 */
export function blocksOf(path) {
  const text = readFileSync(join(root, path), 'utf8');
  const lines = text.split('\n');
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S+)(.*)$/.exec(lines[i]);
    if (!open) continue;
    const start = i;
    const body = [];
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i]);
    if (i >= lines.length) throw new Error(`${path}:${start + 1}: a code block is not closed`);
    const words = open[2].trim().split(/\s+/).filter(Boolean);
    const attrs = Object.fromEntries(words.map((w) => w.split('=')).map(([k, v]) => [k, v ?? true]));
    blocks.push({ lang: open[1], words, attrs, code: `${body.join('\n')}\n`, line: start + 1 });
  }
  for (let b = 0; b < blocks.length; b++) {
    if (blocks[b].lang === 'text' && b > 0 && runnable(blocks[b - 1])) blocks[b - 1].output = blocks[b].code;
  }
  return blocks;
}

/** Whether the test runs a block: ts, js, python, sh and html, unless marked norun or a worker's source. */
export function runnable(block) {
  return (
    ['ts', 'js', 'python', 'sh', 'html'].includes(block.lang) && !block.attrs.norun && !block.attrs.worker && !block.attrs.excerpt && !block.attrs['run-by']
  );
}

/** The code of the one block of `path` in language `lang` whose code includes `text` (suites that import a guide's code). */
export function blockWith(path, lang, text) {
  const found = blocksOf(path).filter((b) => b.lang === lang && b.code.includes(text));
  if (found.length !== 1) throw new Error(`${path}: ${found.length} ${lang} blocks hold '${text}'`);
  return found[0].code;
}
