// GGUF against the real thing (gguf-py, llama.cpp's own Python package): files written at test time
// by its GGUFWriter, metadata and tensors compared with what its GGUFReader reads, and every
// quantized type compared bit for bit with gguf.quants.dequantize (random valid blocks for each
// type, and values gguf-py quantized itself where it can). Hostile headers are built here, byte by
// byte, and each must end in one NpyError, bounded by the bytes present.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { closeSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GgufFile, ggufFormat, openGguf, bytesSource } from '@npyts/core';
import { boundedChild, scratch } from '../helpers/numpy.mjs';
import { startNginx } from '../helpers/nginx.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const dir = scratch('npyts-gguf-');
const report = JSON.parse(
  execFileSync('python3', ['-W', 'ignore', join(here, '..', 'helpers', 'gguf_fixtures.py'), dir], { encoding: 'utf8', maxBuffer: 1 << 28 }),
);
const file = (name) => join(dir, name);
const bytesOf = (name) => new Uint8Array(readFileSync(file(name)));
const open = (name) => GgufFile.open(bytesSource(bytesOf(name), name));
const expected = (fname, tensor) => new Uint8Array(readFileSync(join(dir, 'expect', fname, `${tensor}.bin`)));
const raw = (a) => new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength);
const sameBytes = (got, want, what) => {
  assert.is(got.length, want.length, `${what}: length`);
  const at = got.findIndex((b, i) => b !== want[i]);
  assert.is(at, -1, `${what}: first differing byte ${at}`);
};

test('every quantized type gguf-py dequantizes: float32 equal to gguf.quants.dequantize, bit for bit', async () => {
  const fname = 'quants.gguf';
  const f = await open(fname);
  const { tensors } = report.files[fname];
  assert.equal(
    [...f.names],
    tensors.map((t) => t.name),
    'names in file order',
  );
  let checked = 0;
  for (const t of tensors) {
    const info = await f.info(t.name);
    assert.equal(info.shape, t.shape, t.name);
    assert.is(info.quantization, t.type, t.name);
    assert.is(info.dtype.str, '<f4');
    if (t.type === 'Q8_1') continue;
    const a = await f.get(t.name, { expect: '<f4' });
    assert.equal(a.shape, t.shape);
    sameBytes(raw(a), expected(fname, t.name), t.name);
    checked++;
  }
  // 23 types from random blocks, 8 of them also from values gguf-py quantized.
  assert.is(checked, 23 + 8);
});

test('every quantized type from bytes at an odd address (a source whose reads are views): the same bits', async () => {
  // Blocks one byte past a word boundary: the dequantizers read words at any alignment.
  const bytes = bytesOf('quants.gguf');
  const odd = new Uint8Array(bytes.length + 1).subarray(1);
  odd.set(bytes);
  const f = await GgufFile.open({ ...bytesSource(odd, 'odd'), views: true });
  for (const t of report.files['quants.gguf'].tensors) {
    if (t.type !== 'Q8_1') sameBytes(raw(await f.get(t.name)), expected('quants.gguf', t.name), t.name);
  }
});

test("tensors of more than one 4 MiB read, from bytes and from a file read either way, one by one and all at once: gguf-py's bits", async () => {
  const fname = 'chunks.gguf';
  const { tensors } = report.files[fname];
  const { fileSource, openWeights } = await import('@npyts/core/node');
  const wants = new Map(tensors.map((t) => [t.name, readFileSync(join(dir, 'expect', fname, `${t.name}.bin`))]));
  const same = (a, name) => {
    // Buffer's compare first (20-30 MB each here); the first differing byte only when they differ.
    const got = Buffer.from(a.data.buffer, a.data.byteOffset, a.data.byteLength);
    if (!got.equals(wants.get(name))) sameBytes(raw(a), expected(fname, name), name);
  };
  const sources = {
    'bytes in memory': () => GgufFile.open(bytesSource(bytesOf(fname), fname)),
    'a file, blocking reads': () => GgufFile.open(fileSource(file(fname))),
    'a file, async reads': () => openWeights(file(fname)),
  };
  for (const [what, opened] of Object.entries(sources)) {
    const f = await opened();
    try {
      // Each read goes into a buffer an earlier one used: the second tensor's into the first's.
      for (const t of tensors) {
        const a = await f.get(t.name);
        assert.equal(a.shape, t.shape, `${what}: ${t.name}`);
        same(a, t.name);
      }
      const all = await f.getAll();
      for (const t of tensors) same(all.get(t.name), t.name);
    } finally {
      await f.close();
    }
  }
});

