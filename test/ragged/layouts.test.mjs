// numpy#25374 in full: compact offsets, zero-terminated strings, references, N-d indexes, option-1
// heap names, appends that widen or are killed midway, HTTP readers, and StringDType — each checked
// against numpy and against the ragged guide's numpy reader, run as written.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { arrayFromValues, arrayToJSON, openRaggedUrl, NdArray } from '@npyts/core';
import {
  appendNpySync,
  appendRagged,
  appendRaggedSync,
  loadNpySync,
  openRagged,
  openRaggedRecordsSync,
  openRaggedSync,
  readNpyHeaderSync,
  regionStats,
  saveRagged,
  saveRaggedSync,
  saveReferences,
  saveReferencesSync,
} from '@npyts/core/node';
import { python, runCli, runThenKill, scratch } from '../helpers/numpy.mjs';
import fc from 'fast-check';
import { startNginx } from '../helpers/nginx.mjs';
import { blockWith } from '../packages/guide-blocks.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = scratch('npyts-layouts-');
writeFileSync(join(dir, 'ragged_snippet.py'), blockWith('docs/ragged.md', 'python', 'def ragged_element'));
const withSnippet = (code) =>
  JSON.parse(
    python(`import sys
sys.path.insert(0, ${JSON.stringify(dir)})
from ragged_snippet import ragged_element, ragged_length
sys.path.insert(0, ${JSON.stringify(join(root, 'test', 'helpers'))})
from npyfixtures import to_json
def js(v):
    return v if isinstance(v, str) else [js(x) for x in v] if isinstance(v, list) else {k: js(x) for k, x in v.items()} if isinstance(v, dict) else to_json(np.asarray(v))
${code}`),
  );
/** Every element as the ragged guide's numpy reader reads it with plain numpy. */
const viaSnippet = (file) =>
  withSnippet(`print(json.dumps([js(ragged_element(${JSON.stringify(file)}, i)) for i in range(ragged_length(${JSON.stringify(file)}))]))`);
const json = (v) =>
  typeof v !== 'object'
    ? v
    : v instanceof NdArray
      ? arrayToJSON(v)
      : Array.isArray(v)
        ? v.map(json)
        : Object.fromEntries(Object.entries(v).map(([k, x]) => [k, json(x)]));
/** The first field's dtype of an index, as numpy names it. */
const wordDescr = (file) => python(`a = np.load(${JSON.stringify(file)}); print(a.dtype[0].str)`).trim();
const f = (name) => join(dir, name);

test("offsets: one word per element plus one, in the smallest width; appends widen u1 → u2 → u4; numpy's snippet agrees", async () => {
  const file = f('words.npy');
  const words = ['a', 'bc', '', 'é整😀'];
  saveRaggedSync(file, words, { layout: 'offsets' });
  assert.is(wordDescr(file), '|u1');
  assert.equal(
    python(`a = np.load(${JSON.stringify(file)}); print(a.shape, a['offsets'].tolist())`).trim(),
    `(5,) [0, 1, 3, 3, ${3 + new TextEncoder().encode(words[3]).length}]`,
  );
  assert.equal(viaSnippet(file), words);
  const more = Array.from({ length: 300 }, (_, i) => `m${i}`);
  appendRaggedSync(file, more);
  assert.is(wordDescr(file), '<u2');
  await appendRagged(file, ['x'.repeat(70000)]);
  assert.is(wordDescr(file), '<u4');
  const all = [...words, ...more, 'x'.repeat(70000)];
  assert.equal(viaSnippet(file), all);
  const r = await openRagged(file);
  assert.is(r.layout, 'offsets');
  assert.is(r.length, all.length);
  assert.equal(await r.slice(0, all.length), all);
  assert.is(r.raggedShape, `(${all.length}, *)`);
  await r.close();
  // Arrays, and two levels, with offsets.
  const seqs = [
    arrayFromValues(
      [
        [1, 2],
        [3, 4],
      ],
      '<f4',
    ),
    arrayFromValues([[5, 6]], '<f4'),
    arrayFromValues([], '<f4', { shape: [0, 2] }),
  ];
  await saveRagged(f('seqs.npy'), seqs, { layout: 'offsets' });
  assert.equal(viaSnippet(f('seqs.npy')), seqs.map(arrayToJSON));
  const nested = [[arrayFromValues([1, 2], '<i2')], [], [arrayFromValues([3], '<i2'), arrayFromValues([4, 5], '<i2')]];
  saveRaggedSync(f('nested_off.npy'), nested, { layout: 'offsets' });
  assert.equal(viaSnippet(f('nested_off.npy')), json(nested));
  assert.equal(json(openRaggedSync(f('nested_off.npy')).slice(0, 3)), json(nested));
  // An offsets index owns its heap.
  try {
    saveRaggedSync(f('other.npy'), ['z'], { heap: 'words.npy.strings', layout: 'offsets' });
    assert.unreachable('an offsets index over an existing heap was written');
  } catch (e) {
    assert.is(e.code, 'NAME_CLASH', String(e));
    assert.match(e.message, /owns its heap/);
  }
});

