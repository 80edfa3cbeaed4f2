// Debian's Chromium through playwright-core (which never downloads a browser), as the browser tests start it.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { chromium } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** A headless Chromium with nothing of its own going to the network (no updates, no sync). */
export function launchChromium() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
  });
}

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Bundle `contents` (an ES module, whose imports resolve from the repository, as a user's bundler
 * resolves them from their project) into `outfile`, for a page to import.
 */
export function bundleForPage(contents, outfile) {
  return build({
    stdin: { contents, resolveDir: repoRoot },
    bundle: true,
    format: 'esm',
    platform: 'browser',
    outfile,
    logLevel: 'error',
    tsconfigRaw: {},
  });
}

/**
 * A page in Chromium at `/data/bundle.js` of a viewer server over `dir` (so that the bundle's module
 * and the files in `dir` are URLs relative to it); `problems` collects the page's uncaught errors;
 * `close()` ends the browser and the server.
 */
export async function pageOverData(dir) {
  const { startViewer } = await import('../../viewer/serve.mjs');
  const server = await startViewer({ port: 0, dataDir: dir });
  const base = `http://127.0.0.1:${server.address().port}`;
  const browser = await launchChromium();
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(String(e)));
  await page.goto(`${base}/data/bundle.js`);
  return {
    page,
    base,
    problems,
    close: async () => {
      await browser.close();
      server.close();
    },
  };
}
