// The fourth adversarial trial's findings (issue 53) on writers, planners and options: each as the
// case that was wrong. Outputs are read back by the reference (Python's safetensors, numpy).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import fc from 'fast-check';
import * as core from '@npyts/core';
import * as node from '@npyts/core/node';
import * as tfjs from '@npyts/tfjs';
import { pickleCodec } from '@npyts/core/pickle';
import { combineNpzChecksums, encodeNpzPart, encodeSafetensors, planNpzParts } from '@npyts/core';
import { saveNpz, saveNpzSync, saveSafetensors, saveSafetensorsSync } from '@npyts/core/node';
import { python, runCli, scratch } from '../helpers/numpy.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';

const dir = scratch('npyts-round-four-');
const at = (name) => join(dir, name);
const f32 = (...v) => ({ data: new Float32Array(v) });

/** The names and values Python's safetensors reads from `path`, as JSON. */
function safetensorsOf(path) {
  return JSON.parse(
    python(`from safetensors.numpy import load_file
print(json.dumps({k: v.tolist() for k, v in load_file(${JSON.stringify(path)}).items()}))`),
  );
}

test("saveSafetensors of a tensor named '__proto__' writes it in the header: Python's safetensors reads every tensor", async () => {
  const tensors = new Map([
    ['__proto__', f32(1, 2)],
    ['w', f32(3)],
  ]);
  saveSafetensorsSync(at('proto-sync.safetensors'), tensors);
  await saveSafetensors(at('proto.safetensors'), tensors);
  writeFileSync(at('proto-bytes.safetensors'), encodeSafetensors({ ['__proto__']: f32(1, 2), w: f32(3) }));
  for (const name of ['proto-sync.safetensors', 'proto.safetensors', 'proto-bytes.safetensors']) {
    assert.equal(safetensorsOf(at(name)), { ['__proto__']: [1, 2], w: [3] }, name);
  }
});

test('a tensor name, metadata or npz key holding a lone surrogate is refused (BAD_OPTION) before anything is written', async () => {
  for (const bad of ['w\ud800', 'w\udbff', '\udc00x']) {
    assert.is((await npyErrorOf(() => encodeSafetensors(new Map([[bad, f32(1)]])))).code, 'BAD_OPTION');
    assert.is((await npyErrorOf(() => encodeSafetensors({ w: f32(1) }, { metadata: { [bad]: 'x' } }))).code, 'BAD_OPTION');
    assert.is((await npyErrorOf(() => encodeSafetensors({ w: f32(1) }, { metadata: { format: bad } }))).code, 'BAD_OPTION');
    assert.is((await npyErrorOf(() => core.encodeNpz({ [bad]: f32(1) }))).code, 'BAD_OPTION');
    assert.is((await npyErrorOf(() => planNpzParts({ members: [{ key: bad, dtype: '<f4', shape: [1] }] }))).code, 'BAD_OPTION');
  }
  // Two keys that both became 'w\ufffd.npy': one member named twice, one key for numpy.
  const path = at('surrogates.npz');
  const error = await npyErrorOf(() => saveNpzSync(path, { 'w\ud800': f32(1), 'w\udbff': f32(2) }));
  assert.is(error.code, 'BAD_OPTION');
  assert.match(error.message, /\\ud800/);
  assert.is((await npyErrorOf(() => saveNpz(path, { 'w\udbff': f32(2) }))).code, 'BAD_OPTION');
  assert.is(python(`import os; print(os.path.exists(${JSON.stringify(path)}))`).trim(), 'False');
  // A well-formed pair is a name like any other: numpy reads it.
  saveNpzSync(path, { 'w\ud83d\ude00': f32(5) });
  assert.equal(JSON.parse(python(`print(json.dumps({k: v.tolist() for k, v in np.load(${JSON.stringify(path)}).items()}))`)), { 'w\ud83d\ude00': [5] });
});

