// .npz: numpy's archives read through our own zip container (memory and disk, zlib and fflate),
// corrupt archives refused, and every archive we write loaded by numpy and accepted by `unzip -t`.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeNpz, encodeNpz, encodeNpy, readHeader, NpyError, fflateCodec, getField } from '@npyts/core';
import { npyDocument } from '@npyts/core/plumbing';
import { openNpz, openNpzSync, loadNpz, loadNpzSync, saveNpzSync, zlibCodec, loadNpySync } from '@npyts/core/node';
import { numpy, python, runCli, scratch, writeJSON } from '../helpers/numpy.mjs';

async function rejects(fn, check) {
  try {
    await fn();
  } catch (e) {
    assert.ok(check(e), `unexpected error: ${e?.code} ${e?.message}`);
    return;
  }
  assert.unreachable('expected a rejection');
}

const dir = scratch();
const { cases, docs } = numpy('npz', join(dir, 'in'));

/** Our document of every member, like npz_documents on numpy's side. */
function ourDocs(archive) {
  const out = {};
  for (const name of archive.names) {
    const raw = archive.bytesSync(name);
    if (raw[0] !== 0x93) {
      out[name] = { raw: Buffer.from(raw).toString('hex') };
      continue;
    }
    out[name] = npyDocument(readHeader(raw), archive.getSync(name));
  }
  return out;
}

for (const [name, file] of Object.entries(cases)) {
  test(`reads numpy's ${name} archive (disk + zlib, memory + fflate)`, () => {
    const onDisk = openNpzSync(file);
    try {
      assert.equal(ourDocs(onDisk), docs[name]);
    } finally {
      onDisk.close();
    }
    const inMemory = decodeNpz(readFileSync(file), { codec: fflateCodec });
    assert.equal(ourDocs(inMemory), docs[name]);
    assert.equal([...inMemory.names], Object.keys(docs[name]));
  });
}

test('numpy key rules: one .npy stripped, both spellings find a member', () => {
  const a = decodeNpz(readFileSync(cases.odd_names));
  assert.equal([...a.names], ['a/b', 'é整', 'f.npy']);
  assert.ok(a.has('a/b') && a.has('a/b.npy') && a.has('f.npy') && a.has('f.npy.npy'));
  assert.is(a.getSync('f.npy').shape[0], 1);
  assert.throws(
    () => a.getSync('nope'),
    (e) => e.code === 'NPZ_KEY' && /'a\/b', 'é整', 'f\.npy'/.test(e.message),
  );
  const extras = decodeNpz(readFileSync(cases.extras));
  assert.throws(() => extras.getSync('notes.txt'), /bytes\('notes\.txt'\)/);
  assert.is(new TextDecoder().decode(extras.bytesSync('notes.txt')), 'not an array');
});

test('the archive is lazy: a member is inflated only when asked for', () => {
  let inflated = 0;
  const counting = {
    ...zlibCodec,
    inflate: (d, s, m) => {
      inflated++;
      return zlibCodec.inflate(d, s, m);
    },
  };
  const a = decodeNpz(readFileSync(cases.savez_compressed), { codec: counting });
  assert.ok(a.names.length > 5);
  assert.is(inflated, 0);
  a.getSync('f4');
  assert.is(inflated, 1);
});

test('openNpzSync reads only the directory and the members asked for', () => {
  const a = openNpzSync(cases.savez);
  let reads = 0;
  const read = a.source.read.bind(a.source);
  a.source.read = (o, l) => {
    reads += l;
    return read(o, l);
  };
  const f4 = a.getSync('f4');
  a.close();
  assert.equal(f4.shape, [2, 3]);
  assert.ok(reads < 400, `read ${reads} bytes for one small member`);
});