test('a type gguf-py does not dequantize (Q8_1) is listed, and refused when read, naming it', async () => {
  const f = await open('quants.gguf');
  assert.is((await f.info('unread.Q8_1')).quantization, 'Q8_1');
  const e = await npyErrorOf(() => f.get('unread.Q8_1'));
  assert.is(e.code, 'GGUF_UNSUPPORTED');
  assert.match(e.message, /Q8_1/);
});

test('getAll and loadWeights read the other tensors, then name every tensor of a type gguf-py does not dequantize in one error', async () => {
  const { refused } = report.files['unread.gguf'];
  assert.equal(refused, ['unread.Q8_1', 'unread.Q8_K'], 'gguf-py refuses both');
  const f = await open('unread.gguf');
  assert.equal([...(await f.get('ok')).data], [0, 1, 2, 3]);
  for (const whole of [() => f.getAll(), async () => (await import('@npyts/core/node')).loadWeights(file('unread.gguf'))]) {
    const e = await npyErrorOf(whole);
    assert.is(e.code, 'GGUF_UNSUPPORTED');
    assert.match(e.message, /2 of the 3 tensors cannot be read \('unread\.Q8_1': .*Q8_1.*; 'unread\.Q8_K': .*Q8_K.*\); get\(\) the others by name/);
  }
});

for (const fname of ['plain.gguf', 'plain-be.gguf']) {
  const big = fname === 'plain-be.gguf';
  test(`unquantized tensors of every type as themselves: dtype, shape and the bytes gguf-py reads (${big ? 'big' : 'little'}-endian)`, async () => {
    const f = await open(fname);
    assert.is(f.littleEndian, !big);
    const dtypes = { F32: 'float32', F16: 'float16', BF16: 'bfloat16', F64: 'float64', I8: 'int8', I16: 'int16', I32: 'int32', I64: 'int64' };
    const { tensors } = report.files[fname];
    assert.equal(
      [...f.names],
      tensors.map((t) => t.name),
    );
    let read = 0;
    for (const t of tensors) {
      const info = await f.info(t.name);
      // In a big-endian file, BF16 and quantized blocks are refused: the file does not say their inner byte order.
      if (big && (t.type === 'BF16' || info.quantization !== undefined)) {
        const e = await npyErrorOf(() => f.get(t.name));
        assert.is(e.code, 'GGUF_UNSUPPORTED', t.name);
        assert.match(e.message, new RegExp(`${t.type} in a big-endian GGUF file`));
        continue;
      }
      assert.is(info.quantization, undefined);
      assert.is(info.dtype.name, dtypes[t.type], t.name);
      if (t.type !== 'I8') assert.is(info.dtype.str[0], big ? '>' : '<', `${t.name}: the file's byte order`);
      const a = await f.get(t.name);
      assert.equal(a.shape, t.shape, t.name);
      sameBytes(raw(a), expected(fname, t.name), t.name);
      read++;
    }
    assert.is(read, big ? 8 : 9);
    if (!big) {
      const all = await f.getAll();
      assert.equal(
        [...all.keys()],
        tensors.map((t) => t.name),
      );
    }
  });
}

