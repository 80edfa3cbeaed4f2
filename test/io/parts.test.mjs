// Arrays written as the parts of one multipart upload (issue 44, first part): planParts splits a
// .npy into parts within an object store's limits (refusing layouts that cannot meet them before
// anything is uploaded), encodePart makes each part from its region alone; numpy loads the joined
// parts exactly (C and Fortran order, a record dtype, rows that do not divide evenly), and so it
// does an object uploaded to moto_server (S3) part by part with the AWS SDK. Appends by parts
// (planAppendParts) copy the old data on the server (UploadPartCopy) between numpy's new header and
// the new rows: numpy loads the appended object exactly, in C and Fortran order, large and small.
// The larger-than-memory guide's recipes run from the guide itself: Python workers (numpy + boto3),
// and a Node coordinator handing presigned part URLs to eight worker processes (it aborts the upload
// when they fail).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  UploadPartCommand,
  UploadPartCopyCommand,
} from '@aws-sdk/client-s3';
import { NpyError, arrayFromValues, createArray, encodeAppendPart, encodePart, openNpy, planAppendParts, planParts, readHeader } from '@npyts/core';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { python, scratch } from '../helpers/numpy.mjs';
import { regionOf } from '../helpers/regions.mjs';
import { CREDENTIALS, REGION, startMoto } from '../helpers/s3.mjs';
import { blocksOf, root } from '../packages/guide-blocks.mjs';
import { execFile } from 'node:child_process';

const dir = scratch('npyts-parts-');

function joined(plan, dtype, valueAt) {
  const bodies = plan.parts.map((p) => encodePart(plan, p.number, regionOf(dtype, p, valueAt)));
  const out = Buffer.concat(bodies);
  assert.is(out.length, plan.size);
  return out;
}

test('the joined parts are the .npy numpy loads: C and Fortran order, a record dtype, rows that do not divide evenly', () => {
  const cases = [
    { dtype: '<f4', shape: [1001, 37], order: 'C', value: ([r, c]) => r * 1000 + c, numpy: 'np.arange(1001)[:, None] * 1000 + np.arange(37)' },
    { dtype: '>i8', shape: [50, 300], order: 'F', value: ([r, c]) => r - c, numpy: 'np.arange(50)[:, None] - np.arange(300)' },
  ];
  for (const [i, c] of cases.entries()) {
    const plan = planParts({ dtype: c.dtype, shape: c.shape, order: c.order, minPartBytes: 4096, parts: 7 });
    assert.ok(plan.parts.length > 2, `${plan.parts.length} parts`);
    const path = join(dir, `case${i}.npy`);
    writeFileSync(path, joined(plan, c.dtype, c.value));
    const same = python(
      `a = np.load(${JSON.stringify(path)}); print(a.dtype.str == ${JSON.stringify(c.dtype)}, a.flags['F_CONTIGUOUS'] == ${c.order === 'F' ? 'True' : 'False'} or a.ndim < 2, bool((a == (${c.numpy})).all()))`,
    );
    assert.is(same.trim(), 'True True True', `case ${i}`);
  }
  // A part after the first is a view of its region's memory where no byte swap is needed (no copy);
  // a byte-swapped one is a copy, and part 1 carries the header before the rows.
  const little = planParts({ dtype: '<f4', shape: [1001, 37], minPartBytes: 4096, parts: 7 });
  const rows = regionOf('<f4', little.parts[1], ([r, c]) => r * 1000 + c);
  assert.is(encodePart(little, 2, rows).buffer, rows.data.buffer);
  const big = planParts({ dtype: '>i8', shape: [50, 300], order: 'F', minPartBytes: 4096, parts: 7 });
  const swapped = regionOf('>i8', big.parts[1], ([r, c]) => r - c);
  assert.is.not(encodePart(big, 2, swapped).buffer, swapped.data.buffer);
  // A record dtype, the header in part 1 only.
  const rec = [
    ['x', '<f8'],
    ['n', '<i2', [2]],
  ];
  const plan = planParts({ dtype: rec, shape: [999], minPartBytes: 2048, partSize: 3000 });
  const path = join(dir, 'rec.npy');
  writeFileSync(
    path,
    joined(plan, rec, ([r]) => ({ x: r / 4, n: [r, -r] })),
  );
  assert.is(
    python(`a = np.load(${JSON.stringify(path)}); print(bool((a['x'] == np.arange(999) / 4).all() and (a['n'][:, 1] == -np.arange(999)).all()))`).trim(),
    'True',
  );
});