test('more than 65535 members (zip64 end record) read and write', () => {
  const file = join(dir, 'many.npz');
  const made = numpy('npz-many', file, '70000');
  assert.ok(made.zip64_end);
  const a = openNpzSync(file);
  assert.is(a.names.length, 70000);
  assert.is(a.getSync('m69999').get(), 69999);
  a.close();
  const ours = join(dir, 'many_ours.npz');
  const arrays = new Map(Array.from({ length: 66000 }, (_, i) => [`k${i}`, { data: new Int32Array([i]), shape: [] }]));
  saveNpzSync(ours, arrays);
  assert.ok(readFileSync(ours).includes(Buffer.from([0x50, 0x4b, 6, 6])), 'zip64 end record written');
  const out = execFileSync('python3', ['-c', `import numpy as np; z = np.load(${JSON.stringify(ours)}); print(len(z.files), int(z['k65999']), int(z['k0']))`], {
    encoding: 'utf8',
  }).trim();
  assert.is(out, '66000 65999 0');
  unzipTest(ours);
});

const corrupt = numpy('npz-corrupt', join(dir, 'corrupt'));
const expectedCodes = {
  truncated: 'ZIP_FORMAT',
  truncated_tail: 'ZIP_FORMAT',
  crc_mismatch: 'ZIP_CRC',
  corrupt_deflate: ['ZIP_FORMAT', 'ZIP_CRC'],
  size_lie_stored: 'ZIP_SIZE',
  size_lie_smaller: 'ZIP_SIZE',
  size_lie_larger: 'ZIP_SIZE',
  method_bzip2: 'ZIP_UNSUPPORTED',
  encrypted: 'ZIP_UNSUPPORTED',
  not_zip: 'ZIP_FORMAT',
  bad_local_offset: 'ZIP_FORMAT',
};

test('every corrupt archive is refused with a clear error, by both codecs', () => {
  assert.equal(Object.keys(corrupt).sort(), Object.keys(expectedCodes).sort());
  for (const [name, { file }] of Object.entries(corrupt)) {
    for (const codec of [zlibCodec, fflateCodec]) {
      let err;
      try {
        const a = decodeNpz(readFileSync(file), { codec });
        for (const n of a.names) a.getSync(n);
      } catch (e) {
        err = e;
      }
      assert.instance(err, NpyError, `${name}: ${err}`);
      const want = [expectedCodes[name]].flat();
      assert.ok(want.includes(err.code), `${name}: ${err.code} ${err.message}`);
    }
  }
  // numpy refuses these too, except the size lies it does not check.
  const lenient = Object.entries(corrupt)
    .filter(([, c]) => !c.numpy_refuses)
    .map(([n]) => n)
    .sort();
  assert.equal(lenient, ['size_lie_larger', 'size_lie_stored']);
});

test("read()/readAll() of an archive in memory (the platform's DecompressionStream, off the calling thread in browsers) give what get() gives, for every numpy archive", async () => {
  for (const [name, file] of Object.entries(cases)) {
    const z = decodeNpz(readFileSync(file));
    const npyNames = z.names.filter((n) => z.bytesSync(n)[0] === 0x93);
    const all = await Promise.all(npyNames.map((n) => z.get(n)));
    npyNames.forEach((n, i) => assert.equal(npyDocument(z.headerSync(n), all[i]), docs[name][n], `${name}/${n}`));
  }
  const z = decodeNpz(readFileSync(cases[Object.keys(cases)[0]]));
  const controller = new AbortController();
  controller.abort();
  await rejects(
    () => z.get(z.names[0], { signal: controller.signal }),
    (e) => e.name === 'AbortError',
  );
});

test('every corrupt archive is refused by the async get() and getAll() of an archive in memory (workers or the calling thread) and of openNpzSync (zlib on libuv threads), and by loadNpz/loadNpzSync', async () => {
  for (const [name, { file }] of Object.entries(corrupt)) {
    const refused = (e) => e instanceof NpyError && [expectedCodes[name]].flat().includes(e.code);
    await rejects(() => decodeNpz(readFileSync(file)).getAll(), refused);
    await rejects(async () => {
      const a = openNpzSync(file);
      try {
        for (const n of a.names) await a.get(n);
      } finally {
        a.close();
      }
    }, refused);
    await rejects(() => loadNpz(file), refused);
    assert.throws(() => loadNpzSync(file), refused, name);
  }
});