// Our values in the report's terms: 64-bit integers past 2^53 as { big }, typed arrays as arrays.
const typedOf = {
  UINT8: Uint8Array,
  INT8: Int8Array,
  UINT16: Uint16Array,
  INT16: Int16Array,
  UINT32: Uint32Array,
  INT32: Int32Array,
  FLOAT32: Float32Array,
  UINT64: BigUint64Array,
  INT64: BigInt64Array,
  FLOAT64: Float64Array,
};
const norm = (v) => (typeof v === 'bigint' ? { big: String(v) } : ArrayBuffer.isView(v) ? Array.from(v, norm) : Array.isArray(v) ? v.map(norm) : v);

for (const fname of ['plain.gguf', 'plain-be.gguf'])
  test(`metadata: every key/value in file order, 64-bit integers exact, arrays typed, as gguf-py reads them (${fname})`, async () => {
    const f = await open(fname);
    const want = report.files[fname].metadata;
    assert.equal(Object.keys(f.metadata), Object.keys(want), 'keys in file order');
    for (const [key, { types, value }] of Object.entries(want)) {
      const got = f.metadata[key];
      assert.is(f.metadataTypes[key], types[0], `${key}: gguf-py's type`);
      if (types[0] === 'ARRAY' && types.length === 2 && typedOf[types[1]]) assert.instance(got, typedOf[types[1]], key);
      if (types.length > 2) {
        // gguf-py flattens nested arrays (its FIXME); npyts keeps them nested.
        assert.equal(norm(got).flat(Number.POSITIVE_INFINITY), value, key);
      } else {
        assert.equal(norm(got), value, key);
      }
    }
    assert.equal(f.metadata['m.nested'], [Int32Array.of(1, 2, 3), Int32Array.of(4), [Int32Array.of(5, 6), Int32Array.of(7)]]);
    assert.is(f.metadata['m.u64'], 2n ** 63n + 5n);
    assert.is(f.metadata['m.u64small'], 2 ** 53 - 1);
    assert.is(f.version, 3);
  });

test('a tokenizer of 150 000 tokens: the strings and scores written, in order', async () => {
  const f = await open('vocab.gguf');
  assert.equal(f.metadata['tokenizer.ggml.tokens'], report.vocab.tokens);
  assert.instance(f.metadata['tokenizer.ggml.scores'], Float32Array);
  assert.equal(Array.from(f.metadata['tokenizer.ggml.scores']), report.vocab.scores);
  assert.equal(Array.from((await f.get('x')).data.subarray(995)), [995, 996, 997, 998, 999]);
});

test('general.alignment: the data section and each tensor at its multiples', async () => {
  const f = await open('aligned.gguf');
  assert.is(f.metadata['general.alignment'], 256);
  assert.is(report.files['aligned.gguf'].dataOffset % 256, 0);
  assert.equal(Array.from((await f.get('a')).data), [0, 1, 2]);
  assert.equal(Array.from((await f.get('b')).data), [0, 1, 2, 3, 4]);
});

test('sniff: the magic and a version read in either byte order', async () => {
  assert.ok(ggufFormat.sniff(bytesOf('plain.gguf').subarray(0, 64), 100));
  assert.ok(ggufFormat.sniff(bytesOf('big-endian.gguf'), 100));
  assert.not.ok(ggufFormat.sniff(new Uint8Array(3), 3));
  assert.equal(Array.from((await (await open('big-endian.gguf')).get('x')).data), [0, 1, 2, 3]);
  assert.is((await npyErrorOf(() => GgufFile.open(bytesSource(new TextEncoder().encode('GGML1234'))))).code, 'BAD_MAGIC');
});

