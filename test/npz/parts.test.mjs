// A .npz written as the parts of one multipart upload (issue 44): planNpzParts splits an archive of
// stored members into parts within the store's limits (large members in parts of their own, small
// ones sharing a part, the directory in the last); each worker encodes its part from its regions,
// reports the CRC-32 of its pieces, and writes the local headers once the CRCs are combined
// (crc32Combine, zlib's crc32_combine). numpy loads the joined parts exactly, `unzip -t` agrees, and
// an archive uploaded to moto_server (S3) by parts made at once loads in numpy.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { CompleteMultipartUploadCommand, CreateBucketCommand, CreateMultipartUploadCommand, GetObjectCommand, UploadPartCommand } from '@aws-sdk/client-s3';
import { NpyError, combineNpzChecksums, createArray, encodeNpzPart, openNpz as openNpzAnywhere, planNpzParts } from '@npyts/core';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { openNpz } from '@npyts/core/node';
import { crc32, crc32Combine } from '@npyts/core/plumbing';
import { python, scratch } from '../helpers/numpy.mjs';
import { regionOf } from '../helpers/regions.mjs';
import { startMoto } from '../helpers/s3.mjs';

const dir = scratch('npyts-npz-parts-');

const MEMBERS = [
  { key: 'big', dtype: '<f4', shape: [3001, 37], value: ([r, c]) => r * 1000 + c, numpy: 'np.arange(3001)[:, None] * 1000 + np.arange(37)' },
  { key: 'fortran', dtype: '>i8', shape: [50, 900], order: 'F', value: ([r, c]) => r - c, numpy: 'np.arange(50)[:, None] - np.arange(900)' },
  { key: 'small', dtype: '<u2', shape: [7], value: ([i]) => i * 3, numpy: 'np.arange(7) * 3' },
  { key: 'scalar', dtype: '<f8', shape: [], value: () => 2.5, numpy: 'np.float64(2.5)' },
  { key: 'empty', dtype: '<i4', shape: [0, 4], value: () => 0, numpy: 'np.zeros((0, 4))' },
  { key: 'dir/ünï', dtype: '<i2', shape: [1500], value: ([i]) => -i, numpy: '-np.arange(1500)' },
];

/** Every part encoded (phase 1), the CRCs combined, every part's bytes (phase 2), joined. */
function writeByParts(plan, members = MEMBERS) {
  const byKey = new Map(members.map((m) => [m.key, m]));
  const encoded = plan.parts.map((p) =>
    encodeNpzPart(plan, p.number, Object.fromEntries(p.pieces.map((q) => [q.key, regionOf(byKey.get(q.key).dtype, q, byKey.get(q.key).value)]))),
  );
  // Reports arrive in any order.
  const crcs = combineNpzChecksums(plan, encoded.flatMap((e) => e.checksums).reverse());
  const out = Buffer.concat(encoded.map((e) => e.bytes(crcs)));
  assert.is(out.length, plan.size);
  return out;
}

test('crc32Combine gives the CRC of the joined bytes, at every split and for long runs of zeros', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 300 }), fc.uint8Array({ maxLength: 300 }), (a, b) => {
      const joined = new Uint8Array([...a, ...b]);
      return crc32Combine(crc32(a), crc32(b), b.length) === crc32(joined);
    }),
    { seed: 20261127, numRuns: 300 },
  );
  // Lengths past 2^32 are combined by their bits, not by a loop: zlib agrees.
  const zeros = new Uint8Array(1 << 20);
  const viaZlib = python('import zlib; a = zlib.crc32(b"npyts"); z = zlib.crc32(bytes(1 << 20)); print(zlib.crc32(bytes(1 << 20), a), a, z)')
    .trim()
    .split(' ')
    .map(Number);
  assert.is(crc32Combine(viaZlib[1], crc32(zeros), zeros.length), viaZlib[0]);
  assert.is(crc32(zeros), viaZlib[2]);
  assert.throws(() => crc32Combine(0, 0, -1), RangeError);
});