test('loadNpz and loadNpzSync give every member (as np.load(path) does), the same as getAll() and getAllSync() of the open archives', async () => {
  for (const name of ['savez', 'savez_compressed', 'positional']) {
    const file = cases[name];
    const keys = python(`print(json.dumps(np.load(${JSON.stringify(file)}).files))`);
    const want = (m) => Object.fromEntries([...m].map(([k, a]) => [k, npyDocument(readHeader(encodeNpy(a)), a)]));
    const loaded = await loadNpz(file);
    assert.equal([...loaded.keys()], JSON.parse(keys));
    assert.equal(want(loadNpzSync(file)), want(loaded), name);
    const z = openNpzSync(file);
    assert.equal(want(await z.getAll()), want(loaded), name);
    assert.equal(want(z.getAllSync()), want(loaded), name);
    z.close();
  }
});

// The async reader inflates with libdeflate where the addon has it, else on zlib's stream: both
// engines are checked (NPYTS_LIBDEFLATE is read at each call).
const ENGINES = existsSync('/usr/include/libdeflate.h') ? ['libdeflate', 'zlib'] : ['zlib'];
async function withEngine(engine, work) {
  const before = process.env.NPYTS_LIBDEFLATE;
  if (engine === 'zlib') process.env.NPYTS_LIBDEFLATE = '0';
  else delete process.env.NPYTS_LIBDEFLATE;
  try {
    return await work();
  } finally {
    if (before === undefined) delete process.env.NPYTS_LIBDEFLATE;
    else process.env.NPYTS_LIBDEFLATE = before;
  }
}

for (const engine of ENGINES)
  test(`every corrupt archive is refused by the async reader too (members read straight into their arrays; ${engine})`, () =>
    withEngine(engine, async () => {
      for (const [name, { file }] of Object.entries(corrupt)) {
        let err;
        try {
          const a = await openNpz(file);
          try {
            for (const n of a.names) await a.get(n);
          } finally {
            await a.close();
          }
        } catch (e) {
          err = e;
        }
        assert.instance(err, NpyError, `${name}: ${err}`);
        assert.ok([expectedCodes[name]].flat().includes(err.code), `${name}: ${err.code} ${err.message}`);
      }
    }));

for (const engine of ENGINES)
  test(`async members: bytes after the data (numpy ignores them) are in the CRC; both byte orders; stored and deflated; big members inflate in pieces (${engine})`, () =>
    withEngine(engine, async () => {
      const path = join(dir, `trailing-${engine}.npz`);
      const big = 3 * 2 ** 20 + 7; // more than one 4 MiB inflate step of output
      python(`
import zipfile
def npy(a):
    b = io.BytesIO(); np.save(b, a); return b.getvalue()
with zipfile.ZipFile(${JSON.stringify(path)}, 'w') as z:
    z.writestr('s.npy', npy(np.arange(10, dtype='<i4')) + b'trailing bytes', compress_type=zipfile.ZIP_STORED)
    z.writestr('d.npy', npy(np.arange(10, dtype='>f8')) + b'more', compress_type=zipfile.ZIP_DEFLATED)
    z.writestr('big.npy', npy(np.arange(${big}, dtype='>i4') % 1000), compress_type=zipfile.ZIP_DEFLATED)
z = np.load(${JSON.stringify(path)})
assert z['s'].tolist() == list(range(10)) and z['d'].tolist() == list(range(10))
`);
      const z = await openNpz(path);
      try {
        assert.equal(
          Array.from((await z.get('s')).data),
          Array.from({ length: 10 }, (_, i) => i),
        );
        const d = await z.get('d');
        assert.equal(
          Array.from(d.data),
          Array.from({ length: 10 }, (_, i) => i),
        );
        assert.is(d.data.buffer.byteLength, 80, 'the array owns a buffer of exactly its data');
        const b = (await z.get('big')).data;
        assert.is(b.length, big);
        let wrong = 0;
        for (let i = 0; i < b.length; i++) if (b[i] !== i % 1000) wrong++;
        assert.is(wrong, 0);
        const controller = new AbortController();
        setImmediate(() => controller.abort()); // long before 12 MiB have inflated
        await rejects(
          () => z.get('big', { signal: controller.signal }),
          (e) => e.name === 'AbortError',
        );
      } finally {
        await z.close();
      }
      // One byte of the trailing bytes changed: the CRC no longer matches, stored and deflated.
      const bytes = readFileSync(path);
      const at = bytes.indexOf(Buffer.from('trailing bytes'));
      bytes[at + 3] ^= 1;
      writeFileSync(join(dir, `trailing-bad-${engine}.npz`), bytes);
      const bad = await openNpz(join(dir, `trailing-bad-${engine}.npz`));
      await rejects(
        () => bad.get('s'),
        (e) => e.code === 'ZIP_CRC',
      );
      await bad.close();
    }));

