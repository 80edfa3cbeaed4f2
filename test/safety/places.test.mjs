// Files found beside a file (issues 53, 54, 55): a sharded set's shards and a ragged index's heap are
// found through one place (a folder, a URL's folder, the user's `resolve` hook). A name that leads out
// of the index's folder is refused (UNSAFE_PATH) before any request, headers never go to another
// origin, a redirect outside the folder is refused, and a signed index reaches its shards by the hook.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openRaggedUrl, openWeights as openWeightsAnywhere, toFloat32 } from '@npyts/core';
import { openWeights, saveRagged } from '@npyts/core/node';
import { python, scratch } from '../helpers/numpy.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';
import { serveFiles } from '../helpers/serve-files.mjs';
import { startMoto } from '../helpers/s3.mjs';
import { blocksOf, root as repoRoot } from '../packages/guide-blocks.mjs';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { pathToFileURL } from 'node:url';

const root = scratch('npyts-places-');
const dir = join(root, 'models', 'm');
mkdirSync(dir, { recursive: true });
const at = (name) => join(dir, name);

// Three shards, written by safetensors; their values as torch reads them.
python(`
import torch, json
from safetensors.torch import save_file
torch.manual_seed(5)
out = {}
for i, names in enumerate([['a.weight', 'a.bias'], ['b.weight'], ['c.weight']]):
    sd = {n: torch.randn(3, 2) for n in names}
    save_file(sd, ${JSON.stringify(dir)} + f'/model-0000{i + 1}-of-00003.safetensors')
    out.update({n: t.flatten().tolist() for n, t in sd.items()})
wm = {n: f'model-0000{i + 1}-of-00003.safetensors' for i, names in enumerate([['a.weight', 'a.bias'], ['b.weight'], ['c.weight']]) for n in names}
json.dump({'metadata': {'total_size': 96}, 'weight_map': wm}, open(${JSON.stringify(at('model.safetensors.index.json'))}, 'w'))
json.dump(out, open(${JSON.stringify(at('values.json'))}, 'w'))
`);
const values = JSON.parse(readFileSync(at('values.json'), 'utf8'));
const indexBytes = readFileSync(at('model.safetensors.index.json'));
const close = (a, b) => a.length === b.length && a.every((x, i) => Math.abs(x - b[i]) < 1e-6);

/** An index in the set's folder whose `b.weight` lives in the shard named `name`. */
function badIndex(file, name) {
  const wm = { 'a.weight': 'model-00001-of-00003.safetensors', 'b.weight': name };
  writeFileSync(at(file), JSON.stringify({ weight_map: wm }));
}

test('issue 53: shard names of a remote index that lead elsewhere are refused (UNSAFE_PATH) before any shard is asked for; no other origin is asked and the Authorization header goes nowhere else', async () => {
  const elsewhere = await serveFiles(root);
  const server = await serveFiles(root);
  try {
    const names = [
      `https:127.0.0.1:${elsewhere.port}`,
      `http:127.0.0.1:${elsewhere.port}`,
      `http://127.0.0.1:${elsewhere.port}`,
      '%2e%2e',
      '%2e%2e%2fm%2fmodel-00002-of-00003.safetensors',
      '%2E%2E',
      'file:model-00002-of-00003.safetensors',
      'data:,x',
      '/models/m/model-00002-of-00003.safetensors',
      '..',
      '.',
      '..%5cx',
    ];
    for (const [i, name] of names.entries()) {
      badIndex(`bad-${i}.index.json`, name);
      server.log.length = 0;
      const url = `${server.base}/models/m/bad-${i}.index.json`;
      const e = await npyErrorOf(() => openWeightsAnywhere(url, { headers: { authorization: 'Bearer secret' } }));
      assert.is(e.code, 'UNSAFE_PATH', `${name}: ${e.message}`);
      assert.equal(
        server.log.filter((r) => !r.path.endsWith(`bad-${i}.index.json`)),
        [],
        `${name}: a shard was asked for`,
      );
      // The Node entry too (it opens file: URLs and paths as files).
      assert.is((await npyErrorOf(() => openWeights(url))).code, 'UNSAFE_PATH', name);
    }
    assert.equal(elsewhere.log, [], 'another origin was asked');
  } finally {
    await elsewhere.close();
    await server.close();
  }
});