test('offsets: heap rows left by an interrupted append are dropped by the next append', () => {
  const file = f('crashed.npy');
  saveRaggedSync(file, ['one', 'two'], { layout: 'offsets' });
  // What a crash between the heap's append and the index's leaves: rows no offset points at.
  appendNpySync(f('crashed.npy.strings'), { data: new TextEncoder().encode('lost'), shape: [4], dtype: '|u1' });
  appendRaggedSync(file, ['three']);
  assert.equal(viaSnippet(file), ['one', 'two', 'three']);
  assert.equal(readNpyHeaderSync(f('crashed.npy.strings')).shape, [11]);
});

test("zero-terminated strings: one start each, NUL after each string; U+0000 refused; long strings; appends widen; numpy's snippet agrees", async () => {
  const file = f('tags.npy');
  const tags = ['', 'cat', 'é整😀', 'y'.repeat(10000), 'z'];
  saveRaggedSync(file, tags, { layout: 'zero-terminated' });
  assert.is(wordDescr(file), '<u2');
  assert.is(
    python(`h = np.load(${JSON.stringify(f('tags.npy.strings'))}); print(int((h == 0).sum()), len(h))`).trim(),
    `5 ${tags.reduce((n, t) => n + new TextEncoder().encode(t).length + 1, 0)}`,
  );
  assert.equal(viaSnippet(file), tags);
  const h = openRaggedSync(file);
  assert.is(h.kind, 'utf8z');
  assert.is(h.layout, 'zero-terminated');
  assert.is(h.get(3), tags[3]);
  assert.equal(h.bounds(2), [5, 5 + new TextEncoder().encode(tags[2]).length]); // '' and 'cat' take 1 and 4 bytes with their NULs
  assert.equal(h.slice(0, 5), tags);
  h.close();
  appendRaggedSync(file, ['w'.repeat(70000), 'last']);
  assert.is(wordDescr(file), '<u4');
  assert.equal(viaSnippet(file), [...tags, 'w'.repeat(70000), 'last']);
  assert.throws(
    () => saveRaggedSync(f('nul.npy'), ['a\u0000b'], { layout: 'zero-terminated' }),
    (e) => e.code === 'NOT_REPRESENTABLE' && /U\+0000/.test(e.message),
  );
  // A heap whose last string has no NUL: refused, not read past the end.
  python(`
t = "npyts.ragged:v1 kind=utf8z heap=bad.npy.strings"
np.save(${JSON.stringify(f('bad.npy'))}, np.array([(0,), (2,)], dtype=[((t, "start"), "<u8")]))
with open(${JSON.stringify(f('bad.npy.strings'))}, "wb") as fh: np.save(fh, np.frombuffer(b"a\\x00bcd", dtype="u1"))`);
  const bad = await openRagged(f('bad.npy'));
  assert.is(await bad.get(0), 'a');
  try {
    await bad.get(1);
    assert.unreachable('a string without a NUL was read');
  } catch (e) {
    assert.is(e.code, 'BAD_RAGGED');
    assert.match(e.message, /no NUL/);
  }
  await bad.close();
});

