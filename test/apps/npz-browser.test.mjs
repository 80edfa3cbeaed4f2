// .npz archives read in a real Chromium: readAll() inflates deflated members in Web Workers with the
// platform's DecompressionStream and gives numpy's values; corrupt archives are refused with the
// same codes as in Node; a page whose policy forbids workers still reads (on its own thread).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { bundleForPage, launchChromium } from '../helpers/chromium.mjs';
import { numpy, python, scratch } from '../helpers/numpy.mjs';
import { startViewer } from '../../viewer/serve.mjs';

const dir = scratch('npyts-npz-browser-');
const corrupt = numpy('npz-corrupt', join(dir, 'corrupt'));
// Members of several dtypes and sizes (one of 8 MiB, which the stream delivers in many chunks), and
// what numpy says each holds: dtype, shape and the CRC-32 of its little-endian C-order bytes.
const expected = JSON.parse(
  python(`
import zlib
rng = np.random.default_rng(11)
arrays = {'w': rng.standard_normal((1024, 2048)).astype('<f4'), 'b': np.arange(7, dtype='<i8'), 'half': rng.standard_normal(33).astype('<f2'),
          'flags': np.array([True, False, True]), 'text': np.array(['a', 'bc', 'déf']), 'empty': np.zeros((0, 3), '<f8'), 'scalar': np.float64(2.5),
          'big_endian_F': np.asfortranarray(rng.standard_normal((5, 7))).astype('>f8')}
np.savez_compressed(${JSON.stringify(join(dir, 'weights.npz'))}, **arrays)
# A deflated member that inflates cleanly but whose CRC-32 (local and central header) is wrong.
import struct
b = bytearray(open(${JSON.stringify(join(dir, 'weights.npz'))}, 'rb').read())
c = b.find(b'PK\\x01\\x02')
struct.pack_into('<I', b, 14, struct.unpack_from('<I', b, 14)[0] ^ 1)
struct.pack_into('<I', b, c + 16, struct.unpack_from('<I', b, c + 16)[0] ^ 1)
open(${JSON.stringify(join(dir, 'deflated-crc.npz'))}, 'wb').write(bytes(b))
# An archive of one 8 MiB member (zipfile's plain headers, no zip64), inflated by a worker: declaring
# 1000 bytes fewer than it inflates to (local and central header), and with its stream damaged.
import io, zipfile
npy = io.BytesIO(); np.save(npy, arrays['w'])
one = io.BytesIO()
with zipfile.ZipFile(one, 'w', zipfile.ZIP_DEFLATED) as z: z.writestr('w.npy', npy.getvalue())
info = zipfile.ZipFile(io.BytesIO(one.getvalue())).getinfo('w.npy')
b = bytearray(one.getvalue())
c = b.find(b'PK\x01\x02')
struct.pack_into('<I', b, 22, info.file_size - 1000)
struct.pack_into('<I', b, c + 24, info.file_size - 1000)
open(${JSON.stringify(join(dir, 'deflated-size-lie.npz'))}, 'wb').write(bytes(b))
b = bytearray(one.getvalue())
middle = 30 + struct.unpack_from('<H', b, 26)[0] + struct.unpack_from('<H', b, 28)[0] + info.compress_size // 2
b[middle:middle + 64] = bytes(64 * [0xff])
open(${JSON.stringify(join(dir, 'deflated-corrupt.npz'))}, 'wb').write(bytes(b))
# The CRC of each array's data as npyts holds it: native (little-endian) order, the file's memory order.
held = lambda v: np.asarray(v).astype(np.asarray(v).dtype.newbyteorder('<')).tobytes(order='F' if np.isfortran(v) else 'C')
print(json.dumps({k: {'descr': np.asarray(v).dtype.str, 'shape': list(np.shape(v)), 'crc': zlib.crc32(held(v))} for k, v in arrays.items()}))
`),
);

await bundleForPage("export { decodeNpz } from '@npyts/core'; export { crc32 } from '@npyts/core/plumbing';", join(dir, 'core.js'));
const server = await startViewer({ port: 0, dataDir: dir });
const base = `http://127.0.0.1:${server.address().port}`;
const browser = await launchChromium();
const problems = [];