test("versions 0, 1 and 4, in either byte order: refused as an unsupported GGUF version, where gguf-py's reader refuses them", async () => {
  const { openWeights } = await import('@npyts/core/node');
  const reference = JSON.parse(
    execFileSync(
      'python3',
      [
        '-c',
        `
import json, struct, sys
from gguf import GGUFReader
out = {}
for v in (0, 1, 4):
    for order in '<>':
        path = f'${dir}/v{v}{"le" if order == "<" else "be"}.gguf'
        open(path, 'wb').write(b'GGUF' + struct.pack(order + 'IQQ', v, 0, 0) + bytes(64))
        try:
            GGUFReader(path)
            out[path] = 'read'
        except ValueError as e:
            out[path] = str(e)
print(json.dumps(out))`,
      ],
      { encoding: 'utf8' },
    ),
  );
  assert.is(Object.keys(reference).length, 6);
  for (const [path, refusal] of Object.entries(reference)) {
    const version = /\/v(\d)/.exec(path)[1];
    assert.match(refusal, new RegExp(`version ${version} which we cannot handle`), path);
    const bytes = new Uint8Array(readFileSync(path));
    assert.ok(ggufFormat.sniff(bytes, bytes.length), `${path}: told as GGUF`);
    for (const opening of [() => GgufFile.open(bytesSource(bytes, 'v.gguf')), () => openWeights(path)]) {
      const e = await npyErrorOf(opening);
      assert.is(e.code, 'GGUF_UNSUPPORTED', `${path}: ${e.message}`);
      assert.match(e.message, new RegExp(`unsupported GGUF version ${version}: npyts reads GGUF versions 2 and 3`), path);
    }
  }
});

// Hostile headers, byte by byte, in either byte order (a big-endian file's magic stays "GGUF"; every
// number after it is big-endian, as gguf-py's GGUFWriter writes them).
const MAGIC = new TextEncoder().encode('GGUF');
const builders = (little) => {
  const u32 = (n) => {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setUint32(0, n, little);
    return b;
  };
  const u64 = (n) => {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigUint64(0, BigInt(n), little);
    return b;
  };
  const str = (s) => {
    const b = typeof s === 'string' ? new TextEncoder().encode(s) : s;
    return [u64(b.length), b];
  };
  const cat = (...parts) => {
    const flat = parts.flat(Number.POSITIVE_INFINITY);
    const out = new Uint8Array(flat.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of flat) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  };
  /** A v3 file: key/values and tensor infos as given (raw parts), the data section padded to 32, then `data` bytes. */
  const gguf = ({ kvs = [], infos = [], tensorCount = infos.length, kvCount = kvs.length, data = 64 }) => {
    const head = cat(MAGIC, u32(3), u64(tensorCount), u64(kvCount), kvs, infos);
    return cat(head, new Uint8Array((32 - (head.length % 32)) % 32), new Uint8Array(data));
  };
  const kv = (key, type, ...value) => [str(key), u32(type), value];
  const info = (name, ne, type = 0, offset = 0) => [str(name), u32(ne.length), ne.map(u64), u32(type), u64(offset)];
  return { u32, u64, str, gguf, kv, info };
};
const refusal = async (bytes) => npyErrorOf(() => GgufFile.open(bytesSource(bytes, 'hostile.gguf')));