test("planNpzParts with a member keyed '__proto__' (np.savez writes one) makes an archive numpy reads", () => {
  const plan = planNpzParts({
    members: [
      { key: '__proto__', dtype: '<f4', shape: [2] },
      { key: 'b', dtype: '<f4', shape: [1] },
    ],
  });
  const part = encodeNpzPart(plan, 1, { ['__proto__']: f32(1, 2), b: f32(3) });
  const crcs = combineNpzChecksums(plan, part.checksums);
  assert.equal(Object.keys(crcs), ['__proto__', 'b']);
  writeFileSync(at('proto.npz'), part.bytes(JSON.parse(JSON.stringify(crcs))));
  assert.equal(JSON.parse(python(`print(json.dumps({k: v.tolist() for k, v in np.load(${JSON.stringify(at('proto.npz'))}).items()}))`)), {
    ['__proto__']: [1, 2],
    b: [3],
  });
  // A part's arrays are read by own key: an object without '__proto__' is refused, not read as Object.prototype.
  assert.throws(
    () => encodeNpzPart(plan, 1, { b: f32(3) }),
    (e) => e.code === 'BAD_OPTION' && /'__proto__'/.test(e.message),
  );
});

// ---- A ragged heap shared by two indexes ----

test("the async append looks for the heap's other indexes without blocking the loop (no readdirSync; the engine's list step)", async () => {
  const folder = at('shared-heap-async');
  mkdirSync(folder);
  const a = join(folder, 'a.npy');
  const b = join(folder, 'b.npy');
  node.saveRaggedSync(a, ['one', 'two'], { layout: 'offsets' });
  node.saveRaggedSync(b, ['three'], { heap: 'a.npy.strings' });
  const fs = createRequire(import.meta.url)('node:fs');
  const { syncBuiltinESMExports } = createRequire(import.meta.url)('node:module');
  const real = fs.readdirSync;
  const blocking = [];
  fs.readdirSync = (...args) => {
    blocking.push(String(args[0]));
    throw new Error('a blocking listing in an async append');
  };
  syncBuiltinESMExports();
  let e;
  try {
    e = await npyErrorOf(() => node.appendRagged(a, ['five']));
  } finally {
    fs.readdirSync = real;
    syncBuiltinESMExports();
  }
  assert.equal(blocking, []);
  assert.is(e.code, 'NAME_CLASH', e.message);
  assert.ok(e.message.includes(b), e.message);
});

test('an append through an offsets index whose heap another index shares is refused, and nothing is changed: the other still reads', async () => {
  const folder = at('shared-heap');
  mkdirSync(folder);
  const a = join(folder, 'a.npy');
  const b = join(folder, 'b.npy');
  node.saveRaggedSync(a, ['one', 'two'], { layout: 'offsets' });
  // b's strings go after a's end in a's heap.
  node.saveRaggedSync(b, ['three', 'four'], { heap: 'a.npy.strings' });
  const before = [a, b, join(folder, 'a.npy.strings')].map((p) => readFileSync(p));
  for (const append of [() => node.appendRaggedSync(a, ['five']), () => node.appendRagged(a, ['five'])]) {
    const e = await npyErrorOf(append);
    assert.is(e.code, 'NAME_CLASH');
    assert.ok(e.message.includes(b) && /Nothing was changed/.test(e.message), e.message);
  }
  assert.equal(
    [a, b, join(folder, 'a.npy.strings')].map((p) => readFileSync(p)),
    before,
  );
  const rb = node.openRaggedSync(b);
  assert.equal(rb.slice(0, 2), ['three', 'four']);
  rb.close?.();
  const ra = node.openRaggedSync(a);
  assert.equal(ra.slice(0, 2), ['one', 'two']);
  ra.close?.();
  // A heap of its own still drops rows an interrupted append left (the index owns them).
  const c = join(folder, 'c.npy');
  node.saveRaggedSync(c, ['x'], { layout: 'offsets' });
  node.appendNpySync(join(folder, 'c.npy.strings'), { data: new TextEncoder().encode('lost'), shape: [4], dtype: '|u1' });
  node.appendRaggedSync(c, ['y']);
  const rc = node.openRaggedSync(c);
  assert.equal(rc.slice(0, 2), ['x', 'y']);
  rc.close?.();
});

