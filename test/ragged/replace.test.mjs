// Ragged writes that must lose nothing: two levels over an offsets index (its row count is one more
// than its elements), checks before the first write, and saves replaced atomically (aborted or killed
// at random moments, a reader sees the old array or the new one, never the old index over a new heap).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { arrayFromValues, arrayToJSON, NdArray } from '@npyts/core';
import { appendRagged, appendRaggedSync, openRaggedSync, saveRagged, saveRaggedSync } from '@npyts/core/node';
import { python, runThenKill, scratch } from '../helpers/numpy.mjs';
import { blockWith } from '../packages/guide-blocks.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = scratch('npyts-replace-');
const f = (name) => join(dir, name);
writeFileSync(f('ragged_snippet.py'), blockWith('docs/ragged.md', 'python', 'def ragged_element'));
/** Every element as the ragged guide's numpy snippet reads it (lists of lists for two levels). */
const viaSnippet = (file) =>
  JSON.parse(
    python(`import sys
sys.path.insert(0, ${JSON.stringify(dir)})
from ragged_snippet import ragged_element, ragged_length
def js(v):
    return v if isinstance(v, str) else [js(x) for x in v] if isinstance(v, list) else np.asarray(v).tolist()
print(json.dumps([js(ragged_element(${JSON.stringify(file)}, i)) for i in range(ragged_length(${JSON.stringify(file)}))]))`),
  );
const json = (v) => (v instanceof NdArray ? arrayToJSON(v) : Array.isArray(v) ? v.map(json) : v);
const i4 = (...v) => arrayFromValues(v, '<i4');
const readAll = (file) => {
  const h = openRaggedSync(file);
  try {
    return json(h.slice(0, h.length));
  } finally {
    h.close();
  }
};

test('two levels over an offsets inner index: appends keep every old element, and a save into it as a shared heap counts elements, not words', async () => {
  for (const [name, append] of [
    ['sync', appendRaggedSync],
    ['async', appendRagged],
  ]) {
    const file = f(`nested-${name}.npy`);
    saveRaggedSync(file, [[i4(1, 2)], [], [i4(3), i4(4, 5)]], { layout: 'offsets' });
    await append(file, [[i4(6)], [i4(7, 8), i4()]]);
    await append(file, [[i4(9)]]);
    const expected = [[[1, 2]], [], [[3], [4, 5]], [[6]], [[7, 8], []], [[9]]];
    assert.equal(readAll(file), expected, name);
    assert.equal(viaSnippet(file), expected, name);
  }
  // The inner level is an offsets index of 3 elements (4 words): the new elements start at 3.
  saveRaggedSync(f('inner.npy'), [i4(1), i4(2, 3), i4(4)], { layout: 'offsets' });
  saveRaggedSync(f('outer.npy'), [[i4(5)], [i4(6, 7), i4(8)]], { heap: 'inner.npy' });
  assert.equal(readAll(f('inner.npy')), [[1], [2, 3], [4], [5], [6, 7], [8]]);
  assert.equal(readAll(f('outer.npy')), [[[5]], [[6, 7], [8]]]);
  assert.equal(viaSnippet(f('outer.npy')), [[[5]], [[6, 7], [8]]]);
});

test('a refused save touches nothing: a bad shape leaves the old index and heap as they were (sync and async)', async () => {
  const file = f('kept.npy');
  saveRaggedSync(file, ['old', 'words']);
  const before = Object.fromEntries(
    readdirSync(dir)
      .filter((n) => n.startsWith('kept.npy'))
      .map((n) => [n, readFileSync(f(n)).toString('hex')]),
  );
  assert.throws(() => saveRaggedSync(file, ['a', 'b', 'c'], { shape: [2, 2] }), /do not fill an index of shape/);
  let err = null;
  try {
    await saveRagged(file, ['a', 'b', 'c'], { shape: [2, 2] });
  } catch (e) {
    err = e;
  }
  assert.match(err?.message ?? '', /do not fill an index of shape/);
  assert.throws(() => saveRaggedSync(file, [[i4(1)], [i4(2)], [i4(3)]], { shape: [4] }), /do not fill an index of shape/);
  const after = Object.fromEntries(
    readdirSync(dir)
      .filter((n) => n.startsWith('kept.npy'))
      .map((n) => [n, readFileSync(f(n)).toString('hex')]),
  );
  assert.equal(after, before);
  assert.equal(readAll(file), ['old', 'words']);
});

