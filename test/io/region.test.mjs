// Files larger than memory: hyperslab reads (C and F, every axis, > 4 GiB offsets), stored npz
// members, parallel region writes from worker threads and processes, in-place append (with kills
// midway), streams, shared memory, and HTTP range reads from nginx — each checked against numpy.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { createReadStream, createWriteStream, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { arrayToJSON, arrayFromValues, readNpy, writeNpy, openNpyUrl, NpyError, toOrder, readHeader } from '@npyts/core';
import { npyDocument } from '@npyts/core/plumbing';
import {
  appendNpy,
  openNpyFile,
  openNpyFileSync,
  createNpySync,
  appendNpySync,
  loadNpySync,
  openNpzSync,
  openNpzMemberSync,
  regionStats,
} from '@npyts/core/node';
import { numpy, python, runThenKill, scratch } from '../helpers/numpy.mjs';
import { freePort, startNginx, waitForServer } from '../helpers/nginx.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = scratch('npyts-region-');
const cases = numpy('regions', join(dir, 'r'));

test('region reads equal numpy slicing for every dtype family, C and F, along every axis', () => {
  for (const { file, regions } of cases) {
    const h = openNpyFileSync(file);
    try {
      for (const r of regions) {
        const a = h.read(r.start, r.count);
        assert.equal(a.shape, r.count);
        assert.equal(arrayToJSON(a), r.data, `${file} start ${r.start} count ${r.count}`);
      }
    } finally {
      h.close();
    }
  }
});

test('regions of many short runs are gathered by the addon in one call, and equal numpy for C and F files, both byte orders, records', async () => {
  const specs = [
    ['<f8', '(300, 40, 6)', 'C'],
    ['>i4', '(300, 40, 6)', 'F'],
    ["[('a', '<i2'), ('b', '>f8', (2,))]", '(500, 30)', 'C'],
    ['<c8', '(2000, 33)', 'F'],
  ];
  const regions = [
    [
      [0, 3, 1],
      [300, 1, 2],
    ],
    [
      [10, 0, 5],
      [200, 40, 1],
    ],
    [
      [0, 7],
      [500, 1],
    ],
    [
      [100, 2],
      [1800, 3],
    ],
  ];
  for (const [k, [descr, shape, order]] of specs.entries()) {
    const file = join(dir, `gather${k}.npy`);
    const [start, count] = regions[k];
    const want = JSON.parse(
      python(`
import sys; sys.path.insert(0, ${JSON.stringify(join(root, 'test', 'helpers'))})
from npyfixtures import make, to_json
a = make(${descr.startsWith('[') ? descr : `'${descr}'`}, ${shape}, seed=${k + 5})
a = np.asfortranarray(a) if '${order}' == 'F' else a
np.save(${JSON.stringify(file)}, a)
sl = tuple(slice(s, s + c) for s, c in zip(${JSON.stringify(start)}, ${JSON.stringify(count)}))
print(json.dumps(to_json(a[sl])))`),
    );
    const h = openNpyFileSync(file);
    const before = { ...regionStats };
    const got = h.read(start, count);
    assert.is(regionStats.reads - before.reads, 1, `${file}: one gather`);
    assert.equal(arrayToJSON(got), want, `${file} ${start} ${count}`);
    h.close();
    const ha = await openNpyFile(file);
    assert.equal(arrayToJSON(await ha.read(start, count)), want, `${file} (async)`);
    await ha.close();
  }
});

test('a region read moves only the bytes the region covers (plus small joined gaps)', () => {
  const { file } = cases.find((c) => c.file.endsWith('r0C.npy')); // float32 (7, 9), C order
  const h = openNpyFileSync(file);
  const before = { ...regionStats };
  h.read([2, 0], [3, 9]); // three whole rows: one contiguous read
  assert.is(regionStats.reads - before.reads, 1);
  assert.is(regionStats.bytes - before.bytes, 3 * 9 * 4);
  h.close();
});

