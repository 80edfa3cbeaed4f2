// Ragged arrays as plain .npy files: numpy's object arrays convert both ways, the ragged guide's numpy
// snippet reconstructs our elements, element reads touch only their bytes, appends (one killed
// midway) leave valid files, cross-file references hold, and a million strings are sampled cheaply.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readlinkSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { blockWith } from '../packages/guide-blocks.mjs';
import { arrayFromValues, arrayToJSON, openRaggedUrl, NdArray, parseDescr } from '@npyts/core';
import {
  saveRaggedSync,
  openRaggedSync,
  openRagged,
  isRagged,
  appendRaggedSync,
  regionStats,
  loadNpySync,
  saveRagged,
  appendRagged,
  saveObjectArrayAsRagged,
  openRaggedRecordsSync,
} from '@npyts/core/node';
import { python, runCli, runThenKill, scratch } from '../helpers/numpy.mjs';
import fc from 'fast-check';
import { startViewer } from '../../viewer/serve.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = scratch('npyts-ragged-');

// The ragged guide's numpy reader, exactly as documented, becomes a module numpy-side checks import.
const snippet = blockWith('docs/ragged.md', 'python', 'def ragged_element');
writeFileSync(join(dir, 'ragged_snippet.py'), snippet);
const withSnippet = (code) =>
  python(
    `import sys\nsys.path.insert(0, ${JSON.stringify(dir)})\nfrom ragged_snippet import ragged_element\nsys.path.insert(0, ${JSON.stringify(join(root, 'test', 'helpers'))})\nfrom npyfixtures import to_json\n${code}`,
  );

/** numpy's object arrays of ragged data, saved with pickles, and each element's JSON. */
const made = JSON.parse(
  python(`
import sys
sys.path.insert(0, ${JSON.stringify(join(root, 'test', 'helpers'))})
from npyfixtures import to_json
d = ${JSON.stringify(dir)}
rng = np.random.default_rng(1)
def obj(items):
    a = np.empty(len(items), dtype=object)
    a[:] = items
    return a
sets = {
  'seq_f4': obj([rng.standard_normal((k, 3)).astype('<f4') for k in (4, 0, 7, 1)]),
  'seq_be': obj([np.arange(k, dtype='>i8') for k in (3, 5, 2)]),
  'records': obj([np.array([(k + 0.5 * j, b'ab') for j in range(k)], [('t', '<f8'), ('tag', 'S3')]) for k in (2, 3)]),
  'strings': obj(['', 'a', 'é整😀', 'tab\\tnewline\\n', 'x' * 300]),
  'stringdtype': np.array(['one', 'twø', ''], dtype=np.dtypes.StringDType()),
}
out = {}
for name, a in sets.items():
    np.save(f'{d}/{name}_obj.npy', a, allow_pickle=True)
    out[name] = {'file': f'{d}/{name}_obj.npy', 'elements': [v if isinstance(v, str) else to_json(np.asarray(v)) for v in a]}
print(json.dumps(out))
`),
);

const elementJSON = (v) => (typeof v === 'string' ? v : v instanceof NdArray ? arrayToJSON(v) : v.map(elementJSON));

test("object arrays (and StringDType) convert to the ragged layout; numpy's snippet reads back the same elements", async () => {
  for (const [name, { file, elements }] of Object.entries(made)) {
    const out = join(dir, `${name}.npy`);
    const r = await runCli(['convert', '--allow-pickle', '--ragged', file, out]);
    assert.is(r.code, 0, r.stderr);
    const h = openRaggedSync(out);
    assert.equal(h.slice(0, h.length).map(elementJSON), elements, name);
    h.close();
    const viaNumpy = JSON.parse(
      withSnippet(`
index = np.load(${JSON.stringify(out)}, allow_pickle=False)
print(json.dumps([(lambda v: v if isinstance(v, str) else to_json(v))(ragged_element(${JSON.stringify(out)}, i)) for i in range(len(index))]))`),
    );
    assert.equal(viaNumpy, elements, `${name} via the guide's numpy reader`);
  }
});

test("and back: --object writes numpy's object array with the same elements", async () => {
  for (const [name, { elements }] of Object.entries(made)) {
    const back = join(dir, `${name}_back.npy`);
    const r = await runCli(['convert', '--object', join(dir, `${name}.npy`), back]);
    assert.is(r.code, 0, r.stderr);
    const got = JSON.parse(
      python(`
import sys
sys.path.insert(0, ${JSON.stringify(join(root, 'test', 'helpers'))})
from npyfixtures import to_json
a = np.load(${JSON.stringify(back)}, allow_pickle=True)
print(json.dumps([v if isinstance(v, str) else to_json(np.asarray(v)) for v in a]))`),
    );
    assert.equal(got, elements, name);
  }
});

