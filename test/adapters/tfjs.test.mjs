// @npyts/tfjs against numpy: every mapped dtype, C and F order, both byte orders, 0-d and empty;
// zero-copy where tfjs allows; refusals; tensors saved for numpy; the weights bridge.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer } from 'node:http';
import { readdirSync, readFileSync, readlinkSync, realpathSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { toTensor, fromTensor, loadTensors, saveTensors, assignWeights, planWeights, checkModel, saveWeights, kerasHandler, npzHandler } from '@npyts/tfjs';
import { NpyError, arrayFromValues, decodeNpy, encodeNpz, memoryStore } from '@npyts/core';
import { pathToFileURL } from 'node:url';
import { loadNpySync, openWeights } from '@npyts/core/node';
import { numpy, scratch, writeJSON } from '../helpers/numpy.mjs';
import { startNginx } from '../helpers/nginx.mjs';
import { useCpuBackend } from '../helpers/tfjs.mjs';

await useCpuBackend();

const dir = scratch();
const fixtures = numpy('tfjs-fixtures', dir);
const jfloat = (x) => (Number.isNaN(x) ? 'NaN' : x === Infinity ? 'Infinity' : x === -Infinity ? '-Infinity' : x);

async function tensorValues(t) {
  if (t.dtype === 'string') return (await t.bytes()).map((b) => (t.__hex ? Buffer.from(b).toString('hex') : new TextDecoder().decode(b)));
  const d = Array.from(await t.data());
  if (t.dtype === 'bool') return d.map(Boolean);
  if (t.dtype === 'float32') return d.map(jfloat);
  if (t.dtype === 'complex64') return Array.from({ length: d.length / 2 }, (_, i) => [jfloat(d[2 * i]), jfloat(d[2 * i + 1])]);
  return d;
}

test("toTensor gives numpy's converted values for every mapped dtype, order, byte order and shape", async () => {
  for (const f of fixtures.filter((x) => x.values !== null && !x.name.startsWith('int_'))) {
    const t = toTensor(loadNpySync(f.file));
    assert.is(t.dtype, f.dtype, f.name);
    assert.equal(t.shape, f.shape, f.name);
    let values;
    if (f.name.startsWith('S4')) values = (await t.bytes()).map((b) => Buffer.from(b).toString('hex'));
    else values = await tensorValues(t);
    assert.equal(values, f.values, f.name);
    t.dispose();
  }
});

test('float32 and int32 C-order data goes to tfjs without a copy (tfjs copies bool input itself)', () => {
  for (const name of ['f4_le_C_2x3', 'i4_le_C_2x3']) {
    const a = loadNpySync(fixtures.find((f) => f.name === name).file);
    const t = toTensor(a);
    assert.ok(tf.backend().readSync(t.dataId) === a.data, `${name} was copied`);
  }
  const be = loadNpySync(fixtures.find((f) => f.name === 'f4_be_C_2x3').file);
  assert.ok(tf.backend().readSync(toTensor(be).dataId) === be.data, 'big-endian data is native after decoding: no second copy');
});

test('32/64-bit integers: converted when they fit, else refused naming the first value; wrap and clamp on request', async () => {
  for (const f of fixtures.filter((x) => x.name.startsWith('int_'))) {
    const a = loadNpySync(f.file);
    if (f.fits) {
      assert.equal(Array.from(await toTensor(a).data()), f.values, f.name);
    } else {
      assert.throws(
        () => toTensor(a),
        (e) => e instanceof NpyError && e.message.includes(`value ${f.first_bad_value} at flat index ${f.first_bad}`),
        f.name,
      );
    }
    assert.equal(Array.from(await toTensor(a, { int64: 'wrap' }).data()), f.wrapped, `${f.name} wrap`);
    assert.equal(Array.from(await toTensor(a, { int64: 'clamp' }).data()), f.clamped, `${f.name} clamp`);
  }
});

test('refusals: float64 on request, records, datetimes, raw void', () => {
  const f8 = loadNpySync(fixtures.find((f) => f.name === 'f8_le_C_2x3').file);
  assert.throws(() => toTensor(f8, { float64: 'refuse' }), /refuse/);
  assert.throws(() => toTensor(arrayFromValues([{ a: 1 }], [['a', '<i4']])), /record/);
  assert.throws(() => toTensor(arrayFromValues(['1'], '<M8[s]')), /datetime64/);
  assert.throws(() => toTensor(arrayFromValues(['ab'], '|V2')), /void/);
});

test('fromTensor and saveTensors: numpy loads the same names, shapes and values', async () => {
  const tensors = {
    f: tf.tensor(
      [
        [1.5, -2],
        [Infinity, NaN],
      ],
      [2, 2],
      'float32',
    ),
    i: tf.tensor([1, -2, 3], [3], 'int32'),
    b: tf.tensor([true, false], [2], 'bool'),
    c: tf.complex([1, 2], [-3, 0.5]),
    s: tf.tensor(['ab', 'é整', ''], [3], 'string'),
    scalar: tf.scalar(7, 'int32'),
    'layer/w': tf.zeros([0, 3]),
  };
  const file = join(dir, 'tensors.npz');
  writeFileSync(file, await saveTensors(tensors, { compress: true }));
  const specs = [
    { key: 'f', descr: '<f4', shape: [2, 2], values: [1.5, -2, 'Infinity', 'NaN'] },
    { key: 'i', descr: '<i4', shape: [3], values: [1, -2, 3] },
    { key: 'b', descr: '|b1', shape: [2], values: [true, false] },
    {
      key: 'c',
      descr: '<c8',
      shape: [2],
      values: [
        { re: 1, im: -3 },
        { re: 2, im: 0.5 },
      ],
    },
    { key: 's', descr: '<U2', shape: [3], values: ['ab', 'é整', ''] },
    { key: 'scalar', descr: '<i4', shape: [], values: [7] },
    { key: 'layer/w', descr: '<f4', shape: [0, 3], values: [] },
  ].map((s) => ({ ...s, file }));
  const results = numpy('check-arrays', writeJSON(join(dir, 'tensors.json'), specs));
  results.forEach((r, i) => assert.ok(r.ok, `${specs[i].key}: ${r.got} vs ${r.want}`));
});

test('loadTensors from bytes, a path and a URL', async () => {
  const f4 = loadNpySync(fixtures.find((f) => f.name === 'f4_le_F_2x3').file);
  const npz = encodeNpz({ w: f4, 'n/b': arrayFromValues([1, 2], '<i8') });
  const file = join(dir, 'w.npz');
  writeFileSync(file, npz);
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    res.end(readFileSync(file));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  try {
    const url = `http://127.0.0.1:${server.address().port}/w.npz`;
    for (const source of [npz, file, url]) {
      const m = await loadTensors(source);
      assert.equal(Object.keys(m), ['w', 'n/b']);
      assert.equal(m.w.arraySync(), f4.toList());
      assert.equal(Array.from(await m['n/b'].data()), [1, 2]);
    }
  } finally {
    server.close();
  }
});

test("sources are placed by core's one rule: a key with { store }, a file: URL string or a drive-letter-like name as a file in Node; an unknown option is refused before anything is read", async () => {
  const f4 = loadNpySync(fixtures.find((f) => f.name === 'f4_le_F_2x3').file);
  const npz = encodeNpz({ 'placed/kernel': f4, 'placed/bias': arrayFromValues([0.5, -0.5, 2], '<f4') });
  const store = memoryStore(new Map([['w.npz', npz]]));
  const fromStore = await loadTensors('w.npz', { store });
  assert.equal(fromStore['placed/kernel'].arraySync(), f4.toList());
  const kernel = tf.variable(tf.zeros([2, 3]), true, 'placed/kernel:0');
  const bias = tf.variable(tf.zeros([3]), true, 'placed/bias:0');
  await assignWeights([kernel, bias], 'w.npz', { store });
  assert.equal(kernel.arraySync(), f4.toList());
  assert.equal(Array.from(bias.dataSync()), [0.5, -0.5, 2]);
  const missing = await assignWeights([kernel], 'gone.npz', { store }).catch((e) => e);
  assert.is(missing.code, 'NOT_FOUND', missing.message);
  // A file: URL given as a string is the file it names (not a fetch of file:, which Node refuses).
  const file = join(dir, 'by-url.npz');
  writeFileSync(file, npz);
  assert.equal((await loadTensors(pathToFileURL(file).href))['placed/kernel'].arraySync(), f4.toList());
  // 'C:w.npz' has a one-letter scheme by core's hasScheme (the key rule), but in Node it is a file:
  // a drive letter on Windows, a plain name elsewhere.
  const was = process.cwd();
  process.chdir(dir);
  try {
    writeFileSync('C:w.npz', npz);
    assert.equal((await loadTensors('C:w.npz'))['placed/kernel'].arraySync(), f4.toList());
  } finally {
    process.chdir(was);
  }
  // Every reading entry refuses an option it does not know, naming it, before the source is read.
  const unread = { size: 1 << 20, read: () => assert.unreachable('the source was read') };
  for (const [name, call] of [
    ['loadTensors', (o) => loadTensors(unread, o)],
    ['assignWeights', (o) => assignWeights([kernel], unread, o)],
    ['planWeights', (o) => planWeights([kernel], unread, o)],
    ['checkModel', (o) => checkModel(null, unread, o)],
    ['saveWeights', (o) => saveWeights([kernel], undefined, o)],
    ['kerasHandler', (o) => kerasHandler(unread, o)],
    ['npzHandler', (o) => npzHandler(unread, o)],
  ]) {
    const e = await Promise.resolve()
      .then(() => call({ stroe: store }))
      .catch((error) => error);
    assert.is(e.code, 'BAD_OPTION', `${name}: ${e.message}`);
    assert.match(e.message, /takes no option 'stroe'/, name);
  }
  // The options they do take are taken.
  await loadTensors(npz, { maxHeaderBytes: 1 << 20, checkCrc: true, float64: 'refuse', int64: 'wrap', wholeBodyBytes: 1 << 20 });
  kernel.dispose();
  bias.dispose();
});

test("a connection reset in the middle of an archive, or refused, is a NETWORK error naming the URL (not fetch's bare TypeError)", async () => {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': '100000' });
    res.write(new Uint8Array(1000));
    setTimeout(() => res.socket.destroy(), 20);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${server.address().port}/w.npz`;
  try {
    for (const target of [url, url.replace(/:\d+\//, ':1/')]) {
      let error = null;
      try {
        await loadTensors(target);
      } catch (e) {
        error = e;
      }
      assert.instance(error, NpyError, String(error));
      assert.is(error.code, 'NETWORK');
      assert.ok(error.message.includes(target), error.message);
    }
  } finally {
    server.close();
  }
});

test('assignWeights: Keras-style names, all mismatches reported at once, nothing assigned on error', async () => {
  const npz = encodeNpz({
    'dense/kernel': arrayFromValues(
      [
        [1, 2],
        [3, 4],
        [5, 6],
      ],
      '<f8',
    ),
    'dense/bias': arrayFromValues([0.5, -0.5], '<f4'),
    extra: arrayFromValues([1], '<f4'),
  });
  const kernel = tf.variable(tf.zeros([3, 2]), true, 'dense/kernel:0');
  const bias = tf.variable(tf.zeros([2]), true, 'dense/bias:0');
  await assignWeights([kernel, bias], npz, { ignoreUnused: true });
  assert.equal(kernel.arraySync(), [
    [1, 2],
    [3, 4],
    [5, 6],
  ]);
  assert.equal(bias.arraySync(), [0.5, -0.5]);

  const wrongShape = tf.variable(tf.zeros([2, 3]), true, 'w_shape');
  const missing = tf.variable(tf.zeros([1]), true, 'nowhere');
  const wrongType = tf.variable(tf.zeros([2], 'int32'), true, 'w_type');
  let err;
  try {
    await assignWeights([wrongShape, missing, wrongType], npz, { names: { w_shape: 'dense/kernel', nowhere: 'absent', w_type: 'dense/bias' } });
  } catch (e) {
    err = e;
  }
  assert.instance(err, NpyError);
  assert.match(err.message, /4 weight mismatches/);
  assert.match(err.message, /w_shape: shape \[3,2\] in the archive, \[2,3\] in the model/);
  assert.match(err.message, /nowhere: no array/);
  assert.match(err.message, /w_type: dtype float32 in the archive, int32 in the model/);
  assert.match(err.message, /extra: in the archive but no weight uses it/);
  assert.equal(
    wrongShape.arraySync(),
    [
      [0, 0, 0],
      [0, 0, 0],
    ],
    'nothing assigned',
  );
  // From a path in Node: the archive file is closed afterwards, after a refusal too.
  const path = join(scratch('npyts-tfjs-close-'), 'w.npz');
  writeFileSync(path, npz);
  const openOnPath = () =>
    readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`) === realpathSync(path);
      } catch {
        return false;
      }
    }).length;
  await assignWeights([kernel, bias], path, { ignoreUnused: true });
  assert.is(openOnPath(), 0, 'assignWeights left the archive open');
  try {
    await assignWeights([wrongShape], path);
  } catch {
    /* refused: mismatches */
  }
  assert.is(openOnPath(), 0, 'a refused assignWeights left the archive open');
});