test('without the addon, an async column read keeps several reads in flight and equals numpy; a file cut short fails once every read has settled', () => {
  const file = join(dir, 'column-js.npy');
  const cut = join(dir, 'column-js-cut.npy');
  // 4096 rows of 4 KiB: a column is 16 groups of 1 MiB; the copy is cut to half its rows once open.
  python(`a = np.arange(4096 * 1024, dtype='<f4').reshape(4096, 1024) / 3; np.save(${JSON.stringify(file)}, a); np.save(${JSON.stringify(cut)}, a)`);
  const expected = JSON.parse(python(`import json; print(json.dumps(np.load(${JSON.stringify(file)})[:, 7].tolist()))`));
  const code = `
import { openNpyFile } from '@npyts/core/node';
const { open } = await import('node:fs/promises');
// Watch FileHandle reads (the real ones): how many are in flight at once.
const probe = await open(${JSON.stringify(file)});
const proto = Object.getPrototypeOf(probe);
await probe.close();
let inFlight = 0, most = 0;
const read = proto.read;
proto.read = async function (...args) {
  most = Math.max(most, ++inFlight);
  try { return await read.apply(this, args); } finally { inFlight--; }
};
const h = await openNpyFile(${JSON.stringify(file)});
const column = Array.from((await h.read([0, 7], [4096, 1])).data);
await h.close();
let error = null, inFlightAtError = -1;
const c = await openNpyFile(${JSON.stringify(cut)});
await (await import('node:fs/promises')).truncate(${JSON.stringify(cut)}, 8 << 20);
try { await c.read([0, 7], [4096, 1]); } catch (e) { error = e.code; inFlightAtError = inFlight; }
await c.close();
console.log(JSON.stringify({ column, most, error, inFlightAtError }));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8', cwd: root, env: { ...process.env, NPYTS_NATIVE: '0' } });
  assert.is(r.status, 0, r.stderr);
  const got = JSON.parse(r.stdout.trim().split('\n').pop());
  assert.equal(got.column, expected);
  assert.ok(got.most >= 2, `reads in flight at most: ${got.most}`);
  assert.is(got.error, 'DATA_TRUNCATED');
  assert.is(got.inFlightAtError, 0, 'no read still running when the read fails');
});

test('stored npz members support the same region reads', () => {
  const zipped = join(dir, 'members.npz');
  python(`np.savez(${JSON.stringify(zipped)}, **{f"m{i}": np.load(p) for i, p in enumerate(${JSON.stringify(cases.map((c) => c.file))})})`);
  const archive = openNpzSync(zipped);
  try {
    cases.forEach(({ regions }, i) => {
      const h = openNpzMemberSync(archive, `m${i}`);
      for (const r of regions) assert.equal(arrayToJSON(h.read(r.start, r.count)), r.data, `m${i}`);
    });
  } finally {
    archive.close();
  }
  const deflated = join(dir, 'deflated.npz');
  python(`np.savez_compressed(${JSON.stringify(deflated)}, a=np.arange(4))`);
  const d = openNpzSync(deflated);
  assert.throws(() => openNpzMemberSync(d, 'a'), /stored member/);
  d.close();
});

for (const order of ['C', 'F']) {
  test(`a ${order}-order file over 4 GiB: regions at the start, across 4 GiB and at the end equal numpy's`, () => {
    const file = join(dir, `big${order}.npy`);
    const info = numpy('big', file, order);
    assert.ok(statSync(file).size > 2 ** 32);
    const h = openNpyFileSync(file);
    try {
      for (const r of info.regions) {
        const before = regionStats.bytes;
        const a = h.read(r.start, r.count);
        const moved = regionStats.bytes - before;
        const flat = Array.from(toOrder(a, 'C').data);
        assert.ok(Math.abs(flat.reduce((s, x) => s + x, 0) - r.sum) < 1e-3 * Math.max(1, Math.abs(r.sum)), `sum ${r.start}`);
        assert.is(flat[0], r.first);
        assert.is(flat[flat.length - 1], r.last);
        if (r.data) assert.equal(arrayToJSON(a), r.data);
        assert.ok(moved <= a.data.byteLength + 4096 * 64, `read ${moved} bytes for a region of ${a.data.byteLength}`);
      }
    } finally {
      h.close();
    }
  });
}