test("S3's limits: parts too small, too many, a row too large, refused before any upload; a wrong region or dtype refused by encodePart", () => {
  const refused = (work, code, pattern) => {
    try {
      work();
      assert.unreachable();
    } catch (e) {
      assert.ok(e instanceof NpyError, String(e));
      assert.is(e.code, code);
      if (pattern) assert.match(e.message, pattern);
    }
  };
  // 8 MiB in 4 parts of 2 MiB: below S3's 5 MiB.
  refused(() => planParts({ dtype: '<f4', shape: [2048, 1024], parts: 4 }), 'BAD_OPTION', /at least 5242880.*at most 1/);
  refused(() => planParts({ dtype: '<f4', shape: [1 << 20, 1024], partSize: 4096, minPartBytes: 1 }), 'BAD_OPTION', /at most 10000/);
  refused(() => planParts({ dtype: '<f4', shape: [4, 1 << 20], maxPartBytes: 1 << 20, minPartBytes: 1 }), 'BAD_OPTION', /larger than the store's largest part/);
  refused(() => planParts({ dtype: '|O', shape: [4] }), 'BAD_OPTION', /object arrays/);
  // Part 1 holds the header too: no part may pass the store's largest, header included.
  for (const [shape, partSize] of [
    [[1000], 1000],
    [[1000], 1 << 20],
    [[250, 1], 4000],
  ]) {
    const capped = planParts({ dtype: '<f4', shape, partSize, maxPartBytes: 1000, minPartBytes: 100 });
    for (const p of capped.parts) assert.ok(p.length <= 1000, `part ${p.number} of ${JSON.stringify(shape)} is ${p.length} bytes`);
    assert.is(
      capped.parts.reduce((n, p) => n + p.length, 0),
      capped.size,
    );
  }
  refused(() => planParts({ dtype: '<f4', shape: [4, 240], maxPartBytes: 1000, minPartBytes: 1 }), 'BAD_OPTION', /with the 128-byte header larger/);
  // S3's defaults: 256 MiB in 4 parts of 64 MiB, the header in part 1.
  const plan = planParts({ dtype: '<f4', shape: [65536, 1024], parts: 4 });
  assert.equal(
    plan.parts.map((p) => [p.number, p.start, p.count, p.length - (p.number === 1 ? plan.headerBytes : 0)]),
    [1, 2, 3, 4].map((k) => [k, [(k - 1) * 16384, 0], [16384, 1024], 16384 * 4096]),
  );
  assert.is(JSON.parse(JSON.stringify(plan)).size, plan.size, 'a plan is JSON');
  const small = planParts({ dtype: '<f4', shape: [100, 10], minPartBytes: 400, parts: 5 });
  refused(() => encodePart(small, 2, createArray('<f4', [10, 10])), 'SHAPE_MISMATCH');
  refused(() => encodePart(small, 2, createArray('<f8', [20, 10])), 'DTYPE_MISMATCH');
  refused(() => encodePart(small, 9, createArray('<f4', [20, 10])), 'BAD_OPTION');
  assert.ok(
    encodePart(
      small,
      1,
      arrayFromValues(
        Array.from({ length: 20 }, () => Array(10).fill(1)),
        '<f4',
      ),
    ).length === small.parts[0].length,
  );
});

test('a multipart upload to S3 (moto_server) with the AWS SDK: four parts written at once, numpy loads the object', async () => {
  const { client, stop } = await startMoto();
  try {
    await client.send(new CreateBucketCommand({ Bucket: 'arrays' }));
    const shape = [6 * 1024, 1024]; // 24 MiB of float32: four parts of 6 MiB
    const plan = planParts({ dtype: '<f4', shape, parts: 4 });
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: 'arrays', Key: 'x.npy' }));
    const etags = await Promise.all(
      plan.parts.map(async (p) => {
        const region = createArray('<f4', p.count);
        for (let i = 0; i < region.data.length; i++) region.data[i] = (p.start[0] * 1024 + i) % 65521;
        const { ETag } = await client.send(
          new UploadPartCommand({ Bucket: 'arrays', Key: 'x.npy', UploadId, PartNumber: p.number, Body: encodePart(plan, p.number, region) }),
        );
        return { ETag, PartNumber: p.number };
      }),
    );
    await client.send(new CompleteMultipartUploadCommand({ Bucket: 'arrays', Key: 'x.npy', UploadId, MultipartUpload: { Parts: etags } }));
    const got = await client.send(new GetObjectCommand({ Bucket: 'arrays', Key: 'x.npy' }));
    const path = join(dir, 's3.npy');
    writeFileSync(path, await got.Body.transformToByteArray());
    assert.is(python(`a = np.load(${JSON.stringify(path)}); print(a.shape, bool((a.ravel() == np.arange(a.size) % 65521).all()))`).trim(), '(6144, 1024) True');
    // npyts reads it back by range from a presigned URL: rows 5000–5002, in two requests.
    const url = await getSignedUrl(client, new GetObjectCommand({ Bucket: 'arrays', Key: 'x.npy' }), { expiresIn: 600 });
    const h = await openNpy(url, { expect: '<f4' });
    const rows = await h.read([5000, 0], [3, 1024]);
    assert.equal(
      Array.from(rows.data),
      Array.from({ length: 3 * 1024 }, (_, i) => (5000 * 1024 + i) % 65521),
    );
    assert.is(h.stats.requests, 2);
  } finally {
    stop();
  }
});