test('writes: other files beside the arrays (numpy lists them and returns their bytes), names that clash refused; progress by data bytes', () => {
  const big = { data: new Float32Array(10 * 2 ** 20), shape: [10 * 2 ** 20], dtype: '<f4' }; // 40 MiB: three pieces
  const seen = [];
  const bytes = encodeNpz(
    { big, small: { data: new Int32Array([1, 2]) } },
    { files: { 'model.json': '{"k": "é"}', 'raw.bin': new Uint8Array([1, 2, 3]) }, onProgress: (done, total) => seen.push([done, total]) },
  );
  const path = join(dir, 'files.npz');
  writeFileSync(path, bytes);
  assert.is(
    python(`z = np.load(${JSON.stringify(path)}); print(z.files, json.loads(z['model.json'])['k'], list(z['raw.bin']), z['big'].shape)`).trim(),
    "['big', 'small', 'model.json', 'raw.bin'] é [1, 2, 3] (10485760,)",
  );
  const total = 40 * 2 ** 20 + 8;
  assert.ok(
    seen.every(([, t]) => t === total),
    "the total is the arrays' data bytes",
  );
  assert.ok(
    seen.every(([d], i) => i === 0 || d >= seen[i - 1][0]),
    'never backwards',
  );
  assert.equal(seen[0], [0, total]);
  assert.ok(
    seen.some(([d]) => d > 0 && d < 40 * 2 ** 20),
    'reported during the big member',
  );
  assert.is(seen.at(-1)[0], total);
  assert.throws(() => encodeNpz({ a: { data: new Int8Array(1) } }, { files: { 'a.npy': 'x' } }), /both an array and a file/);
});

