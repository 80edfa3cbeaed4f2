// The README and every guide in docs/ run as written: their blocks in order, in one working directory
// per guide (Python blocks make the files the JavaScript blocks read, as a user's would), and a
// ```text block after a runnable one must be exactly what it prints. guide-blocks.mjs says how each
// kind of block runs.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { createReadStream, existsSync, mkdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { extname, join, normalize } from 'node:path';
import { build, transformSync } from 'esbuild';
import { scratch } from '../helpers/numpy.mjs';
import { pythonSession } from '../helpers/python-session.mjs';
import { blocksOf, guides, root, runnable } from './guide-blocks.mjs';

const CHROMIUM = '/usr/bin/chromium';
// A block that takes longer than this is stopped and fails the guide (a Python block through its session).
const BLOCK_TIMEOUT_MS = 300_000;
// Node resolves a block's imports from where its file is: under the repository, as a user's module
// resolves them from their project.
const modules = join(root, 'node_modules', '.cache', 'npyts-guides');
// NPYTS: where the checkout is, for the install blocks ("in your project: npm install $NPYTS/packs/…").
const env = { ...process.env, PATH: `${join(root, 'node_modules', '.bin')}:${process.env.PATH}`, NPYTS: root, NO_COLOR: '1', FORCE_COLOR: '0' };

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript', '.json': 'application/json' };
/**
 * A static server as a user's page has one: the guide's directory at /, and the repository's
 * node_modules at /node_modules/ (for a page with no bundler). Single byte ranges are answered with
 * 206, as any static host does.
 */
