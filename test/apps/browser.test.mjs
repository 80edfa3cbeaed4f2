// The viewer and the tfjs demo in a real Chromium (Debian's, driven by playwright-core): files
// opened through the file input and by URL (range requests), checked against numpy; errors shown;
// the heatmap drawn; the demo's accuracy equal to numpy's.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { launchChromium, CHROMIUM } from '../helpers/chromium.mjs';
import { build } from 'esbuild';
import { python, scratch } from '../helpers/numpy.mjs';
import { startViewer } from '../../viewer/serve.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = scratch('npyts-browser-');
if (!existsSync(CHROMIUM)) throw new Error("the browser tests need Debian's chromium at /usr/bin/chromium (.ci/run installs it)");

// numpy makes the fixtures and says what the first page of each holds (rows × up to 40 columns).
const fixtures = JSON.parse(
  python(`
import sys
sys.path.insert(0, ${JSON.stringify(join(root, 'test', 'helpers'))})
from npyfixtures import make, to_json, descr_json
d = ${JSON.stringify(dir)}
rng = np.random.default_rng(9)
arrays = {
  'matrix': rng.standard_normal((70, 45)).astype('<f4'),
  'fortran_be': np.asfortranarray(make('>f8', (30, 12), seed=2)),
  'records': make([('id', '<i8'), ('name', '<U5'), ('pos', '<f4', (2,))], (8,), seed=3),
  'big_ints': np.array([2**63 - 1, -2**63, 2**53 + 1, 7], dtype='<i8'),
  'cube': make('<i2', (3, 4, 5), seed=4),
  # Long doubles past a double's range and precision, shown from their exact values.
  'long_doubles': np.array([np.longdouble('1e400'), np.longdouble(1) / 3, 2.5, -np.longdouble('1e-4000'), np.finfo(np.longdouble).max], dtype='>f16'),
}
def shown(page):
    # A float cell shows what numpy's str of a scalar of its width shows: float32 digits for a float32.
    if page.dtype.kind == 'f':
        return [[str(v) for v in row] for row in page] if page.ndim == 2 else [str(v) for v in page]
    if page.dtype.names:
        # Fields too: a float32 subarray field shows float32 digits.
        rows = to_json(page)
        for row, rec in zip(rows, page):
            for name in page.dtype.names:
                if page.dtype[name].base.kind == 'f':
                    row[name] = [str(v) for v in np.ravel(rec[name])]
        return rows
    return to_json(page)
out = {}
for name, a in arrays.items():
    np.save(f'{d}/{name}.npy', a)
    view = a if a.ndim <= 2 else a[0]
    page = view[:50, :40] if view.ndim == 2 else view[:50]
    out[name] = {'file': f'{d}/{name}.npy', 'shape': list(a.shape), 'descr': np.lib.format.dtype_to_descr(a.dtype) if a.dtype.names is None else descr_json(a.dtype.descr), 'page': shown(page)}
np.savez_compressed(f'{d}/archive.npz', first=arrays['matrix'][:5], second=arrays['big_ints'])
big = np.lib.format.open_memmap(f'{d}/remote.npy', mode='w+', dtype='<f4', shape=(8192, 2048))
big[:50, :] = rng.standard_normal((50, 2048)).astype(np.float32)
big.flush()
out['remote'] = {'file': f'{d}/remote.npy', 'shape': [8192, 2048], 'page': shown(np.asarray(big[:50, :40])), 'size': int(big.nbytes)}
del big
open(f'{d}/broken.npy', 'wb').write(b'\\x93NUMPX not a real file')
np.save(f'{d}/objects.npy', np.array([1, 'two', None, [3]], dtype=object), allow_pickle=True)
print(json.dumps(out))
`),
);

const server = await startViewer({ port: 0, dataDir: dir });
const base = `http://127.0.0.1:${server.address().port}`;
const browser = await launchChromium();
const page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
const problems = [];
page.on('pageerror', (e) => problems.push(String(e)));
await page.goto(`${base}/`);

async function idle() {
  await page.waitForFunction(() => document.body.dataset.state === 'idle');
}

async function openFile(path) {
  await page.setInputFiles('#file', path);
  await page.waitForTimeout(50);
  await idle();
}