test('CLI: corrupt archives give one line and exit 1', async () => {
  for (const [name, { file }] of Object.entries(corrupt)) {
    const r = await runCli(['show', '--json', file]);
    assert.is(r.code, 1, name);
    assert.is(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.ok(r.stderr.startsWith('npyts: error: '), r.stderr);
  }
});

function unzipTest(file) {
  try {
    execFileSync('unzip', ['-tq', file], { encoding: 'utf8' });
  } catch (e) {
    assert.unreachable(`unzip -t refused ${file}: ${e.stdout ?? e.message}`);
  }
}

test('archives we write load in numpy with the same keys, dtypes, orders and values, and pass unzip -t', () => {
  const sources = Object.fromEntries(numpy('catalogue', join(dir, 'cat')).map((c) => [c.name, c.file]));
  const picked = [
    'f4_C',
    'f8_be_F',
    'i8_C',
    'u2_be_C',
    'b1_C',
    'c16_F',
    'f2_C',
    'f16_be_C',
    'M8_ns_C',
    'm8_2s_be_F',
    'S5',
    'U3_be_F',
    'V7',
    'rec_nested',
    'rec_aligned',
    'rec_titles',
    'rec_F',
    'rec_utf8_name_v3',
    'f4_0d',
    'f8_empty',
    'rec_4000_fields_v2',
  ];
  const specs = [];
  for (const compress of [false, true]) {
    for (const how of ['encodeNpz', 'saveNpzSync']) {
      const arrays = Object.fromEntries(picked.map((n) => [n, loadNpySync(sources[n])]));
      arrays['dir/é整'] = loadNpySync(sources.i4_C);
      const file = join(dir, `ours_${how}_${compress}.npz`);
      if (how === 'encodeNpz') writeFileSync(file, encodeNpz(arrays, { compress, codec: compress ? fflateCodec : undefined }));
      else saveNpzSync(file, arrays, { compress });
      specs.push({ file, expect: { ...Object.fromEntries(picked.map((n) => [n, sources[n]])), 'dir/é整': sources.i4_C } });
    }
  }
  const problems = numpy('check-npz', writeJSON(join(dir, 'check.json'), specs));
  assert.equal(
    problems,
    specs.map(() => []),
  );
  for (const s of specs) unzipTest(s.file);
});

test("a list is saved as arr_0, arr_1 …; an empty archive is 22 bytes like numpy's", () => {
  const a = decodeNpz(encodeNpz([{ data: new Float32Array([1]) }, { data: new Int8Array([2, 3]) }]));
  assert.equal([...a.names], ['arr_0', 'arr_1']);
  assert.equal(a.getSync('arr_1').toList(), [2, 3]);
  const empty = encodeNpz({});
  assert.is(empty.length, 22);
  assert.is(empty.length, readFileSync(cases.empty).length);
  assert.equal([...decodeNpz(empty).names], []);
});

test('CLI: show --json of a whole archive and of one member; info lists members', async () => {
  const r = await runCli(['show', '--json', cases.savez_compressed]);
  assert.is(r.code, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout), { arrays: docs.savez_compressed });
  const one = await runCli(['show', '--json', `${cases.savez}:rec`]);
  assert.equal(JSON.parse(one.stdout), docs.savez.rec);
  const info = await runCli(['info', cases.savez_compressed]);
  assert.is(info.stdout.trim().split('\n').length, Object.keys(docs.savez_compressed).length);
  assert.match(info.stdout, /savez_compressed\.npz:f4: '<f4' .* deflated \d+ bytes/);
  const missing = await runCli(['show', `${cases.savez}:nope`]);
  assert.is(missing.code, 1);
  assert.match(missing.stderr, /no array 'nope'/);
});

test('CLI: convert npz → npz (--compress/--store), member → npy, npy → npz', async () => {
  const out = join(dir, 'conv.npz');
  let r = await runCli(['convert', cases.savez, out, '--compress']);
  assert.is(r.code, 0, r.stderr);
  let a = openNpzSync(out);
  assert.ok(a.entries.every((e) => e.method === 8));
  assert.equal(ourDocs(a), docs.savez);
  a.close();
  r = await runCli(['convert', out, out + '.stored.npz', '--store']);
  a = openNpzSync(out + '.stored.npz');
  assert.ok(a.entries.every((e) => e.method === 0));
  a.close();
  const npy = join(dir, 'member.npy');
  r = await runCli(['convert', `${cases.savez_compressed}:rec`, npy]);
  assert.is(r.code, 0, r.stderr);
  assert.equal(npyDocument(readHeader(readFileSync(npy)), loadNpySync(npy)), docs.savez_compressed.rec);
  r = await runCli(['convert', npy, join(dir, 'wrapped.npz:table')]);
  assert.is(r.code, 0, r.stderr);
  const w = openNpzSync(join(dir, 'wrapped.npz'));
  assert.equal([...w.names], ['table']);
  w.close();
  r = await runCli(['convert', cases.savez, join(dir, 'x.npy')]);
  assert.is(r.code, 2);
  assert.match(r.stderr, /name one/);
});