// ---- CSV with lone CR line ends ----

/** CSV text whose line end `end` starts at the last byte of the CLI's first 1 MiB read. */
function atEdge(end) {
  const edge = (1 << 20) - 1;
  let text = '';
  for (let i = 0; text.length < edge - 64; i++) text += `${i},${i / 4}${i % 2 ? '\r' : '\r\n'}`;
  text += `${' '.repeat(edge - text.length - 3)}7,8`;
  return `${text}${end}9,10\r11,12\n`;
}

test('a CSV whose lines end in lone CRs (old Mac text), or mix CR, LF and CRLF, converts as np.loadtxt reads it, across read pieces', async () => {
  const texts = {
    'cr.csv': '1,2\r3,4\r\r5,6\r',
    'mixed-ends.csv': '1,2\r\n3,4\r5,6\n7,8\r\r\n9,10',
    // The CLI reads text in pieces of 1 MiB: a CRLF, and a lone CR, cut by a piece's edge.
    'edge-crlf.csv': atEdge('\r\n'),
    'edge-cr.csv': atEdge('\r'),
  };
  for (const [name, text] of Object.entries(texts)) {
    writeFileSync(at(name), text);
    const out = at(name.replace('.csv', '.npy'));
    const r = await runCli(['convert', at(name), out]);
    assert.is(r.code, 0, `${name}: ${r.stderr}`);
    assert.is(
      python(
        `a = np.load(${JSON.stringify(out)}); b = np.loadtxt(${JSON.stringify(at(name))}, delimiter=','); print(a.shape == b.shape and np.array_equal(a, b))`,
      ).trim(),
      'True',
      name,
    );
  }
  // Errors still name the right line (as Python's universal newlines count them), past a CRLF cut by a piece's edge too.
  for (const [name, text] of [
    ['cr-bad.csv', '1,2\r3,4\r5\r'],
    ['edge-bad.csv', `${atEdge('\r\n')}13\n`],
  ]) {
    writeFileSync(at(name), text);
    const line = python(`print(len(open(${JSON.stringify(at(name))}, newline=None).read().splitlines()))`).trim();
    const bad = await runCli(['convert', at(name), at('bad.npy')]);
    assert.is(bad.code, 1);
    assert.ok(bad.stderr.includes(`${name}:${line}`), `${line}: ${bad.stderr}`);
  }
});

// ---- A dict keyed by frozensets, read and saved back ----

test('a dict keyed by frozensets (and a set of frozensets), read from numpy and saved back, loads in numpy as it was', () => {
  const from = at('frozen.npy');
  const back = at('frozen-back.npy');
  python(`o = np.empty(2, object)
o[0] = {frozenset({1, 2}): 'a', frozenset(): 'b', (frozenset({3}), 4): 'c'}
o[1] = {frozenset({frozenset({5})}), 6}
np.save(${JSON.stringify(from)}, o, allow_pickle=True)`);
  const a = node.loadNpySync(from, { pickle: pickleCodec });
  node.saveNpySync(back, a, { pickle: pickleCodec });
  assert.is(
    python(`a = np.load(${JSON.stringify(from)}, allow_pickle=True); b = np.load(${JSON.stringify(back)}, allow_pickle=True)
print(a[0] == b[0] and a[1] == b[1], type(next(iter(b[0]))).__name__)`).trim(),
    'True frozenset',
  );
});

// ---- Options that switch checks off: every numeric option of every public function ----