const headerValue = (key) => page.$eval(`#header-table tr[data-key="${key}"] td`, (td) => td.textContent);
/** The value cells of the table, row by row (the first cell of a row is its index). */
const tableCells = () =>
  page.$$eval('#values-table tr', (trs) => trs.slice(1).map((tr) => [...tr.querySelectorAll('td')].slice(1).map((td) => td.textContent)));
const text = (v) => (typeof v === 'string' ? v : JSON.stringify(v));

test("files opened through the file input show numpy's header and first page of values", async () => {
  for (const name of ['matrix', 'fortran_be', 'big_ints', 'cube', 'long_doubles']) {
    const f = fixtures[name];
    await openFile(f.file);
    assert.is(await page.isHidden('#error'), true, await page.textContent('#error'));
    assert.is(await headerValue('descr'), `'${f.descr}'`, name);
    assert.is(await headerValue('shape'), `(${f.shape.join(', ')}${f.shape.length === 1 ? ',' : ''})`);
    const cells = await tableCells();
    const want = f.page.map((row) => (Array.isArray(row) ? row.map(text) : [text(row)]));
    assert.equal(cells, want, name);
    if (name === 'fortran_be') {
      assert.match(await headerValue('order'), /Fortran/);
      assert.is(await headerValue('byte order'), 'big-endian');
    }
  }
});

test('record arrays show a field tree with offsets and one column per field', async () => {
  const f = fixtures.records;
  await openFile(f.file);
  const tree = await page.textContent('#fields');
  assert.match(tree, /id @ offset 0: <i8/);
  assert.match(tree, /name @ offset 8: <U5/);
  assert.match(tree, /pos @ offset 28: <f4 × \(2\)/);
  const cells = await tableCells();
  assert.equal(
    cells,
    f.page.map((r) => [text(r.id), r.name, `[${r.pos.join(', ')}]`]),
  );
});

test('archives list their members, with sizes and compression, and show them', async () => {
  await openFile(join(dir, 'archive.npz'));
  const members = await page.$$eval('#members-table tr', (trs) => trs.slice(1).map((tr) => [...tr.cells].slice(0, 3).map((c) => c.textContent)));
  assert.is(members.length, 2);
  assert.equal(
    members.map((m) => m[0]),
    ['first', 'second'],
  );
  assert.ok(members.every((m) => /deflated/.test(m[2])));
  await page.click('#members-table button[data-member="second"]');
  await idle();
  assert.equal(
    (await tableCells()).map((r) => r[0]),
    fixtures.big_ints.page.map(text),
  );
});

test('a URL is read with range requests: the header and the visible page only', async () => {
  const f = fixtures.remote;
  await page.fill('#url', `${base}/data/remote.npy`);
  await page.click('#load-url');
  await idle();
  assert.is(await page.isHidden('#error'), true, await page.textContent('#error'));
  assert.is(await headerValue('shape'), '(8192, 2048)');
  assert.equal(
    await tableCells(),
    f.page.map((row) => row.map(text)),
  );
  const transfer = await page.textContent('#transfer');
  const bytes = Number(/(\d+) bytes transferred/.exec(transfer)[1]);
  assert.ok(bytes < 1_000_000, transfer);
  assert.ok(bytes < f.size / 50, transfer);
});

test('a small file opened by URL costs one request (the 12 728-byte matrix)', async () => {
  await page.fill('#url', `${base}/data/matrix.npy`);
  await page.click('#load-url');
  await idle();
  assert.is(await page.isHidden('#error'), true, await page.textContent('#error'));
  assert.equal(
    await tableCells(),
    fixtures.matrix.page.map((row) => row.map(text)),
  );
  assert.match(await page.textContent('#transfer'), /^1 range request, 12728 bytes transferred of 12728/);
});

test('a large file dropped on the page is read by Blob slices: the header and the visible page only', async () => {
  const f = fixtures.remote;
  await openFile(f.file);
  assert.is(await page.isHidden('#error'), true, await page.textContent('#error'));
  assert.is(await headerValue('shape'), '(8192, 2048)');
  assert.equal(
    await tableCells(),
    f.page.map((row) => row.map(text)),
  );
  const transfer = await page.textContent('#transfer');
  const bytes = Number(/(\d+) bytes of \d+/.exec(transfer)[1]);
  assert.ok(bytes < 1_000_000, transfer);
  assert.ok(bytes < f.size / 50, transfer);
});

