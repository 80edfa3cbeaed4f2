// Reading: every file numpy writes in the catalogue decodes to numpy's own values and header,
// from bytes, from disk and through the CLI; re-encoding gives numpy's bytes back.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeNpy, encodeNpy, readHeader, NdArray } from '@npyts/core';
import { npyDocument } from '@npyts/core/plumbing';
import { loadNpySync } from '@npyts/core/node';
import { numpy, runCli, scratch, spawnCli } from '../helpers/numpy.mjs';

const dir = scratch();
const catalogue = numpy('catalogue', dir);

test('the catalogue covers every dtype family', () => {
  const kinds = new Set(catalogue.map((c) => (typeof c.doc.descr === 'string' ? c.doc.descr.replace(/[<>|]/, '')[0] : 'record')));
  for (const k of ['b', 'i', 'u', 'f', 'c', 'S', 'U', 'V', 'M', 'm', 'record']) assert.ok(kinds.has(k), `missing ${k}`);
  assert.ok(catalogue.some((c) => c.doc.version[0] === 2));
  assert.ok(catalogue.some((c) => c.doc.version[0] === 3));
  assert.ok(catalogue.some((c) => c.doc.fortran_order));
});

for (const { name, file, doc } of catalogue) {
  test(`decodeNpy ${name} matches numpy`, () => {
    const bytes = readFileSync(file);
    const header = readHeader(bytes);
    const array = decodeNpy(bytes);
    assert.ok(array instanceof NdArray);
    assert.equal(npyDocument(header, array), doc);
  });
}

test('loadNpySync reads every catalogue file like decodeNpy', () => {
  for (const { file, doc } of catalogue) {
    const bytes = readFileSync(file);
    const array = loadNpySync(file);
    assert.equal(npyDocument(readHeader(bytes), array), doc, file);
  }
});

test('re-encoding gives numpy 2.x bytes back for every catalogue file', () => {
  for (const { file } of catalogue) {
    const bytes = readFileSync(file);
    const again = encodeNpy(decodeNpy(bytes));
    assert.ok(Buffer.from(again).equals(bytes), `${file} differs`);
  }
});

test("CLI show --json prints numpy's document for every catalogue file", async () => {
  for (const { file, doc } of catalogue) {
    const { code, stdout, stderr } = await runCli(['show', '--json', file]);
    assert.is(code, 0, stderr);
    assert.equal(JSON.parse(stdout), doc, file);
  }
});

test('CLI convert without options is byte-identical for every catalogue file', async () => {
  const out = join(dir, 'converted.npy');
  for (const { file } of catalogue) {
    const { code, stderr } = await runCli(['convert', file, out]);
    assert.is(code, 0, stderr);
    assert.ok(readFileSync(out).equals(readFileSync(file)), file);
  }
});

test('zero-copy: native aligned data is a view of the input; big-endian data is a native copy', () => {
  const le = readFileSync(catalogue.find((c) => c.name === 'f8_C').file);
  const a = decodeNpy(le);
  assert.ok(a.data.buffer === le.buffer, 'expected a view');
  assert.instance(a.data, Float64Array);
  const be = readFileSync(catalogue.find((c) => c.name === 'f8_be_C').file);
  const b = decodeNpy(be);
  assert.ok(b.data.buffer !== be.buffer, 'expected a copy');
  assert.is(b.dtype.str, '>f8');
  const copied = decodeNpy(le, { copy: true });
  assert.ok(copied.data.buffer !== le.buffer);
  // Unaligned input (data offset not a multiple of 8 in the buffer): a correct copy, not a crash.
  const shifted = new Uint8Array(le.length + 1);
  shifted.set(le, 1);
  const c = decodeNpy(shifted.subarray(1));
  assert.equal(Array.from(c.data, String), Array.from(a.data, String));
});

test('typed data per dtype family', () => {
  const kinds = {
    i8_C: BigInt64Array,
    u8_C: BigUint64Array,
    M8_ns_C: BigInt64Array,
    c16_C: Float64Array,
    f2_C: Uint16Array,
    U3: Uint32Array,
    S5: Uint8Array,
    b1_C: Uint8Array,
    f16_C: Uint8Array,
  };
  for (const [name, ctor] of Object.entries(kinds)) {
    const a = loadNpySync(catalogue.find((c) => c.name === name).file);
    assert.instance(a.data, ctor, name);
  }
});

test('the npyts executable prints the same document as the in-process CLI', () => {
  const { file, doc } = catalogue.find((c) => c.name === 'rec_nested');
  const r = spawnCli(['show', '--json', file]);
  assert.is(r.code, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout), doc);
});

test.run();
