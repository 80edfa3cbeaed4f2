// Nothing lost, nothing hung (issue 26): a refused create touches nothing, object dtypes are not
// created in place, FIFOs are refused instead of read forever, chunks(0) is refused, an abort or a
// close during an inflating read leaves no unhandled rejection, and an empty lock file (a writer
// killed between creating and writing it) is taken over.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NpyError } from '@npyts/core';
import {
  createNpy,
  createNpySync,
  loadNpy,
  loadNpySync,
  openNpyFile,
  openNpyFileSync,
  openRagged,
  openRaggedSync,
  openNpz,
  openNpzSync,
  saveRaggedSync,
  readNpyHeader,
  mapNpy,
} from '@npyts/core/node';
import { python, runCli, runThenKill, scratch } from '../helpers/numpy.mjs';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = scratch('npyts-lost-');
const f = (name) => join(dir, name);
const snapshot = (name) => (existsSync(f(name)) ? readFileSync(f(name)).toString('hex') : null);
const besides = (name) => readdirSync(dir).filter((n) => n.startsWith(`${name}.`));

async function rejects(promise, code) {
  try {
    await promise;
  } catch (e) {
    assert.instance(e, NpyError, String(e));
    assert.is(e.code, code, e.message);
    return e;
  }
  assert.unreachable('did not reject');
}

test('createNpy checks dtype and shape before touching anything: the existing file stays whole, and no temporary file is left', async () => {
  python(`np.save(${JSON.stringify(f('existing.npy'))}, np.arange(6, dtype='<i4'))`);
  const before = snapshot('existing.npy');
  for (const [shape, code] of [
    [[2 ** 40, 2 ** 40], 'SIZE_OVERFLOW'],
    [[-1], 'BAD_SHAPE'],
    [[1.5], 'BAD_SHAPE'],
    [[NaN], 'BAD_SHAPE'],
    [new Array(65).fill(1), 'BAD_SHAPE'],
  ]) {
    assert.throws(
      () => createNpySync(f('existing.npy'), { dtype: '<f8', shape }),
      (e) => e instanceof NpyError && e.code === code,
    );
    await rejects(createNpy(f('existing.npy'), { dtype: '<f8', shape }), code);
    await rejects(createNpy(f('existing.npy'), { dtype: '<f8', shape, mmap: true }), code);
    assert.is(snapshot('existing.npy'), before, `shape ${shape}`);
  }
  for (const dtype of [
    '|O',
    [
      ['a', '<i4'],
      ['b', '|O'],
    ],
  ]) {
    const e = await rejects(createNpy(f('existing.npy'), { dtype, shape: [3] }), 'OBJECT_IN_PLACE');
    assert.match(e.message, /saveNpy/);
    assert.throws(
      () => createNpySync(f('existing.npy'), { dtype, shape: [3] }),
      (x) => x.code === 'OBJECT_IN_PLACE',
    );
  }
  assert.is(snapshot('existing.npy'), before);
  assert.equal(besides('existing.npy'), []);
  // Aborted at random moments: the old file or a whole new one, and no temporary file.
  for (let k = 0; k < 12; k++) {
    const controller = new AbortController();
    const creating = createNpy(f('existing.npy'), { dtype: '<f8', shape: [1000, 1000], signal: controller.signal });
    for (let t = k % 4; t > 0; t--) await new Promise((r) => setImmediate(r));
    controller.abort();
    try {
      await (await creating).close();
    } catch (e) {
      assert.is(e.name, 'AbortError');
    }
    const seen = python(`a = np.load(${JSON.stringify(f('existing.npy'))}); print(a.dtype.str, a.shape)`).trim();
    assert.ok(seen === '<i4 (6,)' || seen === '<f8 (1000, 1000)', seen);
    assert.equal(besides('existing.npy'), []);
  }
  // A good create replaces the file whole, and numpy reads it.
  const h = await createNpy(f('existing.npy'), { dtype: '<f4', shape: [2, 3] });
  await h.writeRegion([1, 0], { data: new Float32Array([1, 2, 3]), shape: [1, 3] });
  await h.close();
  assert.is(python(`print(np.load(${JSON.stringify(f('existing.npy'))}).tolist())`).trim(), '[[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]]');
  assert.equal(besides('existing.npy'), []);
});

