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