for (const little of [true, false]) {
  const { u32, u64, str, gguf, kv, info } = builders(little);
  const order = little ? 'little-endian' : 'big-endian';

  test(`a well-formed hand-made file reads (so each hostile case below differs by its one fault), ${order}`, async () => {
    const f = await GgufFile.open(bytesSource(gguf({ kvs: [kv('k', 4, u32(7)), kv('k64', 10, u64(2n ** 60n + 1n))], infos: [info('t', [4, 2])] })));
    assert.is(f.littleEndian, little);
    assert.equal(f.metadata, Object.assign(Object.create(null), { k: 7, k64: 2n ** 60n + 1n }));
    assert.equal((await f.get('t')).shape, [2, 4]);
  });

  test(`hostile counts and lengths, ${order}: refused with BAD_GGUF before anything is made for them`, async () => {
    const cases = {
      'tensor count 2^62': gguf({ tensorCount: 2n ** 62n }),
      'kv count 2^62': gguf({ kvCount: 2n ** 62n }),
      'key of 2^60 bytes': gguf({ kvs: [[u64(2n ** 60n), new Uint8Array(8)]] }),
      'string value of 2^60 bytes': gguf({ kvs: [kv('k', 8, u64(2n ** 60n))] }),
      'array of 2^40 uint8': gguf({ kvs: [kv('k', 9, u32(0), u64(2n ** 40n))] }),
      'array of 2^40 strings': gguf({ kvs: [kv('k', 9, u32(8), u64(2n ** 40n))] }),
      'tensor name of 2^60 bytes': gguf({ infos: [[u64(2n ** 60n), new Uint8Array(30)]] }),
      'unknown value type': gguf({ kvs: [kv('k', 13, u32(0))] }),
      'unknown array item type': gguf({ kvs: [kv('k', 9, u32(99), u64(1), u32(0))] }),
      'unknown ggml type': gguf({ infos: [info('t', [32], 4)] }),
      'dimensions overflowing 2^53': gguf({ infos: [info('t', [2n ** 32n, 2n ** 32n])] }),
      'a dimension of 2^60': gguf({ infos: [info('t', [2n ** 60n, 0])] }),
      'misaligned tensor data': gguf({ infos: [info('t', [4], 0, 4)] }),
      'a quantized row not whole blocks': gguf({ infos: [info('t', [33], 8)] }),
      'duplicate key': gguf({ kvs: [kv('k', 4, u32(1)), kv('k', 4, u32(2))] }),
      'duplicate tensor name': gguf({ infos: [info('t', [4]), info('t', [4], 0, 32)] }),
      'alignment not a power of two': gguf({ kvs: [kv('general.alignment', 4, u32(24))] }),
      'alignment not a uint32': gguf({ kvs: [kv('general.alignment', 10, u64(32))] }),
      'a key that is not UTF-8': gguf({ kvs: [kv(Uint8Array.of(0xff, 0xfe), 4, u32(1))] }),
      'arrays nested 100 deep': gguf({
        kvs: [
          kv(
            'k',
            9,
            Array.from({ length: 100 }, () => [u32(9), u64(1)]),
            u32(0),
            u64(0),
          ),
        ],
      }),
      'more dimensions than numpy allows': gguf({ infos: [[str('t'), u32(65), new Uint8Array(65 * 8 + 12)]] }),
    };
    for (const [what, bytes] of Object.entries(cases)) {
      const e = await refusal(bytes);
      assert.is(e.code, 'BAD_GGUF', `${what}: ${e.message}`);
      assert.match(e.message, /^hostile\.gguf: /, what);
    }
  });

  test(`counts and lengths a huge file could hold but no header should, ${order}: refused after one 64 KiB read, whatever the file's size`, async () => {
    // A source that claims `size` bytes (zeros after `bytes`) and counts what is asked of it; past
    // 8 MiB it throws, so a reader that follows the file's claims fails here at once.
    const claiming = (bytes, size) => {
      const s = {
        name: 'hostile.gguf',
        size,
        asked: 0,
        async read(at, n) {
          s.asked += n;
          if (s.asked > 8 << 20) throw new Error(`asked for ${s.asked} bytes`);
          const out = new Uint8Array(Math.min(n, size - at));
          if (at < bytes.length) out.set(bytes.subarray(at, at + out.length));
          return out;
        },
      };
      return s;
    };
    const GiB = 2 ** 30;
    const cases = {
      // The hostile trial's sparse file: 24 GiB of tensor infos fit in 64 GiB, not in a header.
      '2^30 empty-named tensors in 64 GiB': [gguf({ tensorCount: 2 ** 30, infos: [info('', [0])] }), 64 * GiB, 'HEADER_TOO_LARGE'],
      'a key of 3 GiB in 8 GiB': [gguf({ kvs: [[u64(3 * GiB)]] }), 8 * GiB, 'HEADER_TOO_LARGE'],
      'a string value of 200 MB in 1 GiB': [gguf({ kvs: [kv('k', 8, u64(200e6))] }), GiB, 'HEADER_TOO_LARGE'],
      'a tensor name of 3 GiB in 8 GiB': [gguf({ infos: [[u64(3 * GiB)]] }), 8 * GiB, 'HEADER_TOO_LARGE'],
      'an array of 2^28 uint32 in 64 GiB': [gguf({ kvs: [kv('k', 9, u32(4), u64(2 ** 28))] }), 64 * GiB, 'HEADER_TOO_LARGE'],
      'an array of 2^28 strings in 64 GiB': [gguf({ kvs: [kv('k', 9, u32(8), u64(2 ** 28))] }), 64 * GiB, 'HEADER_TOO_LARGE'],
      // Under the cap (96 MB of infos): the second empty name is refused as it is read, not after all of them.
      '4 000 000 empty-named tensors in 1 GiB': [gguf({ tensorCount: 4e6, infos: [info('', [0]), info('', [0])] }), GiB, 'BAD_GGUF'],
    };
    for (const [what, [bytes, size, code]] of Object.entries(cases)) {
      const source = claiming(bytes, size);
      const e = await npyErrorOf(() => GgufFile.open(source));
      assert.is(e.code, code, `${what}: ${e.message}`);
      assert.match(e.message, code === 'BAD_GGUF' ? /the tensor name '' is written twice/ : /safetensors refuses headers over 100000000 bytes/, what);
      assert.ok(source.asked <= 64 << 10, `${what}: asked for ${source.asked} bytes`);
    }
  });

  test(`tensor data past the end of the file, ${order}: DATA_TRUNCATED at open, naming the tensor`, async () => {
    for (const t of [info('t', [1024]), info('t', [4], 0, 2n ** 50n), info('t', [4], 0, 2n ** 63n)]) {
      const e = await refusal(gguf({ infos: [t] }));
      assert.is(e.code, 'DATA_TRUNCATED', e.message);
      assert.match(e.message, /tensor 't'/);
    }
  });
}