function serve(dir) {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const file = path.startsWith('/node_modules/') ? join(root, normalize(path)) : join(dir, normalize(path));
    let size;
    try {
      size = statSync(realpathSync(file)).size;
    } catch {
      res.writeHead(404).end();
      return;
    }
    const type = TYPES[extname(file)] ?? 'application/octet-stream';
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    if (range && Number(range[1]) < size) {
      const start = Number(range[1]);
      const end = Math.min(range[2] ? Number(range[2]) : size - 1, size - 1);
      res.writeHead(206, {
        'content-type': type,
        'content-length': end - start + 1,
        'content-range': `bytes ${start}-${end}/${size}`,
        'accept-ranges': 'bytes',
      });
      createReadStream(file, { start, end }).pipe(res);
    } else {
      res.writeHead(200, { 'content-type': type, 'content-length': size, 'accept-ranges': 'bytes' });
      createReadStream(file).pipe(res);
    }
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

let browser;
let server;
async function chromiumPage(dir) {
  if (!existsSync(CHROMIUM)) throw new Error("browser blocks need Debian's chromium at /usr/bin/chromium (.ci/run installs it)");
  const { chromium } = await import('playwright-core');
  browser ??= await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
  server?.close();
  server = await serve(dir);
  writeFileSync(join(dir, 'guide.html'), '<!doctype html><meta charset="utf-8"><title>guide</title>\n');
  const page = await browser.newPage();
  page.base = `http://127.0.0.1:${server.address().port}`;
  await page.goto(`${page.base}/guide.html`);
  return page;
}

function bundle(code, lang) {
  // tsconfigRaw: the packages resolve through node_modules to their built dist, as in a user's project.
  const out = build({
    stdin: { contents: code, resolveDir: root, loader: lang === 'ts' ? 'ts' : 'js' },
    bundle: true,
    format: 'esm',
    platform: 'browser',
    write: false,
    tsconfigRaw: {},
    logLevel: 'silent',
  });
  return out.then((r) => r.outputFiles[0].contents);
}

/** Runs one block; returns what it printed, or throws with what went wrong. */
async function run(block, dir, where, state) {
  const fail = (how, r) => {
    throw new Error(`${where}: ${how}\n${(r.stdout ?? '').slice(-3000)}${(r.stderr ?? '').slice(-3000)}`);
  };
  if (block.attrs.file) writeFileSync(join(dir, block.attrs.file), block.code);
  if (block.attrs.worker) {
    writeFileSync(join(dir, block.attrs.worker), await bundle(block.code, block.lang));
    return null;
  }
  if (!runnable(block)) return null;
  if (block.lang === 'html') {
    // A whole page: it shows its result as the body's text.
    state.page ??= await chromiumPage(dir);
    const file = `block-${block.line}.html`;
    writeFileSync(join(dir, file), block.code);
    const errors = [];
    const onError = (e) => errors.push(String(e));
    state.page.on('pageerror', onError);
    await state.page.goto(`${state.page.base}/${file}`);
    await state.page.waitForFunction(() => document.body?.textContent.trim() || null, null, { timeout: 60_000 }).catch(() => {});
    state.page.off('pageerror', onError);
    const shown = await state.page.evaluate(() => document.body?.textContent.trim() ?? '');
    if (errors.length || !shown) fail('the page failed or showed nothing', { stderr: errors.join('\n') });
    await state.page.goto(`${state.page.base}/guide.html`);
    return `${shown}\n`;
  }
  if (block.lang === 'python') {
    // One interpreter per Python for the whole file, each block a script of its own (fresh globals,
    // run in the guide's directory): a block pays for its own work, not for importing numpy, torch
    // and Keras again (seconds each on a busy machine).
    const which = block.attrs.torch ? '/usr/bin/python3' : 'python3';
    try {
      return await pythonSession(which).run(block.code, { cwd: dir, timeoutMs: BLOCK_TIMEOUT_MS });
    } catch (e) {
      fail(`${which} failed`, { stderr: e.message });
    }
  }
  if (block.lang === 'sh') {
    const r = spawnSync('bash', ['-euo', 'pipefail', '-c', block.code], { cwd: dir, env, encoding: 'utf8', timeout: BLOCK_TIMEOUT_MS, maxBuffer: 1 << 26 });
    if (r.status !== 0) fail(`bash exited with ${r.status ?? r.signal}`, r);
    return r.stdout;
  }
  if (block.attrs.browser) {
    state.page ??= await chromiumPage(dir);
    const file = `block-${block.line}.js`;
    writeFileSync(join(dir, file), await bundle(block.code, block.lang));
    const result = await state.page.evaluate(async (src) => {
      const printed = [];
      const log = console.log;
      console.log = (...args) => printed.push(args.map(String).join(' '));
      try {
        await import(src);
        return { ok: true, printed: printed.join('\n') };
      } catch (e) {
        return { ok: false, error: String(e?.stack ?? e), printed: printed.join('\n') };
      } finally {
        console.log = log;
      }
    }, `./${file}`);
    if (!result.ok) fail('the browser block threw', { stdout: result.printed, stderr: result.error });
    return result.printed ? `${result.printed}\n` : '';
  }
  const js = block.attrs.cjs ? block.code : transformSync(block.code, { loader: block.lang === 'ts' ? 'ts' : 'js', format: 'esm', target: 'node20' }).code;
  const file = join(state.modules, `block-${block.line}.${block.attrs.cjs ? 'cjs' : 'mjs'}`);
  writeFileSync(file, js);
  const r = spawnSync(process.execPath, [file], { cwd: dir, env, encoding: 'utf8', timeout: BLOCK_TIMEOUT_MS, maxBuffer: 1 << 26 });
  if (r.status !== 0) fail(`node exited with ${r.status ?? r.signal}`, r);
  return r.stdout;
}

test('quoted source (```ts excerpt=PATH) is what the source says, line for line', () => {
  let quoted = 0;
  for (const guide of guides()) {
    for (const block of blocksOf(guide).filter((b) => b.attrs.excerpt)) {
      const source = readFileSync(join(root, block.attrs.excerpt), 'utf8').split('\n');
      let at = 0;
      for (const line of block.code.split('\n').filter((l) => l.trim() && !l.trim().startsWith('//'))) {
        while (at < source.length && source[at] !== line) at++;
        assert.ok(at < source.length, `${guide}:${block.line}: "${line.trim()}" is not in ${block.attrs.excerpt} (after the lines before it)`);
      }
      quoted++;
    }
  }
  assert.ok(quoted >= 1);
});

for (const guide of guides()) {
  const blocks = blocksOf(guide);
  if (!blocks.some(runnable)) continue;
  test(`${guide}: every block runs${blocks.some((b) => b.output) ? ' and prints what the guide shows' : ''}`, async () => {
    const dir = scratch('npyts-guide-');
    const state = { modules: join(modules, guide.replace(/[/.]/g, '-')) };
    rmSync(state.modules, { recursive: true, force: true });
    mkdirSync(state.modules, { recursive: true });
    try {
      for (const block of blocks) {
        const where = `${guide}:${block.line} (${block.lang} ${block.words.join(' ')})`;
        const printed = await run(block, dir, where, state);
        if (block.output !== undefined) assert.fixture(printed, block.output, `${where}: prints something else than the text block after it`);
      }
    } finally {
      await state.page?.close();
    }
  });
}

test.after(async () => {
  server?.close();
  await browser?.close();
});

test.run();
