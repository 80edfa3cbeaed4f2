// Property-based fuzzing (fast-check, fixed seed, bounded budget) of everything that reads untrusted
// bytes: the header parser, the descr algebra, the zip reader and the unpickler. The only exception
// ever thrown is NpyError, and every case finishes within a time bound. Descrs that parse are
// checked against numpy: it accepts exactly the descrs npyts accepts, with the same itemsize.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeNpy, decodeNpz, encodeNpz, fflateCodec, parseDescr, readHeader, NpyError } from '@npyts/core';
import { pythonJSON } from '@npyts/core/plumbing';
import { unpickle, pickleCodec } from '@npyts/core/pickle';
import { zlibCodec } from '@npyts/core/node';
import { python, scratch } from '../helpers/numpy.mjs';
import { cpuMs } from '../helpers/work.mjs';

const SEED = 20261122;
/**
 * A case taking more CPU time than this is a failure: inputs are small, so anything slower is
 * blow-up. CPU time, not wall time: busy neighbours on the machine slow the clock, not the work.
 */
const CASE_MS = 2000;
const dir = scratch('npyts-fuzz-');

/** Run `fn`; it may return or throw an NpyError, nothing else, and must finish within CASE_MS. */
function clean(fn, what) {
  const t = cpuMs();
  try {
    fn();
  } catch (e) {
    if (!(e instanceof NpyError)) throw new Error(`${what}: threw ${e?.constructor?.name}: ${e?.message}`);
  }
  const ms = cpuMs() - t;
  if (ms > CASE_MS) throw new Error(`${what}: took ${ms.toFixed(0)} ms`);
}

const settings = (numRuns) => ({ seed: SEED, numRuns, endOnFailure: true });

/** Byte-level mutations of a valid input: flips, truncation, insertion, repetition of a slice. */
function mutated(bytes) {
  const len = bytes.length;
  return fc
    .array(
      fc.oneof(
        fc.record({ kind: fc.constant('flip'), at: fc.nat(len - 1), value: fc.nat(255) }),
        fc.record({ kind: fc.constant('cut'), at: fc.nat(len) }),
        fc.record({ kind: fc.constant('insert'), at: fc.nat(len), data: fc.uint8Array({ maxLength: 16 }) }),
        fc.record({ kind: fc.constant('repeat'), at: fc.nat(len - 1), span: fc.integer({ min: 1, max: 64 }), times: fc.integer({ min: 1, max: 64 }) }),
      ),
      { minLength: 1, maxLength: 4 },
    )
    .map((edits) => {
      let b = Uint8Array.from(bytes);
      for (const e of edits) {
        const at = Math.min(e.at, b.length);
        if (e.kind === 'flip' && at < b.length) b[at] = e.value;
        else if (e.kind === 'cut') b = b.slice(0, at);
        else if (e.kind === 'insert') b = concat(b.subarray(0, at), e.data, b.subarray(at));
        else if (e.kind === 'repeat') {
          const piece = b.subarray(at, at + e.span);
          b = concat(b.subarray(0, at), ...Array(e.times).fill(piece), b.subarray(at));
        }
      }
      return b;
    });
}

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

const seeds = JSON.parse(
  python(`
import pickle, zipfile, warnings
warnings.simplefilter('ignore')
out = {}
def save(a, **kw):
    b = io.BytesIO(); np.save(b, a, **kw); return b.getvalue().hex()
out['npy'] = [save(np.arange(6, dtype='<f4').reshape(2, 3)), save(np.zeros(2, dtype=[('a', '<i4'), ('b', [('c', '>f8'), ('d', '|S3')]), ('e', '<u2', (2, 3))])),
              save(np.array(['ab', 'c'], dtype='<U2')), save(np.asfortranarray(np.arange(6, dtype='>i8').reshape(2, 3))),
              save(np.array(['2020-01-01'], dtype='<M8[D]')), save(np.zeros(3, dtype={'names': ['a', 'b'], 'formats': ['i1', 'i4'], 'offsets': [0, 4], 'titles': ['t', None]}))]
objs = np.empty(4, dtype=object); objs[:] = [1, 'x', {'k': [1.5, None]}, (2, b'y')]
out['pickle'] = [save(objs, allow_pickle=True)] + [pickle.dumps([1, 'a', {'b': (2.5, None, True)}, {3, 4}, b'z', 2**70], protocol=p).hex() for p in range(6)]
zs = []
for compress in (False, True):
    b = io.BytesIO()
    (np.savez_compressed if compress else np.savez)(b, a=np.arange(50), b=np.ones((3, 3), dtype='<f8'))
    zs.append(b.getvalue().hex())
out['npz'] = zs
print(json.dumps(out))`),
);
const hex = (h) => Uint8Array.from(Buffer.from(h, 'hex'));

