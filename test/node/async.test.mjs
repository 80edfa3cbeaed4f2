// The async file API of @npyts/core/node: the event loop keeps ticking during large loads and saves,
// aborts release what they opened and change no file, and results agree with numpy both ways.
// It runs beside the other files: how long the loop is held is counted in this process's own CPU
// time, which their load does not change.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync, readlinkSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  loadNpy,
  saveNpy,
  readNpyHeader,
  openNpz,
  saveNpz,
  openNpyFile,
  createNpy,
  writeRegion,
  appendNpy,
  openNpzMember,
  loadNpySync,
  saveNpySync,
} from '@npyts/core/node';
import { arrayFromValues } from '@npyts/core';
import { python, scratch } from '../helpers/numpy.mjs';

const dir = realpathSync(scratch('npyts-async-'));
/** Where a child's imports of @npyts/* resolve. */
const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Await `run()`, which must reject with an error that `check` accepts (a RegExp tests the message). */
async function rejects(run, check) {
  let error = null;
  try {
    await run();
  } catch (e) {
    error = e ?? new Error('rejected with nothing');
  }
  assert.ok(error, 'expected a rejection');
  const ok = check instanceof RegExp ? check.test(String(error.message)) : check(error);
  assert.ok(ok, `unexpected rejection: ${error && (error.stack || error)}`);
}

/** The files this process has open (Linux), by path: a leaked handle shows up here. */
const openFiles = () =>
  readdirSync('/proc/self/fd').map((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      return '';
    }
  });
/** How many descriptors of this process are open on files of the test folder. */
const openFds = () => openFiles().filter((f) => f.startsWith(dir)).length;

/**
 * Run `work` while a 5 ms timer ticks; the longest the event loop was held between two ticks, and
 * `busy`, the main thread's whole time on a CPU during the work, in ms.
 * "Held" is counted in the main thread's own time on a CPU (Linux's per-thread schedstat, in ns), not
 * in wall time: a busy machine that takes the core away from this process makes a tick late without
 * the library holding the loop, and a library that computes for 50 ms without yielding is on the CPU
 * for those 50 ms however long the machine makes them last. Where schedstat is missing, wall time.
 */
async function worstTimerDrift(work) {
  const { readFileSync } = await import('node:fs');
  const stat = `/proc/self/task/${process.pid}/schedstat`;
  let onCpu;
  try {
    readFileSync(stat);
    onCpu = () => Number(readFileSync(stat, 'latin1').split(' ')[0]) / 1e6;
  } catch {
    onCpu = () => performance.now();
  }
  const start = onCpu();
  let last = start;
  let worst = 0;
  const timer = setInterval(() => {
    const now = onCpu();
    worst = Math.max(worst, now - last);
    last = now;
  }, 5);
  try {
    const result = await work();
    // Blocking in the last stretch (or all of it, had the work been synchronous) shows here.
    const end = onCpu();
    worst = Math.max(worst, end - last);
    return { worst, busy: end - start, result };
  } finally {
    clearInterval(timer);
  }
}

/**
 * A tick can still be held by this process for reasons of its own (a garbage collection). So `work`
 * runs three times, each after `baseline` (Node's own non-blocking equivalent, or an idle wait), and
 * the least hold of `work` is compared with the most the baseline saw in the same run: a library
 * that blocks holds the loop in every round.
 */
async function steadyDrift(work, baseline) {
  let worst = Infinity;
  let busy = 0;
  let noise = 0;
  let result;
  for (let round = 0; round < 3; round++) {
    noise = Math.max(noise, (await worstTimerDrift(baseline)).worst);
    const r = await worstTimerDrift(work);
    if (r.worst < worst) ({ worst, busy } = r);
    result = r.result;
  }
  return { worst, busy, noise, result };
}

/**
 * Whether the loop kept ticking: no stretch over 20 ms longer than the baseline's worst, or, where a
 * slow machine makes every step of the work slow alike (page faults that cost 30 µs each on some
 * virtual machines), no stretch over a tenth of the work's whole time on the main thread. A library
 * that blocks spends nearly all of that time in one stretch, and fails both.
 */
function assertTicking({ worst, busy, noise }, where, baseline) {
  assert.ok(
    worst < 20 + noise || worst < busy / 10,
    `${where}: the event loop was held ${worst.toFixed(1)} ms of ${busy.toFixed(0)} ms on the main thread (${baseline}: ${noise.toFixed(1)} ms)`,
  );
}

