// Debian's Chromium through playwright-core (which never downloads a browser), as the browser tests start it.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { chromium } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/**
 * A headless Chromium with nothing of its own going to the network (no updates, no sync); `args` adds
 * switches. With `webgpu`, its GPU process runs and WebGPU is on: Debian's Chromium then offers a
 * SwiftShader adapter (a GPU in software), which is what the WebGPU tests use.
 */
export function launchChromium(args = [], { webgpu = false } = {}) {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      ...(webgpu ? ['--enable-unsafe-webgpu'] : ['--disable-gpu']),
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--disable-sync',
      ...args,
    ],
  });
}

/**
 * The process ids of the renderers of the Chromium whose command line holds `marker` (a switch given
 * to {@link launchChromium} to tell it from other browsers on the machine). Linux (/proc).
 */
export function rendererPids(marker) {
  const procs = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  const read = (pid, file) => {
    try {
      return readFileSync(`/proc/${pid}/${file}`, 'utf8');
    } catch {
      return '';
    }
  };
  const parent = (pid) => /PPid:\s+(\d+)/.exec(read(pid, 'status'))?.[1];
  const browser = procs.find((pid) => read(pid, 'cmdline').split('\0').includes(marker) && !read(pid, 'cmdline').includes('--type='));
  if (browser === undefined) throw new Error(`no Chromium runs with ${marker}`);
  const under = (pid) => {
    for (let p = parent(pid), hops = 0; p !== undefined && p !== '0' && hops < 8; p = parent(p), hops++) if (p === browser) return true;
    return false;
  };
  return procs.filter((pid) => read(pid, 'cmdline').includes('--type=renderer') && under(pid));
}

/** A field of a process's /proc status in bytes (`VmHWM`, `VmRSS`); 0 where the process is gone. */
export function procStatus(pid, field) {
  try {
    return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

/** The peak resident memory (`VmHWM`, bytes) of each renderer of the Chromium whose command line holds `marker` ({@link rendererPids}). */
export function rendererPeaks(marker) {
  return rendererPids(marker).map((pid) => procStatus(pid, 'VmHWM'));
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
 * `close()` ends the browser and the server; `args` and `launch` go to {@link launchChromium}.
 */
export async function pageOverData(dir, args = [], launch = {}) {
  const { startViewer } = await import('../../viewer/serve.mjs');
  const server = await startViewer({ port: 0, dataDir: dir });
  const base = `http://127.0.0.1:${server.address().port}`;
  const browser = await launchChromium(args, launch);
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