const workerCode = `
const { workerData, parentPort } = require('node:worker_threads');
import(workerData.entry).then(({ writeRegionSync }) => {
  const { file, start, count } = workerData;
  const values = new Float64Array(count[0] * count[1]);
  for (let i = 0; i < count[0]; i++) for (let j = 0; j < count[1]; j++) values[i * count[1] + j] = (start[0] + i) * 100000 + start[1] + j;
  writeRegionSync(file, start, { data: values, shape: count, dtype: '<f8' });
  parentPort.postMessage('done');
});`;

async function fillInParallel(file, blocks, useProcesses) {
  const entry = join(root, 'packages/core/dist/node.js');
  await Promise.all(
    blocks.map(
      ({ start, count }) =>
        new Promise((resolve, reject) => {
          if (useProcesses) {
            const child = spawn(
              process.execPath,
              [
                '-e',
                workerCode.replace("require('node:worker_threads')", '({ workerData: JSON.parse(process.argv[1]), parentPort: { postMessage: () => {} } })'),
                JSON.stringify({ file, start, count, entry }),
              ],
              { stdio: 'inherit' },
            );
            child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`child exited ${code}`))));
          } else {
            const w = new Worker(workerCode, { eval: true, workerData: { file, start, count, entry } });
            w.on('message', () => resolve());
            w.on('error', reject);
          }
        }),
    ),
  );
}

test('four worker threads and four processes fill disjoint row and column blocks; numpy checks every element', async () => {
  for (const [order, useProcesses, byRows] of [
    ['C', false, true],
    ['F', true, false],
    ['C', true, false],
    ['F', false, true],
  ]) {
    const file = join(dir, `filled-${order}-${useProcesses}-${byRows}.npy`);
    const shape = [400, 300];
    createNpySync(file, { dtype: '<f8', shape, order }).close();
    const blocks = Array.from({ length: 4 }, (_, k) => (byRows ? { start: [k * 100, 0], count: [100, 300] } : { start: [0, k * 75], count: [400, 75] }));
    await fillInParallel(file, blocks, useProcesses);
    const r = numpy('check-filled', file, `${order}`);
    assert.ok(r.ok, JSON.stringify(r));
    assert.is(r.fortran, order === 'F');
  }
});

test("createNpySync writes numpy's header and sizes the file sparsely", () => {
  const file = join(dir, 'sparse.npy');
  const h = createNpySync(file, { dtype: '<i4', shape: [1000, 1000, 100] });
  h.close();
  assert.is(statSync(file).size, h.header.dataOffset + 4e8);
  assert.ok(statSync(file).blocks * 512 < 1e6, 'sparse');
  const expected =
    python(`import io; b = io.BytesIO(); np.lib.format.write_array_header_2_0(b, np.lib.format.header_data_from_array_1_0(np.lib.format.open_memmap if False else np.empty((0,), '<i4'))) if False else None
a = np.lib.format.open_memmap(${JSON.stringify(join(dir, 'np_sparse.npy'))}, mode='w+', dtype='<i4', shape=(1000, 1000, 100)); del a
print(open(${JSON.stringify(join(dir, 'np_sparse.npy'))}, 'rb').read(${h.header.dataOffset}).hex())`).trim();
  assert.is(readFileSync(file).subarray(0, h.header.dataOffset).toString('hex'), expected);
});

