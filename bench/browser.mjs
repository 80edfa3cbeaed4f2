// `npm run bench -- --browser`: the browser-relevant cases inside Debian's Chromium (playwright-core),
// the page and the bench inputs served by nginx. Returns the page's times in seconds.
import { build } from 'esbuild';
import { chromium } from 'playwright-core';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startNginx } from '../test/helpers/nginx.mjs';

const here = dirname(fileURLToPath(import.meta.url));

export async function browserBench(dir, repeats) {
  const bundle = join(dir, 'bench-page.js');
  await build({ entryPoints: [join(here, 'browser-page.mjs')], bundle: true, format: 'esm', platform: 'browser', outfile: bundle, logLevel: 'error', minify: true });
  const server = await startNginx(dir);
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium', headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
  });
  try {
    const page = await browser.newPage();
    const problems = [];
    page.on('pageerror', (e) => problems.push(String(e)));
    await page.goto(`${server.base}/bench-page.js`);
    const result = await page.evaluate(async (n) => (await import('/bench-page.js')).run(n), repeats);
    if (problems.length) throw new Error(`the bench page failed: ${problems.join('; ')}`);
    return { ...result, chromium: browser.version() };
  } finally {
    await browser.close();
    server.stop();
    rmSync(bundle, { force: true });
  }
}