test('malformed files and object arrays without opt-in give readable messages', async () => {
  await openFile(join(dir, 'broken.npy'));
  assert.match(await page.textContent('#error'), /not a \.npy file/);
  await openFile(join(dir, 'objects.npy'));
  assert.match(await page.textContent('#error'), /allow object arrays/);
  await page.check('#allow-pickle');
  await openFile(join(dir, 'objects.npy'));
  assert.is(await page.isHidden('#error'), true);
  assert.equal(
    (await tableCells()).map((r) => r[0]),
    ['1', 'two', 'null', '[3]'],
  );
  await page.uncheck('#allow-pickle');
});

test('the heatmap is drawn (not blank) and a screenshot is taken', async () => {
  await openFile(fixtures.matrix.file);
  const colours = await page.$eval('#heatmap', (c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const seen = new Set();
    for (let i = 0; i < d.length; i += 4) seen.add(`${d[i]},${d[i + 1]},${d[i + 2]}`);
    return seen.size;
  });
  assert.ok(colours > 50, `${colours} colours`);
  const shot = await page.locator('#plots').screenshot();
  assert.ok(shot.length > 5000);
  mkdirSync(join(dir, 'shots'), { recursive: true });
  writeFileSync(join(dir, 'shots', 'heatmap.png'), shot);
  if (process.env.NPYTS_SCREENSHOT) writeFileSync(process.env.NPYTS_SCREENSHOT, await page.screenshot({ fullPage: false }));
});

