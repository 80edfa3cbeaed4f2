// `node bench/parts.mjs [--quick]`: a .npy written into object storage (moto_server, the S3 emulator
// the tests use, on 127.0.0.1) as one multipart upload of 8 parts sent at once (planParts, each part
// made by encodePart from its region alone), against the same bytes sent as one PutObject. Rounds
// alternate which goes first; prints JSON: the medians, the ratio of the rounds' medians and its spread.
import { CompleteMultipartUploadCommand, CreateBucketCommand, CreateMultipartUploadCommand, PutObjectCommand, UploadPartCommand } from '@aws-sdk/client-s3';
import { createArray, encodeNpy, encodePart, planParts } from '@npyts/core';
import { startMoto } from '../test/helpers/s3.mjs';
import { middleOf } from './timing.mjs';

const quick = process.argv.includes('--quick');
const rows = quick ? 16 * 1024 : 64 * 1024; // × 1024 float32: 64 MiB, or 256 MiB
const shape = [rows, 1024];
const array = createArray('<f4', shape);
for (let i = 0; i < array.data.length; i += 97) array.data[i] = i;
const { client, stop } = await startMoto();
const Bucket = 'bench';
const time = async (fn) => {
  const t = performance.now();
  await fn();
  return (performance.now() - t) / 1000;
};
const whole = () => client.send(new PutObjectCommand({ Bucket, Key: 'whole.npy', Body: encodeNpy(array) }));
const inParts = async () => {
  const plan = planParts({ dtype: '<f4', shape, parts: 8 });
  const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket, Key: 'parts.npy' }));
  const Parts = await Promise.all(
    plan.parts.map(async (p) => {
      // Each worker holds only its region: here a view of the rows it was given.
      const first = p.start[0] * 1024;
      const region = { data: array.data.subarray(first, first + p.count[0] * 1024), shape: p.count, dtype: '<f4' };
      const { ETag } = await client.send(
        new UploadPartCommand({ Bucket, Key: 'parts.npy', UploadId, PartNumber: p.number, Body: encodePart(plan, p.number, region) }),
      );
      return { ETag, PartNumber: p.number };
    }),
  );
  await client.send(new CompleteMultipartUploadCommand({ Bucket, Key: 'parts.npy', UploadId, MultipartUpload: { Parts } }));
};
try {
  await client.send(new CreateBucketCommand({ Bucket }));
  await whole();
  await inParts(); // one uncounted round
  const times = { whole: [], parts: [] };
  for (let r = 0; r < (quick ? 3 : 5); r++) {
    for (const who of r % 2 ? ['parts', 'whole'] : ['whole', 'parts']) times[who].push(await time(who === 'whole' ? whole : inParts));
  }
  const ratios = times.parts.map((t, i) => t / times.whole[i]).sort((a, b) => a - b);
  const bytes = encodeNpy(createArray('<f4', [0, 1024])).length + rows * 4096;
  process.stdout.write(
    JSON.stringify({
      bytes,
      parts: 8,
      whole_seconds: middleOf(times.whole),
      parts_seconds: middleOf(times.parts),
      ratio: middleOf(ratios),
      spread: [ratios[0], ratios.at(-1)],
    }),
  );
} finally {
  stop();
}
