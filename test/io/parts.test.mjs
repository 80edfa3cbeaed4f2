// Arrays written as the parts of one multipart upload (issue 44, first part): planParts splits a
// .npy into parts within an object store's limits (refusing layouts that cannot meet them before
// anything is uploaded), encodePart makes each part from its region alone; numpy loads the joined
// parts exactly (C and Fortran order, a record dtype, rows that do not divide evenly), and so it
// does an object uploaded to moto_server (S3) part by part with the AWS SDK.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CompleteMultipartUploadCommand, CreateBucketCommand, CreateMultipartUploadCommand, GetObjectCommand, UploadPartCommand } from '@aws-sdk/client-s3';
import { NpyError, arrayFromValues, createArray, encodePart, planParts } from '@npyts/core';
import { python, scratch } from '../helpers/numpy.mjs';
import { startMoto } from '../helpers/s3.mjs';

const dir = scratch('npyts-parts-');

/** The region of `full` (C-order values by index) that a part holds, as an array of its own. */
function regionOf(dtype, part, valueAt) {
  const a = createArray(dtype, part.count);
  const n = part.count.reduce((x, y) => x * y, 1);
  const strides = part.count.map((_, k) => part.count.slice(k + 1).reduce((x, y) => x * y, 1));
  for (let i = 0; i < n; i++) {
    const index = part.count.map((c, k) => (Math.floor(i / strides[k]) % c) + part.start[k]);
    a.set(
      part.count.map((c, k) => Math.floor(i / strides[k]) % c),
      valueAt(index),
    );
  }
  return a;
}

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
  } finally {
    stop();
  }
});

test.run();
