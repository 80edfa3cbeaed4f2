// Writing GGUF against the real thing (gguf-py): for every type npyts writes, gguf-py's GGUFWriter
// writes the same tensors (quantized by gguf.quants.quantize) and metadata of every value type at
// test time, and npyts's file must be those bytes exactly; the file npyts saves is then read back by
// gguf-py's GGUFReader (metadata and dequantized tensors) and by npyts's own reader, equal.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GgufFile, bytesSource, encodeGguf, ggufParts, toFloat32 } from '@npyts/core';
import { openWeights, saveGguf, saveSafetensors } from '@npyts/core/node';
import { scratch } from '../helpers/numpy.mjs';
import { npyErrorOf, refusedWith } from '../helpers/refusal.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const helper = join(here, '..', 'helpers', 'gguf_write.py');
const dir = scratch('npyts-gguf-write-');
const fixture = JSON.parse(execFileSync('python3', ['-W', 'ignore', helper, 'make', dir], { encoding: 'utf8', maxBuffer: 1 << 26 }));

/** The fixture's tensors, in its order (a Map: names are written in the order given). */
const tensors = new Map(
  fixture.tensors.map((t) => {
    const bytes = readFileSync(join(dir, 'input', `${t.name}.bin`));
    const Typed = t.dtype === '<i4' ? Int32Array : Float32Array;
    const data = new Typed(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
    return [t.name, { data, shape: t.shape, dtype: t.dtype }];
  }),
);

/** A metadata value as JavaScript holds it: typed arrays for numeric arrays, bigints past 2^53. */
const TYPED = {
  UINT8: Uint8Array,
  INT8: Int8Array,
  UINT16: Uint16Array,
  INT16: Int16Array,
  UINT32: Uint32Array,
  INT32: Int32Array,
  UINT64: BigUint64Array,
  INT64: BigInt64Array,
  FLOAT32: Float32Array,
  FLOAT64: Float64Array,
};
const jsValue = (v) => (Array.isArray(v) ? v.map(jsValue) : v !== null && typeof v === 'object' ? BigInt(v.big) : v);
const metadata = new Map();
const metadataTypes = {};
metadata.set('general.architecture', 'test'); // GGUFWriter's first key
for (const [key, type, value, items] of fixture.metadata) {
  const big = ['UINT64', 'INT64'].includes(items);
  metadata.set(key, items && TYPED[items] ? TYPED[items].from(jsValue(value), big ? BigInt : Number) : jsValue(value));
  // Declared only where the value alone does not say it (JavaScript has one number type).
  if (typeof value === 'number' && type !== 'INT32' && type !== 'FLOAT64') metadataTypes[key] = type;
}

const sameBytes = (got, want, what) => {
  assert.is(got.length, want.length, `${what}: length`);
  const at = got.findIndex((b, i) => b !== want[i]);
  assert.is(at, -1, `${what}: first differing byte ${at}`);
};

test("every type npyts writes: the file gguf-py's GGUFWriter writes from gguf.quants.quantize, byte for byte", () => {
  const types = Object.keys(fixture.files);
  assert.equal(types, ['f32', 'f16', 'bf16', 'q8_0', 'q4_0', 'q4_1', 'q5_0', 'q5_1', 'tq1_0', 'tq2_0']);
  for (const type of types) {
    const { alignment } = fixture.files[type];
    const got = encodeGguf(tensors, { type, metadata, metadataTypes, ...(alignment ? { alignment } : {}) });
    sameBytes(got, new Uint8Array(readFileSync(join(dir, 'ref', `${type}.gguf`))), type);
  }
});

test("saveGguf's file: GGUFReader reads its metadata and tensors, and npyts's reader the same values", async () => {
  const path = join(dir, 'saved-q4_1.gguf');
  await saveGguf(path, tensors, { type: 'q4_1', metadata, metadataTypes });
  const out = join(dir, 'read');
  const read = JSON.parse(execFileSync('python3', ['-W', 'ignore', helper, 'read', path, out], { encoding: 'utf8', maxBuffer: 1 << 26 }));
  // Metadata: every key in order, with its type and value as gguf-py reads them.
  assert.equal(Object.keys(read.metadata), [...metadata.keys()]);
  for (const [key, type, value, items] of fixture.metadata) {
    assert.is(read.metadata[key].type, type, key);
    if (items) assert.is(read.metadata[key].items, items, key);
    const float32 = type === 'FLOAT32' || items === 'FLOAT32';
    // GGUFReader's contents() gives a nested array's items flat; npyts's reader nests them (below).
    const want = float32 ? (Array.isArray(value) ? value.map(Math.fround) : Math.fround(value)) : Array.isArray(value) ? value.flat() : value;
    assert.equal(read.metadata[key].value, want, key);
  }
  const f = await GgufFile.open(bytesSource(new Uint8Array(readFileSync(path)), path));
  assert.equal([...f.names], [...tensors.keys()]);
  assert.equal(Object.keys(f.metadata), [...metadata.keys()]);
  // Items compared as lists: npyts reads a plain list of integers back as the Int32Array it is.
  const plain = (v) => (ArrayBuffer.isView(v) || Array.isArray(v) ? Array.from(v, plain) : v);
  for (const [key, value] of metadata) assert.equal(plain(f.metadata[key]), plain(metadataTypes[key] === 'FLOAT32' ? Math.fround(value) : value), key);
  for (const [key, type] of Object.entries(metadataTypes)) assert.is(f.metadataTypes[key], type, key);
  assert.equal(
    read.tensors.map((t) => [t.name, t.type]),
    [...tensors.keys()].map((name) => [name, fixture.files.q4_1.types[name]]),
  );
  for (const t of read.tensors) {
    // F16 and BF16 are read as themselves; gguf-py dequantizes them to float32 (exactly).
    const own = await f.get(t.name);
    const a = own.dtype.kind === 'i' ? own : toFloat32(own);
    assert.equal(a.shape, t.shape, t.name);
    const got = new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength);
    sameBytes(got, new Uint8Array(readFileSync(join(out, `${t.name}.bin`))), t.name);
  }
});