test('Fortran order, a record dtype and rows that do not divide evenly, each uploaded to moto as parts sent at once: numpy loads every object exactly', async () => {
  const { client, stop } = await startMoto();
  try {
    await client.send(new CreateBucketCommand({ Bucket: 'arrays' }));
    const rec = [
      ['x', '<f8'],
      ['n', '<i2', [2]],
    ];
    const cases = [
      {
        key: 'f.npy',
        dtype: '>i8',
        shape: [700, 2048],
        order: 'F',
        value: ([r, c]) => r * 4096 - c,
        verify: "a.dtype.str, a.flags['F_CONTIGUOUS'], bool((a == np.arange(700)[:, None] * 4096 - np.arange(2048)).all())",
        expected: '>i8 True True',
      },
      {
        key: 'rec.npy',
        dtype: rec,
        shape: [1_000_003],
        value: ([r]) => ({ x: r / 4, n: [r % 30000, -(r % 30000)] }),
        verify:
          "a.shape, bool((a['x'] == np.arange(1_000_003) / 4).all() and (a['n'][:, 0] == np.arange(1_000_003) % 30000).all() and (a['n'][:, 1] == -a['n'][:, 0]).all())",
        expected: '(1000003,) True',
      },
    ];
    for (const c of cases) {
      const plan = planParts({ dtype: c.dtype, shape: c.shape, order: c.order ?? 'C', parts: 2 });
      assert.is(plan.parts.length, 2);
      const axis = c.order === 'F' ? c.shape.length - 1 : 0;
      if (c.dtype === rec) assert.not.equal(plan.parts[0].count[axis], plan.parts[1].count[axis], 'the rows divide evenly');
      const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: 'arrays', Key: c.key }));
      const etags = await Promise.all(
        plan.parts.map(async (p) => {
          const body = encodePart(plan, p.number, regionOf(c.dtype, p, c.value));
          const { ETag } = await client.send(new UploadPartCommand({ Bucket: 'arrays', Key: c.key, UploadId, PartNumber: p.number, Body: body }));
          return { ETag, PartNumber: p.number };
        }),
      );
      await client.send(new CompleteMultipartUploadCommand({ Bucket: 'arrays', Key: c.key, UploadId, MultipartUpload: { Parts: etags } }));
      const got = await client.send(new GetObjectCommand({ Bucket: 'arrays', Key: c.key }));
      const path = join(dir, `s3-${c.key}`);
      writeFileSync(path, await got.Body.transformToByteArray());
      assert.is(python(`a = np.load(${JSON.stringify(path)}); print(${c.verify})`).trim(), c.expected, c.key);
    }
  } finally {
    stop();
  }
});