test('the joined parts are the .npz numpy loads: large members in parts of their own, small ones together, the directory last; unzip -t agrees', async () => {
  const plan = planNpzParts({ members: MEMBERS, partSize: 40_000, minPartBytes: 40_000 });
  assert.ok(plan.parts.length >= 5, `${plan.parts.length} parts`);
  // Every part but the last holds at least the smallest part; the last ends with the directory.
  for (const p of plan.parts.slice(0, -1)) assert.ok(p.length >= 40_000 && !p.directory, `part ${p.number}: ${p.length} bytes`);
  assert.ok(plan.parts.at(-1).directory);
  // The big member is split; the small ones share a part.
  assert.ok(plan.parts.filter((p) => p.pieces.some((q) => q.key === 'big')).length > 2);
  assert.ok(
    plan.parts.some((p) => p.pieces.length > 2),
    JSON.stringify(plan.parts.map((p) => p.pieces.map((q) => q.key))),
  );
  // The plan is JSON: a worker that gets it as text encodes the same part.
  const again = JSON.parse(JSON.stringify(plan));
  const path = join(dir, 'joined.npz');
  writeFileSync(path, writeByParts(again));
  const checks = MEMBERS.map(
    (m) =>
      `a = z[${JSON.stringify(m.key)}]; ok.append(a.dtype.str == ${JSON.stringify(m.dtype)} and a.shape == ${JSON.stringify(m.shape).replace('[]', '()').replace('[', '(').replace(']', ',)')} and bool((a == (${m.numpy})).all()))`,
  ).join('\n');
  assert.is(
    python(
      `z = np.load(${JSON.stringify(path)}); ok = []\n${checks}\nprint(ok, sorted(z.files) == sorted(${JSON.stringify(MEMBERS.map((m) => m.key))}))`,
    ).trim(),
    `[${MEMBERS.map(() => 'True').join(', ')}] True`,
  );
  execFileSync('unzip', ['-tq', path]);
  // npyts reads it back by range, CRCs checked.
  const z = await openNpz(path);
  assert.equal(Array.from((await z.get('small')).data), [0, 3, 6, 9, 12, 15, 18]);
  await z.close();
});

