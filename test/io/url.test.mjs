// Remote reads with the caller's fetch: an nginx location that wants a bearer token is read through
// a fetch hook (or `headers`) and refused without it; the byte cache serves repeated reads; reads
// can be cancelled; a relative URL resolves against the page's address where there is one.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openNpy, openNpyUrl, withByteCache, bytesSource, openWeights, openNpz, openSafetensors, urlSource, NpyError } from '@npyts/core';
import { openWeights as openWeightsNode } from '@npyts/core/node';
import { resolveUrl } from '@npyts/core/plumbing';
import { python, scratch } from '../helpers/numpy.mjs';
import { startNginx, TEST_TOKEN } from '../helpers/nginx.mjs';

const dir = scratch('npyts-url-');
mkdirSync(join(dir, 'private'));
python(`np.save(${JSON.stringify(join(dir, 'private', 'w.npy'))}, np.arange(64 * 1000, dtype='<f4').reshape(64, 1000))
from safetensors.numpy import save_file
save_file({'fc': np.arange(12, dtype='<f4').reshape(3, 4) / 8}, ${JSON.stringify(join(dir, 'm.safetensors'))})
np.savez(${JSON.stringify(join(dir, 'z.npz'))}, fc=np.arange(12, dtype='<f4').reshape(3, 4) / 8)`);
const expected = JSON.parse(python(`a = np.load(${JSON.stringify(join(dir, 'private', 'w.npy'))}); print(json.dumps(a[5:9, 300:306].ravel().tolist()))`));
const server = await startNginx(dir);
const url = `${server.base}/private/w.npy`;

test('without the token nginx refuses, and the error says HTTP 401', async () => {
  let error = null;
  try {
    await openNpy(url);
  } catch (e) {
    error = e;
  }
  assert.ok(error && error.code === 'HTTP_STATUS' && /HTTP 401/.test(error.message), String(error));
});

test('a fetch hook that adds the bearer token reads the region numpy slices; so do `headers`', async () => {
  const seen = [];
  const authorised = (u, init) => {
    seen.push(init.headers.Range);
    return fetch(u, { ...init, headers: { ...init.headers, authorization: `Bearer ${TEST_TOKEN}` } });
  };
  const h = await openNpy(url, { fetch: authorised, expect: '<f4' });
  assert.equal(Array.from((await h.read([5, 300], [4, 6])).data), expected);
  assert.ok(seen.length >= 2 && seen.every((r) => /^bytes=/.test(r)), JSON.stringify(seen));
  const viaHeaders = await openNpy(url, { headers: { authorization: `Bearer ${TEST_TOKEN}` } });
  assert.equal(Array.from((await viaHeaders.read([5, 300], [4, 6])).data), expected);
});

test('the bytes of the first request are kept: a file no larger than firstRequest costs one request, whatever is read', async () => {
  const headers = { authorization: `Bearer ${TEST_TOKEN}` };
  const small = await openNpyUrl(url, { headers, firstRequest: 512 << 10 }); // the file is 256 KiB
  assert.equal(Array.from((await small.read([5, 300], [4, 6])).data), expected);
  await small.read([0, 0], [64, 1000]);
  assert.is(small.stats.requests, 1);
  const large = await openNpyUrl(url, { headers }); // the first 4096 bytes: the header, and a little data
  await large.read([5, 300], [4, 6]);
  assert.is(large.stats.requests, 2);
});

test('the byte cache answers a repeated read without a request; a cancelled read rejects', async () => {
  const h = await openNpyUrl(url, { headers: { authorization: `Bearer ${TEST_TOKEN}` }, cache: { maxBytes: 1 << 20 } });
  await h.read([5, 300], [4, 6]);
  const before = h.stats.requests;
  assert.equal(Array.from((await h.read([5, 300], [4, 6])).data), expected);
  assert.is(h.stats.requests, before, 'the repeated read made requests');
  assert.ok(h.stats.cached > 0);
  let error = null;
  try {
    await h.read([0, 0], [64, 1000], { signal: AbortSignal.abort() });
  } catch (e) {
    error = e;
  }
  assert.is(error?.name, 'AbortError');
});