test('zlibCodec, blocking and on the thread pool: a size past one buffer is TOO_LARGE (before any allocation), a corrupt stream ZIP_FORMAT, more than declared ZIP_SIZE', async () => {
  const { kMaxLength } = await import('node:buffer');
  const { deflateRawSync } = await import('node:zlib');
  const code = async (run) => {
    try {
      await run();
    } catch (e) {
      return e instanceof NpyError ? e.code : String(e);
    }
    return 'inflated';
  };
  const good = deflateRawSync(new Uint8Array(100));
  for (const inflate of [zlibCodec.inflate, zlibCodec.inflateAsync]) {
    assert.is(await code(() => inflate(good, kMaxLength + 1, 'm')), 'TOO_LARGE');
    assert.is(await code(() => inflate(new Uint8Array([0xff, 0xff, 0xff]), 10, 'm')), 'ZIP_FORMAT');
    assert.is(await code(() => inflate(good, 50, 'm')), 'ZIP_SIZE');
    assert.is((await inflate(good, 100, 'm')).length, 100);
  }
});

test('object arrays: one rule for .npy and .npz, as numpy has it (saves write them, loads decode them only with allowPickle)', async () => {
  const file = join(dir, 'objects.npz');
  python(`np.savez(${JSON.stringify(file)}, o=np.array([1, 'a', None, [2, 3]], dtype=object), x=np.arange(3))`);
  const refused = (e) => e instanceof NpyError && e.code === 'PICKLE_UNSUPPORTED' && /allowPickle/.test(e.message);
  await rejects(() => loadNpz(file), refused);
  assert.throws(() => loadNpzSync(file), refused);
  assert.throws(() => openNpzSync(file).getSync('o'), refused);
  const want = [1, 'a', null, [2, 3]];
  assert.equal((await loadNpz(file, { allowPickle: true })).get('o').toList(), want);
  assert.equal(loadNpzSync(file, { allowPickle: true }).get('o').toList(), want);
  const z = await openNpz(file, { allowPickle: true });
  assert.equal((await z.get('o')).toList(), want);
  await z.close();
  // Saving needs no option, as np.savez and saveNpy need none: numpy reads back what was written.
  const back = join(dir, 'objects-back.npz');
  saveNpzSync(back, loadNpzSync(file, { allowPickle: true }));
  assert.is(
    python(`z = np.load(${JSON.stringify(back)}, allow_pickle=True); print(z['o'].tolist() == [1, 'a', None, [2, 3]] and z['x'].tolist() == [0, 1, 2])`).trim(),
    'True',
  );
});