test('appends to a file whose data is shorter than its header says are refused, blocking and async, and change nothing', async () => {
  const file = join(dir, 'short.npy');
  python(`np.save(${JSON.stringify(file)}, np.arange(1000, dtype='<f4').reshape(100, 10))`);
  writeFileSync(file, readFileSync(file).subarray(0, 128 + 400)); // 10 of the 100 rows
  const before = readFileSync(file);
  const row = { data: new Float32Array(10), shape: [1, 10] };
  assert.throws(
    () => appendNpySync(file, row),
    (e) => e.code === 'DATA_TRUNCATED',
  );
  let err = null;
  try {
    await appendNpy(file, row);
  } catch (e) {
    err = e;
  }
  assert.is(err?.code, 'DATA_TRUNCATED');
  assert.equal(readFileSync(file), before);
});

test('appendNpySync grows in place, past the growth room too, C and F; numpy reads every state', () => {
  for (const order of ['C', 'F']) {
    const file = join(dir, `grow-${order}.npy`);
    python(
      `np.save(${JSON.stringify(file)}, ${order === 'F' ? 'np.asfortranarray(np.arange(12, dtype="<f4").reshape(3, 4).T)' : 'np.arange(12, dtype="<f4").reshape(3, 4)'})`,
    );
    const all = loadNpySync(file);
    let expected = toOrder(all, 'C').toList();
    for (let k = 1; k <= 30; k++) {
      const rows = Array.from({ length: (k % 3) + 1 }, (_, i) => Array.from({ length: order === 'C' ? 4 : 4 }, (_, j) => k * 100 + i * 10 + j));
      const add =
        order === 'C'
          ? arrayFromValues(rows, '<f4')
          : toOrder(
              arrayFromValues(
                rows[0].map((_, j) => rows.map((r) => r[j])),
                '<f4',
              ),
              'F',
            );
      appendNpySync(file, add);
      expected = order === 'C' ? [...expected, ...rows] : expected.map((r, j) => [...r, ...rows.map((row) => row[j])]);
    }
    const got = python(
      `a = np.load(${JSON.stringify(file)}); print(json.dumps({'v': a.tolist(), 'f': bool(a.flags.f_contiguous and not a.flags.c_contiguous)}))`,
    );
    const parsed = JSON.parse(got);
    assert.equal(parsed.v, expected, order);
    assert.is(parsed.f, order === 'F');
  }
  // A header without growth room (as numpy < 1.24 wrote, tightly padded): the rewrite-and-rename path.
  const tight = join(dir, 'tight.npy');
  python(`
import struct
text = "{'descr': '<i2', 'fortran_order': False, 'shape': (9,), }"
pad = 64 - (10 + len(text) + 1) % 64
open(${JSON.stringify(tight)}, 'wb').write(b'\\x93NUMPY\\x01\\x00' + struct.pack('<H', len(text) + pad + 1) + text.encode() + b' ' * pad + b'\\n' + np.arange(9, dtype='<i2').tobytes())`);
  for (let k = 0; k < 12; k++)
    appendNpySync(
      tight,
      arrayFromValues(
        Array.from({ length: 100 }, (_, i) => (k * 100 + i) % 30000),
        '<i2',
      ),
    );
  assert.is(python(`a = np.load(${JSON.stringify(tight)}); print(a.shape[0], int(a[9 + 550]))`).trim(), '1209 550');
  assert.throws(() => appendNpySync(tight, arrayFromValues([1.5], '<f8')), /cannot be written/);
  assert.throws(() => appendNpySync(join(dir, 'grow-C.npy'), arrayFromValues([[1, 2, 3]], '<f4')), /other axes must match/);
});

