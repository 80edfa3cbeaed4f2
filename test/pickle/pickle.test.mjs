// Object arrays: numpy's pickles (np.save and every protocol 0–5) decode to numpy's values; hostile
// pickles are refused and provably run nothing; fuzzed pickles end in a value or an NpyError
// quickly; limits hold; what the encoder writes numpy loads with the same values.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeNpy, encodeNpy, readHeader, NpyError, NdArray, parseDescr, arrayFromValues } from '@npyts/core';
import { npyDocument, pythonJSON } from '@npyts/core/plumbing';
import {
  unpickle,
  pickle,
  pickleCodec,
  PyComplex,
  PyDecimal,
  PyDatetime,
  PyFraction,
  isPyFrozenset,
  isPyTuple,
  pyFrozenset,
  pyTuple,
} from '@npyts/core/pickle';
import { loadNpySync, saveNpySync } from '@npyts/core/node';
import { numpy, python, runCli, scratch, writeJSON } from '../helpers/numpy.mjs';
import fc from 'fast-check';
import { cpuMs } from '../helpers/work.mjs';

const dir = scratch();
const objects = numpy('objects', join(dir, 'objects'));
const byName = Object.fromEntries(objects.map((o) => [o.name, o]));

test('without opt-in, an object array is refused with a message that says how to opt in', async () => {
  const bytes = readFileSync(byName.mixed.file);
  assert.throws(
    () => decodeNpy(bytes),
    (e) => e instanceof NpyError && e.code === 'PICKLE_UNSUPPORTED' && /pickleCodec/.test(e.message) && /--allow-pickle/.test(e.message),
  );
  assert.throws(() => loadNpySync(byName.mixed.file), /allowPickle/);
  const r = await runCli(['show', byName.mixed.file]);
  assert.is(r.code, 1);
  assert.match(r.stderr, /--allow-pickle/);
});

for (const { name, file, doc, pickles } of objects) {
  test(`object array '${name}': np.save file and protocols ${Object.keys(pickles).join(',')} decode to numpy's values`, async () => {
    const bytes = readFileSync(file);
    const a = decodeNpy(bytes, { pickle: pickleCodec });
    assert.equal(npyDocument(readHeader(bytes), a), doc);
    assert.equal(npyDocument(readHeader(bytes), loadNpySync(file, { allowPickle: true })), doc);
    const cli = await runCli(['show', '--json', '--allow-pickle', file]);
    assert.is(cli.code, 0, cli.stderr);
    assert.equal(JSON.parse(cli.stdout), doc);
    for (const [protocol, p] of Object.entries(pickles)) {
      const v = unpickle(readFileSync(p));
      assert.instance(v, NdArray, `protocol ${protocol}`);
      assert.equal(v.shape, doc.shape, `protocol ${protocol}`);
      assert.equal(pythonJSON(v.toList(), 0, new Set()), doc.data, `${name} protocol ${protocol}`);
    }
  });
}

test('a list held twice in a pickle is one array in the result, in every protocol', () => {
  for (const p of Object.values(byName.batches.pickles)) {
    const v = unpickle(readFileSync(p)).data;
    assert.ok(v[3] === v[4] && Array.isArray(v[3]), p);
  }
});

test('values come back as documented JS types', () => {
  const a = decodeNpy(readFileSync(byName.mixed.file), { pickle: pickleCodec });
  const v = a.data;
  assert.is(v[0], 1);
  assert.is(v[1], -(2n ** 70n));
  assert.instance(v[6], Uint8Array);
  assert.is(v[7], null);
  assert.instance(v[9], PyComplex);
  assert.equal([v[9].re, v[9].im], [1, 2]);
  assert.ok(Array.isArray(v[10]) && Array.isArray(v[10][1]));
  assert.instance(v[11], Map, 'a dict with a non-string key is a Map');
  assert.instance(v[12], Set);
  assert.equal(v[15], { b: 1, a: 2 });
  assert.instance(v[19], PyDatetime);
  assert.is(v[19].microsecond, 6);
  assert.instance(v[24], PyDecimal);
  assert.instance(v[25], PyFraction);
  const ragged = decodeNpy(readFileSync(byName.ragged.file), { pickle: pickleCodec }).data;
  assert.is(ragged[1].dtype.str, '>f8');
  assert.is(ragged[3].order, 'F');
  assert.equal(ragged[3].toList(), [
    [0, 1, 2],
    [3, 4, 5],
  ]);
});

