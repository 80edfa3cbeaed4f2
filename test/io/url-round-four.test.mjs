// HTTP reads, round four (issues 53 and 54): a file replaced while it is read is refused
// (SOURCE_CHANGED), not mixed; no message, name or printout shows a presigned URL's signature; a
// server without ranges (Python's http.server) is read whole up to wholeBodyBytes and said once; a
// server that never answers fails after timeoutMs; the first multi-range request to an origin goes
// out alone.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, request } from 'node:http';
import { spawn } from 'node:child_process';
import { inspect } from 'node:util';
import { readFileSync, renameSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { NpyError, arrayToJSON, openNpyUrl, openNpz, openWeights, redactUrls, urlSource } from '@npyts/core';
import { python, runCli, scratch } from '../helpers/numpy.mjs';
import { freePort, startNginx, waitForServer } from '../helpers/nginx.mjs';
import { CREDENTIALS, REGION, startMoto } from '../helpers/s3.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';

const dir = scratch('npyts-url-round-four-');
const at = (name) => join(dir, name);
// Two versions of each file, of one size and layout: float32 values, then int32 ones.
python(`
from safetensors.numpy import save_file
save_file({'w': np.arange(1 << 20, dtype='<f4') * 0.5}, ${JSON.stringify(at('v1.safetensors'))})
save_file({'w': np.arange(1 << 20, dtype='<i4') * 3}, ${JSON.stringify(at('v2.safetensors'))})
np.savez(${JSON.stringify(at('v1.npz'))}, x=np.arange(100000, dtype='<f4').reshape(1000, 100) / 7)
np.savez(${JSON.stringify(at('v2.npz'))}, x=np.arange(100000, dtype='<i4').reshape(1000, 100) * 5)
np.save(${JSON.stringify(at('v1.npy'))}, np.arange(100000, dtype='<f4').reshape(1000, 100) / 7)
np.save(${JSON.stringify(at('v2.npy'))}, np.arange(100000, dtype='<i4').reshape(1000, 100) * 5)
save_file({'big': np.arange(2 << 20, dtype='<f4') / 3, 'small': np.arange(10, dtype='<i8')}, ${JSON.stringify(at('model.safetensors'))})
np.save(${JSON.stringify(at('column.npy'))}, np.arange(64 * 32768, dtype='<f4').reshape(64, 32768))
`);
for (const v of ['safetensors', 'npz', 'npy']) {
  assert.is(readFileSync(at(`v1.${v}`)).length, readFileSync(at(`v2.${v}`)).length, `the two ${v} versions differ in size`);
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

/**
 * A server of one object that can be replaced (`replace(bytes)`): single ranges, a new ETag and
 * Last-Modified per version; it honours If-Match (412) unless `ignoreIfMatch`. It records each
 * request's headers.
 */
async function changingServer(bytes, { ignoreIfMatch = false } = {}) {
  let version = 1;
  let body = bytes;
  const seen = [];
  const s = await serve((req, res) => {
    seen.push(req.headers);
    const etag = `"v${version}"`;
    const headers = { etag, 'last-modified': new Date(Date.UTC(2026, 0, version)).toUTCString(), 'accept-ranges': 'bytes' };
    if (!ignoreIfMatch && req.headers['if-match'] && req.headers['if-match'] !== etag) return res.writeHead(412, headers).end();
    const m = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? '');
    if (!m) return res.writeHead(200, { ...headers, 'content-length': body.length }).end(body);
    let from = m[1] === '' ? Math.max(0, body.length - Number(m[2])) : Number(m[1]);
    const to = m[1] === '' || m[2] === '' ? body.length - 1 : Math.min(Number(m[2]), body.length - 1);
    if (from >= body.length) from = body.length;
    res.writeHead(206, { ...headers, 'content-range': `bytes ${from}-${to}/${body.length}`, 'content-length': to - from + 1 });
    res.end(body.subarray(from, to + 1));
  });
  return {
    ...s,
    seen,
    replace(next) {
      body = next;
      version++;
    },
  };
}

for (const ignoreIfMatch of [false, true]) {
  const how = ignoreIfMatch ? 'a server that ignores If-Match: the new ETag is seen' : 'If-Match is sent, the server answers 412';
  test(`a .safetensors replaced between openWeights and get is SOURCE_CHANGED, never the old header over new bytes (${how})`, async () => {
    const s = await changingServer(readFileSync(at('v1.safetensors')), { ignoreIfMatch });
    try {
      const f = await openWeights(`${s.base}/model.safetensors`);
      s.replace(readFileSync(at('v2.safetensors')));
      const e = await npyErrorOf(() => f.get('w'));
      assert.is(e.code, 'SOURCE_CHANGED', e.message);
      assert.match(e.message, /model\.safetensors: the file changed on the server while it was read/);
      assert.ok(
        s.seen.slice(1).every((h) => h['if-match'] === '"v1"'),
        'every request after the first carries If-Match with its ETag',
      );
      // Opened again, the new version reads as what Python wrote.
      const again = await openWeights(`${s.base}/model.safetensors`);
      const w = await again.get('w');
      assert.is(w.dtype.str, '<i4');
      assert.equal(Array.from(w.data.subarray(0, 4)), [0, 3, 6, 9]);
    } finally {
      await s.close();
    }
  });

  test(`a region of a remote .npz member replaced before it is read is SOURCE_CHANGED (${how})`, async () => {
    const s = await changingServer(readFileSync(at('v1.npz')), { ignoreIfMatch });
    try {
      const z = await openNpz(`${s.base}/x.npz`);
      const m = await z.openMember('x');
      assert.is(m.dtype.str, '<f4');
      s.replace(readFileSync(at('v2.npz')));
      const e = await npyErrorOf(() => m.read([0, 0], [10, 100]));
      assert.is(e.code, 'SOURCE_CHANGED', e.message);
    } finally {
      await s.close();
    }
  });
}

test('a server that sends no ETag is pinned by Last-Modified, and by the size', async () => {
  let body = readFileSync(at('v1.npy'));
  let modified = 'Mon, 05 Jan 2026 00:00:00 GMT';
  const s = await serve((req, res) => {
    const [from, to] = /bytes=(\d+)-(\d+)/.exec(req.headers.range).slice(1).map(Number);
    const last = Math.min(to, body.length - 1);
    res.writeHead(206, { 'last-modified': modified, 'content-range': `bytes ${from}-${last}/${body.length}` });
    res.end(body.subarray(from, last + 1));
  });
  try {
    const h = await openNpyUrl(`${s.base}/x.npy`, { firstRequest: 128 });
    modified = 'Tue, 06 Jan 2026 00:00:00 GMT';
    body = readFileSync(at('v2.npy'));
    assert.is((await npyErrorOf(() => h.read([0, 0], [2, 100]))).code, 'SOURCE_CHANGED');
    const g = await openNpyUrl(`${s.base}/x.npy`, { firstRequest: 128 });
    body = Buffer.concat([body, new Uint8Array(64)]);
    const e = await npyErrorOf(() => g.read([0, 0], [2, 100]));
    assert.is(e.code, 'SOURCE_CHANGED');
    assert.match(e.message, /it had \d+ bytes, an answer now says \d+/);
  } finally {
    await s.close();
  }
});

test('nginx honours If-Match: a file replaced on disk is refused with 412, and npyts says SOURCE_CHANGED', async () => {
  const served = scratch('npyts-url-round-four-nginx-');
  writeFileSync(join(served, 'x.npy'), readFileSync(at('v1.npy')));
  utimesSync(join(served, 'x.npy'), new Date(2026, 0, 1), new Date(2026, 0, 1));
  const nginx = await startNginx(served);
  try {
    const url = `${nginx.base}/x.npy`;
    const h = await openNpyUrl(url, { firstRequest: 128 });
    const first = await fetch(url, { headers: { range: 'bytes=0-0' } });
    const etag = first.headers.get('etag');
    await first.arrayBuffer();
    assert.is((await fetch(url, { headers: { range: 'bytes=0-0', 'if-match': etag } })).status, 206);
    writeFileSync(join(served, 'x.new'), readFileSync(at('v2.npy')));
    utimesSync(join(served, 'x.new'), new Date(2026, 0, 2), new Date(2026, 0, 2));
    renameSync(join(served, 'x.new'), join(served, 'x.npy'));
    assert.is((await fetch(url, { headers: { range: 'bytes=0-0', 'if-match': etag } })).status, 412, 'nginx does not honour If-Match');
    const e = await npyErrorOf(() => h.read([0, 0], [2, 100]));
    assert.is(e.code, 'SOURCE_CHANGED');
    assert.match(e.message, /HTTP 412/);
  } finally {
    nginx.stop();
  }
});

const moto = await startMoto();
await moto.client.send(new CreateBucketCommand({ Bucket: 'models' }));
for (const key of ['model.safetensors', 'x.npz', 'column.npy'])
  await moto.client.send(new PutObjectCommand({ Bucket: 'models', Key: key, Body: readFileSync(at(key === 'x.npz' ? 'v1.npz' : key)) }));

/** The secret parts of a presigned URL: the signature and the credential's values. */
function secretsOf(presigned) {
  const q = new URL(presigned).searchParams;
  return [q.get('X-Amz-Signature'), q.get('X-Amz-Credential'), encodeURIComponent(q.get('X-Amz-Credential')), CREDENTIALS.accessKeyId + '%2F'];
}

function assertNoSecret(text, presigned, what) {
  for (const secret of secretsOf(presigned)) assert.not.ok(text.includes(secret), `${what} shows ${secret}: ${text}`);
}

test('S3 (moto): a presigned URL is never shown with its signature: a 404, NO_RANGES, util.inspect of sources and files, and the CLI', async () => {
  const missing = await getSignedUrl(moto.client, new GetObjectCommand({ Bucket: 'models', Key: 'missing.safetensors' }), { expiresIn: 300 });
  const e404 = await npyErrorOf(() => openWeights(missing));
  assert.is(e404.code, 'HTTP_STATUS');
  assert.match(e404.message, /HTTP 404/);
  // What identifies the object stays: the origin, the path, the names of the parameters.
  assert.match(e404.message, new RegExp(`${moto.endpoint}/models/missing\\.safetensors\\?.*X-Amz-Signature=\\[redacted\\]`));
  for (const shown of [e404.message, String(e404), inspect(e404), e404.stack, e404.file ?? '']) assertNoSecret(shown, missing, 'the 404');

  // A 403 (moto does not check presigned signatures: a store that refuses this one stands for S3).
  const refusing = await serve((_, res) => res.writeHead(403, { 'content-type': 'application/xml' }).end('<Error><Code>SignatureDoesNotMatch</Code></Error>'));
  const refusingClient = new S3Client({ endpoint: refusing.base, region: REGION, credentials: CREDENTIALS, forcePathStyle: true });
  try {
    const denied = await getSignedUrl(refusingClient, new GetObjectCommand({ Bucket: 'models', Key: 'model.safetensors' }), { expiresIn: 300 });
    const e403 = await npyErrorOf(() => openWeights(denied));
    assert.is(e403.code, 'HTTP_STATUS');
    assert.match(e403.message, /model\.safetensors\?.*: HTTP 403 for the last 1 bytes \(check the signature: it may have expired\)/);
    for (const shown of [e403.message, String(e403), inspect(e403), e403.stack]) assertNoSecret(shown, denied, 'the 403');
  } finally {
    refusingClient.destroy();
    await refusing.close();
  }

  // A proxy that drops Range: moto then answers with the whole object, too large for wholeBodyBytes.
  const noRanges = await serve((req, res) => {
    const { range: _, ...headers } = req.headers;
    const up = request({ host: '127.0.0.1', port: new URL(moto.endpoint).port, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
    res.on('close', () => up.destroy());
    up.on('error', () => res.destroy());
    up.end();
  });
  const viaProxy = new S3Client({ endpoint: noRanges.base, region: REGION, credentials: CREDENTIALS, forcePathStyle: true });
  try {
    const presigned = await getSignedUrl(viaProxy, new GetObjectCommand({ Bucket: 'models', Key: 'model.safetensors' }), { expiresIn: 300 });
    const e = await npyErrorOf(() => openWeights(presigned, { wholeBodyBytes: 1 << 20 }));
    assert.is(e.code, 'NO_RANGES');
    for (const shown of [e.message, String(e), inspect(e), e.stack]) assertNoSecret(shown, presigned, 'NO_RANGES');
  } finally {
    viaProxy.destroy();
    await noRanges.close();
  }

  // Sources, handles and weight files print their name without the secrets.
  const presigned = await getSignedUrl(moto.client, new GetObjectCommand({ Bucket: 'models', Key: 'model.safetensors' }), { expiresIn: 300 });
  const source = await urlSource(presigned);
  assert.match(source.name, /model\.safetensors\?/);
  assertNoSecret(inspect(source, { depth: 6, showHidden: true }), presigned, 'a URL source');
  const weights = await openWeights(presigned);
  assert.equal(arrayToJSON(await weights.get('small')), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  assertNoSecret(inspect(weights, { depth: 6 }), presigned, 'a weight file');
  const npy = await openNpyUrl(await getSignedUrl(moto.client, new GetObjectCommand({ Bucket: 'models', Key: 'column.npy' }), { expiresIn: 300 }));
  assert.ok(npy.url.includes('X-Amz-Signature='), 'the handle keeps the URL it was given');
  assertNoSecret(inspect(npy, { depth: 6 }), npy.url, 'a .npy handle');

  // The CLI's one line of error.
  const cli = await runCli(['info', missing]);
  assert.is(cli.code, 1);
  assert.match(cli.stderr, /missing\.safetensors/);
  assertNoSecret(cli.stderr, missing, 'the CLI');
});

test('redactUrls: AWS, GCS, Azure and token parameters, user info and long opaque values go; the rest stays', () => {
  const cases = [
    [
      'https://storage.googleapis.com/b/w.npz?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=sa%40p.iam.gserviceaccount.com%2F20260101%2Fauto&X-Goog-Date=20260101T000000Z&X-Goog-Expires=900&X-Goog-SignedHeaders=host&X-Goog-Signature=0a1b2c',
      ['sa%40p', '0a1b2c'],
    ],
    ['https://acct.blob.core.windows.net/c/w.safetensors?sv=2022-11-02&se=2026-01-01T00%3A00%3A00Z&sr=b&sp=r&sig=AbCd%2Bef%3D', ['AbCd%2Bef', '2026-01-01T00']],
    ['https://b.s3.amazonaws.com/k.npy?X-Amz-Security-Token=IQoJb3JpZ2lu&X-Amz-Signature=deadbeef', ['IQoJb3JpZ2lu', 'deadbeef']],
    ['https://h/x.npy?token=t0k&api_key=k3y&access_token=at&key=kk&signature=s1&Policy=p0l&Key-Pair-Id=kp', ['t0k', 'k3y', '=at', '=kk', 's1', 'p0l', '=kp']],
    ['https://user:hunter2@h/x.npy', ['hunter2', 'user']],
    ['https://h/x.npy?t=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln', ['eyJhbGci']],
    ['https://h/x.npy#access_token=frag', ['frag']],
  ];
  for (const [url, secrets] of cases) {
    const shown = redactUrls(`failed: ${url}.`);
    for (const s of secrets) assert.not.ok(shown.includes(s), `${shown} shows ${s}`);
    assert.ok(shown.startsWith(`failed: ${url.replace(/\/\/[^@/]*@/, '//[redacted]@').split(/[?#]/)[0]}`), shown);
    assert.ok(shown.endsWith('.'), shown);
    assert.is(redactUrls(shown), shown, 'redacting twice changes nothing');
  }
  assert.is(redactUrls('https://h/x.npy?rev=main&download=1'), 'https://h/x.npy?rev=main&download=1');
  assert.is(redactUrls('no URL here: x.npy?sig=1'), 'no URL here: x.npy?sig=1');
  // Every NpyError goes through it.
  assert.not.ok(new NpyError('NETWORK', 'https://h/x?sig=abc: no', { file: 'https://h/x?sig=abc' }).message.includes('abc'));
});

test("Python's http.server (no ranges): an 8 MB .safetensors opened by URL is read whole, said once per origin; past wholeBodyBytes the refusal names the option and openWeights(blob)", async () => {
  const port = await freePort();
  const py = spawn('python3', ['-m', 'http.server', String(port), '--bind', '127.0.0.1', '--directory', dir], { stdio: 'ignore' });
  const warnings = [];
  const warn = console.warn;
  console.warn = (...args) => warnings.push(args.join(' '));
  try {
    await waitForServer(`http://127.0.0.1:${port}/`);
    const url = `http://127.0.0.1:${port}/model.safetensors`;
    const truth = JSON.parse(
      python(`
from safetensors.numpy import load_file
t = load_file(${JSON.stringify(at('model.safetensors'))})
print(json.dumps({'head': t['big'][:5].tolist(), 'tail': t['big'][-3:].tolist(), 'sum': float(t['big'].astype('f8').sum())}))`),
    );
    const f = await openWeights(url);
    const big = await f.get('big');
    assert.equal(Array.from(big.data.subarray(0, 5)), truth.head);
    assert.equal(Array.from(big.data.subarray(-3)), truth.tail);
    assert.ok(Math.abs(big.data.reduce((s, v) => s + v, 0) - truth.sum) < 1e-6 * Math.abs(truth.sum));
    await (await openWeights(url)).get('small');
    assert.is(warnings.length, 1, warnings.join('\n'));
    assert.match(
      warnings[0],
      new RegExp(
        `^npyts: http://127\\.0\\.0\\.1:${port} ignores HTTP Range requests \\(Python's http\\.server does\\), so every file read from it is downloaded whole`,
      ),
    );
    assert.not.match(warnings[0], /\n/);

    const e = await npyErrorOf(() => openWeights(url, { wholeBodyBytes: 1 << 20 }));
    assert.is(e.code, 'NO_RANGES');
    assert.match(e.message, /sent the whole file \(8\.4 MB\), more than wholeBodyBytes \(1 MiB\)/);
    assert.match(
      e.message,
      /pass a larger wholeBodyBytes to take it whole, or read the whole response: openWeights\(await \(await fetch\(url\)\)\.blob\(\)\)$/,
    );
    assert.not.match(e.message, /bytes -|readNpy|decodeNpz/);
    // The advice follows the format.
    const npy = await npyErrorOf(() => openNpyUrl(`http://127.0.0.1:${port}/column.npy`, { wholeBodyBytes: 1 << 20 }));
    assert.match(npy.message, /readNpy\(await fetch\(url\)\)$/);
    const npz = await npyErrorOf(() => openNpz(`http://127.0.0.1:${port}/v1.npz`, { wholeBodyBytes: 1000 }));
    assert.match(npz.message, /openNpz\(await \(await fetch\(url\)\)\.blob\(\)\)$/);
    assert.is((await npyErrorOf(() => openWeights(url, { wholeBodyBytes: -1 }))).code, 'BAD_OPTION');
  } finally {
    console.warn = warn;
    py.kill();
  }
});

/** `work`'s outcome, or a failure when it is still pending after `ms` (a hang, not a slow machine: ms is 200 times the timeout). */
function within(ms, work) {
  let timer;
  return Promise.race([
    work.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`still pending after ${ms} ms`)), ms))),
  ]);
}