const _heaps = JSON.parse(
  python(`
rng = np.random.default_rng(7)
d = ${JSON.stringify(dir)}
np.save(f"{d}/frames.npy", rng.standard_normal((100, 20, 30)).astype("<f4"))
np.save(f"{d}/frames_f.npy", np.asfortranarray(rng.standard_normal((20, 30, 100))))
refs = rng.integers(0, 100, (120, 5, 10))
np.save(f"{d}/refs.npy", refs)
print(json.dumps({"refs": refs.ravel().tolist()}))`),
);

test('references: a (120, 5, 10) index into a (100, 20, 30) heap reads as (120, 5, 10, 20, 30); a Fortran heap by its last axis; numpy agrees', async () => {
  const refs = loadNpySync(f('refs.npy'));
  saveReferencesSync(f('picks.npy'), refs, 'frames.npy');
  await saveReferences(f('picks_f.npy'), refs, 'frames_f.npy');
  const positions = [
    [0, 0, 0],
    [119, 4, 9],
    [57, 2, 3],
    [3, 1, 8],
  ];
  for (const [name, heap] of [
    ['picks.npy', 'frames.npy[r]'],
    ['picks_f.npy', 'frames_f.npy[..., r]'],
  ]) {
    const r = openRaggedSync(f(name));
    assert.is(r.kind, 'ref');
    assert.equal(r.indexShape, [120, 5, 10]);
    assert.is(r.raggedShape, '(120, 5, 10, 20, 30)');
    const [file, pick] = heap.split('[');
    const expected = withSnippet(`
h = np.load(${JSON.stringify(f(file))})
refs = np.load(${JSON.stringify(f('refs.npy'))})
print(json.dumps([[to_json(h[${pick.replace('r]', 'refs[tuple(p)]]')}), js(ragged_element(${JSON.stringify(f(name))}, tuple(p)))] for p in ${JSON.stringify(positions)}]))`);
    positions.forEach((p, k) => {
      const mine = arrayToJSON(r.get(p));
      assert.equal(mine, expected[k][0], `${name} ${p}`);
      assert.equal(expected[k][1], expected[k][0], `snippet ${name} ${p}`);
    });
    const flat = 57 * 50 + 2 * 10 + 3;
    assert.equal(arrayToJSON(r.get(flat)), expected[2][0]);
    assert.equal(r.shape([1, 1, 1]), [20, 30]);
    r.close();
  }
  assert.throws(
    () => saveReferencesSync(f('picks_bad.npy'), { data: new Int32Array([100]), shape: [1] }, 'frames.npy'),
    (e) => e.code === 'BAD_INDEX' && /outside the heap's 100 rows/.test(e.message),
  );
  // A heap given as a Fortran-ordered array whose layout is also C's is written in C order, as numpy
  // would: references pick along its first axis, and are checked against that axis.
  const flatF = new NdArray(loadNpySync(f('frames.npy')).dtype, [1, 5], new Float32Array([1, 2, 3, 4, 5]), 'F');
  saveReferencesSync(f('picks_free.npy'), { data: new Int32Array([0, 0]), shape: [2] }, flatF);
  assert.equal(
    withSnippet(
      `print(json.dumps([np.isfortran(np.load(${JSON.stringify(f('picks_free.npy.heap'))})), js(ragged_element(${JSON.stringify(f('picks_free.npy'))}, 1))]))`,
    ),
    [false, [1, 2, 3, 4, 5]],
  );
  assert.equal(arrayToJSON(openRaggedSync(f('picks_free.npy')).get(1)), [1, 2, 3, 4, 5]);
  assert.throws(
    () => saveReferencesSync(f('picks_free2.npy'), { data: new Int32Array([3]), shape: [1] }, flatF),
    (e) => e.code === 'BAD_INDEX' && /outside the heap's 1 rows/.test(e.message),
  );
  // An index numpy wrote itself, with a reference past the heap: refused when read.
  python(`np.save(${JSON.stringify(f('picks_np.npy'))}, np.array([(3,), (100,)], dtype=[(("npyts.ragged:v1 kind=ref heap=frames.npy", "ref"), "<u8")]))`);
  const np = openRaggedSync(f('picks_np.npy'));
  assert.equal(np.get(0).shape, [20, 30]);
  assert.throws(
    () => np.get(1),
    (e) => e.code === 'BAD_RAGGED' && /refers to 100/.test(e.message),
  );
  np.close();
});