const hostile = numpy('hostile', join(dir, 'hostile'));

test('pickles that try to run code are refused, name the global, and run nothing', () => {
  for (const h of hostile) {
    let err;
    try {
      unpickle(readFileSync(h.file));
    } catch (e) {
      err = e;
    }
    assert.instance(err, NpyError, `${h.name} p${h.protocol}: ${err}`);
    assert.match(err.message, /refusing to load global|not allowed/, h.name);
    if (/refusing to load global/.test(err.message)) assert.is(err.code, 'PICKLE_FORBIDDEN', h.name);
    assert.not.ok(existsSync(h.marker), `${h.name} ran`);
  }
  const named = (n) => {
    try {
      unpickle(readFileSync(hostile.find((h) => h.name === n).file));
    } catch (e) {
      return e.message;
    }
    return '';
  };
  assert.match(named('os_system'), /'(posix|os)\.system'/);
  assert.match(named('builtins_eval'), /'(builtins|__builtin__)\.eval'/);
  assert.match(named('subprocess_popen'), /'(subprocess|commands)\.Popen'/); // protocols < 3 use the Python 2 name
  assert.match(named('numpy_other'), /'numpy\.core\.multiarray\.fromstr'/);
});

/** A small deterministic PRNG for the fuzzer. */
function rng(seed) {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0) / 2 ** 32;
}

test('fuzz: truncated and bit-flipped pickles end in a value or an NpyError, quickly', () => {
  const rand = rng(7);
  const seeds = ['mixed', 'ragged', 'records', 'nested'].flatMap((n) => Object.values(byName[n].pickles).map((p) => readFileSync(p)));
  let cases = 0;
  let slowest = 0;
  const attempt = (bytes) => {
    const t = cpuMs();
    try {
      unpickle(bytes, { maxBytes: 1 << 26 });
    } catch (e) {
      if (!(e instanceof NpyError)) throw new Error(`not an NpyError: ${e?.stack ?? e}`);
    }
    slowest = Math.max(slowest, cpuMs() - t);
    cases++;
  };
  for (const s of seeds) {
    for (let cut = 0; cut < s.length; cut += Math.max(1, s.length >> 7)) attempt(s.subarray(0, cut));
    for (let k = 0; k < 300; k++) {
      const b = new Uint8Array(s);
      const flips = 1 + Math.floor(rand() * 4);
      for (let f = 0; f < flips; f++) b[Math.floor(rand() * b.length)] ^= 1 << Math.floor(rand() * 8);
      attempt(b);
    }
  }
  assert.ok(cases > 5000, `${cases} cases`);
  assert.ok(slowest < 1000, `slowest case took ${slowest.toFixed(0)} ms`);
});

test('limits: nesting depth, memo size, MARK depth and allocated bytes', () => {
  const nested = new Uint8Array([
    0x80,
    0x02,
    ...Array(5000)
      .fill(0x5d)
      .flatMap(() => [0x5d]),
    0x2e,
  ]);
  assert.throws(
    () =>
      unpickle(new Uint8Array([0x80, 0x02, ...Array.from({ length: 3000 }, () => [0x5d, 0x28]).flat(), ...Array(3000).fill(0x65), 0x2e]), { maxDepth: 100 }),
    /nested deeper than 100/,
  );
  void nested;
  const memo = [0x80, 0x04];
  for (let i = 0; i < 200; i++) memo.push(0x4e, 0x94);
  memo.push(0x2e);
  assert.throws(() => unpickle(new Uint8Array(memo), { maxMemo: 100 }), /more than 100 memo entries/);
  assert.throws(() => unpickle(new Uint8Array([0x80, 0x02, ...Array(500).fill(0x28), 0x2e]), { maxMarks: 100 }), /more than 100 open MARKs/);
  // A declared length far beyond the input is a truncation error, not an allocation.
  assert.throws(() => unpickle(new Uint8Array([0x80, 0x04, 0x8e, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00, 0x2e])), /truncated|too large/);
  const big = [0x80, 0x03, 0x42, 0x00, 0x00, 0x10, 0x00, ...new Uint8Array(1 << 20), 0x2e];
  assert.throws(() => unpickle(new Uint8Array(big), { maxBytes: 1000 }), /maxBytes/);
});