test("two levels of raggedness and records, from the JS API; numpy's snippet agrees", () => {
  const nested = join(dir, 'nested.npy');
  const elements = [[arrayFromValues([1, 2], '<i4'), arrayFromValues([3], '<i4')], [], [arrayFromValues([4, 5, 6], '<i4')]];
  saveRaggedSync(nested, elements);
  const viaNumpy = JSON.parse(withSnippet(`print(json.dumps([[to_json(x) for x in ragged_element(${JSON.stringify(nested)}, i)] for i in range(3)]))`));
  assert.equal(viaNumpy, [[[1, 2], [3]], [], [[4, 5, 6]]]);
  const h = openRaggedSync(nested);
  assert.equal(h.get(0).map(arrayToJSON), [[1, 2], [3]]);
  assert.equal(h.shape(2), [1]);
  h.close();
});

test("records with ragged fields: one heap per field; numpy's snippet resolves each record", async () => {
  const { openRaggedRecordsSync } = await import('@npyts/core/node');
  const file = join(dir, 'clips.npy');
  const records = [
    {
      id: 1,
      frames: arrayFromValues(
        [
          [1, 2],
          [3, 4],
        ],
        '<f4',
      ),
      label: 'cat',
    },
    { id: 2, frames: arrayFromValues([[5, 6]], '<f4'), label: 'é整' },
    {
      id: 3,
      frames: arrayFromValues(
        [
          [7, 8],
          [9, 10],
          [11, 12],
        ],
        '<f4',
      ),
      label: '',
    },
  ];
  saveRaggedSync(file, records, { dtypes: { id: '<i4' } });
  const h = openRaggedRecordsSync(file);
  assert.equal(Object.keys(h.raggedFields).sort(), ['frames', 'label']);
  const mine = h.slice(0, 3).map((r) => ({ id: r.id, frames: arrayToJSON(r.frames), label: r.label }));
  h.close();
  const expected = records.map((r) => ({ id: r.id, frames: arrayToJSON(r.frames), label: r.label }));
  assert.equal(mine, expected);
  const viaNumpy = JSON.parse(
    withSnippet(`
out = []
for i in range(3):
    e = ragged_element(${JSON.stringify(file)}, i)
    out.append({'id': int(e['id']), 'frames': to_json(e['frames']), 'label': e['label']})
print(json.dumps(out))`),
  );
  assert.equal(viaNumpy, expected);
  assert.ok(JSON.parse(python(`a = np.load(${JSON.stringify(file)}, allow_pickle=False); print(json.dumps(list(a.dtype.names)))`)).includes('frames'));
});

test('cross-file references: two indexes over one data file stay valid as it grows', () => {
  const frames = (n, base) =>
    arrayFromValues(
      Array.from({ length: n }, (_, i) => [base + i, base + i + 0.5]),
      '<f8',
    );
  saveRaggedSync(join(dir, 'image.npy'), [frames(1, -1)]); // seeds image.npy's heap file "image.npy.heap"
  saveRaggedSync(join(dir, 'video.npy'), [frames(3, 10), frames(2, 20)], { heap: 'image.npy.heap' });
  saveRaggedSync(join(dir, 'video_events.npy'), [frames(1, 30)], { heap: 'image.npy.heap' });
  const before = openRaggedSync(join(dir, 'video.npy')).slice(0, 2).map(arrayToJSON);
  appendRaggedSync(join(dir, 'video_events.npy'), [frames(4, 40)]);
  appendRaggedSync(join(dir, 'video.npy'), [frames(1, 50)]);
  const after = openRaggedSync(join(dir, 'video.npy'));
  assert.equal(after.slice(0, 2).map(arrayToJSON), before);
  assert.equal(arrayToJSON(after.get(2)), [[50, 50.5]]);
  assert.is(after.heapPath, join(dir, 'image.npy.heap'));
  const viaNumpy = JSON.parse(
    withSnippet(`print(json.dumps([to_json(ragged_element(${JSON.stringify(join(dir, 'video_events.npy'))}, i)) for i in range(2)]))`),
  );
  assert.equal(viaNumpy, [
    [[30, 30.5]],
    [
      [40, 40.5],
      [41, 41.5],
      [42, 42.5],
      [43, 43.5],
    ],
  ]);
});

test("an element read touches only the index row and that element's heap rows", () => {
  const h = openRaggedSync(join(dir, 'seq_f4.npy'));
  const before = regionStats.bytes;
  const e = h.get(2);
  assert.is(regionStats.bytes - before, 16 + e.data.byteLength);
  h.close();
});