/**
 * numpy's SHA-256 of an array's bytes in C order, with its shape: in native byte order (as npyts holds
 * typed data), or for records as stored (npyts holds records as their stored bytes).
 */
const numpyDigest = (path) =>
  python(
    `a = np.load(${JSON.stringify(path)}); a = a if a.dtype.names else a.astype(a.dtype.newbyteorder('=')); print(json.dumps([list(a.shape), __import__('hashlib').sha256(np.ascontiguousarray(a)).hexdigest()]))`,
  );

// 64 MiB of float32, native and big-endian (the big-endian one is swapped piece by piece as it
// arrives), and 32 MiB of the other swap units and a record: big-endian float64, complex128, and a
// record of big-endian fields (held as its stored bytes).
const bigLE = join(dir, 'big-le.npy');
const bigBE = join(dir, 'big-be.npy');
const bigF8 = join(dir, 'big-f8.npy');
const bigC16 = join(dir, 'big-c16.npy');
const bigRec = join(dir, 'big-rec.npy');
python(`a = np.arange(16 * 2**20, dtype='<f4'); np.save(${JSON.stringify(bigLE)}, a); np.save(${JSON.stringify(bigBE)}, a.astype('>f4'))
np.save(${JSON.stringify(bigF8)}, np.arange(4 * 2**20, dtype='>f8') / 3)
np.save(${JSON.stringify(bigC16)}, (np.arange(2 * 2**20) * (1 + 2j) / 7).astype('>c16'))
r = np.zeros(2 * 2**20, dtype=[('a', '>f8'), ('b', '>i4'), ('c', '>u4')]); r['a'] = np.arange(r.size) / 5; r['b'] = -np.arange(r.size); r['c'] = 7
np.save(${JSON.stringify(bigRec)}, r)`);
/** Each large file with the byte order numpy reads back from a save of it. */
const large = [
  [bigLE, '<f4'],
  [bigBE, '>f4'],
  [bigF8, '>f8'],
  [bigC16, '>c16'],
  [bigRec, "[('a', '>f8'), ('b', '>i4'), ('c', '>u4')]"],
];
/** 256 MiB that the abort tests stop part way: large enough that no machine finishes first. */
const hugeLE = join(dir, 'huge-le.npy');
const huge = { data: new Float32Array(64 * 2 ** 20).fill(1.5), shape: [64 * 2 ** 20], dtype: '<f4' };
saveNpySync(hugeLE, huge);
/** With the addon (its byte swap in C) and without it (every swap in JavaScript). */
const engines = [{}, { NPYTS_NATIVE: '0' }];

/**
 * Run `body` (an async function's statements, with `drift(work)` in scope) in a fresh Node process:
 * the library's own blocking is measured, not the garbage of this test process's other suites.
 */