test('the encoder writes object arrays numpy loads with the same values', () => {
  const values = [
    null,
    true,
    false,
    0,
    -7,
    2 ** 40,
    1.5,
    -0.25,
    NaN,
    2n ** 80n,
    -(2n ** 65n),
    '',
    'é整😀',
    new Uint8Array([0, 255, 7]),
    [1, [2, 'x'], []],
    { k: 1, nested: { a: [null] } },
    new Map([
      [1, 'one'],
      ['two', 2],
    ]),
    // Python sets have no order of their own: small ints iterate by value, and a one-element set has
    // one order (a set mixing strings would iterate in PYTHONHASHSEED's order and fail at random).
    new Set([1, 2]),
    new Set(['a']),
    new PyComplex(1, -2),
    new PyDecimal('3.14'),
    new PyFraction(-2n, 7n),
    new PyDatetime(2024, 2, 29, 23, 59, 58, 123456),
    arrayFromValues(
      [
        [1, 2],
        [3, 4],
      ],
      '<i2',
    ),
    arrayFromValues([1.5, -2], '>f8'),
  ];
  const arr = new NdArray(parseDescr('|O'), [values.length], values);
  const file = join(dir, 'ours_objects.npy');
  saveNpySync(file, arr);
  const twoD = new NdArray(parseDescr('|O'), [2, 2], ['a', 1, null, [2]], 'C');
  const file2 = join(dir, 'ours_objects_2d.npy');
  writeFileSync(file2, encodeNpy(twoD, { pickle: pickleCodec }));
  const expect = (a) => ({ dtype: '|O', shape: a.shape, data: pythonJSON(a.toList(), 0, new Set()) });
  const results = numpy(
    'check-objects',
    writeJSON(join(dir, 'objects.json'), [
      { file, expect: expect(arr) },
      { file: file2, expect: expect(twoD) },
    ]),
  );
  for (const r of results) assert.ok(r.ok, JSON.stringify(r.got));
  // And our own decoder reads it back to the same document.
  assert.equal(pythonJSON(loadNpySync(file, { allowPickle: true }).toList(), 0, new Set()), expect(arr).data);
});

test('pickle() refuses what it cannot write faithfully', () => {
  const loop = [];
  loop.push(loop);
  assert.throws(() => pickle(loop), /contains itself/);
  assert.throws(() => pickle(() => 1), /cannot pickle/);
  assert.throws(() => encodeNpy(new NdArray(parseDescr('|O'), [1], [1])), /pickleCodec/);
});

test('CLI convert --allow-pickle re-encodes object arrays that numpy reads back equal', async () => {
  const out = join(dir, 'converted_objects.npy');
  for (const name of ['mixed', 'ragged', 'two_d', 'stringdtype']) {
    const r = await runCli(['convert', '--allow-pickle', byName[name].file, out]);
    assert.is(r.code, 0, r.stderr);
    const doc = byName[name].doc;
    const [res] = numpy('check-objects', writeJSON(join(dir, 'conv.json'), [{ file: out, expect: { dtype: '|O', shape: doc.shape, data: doc.data } }]));
    assert.ok(res.ok, `${name}: ${JSON.stringify(res.got).slice(0, 300)}`);
  }
});