test('appendNpySync rewrites a format 3.0 (UTF-8) header in place; numpy reads the grown records', () => {
  const file = join(dir, 'utf8-header.npy');
  python(`np.save(${JSON.stringify(file)}, np.zeros(2, [('整形', '<i4'), ('b', '<f8')]))`);
  const before = readFileSync(file).subarray(0, 8);
  assert.is(before[6], 3);
  appendNpySync(
    file,
    arrayFromValues(
      [
        { 整形: 7, b: 1.5 },
        { 整形: -1, b: 2 },
      ],
      [
        ['整形', '<i4'],
        ['b', '<f8'],
      ],
    ),
  );
  const got = JSON.parse(python(`a = np.load(${JSON.stringify(file)}); print(json.dumps({'v': a.tolist(), 'n': a.dtype.names}))`));
  assert.equal(got, {
    v: [
      [0, 0],
      [0, 0],
      [7, 1.5],
      [-1, 2],
    ],
    n: ['整形', 'b'],
  });
  assert.is(readFileSync(file)[6], 3, 'still format 3.0, rewritten in place');
});

test('a process killed in the middle of appends leaves a valid file holding a prefix of the appends', async () => {
  const file = join(dir, 'killed.npy');
  const entry = join(root, 'packages/core/dist/node.js');
  for (let round = 0; round < 6; round++) {
    python(`np.save(${JSON.stringify(file)}, np.zeros((1, 64), '<i8'))`);
    await runThenKill(
      `
      const { appendNpySync } = await import(${JSON.stringify(entry)});
      for (let k = 1; k < 100000; k++) appendNpySync(${JSON.stringify(file)}, { data: new BigInt64Array(64).fill(BigInt(k)), shape: [1, 64], dtype: '<i8' });`,
      150 + round * 120,
    );
    const check = JSON.parse(
      python(`a = np.load(${JSON.stringify(file)}); print(json.dumps({'rows': a.shape[0], 'ok': bool((a == np.arange(a.shape[0])[:, None]).all())}))`),
    );
    assert.ok(check.ok, `round ${round}: ${JSON.stringify(check)}`);
    assert.ok(check.rows >= 1);
  }
});

test('readNpy from a stream in small odd-sized chunks equals loadNpySync, for every dtype family', async () => {
  const catalogue = numpy('catalogue', join(dir, 'cat'));
  for (const { name, file } of catalogue) {
    const bytes = readFileSync(file);
    async function* odd() {
      let i = 0;
      let k = 1;
      while (i < bytes.length) {
        const n = ((k++ * 7) % 13) + 1;
        yield bytes.subarray(i, i + n);
        i += n;
      }
    }
    const a = await readNpy(odd());
    assert.equal(npyDocument(readHeader(bytes), a), npyDocument(readHeader(bytes), loadNpySync(file)), name);
  }
  const viaNode = await readNpy(createReadStream(catalogue[0].file, { highWaterMark: 5 }));
  assert.equal(viaNode.toList(), loadNpySync(catalogue[0].file).toList());
  const web = new Blob([readFileSync(catalogue[1].file)]).stream();
  assert.equal((await readNpy(web)).toList(), loadNpySync(catalogue[1].file).toList());
  // A Blob and a fetch Response directly; a failed response is an error, not data.
  assert.equal((await readNpy(new Blob([readFileSync(catalogue[2].file)]))).toList(), loadNpySync(catalogue[2].file).toList());
  assert.equal((await readNpy(new Response(readFileSync(catalogue[3].file)))).toList(), loadNpySync(catalogue[3].file).toList());
  let failed;
  try {
    await readNpy(new Response('missing', { status: 404 }));
  } catch (e) {
    failed = e;
  }
  assert.is(failed?.code, 'HTTP_STATUS');
  assert.match(failed.message, /HTTP 404/);
  let err;
  try {
    await readNpy(
      (async function* () {
        yield readFileSync(cases[0].file).subarray(0, 200);
      })(),
    );
  } catch (e) {
    err = e;
  }
  assert.instance(err, NpyError);
  assert.is(err.code, 'DATA_TRUNCATED');
});