test("the tfjs demo runs in the page with numpy's accuracy", async () => {
  await page.click('#run-demo');
  await page.waitForFunction(() => /agreeing/.test(document.getElementById('demo-result').textContent) || !document.getElementById('error').hidden, null, {
    timeout: 60000,
  });
  const result = await page.textContent('#demo-result');
  const stored = Number(python(`print(float(np.load(${JSON.stringify(join(root, 'demo', 'digits-mlp.npz'))})['numpy_accuracy']))`));
  assert.match(result, /agreeing with numpy's: 360\/360/);
  assert.match(result, /loaded back: identical outputs/);
  assert.match(result, new RegExp(`accuracy ${stored.toFixed(4)}`));
});

test('the PyTorch CNN demo runs in the page and agrees with PyTorch on every held-out digit', async () => {
  await page.click('#run-torch-demo');
  await page.waitForFunction(
    () => /agreeing/.test(document.getElementById('torch-demo-result').textContent) || !document.getElementById('error').hidden,
    null,
    { timeout: 60000 },
  );
  const result = await page.textContent('#torch-demo-result');
  const torchRight = python(
    `z = np.load(${JSON.stringify(join(root, 'demo', 'digits-cnn.npz'))}); print(int((z['check/output'].argmax(1) == z['check/labels']).sum()))`,
  ).trim();
  assert.match(result, new RegExp(`PyTorch: ${torchRight}/360`));
  assert.match(result, /agreeing with PyTorch's: 360\/360/);
  assert.match(result, new RegExp(`in tfjs \\(cpu backend in the browser\\): ${torchRight}/360 right`));
});

test("a GGUF file lists its tensors with their ggml types, and shows each as gguf-py dequantizes it (numpy's str of each float32)", async () => {
  const want = JSON.parse(
    python(`
import gguf
from gguf.constants import GGMLQuantizationType as Q
rng = np.random.default_rng(5)
w = gguf.GGUFWriter(${JSON.stringify(join(dir, 'model.gguf'))}, 'test')
x = rng.standard_normal((4, 64)).astype(np.float32)
q = gguf.quants.quantize(x, Q.Q8_0)
w.add_tensor('blk.0.q8', q, raw_dtype=Q.Q8_0)
w.add_tensor('norm', rng.standard_normal(5).astype(np.float32))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
deq = gguf.quants.dequantize(q, Q.Q8_0)
r = gguf.GGUFReader(${JSON.stringify(join(dir, 'model.gguf'))})
print(json.dumps({'names': [t.name for t in r.tensors], 'types': [t.tensor_type.name for t in r.tensors],
                  'q8': [[str(v) for v in row[:40]] for row in deq], 'norm': [str(v) for v in r.tensors[1].data]}))`),
  );
  await openFile(join(dir, 'model.gguf'));
  assert.is(await page.isHidden('#error'), true, await page.textContent('#error'));
  assert.match(await page.textContent('#source-info'), /model\.gguf.*:blk\.0\.q8/);
  const members = await page.$$eval('#members-table tr', (trs) => trs.slice(1).map((tr) => [...tr.cells].slice(0, 3).map((c) => c.textContent)));
  assert.equal(
    members.map((m) => m[0]),
    want.names,
  );
  assert.equal(members[0], ['blk.0.q8', 'float32 (4, 64)', `${want.types[0]} (dequantized to float32)`]);
  assert.equal(members[1], ['norm', 'float32 (5,)', 'as is']);
  // The first tensor is shown at once: gguf-py's dequantized values.
  assert.equal(await tableCells(), want.q8);
  await page.click('#members-table button[data-member="norm"]');
  await idle();
  assert.equal(
    (await tableCells()).map((r) => r[0]),
    want.norm,
  );
});

test('a weight file: "Read every tensor" fills a progress bar (bytes of the total, by tensor) to the end, and Cancel aborts it', async () => {
  // Four 2 MiB tensors as safetensors writes them: each arrives as its own step of the bar.
  const want = JSON.parse(
    python(`
import torch
from safetensors.torch import save_file
t = {f'layer{i}.weight': torch.full((512, 1024), float(i)) for i in range(4)}
save_file(t, ${JSON.stringify(join(dir, 'four.safetensors'))})
print(json.dumps({'names': list(t), 'bytes': sum(v.numel() * v.element_size() for v in t.values())}))`),
  );
  await openFile(join(dir, 'four.safetensors'));
  assert.is(await page.isHidden('#read-all-controls'), false);
  // Every value the bar takes, as the page sets it; with window.cancelOnFirst, Cancel clicked at the first.
  await page.evaluate(() => {
    const bar = document.getElementById('load-progress');
    const set = Object.getOwnPropertyDescriptor(HTMLProgressElement.prototype, 'value').set;
    window.barValues = [];
    Object.defineProperty(bar, 'value', {
      get: () => Number(bar.getAttribute('value')),
      set(v) {
        set.call(bar, v);
        window.barValues.push([v, bar.max]);
        if (v > 0 && window.cancelOnFirst) document.getElementById('cancel-read').click();
      },
    });
  });
  await page.click('#read-all');
  await idle();
  const values = await page.evaluate(() => window.barValues.filter(([v]) => v > 0));
  assert.ok(values.length >= want.names.length, JSON.stringify(values));
  assert.ok(
    values.every(([v, max], i) => max === want.bytes && v >= (values[i - 1]?.[0] ?? 0)),
    JSON.stringify(values),
  );
  assert.is(values.at(-1)[0], want.bytes);
  assert.match(await page.textContent('#load-status'), new RegExp(`all 4 tensors read: ${want.bytes} bytes`));
  // Cancel as soon as the first tensor arrives: the read stops with the bar short of the end.
  await page.evaluate(() => {
    window.cancelOnFirst = true;
  });
  await page.click('#read-all');
  await idle();
  const [, at, of] = /^cancelled at (\d+) of (\d+) bytes$/.exec(await page.textContent('#load-status')) ?? [];
  assert.ok(Number(at) > 0 && Number(at) < Number(of) && Number(of) === want.bytes, await page.textContent('#load-status'));
  assert.is(await page.isHidden('#error'), true, await page.textContent('#error'));
});

test('no uncaught errors in the page; bundle sizes reported', async () => {
  assert.equal(problems, []);
  const size = async (entry) => {
    const out = await build({ entryPoints: [entry], bundle: true, minify: true, format: 'esm', platform: 'browser', write: false, absWorkingDir: root });
    return gzipSync(out.outputFiles[0].contents).length;
  };
  const core = await size('packages/core/dist/index.js');
  const withPickle = await build({
    stdin: { contents: "export * from '@npyts/core'; export * from '@npyts/core/pickle';", resolveDir: root },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    write: false,
  });
  const both = gzipSync(withPickle.outputFiles[0].contents).length;
  console.log(
    `      @npyts/core browser bundle (minified, gzip, fflate included): ${(core / 1024).toFixed(1)} KiB; with the pickle entry: ${(both / 1024).toFixed(1)} KiB`,
  );
  assert.ok(core < both);
});

test.after(async () => {
  await browser.close();
  server.close();
});

test.run();