test('short text (SHORT_BINUNICODE, decoded in place) gives what a fatal TextDecoder gives, or is refused where it refuses', () => {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  // Valid UTF-8 of any code points (astral ones included), sometimes with bytes changed or cut.
  const text = fc.string({ unit: 'binary', maxLength: 60 }).map((t) => new TextEncoder().encode(t).slice(0, 255));
  const mutated = fc.tuple(text, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 3 }), fc.boolean()).map(([b, edits, cut]) => {
    const out = b.slice();
    for (const [at, v] of edits) if (out.length) out[at % out.length] = v;
    return cut && out.length ? out.slice(0, out.length - 1) : out;
  });
  // Short runs of the bytes at the edges of UTF-8's rules: lead bytes, continuation bounds, surrogates.
  const edges = fc
    .array(fc.constantFrom(0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xed, 0xee, 0xef, 0xf0, 0xf4, 0xf5, 0xff), {
      maxLength: 12,
    })
    .map((a) => new Uint8Array(a));
  // ASCII text (no decoding: its bytes are its code units) at every length around the written-out calls.
  const ascii = fc
    .string({ unit: fc.integer({ min: 0, max: 0x7f }).map((c) => String.fromCharCode(c)), maxLength: 20 })
    .map((t) => new TextEncoder().encode(t));
  const bytes = fc.oneof(text, mutated, edges, ascii, fc.uint8Array({ maxLength: 40 }));
  fc.assert(
    fc.property(bytes, (b) => {
      const p = new Uint8Array([0x80, 0x04, 0x8c, b.length, ...b, 0x2e]);
      let want;
      try {
        want = { ok: decoder.decode(b) };
      } catch {
        want = { refused: true };
      }
      let got;
      try {
        got = { ok: unpickle(p) };
      } catch (e) {
        got = e instanceof NpyError && /not valid UTF-8/.test(e.message) ? { refused: true } : { other: String(e) };
      }
      assert.equal(got, want);
    }),
    { seed: 20261122, numRuns: 3000 },
  );
});

test('an object array of 1 100 000 strings (numpy memoises each one) decodes: the memo limit follows the input', () => {
  const file = join(dir, 'many-strings.npy');
  python(
    `a = np.empty(1_100_000, dtype=object)\na[:] = [f'w{i:x}' + 'é' * (i % 3) for i in range(1_100_000)]\nnp.save(${JSON.stringify(file)}, a, allow_pickle=True)`,
  );
  const a = loadNpySync(file, { allowPickle: true });
  assert.is(a.data.length, 1_100_000);
  for (const i of [0, 1, 2, 65535, 1_099_999]) assert.is(a.data[i], `w${i.toString(16)}${'é'.repeat(i % 3)}`);
  // A lower limit still holds when asked for.
  assert.throws(() => loadNpySync(file, { allowPickle: true, maxMemo: 1000 }), /more than 1000 memo entries/);
});

test.run();

test('tuples and frozensets, as dict keys, set members and values, are written back as tuples and frozensets: numpy reads what it wrote', () => {
  const theirs = join(dir, 'tuples.npy');
  const ours = join(dir, 'tuples-again.npy');
  const made = `[{(1, 2): (3, [4]), frozenset({1}): frozenset({5}), 'k': [1, (2,)], (): ()}, {(1, 'a'), frozenset({2})}, (1, 2), frozenset({3}), {((1, 2), (3,)): 1}, [(), [()]]]`;
  python(`a = np.empty(6, object); a[:] = ${made}; np.save(${JSON.stringify(theirs)}, a, allow_pickle=True)`);
  const read = loadNpySync(theirs, { allowPickle: true });
  // Read, they are the documented Arrays and Sets; saved again, Python gets the same types back.
  assert.ok(Array.isArray(read.data[2]) && read.data[3] instanceof Set);
  assert.ok(isPyTuple(read.data[2]) && !isPyTuple(read.data[5]) && isPyFrozenset(read.data[3]) && !isPyFrozenset(read.data[1]));
  saveNpySync(ours, read);
  const verdict = python(`def same(x, y):
    if type(x) is not type(y): return False
    if isinstance(x, (list, tuple)): return len(x) == len(y) and all(same(p, q) for p, q in zip(x, y))
    if isinstance(x, dict): return list(x) == list(y) and all(same(x[k], y[k]) for k in x)
    return x == y
a = np.load(${JSON.stringify(theirs)}, allow_pickle=True); b = np.load(${JSON.stringify(ours)}, allow_pickle=True)
print(all(same(p, q) for p, q in zip(a, b)), [repr(v) for v in b])`).trim();
  assert.ok(verdict.startsWith('True'), verdict);
  // Made in JavaScript: pyTuple and pyFrozenset say what an Array or a Set is to be.
  const made2 = join(dir, 'tuples-made.npy');
  saveNpySync(made2, new NdArray(parseDescr('|O'), [2], [pyTuple([1, [2]]), new Map([[pyFrozenset(new Set([1])), pyFrozenset(new Set([2]))]])]));
  assert.is(python(`print(repr(list(np.load(${JSON.stringify(made2)}, allow_pickle=True))))`).trim(), '[(1, [2]), {frozenset({1}): frozenset({2})}]');
});