test('planAppendParts: the old data is copied by the store but for what part 1 needs; new rows in whole rows; limits checked first', () => {
  const header = readHeader(encodeNpyHeaderOnly('<f4', [6144, 1024]));
  const plan = planAppendParts(header, { rows: 3000 });
  const copies = plan.parts.filter((p) => p.kind === 'copy');
  const oldBytes = 6144 * 4096;
  assert.is(
    copies.reduce((n, p) => n + p.length, 0),
    oldBytes - plan.parts[0].old.length,
  );
  assert.ok(plan.parts[0].old.length < 5 << 20, 'only what part 1 needs is read back');
  assert.equal(plan.shape, [9144, 1024]);
  assert.is(plan.size, plan.headerBytes + 9144 * 4096);
  for (const p of plan.parts.slice(0, -1)) assert.ok(p.length >= 5 << 20, `part ${p.number}`);
  // Too little old data to copy: all of it is read back, and part 1 takes new rows to reach 5 MiB.
  const small = planAppendParts(readHeader(encodeNpyHeaderOnly('<f4', [10, 1024])), { rows: 3000 });
  assert.equal(
    small.parts.map((p) => p.kind),
    ['upload', 'upload', 'upload'],
  );
  assert.is(small.parts[0].old.length, 10 * 4096);
  assert.ok(small.parts[0].count[0] > 0);
  const refusal = (f) => {
    try {
      f();
    } catch (e) {
      return e instanceof NpyError && e.code;
    }
    return null;
  };
  assert.is(
    refusal(() => planAppendParts(header, { rows: 3000, maxParts: 2 })),
    'BAD_OPTION',
  );
  // A count of parts far past the limit is refused at once, before a part is made (timed loosely: a
  // plan of a trillion one-byte parts would not end).
  const t = performance.now();
  assert.is(
    refusal(() => planAppendParts(readHeader(encodeNpyHeaderOnly('|u1', [10, 1])), { rows: 2 ** 40, partSize: 1 })),
    'BAD_OPTION',
  );
  assert.ok(performance.now() - t < 5000, 'refused without planning every part');
  assert.is(
    refusal(() => planAppendParts(readHeader(encodeNpyHeaderOnly('|O', [3])), { rows: 1 })),
    'BAD_OPTION',
  );
  assert.is(
    refusal(() => planAppendParts(header, { rows: 1, objectSize: 1000 })),
    'DATA_TRUNCATED',
  );
  assert.is(
    refusal(() => encodeAppendPart(plan, 2, {})),
    'BAD_OPTION',
  ); // a copy part
  assert.is(
    refusal(() => encodeAppendPart(plan, 1, { old: new Uint8Array(3) })),
    'SHAPE_MISMATCH',
  );
});

/** The first bytes of a .npy of `descr` and `shape`: its header, made by numpy. */
function encodeNpyHeaderOnly(descr, shape) {
  const path = join(dir, `header-${descr.replace(/\W/g, '')}-${shape.join('x')}.npy`);
  python(`import io
buf = io.BytesIO()
np.lib.format.write_array_header_1_0(buf, {'descr': ${JSON.stringify(descr)}, 'fortran_order': False, 'shape': (${shape.join(', ')},)})
open(${JSON.stringify(path)}, 'wb').write(buf.getvalue())`);
  return new Uint8Array(readFileSync(path));
}

