// Members larger than one buffer (> 4 GiB), written by numpy from zeros: whole reads are refused with
// a pointer to the streaming path, which delivers every byte with size and CRC-32 checked.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { readHeader, NpyError } from '@npyts/core';
import { openNpzSync, streamNpzMember } from '@npyts/core/node';
import { python, scratch } from '../helpers/numpy.mjs';

const dir = scratch('npyts-large-');
const N = 2 ** 32 + 4096;
const marks = [
  [0, 1],
  [2 ** 32 + 5, 7],
  [N - 1, 9],
];
python(`
a = np.zeros(${N}, np.uint8)
for pos, v in ${JSON.stringify(marks)}:
    a[pos] = v
np.savez(${JSON.stringify(join(dir, 'stored.npz'))}, big=a, small=np.arange(3))
np.savez_compressed(${JSON.stringify(join(dir, 'deflated.npz'))}, big=a, small=np.arange(3))
`);

for (const kind of ['stored', 'deflated']) {
  test(`a ${kind} member over 4 GiB streams whole and checked; get() says what to use instead`, async () => {
    const archive = openNpzSync(join(dir, `${kind}.npz`));
    try {
      assert.equal(archive.getSync('small').toList(), [0n, 1n, 2n]);
      assert.throws(
        () => archive.getSync('big'),
        (e) => e instanceof NpyError && e.code === 'TOO_LARGE' && /streamNpzMember/.test(e.message),
      );
      let total = 0;
      let dataOffset = -1;
      const seen = {};
      let nonzero = 0;
      let zeros = new Uint8Array(0);
      for await (const chunk of streamNpzMember(archive, 'big')) {
        if (dataOffset < 0) {
          const h = readHeader(chunk);
          assert.equal(h.shape, [N]);
          dataOffset = h.dataOffset;
        }
        // Chunks of zeros (nearly all of 4 GiB) are skipped by one memcmp; the others are looked at byte by byte.
        if (zeros.length < chunk.length) zeros = new Uint8Array(chunk.length);
        if (Buffer.compare(chunk, zeros.subarray(0, chunk.length)) !== 0) {
          for (let i = 0; i < chunk.length; i++)
            if (chunk[i] !== 0 && total + i >= dataOffset) {
              nonzero++;
              seen[total + i - dataOffset] = chunk[i];
            }
        }
        total += chunk.length;
      }
      assert.is(total, dataOffset + N);
      assert.is(nonzero, marks.length);
      assert.equal(seen, Object.fromEntries(marks.map(([p, v]) => [String(p), v])));
    } finally {
      archive.close();
    }
  });
}

test.run();
