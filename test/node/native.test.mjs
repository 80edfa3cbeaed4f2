// @npyts/native: the addon is built by `npm ci`, changes speed only, and the JavaScript paths it
// replaces give numpy's bytes too (each case also runs in a child process with NPYTS_NATIVE=0).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { constants } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { decodeNpy, toOrder, createArray } from '@npyts/core';
import { loadNpySync, saveNpySync, nativeStatus } from '@npyts/core/node';
import { numpy, python, scratch, spawnCli } from '../helpers/numpy.mjs';
import { root } from '../packages/guide-blocks.mjs';

const dir = scratch();
const cases = numpy('swapped', dir);
const bytesOf = (data) => Buffer.from(data.buffer, data.byteOffset, data.byteLength);
const thp = (() => {
  try {
    return /\[(\w+)\]/.exec(readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8'))[1];
  } catch {
    return 'never';
  }
})();

// Debian's libdeflate-dev (.ci/run installs it): the addon links libdeflate when its header is there.
const libdeflate = existsSync('/usr/include/libdeflate.h');

test('the addon was built from source by npm ci (this checkout has no prebuilds) and is in use (with libdeflate where its headers are installed)', () => {
  assert.equal(
    nativeStatus(),
    { loaded: true, mmap: { available: true }, libdeflate, binary: 'build/Release/npyts_native.node' },
    `@npyts/native is not loaded: ${nativeStatus().reason}`,
  );
});

test("whole deflated members: libdeflate gives zlib's bytes and zlib's errors (corrupt, longer or shorter than declared), blocking and on the thread pool; async get gives each array a buffer of exactly its data", () => {
  const objectsSum = python(`import hashlib
rng = np.random.default_rng(3)
np.savez_compressed(${JSON.stringify(join(dir, 'inflate.npz'))}, random=rng.standard_normal(300_000).astype('<f4'),
    smooth=(np.sin(np.arange(500_000) / 100.0) * 10).round(1), big_endian=np.arange(70_000, dtype='>i8'), empty=np.zeros(0), text=np.array(['ab', 'çé']),
    random_big=rng.standard_normal(800_000).astype('>f8'), objects=np.array([rng.bytes(12).hex() for _ in range(200_000)], dtype=object))
import zipfile
z = zipfile.ZipFile(${JSON.stringify(join(dir, 'inflate.npz'))})
assert z.getinfo('objects.npy').compress_size >= 1 << 20  # big enough for the whole-member path
print(json.dumps(hashlib.sha256(json.dumps(np.load(${JSON.stringify(join(dir, 'inflate.npz'))}, allow_pickle=True)['objects'].tolist(), separators=(',', ':')).encode()).hexdigest()))`).trim();
  const script = `
    import { zlibCodec, openNpzSync, openNpz, nativeStatus } from '@npyts/core/node';
    import { deflateRawSync } from 'node:zlib';
    import { createHash } from 'node:crypto';
    const z = openNpzSync(${JSON.stringify(join(dir, 'inflate.npz'))}, { allowPickle: true });
    const sums = {};
    const text = (a) => createHash('sha256').update(JSON.stringify(a.data)).digest('hex');
    sums.objects = text(z.getSync('objects'));
    for (const name of z.names.filter((n) => n !== 'objects')) {
      const a = z.getSync(name);
      sums[name] = createHash('sha256').update(new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength)).digest('hex') + ' ' + a.shape;
      sums[name + ' bytes'] = createHash('sha256').update(await z.bytes(name)).digest('hex');
    }
    z.close();
    // Async get: members of 1 MiB and more go to libdeflate whole; tfjs needs each array's buffer to be exactly its data.
    const za = await openNpz(${JSON.stringify(join(dir, 'inflate.npz'))}, { allowPickle: true });
    // An object array that big is inflated once and decoded from those bytes.
    sums['objects get'] = text(await za.get('objects'));
    for (const name of za.names.filter((n) => n !== 'objects')) {
      const a = await za.get(name);
      const exact = a.data.byteOffset === 0 && a.data.buffer.byteLength === a.data.byteLength;
      sums[name + ' get'] = createHash('sha256').update(new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength)).digest('hex') + ' ' + a.shape + (exact ? ' exact' : ' not exact');
    }
    await za.close();
    const good = deflateRawSync(Buffer.alloc(100, 7));
    const corrupt = Uint8Array.from(good);
    corrupt[0] ^= 0xff;
    const codes = [];
    for (const inflate of [(d, n) => zlibCodec.inflate(d, n, 'm'), (d, n) => zlibCodec.inflateAsync(d, n, 'm')]) {
      for (const [data, size] of [[corrupt, 100], [good, 50], [good, 150]]) {
        try {
          await inflate(data, size);
          codes.push('none');
        } catch (e) {
          codes.push(e.code);
        }
      }
    }
    console.log(JSON.stringify({ libdeflate: nativeStatus().libdeflate, sums, codes }));`;
  const run = (env) => JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env: { ...process.env, ...env } }));
  const fast = run({});
  const zlib = run({ NPYTS_LIBDEFLATE: '0' });
  assert.is(fast.libdeflate, libdeflate);
  assert.is(zlib.libdeflate, false);
  assert.equal(fast.sums, zlib.sums);
  assert.is(fast.sums.objects, JSON.parse(objectsSum));
  assert.is(fast.sums['objects get'], JSON.parse(objectsSum));
  for (const name of ['random', 'random_big', 'smooth']) {
    assert.is(fast.sums[name + ' get'], fast.sums[name].replace(/ .*/, '') + ' ' + fast.sums[name].replace(/^\S+ /, '') + ' exact');
  }
  assert.equal(fast.codes, zlib.codes);
  assert.equal(zlib.codes, ['ZIP_FORMAT', 'ZIP_SIZE', 'ZIP_SIZE', 'ZIP_FORMAT', 'ZIP_SIZE', 'ZIP_SIZE']);
});