test('assignWeights: onProgress as each weight arrives; an abort halfway assigns nothing and frees what it read; a file cut short mid-load names the weight', async () => {
  const values = (n, k) => Array.from({ length: n }, (_, i) => i * k + 1);
  const npz = encodeNpz({ a: arrayFromValues(values(64, 1), '<f4'), b: arrayFromValues(values(16, 2), '<f8'), c: arrayFromValues(values(1 << 18, 3), '<f4') });
  let made = 0;
  // Keras-style names (a:1, a:2): each set of variables its own, each found by its archive key.
  const vars = () => {
    made++;
    return ['a', 'b', 'c'].map((k) => tf.variable(tf.zeros([{ a: 64, b: 16, c: 1 << 18 }[k]]), true, `${k}:${made}`));
  };
  const seen = [];
  const ws = vars();
  await assignWeights(ws, npz, { onProgress: (p) => seen.push(p) });
  assert.equal(seen, [
    { bytes: 256, total: 384 + (1 << 20), tensor: 'a' },
    { bytes: 384, total: 384 + (1 << 20), tensor: 'b' },
    { bytes: 384 + (1 << 20), total: 384 + (1 << 20), tensor: 'c' },
  ]);
  assert.equal(Array.from(ws[1].dataSync()), values(16, 2));

  const fresh = vars();
  const before = tf.memory().numTensors;
  const controller = new AbortController();
  const err = await assignWeights(fresh, npz, { signal: controller.signal, onProgress: () => controller.abort() }).then(
    () => null,
    (e) => e,
  );
  assert.is(err?.name, 'AbortError', String(err));
  assert.ok(
    fresh.every((v) => v.dataSync().every((x) => x === 0)),
    'a weight was assigned by an aborted load',
  );
  assert.is(tf.memory().numTensors, before, 'tensors read before the abort were kept');

  // Opened whole, then cut short on disk inside c's data: the read of c fails with its own code, naming c.
  const path = join(scratch('npyts-tfjs-cut-'), 'w.npz');
  writeFileSync(path, npz);
  const file = await openWeights(path);
  const cAt = Buffer.from(npz).indexOf(Buffer.from(new Float32Array(values(16, 3)).buffer));
  truncateSync(path, cAt + 8);
  const cut = await assignWeights(vars(), file).then(
    () => null,
    (e) => e,
  );
  await file.close();
  assert.instance(cut, NpyError, String(cut));
  assert.ok(cut.code !== 'WEIGHT_MISMATCH', `${cut.code}: ${cut.message}`);
  assert.match(cut.message, /^c \(from c\): /);
});