test('a save over a ragged array writes its heaps beside the old ones and removes the old ones after the index: one heap per array after many saves', () => {
  const file = f('swap.npy');
  for (let i = 0; i < 5; i++) {
    saveRaggedSync(file, [`gen${i}`, 'x'.repeat(i)]);
    assert.equal(readAll(file), [`gen${i}`, 'x'.repeat(i)]);
  }
  saveRaggedSync(file, [[i4(1)], [i4(2, 3)]]);
  saveRaggedSync(file, [[i4(4)]]);
  assert.equal(readAll(file), [[[4]]]);
  saveRaggedSync(file, [{ id: 1, name: 'a', v: i4(1, 2) }]);
  saveRaggedSync(file, [{ id: 2, name: 'b', v: i4(3) }]);
  saveRaggedSync(file, ['last']);
  assert.equal(readAll(file), ['last']);
  assert.equal(readdirSync(dir).filter((n) => n.startsWith('swap.npy')).length, 2, readdirSync(dir).join(' '));
});

/** Elements whose every string names its generation and position, of lengths that change with the generation: an old index over a new heap cuts strings wrong. */
const generation = (g, n = 2000) => Array.from({ length: n }, (_, i) => `g${g}-${'x'.repeat(g % 7)}${String(i).padStart(5, '0')}`);
const generationOf = (file) => {
  const all = readAll(file);
  const gens = new Set(all.map((s) => /^g(\d+)-/.exec(s)?.[1] ?? 'corrupt'));
  assert.is(gens.size, 1, `a mix of generations ${[...gens].join(', ')}`);
  all.forEach((s, i) => assert.ok(s.endsWith(String(i).padStart(5, '0')), `element ${i} is ${s}`));
  return Number([...gens][0]);
};

test('saveRagged aborted at random moments: every read sees the old or the new array, never a mix', async () => {
  const file = f('aborted.npy');
  await saveRagged(file, generation(0), { layout: 'offsets' });
  let current = 0;
  let aborts = 0;
  for (let g = 1; g <= 40; g++) {
    const controller = new AbortController();
    const saving = saveRagged(file, generation(g), { signal: controller.signal, layout: g % 2 ? 'offsets' : 'ranges' });
    for (let k = (g * 7) % 6; k > 0; k--) await new Promise((r) => setImmediate(r));
    controller.abort();
    try {
      await saving;
      current = g;
    } catch (e) {
      assert.is(e.name, 'AbortError');
      aborts++;
    }
    assert.is(generationOf(file), current);
  }
  assert.ok(aborts > 0, 'no save was aborted');
});

test('saveRaggedSync killed at random moments (strings, arrays, records): a read sees the old or the new array', async () => {
  const entry = join(root, 'packages/core/dist/node.js');
  const file = f('killed.npy');
  for (let round = 0; round < 6; round++) {
    saveRaggedSync(file, generation(0, 20000));
    await runThenKill(
      `
      const { saveRaggedSync } = await import(${JSON.stringify(entry)});
      for (let g = 1; g < 1e6; g++) saveRaggedSync(${JSON.stringify(file)}, Array.from({ length: 20000 }, (_, i) => 'g' + g + '-' + 'x'.repeat(g % 7) + String(i).padStart(5, '0')), { layout: g % 2 ? 'offsets' : 'ranges' });`,
      150 + round * 90,
    );
    generationOf(file);
  }
  const arrays = f('killed-arrays.npy');
  for (let round = 0; round < 4; round++) {
    saveRaggedSync(arrays, [[i4(0)]]);
    await runThenKill(
      `
      const { saveRaggedSync } = await import(${JSON.stringify(entry)});
      const { arrayFromValues } = await import(${JSON.stringify(join(root, 'packages/core/dist/index.js'))});
      for (let g = 1; g < 1e6; g++) saveRaggedSync(${JSON.stringify(arrays)}, Array.from({ length: 3000 }, () => [arrayFromValues(Array(1 + (g % 3)).fill(g), '<i4')]));`,
      150 + round * 120,
    );
    const all = readAll(arrays);
    const g = all[0][0][0];
    assert.ok(
      all.every((e) => e.length === 1 && e[0].length === 1 + (g % 3) && e[0].every((x) => x === g)),
      `round ${round}: a mix`,
    );
  }
});

test.run();