/** Every case through loadNpySync and decodeNpy in this process; returns the mismatches. */
function checkSwaps() {
  const bad = [];
  for (const c of cases) {
    const want = readFileSync(c.raw);
    const loaded = loadNpySync(c.file);
    if (!bytesOf(loaded.data).equals(want)) bad.push(`loadNpySync ${c.descr}`);
    const decoded = decodeNpy(readFileSync(c.file));
    if (!bytesOf(decoded.data).equals(want)) bad.push(`decodeNpy ${c.descr}`);
    // Writing big-endian again swaps a copy back: the file must be numpy's, byte for byte.
    // C order from the Fortran ones (the plane copy), against numpy's np.ascontiguousarray.
    if (c.order === 'F' && !bytesOf(toOrder(loaded, 'C').data).equals(readFileSync(c.raw_c))) bad.push(`toOrder C ${c.descr}`);
    const out = join(dir, `again-${c.descr.replace(/\W/g, '')}-${c.bytes}.npy`);
    saveNpySync(out, loaded);
    if (!readFileSync(out).equals(readFileSync(c.file))) bad.push(`saveNpySync ${c.descr}`);
  }
  return bad;
}

test('a binary that is there but does not load (a prebuild for a newer glibc, say) is named, with the way to build one: npyts keeps to JavaScript and nativeStatus() says why', () => {
  // A copy of the package beside the repository's node_modules, whose only binary is a damaged prebuild.
  const copy = join(root, 'node_modules', '.cache', 'npyts-native-damaged');
  rmSync(copy, { recursive: true, force: true });
  mkdirSync(join(copy, 'prebuilds', `${process.platform}-${process.arch}`), { recursive: true });
  for (const f of ['index.cjs', 'package.json']) writeFileSync(join(copy, f), readFileSync(join(root, 'packages', 'native', f)));
  writeFileSync(join(copy, 'prebuilds', `${process.platform}-${process.arch}`, 'node.napi.glibc.node'), 'not an ELF file');
  const said = execFileSync(process.execPath, ['-e', `try { require(${JSON.stringify(join(copy, 'index.cjs'))}) } catch (e) { console.log(e.message) }`], {
    encoding: 'utf8',
  });
  assert.match(
    said,
    /^@npyts\/native's binary prebuilds\/[\w-]+\/node\.napi\.glibc\.node does not load here \(.*\); build it for this machine with `npm rebuild @npyts\/native`/,
  );
  rmSync(copy, { recursive: true, force: true });
});