test('assignWeights on a URL reads only the members it uses, by range (an 8 MiB optimizer state stays on the server)', async () => {
  const served = scratch('npyts-tfjs-url-');
  writeFileSync(
    join(served, 'w.npz'),
    encodeNpz({
      'dense/kernel': arrayFromValues(
        [
          [1, 2],
          [3, 4],
          [5, 6],
        ],
        '<f4',
      ),
      'dense/bias': arrayFromValues([0.5, -0.5], '<f4'),
      'optimizer/state': { data: new Float32Array(2 << 20), shape: [2 << 20] },
    }),
  );
  const server = await startNginx(served);
  let moved = 0;
  const counting = async (url, init) => {
    const res = await fetch(url, init);
    moved += Number(res.headers.get('content-length') ?? 0);
    return res;
  };
  try {
    const kernel = tf.variable(tf.zeros([3, 2]), true, 'remote_kernel');
    const bias = tf.variable(tf.zeros([2]), true, 'remote_bias');
    await assignWeights([kernel, bias], `${server.base}/w.npz`, {
      ignoreUnused: true,
      fetch: counting,
      names: { remote_kernel: 'dense/kernel', remote_bias: 'dense/bias' },
    });
    assert.equal(kernel.arraySync(), [
      [1, 2],
      [3, 4],
      [5, 6],
    ]);
    assert.equal(bias.arraySync(), [0.5, -0.5]);
    assert.ok(moved > 0 && moved < 256 << 10, `assignWeights moved ${moved} bytes of an 8 MiB archive`);
  } finally {
    server.stop();
  }
});

test('fromTensor round-trips every tfjs dtype through encodeNpy', async () => {
  const t = tf.tensor(
    [
      [1, 2, 3],
      [4, 5, 6],
    ],
    [2, 3],
    'int32',
  );
  const a = await fromTensor(t);
  assert.is(a.dtype.str, '<i4');
  assert.equal(decodeNpy((await import('@npyts/core')).encodeNpy(a)).toList(), [
    [1, 2, 3],
    [4, 5, 6],
  ]);
});

test.run();