/** What each numeric option takes; the completeness test below finds every one the public types declare. */
const KIND = {
  maxHeaderBytes: 'size',
  maxDepth: 'amount',
  maxMemo: 'amount',
  maxMarks: 'amount',
  maxBytes: 'amount',
  requestBytes: 'size',
  concurrency: 'size',
  maxInFlight: 'size',
  wholeBodyBytes: 'limit',
  timeoutMs: 'milliseconds',
  maxGap: 'amount',
  firstRequest: 'size',
  rangesPerRequest: 'size',
  blockBytes: 'size',
  'cache.maxBytes': 'amount',
  minPartBytes: 'amount',
  maxPartBytes: 'size',
  maxParts: 'size',
  maxObjectBytes: 'size',
  partSize: 'size',
  parts: 'size',
  rows: 'amount',
  objectSize: 'amount',
  level: 'level',
  chunkBytes: 'size',
  rtol: 'tolerance',
  atol: 'tolerance',
  epsilon: 'tolerance',
  alignment: 'alignment',
  scale: 'factor',
};
/** Values each kind refuses. */
const BAD = {
  size: [Number.NaN, Number.POSITIVE_INFINITY, -1, 0, 1.5, '8'],
  amount: [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -1, 1.5, null],
  level: [Number.NaN, Number.POSITIVE_INFINITY, -1, 1.5, 10],
  tolerance: [Number.NaN, Number.POSITIVE_INFINITY, -1],
  // A limit lifted on purpose takes Infinity ("no limit"); nothing else that is not a whole number.
  limit: [Number.NaN, Number.NEGATIVE_INFINITY, -1, 1.5, null],
  milliseconds: [Number.NaN, Number.NEGATIVE_INFINITY, -1, 0, '30'],
  // A GGUF's alignment: a power of two that a uint32 holds.
  alignment: [Number.NaN, Number.POSITIVE_INFINITY, -1, 0, 1.5, 3, 2 ** 32, '32'],
  // A factor of any sign (LoRA's scale), but a finite number.
  factor: [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, '1', null],
};

const READ = ['maxHeaderBytes', 'maxDepth', 'maxMemo', 'maxMarks', 'maxBytes'];
const HTTP = ['requestBytes', 'concurrency', 'maxInFlight', 'wholeBodyBytes', 'timeoutMs'];
const URL_OPTIONS = [...READ, ...HTTP, 'maxGap', 'firstRequest', 'rangesPerRequest', 'cache.maxBytes'];
const LIMITS = ['minPartBytes', 'maxPartBytes', 'maxParts', 'maxObjectBytes'];

const npyBytes = core.encodeNpy(f32(1, 2));
const npzBytes = core.encodeNpz({ a: f32(1, 2) });
const stBytes = encodeSafetensors({ a: f32(1, 2) });
const npyPath = at('options.npy');
const npzPath = at('options.npz');
const stPath = at('options.safetensors');
writeFileSync(npyPath, npyBytes);
writeFileSync(npzPath, npzBytes);
writeFileSync(stPath, stBytes);
// A port nothing listens on: a URL function must refuse its options before any request.
const url = 'http://127.0.0.1:9/nothing.npy';
const header = core.readHeader(npyBytes);
const members = [{ key: 'a', dtype: '<f4', shape: [4] }];

