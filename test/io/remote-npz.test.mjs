// One archive over one byte source (issue 40): a .npz read by URL moves only what is asked for
// (the directory, a member's header, a member, a region of a stored member), counted at a proxy in
// front of nginx; S3 (moto_server) through a presigned URL and through a signing fetch hook; S3's
// whole-object answer to a multi-range request is paid once per origin, not once per reader;
// aborts stop the requests; a server that lies about sizes is refused.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, request } from 'node:http';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { SignatureV4 } from '@smithy/signature-v4';
import { NpyError, NpzArchive, arrayToJSON, openNpyUrl, openNpz, urlSource } from '@npyts/core';
import { loadNpz as loadNpzNode, openNpz as openNpzNode, streamNpzMember } from '@npyts/core/node';
import { pathToFileURL } from 'node:url';
import { python, scratch } from '../helpers/numpy.mjs';
import { startNginx } from '../helpers/nginx.mjs';
import { CREDENTIALS, REGION, Sha256, startMoto } from '../helpers/s3.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';

const dir = scratch('npyts-remote-npz-');
const archive = join(dir, 'x.npz');
// head (small, stored, first), filler (8 MiB, stored), big (16 MiB, stored), small (deflated), wide
// (16 MiB, stored), tail (stored, inside the last 64 KiB).
python(`
import io, zipfile
def npy(a):
    b = io.BytesIO(); np.save(b, a); return b.getvalue()
with zipfile.ZipFile(${JSON.stringify(archive)}, 'w') as z:
    z.writestr('head.npy', npy(np.arange(100, dtype='u1')), compress_type=zipfile.ZIP_STORED)
    z.writestr('filler.npy', npy(np.random.default_rng(0).random((1024, 1024))), compress_type=zipfile.ZIP_STORED)
    z.writestr('big.npy', npy(np.arange(4096 * 1024, dtype='<f4').reshape(4096, 1024)), compress_type=zipfile.ZIP_STORED)
    z.writestr('small.npy', npy(np.linspace(0, 1, 5000)), compress_type=zipfile.ZIP_DEFLATED)
    z.writestr('wide.npy', npy(np.arange(32 * 131072, dtype='<f4').reshape(32, 131072)), compress_type=zipfile.ZIP_STORED)
    z.writestr('tail.npy', npy(np.arange(10, dtype='u1')), compress_type=zipfile.ZIP_STORED)
np.save(${JSON.stringify(join(dir, 'wide.npy'))}, np.arange(32 * 131072, dtype='<f4').reshape(32, 131072))
`);
const size = statSync(archive).size;
const KiB64 = 64 << 10;

/** What numpy says of the archive: keys, each member's shape and dtype, compressed sizes, and values of small members. */
const truth = JSON.parse(
  python(`
import json, zipfile
z = np.load(${JSON.stringify(archive)})
info = {i.filename: i.compress_size for i in zipfile.ZipFile(${JSON.stringify(archive)}).infolist()}
dirsize = sum(46 + len(i.filename) + len(i.extra) for i in zipfile.ZipFile(${JSON.stringify(archive)}).infolist()) + 22
print(json.dumps({'files': z.files, 'shapes': {k: list(z[k].shape) for k in z.files}, 'dtypes': {k: z[k].dtype.str for k in z.files},
  'compressed': info, 'dir': dirsize, 'small': z['small'].tolist(), 'rows': z['big'][1000:1064].tolist(), 'tail': z['tail'].tolist(),
  'head': z['head'].tolist()}))`),
);

/**
 * A proxy in front of `upstream` that counts requests, the Range each asked for, and the body bytes
 * it sent back; `onRequest` sees each request first.
 */
async function countingProxy(upstream) {
  const seen = { requests: 0, bytes: 0, ranges: [], inFlight: 0, mostInFlight: 0 };
  let onRequest = () => {};
  const target = new URL(upstream);
  const server = createServer((req, res) => {
    seen.requests++;
    seen.ranges.push(req.headers.range ?? '');
    seen.mostInFlight = Math.max(seen.mostInFlight, ++seen.inFlight);
    res.on('close', () => seen.inFlight--);
    onRequest(req);
    const up = request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.on('data', (chunk) => {
        seen.bytes += chunk.length;
        res.write(chunk);
      });
      answer.on('end', () => res.end());
    });
    res.on('close', () => up.destroy());
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    base: `http://127.0.0.1:${server.address().port}`,
    seen,
    set onRequest(f) {
      onRequest = f;
    },
    reset() {
      seen.requests = 0;
      seen.bytes = 0;
      seen.ranges = [];
      seen.mostInFlight = 0;
    },
    close: () =>
      new Promise((ok) => {
        server.closeAllConnections();
        server.close(ok);
      }),
  };
}

