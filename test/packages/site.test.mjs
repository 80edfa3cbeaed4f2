// The API site as `npm run docs` builds it (TypeDoc, with the README as its front page and the guides
// as its pages, warnings as errors), and the links of the site and of the markdown files themselves:
// every relative link leads to a file that is there, and every #anchor to an id in it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { scratch } from '../helpers/numpy.mjs';
import { guides, root } from './guide-blocks.mjs';

const out = scratch('npyts-site-');
const built = spawnSync(process.execPath, [join(root, 'node_modules', 'typedoc', 'bin', 'typedoc'), '--out', out], {
  cwd: root,
  encoding: 'utf8',
  env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
});

test('npm run docs builds the API site with no warning (broken links, unexported types, undocumented symbols)', () => {
  assert.is(built.status, 0, built.stdout + built.stderr);
  assert.not.match(built.stdout + built.stderr, /\[warning\]|\[error\]/);
});

test('the site has the README as its front page and every guide as a page', () => {
  const index = readFileSync(join(out, 'index.html'), 'utf8');
  assert.match(index, /Quick start/);
  for (const guide of guides().filter((g) => g.startsWith('docs/'))) {
    const page = join(out, 'documents', guide.slice('docs/'.length).replace(/\.md$/, '.html'));
    assert.ok(existsSync(page), `${guide} has no page`);
    assert.ok(index.includes(`href="documents/${guide.slice('docs/'.length).replace(/\.md$/, '.html')}"`), `the front page does not link ${guide}`);
  }
});

test('every relative link of the site leads to a file, and every #anchor to an id there', () => {
  const pages = readdirSync(out, { recursive: true }).filter((f) => f.endsWith('.html'));
  const ids = new Map();
  const idsOf = (file) => {
    if (!ids.has(file)) ids.set(file, new Set([...readFileSync(file, 'utf8').matchAll(/\sid="([^"]+)"/g)].map((m) => m[1])));
    return ids.get(file);
  };
  const broken = [];
  let links = 0;
  for (const page of pages) {
    const file = join(out, page);
    const html = readFileSync(file, 'utf8');
    for (const [, link] of html.matchAll(/\s(?:href|src)="([^"]+)"/g)) {
      if (/^[a-z]+:/i.test(link) || link === '#') continue;
      const [path, anchor] = link.split('#');
      const target = path ? join(dirname(file), decodeURIComponent(path)) : file;
      links++;
      if (!existsSync(target)) broken.push(`${page}: ${link} (no file)`);
      else if (anchor && target.endsWith('.html') && !anchor.startsWith('icon-') && !idsOf(target).has(decodeURIComponent(anchor)))
        broken.push(`${page}: ${link} (no id)`);
    }
  }
  assert.equal(broken, []);
  assert.ok(links > 1000, `${links} links`);
});

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

test('every relative link in the README and the guides leads to a file of the repository (and a heading there), as on any git host', () => {
  const broken = [];
  for (const doc of [...guides(), 'CHANGELOG.md']) {
    const text = readFileSync(join(root, doc), 'utf8').replace(/```[\s\S]*?```/g, '');
    for (const [, link] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/i.test(link)) continue;
      const [path, anchor] = link.split('#');
      const target = path ? join(root, dirname(doc), path) : join(root, doc);
      if (!existsSync(target)) broken.push(`${doc}: ${link} (no file ${relative(root, target)})`);
      else if (anchor && target.endsWith('.md')) {
        const headings = [...readFileSync(target, 'utf8').matchAll(/^#+ (.*)$/gm)].map((m) => slug(m[1]));
        if (!headings.includes(anchor)) broken.push(`${doc}: ${link} (no heading)`);
      }
    }
  }
  assert.equal(broken, []);
});

test.run();
