// Ragged arrays read in a real Chromium over HTTP range requests (nginx): every layout, an N-d
// index and references give in the page what Node reads from disk, and an index numpy wrote itself
// reads the same; the page's bundle of @npyts/core has no Node imports.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { bundleForPage, launchChromium } from '../helpers/chromium.mjs';
import { arrayFromValues, arrayToJSON, NdArray } from '@npyts/core';
import { openRaggedSync, saveRaggedSync, saveReferencesSync } from '@npyts/core/node';
import { python, scratch } from '../helpers/numpy.mjs';
import { startNginx } from '../helpers/nginx.mjs';

const dir = scratch('npyts-ragged-browser-');
const json = (v) => (typeof v !== 'object' ? v : v instanceof NdArray ? { shape: v.shape, values: arrayToJSON(v) } : v.map(json));

saveRaggedSync(join(dir, 'words.npy'), ['a', 'é整😀', '', ...Array.from({ length: 300 }, (_, i) => `w${i}`)], { layout: 'offsets' });
saveRaggedSync(join(dir, 'tags.npy'), ['x', 'y'.repeat(5000), 'z'], { layout: 'zero-terminated' });
saveRaggedSync(
  join(dir, 'grid.npy'),
  Array.from({ length: 6 }, (_, i) =>
    i
      ? arrayFromValues(
          Array.from({ length: i }, (_, j) => [j, -j]),
          '<i2',
        )
      : arrayFromValues([], '<i2', { shape: [0, 2] }),
  ),
  { shape: [2, 3] },
);
saveRaggedSync(join(dir, 'nested.npy'), [['a', 'b'], [], ['c']], { layout: 'offsets' });
python(`
rng = np.random.default_rng(3)
np.save(${JSON.stringify(join(dir, 'frames.npy'))}, np.asfortranarray(rng.standard_normal((4, 3, 10)).astype('>f4')))
t = "npyts.ragged:v1 kind=utf8 heap=np.npy.strings"
with open(${JSON.stringify(join(dir, 'np.npy.strings'))}, "wb") as fh: np.save(fh, np.frombuffer("abcdé".encode(), dtype="u1"))
np.save(${JSON.stringify(join(dir, 'np.npy'))}, np.array([(0, 2), (2, 2), (2, 6)], dtype=[((t, "start"), ">u8"), ("stop", ">u8")]))`);
saveReferencesSync(join(dir, 'picks.npy'), { data: new Int32Array([9, 0, 3, 3]), shape: [2, 2] }, 'frames.npy');
const names = ['words.npy', 'tags.npy', 'grid.npy', 'nested.npy', 'picks.npy', 'np.npy'];

await bundleForPage("export { openRaggedUrl, arrayToJSON, NdArray } from '@npyts/core';", join(dir, 'core.js'));
writeFileSync(join(dir, 'index.html'), '<!doctype html><title>ragged</title>');
const server = await startNginx(dir);
const browser = await launchChromium();

test('every layout, an N-d index, references and a numpy-written index read in Chromium as in Node', async () => {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(String(e)));
  await page.goto(`${server.base}/index.html`);
  const inPage = await page.evaluate(async (files) => {
    const { openRaggedUrl, arrayToJSON, NdArray } = await import('/core.js');
    const asJSON = (v) => (typeof v !== 'object' ? v : v instanceof NdArray ? { shape: v.shape, values: arrayToJSON(v) } : v.map(asJSON));
    const out = {};
    for (const name of files) {
      const r = await openRaggedUrl(new URL(name, location.href));
      out[name] = { shape: r.raggedShape, layout: r.layout, elements: asJSON(await r.slice(0, r.length)), requests: r.stats.requests };
      await r.close();
    }
    return out;
  }, names);
  for (const name of names) {
    const h = openRaggedSync(join(dir, name));
    assert.is(inPage[name].shape, h.raggedShape, name);
    assert.is(inPage[name].layout, h.layout, name);
    assert.equal(inPage[name].elements, json(h.slice(0, h.length)), name);
    assert.ok(inPage[name].requests >= 2, `${name}: ${inPage[name].requests} requests`);
    h.close();
  }
  assert.equal(inPage['np.npy'].elements, ['ab', '', 'cdé']);
  assert.equal(inPage['picks.npy'].elements[0].shape, [4, 3]);
  assert.equal(problems, []);
  await page.close();
});

test.after(async () => {
  await browser.close();
  server.stop();
});

test.run();