const nginx = await startNginx(dir);
const proxy = await countingProxy(nginx.base);
const moto = await startMoto();
await moto.client.send(new CreateBucketCommand({ Bucket: 'arrays' }));
for (const key of ['x.npz', 'wide.npy']) await moto.client.send(new PutObjectCommand({ Bucket: 'arrays', Key: key, Body: readFileSync(join(dir, key)) }));

/** A fetch hook that signs every request (AWS Signature V4), as a user's hook for a private bucket does. */
const signer = new SignatureV4({ credentials: CREDENTIALS, region: REGION, service: 's3', sha256: Sha256 });
let signed = 0;
const signingFetch = async (url, init) => {
  const u = new URL(url);
  const request = await signer.sign({
    method: 'GET',
    protocol: u.protocol,
    hostname: u.hostname,
    port: Number(u.port),
    path: u.pathname,
    headers: { ...init.headers, host: u.host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' },
  });
  if (request.headers.authorization?.startsWith('AWS4-HMAC-SHA256')) signed++;
  const { host: _, ...headers } = request.headers;
  return fetch(url, { headers, signal: init.signal });
};

test('a remote .npz: the directory, a header, a deflated member, a region of a stored member and a whole member each move only their bytes', async () => {
  proxy.reset();
  const source = await urlSource(`${proxy.base}/x.npz`);
  const z = await openNpz(source);
  assert.equal([...z.names], truth.files);
  assert.ok(proxy.seen.bytes <= truth.dir + KiB64 + 22, `opening moved ${proxy.seen.bytes} bytes`);

  let before = proxy.seen.bytes;
  const h = await z.header('big');
  assert.equal([h.dtype.str, h.shape], [truth.dtypes.big, truth.shapes.big]);
  assert.ok(proxy.seen.bytes - before <= KiB64, `a header moved ${proxy.seen.bytes - before} bytes`);

  before = proxy.seen.bytes;
  assert.equal(arrayToJSON(await z.get('small')), truth.small);
  assert.ok(proxy.seen.bytes - before <= truth.compressed['small.npy'] + KiB64, `a deflated member moved ${proxy.seen.bytes - before} bytes`);

  before = proxy.seen.bytes;
  const m = await z.openMember('big', { expect: '<f4' });
  const rows = await m.read([1000, 0], [64, 1024]);
  assert.equal(arrayToJSON(rows), truth.rows);
  assert.ok(proxy.seen.bytes - before <= 64 * 4096 + KiB64, `a region of 256 KiB moved ${proxy.seen.bytes - before} bytes`);

  before = proxy.seen.bytes;
  const big = await z.get('big');
  assert.equal(big.shape, truth.shapes.big);
  assert.is(big.data[4096 * 1024 - 1], 4096 * 1024 - 1);
  assert.ok(proxy.seen.bytes - before <= truth.compressed['big.npy'] + KiB64, `a 16 MiB member moved ${proxy.seen.bytes - before} bytes`);
  assert.ok(proxy.seen.bytes < size, 'the whole archive moved');

  // A column of a wide stored member: its rows are 512 KiB apart. nginx answers several ranges in one
  // request, so the 32 go together; where multi-range requests are off, one small read each, several in flight.
  const column32 = Array.from({ length: 32 }, (_, i) => i * 131072 + 7);
  before = proxy.seen.bytes;
  let requests = proxy.seen.requests;
  const wide = await z.openMember('wide');
  assert.equal(Array.from((await wide.read([0, 7], [32, 1])).data), column32);
  assert.ok(proxy.seen.bytes - before <= 32 * 4 + 32 * 200 + KiB64, `a column of 32 values moved ${proxy.seen.bytes - before} bytes`);
  assert.is(proxy.seen.requests - requests, 1, `${proxy.seen.requests - requests} requests for a column of 32 values`);
  assert.is(proxy.seen.ranges.at(-1).split(',').length, 32);

  // The member in the tail came with the first request: no request at all.
  before = proxy.seen.requests;
  assert.equal(arrayToJSON(await z.get('tail')), truth.tail);
  assert.is(proxy.seen.requests, before);
  // Every byte the server sent was counted by the source, and no more.
  assert.is(source.stats.bytes, proxy.seen.bytes);
  assert.is(source.stats.reads, proxy.seen.requests);
  // Where multi-range requests are off: one small read per row, several in flight.
  const single = await openNpz(await urlSource(`${proxy.base}/x.npz`, { multiRange: false }));
  proxy.seen.mostInFlight = 0;
  before = proxy.seen.bytes;
  requests = proxy.seen.requests;
  assert.equal(Array.from((await (await single.openMember('wide')).read([0, 7], [32, 1])).data), column32);
  assert.ok(proxy.seen.bytes - before <= 32 * 4 + 2 * KiB64, `a column of 32 values moved ${proxy.seen.bytes - before} bytes`);
  assert.ok(proxy.seen.requests - requests >= 32, 'the rows were not read one range a request');
  assert.ok(proxy.seen.mostInFlight > 1, 'the rows were read one request at a time');
  await single.close();
  await z.close();
});

test("getAll of a remote .npz reads neighbouring members together: each byte of the archive once, in requests of the source's size, not one or more per member", async () => {
  // Many small members between larger ones, as a state_dict has (conv weights, biases, BN statistics).
  const many = join(dir, 'many.npz');
  python(`
rng = np.random.default_rng(1)
arrays = {}
for i in range(60):
    arrays[f'layer{i}.weight'] = rng.standard_normal((64, 9 * (i % 5 + 1))).astype('<f4')
    arrays[f'layer{i}.bias'] = rng.standard_normal(64).astype('<f4')
    arrays[f'layer{i}.running_mean'] = rng.standard_normal(64).astype('<f4')
arrays['fc.weight'] = rng.standard_normal((1000, 2048)).astype('<f4')  # 8 MiB
np.savez(${JSON.stringify(many)}, **arrays)`);
  const manySize = statSync(many).size;
  proxy.reset();
  const source = await urlSource(`${proxy.base}/many.npz`, { requestBytes: 1 << 20 });
  const z = await openNpz(source);
  const opened = { requests: proxy.seen.requests, bytes: proxy.seen.bytes };
  const all = await z.getAll();
  assert.is(all.size, 181);
  const sums = JSON.parse(
    python(
      `import json; z = np.load(${JSON.stringify(many)}); print(json.dumps({k: float(z[k].astype('f8').sum()) for k in ['layer7.weight', 'layer59.bias', 'fc.weight']}))`,
    ),
  );
  for (const [k, v] of Object.entries(sums)) {
    const a = all.get(k);
    let t = 0;
    for (const x of a.data) t += x;
    assert.ok(Math.abs(t - v) <= 1e-3 * Math.max(1, Math.abs(v)), `${k}: ${t} against numpy's ${v}`);
  }
  const requests = proxy.seen.requests - opened.requests;
  const bytes = proxy.seen.bytes - opened.bytes;
  // The members' bytes once (plus what the opening read already), in requests of at most 1 MiB.
  assert.ok(bytes <= manySize, `getAll moved ${bytes} bytes of an archive of ${manySize}`);
  assert.ok(requests <= Math.ceil(manySize / (1 << 20)) + 2, `getAll made ${requests} requests for ${all.size} members (${manySize} bytes, 1 MiB requests)`);
  await z.close();
});

test('an array read from a remote archive is its own memory: writing into it never changes what the archive reads next; a member read after close() is CLOSED', async () => {
  const source = await urlSource(`${proxy.base}/x.npz`);
  const z = await openNpz(source);
  // head comes from a window the archive keeps, tail from the source's first request. Both are uint8,
  // so decoding needs no alignment copy: the array is a view of what the read returned.
  for (const name of ['head', 'tail', 'head', 'tail']) {
    const a = await z.get(name);
    assert.equal(arrayToJSON(a), truth[name], name);
    a.data.fill(99);
  }
  // A second archive over the same source reads the source's own first bytes again.
  const again = await openNpz(source);
  assert.equal(arrayToJSON(await again.get('tail')), truth.tail, 'the source served bytes an array had changed');
  const m = await z.openMember('big');
  await z.close();
  const e = await npyErrorOf(() => m.read([0, 0], [1, 4]));
  assert.is(e.code, 'CLOSED');
});

test('S3 (moto): a presigned URL and a signing fetch hook both read the archive by range', async () => {
  const presigned = await getSignedUrl(moto.client, new GetObjectCommand({ Bucket: 'arrays', Key: 'x.npz' }), { expiresIn: 300 });
  const z = await openNpz(presigned);
  assert.equal([...z.names], truth.files);
  assert.equal(arrayToJSON(await z.get('small')), truth.small);
  assert.equal(arrayToJSON(await (await z.openMember('big')).read([1000, 0], [64, 1024])), truth.rows);

  signed = 0;
  const viaHook = await openNpz(`${moto.endpoint}/arrays/x.npz`, { fetch: signingFetch });
  assert.equal(arrayToJSON(await viaHook.get('small')), truth.small);
  assert.equal(arrayToJSON(await (await viaHook.openMember('big')).read([1000, 0], [64, 1024])), truth.rows);
  assert.ok(signed >= 2, `${signed} signed requests`);
});

test('S3 answers a multi-range request with the whole object: by default none is sent to it; asked for (multiRange: true), that costs one answer per origin, and the next reader sends single ranges from the start', async () => {
  const s3 = await countingProxy(moto.endpoint);
  try {
    const url = `${s3.base}/arrays/wide.npy`;
    const signedOnly = { fetch: signingFetch };
    const expected = JSON.parse(python(`print(np.load(${JSON.stringify(join(dir, 'wide.npy'))})[:, 7].tolist())`));
    // moto does not say it answers several ranges (nor does S3): single ranges from the start.
    const plain = await openNpyUrl(url, signedOnly);
    assert.equal(Array.from((await plain.read([0, 7], [32, 1])).data), expected);
    assert.is(s3.seen.ranges.filter((r) => r.includes(',')).length, 0, 'a multi-range request went to S3');
    assert.ok(s3.seen.bytes < 64 << 10, `the reader moved ${s3.seen.bytes} bytes for 32 values`);
    s3.reset();
    const first = await openNpyUrl(url, { ...signedOnly, multiRange: true });
    assert.equal(Array.from((await first.read([0, 7], [32, 1])).data), expected);
    const multi = s3.seen.ranges.filter((r) => r.includes(',')).length;
    assert.is(multi, 1, `${multi} multi-range requests`);
    s3.reset();
    const second = await openNpyUrl(url, signedOnly);
    assert.equal(Array.from((await second.read([0, 7], [32, 1])).data), expected);
    assert.is(s3.seen.ranges.filter((r) => r.includes(',')).length, 0, 'a new reader asked the same origin for several ranges again');
    assert.ok(s3.seen.bytes < 64 << 10, `the second reader moved ${s3.seen.bytes} bytes for 32 values`);
    // `multiRange: false` never sends one, to any origin.
    proxy.reset();
    const never = await openNpyUrl(`${proxy.base}/wide.npy`, { multiRange: false });
    await never.read([0, 7], [32, 1]);
    assert.is(proxy.seen.ranges.filter((r) => r.includes(',')).length, 0);
  } finally {
    await s3.close();
  }
});

test('an abort while a member is read rejects at once and stops the requests', async () => {
  const z = await openNpz(`${proxy.base}/x.npz`, { requestBytes: 1 << 20, concurrency: 1 });
  const controller = new AbortController();
  let asked = 0;
  proxy.onRequest = () => {
    if (++asked === 3) controller.abort(new Error('stop'));
  };
  try {
    const e = await z.get('big', { signal: controller.signal }).then(
      () => null,
      (err) => err,
    );
    assert.ok(e && e.message === 'stop', String(e));
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(asked <= 4, `${asked} requests after an abort at the third`);
  } finally {
    proxy.onRequest = () => {};
  }
});

test('a server that lies about the size, or answers 404, is refused with its own code', async () => {
  const liar = async () => new Response(new Uint8Array(100), { status: 206, headers: { 'content-range': `bytes 0-99/${10 ** 12}` } });
  const lie = await npyErrorOf(() => openNpz('http://example.invalid/x.npz', { fetch: liar }));
  assert.is(lie.code, 'BAD_RESPONSE');
  assert.match(lie.message, /asked for the last \d+ bytes, the server sent 0-99/);
  const missing = await npyErrorOf(() => openNpz(`${proxy.base}/missing.npz`));
  assert.instance(missing, NpyError);
  assert.is(missing.code, 'HTTP_STATUS');
  assert.match(missing.message, /missing\.npz: HTTP 404/);
});

test("@npyts/core/node's openNpz and loadNpz take a path, a file: URL, an http(s) URL or bytes, and give the same archive class", async () => {
  const byPath = await openNpzNode(archive);
  const byFileUrl = await openNpzNode(pathToFileURL(archive));
  const byUrl = await openNpzNode(`${nginx.base}/x.npz`);
  const byBytes = await openNpzNode(readFileSync(archive));
  for (const z of [byPath, byFileUrl, byUrl, byBytes]) {
    assert.instance(z, NpzArchive);
    assert.equal([...z.names], truth.files);
    assert.equal(arrayToJSON(await z.get('small')), truth.small);
    assert.equal(arrayToJSON(await (await z.openMember('big')).read([1000, 0], [64, 1024])), truth.rows);
    await z.close();
  }
  const all = await loadNpzNode(`${nginx.base}/x.npz`);
  assert.equal(arrayToJSON(all.get('tail')), truth.tail);
  // A deflated member streamed from the URL (inflated as its compressed pieces arrive) is the member's bytes.
  const remote = await openNpzNode(`${nginx.base}/x.npz`);
  assert.is(remote.entry('small').method, 8);
  const chunks = [];
  for await (const chunk of streamNpzMember(remote, 'small', 4096)) chunks.push(chunk);
  assert.equal(Buffer.concat(chunks), Buffer.from(await remote.bytes('small')));
  await remote.close();
});

test.after(async () => {
  await proxy.close();
  nginx.stop();
  moto.stop();
});
test.run();