test('createNpy killed at random moments leaves the old file or the new one, never a header over the wrong size', async () => {
  const file = f('created.npy');
  const entry = join(repoRoot, 'packages/core/dist/node.js');
  for (let round = 0; round < 4; round++) {
    python(`np.save(${JSON.stringify(file)}, np.arange(6, dtype='<i4'))`);
    await runThenKill(
      `
      const { createNpySync } = await import(${JSON.stringify(entry)});
      for (let g = 1; g < 1e6; g++) createNpySync(${JSON.stringify(file)}, { dtype: '<f8', shape: [g % 5, 1000 * g] }).close();`,
      120 + 80 * round,
    );
    const seen = python(`a = np.load(${JSON.stringify(file)}); print(a.dtype.str, a.size >= 0)`).trim();
    assert.ok(seen === '<i4 True' || seen === '<f8 True', seen);
  }
});

const mkfifo = (name) => {
  execFileSync('mkfifo', [f(name)]);
  return f(name);
};

test('a FIFO named as a .npy, a heap or an archive is refused at once (API and CLI), never read forever', async () => {
  const fifo = mkfifo('pipe.npy');
  const code = 'NOT_A_FILE';
  assert.throws(
    () => loadNpySync(fifo),
    (e) => e.code === code && /FIFO/.test(e.message),
  );
  await rejects(loadNpy(fifo), code);
  await rejects(readNpyHeader(fifo), code);
  await rejects(openNpyFile(fifo), code);
  assert.throws(
    () => openNpyFileSync(fifo),
    (e) => e.code === code,
  );
  assert.throws(
    () => mapNpy(fifo),
    (e) => e.code === code,
  );
  await rejects(openNpz(mkfifo('pipe.npz')), code);
  assert.throws(
    () => openNpzSync(f('pipe.npz')),
    (e) => e.code === code,
  );
  // A ragged index whose heap is a FIFO.
  saveRaggedSync(f('words.npy'), ['a', 'b']);
  const heap = readdirSync(dir).find((n) => n.startsWith('words.npy.strings'));
  execFileSync('rm', [f(heap)]);
  execFileSync('mkfifo', [f(heap)]);
  assert.throws(
    () => openRaggedSync(f('words.npy')),
    (e) => e.code === code,
  );
  await rejects(openRagged(f('words.npy')), code);
  // The CLI, in a child process with a time limit: one line, the file named.
  mkdirSync(f('folder.npy'));
  for (const args of [
    ['info', fifo],
    ['info', f('words.npy')],
    ['show', f('pipe.npz')],
    ['info', f('folder.npy')],
  ]) {
    const r = spawnSync(process.execPath, [join(repoRoot, 'packages/cli/bin/npyts.js'), ...args], { encoding: 'utf8', timeout: 20_000 });
    assert.is(r.error, undefined, `${args.join(' ')} hung`);
    assert.is(r.status, 1, r.stderr);
    assert.match(r.stderr, /^npyts: error: .*(FIFO|not a regular file|directory)/);
    assert.is(r.stderr.trim().split('\n').length, 1, r.stderr);
    // The line starts with the file and does not name it again.
    if (args[1] !== f('words.npy')) assert.is(r.stderr.split(args[1]).length - 1, 1, r.stderr);
  }
});

test('chunks(0), chunks(-1) and chunks(1.5) are refused, never a loop without end', async () => {
  saveRaggedSync(f('chunked.npy'), ['a', 'bc', 'def']);
  const h = openRaggedSync(f('chunked.npy'));
  for (const size of [0, -1, 1.5, NaN])
    assert.throws(
      () => h.chunks(size).next(),
      (e) => e.code === 'BAD_OPTION' && /positive integer/.test(e.message),
    );
  assert.equal([...h.chunks(2)], [['a', 'bc'], ['def']]);
  h.close();
  const r = await openRagged(f('chunked.npy'));
  for (const size of [0, -1]) await rejects(r.chunks(size).next(), 'BAD_OPTION');
  await r.close();
});