test('appends: many, and a process killed midway leaves a valid prefix', async () => {
  const file = join(dir, 'log.npy');
  saveRaggedSync(file, ['s0']);
  for (let i = 1; i < 40; i++) appendRaggedSync(file, [`s${i}`, `s${i}b`].slice(0, 1 + (i % 2)));
  const h = openRaggedSync(file);
  assert.is(h.get(0), 's0');
  assert.ok(h.length > 40);
  h.close();
  const entry = join(root, 'packages/core/dist/node.js');
  for (let round = 0; round < 4; round++) {
    saveRaggedSync(file, ['s0']);
    await runThenKill(
      `
      const { appendRaggedSync } = await import(${JSON.stringify(entry)});
      for (let i = 1; i < 1e6; i++) appendRaggedSync(${JSON.stringify(file)}, ['s' + i]);`,
      200 + round * 150,
    );
    const check = JSON.parse(
      withSnippet(`
n = len(np.load(${JSON.stringify(file)}))
print(json.dumps({'n': n, 'ok': all(ragged_element(${JSON.stringify(file)}, i) == f's{i}' for i in range(n))}))`),
    );
    assert.ok(check.ok && check.n >= 1, `round ${round}: ${JSON.stringify(check)}`);
  }
});

test("async writers: saveRagged (one and two levels, records, a shared heap) and 30 concurrent appendRagged calls; numpy's snippet reads every element", async () => {
  const words = join(dir, 'async-words.npy');
  await saveRagged(words, ['a', 'bc']);
  await Promise.all(Array.from({ length: 30 }, (_, i) => appendRagged(words, [`w${i}`])));
  const seen = JSON.parse(
    withSnippet(`print(json.dumps([ragged_element(${JSON.stringify(words)}, i) for i in range(len(np.load(${JSON.stringify(words)})))]))`),
  );
  assert.equal(seen.slice(0, 2), ['a', 'bc']);
  assert.equal(seen.slice(2).sort(), Array.from({ length: 30 }, (_, i) => `w${i}`).sort());
  const nested = join(dir, 'async-nested.npy');
  await saveRagged(nested, [[arrayFromValues([1, 2], '<i4')], [], [arrayFromValues([3], '<i4'), arrayFromValues([4, 5], '<i4')]]);
  await appendRagged(nested, [[arrayFromValues([6], '<i4')]]);
  const viaNumpy = JSON.parse(withSnippet(`print(json.dumps([[to_json(x) for x in ragged_element(${JSON.stringify(nested)}, i)] for i in range(4)]))`));
  assert.equal(viaNumpy, [[[1, 2]], [], [[3], [4, 5]], [[6]]]);
  // Two indexes over one heap (cross-file references), written without blocking.
  const first = join(dir, 'async-a.npy');
  const second = join(dir, 'async-b.npy');
  await saveRagged(first, [arrayFromValues([1, 2, 3], '<f4')], { heap: 'async-shared.npy' });
  await saveRagged(second, [arrayFromValues([4], '<f4')], { heap: 'async-shared.npy' });
  const both = JSON.parse(withSnippet(`print(json.dumps([to_json(ragged_element(p, 0)) for p in (${JSON.stringify(first)}, ${JSON.stringify(second)})]))`));
  assert.equal(both, [[1, 2, 3], [4]]);
  const records = join(dir, 'async-records.npy');
  await saveRagged(records, [
    { id: 1, label: 'cat' },
    { id: 2, label: 'a dog' },
  ]);
  const r = openRaggedRecordsSync(records);
  assert.equal(
    r.slice(0, 2).map((x) => x.label),
    ['cat', 'a dog'],
  );
  r.close();
  const objects = join(dir, 'async-objects.npy');
  await saveObjectArrayAsRagged(objects, new NdArray(parseDescr('|O'), [2], [arrayFromValues([7], '<i2'), arrayFromValues([8, 9], '<i2')]));
  const back = await openRagged(objects);
  assert.equal([arrayToJSON(await back.get(0)), arrayToJSON(await back.get(1))], [[7], [8, 9]]);
  await back.close();
  let aborted = null;
  try {
    await saveRagged(join(dir, 'never.npy'), ['x'], { signal: AbortSignal.abort() });
  } catch (e) {
    aborted = e;
  }
  assert.is(aborted?.name, 'AbortError');
  assert.ok(!readdirSync(dir).some((f) => f.startsWith('never.npy')));
});

test('a million strings: written, reopened and sampled without reading the heap whole', () => {
  const file = join(dir, 'million.npy');
  const strings = Array.from({ length: 1e6 }, (_, i) => `w${i.toString(36)}${'é'.repeat(i % 3)}`);
  saveRaggedSync(file, strings);
  const h = openRaggedSync(file);
  assert.is(h.length, 1e6);
  const before = regionStats.bytes;
  let seed = 7;
  for (let k = 0; k < 100; k++) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    const i = seed % 1e6;
    assert.is(h.get(i), strings[i]);
  }
  const moved = regionStats.bytes - before;
  assert.ok(moved < 100 * (16 + 16), `read ${moved} bytes for 100 elements`);
  h.close();
  const viaNumpy = withSnippet(`print(ragged_element(${JSON.stringify(file)}, 999999))`).trim();
  assert.is(viaNumpy, strings[999999]);
});