test('an append to an object in S3 (moto_server) by UploadPartCopy: numpy loads the old rows and the new, with the header np.save writes (C and Fortran order)', async () => {
  const { client, stop } = await startMoto();
  try {
    await client.send(new CreateBucketCommand({ Bucket: 'arrays' }));
    for (const [order, oldShape, rows] of [
      ['C', [6144, 1024], 3000],
      ['F', [1024, 6144], 3000],
      ['C', [10, 1024], 70],
    ]) {
      const key = `grow-${order}-${oldShape[0]}.npy`;
      const local = join(dir, key);
      const expected = join(dir, `expected-${key}`);
      const gotPath = join(dir, `got-${key}`);
      const axis = order === 'F' ? 1 : 0;
      const newShape = [...oldShape];
      newShape[axis] += rows;
      // The old object, made by numpy: values are their index in the final array's memory order.
      python(`shape = ${JSON.stringify(newShape)}
a = (np.arange(np.prod(shape)) % 65521).astype('<f4').reshape(shape, order=${JSON.stringify(order)})
np.save(${JSON.stringify(local)}, a[:${oldShape[0]}] if ${axis} == 0 else a[:, :${oldShape[1]}])
np.save(${JSON.stringify(`${expected}`)}, a)`);
      await client.send(new PutObjectCommand({ Bucket: 'arrays', Key: key, Body: readFileSync(local) }));
      // The old header by range, then the plan.
      const head = await client.send(new GetObjectCommand({ Bucket: 'arrays', Key: key, Range: 'bytes=0-4095' }));
      const header = readHeader(await head.Body.transformToByteArray());
      const plan = planAppendParts(header, { rows, objectSize: readFileSync(local).length });
      const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: 'arrays', Key: key }));
      const rangeOf = (old) => `bytes=${old.offset}-${old.offset + old.length - 1}`;
      const done = await Promise.all(
        plan.parts.map(async (p) => {
          if (p.kind === 'copy') {
            const { CopyPartResult } = await client.send(
              new UploadPartCopyCommand({
                Bucket: 'arrays',
                Key: key,
                UploadId,
                PartNumber: p.number,
                CopySource: `arrays/${key}`,
                CopySourceRange: rangeOf(p.old),
              }),
            );
            return { ETag: CopyPartResult.ETag, PartNumber: p.number };
          }
          const old = p.old
            ? await (await client.send(new GetObjectCommand({ Bucket: 'arrays', Key: key, Range: rangeOf(p.old) }))).Body.transformToByteArray()
            : undefined;
          let newRows;
          if (p.count) {
            newRows = createArray('<f4', p.count, { order });
            // Value of new row/column r (of the appended ones) at position i: its index in the final array.
            const [n0, n1] = p.count;
            for (let i = 0; i < n0; i++)
              for (let j = 0; j < n1; j++) {
                const gi = axis === 0 ? oldShape[0] + p.start[0] + i : i;
                const gj = axis === 1 ? oldShape[1] + p.start[1] + j : j;
                newRows.set([i, j], (order === 'C' ? gi * newShape[1] + gj : gj * newShape[0] + gi) % 65521);
              }
          }
          const Body = encodeAppendPart(plan, p.number, { ...(old ? { old } : {}), ...(newRows ? { rows: newRows } : {}) });
          const { ETag } = await client.send(new UploadPartCommand({ Bucket: 'arrays', Key: key, UploadId, PartNumber: p.number, Body }));
          return { ETag, PartNumber: p.number };
        }),
      );
      await client.send(new CompleteMultipartUploadCommand({ Bucket: 'arrays', Key: key, UploadId, MultipartUpload: { Parts: done } }));
      const got = await client.send(new GetObjectCommand({ Bucket: 'arrays', Key: key }));
      writeFileSync(`${gotPath}`, await got.Body.transformToByteArray());
      assert.is(
        python(`got = open(${JSON.stringify(`${gotPath}`)}, 'rb').read(); want = open(${JSON.stringify(`${expected}`)}, 'rb').read()
a = np.load(${JSON.stringify(`${gotPath}`)}); b = np.load(${JSON.stringify(`${expected}`)})
print(a.shape == b.shape, a.flags.f_contiguous == b.flags.f_contiguous, bool((a == b).all()), got == want)`).trim(),
        'True True True True',
        key,
      );
      if (oldShape[axis] > 100)
        assert.ok(
          plan.parts.some((p) => p.kind === 'copy'),
          key,
        );
    }
  } finally {
    stop();
  }
});