test('npyts --version says whether the addon is in use', () => {
  const r = spawnCli(['--version']);
  assert.is(r.code, 0);
  assert.is(r.stdout, 'npyts 0.1.0 (@npyts/native: in use, built at install)\n');
});

test("big-endian data of every swap width (2, 4, 8, 16 bytes) is numpy's native bytes, and Fortran order becomes numpy's C order, with the addon", () => {
  assert.ok(
    cases.every((c) => c.bytes >= 64 << 10),
    'each case is past the small-size shortcut',
  );
  assert.equal(checkSwaps(), []);
});

test('… and on the JavaScript paths (NPYTS_NATIVE=0)', () => {
  const script = `
    import { nativeStatus, loadNpySync, saveNpySync } from '@npyts/core/node';
    import { decodeNpy, toOrder } from '@npyts/core';
    import { readFileSync } from 'node:fs';
    import { join } from 'node:path';
    const cases = ${JSON.stringify(cases)};
    const dir = ${JSON.stringify(dir)};
    const bytesOf = (data) => Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    ${checkSwaps.toString()}
    console.log(JSON.stringify({ status: nativeStatus(), bad: checkSwaps() }));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    encoding: 'utf8',
    env: { ...process.env, NPYTS_NATIVE: '0' },
  });
  const { status, bad } = JSON.parse(out);
  assert.equal(status, { loaded: false, reason: 'turned off by NPYTS_NATIVE=0', mmap: { available: false, reason: 'turned off by NPYTS_NATIVE=0' } });
  assert.equal(bad, []);
});

test('saveNpySync preallocates but leaves the exact size, also over a longer file; numpy reads it', () => {
  const path = join(dir, 'over.npy');
  writeFileSync(path, Buffer.alloc(24 << 20, 7));
  const a = createArray('<f8', [1000, 1000]);
  for (let i = 0; i < a.data.length; i++) a.data[i] = i * 0.5;
  saveNpySync(path, a);
  assert.is(statSync(path).size, 128 + 8e6);
  const check = python(`a = np.load(${JSON.stringify(path)}); print(bool((a.reshape(-1) == np.arange(10**6) * 0.5).all()), a.shape)`);
  assert.is(check.trim(), 'True (1000, 1000)');
});

test('large buffers start zero-filled (advice changes no byte)', () => {
  const a = createArray('<u4', [1 << 22]);
  let nonzero = 0;
  for (let i = 0; i < a.data.length; i++) nonzero |= a.data[i];
  assert.is(nonzero, 0);
});

test('huge-page advice reaches the kernel where transparent huge pages are on', () => {
  const addon = createRequire(import.meta.url)('@npyts/native');
  const advised = addon.adviseHugePages(new Uint8Array(new ArrayBuffer(64 << 20)));
  if (thp === 'never') {
    assert.is(advised, 0);
    return;
  }
  // All but at most one huge page at each unaligned end.
  assert.ok(advised >= 60 << 20, `advised ${advised} bytes of 64 MiB`);
  // And an array's memory actually sits in huge pages (AnonHugePages counts them), measured in a
  // fresh process where no earlier large buffer can be freed in between.
  const out = execFileSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `
    import { createArray } from '@npyts/core';
    import '@npyts/core/node';
    import { readFileSync } from 'node:fs';
    const hugeKiB = () => Number(/AnonHugePages:\\s+(\\d+)/.exec(readFileSync('/proc/self/smaps_rollup', 'utf8'))[1]);
    const before = hugeKiB();
    const big = createArray('<f4', [16 << 20]);
    big.data.fill(1);
    console.log(hugeKiB() - before);`,
    ],
    { encoding: 'utf8' },
  );
  assert.ok(Number(out) >= 32 << 10, `AnonHugePages grew by ${out.trim()} KiB for a 64 MiB array`);
});

test("large reads on several threads: numpy's bytes, exact truncation errors, errno on failure", () => {
  const path = join(dir, 'big.npy');
  python(`np.save(${JSON.stringify(path)}, np.random.default_rng(4).standard_normal((5000, 1001)))`); // 40 MB, past the parallel threshold
  const file = readFileSync(path);
  const a = loadNpySync(path);
  assert.ok(bytesOf(a.data).equals(file.subarray(file.length - 5000 * 1001 * 8)));
  // Cut inside the second thread's piece: the error names the first missing byte.
  const cut = join(dir, 'cut.npy');
  writeFileSync(cut, file.subarray(0, file.length - 3_000_001));
  try {
    loadNpySync(cut);
    assert.unreachable('a truncated file loaded');
  } catch (e) {
    assert.is(e.code, 'DATA_TRUNCATED');
    assert.is(e.offset, file.length - 3_000_001, e.message);
  }
  const addon = createRequire(import.meta.url)('@npyts/native');
  const fd = openSync(join(dir, 'writeonly.bin'), 'w');
  try {
    assert.is(addon.preadParallel(fd, new Uint8Array(1 << 22), 0, 2), -constants.errno.EBADF);
  } finally {
    closeSync(fd);
  }
});

test('bad arguments to the addon are TypeErrors, not crashes', () => {
  const addon = createRequire(import.meta.url)('@npyts/native');
  assert.throws(() => addon.swapBytes(new Uint16Array(4), 2), /Uint8Array/);
  assert.throws(() => addon.swapBytes(new Uint8Array(4), 3), /unit/);
  assert.throws(() => addon.adviseHugePages({}), /Uint8Array/);
  assert.throws(() => addon.preallocate(-1, 0, 10), /non-negative/);
  assert.throws(() => addon.preadParallel(0, new Uint8Array(4), -1, 2), /non-negative/);
  assert.throws(() => addon.permutePlane(new Uint8Array(10), new Uint8Array(10), 4, 4, 4, 4, 1, 1), /does not fit/);
  assert.throws(() => addon.permutePlane(new Uint8Array(10), [], 1, 1, 1, 1, 1, 1), /Uint8Arrays/);
  const odd = new Uint8Array([1, 2, 3, 4, 5]);
  addon.swapBytes(odd, 4); // the trailing partial group is left alone
  assert.equal([...odd], [4, 3, 2, 1, 5]);
});

test("CRC-32 with libdeflate: Python's zlib.crc32 for every length and alignment, continued across pieces; bad arguments are TypeErrors", () => {
  const addon = createRequire(import.meta.url)('@npyts/native');
  if (!libdeflate) {
    assert.is(addon.crc32, undefined);
    return;
  }
  const path = join(dir, 'crc-input.bin');
  const bytes = new Uint8Array(3 * 2 ** 20 + 77);
  for (let i = 0, x = 12345; i < bytes.length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    bytes[i] = x >>> 24;
  }
  writeFileSync(path, bytes);
  // Pieces at every alignment, short and long: each piece's CRC and the running CRC of the whole.
  const cuts = [0, 1, 2, 3, 7, 16, 63, 64, 65, 4096, 4099, 2 ** 20 + 5, bytes.length];
  const want = JSON.parse(
    python(`
import zlib
b = open(${JSON.stringify(path)}, 'rb').read()
cuts = ${JSON.stringify(cuts)}
print(json.dumps({'pieces': [zlib.crc32(b[a:c]) for a, c in zip(cuts, cuts[1:])], 'whole': zlib.crc32(b)}))
`),
  );
  let running = 0;
  const pieces = [];
  for (let k = 0; k + 1 < cuts.length; k++) {
    const piece = bytes.subarray(cuts[k], cuts[k + 1]);
    pieces.push(addon.crc32(piece, 0));
    running = addon.crc32(piece, running);
  }
  assert.equal(pieces, want.pieces);
  assert.is(running, want.whole);
  assert.is(addon.crc32(new Uint8Array(0), 0), 0);
  assert.throws(() => addon.crc32([1, 2], 0), /Uint8Array/);
  assert.throws(() => addon.crc32(bytes, -1), /CRC-32/);
  assert.throws(() => addon.crc32(bytes, 2 ** 32), /CRC-32/);
});

test.run();
