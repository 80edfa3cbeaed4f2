// HTTP reads that go wrong (issue 26): a reset connection and a redirect loop are NpyErrors naming the
// URL and the bytes; a path given to the browser-safe openNpy names @npyts/core/node; a lying
// multipart answer with a long boundary is searched in linear time; a contiguous region goes out in requests of
// at most 1 MiB (counted at the fetch hook, served by nginx).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { NpyError, openNpy, openNpyUrl } from '@npyts/core';
import { python, scratch } from '../helpers/numpy.mjs';
import { startNginx } from '../helpers/nginx.mjs';

const dir = scratch('npyts-url-failures-');

async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.unreachable('did not reject');
}

/** A local server whose every request `handle` answers; resolves to its base URL and a close function. */
async function serve(handle) {
  const server = createServer(handle);
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    base: `http://127.0.0.1:${server.address().port}`,
    close: () =>
      new Promise((ok) => {
        server.closeAllConnections();
        server.close(ok);
      }),
  };
}

test('when one range request fails, the others stop: the error does not wait for the rest of the region to be fetched', async () => {
  const file = join(dir, 'column.npy');
  python(`np.save(${JSON.stringify(file)}, np.arange(200 * 1000, dtype='<f8').reshape(200, 1000))`);
  const bytes = (await import('node:fs')).readFileSync(file);
  let served = 0;
  const s = await serve((req, res) => {
    const [from, to] = /bytes=(\d+)-(\d+)/.exec(req.headers.range).slice(1).map(Number);
    served++;
    if (served === 3) {
      res.writeHead(500);
      res.end();
      return;
    }
    res.writeHead(206, { 'content-range': `bytes ${from}-${to}/${bytes.length}`, 'content-length': String(to - from + 1) });
    res.end(bytes.subarray(from, to + 1));
  });
  try {
    const h = await openNpyUrl(`${s.base}/column.npy`, { rangesPerRequest: 1, maxGap: 0, concurrency: 4 });
    const before = served;
    const e = await rejection(h.read([0, 7], [200, 1])); // 200 ranges 8 kB apart, one request each
    assert.instance(e, NpyError);
    assert.match(e.message, /HTTP 500/);
    assert.ok(served - before < 20, `${served - before} requests for a read that failed at its second`);
  } finally {
    await s.close();
  }
});

test('a reset connection and a redirect loop are NpyErrors (NETWORK) that name the URL and the bytes asked for', async () => {
  const s = await serve((req, res) => {
    if (req.url === '/reset.npy') req.socket.destroy();
    else res.writeHead(302, { location: req.url }).end();
  });
  try {
    for (const name of ['reset.npy', 'loop.npy']) {
      const e = await rejection(openNpyUrl(`${s.base}/${name}`));
      assert.instance(e, NpyError, String(e));
      assert.is(e.code, 'NETWORK');
      assert.match(e.message, new RegExp(`${name}: the request for bytes 0-4095 failed`));
    }
  } finally {
    await s.close();
  }
});

test('a file path given to the browser-safe openNpy in Node says where files are opened', async () => {
  const e = await rejection(openNpy('data/x.npy'));
  assert.instance(e, NpyError);
  assert.match(e.message, /openNpyFile .*@npyts\/core\/node/);
});

test('a multipart answer whose parts lie about their length, with a long boundary, is refused at once (the search is linear)', async () => {
  const file = join(dir, 'multi.npy');
  python(`np.save(${JSON.stringify(file)}, np.full((2, 1_000_000), ord('-'), dtype='u1'))`);
  const bytes = (await import('node:fs')).readFileSync(file);
  const boundary = '-'.repeat(1499) + 'x'; // naive search: 1501 bytes compared at every position of the data
  const s = await serve((req, res) => {
    const ranges = /^bytes=(.*)$/
      .exec(req.headers.range)[1]
      .split(',')
      .map((r) => r.split('-').map(Number));
    if (ranges.length === 1) {
      const [a, b] = ranges[0];
      const end = Math.min(b, bytes.length - 1);
      res.writeHead(206, { 'content-range': `bytes ${a}-${end}/${bytes.length}` }).end(bytes.subarray(a, end + 1));
      return;
    }
    // Each part claims one byte and carries all of its range: a reader must search past the data.
    const parts = ranges.map(([a, b]) =>
      Buffer.concat([Buffer.from(`\r\n--${boundary}\r\ncontent-range: bytes ${a}-${a}/${bytes.length}\r\n\r\n`), bytes.subarray(a, b + 1)]),
    );
    res.writeHead(206, { 'content-type': `multipart/byteranges; boundary=${boundary}` }).end(Buffer.concat([...parts, Buffer.from(`\r\n--${boundary}--\r\n`)]));
  });
  try {
    // A server that answers multipart, though it does not say so in a Server header: multiRange: true.
    const h = await openNpyUrl(`${s.base}/multi.npy`, { multiRange: true });
    const t0 = performance.now();
    const e = await rejection(h.read([0, 0], [2, 450_000]));
    assert.instance(e, NpyError, String(e));
    assert.match(e.message, /lacks bytes/);
    assert.ok(performance.now() - t0 < 2000, `took ${(performance.now() - t0).toFixed(0)} ms`);
  } finally {
    await s.close();
  }
});

test('a contiguous 8 MiB region is asked for in requests of at most requestBytes (8 MiB by default), 16 MiB in flight at most', async () => {
  python(`np.save(${JSON.stringify(join(dir, 'big.npy'))}, np.arange(2 * 2**20, dtype='<f4'))`);
  const server = await startNginx(dir);
  try {
    const asked = [];
    const recording = (url, init) => {
      const [a, b] = /bytes=(\d+)-(\d+)/.exec(init.headers.Range).slice(1).map(Number);
      asked.push(b - a + 1);
      return fetch(url, init);
    };
    const h = await openNpyUrl(`${server.base}/big.npy`, { fetch: recording, requestBytes: 1 << 20 });
    const all = await h.read([0], [2 * 2 ** 20]);
    assert.is(all.data[2 * 2 ** 20 - 1], 2 * 2 ** 20 - 1);
    assert.ok(Math.max(...asked) <= 1 << 20, `a request asked for ${Math.max(...asked)} bytes`);
    assert.ok(asked.length >= 8);
    asked.length = 0;
    const byDefault = await openNpyUrl(`${server.base}/big.npy`, { fetch: recording });
    assert.equal((await byDefault.read([0], [2 * 2 ** 20])).data, all.data);
    assert.ok(Math.max(...asked) <= 8 << 20 && asked.length <= 3, `requests of ${asked.join(', ')} bytes`);
  } finally {
    server.stop();
  }
});

test.run();