test('issue 53: the same names in an index on disk are refused (UNSAFE_PATH), and a shard found beside the index reads', async () => {
  for (const [i, name] of [
    'file:model-00002-of-00003.safetensors',
    'data:,x',
    '%2e%2e',
    '../m/model-00002-of-00003.safetensors',
    at('model-00002-of-00003.safetensors'),
    'C:x',
  ].entries()) {
    badIndex(`local-${i}.index.json`, name);
    const e = await npyErrorOf(() => openWeights(at(`local-${i}.index.json`)));
    assert.is(e.code, 'UNSAFE_PATH', `${name}: ${e.message}`);
  }
  const w = await openWeights(at('model.safetensors.index.json'));
  assert.ok(close(Array.from(toFloat32(await w.get('b.weight')).data), values['b.weight']));
  await w.close();
});

test('issue 53: a ragged heap read through a redirect outside the index folder is refused (UNSAFE_PATH); inside the folder it reads', async () => {
  const data = join(root, 'data');
  const other = join(root, 'other');
  mkdirSync(data, { recursive: true });
  mkdirSync(other, { recursive: true });
  await saveRagged(join(data, 'words.npy'), ['a', 'bc', 'def'], { layout: 'offsets' });
  await saveRagged(join(other, 'words.npy'), ['x', 'yz', 'secret'], { layout: 'offsets' });
  let target = '/other/words.npy.strings';
  const server = await serveFiles(root, (_req, url) =>
    url.pathname === '/data/words.npy.strings' && target ? { status: 302, headers: { location: target } } : null,
  );
  try {
    const e = await npyErrorOf(async () => {
      const r = await openRaggedUrl(`${server.base}/data/words.npy`);
      try {
        return await r.get(2);
      } finally {
        await r.close();
      }
    });
    assert.is(e.code, 'UNSAFE_PATH', e.message);
    assert.match(e.message, /redirected/);
    target = null;
    const r = await openRaggedUrl(`${server.base}/data/words.npy`);
    assert.is(await r.get(2), 'def');
    await r.close();
  } finally {
    await server.close();
  }
});

test('issue 53: a shard redirected outside the index folder is refused (UNSAFE_PATH) before its body is used', async () => {
  mkdirSync(join(root, 'outside'), { recursive: true });
  writeFileSync(join(root, 'outside', 'model-00002-of-00003.safetensors'), readFileSync(at('model-00002-of-00003.safetensors')));
  const server = await serveFiles(root, (_req, url) =>
    url.pathname === '/models/m/model-00002-of-00003.safetensors' ? { status: 302, headers: { location: '/outside/model-00002-of-00003.safetensors' } } : null,
  );
  try {
    const w = await openWeightsAnywhere(`${server.base}/models/m/model.safetensors.index.json`);
    const e = await npyErrorOf(() => w.get('b.weight'));
    assert.is(e.code, 'UNSAFE_PATH', e.message);
    assert.ok(close(Array.from(toFloat32(await w.get('a.weight')).data), values['a.weight']));
    await w.close();
  } finally {
    await server.close();
  }
});