test("saveGguf from a weight file streams: encodeGguf's bytes, each tensor read only once the one before is written; refused: a type by function, a tensor unlike its info", async () => {
  const folder = join(dir, 'streamed');
  mkdirSync(folder);
  const st = join(folder, 'in.safetensors');
  await saveSafetensors(st, tensors);
  const path = join(folder, 'out.gguf');
  const options = { type: 'q8_0', metadata, metadataTypes };
  const w = await openWeights(st);
  try {
    // The tensors in the file's order (safetensors sorts them).
    const inOrder = new Map(w.names.map((n) => [n, tensors.get(n)]));
    const parts = ggufParts(inOrder, options);
    // When each tensor is asked for, the file beside holds the header and every tensor before it, no more.
    const written = [];
    const source = {
      names: w.names,
      info: (name, o) => w.info(name, o),
      get: (name, o) => {
        const beside = readdirSync(folder).filter((f) => f !== 'in.safetensors');
        assert.is(beside.length, 1, 'one file beside');
        written.push(statSync(join(folder, beside[0])).size);
        return w.get(name, o);
      },
    };
    await saveGguf(path, source, options);
    sameBytes(new Uint8Array(readFileSync(path)), encodeGguf(inOrder, options), 'streamed q8_0');
    const before = [];
    for (let at = parts.header.length, i = 0; i < parts.tensors.length; at += parts.tensors[i++].bytes) before.push(at);
    assert.equal(written, before);
    // The header names each tensor's type before it is read: no function to choose it from the array.
    await refusedWith(saveGguf(join(folder, 'f.gguf'), source, { type: () => 'q8_0' }), 'BAD_OPTION', /type \(a string\)/);
    // A source whose data is not what its info said (the header already says the info's).
    const bias = await w.get('blk.0.bias');
    const liar = { names: ['a'], info: () => ({ dtype: bias.dtype, shape: [64] }), get: async () => bias };
    await refusedWith(saveGguf(join(folder, 'l.gguf'), liar, { type: 'q8_0' }), 'SHAPE_MISMATCH', /'a' read with shape \(512\) where its info gave \(64\)/);
  } finally {
    await w.close();
  }
  assert.equal(readdirSync(folder).sort(), ['in.safetensors', 'out.gguf']);
});