test('{ checkCrc: false } skips the CRC-32 check on every read path (and only then): members whose CRCs were all altered read as numpy reads the unaltered archive', async () => {
  const good = join(dir, 'crc-good.npz');
  const bad = join(dir, 'crc-bad.npz');
  // numpy's .npy bytes, stored and deflated, both byte orders, and a deflated member past 1 MiB
  // (inflated whole by the addon where it is built).
  const values = JSON.parse(
    python(`
import zipfile, struct
arrays = {'s': (np.arange(12, dtype='<f4').reshape(3, 4), zipfile.ZIP_STORED), 'be': (np.arange(5, dtype='>i4') * 7, zipfile.ZIP_DEFLATED),
          'big': (np.linspace(0, 1, 300000), zipfile.ZIP_DEFLATED)}
with zipfile.ZipFile(${JSON.stringify(good)}, 'w') as z:
    for k, (a, method) in arrays.items():
        f = io.BytesIO(); np.save(f, a); z.writestr(k + '.npy', f.getvalue(), compress_type=method)
raw = bytearray(open(${JSON.stringify(good)}, 'rb').read())
with zipfile.ZipFile(${JSON.stringify(good)}) as z:
    # Every CRC-32, in the local headers and in the central directory, altered by one bit.
    for i in z.infolist():
        raw[i.header_offset + 14] ^= 1
    p = z.start_dir
    while raw[p:p + 4] == b'PK\\x01\\x02':
        raw[p + 16] ^= 1
        n, x, c = struct.unpack('<HHH', raw[p + 28:p + 34])
        p += 46 + n + x + c
open(${JSON.stringify(bad)}, 'wb').write(raw)
z = np.load(${JSON.stringify(good)})
print(json.dumps({k: z[k].ravel().tolist() for k in z.files}))
`),
  );
  const { streamNpzMember } = await import('@npyts/core/node');
  const names = Object.keys(values);
  const goodBytes = decodeNpz(readFileSync(good));
  const onFile = async (o, work) => {
    const z = await openNpz(bad, o);
    try {
      return await work(z);
    } finally {
      await z.close();
    }
  };
  const reads = {
    'decodeNpz getSync': (o) => names.map((n) => decodeNpz(readFileSync(bad), o).getSync(n)),
    'decodeNpz get': (o) => Promise.all(names.map((n) => decodeNpz(readFileSync(bad), o).get(n))),
    'decodeNpz bytes': (o) => Promise.all(names.map((n) => decodeNpz(readFileSync(bad), o).bytes(n))),
    'openNpzSync getSync': (o) => names.map((n) => openNpzSync(bad, o).getSync(n)),
    'openNpzSync get': (o) => Promise.all(names.map((n) => openNpzSync(bad, o).get(n))),
    'openNpz get': (o) => onFile(o, (z) => Promise.all(names.map((n) => z.get(n)))),
    'openNpz get (copy)': (o) => onFile(o, (z) => Promise.all(names.map((n) => z.get(n, { copy: true })))),
    'openNpz bytes': (o) => onFile(o, (z) => Promise.all(names.map((n) => z.bytes(n)))),
    'openNpz stream': (o) =>
      onFile(o, async (z) => {
        const chunks = [];
        for await (const chunk of streamNpzMember(z, 'big')) chunks.push(chunk);
        return [Buffer.concat(chunks)];
      }),
  };
  for (const [how, read] of Object.entries(reads)) {
    await rejects(
      async () => read({}),
      (e) => e.code === 'ZIP_CRC',
    );
    const got = await read({ checkCrc: false });
    got.forEach((x, i) => {
      if (x instanceof Uint8Array) assert.ok(Buffer.from(x).equals(goodBytes.bytesSync(how.endsWith('stream') ? 'big' : names[i])), `${how} ${names[i]}`);
      else assert.equal(Array.from(x.data, Number), values[names[i]], `${how} ${names[i]}`);
    });
  }
});

test("an archive opened by openNpzSync names its file in every later error (as openNpz's do); one in memory names none", async () => {
  const path = join(dir, 'named.npz');
  python(`
np.savez(${JSON.stringify(path)}, w=np.arange(10.0))
raw = bytearray(open(${JSON.stringify(path)}, 'rb').read())
raw[raw.find(b'\\x93NUMPY') + 80] ^= 1   # a data byte: the CRC-32 no longer matches
open(${JSON.stringify(path)}, 'wb').write(raw)
`);
  const named = (e) => e instanceof NpyError && e.file === path && e.message.startsWith(`${path}: `) && e.message.split(path).length === 2;
  const z = openNpzSync(path);
  try {
    assert.throws(() => z.getSync('w'), named);
    assert.throws(() => z.bytesSync('w'), named);
    assert.throws(() => z.entry('nope'), named);
    assert.throws(() => z.getSync('nope'), named);
    await rejects(() => z.get('w'), named);
    await rejects(() => z.bytes('w'), named);
    await rejects(() => z.get('nope'), named);
  } finally {
    z.close();
  }
  const f = await openNpz(path);
  await rejects(() => f.get('w'), named);
  await f.close();
  assert.throws(
    () => decodeNpz(readFileSync(path)).getSync('w'),
    (e) => e.code === 'ZIP_CRC' && e.file === undefined,
  );
});