test("N-d ranges: numpy's (3, 4) object array converts keeping its shape, reads by (i, j), and converts back; an index numpy wrote reads too", async () => {
  const made = JSON.parse(
    python(`
rng = np.random.default_rng(5)
a = np.empty((3, 4), dtype=object)
for i in range(3):
    for j in range(4):
        a[i, j] = rng.standard_normal((int(rng.integers(0, 4)), 2))
np.save(${JSON.stringify(f('grid_obj.npy'))}, a, allow_pickle=True)
sys.path.insert(0, ${JSON.stringify(join(root, 'test', 'helpers'))})
from npyfixtures import to_json
print(json.dumps([to_json(x) for x in a.ravel()]))`),
  );
  for (const layout of ['ranges', 'zero-terminated']) {
    const out = f(`grid_${layout}.npy`);
    const args = ['convert', '--allow-pickle', '--ragged', f('grid_obj.npy'), out];
    if (layout !== 'ranges') {
      // Zero-terminated is for strings: arrays are refused with one clean line.
      const r = await runCli([...args, '--layout', layout]);
      assert.is(r.code, 1);
      assert.match(r.stderr, /^npyts: error: .*strings only\n$/);
      continue;
    }
    const r = await runCli(args);
    assert.is(r.code, 0, r.stderr);
  }
  const file = f('grid_ranges.npy');
  assert.is(python(`print(np.load(${JSON.stringify(file)}).shape)`).trim(), '(3, 4)');
  const h = openRaggedSync(file);
  assert.is(h.raggedShape, '(3, 4, *, 2)');
  assert.equal(h.slice(0, 12).map(arrayToJSON), made);
  assert.equal(arrayToJSON(h.get([2, 1])), made[9]);
  assert.equal(h.shape([2, 1])[1], 2);
  h.close();
  assert.equal(withSnippet(`print(json.dumps([js(ragged_element(${JSON.stringify(file)}, (i, j))) for i in range(3) for j in range(4)]))`), made);
  const back = f('grid_back.npy');
  const r = await runCli(['convert', '--object', file, back]);
  assert.is(r.code, 0, r.stderr);
  assert.equal(
    JSON.parse(
      python(`
sys.path.insert(0, ${JSON.stringify(join(root, 'test', 'helpers'))})
from npyfixtures import to_json
a = np.load(${JSON.stringify(back)}, allow_pickle=True)
print(json.dumps([list(a.shape)] + [to_json(x) for x in a.ravel()]))`),
    ),
    [[3, 4], ...made],
  );
  // An N-d index numpy writes itself: (2, 3) ranges of strings.
  python(`
t = "npyts.ragged:v1 kind=utf8 heap=np_grid.npy.strings"
with open(${JSON.stringify(f('np_grid.npy.strings'))}, "wb") as fh: np.save(fh, np.frombuffer("abcdéf".encode(), dtype="u1"))
np.save(${JSON.stringify(f('np_grid.npy'))}, np.array([[(0, 1), (1, 3), (3, 3)], [(3, 4), (4, 6), (6, 7)]], dtype=[((t, "start"), "<u8"), ("stop", "<u8")]))`);
  const g = await openRagged(f('np_grid.npy'));
  assert.equal(await g.slice(0, 6), ['a', 'bc', '', 'd', 'é', 'f']);
  assert.is(await g.get([1, 1]), 'é');
  await g.close();
  // Appends to an N-d index add whole rows of its first axis.
  saveRaggedSync(f('grid2.npy'), ['a', 'b', 'c', 'd'], { shape: [2, 2] });
  appendRaggedSync(f('grid2.npy'), ['e', 'f']);
  assert.throws(
    () => appendRaggedSync(f('grid2.npy'), ['g']),
    (e) => e.code === 'SHAPE_MISMATCH' && /multiple of 2/.test(e.message),
  );
  assert.equal(
    withSnippet(`print(json.dumps([list(np.load(${JSON.stringify(f('grid2.npy'))}).shape), ragged_element(${JSON.stringify(f('grid2.npy'))}, (2, 1))]))`),
    [[3, 2], 'f'],
  );
});