test('refused by name: a NaN in a quantized block, a dtype GGUF has no type for, an unknown type, rows a chosen block type cannot hold, a block type for integers, a type for a key the metadata lacks', async () => {
  const w = new Float32Array(64);
  w[40] = Number.NaN;
  const e = await refusedWith(
    Promise.resolve().then(() => encodeGguf({ 'a.weight': { data: w, shape: [2, 32] } }, { type: 'q8_0' })),
    'NOT_REPRESENTABLE',
    "'a.weight': element 40 is NaN",
  );
  assert.ok(e.message.includes('f32 or f16'));
  // A block of values so small that float32 cannot invert its scale: gguf-py's bytes are undefined.
  await refusedWith(
    Promise.resolve().then(() => encodeGguf({ tiny: { data: new Float32Array(32).fill(1e-38), shape: [1, 32] } }, { type: 'q8_0' })),
    'NOT_REPRESENTABLE',
    "'tiny': block 0",
  );
  // As f16 the NaN is a value like any other.
  encodeGguf({ 'a.weight': { data: w, shape: [2, 32] } }, { type: 'f16' });
  await refusedWith(
    Promise.resolve().then(() => encodeGguf({ u: { data: new Uint8Array(4), shape: [4] } })),
    'NO_COUNTERPART',
    "'u' is uint8",
  );
  await refusedWith(
    Promise.resolve().then(() => encodeGguf({ w: { data: new Float32Array(32), shape: [1, 32] } }, { type: 'q4_k' })),
    'BAD_OPTION',
    'q4_k',
  );
  await refusedWith(
    Promise.resolve().then(() => encodeGguf({ w: { data: new Float32Array(48), shape: [1, 48] } }, { type: () => 'q8_0' })),
    'BAD_OPTION',
    "'w' has rows of 48 values",
  );
  // A block type chosen for an integer tensor (written as itself) is refused, not ignored.
  await refusedWith(
    Promise.resolve().then(() => encodeGguf({ i: { data: new Int32Array(32), shape: [1, 32] } }, { type: () => 'q8_0' })),
    'BAD_OPTION',
    "'i' is int32",
  );
  // Metadata a type cannot hold is refused, never wrapped or rounded unasked.
  const one = { w: { data: new Float32Array(1), shape: [1] } };
  for (const [metadata, metadataTypes, code, pattern] of [
    [{ k: 300 }, { k: 'UINT8' }, 'BAD_VALUE', "metadata 'k': 300 is not a UINT8"],
    [{ k: 1.5 }, { k: 'INT32' }, 'BAD_VALUE', "metadata 'k': 1.5 is not a INT32"],
    [{ k: ['a', 1] }, {}, 'BAD_VALUE', 'share one GGUF type'],
    [{ k: 'x\ud800' }, {}, 'BAD_OPTION', 'lone surrogate'],
    // A type declared for a key the metadata lacks (a misspelt key) is not dropped unasked.
    [{ 'llama.context_length': 2048 }, { 'llama.context_lenght': 'UINT32' }, 'BAD_OPTION', "'llama.context_lenght'"],
  ]) {
    const e = await npyErrorOf(() => encodeGguf(one, { metadata, metadataTypes }));
    assert.is(e.code, code, e.message);
    assert.ok(e.message.includes(pattern), e.message);
  }
  // A failed save leaves no file, not a part of one.
  const path = join(dir, 'refused.gguf');
  await refusedWith(saveGguf(path, { 'a.weight': { data: w, shape: [2, 32] } }, { type: 'q8_0' }), 'NOT_REPRESENTABLE');
  assert.not.ok(existsSync(path));
  writeFileSync(path, 'old');
  await refusedWith(saveGguf(path, { 'a.weight': { data: w, shape: [2, 32] } }, { type: 'q8_0' }), 'NOT_REPRESENTABLE');
  assert.is(readFileSync(path, 'utf8'), 'old');
});

test.run();