test('a member whose header is longer than the first block read (400 fields, deflated): header and data as numpy has them', async () => {
  const path = join(dir, 'long-header.npz');
  const want = JSON.parse(
    python(`
dt = np.dtype([('field_%d_with_a_long_name' % i, '<f4') for i in range(400)])
a = np.zeros(3, dt); a['field_399_with_a_long_name'] = [1.5, 2, 3]
np.savez_compressed(${JSON.stringify(path)}, a=a)
import zipfile
f = zipfile.ZipFile(${JSON.stringify(path)}).open('a.npy')
np.lib.format.read_magic(f); np.lib.format.read_array_header_1_0(f, max_header_size=1 << 20)
print(json.dumps({'offset': f.tell(), 'last': a['field_399_with_a_long_name'].tolist()}))
`),
  );
  assert.ok(want.offset > 8192, `header of ${want.offset} bytes`);
  for (const z of [decodeNpz(readFileSync(path)), openNpzSync(path)]) {
    assert.is(z.headerSync('a').dataOffset, want.offset);
    assert.equal(Array.from(getField(await z.get('a'), 'field_399_with_a_long_name').data), want.last);
    z.close();
  }
});

test("a deflated member larger than the inline limit, with a header longer than the inflater's chunks: decodeNpz's get() splits it at the header's end, as numpy reads it, into data that owns its buffer", async () => {
  const path = join(dir, 'longer-header.npz');
  const want = JSON.parse(
    python(`
dt = np.dtype([('field_%d_with_a_rather_long_name' % i, '<f4') for i in range(2000)])
a = np.zeros(40, dt); a['field_1999_with_a_rather_long_name'] = np.arange(40) * 0.5
np.savez_compressed(${JSON.stringify(path)}, a=a, small=np.arange(3.0))
import zipfile
f = zipfile.ZipFile(${JSON.stringify(path)}).open('a.npy')
v = np.lib.format.read_magic(f)
(np.lib.format.read_array_header_1_0 if v == (1, 0) else np.lib.format.read_array_header_2_0)(f, max_header_size=1 << 20)
print(json.dumps({'offset': f.tell(), 'size': zipfile.ZipFile(${JSON.stringify(path)}).getinfo('a.npy').file_size, 'last': a['field_1999_with_a_rather_long_name'].tolist()}))
`),
  );
  assert.ok(want.offset > 65536 && want.size > 2 * 65536, `header of ${want.offset} bytes, member of ${want.size}`);
  const z = decodeNpz(readFileSync(path));
  const [a, small] = await Promise.all([z.get('a'), z.get('small')]);
  assert.equal(Array.from(getField(a, 'field_1999_with_a_rather_long_name').data), want.last);
  assert.equal(Array.from(small.data), [0, 1, 2]);
  for (const x of [a, small]) assert.equal([x.data.byteOffset, x.data.buffer.byteLength], [0, x.data.byteLength]);
});

test("a region read of a stored member of an archive file honours its signal inside the file's read (the member's window passes the signal on)", async () => {
  const path = join(dir, 'abort-member.npz');
  python(`np.savez(${JSON.stringify(path)}, w=np.arange(1 << 20, dtype='<f4'))`);
  const z = await openNpz(path);
  const member = await z.openMember('w', { expect: '<f4' });
  // One run of 4 MiB: one read into the result, aborted while it is in flight.
  const controller = new AbortController();
  const reading = member.read([0], [1 << 20], { signal: controller.signal });
  controller.abort();
  const outcome = await reading.then(
    () => 'read',
    (e) => e.name,
  );
  assert.is(outcome, 'AbortError');
  assert.equal(Array.from((await member.read([5], [3])).data), [5, 6, 7]);
  await z.close();
});

test.run();