test('fuzzed .npy files (headers and data): a value or an NpyError, quickly', () => {
  for (const seed of seeds.npy.map(hex)) {
    fc.assert(
      fc.property(mutated(seed), (bytes) => {
        clean(() => decodeNpy(bytes), 'decodeNpy');
        clean(() => readHeader(bytes), 'readHeader');
      }),
      settings(500),
    );
  }
});

test('random header texts (Python literal fragments): a header or an NpyError, quickly', () => {
  const token = fc.constantFrom(
    "'descr'",
    "'fortran_order'",
    "'shape'",
    "'<f4'",
    "'|S0'",
    "'<U0'",
    "'V'",
    '(',
    ')',
    '[',
    ']',
    '{',
    '}',
    ',',
    ':',
    'True',
    'False',
    'None',
    '0',
    '1',
    '-1',
    '2.0',
    '10L',
    '1e999',
    "u'x'",
    "'\\x00'",
    "'\\u1234'",
    '#',
    '\\\n',
    ' ',
    "('a', '<i4')",
    "(('t', 'n'), '<f8', (2,))",
    "''",
  );
  const text = fc.array(token, { maxLength: 60 }).map((t) => t.join(''));
  const headerOf = (s) => {
    const body = new TextEncoder().encode(s + '\n');
    return concat(Uint8Array.of(0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 3, 0), new Uint8Array(new Uint32Array([body.length]).buffer), body);
  };
  fc.assert(
    fc.property(text, (s) => {
      clean(() => readHeader(headerOf(`{'descr': ${s}, 'fortran_order': False, 'shape': (1,), }`)), 'descr text');
      clean(() => readHeader(headerOf(s)), 'header text');
    }),
    settings(3000),
  );
});

/** Descrs as numpy writes them (JSON form): type strings good and bad, records with titles, padding, subarrays. */
const descrArb = fc.letrec((tie) => ({
  scalar: fc.constantFrom(
    '<f4',
    '>f8',
    '|b1',
    '<i8',
    '|u1',
    '<c16',
    '<f2',
    '|S5',
    '|S0',
    '<U3',
    '<U0',
    '|V4',
    '|V0',
    '|O',
    '<M8[ns]',
    '>m8[2s]',
    '<M8',
    '<M8[2147483648s]',
    'f',
    'float64',
    'i4',
    '<f3',
    '|q9',
    'zz',
    '',
  ),
  name: fc.constantFrom('a', 'b', 'c', '', 'é', '__proto__', 'x y'),
  field: fc
    .tuple(
      fc.oneof(tie('name'), fc.tuple(fc.constantFrom('title', 'T'), tie('name'))),
      fc.oneof({ depthSize: 'small', withCrossShrink: true }, tie('scalar'), tie('record')),
      fc.option(fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 3 }), { nil: undefined }),
    )
    .map(([n, d, s]) => (s === undefined ? [n, d] : [n, d, s])),
  record: fc.array(tie('field'), { maxLength: 4 }),
  descr: fc.oneof(tie('scalar'), tie('record')),
})).descr;