test("records: array fields over heap1, heap2…, every string field over one .strings (option 1); zero-terminated string fields; numpy's snippet resolves", () => {
  const sub = join(dir, 'records');
  mkdirSync(sub);
  const records = [
    { id: 1, frames: arrayFromValues([[1, 2]], '<f4'), boxes: arrayFromValues([7, 8, 9], '<i2'), label: 'cat', note: 'é' },
    {
      id: 2,
      frames: arrayFromValues(
        [
          [3, 4],
          [5, 6],
        ],
        '<f4',
      ),
      boxes: arrayFromValues([], '<i2'),
      label: '',
      note: 'long note',
    },
  ];
  for (const layout of ['ranges', 'zero-terminated']) {
    const file = join(sub, `clips_${layout}.npy`);
    saveRaggedSync(file, records, { dtypes: { id: '<i4' }, layout });
    const expected = records.map((r) => json(r));
    assert.equal(viaSnippet(file), expected, layout);
    const h = openRaggedRecordsSync(file);
    assert.equal(h.raggedFields, {
      frames: `clips_${layout}.npy.heap1`,
      boxes: `clips_${layout}.npy.heap2`,
      label: `clips_${layout}.npy.strings`,
      note: `clips_${layout}.npy.strings`,
    });
    assert.equal(h.slice(0, 2).map(json), expected);
    h.close();
  }
  assert.throws(
    () => saveRaggedSync(join(sub, 'grid.npy'), records, { shape: [2, 1] }),
    (e) => e.code === 'SHAPE_MISMATCH' && /records with ragged fields are 1-d/.test(e.message),
  );
  assert.equal(readdirSync(sub).sort(), [
    'clips_ranges.npy',
    'clips_ranges.npy.heap1',
    'clips_ranges.npy.heap2',
    'clips_ranges.npy.strings',
    'clips_zero-terminated.npy',
    'clips_zero-terminated.npy.heap1',
    'clips_zero-terminated.npy.heap2',
    'clips_zero-terminated.npy.strings',
  ]);
});

test('over HTTP (nginx): offsets, zero-terminated, references and N-d indexes read with range requests, as from disk', async () => {
  const server = await startNginx(dir);
  try {
    for (const name of ['words.npy', 'tags.npy', 'picks_f.npy', 'grid_ranges.npy', 'nested_off.npy']) {
      const local = openRaggedSync(f(name));
      const remote = await openRaggedUrl(`${server.base}/${name}`);
      assert.is(remote.raggedShape, local.raggedShape, name);
      const n = Math.min(local.length, 40);
      assert.equal(json(await remote.slice(0, n)), json(local.slice(0, n)), name);
      const last = local.length - 1;
      assert.equal(json(await remote.get(last)), json(local.get(last)), name);
      local.close();
      await remote.close();
    }
    // One element of a million offsets costs two index words and its own bytes.
    saveRaggedSync(
      f('million_off.npy'),
      Array.from({ length: 1e6 }, (_, i) => `w${i.toString(36)}`),
      { layout: 'offsets' },
    );
    const m = await openRaggedUrl(`${server.base}/million_off.npy`);
    const before = m.stats.bytes;
    assert.is(await m.get(654321), `w${(654321).toString(36)}`);
    assert.ok(m.stats.bytes - before < 64, `${m.stats.bytes - before} bytes`);
    await m.close();
  } finally {
    server.stop();
  }
});

