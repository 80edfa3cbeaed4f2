// docs/architecture.md is checked against the tree, so that it stays the map of the code: every
// source file is named where its folder is described (and every file it names exists there), the
// core has no import circles, core imports go down the list of levels the page gives, and work
// started together is awaited with settleAll, never a bare Promise.all.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const page = readFileSync(join(root, 'docs', 'architecture.md'), 'utf8');
const core = join(root, 'packages', 'core', 'src');
const SOURCE = /\.(ts|c|cc)$/;

/** The page's section `## title`, up to the next `## `. */
function section(title) {
  const at = page.indexOf(`\n## ${title}\n`);
  assert.ok(at >= 0, `docs/architecture.md has no section "${title}"`);
  const end = page.indexOf('\n## ', at + 1);
  return page.slice(at, end < 0 ? undefined : end);
}

/** Source files under `dir`, relative to it. */
const sources = (dir) => readdirSync(dir, { recursive: true }).filter((f) => SOURCE.test(f) && !f.endsWith('.d.ts'));

const files = section('The files');
/** The core's bullets (`- \`folder/\`: …`, up to the next bullet or paragraph), by folder. */
const coreBullets = new Map();
for (const m of files.matchAll(/^- `([\w.-]+\/?)`[\s\S]*?(?=^- `|^`packages|^\S|$(?![\s\S]))/gm)) coreBullets.set(m[1], m[0]);
/** The paragraphs of the other packages (`` `packages/NAME/src`: … ``), by package folder. */
const paragraphs = new Map();
for (const m of files.matchAll(/^`packages\/([\w-]+)\/src`[\s\S]*?(?=\n\n|\n`packages|$(?![\s\S]))/gm)) paragraphs.set(m[1], m[0]);

/** Whether `text` names `file` (with its extension, or a TypeScript file as a backticked word). */
function names(text, file) {
  const name = basename(file);
  const stem = name.replace(SOURCE, '');
  return new RegExp(`(^|[^\\w.-])${name.replace(/\./g, '\\.')}\\b`).test(text) || text.includes(`\`${stem}\``);
}

test('every source file is named where docs/architecture.md describes its folder', () => {
  const missing = [];
  const coreText = [...coreBullets.values()].join('\n');
  for (const f of sources(core)) {
    const top = f.includes('/') ? `${f.split('/')[0]}/` : null;
    const text = top === null ? coreText : coreBullets.get(top);
    if (text === undefined) {
      if (!missing.includes(`packages/core/src/${top}`)) missing.push(`packages/core/src/${top}`);
    } else if (!names(text, f)) missing.push(`packages/core/src/${f}`);
  }
  for (const pkg of readdirSync(join(root, 'packages'))) {
    const src = join(root, 'packages', pkg, 'src');
    if (pkg === 'core' || !existsSync(src)) continue;
    const text = paragraphs.get(pkg);
    if (text === undefined) {
      missing.push(`packages/${pkg}/src (no paragraph "\`packages/${pkg}/src\`")`);
      continue;
    }
    for (const f of sources(src)) if (!names(text, f)) missing.push(`packages/${pkg}/src/${f}`);
  }
  assert.equal(missing, [], `not named in docs/architecture.md's "The files": ${missing.join(', ')}`);
});

test('every file docs/architecture.md names in a folder exists there', () => {
  const stale = [];
  const check = (text, dir, label) => {
    const present = new Set(readdirSync(dir, { recursive: true }).map((f) => basename(f)));
    for (const m of text.matchAll(/`((?:[\w-]+\/)*)([\w.-]+\.(?:ts|c|cc))`/g)) {
      const where = m[1].startsWith('packages/') ? existsSync(join(root, m[1], m[2])) : present.has(m[2]);
      if (!where) stale.push(`${label}: ${m[0]}`);
    }
  };
  for (const [folder, text] of coreBullets) check(text, folder.endsWith('/') ? join(core, folder) : core, `packages/core/src/${folder}`);
  for (const [pkg, text] of paragraphs) check(text, join(root, 'packages', pkg, 'src'), `packages/${pkg}/src`);
  assert.equal(stale, [], `named in docs/architecture.md but not in the tree: ${stale.join(', ')}`);
});

/** The core's imports that run (not `import type`): file → files, relative to the core's src. */
function coreImports() {
  const edges = new Map();
  for (const f of sources(core)) {
    const text = readFileSync(join(core, f), 'utf8');
    const out = new Set();
    for (const m of text.matchAll(/^(import|export)\s+(type\s+)?([^;]*?)\s+from\s+'(\.[^']+)'/gms)) {
      if (m[2]) continue;
      const braces = /^\{([^}]*)\}$/.exec(m[3].trim());
      const onlyTypes = braces?.[1].split(',').every((s) => s.trim() === '' || s.trim().startsWith('type '));
      if (onlyTypes) continue;
      out.add(relative(core, resolve(core, dirname(f), m[4].replace(/\.js$/, '.ts'))));
    }
    edges.set(f, out);
  }
  return edges;
}

test('no import circles in the core', () => {
  const edges = coreImports();
  const state = new Map();
  const circles = [];
  const visit = (f, path) => {
    state.set(f, 'open');
    for (const t of edges.get(f) ?? []) {
      if (state.get(t) === 'open') circles.push([...path.slice(path.indexOf(t)), t].join(' → '));
      else if (!state.has(t) && edges.has(t)) visit(t, [...path, t]);
    }
    state.set(f, 'done');
  };
  for (const f of edges.keys()) if (!state.has(f)) visit(f, [f]);
  assert.equal(circles, []);
});

test("core imports go down the levels of docs/architecture.md's data flow", () => {
  // Each numbered item of the list is a level; the folders (`x/`) and files (`x.ts`, `x/y.ts`) it
  // names in backticks before its first colon are on it.
  const flow = section('The data flow');
  const level = new Map();
  for (const m of flow.matchAll(/^(\d+)\. ([^\n]*(?:\n {3}[^\n]*)*)/gm)) {
    for (const name of m[2].matchAll(/`([\w./-]+)`/g)) {
      const n = name[1];
      if ((n.endsWith('/') && existsSync(join(core, n))) || (n.endsWith('.ts') && existsSync(join(core, n)))) level.set(n, Number(m[1]));
    }
  }
  const levelOf = (f) => level.get(f) ?? level.get(`${f.split('/')[0]}/`);
  const unplaced = sources(core).filter((f) => levelOf(f) === undefined);
  assert.equal(unplaced, [], 'files on no level of the data flow');
  const upward = [];
  for (const [f, out] of coreImports()) for (const t of out) if (levelOf(t) > levelOf(f)) upward.push(`${f} (${levelOf(f)}) imports ${t} (${levelOf(t)})`);
  assert.equal(upward, []);
});

test('work started together is awaited with settleAll, never a bare Promise.all', () => {
  const bare = [];
  for (const pkg of readdirSync(join(root, 'packages'))) {
    const src = join(root, 'packages', pkg, 'src');
    if (!existsSync(src)) continue;
    for (const f of sources(src)) {
      const lines = readFileSync(join(src, f), 'utf8').split('\n');
      lines.forEach((line, i) => {
        if (/\bPromise\.all\(/.test(line.replace(/\/\/.*$/, ''))) bare.push(`packages/${pkg}/src/${f}:${i + 1}`);
      });
    }
  }
  assert.equal(bare, [], 'use settleAll (@npyts/core/plumbing): when one part fails, nothing is still in flight');
});

test.run();