test('a redirect to another origin is checked before it is requested: a shard or a heap is refused (UNSAFE_PATH, naming the redirect and the rule) and the other origin never sees the x-api-key header; a same-origin redirect reads; a file opened by its own URL follows it without the header', async () => {
  const data = join(root, 'data');
  mkdirSync(data, { recursive: true });
  await saveRagged(join(data, 'words.npy'), ['a', 'bc', 'def'], { layout: 'offsets' });
  const other = await serveFiles(root);
  const server = await serveFiles(root, (_req, url) => {
    const to = {
      '/models/m/model-00002-of-00003.safetensors': `${other.base}/models/m/model-00002-of-00003.safetensors`,
      '/models/m/model-00003-of-00003.safetensors': '/models/m/model-00003-of-00003.safetensors?v=2',
      '/top/model.safetensors': `${other.base}/models/m/model-00001-of-00003.safetensors`,
    };
    // The heap (words.npy.strings, or .strings.1 beside an earlier test's heap) to the other origin.
    if (url.pathname.startsWith('/data/words.npy.strings')) return { status: 302, headers: { location: `${other.base}${url.pathname}` } };
    return Object.hasOwn(to, url.pathname) && url.search === '' ? { status: 302, headers: { location: to[url.pathname] } } : null;
  });
  const headers = { 'x-api-key': 'secret' };
  try {
    const w = await openWeightsAnywhere(`${server.base}/models/m/model.safetensors.index.json`, { headers });
    const e = await npyErrorOf(() => w.get('b.weight'));
    assert.equal(
      other.log.map((q) => q.headers['x-api-key']),
      [],
      'the shard was asked for on the other origin',
    );
    assert.is(e.code, 'UNSAFE_PATH', e.message);
    assert.match(e.message, /was redirected \(HTTP 302\) to http:\/\/127\.0\.0\.1:\d+\/models\/m\/model-00002-of-00003\.safetensors, outside the folder/);
    assert.match(e.message, /read only from that file's folder, on its origin, redirects included/);
    // Inside the folder, the redirect is followed with the header.
    assert.ok(close(Array.from(toFloat32(await w.get('c.weight')).data), values['c.weight']));
    assert.ok(server.log.some((r) => r.search === '?v=2' && r.headers['x-api-key'] === 'secret'));
    await w.close();
    const h = await npyErrorOf(async () => {
      const r = await openRaggedUrl(`${server.base}/data/words.npy`, { headers });
      try {
        return await r.get(2);
      } finally {
        await r.close();
      }
    });
    assert.is(h.code, 'UNSAFE_PATH', h.message);
    assert.match(h.message, /words\.npy\.strings(\.1)? was redirected \(HTTP 302\) to/);
    assert.equal(other.log, [], 'the other origin was asked');
    // A file opened by its own URL may be redirected elsewhere (a CDN): the header stays home.
    const top = await openWeightsAnywhere(`${server.base}/top/model.safetensors`, { headers });
    assert.ok(close(Array.from(toFloat32(await top.get('a.weight')).data), values['a.weight']));
    await top.close();
    assert.ok(other.log.length > 0);
    assert.equal(
      other.log.filter((q) => q.headers['x-api-key'] !== undefined),
      [],
      'the header went to the other origin',
    );
  } finally {
    await server.close();
    await other.close();
  }
});

test('an unsigned index whose shard the server refuses (403: nginx and a 0600 file) says so and names the file, without the presigned advice; a signed one gives that advice', async () => {
  const server = await serveFiles(root, (_req, url) => (url.pathname.endsWith('model-00002-of-00003.safetensors') ? { status: 403 } : null));
  try {
    for (const [query, presigned] of [
      ['', false],
      ['?X-Amz-Signature=abc123', true],
      ['?sig=abc', true],
      ['?token=abc', true],
      ['?rev=main', false],
    ]) {
      const w = await openWeightsAnywhere(`${server.base}/models/m/model.safetensors.index.json${query}`);
      const e = await npyErrorOf(() => w.get('b.weight'));
      await w.close();
      assert.is(e.code, 'HTTP_STATUS', e.message);
      assert.match(e.message, /HTTP 403/);
      if (presigned) {
        assert.match(e.message, /needs its own signature: pass \{ resolve/, query);
      } else {
        assert.not.match(e.message, /presigned|signature|resolve/, `${query}: ${e.message}`);
        assert.match(e.message, /the server refused http:\/\/127\.0\.0\.1:\d+\/models\/m\/model-00002-of-00003\.safetensors/);
        assert.match(e.message, /check that the server may read it.*0600.*chmod a\+r/);
      }
    }
  } finally {
    await server.close();
  }
});

/** A private bucket: every object needs `?sig=<its path>`, as a presigned URL carries its own signature. */
function privateBucket() {
  return serveFiles(root, (_req, url) => (url.searchParams.get('sig') === url.pathname ? null : { status: 403 }));
}

test('issue 54: a presigned index reaches its shards through openWeights(url, { resolve }); without it the 403 names the hook', async () => {
  const bucket = await privateBucket();
  const elsewhere = await serveFiles(root);
  try {
    const sign = (path) => `${bucket.base}${path}?sig=${encodeURIComponent(path)}`;
    const indexUrl = sign('/models/m/model.safetensors.index.json');
    // Without the hook: the shard beside the index has no signature.
    const plain = await openWeightsAnywhere(indexUrl);
    const e = await npyErrorOf(() => plain.get('b.weight'));
    await plain.close();
    assert.is(e.code, 'HTTP_STATUS');
    assert.match(e.message, /403/);
    assert.match(e.message, /resolve/);
    // With it: each shard presigned by name, read by range.
    const asked = [];
    const resolve = async (name) => {
      asked.push(name);
      return sign(`/models/m/${name}`);
    };
    for (const open of [openWeightsAnywhere, openWeights]) {
      asked.length = 0;
      const w = await open(indexUrl, { resolve, headers: { authorization: 'Bearer secret' } });
      assert.is(w.format, 'safetensors-sharded');
      for (const name of w.names) assert.ok(close(Array.from(toFloat32(await w.get(name)).data), values[name]), name);
      await w.close();
      assert.equal(asked.sort(), ['model-00001-of-00003.safetensors', 'model-00002-of-00003.safetensors', 'model-00003-of-00003.safetensors']);
    }
    // A hook's answer on another origin gets no headers; the index's origin does.
    bucket.log.length = 0;
    const w = await openWeightsAnywhere(indexUrl, { resolve: (name) => `${elsewhere.base}/models/m/${name}`, headers: { authorization: 'Bearer secret' } });
    assert.ok(close(Array.from(toFloat32(await w.get('c.weight')).data), values['c.weight']));
    await w.close();
    assert.ok(elsewhere.log.length > 0);
    assert.equal(
      elsewhere.log.filter((r) => r.authorization !== undefined),
      [],
    );
    assert.ok(bucket.log.every((r) => r.authorization === 'Bearer secret'));
    // A place on another origin gets no headers either: they are the index's.
    elsewhere.log.length = 0;
    const placed = await openWeightsAnywhere(indexUrl, { place: `${elsewhere.base}/models/m/`, headers: { authorization: 'Bearer secret' } });
    assert.ok(close(Array.from(toFloat32(await placed.get('c.weight')).data), values['c.weight']));
    await placed.close();
    assert.ok(elsewhere.log.length > 0);
    assert.equal(
      elsewhere.log.filter((r) => r.authorization !== undefined),
      [],
    );
    // The hook is asked only for names inside the index's folder.
    badIndex('hooked.index.json', '../m/model-00002-of-00003.safetensors');
    const bad = sign('/models/m/hooked.index.json');
    asked.length = 0;
    assert.is((await npyErrorOf(() => openWeightsAnywhere(bad, { resolve }))).code, 'UNSAFE_PATH');
    assert.equal(asked, []);
  } finally {
    await bucket.close();
    await elsewhere.close();
  }
});

test('issue 55: an index given as bytes, a Blob or a source opens with a place (a folder, a URL) or a resolve hook, as a path does', async () => {
  const server = await serveFiles(root);
  try {
    const want = values['a.bias'];
    const read = async (w) => {
      const got = Array.from(toFloat32(await w.get('a.bias')).data);
      await w.close();
      return got;
    };
    assert.ok(close(await read(await openWeightsAnywhere(new Blob([indexBytes]), { place: `${server.base}/models/m/` })), want));
    assert.ok(close(await read(await openWeightsAnywhere(indexBytes, { place: `${server.base}/models/m/model.safetensors.index.json` })), want));
    assert.ok(close(await read(await openWeights(indexBytes, { place: `${dir}/` })), want));
    assert.ok(close(await read(await openWeights(new Blob([indexBytes]), { place: at('model.safetensors.index.json') })), want));
    assert.ok(close(await read(await openWeights(indexBytes, { resolve: (name) => at(name) })), want));
    assert.ok(close(await read(await openWeightsAnywhere(indexBytes, { resolve: (name) => new Blob([readFileSync(at(name))]) })), want));
    // Without one, the refusal names both ways.
    const e = await npyErrorOf(() => openWeightsAnywhere(indexBytes));
    assert.is(e.code, 'BAD_OPTION');
    assert.match(e.message, /resolve/);
  } finally {
    await server.close();
  }
});

test('issue 53: a shard on disk that changed after its set was opened (size, or only its modification time) is refused (SOURCE_CHANGED) when first read', async () => {
  const copy = join(root, 'changing');
  mkdirSync(copy, { recursive: true });
  for (const f of [
    'model.safetensors.index.json',
    'model-00001-of-00003.safetensors',
    'model-00002-of-00003.safetensors',
    'model-00003-of-00003.safetensors',
  ]) {
    writeFileSync(join(copy, f), readFileSync(at(f)));
  }
  const w = await openWeights(join(copy, 'model.safetensors.index.json'));
  // Shard 2 replaced by shard 3's bytes (another size); shard 3 rewritten as it was, a minute later.
  writeFileSync(join(copy, 'model-00002-of-00003.safetensors'), Buffer.concat([readFileSync(at('model-00002-of-00003.safetensors')), Buffer.alloc(8)]));
  const later = new Date(Date.now() + 60_000);
  utimesSync(join(copy, 'model-00003-of-00003.safetensors'), later, later);
  for (const name of ['b.weight', 'c.weight']) {
    const e = await npyErrorOf(() => w.get(name));
    assert.is(e.code, 'SOURCE_CHANGED', `${name}: ${e.message}`);
  }
  // Shard 1 did not change: it reads.
  assert.ok(close(Array.from(toFloat32(await w.get('a.weight')).data), values['a.weight']));
  await w.close();
  // Opened again, the set reads the files as they are now.
  const again = await openWeights(join(copy, 'model.safetensors.index.json'));
  assert.ok(close(Array.from(toFloat32(await again.get('c.weight')).data), values['c.weight']));
  await again.close();
});

test("issue 54: the guide's recipe as it is: a sharded set in a private bucket (moto), the index and each shard presigned by the AWS SDK in the resolve hook", async () => {
  const code = blocksOf('docs/larger-than-memory.md').find(
    (b) => b.attrs['run-by'] === 'test/safety/places.test.mjs' && b.code.includes('openPrivateSet'),
  )?.code;
  assert.ok(code, 'the guide has the block');
  // Beside the repository's node_modules, so that the recipe's imports resolve as in a user's project.
  const recipeDir = join(repoRoot, 'node_modules', '.cache', 'npyts-places-recipe');
  mkdirSync(recipeDir, { recursive: true });
  writeFileSync(join(recipeDir, 'recipe.mjs'), code);
  const { openPrivateSet } = await import(pathToFileURL(join(recipeDir, 'recipe.mjs')).href);
  const { client, endpoint, stop } = await startMoto();
  try {
    await client.send(new CreateBucketCommand({ Bucket: 'models' }));
    for (const file of [
      'model.safetensors.index.json',
      'model-00001-of-00003.safetensors',
      'model-00002-of-00003.safetensors',
      'model-00003-of-00003.safetensors',
    ]) {
      await client.send(new PutObjectCommand({ Bucket: 'models', Key: `llama/${file}`, Body: readFileSync(at(file)) }));
    }
    // The bucket is private: an unsigned read is refused.
    assert.is((await fetch(`${endpoint}/models/llama/model-00001-of-00003.safetensors`)).status, 403);
    const w = await openPrivateSet(client, 'models', 'llama');
    for (const name of w.names) assert.ok(close(Array.from(toFloat32(await w.get(name)).data), values[name]), name);
    await w.close();
  } finally {
    stop();
  }
});

test.run();