test("random descrs: npyts accepts exactly what numpy accepts, with numpy's itemsize", () => {
  const samples = fc.sample(descrArb, { seed: SEED, numRuns: 400 });
  const ours = samples.map((d) => {
    let r;
    clean(() => {
      r = parseDescr(d).itemsize;
    }, JSON.stringify(d));
    return r ?? null;
  });
  const file = join(dir, 'descrs.json');
  writeFileSync(file, JSON.stringify(samples));
  // numpy's verdict through np.lib.format.descr_to_dtype, as np.load applies it to a header.
  const theirs = JSON.parse(
    python(`
import warnings; warnings.simplefilter('ignore')
def py(d):
    if isinstance(d, str): return d
    return [tuple([tuple(f[0]) if isinstance(f[0], list) else f[0], py(f[1])] + ([tuple(f[2])] if len(f) == 3 else [])) for f in d]
out = []
for d in json.load(open('${file}')):
    try: out.append(np.lib.format.descr_to_dtype(py(d)).itemsize)
    except Exception: out.append(None)
print(json.dumps(out))`),
  );
  const disagree = samples.map((d, i) => [d, ours[i], theirs[i]]).filter(([, a, b]) => a !== b);
  assert.equal(disagree, [], `${disagree.length} of ${samples.length} disagree, e.g. ${JSON.stringify(disagree.slice(0, 3))}`);
});

test('fuzzed .npz archives, stored and deflated, through both codecs: members or an NpyError, quickly', () => {
  for (const seed of seeds.npz.map(hex)) {
    fc.assert(
      fc.property(mutated(seed), (bytes) => {
        for (const codec of [fflateCodec, zlibCodec]) {
          clean(() => {
            const z = decodeNpz(bytes, { codec });
            for (const n of z.names) {
              z.headerSync(n);
              z.getSync(n);
            }
          }, 'decodeNpz');
        }
      }),
      settings(400),
    );
  }
  // Our own writer's archives too (zip64-free, with data of every member checked).
  const ours = encodeNpz({ x: { data: new Float32Array(10) } }, { compress: true });
  fc.assert(
    fc.property(mutated(ours), (bytes) =>
      clean(() => {
        const z = decodeNpz(bytes);
        for (const n of z.names) z.getSync(n);
      }, 'own npz'),
    ),
    settings(300),
  );
});

test('fuzzed pickles and random opcode streams: a value or an NpyError, quickly; their JSON too', () => {
  const inputs = seeds.pickle.map(hex);
  const objectNpy = inputs.shift();
  const opcodes = [
    0x80, 0x95, 0x2e, 0x28, 0x30, 0x31, 0x32, 0x4e, 0x88, 0x89, 0x4b, 0x4d, 0x4a, 0x8a, 0x8b, 0x47, 0x58, 0x8c, 0x42, 0x43, 0x5d, 0x29, 0x7d, 0x8f, 0x6c, 0x74,
    0x85, 0x86, 0x87, 0x64, 0x61, 0x65, 0x73, 0x75, 0x90, 0x91, 0x93, 0x52, 0x81, 0x62, 0x94, 0x71, 0x68, 0x6a, 0x72,
  ];
  const stream = fc.array(fc.oneof(fc.constantFrom(...opcodes), fc.nat(255)), { maxLength: 200 }).map((a) => Uint8Array.from(a));
  const run = (bytes) => clean(() => pythonJSON(unpickle(bytes)), 'unpickle');
  fc.assert(fc.property(stream, run), settings(3000));
  for (const p of inputs) fc.assert(fc.property(mutated(p), run), settings(300));
  fc.assert(
    fc.property(mutated(objectNpy), (bytes) => clean(() => pythonJSON(decodeNpy(bytes, { pickle: pickleCodec }).toList()), 'object npy')),
    settings(500),
  );
});

