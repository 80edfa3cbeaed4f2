// The browser-relevant cases inside Debian's Chromium (playwright-core), the page and the bench
// inputs served by nginx. `npm run bench -- --browser` calls browserBench; run alone,
//   node bench/browser.mjs DIR [REPEATS] [--profile CASE...] [--cases CASE...]
// times the cases on the inputs `npm run bench` made in DIR, and with --profile prints where the
// named cases spend their time (Chromium's sampling profiler: self time by function).
import { build } from 'esbuild';
import { chromium } from 'playwright-core';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startNginx } from '../test/helpers/nginx.mjs';

const here = dirname(fileURLToPath(import.meta.url));

/** Chromium with the bench page loaded; `use(page)` runs inside, everything is closed after. */
async function withBenchPage(dir, use, { minify = true } = {}) {
  const bundle = join(dir, 'bench-page.js');
  await build({ entryPoints: [join(here, 'browser-page.mjs')], bundle: true, format: 'esm', platform: 'browser', outfile: bundle, logLevel: 'error', minify });
  const server = await startNginx(dir);
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
  });
  try {
    const page = await browser.newPage();
    const problems = [];
    page.on('pageerror', (e) => problems.push(String(e)));
    await page.goto(`${server.base}/bench-page.js`);
    const result = await use(page, browser);
    if (problems.length) throw new Error(`the bench page failed: ${problems.join('; ')}`);
    return result;
  } finally {
    await browser.close();
    server.stop();
    rmSync(bundle, { force: true });
  }
}

/** Median seconds of every browser case, with Chromium's version and the page's core count. */
export async function browserBench(dir, repeats, names) {
  return withBenchPage(dir, async (page, browser) => ({
    ...(await page.evaluate(async ([n, which]) => (await import('/bench-page.js')).run(n, which ?? undefined), [repeats, names ?? null])),
    chromium: browser.version(),
  }));
}

/** Self time by function (top `top`) of each named case, run `runs` times under the profiler. */
export async function browserProfile(dir, names, runs = 5, top = 8) {
  return withBenchPage(
    dir,
    async (page) => {
      const cdp = await page.context().newCDPSession(page);
      await cdp.send('Profiler.enable');
      await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
      const out = {};
      for (const name of names) {
        // Prepared and run once (inputs fetched, code warm) before the profiler starts.
        await page.evaluate(async (n) => {
          globalThis.benchCase = await (await import('/bench-page.js')).prepare(n);
          await globalThis.benchCase();
        }, name);
        await cdp.send('Profiler.start');
        await page.evaluate(async (k) => {
          for (let i = 0; i < k; i++) await globalThis.benchCase();
        }, runs);
        const { profile } = await cdp.send('Profiler.stop');
        out[name] = selfTimes(profile, top);
      }
      return out;
    },
    { minify: false },
  );
}

/** A CPU profile's samples as shares of self time per function (name and script line). */
function selfTimes(profile, top) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const time = new Map();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    const f = byId.get(id).callFrame;
    const key = `${f.functionName || '(anonymous)'}${f.url ? ` ${f.url.split('/').pop()}:${f.lineNumber + 1}` : ''}`;
    time.set(key, (time.get(key) ?? 0) + dt);
    total += dt;
  });
  return [...time]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([fn, t]) => `${((100 * t) / total).toFixed(1)}% ${fn}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [dir, ...rest] = process.argv.slice(2);
  if (!dir) throw new Error('usage: node bench/browser.mjs DIR [REPEATS] [--profile CASE...] [--cases CASE...]');
  const p = rest.indexOf('--profile');
  const c = rest.indexOf('--cases');
  const repeats = Number(rest[0]) > 0 ? Number(rest[0]) : 7;
  if (p >= 0) console.log(JSON.stringify(await browserProfile(dir, rest.slice(p + 1)), null, 2));
  else console.log(JSON.stringify(await browserBench(dir, repeats, c >= 0 ? rest.slice(c + 1) : undefined), null, 2));
}