test("Python workers (the larger-than-memory guide's numpy + boto3 recipe, run from the guide itself) upload four parts at once to moto; Node completes; numpy loads the object", async () => {
  const recipe = pythonRecipe('worker');
  assert.ok(recipe, 'the guide has the recipe');
  const worker = join(dir, 'worker.py');
  writeFileSync(worker, recipe);
  const { client, endpoint, stop } = await startMoto();
  try {
    await client.send(new CreateBucketCommand({ Bucket: 'arrays' }));
    const shape = [6 * 1024, 1024];
    const plan = planParts({ dtype: '<f4', shape, parts: 4 });
    const planPath = join(dir, 'plan.json');
    writeFileSync(planPath, JSON.stringify(plan));
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: 'arrays', Key: 'py.npy' }));
    const env = { ...process.env, AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey, AWS_DEFAULT_REGION: REGION };
    const parts = await Promise.all(
      plan.parts.map(
        (p) =>
          new Promise((resolve, reject) => {
            execFile('python3', [worker, planPath, String(p.number), endpoint, 'arrays', 'py.npy', UploadId], { env }, (e, stdout, stderr) =>
              e ? reject(new Error(`worker ${p.number}: ${stderr}`)) : resolve(JSON.parse(stdout)),
            );
          }),
      ),
    );
    await client.send(new CompleteMultipartUploadCommand({ Bucket: 'arrays', Key: 'py.npy', UploadId, MultipartUpload: { Parts: parts } }));
    const got = await client.send(new GetObjectCommand({ Bucket: 'arrays', Key: 'py.npy' }));
    const path = join(dir, 'py.npy');
    writeFileSync(path, await got.Body.transformToByteArray());
    assert.is(
      python(`a = np.load(${JSON.stringify(path)}); print(a.shape, a.dtype, bool((a.ravel() == np.arange(a.size) % 65521).all()))`).trim(),
      '(6144, 1024) float32 True',
    );
  } finally {
    stop();
  }
});

/** The guide's Python block of this role (worker, coordinator). */
const pythonRecipe = (role) =>
  blocksOf('docs/larger-than-memory.md').find((b) => b.attrs['run-by'] === 'test/io/parts.test.mjs' && b.lang === 'python' && b.attrs.role === role)?.code;

test("the guide's Python recipe as it is: a boto3 coordinator runs eight Python workers at once into moto and completes; numpy loads the object; with no workers, it aborts and leaves nothing", async () => {
  const [coordinator, worker] = [pythonRecipe('coordinator'), pythonRecipe('worker')];
  assert.ok(coordinator && worker, 'the guide has both blocks');
  const recipeDir = join(dir, 'python-recipe');
  const alone = join(recipeDir, 'alone');
  mkdirSync(alone, { recursive: true });
  writeFileSync(join(recipeDir, 'coordinator.py'), coordinator);
  writeFileSync(join(recipeDir, 'worker.py'), worker);
  writeFileSync(join(alone, 'coordinator.py'), coordinator);
  const planPath = join(recipeDir, 'plan.json');
  writeFileSync(planPath, JSON.stringify(planParts({ dtype: '<f4', shape: [12288, 1024], parts: 8 })));
  const { client, endpoint, stop } = await startMoto();
  const env = { ...process.env, AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey, AWS_DEFAULT_REGION: REGION };
  const coordinate = (script, key) =>
    new Promise((resolve) => execFile('python3', [script, planPath, endpoint, 'arrays', key], { env }, (e, stdout, stderr) => resolve({ e, stdout, stderr })));
  try {
    await client.send(new CreateBucketCommand({ Bucket: 'arrays' }));
    const done = await coordinate(join(recipeDir, 'coordinator.py'), 'eight.npy');
    assert.not.ok(done.e, done.stderr);
    assert.is(done.stdout.trim(), `eight.npy: 8 parts, ${128 + 12288 * 4096} bytes`);
    const got = await client.send(new GetObjectCommand({ Bucket: 'arrays', Key: 'eight.npy' }));
    const path = join(dir, 'python-eight.npy');
    writeFileSync(path, await got.Body.transformToByteArray());
    assert.is(
      python(`a = np.load(${JSON.stringify(path)}); print(a.shape, a.dtype, bool((a.ravel() == np.arange(a.size) % 65521).all()))`).trim(),
      '(12288, 1024) float32 True',
    );
    const failing = await coordinate(join(alone, 'coordinator.py'), 'broken.npy');
    assert.ok(failing.e, 'the coordinator reported no failure');
    assert.match(failing.stderr, /the workers of parts \[1, 2, 3, 4, 5, 6, 7, 8\] failed/);
    const { Uploads = [] } = await client.send(new ListMultipartUploadsCommand({ Bucket: 'arrays' }));
    assert.equal(
      Uploads.map((u) => u.Key),
      [],
    );
    const listed = await client.send(new ListObjectsV2Command({ Bucket: 'arrays' }));
    assert.equal(
      (listed.Contents ?? []).map((o) => o.Key),
      ['eight.npy'],
    );
  } finally {
    stop();
  }
});