test('over HTTP: elements read with range requests', async () => {
  const server = await startViewer({ port: 0, dataDir: dir });
  try {
    const r = await openRaggedUrl(`http://127.0.0.1:${server.address().port}/data/seq_f4.npy`);
    const local = openRaggedSync(join(dir, 'seq_f4.npy'));
    assert.equal(arrayToJSON(await r.get(2)), arrayToJSON(local.get(2)));
    assert.equal((await r.slice(0, 4)).map(arrayToJSON), local.slice(0, 4).map(arrayToJSON));
    local.close();
    const s = await openRaggedUrl(`http://127.0.0.1:${server.address().port}/data/million.npy`);
    const before = s.stats.bytes;
    assert.is(await s.get(123456), `w${(123456).toString(36)}`);
    assert.ok(s.stats.bytes - before < 100, `${s.stats.bytes - before} bytes`);
  } finally {
    server.close();
  }
});

test('async openRagged reads what openRaggedSync and numpy read, one and two levels, strings; closes its files; cancels', async () => {
  const openFiles = () =>
    readdirSync('/proc/self/fd')
      .map((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`);
        } catch {
          return '';
        }
      })
      .filter((f) => f.startsWith(realpathSync(dir)));
  // Files an earlier test's server still has open close on their own time: count once they settle.
  const settled = async () => {
    let n = openFiles().length;
    for (let last = -1; n !== last; ) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      last = n;
      n = openFiles().length;
    }
    return n;
  };
  const before = await settled();
  const seq = await openRagged(join(dir, 'seq_f4.npy'));
  const local = openRaggedSync(join(dir, 'seq_f4.npy'));
  assert.equal([seq.length, seq.kind, seq.heapLength], [local.length, local.kind, local.heapLength]);
  assert.equal((await seq.slice(0, 4)).map(arrayToJSON), local.slice(0, 4).map(arrayToJSON));
  let n = 0;
  for await (const chunk of seq.chunks(3)) n += chunk.length;
  assert.is(n, local.length);
  local.close();
  let aborted = null;
  try {
    await seq.get(0, { signal: AbortSignal.abort() });
  } catch (e) {
    aborted = e;
  }
  assert.is(aborted?.name, 'AbortError');
  await seq[Symbol.asyncDispose]();
  const nested = await openRagged(join(dir, 'nested.npy'));
  assert.equal((await nested.get(0)).map(arrayToJSON), [[1, 2], [3]]);
  assert.equal(await nested.get(1), []);
  await nested.close();
  const words = await openRagged(join(dir, 'million.npy'));
  assert.is(await words.get(123456), `w${(123456).toString(36)}`);
  await words.close();
  assert.is(openFiles().length, before, 'files left open');
  assert.is(await isRagged(join(dir, 'million.npy')), true);
  assert.is(await isRagged(join(dir, 'seq_f4.npy.heap')), false);
  let notRagged = null;
  try {
    await openRagged(join(dir, 'seq_f4.npy.heap'));
  } catch (e) {
    notRagged = e;
  }
  assert.is(notRagged?.code, 'NOT_RAGGED');
  assert.is(openFiles().length, before, 'a refused open left files open');
});

test('info describes a ragged set', async () => {
  const r = await runCli(['info', join(dir, 'strings.npy')]);
  assert.match(r.stdout, /ragged: 5 UTF-8 strings, shape \(5, \*\), ranges, in heap strings\.npy\.strings/);
  void loadNpySync;
});

test('strings are encoded into the heap as TextEncoder encodes them (pairs, lone surrogates, every plane); appends too', () => {
  const dir2 = scratch('npyts-ragged-utf8-');
  // Strings of any UTF-16 units, lone surrogates included, and of whole code points.
  const anyUnits = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 12 });
  const strings = fc.array(fc.oneof(anyUnits, fc.string({ unit: 'binary', maxLength: 12 })), { minLength: 1, maxLength: 40 });
  let run = 0;
  fc.assert(
    fc.property(strings, strings, (first, more) => {
      const path = join(dir2, `s${run++}.npy`);
      saveRaggedSync(path, first);
      appendRaggedSync(path, more);
      const all = [...first, ...more];
      const want = Buffer.concat(all.map((t) => Buffer.from(new TextEncoder().encode(t))));
      assert.equal(Buffer.from(loadNpySync(`${path}.strings`).data), want);
      const h = openRaggedSync(path);
      try {
        all.forEach((t, i) => assert.is(h.get(i), new TextDecoder().decode(new TextEncoder().encode(t))));
      } finally {
        h.close();
      }
    }),
    { seed: 20261122, numRuns: 150 },
  );
});

test.run();