test('the hostile trial: a 64 GiB sparse file of 2^30 tensors, and a server claiming 8 GiB with a 3 GiB key, refused in a few MiB', () => {
  // In a process of its own, to measure its peak memory (the trial's cap was 1.2 GB); its heap is
  // held to 512 MiB, and the server refuses a range over 1 MiB, so a reader that follows the claims fails fast.
  const { u32, u64, gguf, info } = builders(true);
  const path = file('sparse.gguf');
  const head = gguf({ tensorCount: 2 ** 30, infos: [info('', [0]), info('', [0])], data: 0 });
  const fd = openSync(path, 'w');
  writeSync(fd, head);
  ftruncateSync(fd, 2 ** 36);
  closeSync(fd);
  const served = gguf({ kvs: [[u64(3 * 2 ** 30)], u32(8)], data: 0 });
  const out = boundedChild(
    dir,
    `import * as core from '@npyts/core'; import * as nd from '@npyts/core/node'; import http from 'node:http';
const served = Uint8Array.from(${JSON.stringify(Array.from(served))});
const claimed = 2 ** 33;
let largest = 0;
const server = http.createServer((req, res) => {
  const m = /bytes=(\\d*)-(\\d*)/.exec(req.headers.range ?? '');
  const from = m[1] === '' ? claimed - Number(m[2]) : Number(m[1]);
  const to = m[1] === '' || m[2] === '' ? claimed - 1 : Math.min(Number(m[2]), claimed - 1);
  largest = Math.max(largest, to - from + 1);
  if (to - from + 1 > 1 << 20) return res.writeHead(500).end();
  const body = new Uint8Array(to - from + 1);
  if (from < served.length) body.set(served.subarray(from, Math.min(to + 1, served.length)));
  res.writeHead(206, { 'content-range': \`bytes \${from}-\${to}/\${claimed}\`, 'content-length': body.length, 'accept-ranges': 'bytes' });
  res.end(body);
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const codeOf = async (open) => { try { await open(); return 'opened'; } catch (e) { return e instanceof core.NpyError ? e.code + ': ' + e.message : String(e); } };
globalThis.result = {
  sparse: await codeOf(() => core.GgufFile.open(nd.fileSource('sparse.gguf'))),
  weights: await codeOf(() => nd.openWeights('sparse.gguf')),
  url: await codeOf(() => core.openGguf('http://127.0.0.1:' + server.address().port + '/claim.gguf')),
};
globalThis.result.largest = largest;
server.close();`,
    { timeoutMs: 30_000, maxOldSpaceMiB: 512 },
  );
  for (const how of ['sparse', 'weights', 'url']) assert.match(out[how], /^HEADER_TOO_LARGE: /, how);
  assert.match(out.url, /a key needs 3221225472 bytes at byte 32/);
  assert.ok(out.largest <= 64 << 10, `the largest range asked of the server: ${out.largest} bytes`);
  assert.ok(out.rssMiB < 200, `peak ${out.rssMiB} MiB`);
});