test('aborting or closing an NpzFile while a deflated member larger than a read piece inflates leaves no unhandled rejection', () => {
  const archive = f('big-deflated.npz');
  python(`rng = np.random.default_rng(1); np.savez_compressed(${JSON.stringify(archive)}, a=rng.integers(0, 1 << 20, size=12_000_000).astype('<i4'))`);
  const r = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `
import { openNpz } from '@npyts/core/node';
const unhandled = [];
process.on('unhandledRejection', (e) => { unhandled.push(String(e?.stack ?? e).slice(0, 600)); });
const outcomes = [];
for (let round = 0; round < 16; round++) {
  const z = await openNpz(${JSON.stringify(archive)});
  const controller = new AbortController();
  // The outcome is observed at once: only the library's own promises may go unobserved here.
  const reading = z.get('a', { signal: controller.signal }).then(() => 'done', (e) => e.name + ':' + (e.code ?? ''));
  await new Promise((r) => setTimeout(r, round * 3));
  if (round % 2) controller.abort(); else await z.close();
  outcomes.push(await reading);
  await z.close();
}
await new Promise((r) => setTimeout(r, 300));
console.log(JSON.stringify({ unhandled, outcomes }));`,
    ],
    { cwd: repoRoot, encoding: 'utf8', timeout: 60_000 },
  );
  assert.is(r.status, 0, r.stderr);
  const { unhandled, outcomes } = JSON.parse(r.stdout.trim().split('\n').pop());
  assert.equal(unhandled, [], JSON.stringify(outcomes));
  assert.ok(
    outcomes.some((o) => o !== 'done'),
    `nothing was interrupted: ${outcomes}`,
  );
});

test('without the addon, an empty lock file (a writer killed between creating and writing it) is taken over once it is old', () => {
  const target = f('empty-lock.npy');
  python(`np.save('${target}', np.zeros((0, 2), dtype='<i4'))`);
  writeFileSync(`${target}.lock`, '');
  const old = (Date.now() - 10_000) / 1000;
  utimesSync(`${target}.lock`, old, old);
  const r = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { appendNpySync } from '@npyts/core/node';
appendNpySync(${JSON.stringify(target)}, { data: new Int32Array([7, 8]), shape: [1, 2] });`,
    ],
    { cwd: repoRoot, encoding: 'utf8', env: { ...process.env, NPYTS_NATIVE: '0' }, timeout: 20_000 },
  );
  assert.is(r.status, 0, r.stderr);
  assert.is(python(`print(np.load('${target}').tolist())`).trim(), '[[7, 8]]');
  assert.not.ok(existsSync(`${target}.lock`));
  assert.equal(besides('empty-lock.npy'), []);
});

test("the viewer's server answers an unreadable file with 403 and keeps serving (run as an unprivileged user)", async () => {
  const { mkdirSync, chmodSync } = await import('node:fs');
  const { spawn } = await import('node:child_process');
  const data = join(dir, 'served');
  mkdirSync(data);
  for (const d of [dir, data]) chmodSync(d, 0o755);
  python(`np.save(${JSON.stringify(join(data, 'ok.npy'))}, np.arange(3)); np.save(${JSON.stringify(join(data, 'secret.npy'))}, np.arange(3))`);
  chmodSync(join(data, 'ok.npy'), 0o644);
  chmodSync(join(data, 'secret.npy'), 0o000);
  const child = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `
import { startViewer } from ${JSON.stringify(join(repoRoot, 'viewer/serve.mjs'))};
if (process.getuid() === 0) { process.setgid(65534); process.setuid(65534); }
const s = await startViewer({ port: 0, dataDir: ${JSON.stringify(data)} });
console.log(s.address().port);`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    const port = await new Promise((ok, no) => {
      child.stdout.once('data', (b) => ok(Number(String(b).trim())));
      child.once('exit', no);
    });
    const secret = await fetch(`http://127.0.0.1:${port}/data/secret.npy`, { headers: { range: 'bytes=0-9' } });
    assert.is(secret.status, 403);
    assert.match(await secret.text(), /cannot be read/);
    const ok = await fetch(`http://127.0.0.1:${port}/data/ok.npy`);
    assert.is(ok.status, 200);
    assert.is((await ok.arrayBuffer()).byteLength, readFileSync(join(data, 'ok.npy')).length);
  } finally {
    child.kill();
  }
});