test('every reader counts what it reads in stats, as the URL reader does: a Blob and bytes', async () => {
  const file = join(dir, 'stats.npy');
  python(`np.save(${JSON.stringify(file)}, np.arange(1000, dtype='<f8').reshape(100, 10))`);
  const bytes = readFileSync(file);
  for (const source of [new Blob([bytes]), new Uint8Array(bytes)]) {
    const h = await openNpy(source);
    const afterHeader = { ...h.stats };
    assert.ok(afterHeader.requests >= 1 && afterHeader.bytes >= 128, JSON.stringify(afterHeader));
    await h.read([10, 0], [5, 10]);
    assert.is(h.stats.requests, afterHeader.requests + 1);
    assert.is(h.stats.bytes, afterHeader.bytes + 5 * 10 * 8);
    assert.is(h.stats.cached, 0);
  }
});

test('withByteCache serves repeated reads of any source from memory, bounded by maxBytes', async () => {
  const bytes = new Uint8Array(1 << 20).map((_, i) => i % 251);
  let reads = 0;
  const counted = {
    size: bytes.length,
    read: async (o, l) => {
      reads++;
      return bytes.subarray(o, o + l);
    },
  };
  const cached = withByteCache(counted, { maxBytes: 256 << 10, blockBytes: 64 << 10 });
  assert.equal(Array.from(await cached.read(100_000, 10)), Array.from(bytes.subarray(100_000, 100_010)));
  assert.equal(Array.from(await cached.read(60_000, 10_000)), Array.from(bytes.subarray(60_000, 70_000)));
  const after = reads;
  (await cached.read(100_000, 10)).fill(0); // a reader's bytes are its own: writing them leaves the cache as it was
  assert.equal(
    Array.from(await cached.read(100_000, 10)),
    Array.from({ length: 10 }, (_, i) => (100_000 + i) % 251),
  );
  assert.is(reads, after, 'a cached block was read again');
  for (let k = 0; k < 8; k++) await cached.read(k * (64 << 10) + 300_000, 1); // push the first blocks out
  await cached.read(100_000, 10);
  assert.is(reads, after + 8 + 1, 'the least recently used block was not evicted');
  const h = await openNpy(bytesSource(new Uint8Array(await (await fetch(url, { headers: { authorization: `Bearer ${TEST_TOKEN}` } })).arrayBuffer())));
  assert.equal(Array.from((await h.read([5, 300], [4, 6])).data), expected);
});

test('urlSource(url) passed without await (a promise of the source) opens as the source does; a promise of something else is BAD_OPTION, not BAD_MAGIC', async () => {
  const fc = JSON.parse(python(`print(json.dumps((np.arange(12, dtype='<f4') / 8).tolist()))`));
  const plain = (name) => urlSource(`${server.base}/${name}`);
  for (const [what, open] of [
    ['openWeights', () => openWeights(plain('m.safetensors'))],
    ['node openWeights', () => openWeightsNode(plain('m.safetensors'))],
    ['openSafetensors', () => openSafetensors(plain('m.safetensors'))],
    ['openWeights of a .npz', () => openWeights(plain('z.npz'))],
  ]) {
    const w = await open();
    assert.equal(Array.from((await w.get('fc')).data), fc, what);
    await w.close();
  }
  const z = await openNpz(plain('z.npz'));
  assert.equal(Array.from((await z.get('fc')).data), fc);
  const h = await openNpy(urlSource(url, { headers: { authorization: `Bearer ${TEST_TOKEN}` } }));
  assert.equal(Array.from((await h.read([5, 300], [4, 6])).data), expected);
  for (const wrong of [Promise.resolve(42), {}, 'x'.length]) {
    const e = await openWeights(wrong).then(
      () => null,
      (err) => err,
    );
    assert.instance(e, NpyError, String(e));
    assert.is(e.code, 'BAD_OPTION', e.message);
    assert.match(e.message, /pass a URL, a Blob, bytes.* or a byte source/);
  }
});

test("relative URLs resolve against the page's address when there is one", () => {
  assert.is(resolveUrl('https://a.example/x.npy'), 'https://a.example/x.npy');
  assert.is(resolveUrl('data/x.npy'), 'data/x.npy'); // Node: no page, left as given
  globalThis.location = { href: 'https://site.example/app/index.html' };
  try {
    assert.is(resolveUrl('data/x.npy'), 'https://site.example/app/data/x.npy');
  } finally {
    delete globalThis.location;
  }
});

test.after(() => server.stop());
test.run();