test('kill: appends to offsets and zero-terminated indexes killed midway leave a valid prefix, and appending goes on', async () => {
  const entry = join(root, 'packages/core/dist/node.js');
  for (const layout of ['offsets', 'zero-terminated']) {
    const file = f(`log_${layout}.npy`);
    for (let round = 0; round < 3; round++) {
      saveRaggedSync(file, ['s0'], { layout });
      await runThenKill(
        `
        const { appendRaggedSync } = await import(${JSON.stringify(entry)});
        for (let i = 1; i < 1e6; i++) appendRaggedSync(${JSON.stringify(file)}, ['s' + i]);`,
        250 + round * 200,
      );
      appendRaggedSync(file, ['after']);
      const got = viaSnippet(file);
      const n = got.length - 1;
      assert.ok(n >= 1, `${layout} round ${round}: ${n}`);
      assert.equal(got, [...Array.from({ length: n }, (_, i) => `s${i}`), 'after'], `${layout} round ${round}`);
      if (round === 2 && n > 100) assert.is(wordDescr(file), '<u2', 'widened while appending');
    }
  }
});

test("StringDType: numpy 2's string arrays convert to each string layout and back (--object --string-dtype)", async () => {
  const strings = ['one', 'twø', '', '整😀', 'x'.repeat(300)];
  python(`np.save(${JSON.stringify(f('sd.npy'))}, np.array(${JSON.stringify(strings)}, dtype=np.dtypes.StringDType()), allow_pickle=True)`);
  for (const layout of ['ranges', 'offsets', 'zero-terminated']) {
    const out = f(`sd_${layout}.npy`);
    const r = await runCli(['convert', '--allow-pickle', '--ragged', '--layout', layout, f('sd.npy'), out]);
    assert.is(r.code, 0, r.stderr);
    assert.is(openRaggedSync(out).layout, layout);
    assert.equal(viaSnippet(out), strings, layout);
    const back = f(`sd_${layout}_back.npy`);
    const b = await runCli(['convert', '--object', '--string-dtype', out, back]);
    assert.is(b.code, 0, b.stderr);
    assert.equal(
      JSON.parse(python(`a = np.load(${JSON.stringify(back)}, allow_pickle=True); print(json.dumps([str(a.dtype), a.tolist()]))`)),
      ['StringDType()', strings],
      layout,
    );
  }
  const info = await runCli(['info', f('sd_offsets.npy')]);
  assert.match(info.stdout, /ragged: 5 UTF-8 strings, shape \(5, \*\), offsets, in heap sd_offsets\.npy\.strings/);
  const usage = await runCli(['convert', '--layout', 'offsets', f('sd.npy'), f('x.npy')]);
  assert.is(usage.code, 2);
});

test('N-d indexes: any run of elements reads exactly its index records and its heap bytes, whatever the shape (property)', () => {
  let case_ = 0;
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 4 }), fc.nat(), fc.nat(), (shape, a, b) => {
      const n = shape.reduce((p, x) => p * x, 1);
      const strings = Array.from({ length: n }, (_, i) => 'é'.repeat(i % 3) + i);
      const file = f(`prop_${case_++ % 4}.npy`);
      saveRaggedSync(file, strings, { shape });
      const from = a % (n + 1);
      const to = from + (b % (n - from + 1));
      const h = openRaggedSync(file);
      try {
        const before = regionStats.bytes;
        const got = h.slice(from, to);
        const heapBytes = strings.slice(from, to).reduce((t, x) => t + new TextEncoder().encode(x).length, 0);
        // Nearby strings share one heap read: exactly their bytes, since they are contiguous.
        return JSON.stringify(got) === JSON.stringify(strings.slice(from, to)) && regionStats.bytes - before === 16 * (to - from) + heapBytes;
      } finally {
        h.close();
      }
    }),
    { numRuns: 150 },
  );
});