test('a heap that is missing, or named with a NUL byte, is one NpyError naming the heap (API and CLI, with the FILE: prefix)', async () => {
  saveRaggedSync(f('gone.npy'), ['a', 'bc']);
  const heap = readdirSync(dir).find((n) => n.startsWith('gone.npy.strings'));
  execFileSync('rm', [f(heap)]);
  assert.throws(
    () => openRaggedSync(f('gone.npy')),
    (e) => e.code === 'NO_HEAP' && e.message.includes(f(heap)),
  );
  const { appendRaggedSync } = await import('@npyts/core/node');
  assert.throws(
    () => appendRaggedSync(f('gone.npy'), ['x']),
    (e) => e.code === 'NO_HEAP' && e.message.includes(f(heap)),
  );
  await rejects(openRagged(f('gone.npy')), 'NO_HEAP');
  python(`a = np.load(${JSON.stringify(f('chunked.npy'))})
t = a.dtype.descr[0][0][0]
dt = np.dtype([((t.split(' heap=')[0] + ' heap=%00x', 'start'), '<u8'), ('stop', '<u8')])
np.save(${JSON.stringify(f('nul.npy'))}, a.astype(dt))`);
  assert.throws(
    () => openRaggedSync(f('nul.npy')),
    (e) => e.code === 'BAD_RAGGED' && /NUL/.test(e.message),
  );
  for (const [file, pattern] of [
    ['gone.npy', /names the heap .*which does not exist/],
    ['nul.npy', /NUL/],
  ]) {
    const r = await runCli(['info', f(file)]);
    assert.is(r.code, 1);
    assert.match(r.stderr, new RegExp(`^npyts: error: ${f(file)}: `));
    assert.match(r.stderr, pattern);
  }
});

test('saveNpz and appendRagged aborted at random moments, and saveNpz killed: every read sees the old data or the new, whole', async () => {
  const { saveNpz, openNpzSync, appendRagged } = await import('@npyts/core/node');
  const archive = f('aborted.npz');
  const generationOf = () => {
    const z = openNpzSync(archive);
    try {
      const arrays = z.names.map((n) => z.getSync(n).data);
      const gens = new Set(arrays.map((d) => d[0]));
      assert.is(gens.size, 1, `a mix of generations ${[...gens]}`);
      arrays.forEach((d, k) =>
        assert.ok(
          d.every((x) => x === d[0]),
          `${z.names[k]} is torn`,
        ),
      );
      return [...gens][0];
    } finally {
      z.close();
    }
  };
  const members = (g) => ({ a: { data: new Float64Array(300_000).fill(g) }, b: { data: new Int32Array(200_000).fill(g) } });
  await saveNpz(archive, members(0), { compress: true });
  let current = 0;
  let aborts = 0;
  for (let g = 1; g <= 20; g++) {
    const controller = new AbortController();
    const saving = saveNpz(archive, members(g), { compress: g % 2 === 0, signal: controller.signal });
    setTimeout(() => controller.abort(), (g * 7) % 23);
    try {
      await saving;
      current = g;
    } catch (e) {
      assert.is(e.name, 'AbortError');
      aborts++;
    }
    assert.is(generationOf(), current);
  }
  assert.ok(aborts > 0, 'no save was aborted');
  assert.equal(besides('aborted.npz'), []);
  const entry = join(repoRoot, 'packages/core/dist/node.js');
  for (let round = 0; round < 4; round++) {
    await runThenKill(
      `
      const { saveNpzSync } = await import(${JSON.stringify(entry)});
      for (let g = 100; g < 1e6; g++) saveNpzSync(${JSON.stringify(archive)}, { a: { data: new Float64Array(300_000).fill(g) }, b: { data: new Int32Array(200_000).fill(g) } }, { compress: g % 2 === 0 });`,
      150 + 110 * round,
    );
    generationOf();
  }
  // Appends to a ragged array, aborted: the array reads as a prefix of what was appended, never torn.
  const words = f('appended.npy');
  saveRaggedSync(words, ['w0'], { layout: 'offsets' });
  let n = 1;
  for (let k = 0; k < 20; k++) {
    const controller = new AbortController();
    const batch = Array.from({ length: 500 }, (_, i) => `w${n + i}`);
    const appending = appendRagged(words, batch, { signal: controller.signal });
    for (let t = k % 5; t > 0; t--) await new Promise((r) => setImmediate(r));
    controller.abort();
    try {
      await appending;
      n += batch.length;
    } catch (e) {
      assert.is(e.name, 'AbortError');
    }
    const h = openRaggedSync(words);
    try {
      assert.is(h.length, n);
      assert.equal(
        h.slice(0, h.length),
        Array.from({ length: n }, (_, i) => `w${i}`),
      );
    } finally {
      h.close();
    }
  }
});

test.run();