test('a server that accepts and never answers, or sends headers and then no body, fails after timeoutMs with NETWORK naming it', async () => {
  // Neither server ever sends what is waited for: the outcome does not depend on the machine's speed.
  const silent = await serve(() => {});
  const stalled = await serve((_, res) => {
    res.writeHead(206, { 'content-range': 'bytes 99-99/100', 'content-length': 1 });
    res.flushHeaders(); // and no body
  });
  try {
    const e = await within(
      60_000,
      npyErrorOf(() => openWeights(`${silent.base}/m.safetensors`, { timeoutMs: 300 })),
    );
    assert.is(e.code, 'NETWORK');
    assert.match(e.message, /m\.safetensors: no answer came for the last 1 bytes in 300 ms \(timeoutMs, 30 000 by default\)/);
    const s = await within(
      60_000,
      npyErrorOf(() => openWeights(`${stalled.base}/m.safetensors`, { timeoutMs: 300 })),
    );
    assert.is(s.code, 'NETWORK');
    assert.match(s.message, /the answer for the last 1 bytes stalled: no bytes came in 300 ms \(timeoutMs/);
    for (const bad of [0, -5, Number.NaN, '100'])
      assert.is((await npyErrorOf(() => openWeights(`${silent.base}/m.safetensors`, { timeoutMs: bad }))).code, 'BAD_OPTION', String(bad));
  } finally {
    await silent.close();
    await stalled.close();
  }
});

test('S3 (moto), with multiRange: true: the first multi-range request to an origin goes out once, even when a read has several in flight; the rest wait for its answer', async () => {
  const expected = JSON.parse(python(`print(np.load(${JSON.stringify(at('column.npy'))})[:, 5].tolist())`));
  const multi = [];
  const proxy = await serve((req, res) => {
    if ((req.headers.range ?? '').includes(',')) multi.push(req.headers.range);
    const up = request({ host: '127.0.0.1', port: new URL(moto.endpoint).port, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
    res.on('close', () => up.destroy());
    up.on('error', () => res.destroy());
    up.end();
  });
  const client = new S3Client({ endpoint: proxy.base, region: REGION, credentials: CREDENTIALS, forcePathStyle: true });
  try {
    const url = await getSignedUrl(client, new GetObjectCommand({ Bucket: 'models', Key: 'column.npy' }), { expiresIn: 300 });
    // 64 ranges 128 KiB apart, 8 per request: 8 multi-range requests would go out, 6 at once
    // (`multiRange: true`: by default none goes to a server not known to answer them).
    const h = await openNpyUrl(url, { rangesPerRequest: 8, firstRequest: 128, multiRange: true });
    assert.equal(Array.from((await h.read([0, 5], [64, 1])).data), expected);
    assert.is(multi.length, 1, `${multi.length} multi-range requests`);
  } finally {
    client.destroy();
    await proxy.close();
  }
});

test('a server that ignores Range on multi-range requests (200, the whole 16 MiB) is never sent one by default: a column moves kilobytes, not the object', async () => {
  const body = readFileSync(at('column.npy')); // 8 MiB
  const big = Buffer.concat([body, body]);
  const sent = { multi: 0 };
  const sockets = new Set();
  const server = await serve((req, res) => {
    const range = req.headers.range ?? '';
    sockets.add(req.socket);
    const m = /^bytes=(\d+)-(\d+)$/.exec(range);
    if (m) {
      const [a, b] = [Number(m[1]), Math.min(Number(m[2]), big.length - 1)];
      res.writeHead(206, { 'content-range': `bytes ${a}-${b}/${big.length}`, 'content-length': b - a + 1 }).end(big.subarray(a, b + 1));
      return;
    }
    if (range.includes(',')) sent.multi++;
    // The whole object, as S3 answers, written as fast as the connection takes it.
    res.writeHead(200, { 'content-length': big.length });
    let at = 0;
    const pump = () => {
      while (at < big.length) {
        const piece = big.subarray(at, at + 65536);
        at += piece.length;
        if (!res.write(piece)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
  });
  try {
    // The file as numpy holds it: two copies of column.npy's bytes, so the data repeat after 8 MiB.
    const expected = JSON.parse(python(`print(np.load(${JSON.stringify(at('column.npy'))})[:, 5].tolist())`));
    const h = await openNpyUrl(`${server.base}/x.npy`, { firstRequest: 128 });
    assert.equal(Array.from((await h.read([0, 5], [64, 1])).data), expected);
    await server.close();
    // What the server handed its connections (the kernel's buffers included), not what the client read.
    const bytes = [...sockets].reduce((n, s) => n + s.bytesWritten, 0);
    assert.is(sent.multi, 0, `${sent.multi} multi-range requests`);
    assert.ok(bytes < 256 << 10, `the server sent ${bytes} bytes for 64 values`);
  } finally {
    await server.close();
  }
});

test.after(() => moto.stop());
test.run();