/** Each public function that takes numeric options, called with `o`, and the options it takes. */
const FUNCTIONS = {
  decodeNpy: [(o) => core.decodeNpy(npyBytes, o), READ],
  decodeNpyWithHeader: [(o) => core.decodeNpyWithHeader(npyBytes, o), READ],
  readHeader: [(o) => core.readHeader(npyBytes, o), ['maxHeaderBytes']],
  decodeNpz: [(o) => core.decodeNpz(npzBytes, o), READ],
  openNpz: [(o) => core.openNpz(npzBytes, o), [...READ, ...HTTP]],
  'openNpz (url)': [(o) => core.openNpz(url, o), [...READ, ...HTTP]],
  openNpy: [(o) => core.openNpy(npyBytes, o), URL_OPTIONS],
  'openNpy (url)': [(o) => core.openNpy(url, o), URL_OPTIONS],
  openNpySource: [(o) => core.openNpySource(core.bytesSource(npyBytes), o), READ],
  openNpyUrl: [(o) => core.openNpyUrl(url, o), URL_OPTIONS],
  openRaggedUrl: [(o) => core.openRaggedUrl(url, o), URL_OPTIONS],
  urlSource: [(o) => core.urlSource(url, o), HTTP],
  openWeights: [(o) => core.openWeights(stBytes, o), [...READ, ...HTTP]],
  openSafetensors: [(o) => core.openSafetensors(stBytes, o), HTTP],
  withByteCache: [(o) => core.withByteCache(core.bytesSource(npyBytes), o), ['maxBytes', 'blockBytes']],
  planParts: [(o) => core.planParts({ dtype: '<f4', shape: [4], ...o }), [...LIMITS, 'parts', 'partSize']],
  planAppendParts: [(o) => core.planAppendParts(header, { rows: 1, ...o }), [...LIMITS, 'rows', 'partSize', 'objectSize']],
  planNpzParts: [(o) => planNpzParts({ members, ...o }), [...LIMITS, 'partSize']],
  encodeNpz: [(o) => core.encodeNpz({ a: f32(1) }, o), ['level']],
  loadNpySync: [(o) => node.loadNpySync(npyPath, o), READ],
  loadNpy: [(o) => node.loadNpy(npyPath, o), READ],
  openNpyFileSync: [(o) => node.openNpyFileSync(npyPath, o), READ],
  openNpyFile: [(o) => node.openNpyFile(npyPath, o), READ],
  loadNpzSync: [(o) => node.loadNpzSync(npzPath, o), READ],
  loadNpz: [(o) => node.loadNpz(npzPath, o), READ],
  'node openNpz': [(o) => node.openNpz(npzPath, o), READ],
  openNpzSync: [(o) => node.openNpzSync(npzPath, o), READ],
  'node openWeights': [(o) => node.openWeights(stPath, o), [...READ, ...HTTP]],
  loadWeights: [(o) => node.loadWeights(stPath, o), [...READ, ...HTTP]],
  'node openSafetensors': [(o) => node.openSafetensors(stPath, o), HTTP],
  saveNpzSync: [(o) => saveNpzSync(at('options-out.npz'), { a: f32(1) }, o), ['level']],
  saveNpz: [(o) => saveNpz(at('options-out.npz'), { a: f32(1) }, o), ['level']],
  loadTensors: [(o) => tfjs.loadTensors(stBytes, o), [...READ, ...HTTP]],
  // The model is never reached: the options are refused before the source is opened.
  checkModel: [(o) => tfjs.checkModel(null, npzBytes, o), ['rtol', 'atol', ...READ, ...HTTP]],
  assignWeights: [(o) => tfjs.assignWeights(null, npzBytes, o), ['rtol', 'atol', 'epsilon', ...READ, ...HTTP]],
  planWeights: [(o) => tfjs.planWeights(null, npzBytes, o), ['epsilon', ...READ, ...HTTP]],
  saveWeights: [(o) => tfjs.saveWeights([], undefined, o), ['epsilon', 'level']],
  npzHandler: [(o) => tfjs.npzHandler(npzBytes, o), ['epsilon', 'level', ...READ, ...HTTP]],
  'node referencesOf': [(o) => node.referencesOf(npyPath, o), ['chunkBytes', ...READ, ...HTTP]],
  encodeGguf: [(o) => core.encodeGguf({ a: f32(1, 2) }, o), ['alignment']],
  // The adapter is never reached: the options are refused before anything is opened.
  mergeLora: [(o) => node.mergeLora(stPath, at('no-adapter'), o), ['scale']],
};

/** `{ name: value }`, or `{ cache: { maxBytes: value } }` for a nested one. */
function optionOf(name, value) {
  const [outer, inner] = name.split('.');
  return inner ? { [outer]: { [inner]: value } } : { [outer]: value };
}