function inChild(body, env = {}) {
  const code = `import * as nd from '@npyts/core/node';
${worstTimerDrift.toString()}
${steadyDrift.toString()}
const out = await (async () => { ${body} })();
console.log(JSON.stringify(out));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8', cwd: repoRoot, env: { ...process.env, ...env } });
  assert.is(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

test("a 64 MiB load keeps the event loop ticking (no stretch on the main thread 20 ms longer than Node's own, nor a tenth of the work's, busy machine or not), native and big-endian f4, f8, c16 and records, with and without the addon, and equals numpy", () => {
  for (const env of engines) {
    for (const [path] of large) {
      const { worst, busy, noise, digest } = inChild(
        `
const { createHash } = await import('node:crypto');
const fs = await import('node:fs/promises');
const { worst, busy, noise, result } = await steadyDrift(() => nd.loadNpy(${JSON.stringify(path)}), () => fs.readFile(${JSON.stringify(path)}));
const d = result.data;
return { worst, busy, noise, digest: JSON.stringify([result.shape, createHash('sha256').update(new Uint8Array(d.buffer, d.byteOffset, d.byteLength)).digest('hex')]) };`,
        env,
      );
      const where = `${path} ${JSON.stringify(env)}`;
      assertTicking({ worst, busy, noise }, where, 'fs.readFile');
      assert.is(digest, JSON.stringify(JSON.parse(numpyDigest(path))).replace(/\s/g, ''), where);
    }
  }
});

test("a 64 MiB save keeps the event loop ticking (no stretch on the main thread 20 ms longer than Node's own, nor a tenth of the work's, busy machine or not), native and big-endian f4, f8, c16 and records, with and without the addon; numpy reads what it wrote", () => {
  for (const env of engines) {
    for (const [from, dtype] of large) {
      const out = join(dir, `saved-${from.split('/').pop()}`);
      const drift = inChild(
        `
const fs = await import('node:fs/promises');
const a = nd.loadNpySync(${JSON.stringify(from)});
const bytes = new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength);
return await steadyDrift(() => nd.saveNpy(${JSON.stringify(out)}, a), () => fs.writeFile(${JSON.stringify(`${out}.baseline`)}, bytes));`,
        env,
      );
      const where = `${out} ${JSON.stringify(env)}`;
      assertTicking(drift, where, 'fs.writeFile');
      assert.is(python(`t = np.load(${JSON.stringify(out)}, mmap_mode='r').dtype; print(t.str if t.names is None else t.descr)`).trim(), dtype, where);
      assert.is(JSON.parse(numpyDigest(out)).join(), JSON.parse(numpyDigest(from)).join(), where);
    }
  }
});

test("appending and writing a region of 32 MiB of big-endian rows keep the event loop ticking (no stretch on the main thread 20 ms longer than Node's own write, nor a tenth of the work's), with and without the addon; numpy reads what was written", () => {
  for (const env of engines) {
    const log = join(dir, `append-${env.NPYTS_NATIVE ?? 'addon'}.npy`);
    const region = join(dir, `region-${env.NPYTS_NATIVE ?? 'addon'}.npy`);
    python(`np.save(${JSON.stringify(log)}, np.zeros((0, 1024), '>f8')); np.save(${JSON.stringify(region)}, np.zeros((4 * 1024, 1024), '>f8'))`);
    const drift = inChild(
      `
const fs = await import('node:fs/promises');
const rows = new Float64Array(4 * 1024 * 1024);
for (let i = 0; i < rows.length; i++) rows[i] = i / 3;
const bytes = new Uint8Array(rows.buffer);
return await steadyDrift(async () => {
  await nd.appendNpy(${JSON.stringify(log)}, { data: rows, shape: [4 * 1024, 1024], dtype: '>f8' });
  const h = await nd.openNpyFile(${JSON.stringify(region)}, { write: true });
  try { await h.writeRegion([0, 0], { data: rows, shape: [4 * 1024, 1024] }); } finally { await h.close(); }
}, () => fs.writeFile(${JSON.stringify(`${log}.baseline`)}, bytes));`,
      env,
    );
    assertTicking(drift, JSON.stringify(env), 'fs.writeFile');
    const check = `a = np.load(${JSON.stringify(log)}); b = np.load(${JSON.stringify(region)}); x = (np.arange(4 * 2**20) / 3).reshape(-1, 1024)
print(a.dtype.str, a.shape, bool((a == np.concatenate([x, x, x])).all()), b.dtype.str, bool((b == x).all()))`;
    assert.is(python(check).trim(), '>f8 (12288, 1024) True >f8 True');
  }
});

test('a deflated 64 MiB member is inflated off the event loop (no stretch on the main thread over 20 ms, or a quarter of the whole get) and equals numpy; a corrupt one is refused as by the blocking get', () => {
  const zipped = join(dir, 'deflated-big.npz');
  python(`np.savez_compressed(${JSON.stringify(zipped)}, m=np.load(${JSON.stringify(bigBE)}))`);
  const { worst, noise, took, digest, corrupt } = inChild(`