test("the guide's Node recipe as it is: a coordinator with presigned part URLs and eight worker processes write one .npy into moto; numpy loads it", async () => {
  const blocks = blocksOf('docs/larger-than-memory.md').filter((b) => b.attrs['run-by'] === 'test/io/parts.test.mjs' && b.lang === 'js');
  const role = (r) => blocks.find((b) => b.attrs.role === r)?.code;
  assert.ok(role('coordinator') && role('worker'), 'the guide has both blocks');
  // Beside the repository's node_modules, so that the recipe's imports resolve as in a user's project.
  const recipeDir = join(root, 'node_modules', '.cache', 'npyts-parts-recipe');
  mkdirSync(recipeDir, { recursive: true });
  writeFileSync(join(recipeDir, 'coordinator.mjs'), role('coordinator'));
  writeFileSync(join(recipeDir, 'worker.mjs'), role('worker'));
  const { client, endpoint, stop } = await startMoto();
  try {
    await client.send(new CreateBucketCommand({ Bucket: 'arrays' }));
    const env = {
      ...process.env,
      AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
      AWS_REGION: REGION,
      NODE_NO_WARNINGS: '1',
    };
    const printed = await new Promise((resolve, reject) =>
      execFile(process.execPath, [join(recipeDir, 'coordinator.mjs'), endpoint, 'arrays', 'eight.npy', '12288', '8'], { env }, (e, stdout, stderr) =>
        e ? reject(new Error(`the coordinator failed: ${stderr}`)) : resolve(stdout),
      ),
    );
    assert.is(printed.trim(), `eight.npy: 8 parts, ${128 + 12288 * 4096} bytes`);
    const got = await client.send(new GetObjectCommand({ Bucket: 'arrays', Key: 'eight.npy' }));
    const path = join(dir, 'eight.npy');
    writeFileSync(path, await got.Body.transformToByteArray());
    assert.is(
      python(`a = np.load(${JSON.stringify(path)}); print(a.shape, a.dtype, bool((a.ravel() == np.arange(a.size) % 65521).all()))`).trim(),
      '(12288, 1024) float32 True',
    );
    // Workers that fail (here: the coordinator alone, with no worker.mjs beside it): the coordinator
    // aborts the upload, and neither an object nor an upload is left.
    const alone = join(recipeDir, 'alone');
    mkdirSync(alone, { recursive: true });
    writeFileSync(join(alone, 'coordinator.mjs'), role('coordinator'));
    const failing = await new Promise((resolve) =>
      execFile(process.execPath, [join(alone, 'coordinator.mjs'), endpoint, 'arrays', 'broken.npy', '12288', '8'], { env }, (e) => resolve(e)),
    );
    assert.ok(failing, 'the coordinator reported no failure');
    const { Uploads = [] } = await client.send(new ListMultipartUploadsCommand({ Bucket: 'arrays' }));
    assert.equal(
      Uploads.map((u) => u.Key),
      [],
    );
    const listed = await client.send(new ListObjectsV2Command({ Bucket: 'arrays' }));
    assert.equal(
      listed.Contents.map((o) => o.Key),
      ['eight.npy'],
    );
  } finally {
    stop();
  }
});

test.run();