/** A page at `path` under the server (optionally answered with a Content-Security-Policy). */
async function pageAt(path, csp) {
  const page = await browser.newPage();
  page.on('pageerror', (e) => problems.push(String(e)));
  if (csp) {
    await page.route(`${base}${path}`, (route) =>
      route.fulfill({ status: 200, contentType: 'text/html', headers: { 'Content-Security-Policy': csp }, body: '<!doctype html><title>csp</title>' }),
    );
  }
  await page.goto(`${base}${path}`);
  return page;
}

/** In the page: every member by readAll(), described like numpy's side, and how many workers were made. */
const readInPage = (page, file, options = {}) =>
  page.evaluate(
    async ([url, options]) => {
      const { decodeNpz, crc32 } = await import('/data/core.js');
      let workers = 0;
      const Original = globalThis.Worker;
      globalThis.Worker = class extends Original {
        constructor(...args) {
          super(...args);
          workers++;
        }
      };
      try {
        const z = decodeNpz(new Uint8Array(await (await fetch(url)).arrayBuffer()), options);
        const out = {};
        const owns = {};
        for (const [name, a] of await z.getAll()) {
          out[name] = { descr: a.dtype.str, shape: [...a.shape], crc: crc32(new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength)) };
          // The data of a deflated member is a buffer of its own (no header bytes before it).
          if (a.data.byteLength) owns[name] = a.data.byteOffset === 0 && a.data.buffer.byteLength === a.data.byteLength;
        }
        return { out, workers, owns };
      } catch (e) {
        return { error: e.code ?? String(e), workers };
      } finally {
        globalThis.Worker = Original;
      }
    },
    [file, options],
  );

test("readAll() in the page gives numpy's members, inflated in workers", async () => {
  const page = await pageAt('/data/core.js');
  const { out, workers, error, owns } = await readInPage(page, '/data/weights.npz');
  assert.is(error, undefined);
  assert.equal(
    Object.values(owns).filter((x) => !x),
    [],
    JSON.stringify(owns),
  );
  // Text is UTF-32 in numpy; npyts holds it as strings, so compare it by value instead of bytes.
  const { text, ...rest } = out;
  const { text: wantText, ...wantRest } = expected;
  assert.equal(rest, wantRest);
  assert.equal([text.descr, text.shape], [wantText.descr, wantText.shape]);
  assert.ok(workers >= 1, `workers made: ${workers}`);
  await page.close();
});

test('corrupt archives are refused in the page with the codes Node gives', async () => {
  const page = await pageAt('/data/core.js');
  const codes = {};
  for (const name of ['crc_mismatch', 'corrupt_deflate', 'size_lie_smaller', 'size_lie_larger', 'truncated']) {
    codes[name] = (await readInPage(page, `/data/corrupt/${name}.npz`)).error;
  }
  // A deflated member whose CRC is wrong: the worker's CRC is what catches it. A large member that
  // inflates past its declared size, or whose stream is damaged: the worker's stream stops it.
  codes.deflated_crc = (await readInPage(page, '/data/deflated-crc.npz')).error;
  codes.deflated_size_lie = (await readInPage(page, '/data/deflated-size-lie.npz')).error;
  codes.deflated_corrupt = (await readInPage(page, '/data/deflated-corrupt.npz')).error;
  assert.equal(codes, {
    deflated_crc: 'ZIP_CRC',
    deflated_size_lie: 'ZIP_SIZE',
    // Damaged data may fail as a stream, inflate to another size, or to other bytes: refused either way.
    deflated_corrupt: ['ZIP_FORMAT', 'ZIP_SIZE', 'ZIP_CRC'].includes(codes.deflated_corrupt) ? codes.deflated_corrupt : 'a zip error',
    crc_mismatch: 'ZIP_CRC',
    corrupt_deflate: codes.corrupt_deflate === 'ZIP_CRC' ? 'ZIP_CRC' : 'ZIP_FORMAT',
    size_lie_smaller: 'ZIP_SIZE',
    size_lie_larger: 'ZIP_SIZE',
    truncated: 'ZIP_FORMAT',
  });
  assert.ok(Object.keys(corrupt).includes('corrupt_deflate'));
  await page.close();
});