test("writeNpy to a Node stream and a web stream gives numpy's bytes", async () => {
  const a = loadNpySync(cases[0].file);
  const out = join(dir, 'streamed.npy');
  const ws = createWriteStream(out);
  await writeNpy(ws, a);
  await new Promise((r) => ws.end(r));
  assert.ok(readFileSync(out).equals(readFileSync(cases[0].file)));
  const chunks = [];
  await writeNpy(
    new WritableStream({
      write(c) {
        chunks.push(c);
      },
    }),
    a,
  );
  assert.ok(Buffer.concat(chunks).equals(readFileSync(cases[0].file)));
});

test('shared memory: createArray({ shared: true }) filled by workers is saved and read by numpy', async () => {
  const { createArray } = await import('@npyts/core');
  const { saveNpySync } = await import('@npyts/core/node');
  const a = createArray('<i4', [4, 1000], { shared: true });
  assert.instance(a.data.buffer, SharedArrayBuffer);
  await Promise.all(
    [0, 1, 2, 3].map(
      (row) =>
        new Promise((resolve, reject) => {
          const w = new Worker(
            `const { workerData: { buffer, row }, parentPort } = require('node:worker_threads');
      const v = new Int32Array(buffer, row * 4000, 1000); for (let j = 0; j < 1000; j++) v[j] = row * 100000 + j; parentPort.postMessage(1);`,
            { eval: true, workerData: { buffer: a.data.buffer, row } },
          );
          w.on('message', resolve);
          w.on('error', reject);
        }),
    ),
  );
  const file = join(dir, 'shared.npy');
  saveNpySync(file, a);
  assert.ok(numpy('check-filled', file, 'shared').ok);
});

test('shared memory: loadNpySync({ shared: true }) lets a worker fill the array the main thread sees', async () => {
  const a = loadNpySync(cases.find((c) => c.file.endsWith('r6C.npy')).file, { shared: true });
  assert.instance(a.data.buffer, SharedArrayBuffer);
  await new Promise((resolve, reject) => {
    const w = new Worker(
      `const { workerData, parentPort } = require('node:worker_threads'); new Float64Array(workerData)[3] = 42; parentPort.postMessage(1);`,
      { eval: true, workerData: a.data.buffer },
    );
    w.on('message', resolve);
    w.on('error', reject);
  });
  assert.is(a.data[3], 42);
});

test('HTTP range reads from nginx equal numpy; one row of the 4 GiB file moves kilobytes', async () => {
  const server = await startNginx(dir);
  try {
    for (const { file, regions } of cases.slice(0, 8)) {
      const h = await openNpyUrl(`${server.base}/r/${file.split('/').pop()}`);
      for (const r of regions) assert.equal(arrayToJSON(await h.read(r.start, r.count)), r.data, file);
    }
    const big = await openNpyUrl(`${server.base}/bigC.npy`);
    assert.is(big.size, statSync(join(dir, 'bigC.npy')).size);
    const before = { ...big.stats };
    const row = await big.read([35999, 0], [1, 30000]);
    assert.is(row.size, 30000);
    assert.is(big.stats.requests - before.requests, 1);
    assert.is(big.stats.bytes - before.bytes, 120000);
    const r0 = big.stats.requests;
    const col = await big.read([0, 29992], [64, 8]); // 64 rows × 8 floats: 64 short runs, 120 kB apart
    assert.is(col.size, 512);
    assert.is(big.stats.requests - r0, 1, 'nginx answers the 64 ranges in one multipart request');
    assert.ok(big.stats.bytes - before.bytes < 200000 + 64 * 32 + 1, `moved ${big.stats.bytes - before.bytes}`);
    const expect = JSON.parse(
      python(
        `a = np.load(${JSON.stringify(join(dir, 'bigC.npy'))}, mmap_mode='r'); print(json.dumps([float(a[35999, :].astype(np.float64).sum()), float(a[0:64, 29992:30000].astype(np.float64).sum())]))`,
      ),
    );
    const sum = (x) => Array.from(x.data).reduce((s, v) => s + v, 0);
    assert.ok(Math.abs(sum(row) - expect[0]) < 1e-3 && Math.abs(sum(col) - expect[1]) < 1e-3);
  } finally {
    server.stop();
  }
});