test('refused before any upload: parts below the smallest, too many parts; a wrong region, a missing member, missing or doubled checksums', () => {
  const refuses = (f, pattern) => {
    try {
      f();
      assert.unreachable();
    } catch (e) {
      assert.instance(e, NpyError);
      assert.match(e.message, pattern);
    }
  };
  refuses(() => planNpzParts({ members: MEMBERS, partSize: 1 << 20 }), /partSize must be at least the store's smallest part \(5242880 bytes\)/);
  refuses(() => planNpzParts({ members: MEMBERS, minPartBytes: 4096, maxParts: 3 }), /parts; the store takes at most 3: ask for larger parts/);
  refuses(() => planNpzParts({ members: [MEMBERS[0], MEMBERS[0]] }), /named twice/);
  refuses(() => planNpzParts({ members: [{ key: 'o', dtype: '|O', shape: [3] }] }), /object array/);
  // A member's first part holds its local header and .npy header too: no part passes the store's largest.
  for (const members of [
    [{ key: 'a', dtype: '<f4', shape: [1000] }],
    [
      { key: 'a', dtype: '<f4', shape: [300] },
      { key: 'b', dtype: '<i8', shape: [200, 1] },
    ],
  ]) {
    const capped = planNpzParts({ members, partSize: 1000, minPartBytes: 100, maxPartBytes: 1000 });
    for (const p of capped.parts) assert.ok(p.length <= 1000, `part ${p.number} is ${p.length} bytes`);
    assert.is(
      capped.parts.reduce((n, p) => n + p.length, 0),
      capped.size,
    );
  }
  const plan = planNpzParts({ members: MEMBERS, partSize: 40_000, minPartBytes: 40_000 });
  const first = plan.parts[0];
  refuses(() => encodeNpzPart(plan, first.number, {}), /part 1 holds rows of 'big': pass them as \{ 'big': array \}/);
  refuses(() => encodeNpzPart(plan, first.number, { big: createArray('<f4', [3, 37]) }), /holds the region of shape/);
  refuses(() => encodeNpzPart(plan, first.number, { small: createArray('<u2', [7]) }), /part 1 holds 'big', not 'small'/);
  const encoded = plan.parts.map((p) =>
    encodeNpzPart(plan, p.number, Object.fromEntries(p.pieces.map((q) => [q.key, createArray(MEMBERS.find((m) => m.key === q.key).dtype, q.count)]))),
  );
  const all = encoded.flatMap((e) => e.checksums);
  refuses(() => combineNpzChecksums(plan, all.slice(1)), /the checksums of member 'big' miss its bytes 0 to/);
  refuses(() => combineNpzChecksums(plan, [...all, all[0]]), /cover its bytes from 0 twice/);
  refuses(() => combineNpzChecksums(plan, [...all, { ...all[0], key: 'other' }]), /names member 'other', which the plan does not have/);
  refuses(() => encoded[0].bytes({}), /needs the CRC-32 of member 'big'/);
  // A report that is not what a worker computes (a CRC as text, a negative offset) is refused, not combined.
  refuses(() => combineNpzChecksums(plan, [{ ...all[0], crc: 'abc' }, ...all.slice(1)]), /a checksum of member 'big' is not one encodeNpzPart reports/);
  refuses(() => combineNpzChecksums(plan, [{ ...all[0], at: -1 }, ...all.slice(1)]), /is not one encodeNpzPart reports/);
  // Planning follows the parts the store allows, not the sizes asked for: a 128 TiB member, or
  // three members of 9 000 parts each, are refused before their parts are made.
  refuses(
    () => planNpzParts({ members: [{ key: 'huge', dtype: '<f4', shape: [2 ** 45] }], maxObjectBytes: 2 ** 50 }),
    /the store takes at most 10000: ask for larger parts/,
  );
  const nineThousand = { dtype: '<f4', shape: [9000 * 1310720] };
  refuses(() => planNpzParts({ members: ['a', 'b', 'c'].map((key) => ({ key, ...nineThousand })) }), /more than 10000 parts; the store takes at most 10000/);
});

test("a part of one member's rows alone is a view of the array given (no copy); one with headers is assembled", () => {
  const plan = planNpzParts({ members: MEMBERS, partSize: 40_000, minPartBytes: 40_000 });
  const byKey = new Map(MEMBERS.map((m) => [m.key, m]));
  const regions = plan.parts.map((p) => Object.fromEntries(p.pieces.map((q) => [q.key, regionOf(byKey.get(q.key).dtype, q, byKey.get(q.key).value)])));
  const encoded = plan.parts.map((p, i) => encodeNpzPart(plan, p.number, regions[i]));
  const crcs = combineNpzChecksums(
    plan,
    encoded.flatMap((e) => e.checksums),
  );
  const middle = plan.parts.findIndex((p) => p.pieces.length === 1 && p.pieces[0].key === 'big' && p.pieces[0].at > 0 && !p.directory);
  assert.ok(middle > 0, 'a part in the middle of big');
  assert.is(encoded[middle].bytes(crcs).buffer, regions[middle].big.data.buffer);
  assert.is.not(encoded[0].bytes(crcs).buffer, regions[0].big.data.buffer);
});

test('an archive uploaded to S3 (moto_server) as parts encoded at once: numpy loads every member', async () => {
  const { client, stop } = await startMoto();
  try {
    await client.send(new CreateBucketCommand({ Bucket: 'arrays' }));
    // 12 MiB and 8 MiB members and two small ones: four or five parts of at least 5 MiB.
    const members = [
      { key: 'x', dtype: '<f4', shape: [3 * 1024, 1024], value: ([r, c]) => (r * 1024 + c) % 65521 },
      { key: 'labels', dtype: '<i8', shape: [5000], value: ([i]) => i * 7 },
      { key: 'y', dtype: '<f8', shape: [1024, 1024], order: 'F', value: ([r, c]) => r + c / 1024 },
      { key: 'note', dtype: '<U5', shape: [2], value: ([i]) => (i ? 'parts' : 'npz') },
    ];
    const plan = planNpzParts({ members });
    assert.ok(plan.parts.length >= 3, `${plan.parts.length} parts`);
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: 'arrays', Key: 'x.npz' }));
    // Each "worker" encodes its part and reports its checksums; the combined CRCs go back to each.
    const byKey = new Map(members.map((m) => [m.key, m]));
    const encoded = plan.parts.map((p) =>
      encodeNpzPart(plan, p.number, Object.fromEntries(p.pieces.map((q) => [q.key, regionOf(byKey.get(q.key).dtype, q, byKey.get(q.key).value)]))),
    );
    const crcs = combineNpzChecksums(
      plan,
      encoded.flatMap((e) => e.checksums),
    );
    const etags = await Promise.all(
      encoded.map(async (e) => {
        const { ETag } = await client.send(new UploadPartCommand({ Bucket: 'arrays', Key: 'x.npz', UploadId, PartNumber: e.number, Body: e.bytes(crcs) }));
        return { ETag, PartNumber: e.number };
      }),
    );
    await client.send(new CompleteMultipartUploadCommand({ Bucket: 'arrays', Key: 'x.npz', UploadId, MultipartUpload: { Parts: etags } }));
    const got = await client.send(new GetObjectCommand({ Bucket: 'arrays', Key: 'x.npz' }));
    const path = join(dir, 's3.npz');
    writeFileSync(path, await got.Body.transformToByteArray());
    assert.is(
      python(
        `z = np.load(${JSON.stringify(path)}); x, y = z['x'], z['y']; print(x.shape, bool((x.ravel() == np.arange(x.size) % 65521).all()), bool((z['labels'] == np.arange(5000) * 7).all()), y.flags['F_CONTIGUOUS'] and bool((y == np.arange(1024)[:, None] + np.arange(1024) / 1024).all()), z['note'].tolist())`,
      ).trim(),
      "(3072, 1024) True True True ['npz', 'parts']",
    );
    // npyts reads it back by range from a presigned URL: a region of a member split over parts, and a small member.
    const url = await getSignedUrl(client, new GetObjectCommand({ Bucket: 'arrays', Key: 'x.npz' }), { expiresIn: 600 });
    const z = await openNpzAnywhere(url);
    const x = await z.openMember('x', { expect: '<f4' });
    assert.equal(
      Array.from((await x.read([2000, 5], [2, 3])).data),
      [2000, 2001].flatMap((r) => [5, 6, 7].map((c) => (r * 1024 + c) % 65521)),
    );
    assert.equal(Array.from((await z.get('labels')).data.subarray(0, 3)), [0n, 7n, 14n]);
    assert.ok(z.source.stats.bytes < plan.size / 4, `${z.source.stats.bytes} bytes moved of ${plan.size}`);
    await z.close();
  } finally {
    stop();
  }
});

test.run();