test('every numeric option of every public function refuses NaN, ±Infinity, negatives and fractions with BAD_OPTION (fast-check)', async () => {
  const cases = Object.entries(FUNCTIONS).flatMap(([fn, [call, names]]) => names.map((name) => ({ fn, call, name })));
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...cases).chain((c) => fc.tuple(fc.constant(c), fc.constantFrom(...BAD[KIND[c.name]]))),
      async ([{ fn, call, name }, value]) => {
        const e = await npyErrorOf(() => call(optionOf(name, value)));
        if (e.code !== 'BAD_OPTION') throw new Error(`${fn}({ ${name}: ${String(value)} }) ended in ${e.code}: ${e.message}`);
        if (!e.message.includes(name.split('.').at(-1))) throw new Error(`${fn}: the message does not name ${name}: ${e.message}`);
      },
    ),
    { numRuns: 600 },
  );
  // And the cases of the issue, each once.
  for (const [call, o] of [
    [() => core.planParts({ dtype: '<f4', shape: [67108864], maxPartBytes: Number.NaN }), 'maxPartBytes'],
    [() => core.planParts({ dtype: '<f4', shape: [67108864], maxParts: Number.NaN }), 'maxParts'],
    [() => planNpzParts({ members, maxPartBytes: Number.NaN }), 'maxPartBytes'],
  ]) {
    const e = await npyErrorOf(call);
    assert.is(e.code, 'BAD_OPTION');
    assert.match(e.message, o);
  }
});

test('good values are taken: integers in range, and tolerances that are fractions', async () => {
  core.decodeNpy(npyBytes, { maxHeaderBytes: 1 << 20, maxDepth: 0, maxMemo: 0, maxMarks: 0, maxBytes: 0 });
  core.planParts({ dtype: '<f4', shape: [4], minPartBytes: 0, maxPartBytes: 1024, maxParts: 1, maxObjectBytes: 1024, parts: 1 });
  core.encodeNpz({ a: f32(1) }, { level: 0 });
  tfjs.npzHandler(npzBytes, { epsilon: { bn: 1e-3 }, level: 9 });
  assert.is((await npyErrorOf(() => tfjs.npzHandler(npzBytes, { epsilon: { bn: Number.NaN } }))).code, 'BAD_OPTION');
  (await core.openNpy(npyBytes, { maxGap: 0, firstRequest: 64, rangesPerRequest: 1, cache: { maxBytes: 0 }, concurrency: 1 })).close?.();
  // Infinity lifts a limit where the option says it may: a whole answer of any size, no deadline.
  await core.openWeights(stBytes, { wholeBodyBytes: Number.POSITIVE_INFINITY, timeoutMs: Number.POSITIVE_INFINITY });
});

test('the options above are every numeric option the public types declare', () => {
  const here = dirname(fileURLToPath(import.meta.url));
  const root = join(here, '..', '..');
  const ts = createRequire(import.meta.url)('typescript');
  const entries = ['core/dist/index.d.ts', 'core/dist/node.d.ts', 'tfjs-adapter/dist/index.d.ts', 'stdlib-adapter/dist/index.d.ts'].map((e) =>
    join(root, 'packages', e),
  );
  const program = ts.createProgram(entries, {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
  });
  const checker = program.getTypeChecker();
  const found = new Set();
  const numeric = (type, prefix) => {
    for (const p of checker.getPropertiesOfType(type)) {
      const t = checker.getNonNullableType(checker.getTypeOfSymbol(p));
      const text = checker.typeToString(t);
      if (/^number( \| Readonly<Record<string, number>>)?$/.test(text)) found.add(prefix + p.name);
      else if (/\bnumber\b/.test(text) && !/\[\]|=>/.test(text) && t.getProperties().length) numeric(t, `${prefix}${p.name}.`);
    }
  };
  for (const entry of entries) {
    for (let s of checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(entry)))) {
      if (s.flags & ts.SymbolFlags.Alias) s = checker.getAliasedSymbol(s);
      if (/Options/.test(s.name) && s.flags & (ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias)) numeric(checker.getDeclaredTypeOfSymbol(s), '');
    }
  }
  assert.ok(found.has('maxPartBytes') && found.has('cache.maxBytes'), [...found].join(', '));
  const named = new Set(Object.values(FUNCTIONS).flatMap(([, names]) => names));
  assert.equal(
    [...found].filter((n) => !(n in KIND) || !named.has(n)),
    [],
    'a numeric option without a case here',
  );
});

test.run();