test('fuzzed ragged indexes and heaps of every layout: elements or an NpyError, quickly', async () => {
  const { saveRaggedSync, saveReferencesSync, openRaggedSync } = await import('@npyts/core/node');
  const { arrayFromValues } = await import('@npyts/core');
  const { readFileSync, readdirSync } = await import('node:fs');
  const made = [
    ['ranges.npy', (p) => saveRaggedSync(p, ['a', 'bc', '', 'def'])],
    ['offsets.npy', (p) => saveRaggedSync(p, [arrayFromValues([1, 2], '<i4'), arrayFromValues([3], '<i4')], { layout: 'offsets' })],
    ['zero.npy', (p) => saveRaggedSync(p, ['x', 'yz'], { layout: 'zero-terminated', shape: [1, 2] })],
    ['nested.npy', (p) => saveRaggedSync(p, [[arrayFromValues([1], '<f8')], []], { layout: 'offsets' })],
    [
      'refs.npy',
      (p) =>
        saveReferencesSync(
          p,
          { data: new Int32Array([1, 0, 1]), shape: [3] },
          arrayFromValues(
            [
              [1, 2],
              [3, 4],
            ],
            '<i2',
          ),
        ),
    ],
  ];
  for (const [name, save] of made) {
    const index = join(dir, name);
    save(index);
    const files = readdirSync(dir)
      .filter((n) => n.startsWith(name))
      .map((n) => [join(dir, n), readFileSync(join(dir, n))]);
    const readAll = () => {
      const r = openRaggedSync(index);
      try {
        r.slice(0, r.length);
        for (let i = 0; i < Math.min(r.length, 4); i++) r.shape(i);
      } finally {
        r.close();
      }
    };
    for (const [file, original] of files) {
      fc.assert(
        fc.property(mutated(original), (bytes) => {
          writeFileSync(file, bytes);
          try {
            clean(readAll, `ragged ${name}, ${file} mutated`);
          } finally {
            writeFileSync(file, original);
          }
        }),
        settings(150),
      );
    }
  }
});

test('random model.json documents in an archive: artifacts or an NpyError from npzHandler, quickly', async () => {
  const { npzHandler } = await import('@npyts/tfjs');
  const spec = fc.record(
    {
      name: fc.oneof(fc.string(), fc.constant('w'), fc.anything()),
      shape: fc.oneof(fc.array(fc.integer({ min: -2, max: 4 })), fc.anything()),
      dtype: fc.oneof(fc.constantFrom('float32', 'int32', 'float64'), fc.anything()),
    },
    { requiredKeys: [] },
  );
  const doc = fc.record(
    {
      modelTopology: fc.oneof(fc.object(), fc.anything()),
      weightSpecs: fc.oneof(fc.array(fc.oneof(spec, fc.anything()), { maxLength: 4 }), fc.anything()),
      format: fc.oneof(fc.string(), fc.anything()),
      trainingConfig: fc.anything(),
    },
    { requiredKeys: [] },
  );
  const member = fc.oneof(
    doc.map((d) => new TextEncoder().encode(JSON.stringify(d))),
    fc.uint8Array({ maxLength: 64 }),
    fc.jsonValue().map((v) => new TextEncoder().encode(JSON.stringify(v))),
  );

  let loads = 0;
  await fc.assert(
    fc.asyncProperty(member, async (json) => {
      const bytes = encodeNpz({ w: { data: new Float32Array(4), shape: [2, 2] } }, { files: { 'model.json': json } });
      const t = cpuMs();
      try {
        await npzHandler(bytes).load();
        loads++;
      } catch (e) {
        if (!(e instanceof NpyError)) throw new Error(`npzHandler: threw ${e?.constructor?.name}: ${e?.message}`);
      }
      if (cpuMs() - t > CASE_MS) throw new Error('npzHandler: too slow');
    }),
    settings(400),
  );
  assert.ok(loads > 0, 'no document loaded at all');
});

test('random CSV text through convert: an array numpy also reads, or one error line, quickly', async () => {
  const { runCli } = await import('../helpers/numpy.mjs');
  const cell = fc.constantFrom('1', '-2', '3.5', '.5', '5.', '1e3', '1e', '0x10', 'nan', '-inf', 'x', '', ' 7 ', '#', '# c', '1_0', 'é');
  const line = fc.array(cell, { minLength: 1, maxLength: 4 }).map((c) => c.join(','));
  const text = fc.array(line, { maxLength: 6 }).map((l) => `${l.join('\n')}\n`);
  const file = join(dir, 'fuzz.csv');
  const out = join(dir, 'fuzz.npy');
  let agreed = 0;
  await fc.assert(
    fc.asyncProperty(text, fc.constantFrom('<f8', '<i8'), async (t, dtype) => {
      writeFileSync(file, t);
      const r = await runCli(['convert', file, out, '--dtype', dtype]);
      if (r.code !== 0) {
        if (!/^npyts: error: [^\n]+\n$/.test(r.stderr) || /TypeError|RangeError|at \S+ \(/.test(r.stderr)) throw new Error(`convert: ${r.stderr}`);
        return;
      }
      agreed++;
    }),
    settings(150),
  );
  assert.ok(agreed > 0);
});

test.run();