test('a server that answers one range at a time gets single-range requests (multi-range falls back)', async () => {
  const { startViewer } = await import('../../viewer/serve.mjs');
  const server = await startViewer({ port: 0, dataDir: join(dir, 'r') });
  try {
    const { file, regions } = cases.find((c) => c.file.endsWith('r0C.npy'));
    // The first request takes the header only: the file is small enough that a default first request
    // would hold all of it, and then no read would need a request at all.
    // wholeBodyBytes: 0 — the whole-file answer to a multi-range request is too large to keep.
    const h = await openNpyUrl(`http://127.0.0.1:${server.address().port}/data/r0C.npy`, { maxGap: 0, firstRequest: 128, wholeBodyBytes: 0 });
    for (const r of regions) assert.equal(arrayToJSON(await h.read(r.start, r.count)), r.data, file);
    const before = h.stats.requests;
    await h.read([0, 3], [7, 1]); // a column: 7 separate ranges
    assert.is(h.stats.requests - before, 7, 'after the fallback, one request per range');
  } finally {
    server.close();
  }
  // By default a small file whose whole body answered a multi-range request is kept: no request
  // after it (another origin: the first one is now sent single ranges).
  const again = await startViewer({ port: 0, dataDir: join(dir, 'r') });
  try {
    const { file, regions } = cases.find((c) => c.file.endsWith('r0C.npy'));
    const small = await openNpyUrl(`http://127.0.0.1:${again.address().port}/data/r0C.npy`, { maxGap: 0, firstRequest: 128 });
    await small.read([0, 3], [7, 1]);
    const settled = small.stats.requests;
    for (const r of regions) assert.equal(arrayToJSON(await small.read(r.start, r.count)), r.data, file);
    assert.is(small.stats.requests, settled, 'a kept whole file needs no request');
    assert.is(small.stats.bytes, 128 + statSync(file).size, 'the whole answer is counted');
  } finally {
    again.close();
  }
});

test('a server without range support: a small file that arrived whole is read from that answer, a large one refused (NO_RANGES); a wrong Content-Range is reported, never misread', async () => {
  const port = await freePort();
  const py = spawn('python3', ['-m', 'http.server', String(port), '--bind', '127.0.0.1', '--directory', join(dir, 'r')], { stdio: 'ignore' });
  try {
    await waitForServer(`http://127.0.0.1:${port}/`);
    const { file, regions } = cases.find((c) => c.file.endsWith('r0C.npy'));
    const h = await openNpyUrl(`http://127.0.0.1:${port}/r0C.npy`);
    for (const r of regions) assert.equal(arrayToJSON(await h.read(r.start, r.count)), r.data, file);
    assert.is(h.stats.requests, 1, 'the whole answer is kept: no request after it');
    assert.is(h.stats.bytes, statSync(file).size, 'every byte of the whole answer is counted');
    let err;
    try {
      await openNpyUrl(`http://127.0.0.1:${port}/r0C.npy`, { wholeBodyBytes: 64 });
    } catch (e) {
      err = e;
    }
    assert.instance(err, NpyError);
    assert.is(err.code, 'NO_RANGES');
    assert.match(err.message, /ignores Range requests.*wholeBodyBytes.*readNpy\(await fetch\(url\)\)/);
  } finally {
    py.kill();
  }
  const liar = async (_url, _init) => new Response(new Uint8Array(10), { status: 206, headers: { 'content-range': 'bytes 5-14/1000' } });
  let err;
  try {
    await openNpyUrl('http://example.invalid/x.npy', { fetch: liar });
  } catch (e) {
    err = e;
  }
  assert.match(err.message, /asked for bytes 0-4095, the server sent 5-14/);
});

test.run();