test('hostile indexes: offsets that go back, words past 2^53, a malformed title, a text heap that is not bytes, indexes in a cycle — each one clean error', async () => {
  python(`
d = ${JSON.stringify(dir)}
def save(name, a):
    with open(f"{d}/{name}", "wb") as fh: np.save(fh, a)
save("h.npy.strings", np.frombuffer(b"abcdefgh", dtype="u1"))
save("h_back.npy", np.array([(0,), (5,), (3,)], dtype=[(("npyts.ragged:v1 kind=utf8 heap=h.npy.strings", "offsets"), "u1")]))
save("h_huge.npy", np.array([(0, 2**60)], dtype=[(("npyts.ragged:v1 kind=utf8 heap=h.npy.strings", "start"), "<u8"), ("stop", "<u8")]))
save("h_title.npy", np.array([(0, 1)], dtype=[(("npyts.ragged:v1 kind=utf8 heap=%zz", "start"), "<u8"), ("stop", "<u8")]))
save("h_fields.npy", np.array([(0, 1)], dtype=[(("npyts.ragged:v1 kind=utf8 heap=h.npy.strings", "start"), "<u8"), ("end", "<u8")]))
save("h_words.npy", np.array([(0, 1)], dtype=[(("npyts.ragged:v1 kind=utf8 heap=h.npy.strings", "start"), "<f8"), ("stop", "<u8")]))
save("h_f4.npy", np.zeros(4, "<f4"))
save("h_self.npy", np.array([(0, 1)], dtype=[(("npyts.ragged:v1 kind=array heap=h_self.npy", "start"), "<u8"), ("stop", "<u8")]))
save("h_a.npy", np.array([(0, 1)], dtype=[(("npyts.ragged:v1 kind=array heap=h_b.npy", "start"), "<u8"), ("stop", "<u8")]))
save("h_b.npy", np.array([(0,), (1,)], dtype=[(("npyts.ragged:v1 kind=array heap=h_a.npy", "offsets"), "u1")]))
save("h_notbytes.npy", np.array([(0, 1)], dtype=[(("npyts.ragged:v1 kind=utf8 heap=h_f4.npy", "start"), "<u8"), ("stop", "<u8")]))`);
  const back = openRaggedSync(f('h_back.npy'));
  assert.is(back.get(0), 'abcde');
  assert.throws(
    () => back.get(1),
    (e) => e.code === 'BAD_RAGGED' && /element 1 .* bounds \[5, 3\)/.test(e.message),
  );
  back.close();
  const huge = await openRagged(f('h_huge.npy'));
  try {
    await huge.get(0);
    assert.unreachable();
  } catch (e) {
    assert.is(e.code, 'BAD_RAGGED');
    assert.match(e.message, /above 2\^53/);
  }
  await huge.close();
  // Indexes whose titles lead back to themselves: refused, by every reader and by appends, not followed forever.
  for (const name of ['h_self.npy', 'h_a.npy']) {
    try {
      await openRagged(f(name));
      assert.unreachable(name);
    } catch (e) {
      assert.is(e.code, 'BAD_RAGGED', String(e));
      assert.match(e.message, /form a cycle/);
    }
    assert.throws(
      () => appendRaggedSync(f(name), [[arrayFromValues([1], '<i4')]]),
      (e) => e.code === 'BAD_RAGGED' && /form a cycle/.test(e.message),
      name,
    );
  }
  for (const [name, code, pattern] of [
    ['h_self.npy', 'BAD_RAGGED', /form a cycle/],
    ['h_title.npy', 'BAD_RAGGED', /percent-encoded/],
    ['h_fields.npy', 'BAD_RAGGED', /none of the layouts/],
    ['h_words.npy', 'BAD_RAGGED', /unsigned integers/],
    ['h_notbytes.npy', 'BAD_RAGGED', /1-d bytes/],
  ]) {
    assert.throws(
      () => openRaggedSync(f(name)),
      (e) => e.code === code && pattern.test(e.message),
      name,
    );
    const r = await runCli(['info', f(name)]);
    assert.is(r.code, 1, name);
    assert.match(r.stderr, /^npyts: error: [^\n]*\n$/, name);
  }
});

test.run();