const { createHash } = await import('node:crypto');
const fs = await import('node:fs');
const z = await nd.openNpz(${JSON.stringify(zipped)});
const t0 = performance.now();
await z.get('m');
const took = performance.now() - t0;
const { worst, noise, result } = await steadyDrift(() => z.get('m'), () => new Promise((r) => setTimeout(r, took)));
await z.close();
const d = result.data;
// Flip one byte in the middle of the compressed data: the async get must refuse it as the blocking one does.
const bytes = fs.readFileSync(${JSON.stringify(zipped)});
bytes[bytes.length >> 1] ^= 0xff;
fs.writeFileSync(${JSON.stringify(join(dir, 'corrupt.npz'))}, bytes);
const codes = [];
for (const run of [async () => (await nd.openNpz(${JSON.stringify(join(dir, 'corrupt.npz'))})).get('m'), async () => nd.openNpzSync(${JSON.stringify(join(dir, 'corrupt.npz'))}).getSync('m')]) {
  try { await run(); codes.push('none'); } catch (e) { codes.push(e.code); }
}
return { worst, noise, took, digest: JSON.stringify([result.shape, createHash('sha256').update(new Uint8Array(d.buffer, d.byteOffset, d.byteLength)).digest('hex')]), corrupt: codes };`);
  // Inflated on the loop, the get would hold a timer up for about all of its time (hundreds of ms);
  // off it, a busy machine's scheduling alone can pass 20 ms, so the bound is the larger of the two.
  const bound = Math.max(20, took / 4);
  assert.ok(
    worst < bound + noise,
    `the event loop was held ${worst.toFixed(1)} ms (an idle wait: ${noise.toFixed(1)} ms; the whole get: ${took.toFixed(0)} ms)`,
  );
  assert.is(digest, JSON.stringify(JSON.parse(numpyDigest(bigBE))).replace(/\s/g, ''));
  assert.ok(['ZIP_FORMAT', 'ZIP_CRC', 'ZIP_SIZE'].includes(corrupt[0]), JSON.stringify(corrupt));
  assert.is(corrupt[0], corrupt[1]);
});

test("an aborted load rejects with the signal's reason and closes its file: before it starts, and mid-read", async () => {
  const before = openFds();
  const reason = new Error('stop now');
  await rejects(
    () => loadNpy(hugeLE, { signal: AbortSignal.abort(reason) }),
    (e) => e === reason,
  );
  const controller = new AbortController();
  const pending = loadNpy(hugeLE, { signal: controller.signal });
  setTimeout(() => controller.abort(), 2);
  await rejects(
    () => pending,
    (e) => e.name === 'AbortError',
  );
  await rejects(
    () => loadNpy(hugeLE, { signal: AbortSignal.timeout(1) }),
    (e) => e.name === 'TimeoutError',
  );
  await rejects(
    () => readNpyHeader(hugeLE, { signal: AbortSignal.abort() }),
    (e) => e.name === 'AbortError',
  );
  assert.is(openFds(), before, 'file descriptors left open');
});

test('an aborted save leaves the old file byte for byte and no temporary file', async () => {
  const target = join(dir, 'keep.npy');
  saveNpySync(target, arrayFromValues([1, 2, 3], '<i4'));
  const old = readFileSync(target);
  const a = huge;
  const before = openFds();
  for (const delay of [0, 1, 5, 20]) {
    const controller = new AbortController();
    const pending = saveNpy(target, a, { signal: controller.signal });
    setTimeout(() => controller.abort(), delay);
    await rejects(
      () => pending,
      (e) => e.name === 'AbortError',
    );
    assert.equal(readFileSync(target), old, `abort after ${delay} ms changed the file`);
  }
  assert.equal(
    readdirSync(dir).filter((f) => f.endsWith('.tmp')),
    [],
  );
  assert.is(openFds(), before);
});

test('region reads and writes through async handles: two concurrent writers fill a file numpy reads; reads equal numpy slicing', async () => {
  const path = join(dir, 'regions.npy');
  const h = await createNpy(path, { dtype: '<f8', shape: [400, 300] });
  const half = (from) =>
    arrayFromValues(
      Array.from({ length: 200 * 300 }, (_, i) => from * 300 + i),
      '<f8',
      { shape: [200, 300] },
    );
  await Promise.all([h.writeRegion([0, 0], half(0)), writeRegion(path, [200, 0], half(200))]);
  await h[Symbol.asyncDispose]();
  await h.close(); // closing twice is harmless
  assert.is(python(`a = np.load(${JSON.stringify(path)}); print(int((a == np.arange(400 * 300).reshape(400, 300)).all()))`).trim(), '1');
  const r = await openNpyFile(path, { expect: '<f8' });
  try {
    const block = await r.read([10, 7], [5, 3]);
    assert.equal(Array.from(block.data), JSON.parse(python(`a = np.load(${JSON.stringify(path)}); print(json.dumps(a[10:15, 7:10].ravel().tolist()))`)));
    await rejects(
      () => r.read([0, 0], [1, 1], { signal: AbortSignal.abort() }),
      (e) => e.name === 'AbortError',
    );
  } finally {
    await r.close();
  }
  await rejects(() => r.read([0, 0], [1, 1]), /closed/);
});

test('concurrent async appends from one process are serialised: numpy sees every row; an aborted append leaves the old array', async () => {
  const path = join(dir, 'log.npy');
  saveNpySync(path, arrayFromValues([[0, 0, 0]], '<i4'));
  const rows = Array.from({ length: 20 }, (_, k) => arrayFromValues([[k + 1, k + 1, k + 1]], '<i4'));
  await Promise.all(rows.map((r) => appendNpy(path, r)));
  const seen = JSON.parse(python(`a = np.load(${JSON.stringify(path)}); print(json.dumps(sorted(a[:, 0].tolist())))`));
  assert.equal(
    seen,
    Array.from({ length: 21 }, (_, k) => k),
  );
  const old = readFileSync(path);
  await rejects(
    () => appendNpy(path, rows[0], { signal: AbortSignal.abort() }),
    (e) => e.name === 'AbortError',
  );
  assert.equal(readFileSync(path), old);
  assert.ok(!readdirSync(dir).some((f) => f.endsWith('.lock')));
});

test('async .npz: members read on demand equal numpy, stored members by region, saves numpy loads, aborts change nothing', async () => {
  const path = join(dir, 'archive.npz');
  python(`np.savez(${JSON.stringify(path)}, a=np.arange(12, dtype='>i8').reshape(3, 4), b=np.array(['x', 'yz']), c=np.eye(3, dtype='<f4'))`);
  const z = await openNpz(path);
  try {
    assert.equal([...z.names], ['a', 'b', 'c']);
    const a = await z.get('a', { expect: '>i8' });
    assert.equal(
      Array.from(a.data, Number),
      Array.from({ length: 12 }, (_, i) => i),
    );
    assert.equal((await z.get('b')).toList(), ['x', 'yz']);
    assert.equal((await z.header('c')).shape, [3, 3]);
    const names = [];
    for await (const [name] of z) names.push(name);
    assert.equal(names, ['a', 'b', 'c']);
    const m = await openNpzMember(z, 'c');
    assert.equal(Array.from((await m.read([1, 0], [1, 3])).data), [0, 1, 0]);
    await rejects(
      () => z.get('a', { signal: AbortSignal.abort() }),
      (e) => e.name === 'AbortError',
    );
    // Small members arrive in the window read with their local header: each gets a buffer of its own,
    // also when its data happens to be aligned in that window (member 'ab.npy': float32 data at byte 164).
    const small = join(dir, 'small.npz');
    python(`np.savez(${JSON.stringify(small)}, ab=np.arange(5, dtype='<f4'), zz=np.zeros(100000))`);
    const zs = await openNpz(small);
    const ab = await zs.get('ab');
    assert.equal(Array.from(ab.data), [0, 1, 2, 3, 4]);
    assert.ok(ab.data.buffer.byteLength < 4096, `a small member kept a ${ab.data.buffer.byteLength}-byte read window alive`);
    await zs.close();
  } finally {
    await z[Symbol.asyncDispose]();
  }
  await rejects(() => z.get('a'), /closed/);

  const out = join(dir, 'saved.npz');
  await saveNpz(out, { x: arrayFromValues([1.5, 2.5], '<f8'), y: loadNpySync(bigBE) }, { compress: true });
  assert.is(
    python(`z = np.load(${JSON.stringify(out)}); print(z['x'].tolist(), z['y'].dtype.str, int((z['y'] == np.arange(16 * 2**20, dtype='<f4')).all()))`).trim(),
    '[1.5, 2.5] >f4 1',
  );
  const old = readFileSync(out);
  const controller = new AbortController();
  const pending = saveNpz(out, { y: huge }, { signal: controller.signal });
  setTimeout(() => controller.abort(), 5);
  await rejects(
    () => pending,
    (e) => e.name === 'AbortError',
  );
  assert.equal(readFileSync(out), old);
  assert.ok(statSync(out).size === old.length);
  assert.equal(
    readdirSync(dir).filter((f) => f.endsWith('.tmp')),
    [],
  );
});

test('async errors are NpyErrors with the same codes as the blocking calls', async () => {
  const bad = join(dir, 'truncated.npy');
  const bytes = readFileSync(bigLE).subarray(0, 4096);
  writeFileSync(bad, bytes);
  await rejects(
    () => loadNpy(bad),
    (e) => e.code === 'DATA_TRUNCATED',
  );
  await rejects(
    () => openNpyFile(bad),
    (e) => e.code === 'DATA_TRUNCATED',
  );
  await rejects(
    () => loadNpy(bigLE, { expect: '<i4' }),
    (e) => e.code === 'UNEXPECTED_DTYPE',
  );
});

test.run();