test('{ checkCrc: false } in the page: the member whose CRC-32 is wrong is read by the workers as numpy reads the unaltered archive', async () => {
  const page = await pageAt('/data/core.js');
  const { out, workers, error } = await readInPage(page, '/data/deflated-crc.npz', { checkCrc: false });
  assert.is(error, undefined);
  assert.equal(out.w, expected.w);
  assert.equal(out.b, expected.b);
  assert.ok(workers >= 1, `workers made: ${workers}`);
  await page.close();
});

test('a page whose policy forbids workers reads the archive on its own thread', async () => {
  const page = await pageAt('/data/csp.html', "worker-src 'none'");
  const { out, error } = await readInPage(page, '/data/weights.npz');
  assert.is(error, undefined);
  assert.equal(out.w, expected.w);
  assert.equal(out.b, expected.b);
  await page.close();
});

test("a worker that cannot run its program (a bundler rewrote it) hands its members back to the page's thread", async () => {
  const page = await pageAt('/data/core.js');
  const result = await page.evaluate(async () => {
    const { decodeNpz } = await import('/data/core.js');
    const Original = globalThis.Worker;
    // Every worker answers each job with the error a missing helper would raise.
    const broken = URL.createObjectURL(
      new Blob(["onmessage = (e) => postMessage({ id: e.data.id, error: 'ReferenceError: __async is not defined' })"], { type: 'text/javascript' }),
    );
    globalThis.Worker = class extends Original {
      constructor() {
        super(broken);
      }
    };
    try {
      const z = decodeNpz(new Uint8Array(await (await fetch('/data/weights.npz')).arrayBuffer()));
      const all = await z.getAll();
      const corrupt = await decodeNpz(new Uint8Array(await (await fetch('/data/corrupt/corrupt_deflate.npz')).arrayBuffer()))
        .getAll()
        .then(
          () => 'read',
          (e) => e.code,
        );
      return { shape: [...all.get('w').shape], first: all.get('b').data[3].toString(), corrupt };
    } finally {
      globalThis.Worker = Original;
    }
  });
  assert.equal(result.shape, expected.w.shape);
  assert.is(result.first, '3');
  assert.ok(['ZIP_FORMAT', 'ZIP_CRC'].includes(result.corrupt), result.corrupt);
  await page.close();
});

test('an abort takes the members not yet started out of the queue; later reads still work', async () => {
  const page = await pageAt('/data/core.js');
  const result = await page.evaluate(async () => {
    const { decodeNpz } = await import('/data/core.js');
    let posted = 0;
    const Original = globalThis.Worker;
    globalThis.Worker = class extends Original {
      postMessage(...args) {
        posted++;
        return super.postMessage(...args);
      }
    };
    try {
      const z = decodeNpz(new Uint8Array(await (await fetch('/data/weights.npz')).arrayBuffer()));
      const controller = new AbortController();
      const reading = z.getAll({ signal: controller.signal });
      controller.abort();
      const aborted = await reading.then(
        () => 'read',
        (e) => e.name,
      );
      await new Promise((r) => setTimeout(r, 200));
      const postedBeforeAbort = posted;
      const again = await z.getAll();
      return { aborted, again: again.size, postedBeforeAbort, members: z.names.length, cores: navigator.hardwareConcurrency };
    } finally {
      globalThis.Worker = Original;
    }
  });
  assert.is(result.aborted, 'AbortError');
  assert.is(result.again, Object.keys(expected).length);
  // Only the members already handed to a worker (one per worker: a pool of one more than the cores) ran; the rest left the queue.
  assert.ok(result.postedBeforeAbort <= Math.min(5, Math.max(2, result.cores) + 1), JSON.stringify(result));
  assert.ok(result.postedBeforeAbort < result.members, JSON.stringify(result));
  await page.close();
});

test('no uncaught errors in the pages', () => {
  assert.equal(problems, []);
});

test.after(async () => {
  await browser.close();
  server.close();
});

test.run();