test('a file cut anywhere, in either byte order: one NpyError, never another error', async () => {
  // Up to the end of its last tensor's data (a file cut in the padding after it is whole).
  const whole = bytesOf('aligned.gguf');
  for (let n = 0; n < report.files['aligned.gguf'].dataOffset + 256 + 10; n++) {
    const e = await npyErrorOf(() => GgufFile.open(bytesSource(whole.subarray(0, n))));
    assert.ok(['BAD_MAGIC', 'BAD_GGUF', 'DATA_TRUNCATED'].includes(e.code), `${n}: ${e.code}`);
  }
  // gguf-py's big-endian file: every value type in its header, cut at each byte of it.
  const be = bytesOf('plain-be.gguf');
  for (let n = 0; n < report.files['plain-be.gguf'].dataOffset; n++) {
    const e = await npyErrorOf(() => GgufFile.open(bytesSource(be.subarray(0, n))));
    assert.ok(['BAD_MAGIC', 'BAD_GGUF', 'DATA_TRUNCATED'].includes(e.code), `${n}: ${e.code}`);
  }
  // Cut inside a vocabulary of 150 000 strings (the header read in growing pieces).
  const big = bytesOf('vocab.gguf');
  for (const n of [70_000, 1_000_000]) assert.is((await npyErrorOf(() => GgufFile.open(bytesSource(big.subarray(0, n))))).code, 'BAD_GGUF');
});

test('closed files refuse reads; unknown names list the names', async () => {
  const f = await open('aligned.gguf');
  assert.is((await npyErrorOf(() => f.get('nope'))).code, 'NPZ_KEY');
  await f.close();
  assert.is((await npyErrorOf(() => f.get('a'))).code, 'CLOSED');
});

test('by range from a URL: one tensor moves the tensor, the header and at most 64 KiB more', async () => {
  const server = await startNginx(dir);
  try {
    const f = await openGguf(`${server.base}/quants.gguf`);
    const { dataOffset } = report.files['quants.gguf'];
    const name = 'random.Q6_K';
    const a = await f.get(name);
    sameBytes(raw(a), expected('quants.gguf', name), name);
    const tensorBytes = (a.size / 256) * 210;
    assert.ok(f.source.stats.bytes <= dataOffset + tensorBytes + (64 << 10), `moved ${f.source.stats.bytes}`);
    await f.close();
    // A header larger than the first read (a vocabulary of 150 000 tokens) is read in a few pieces.
    const p = await openGguf(`${server.base}/vocab.gguf`);
    assert.is(p.metadata['tokenizer.ggml.tokens'][9], '日本語のトークン');
    assert.ok(p.source.stats.reads <= 12, `${p.source.stats.reads} reads`);
    const size = readFileSync(file('vocab.gguf')).length;
    assert.ok(p.source.stats.bytes <= size, `moved ${p.source.stats.bytes}`);
    await p.close();
  } finally {
    await server.stop();
  }
});

test.run();
