// Memory-mapped arrays (numpy's mmap_mode): two processes fill halves of one 'r+' map and numpy
// reads the result; a 'r' map of a 6 GiB file reads a column touching only its pages; 'c' writes
// never reach the file; what cannot be mapped is refused with a pointer to region reads.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createNpySync, loadNpy, loadNpySync, nativeStatus } from '@npyts/core/node';
import { python, scratch } from '../helpers/numpy.mjs';

const dir = scratch('npyts-mmap-');

/** Run an ES module snippet in a fresh Node process; its stdout, or a failure with its stderr. */
function child(code, env = {}) {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8', env: { ...process.env, ...env } });
  assert.is(r.status, 0, r.stderr);
  return r.stdout.trim();
}

test('the addon makes maps here, and nativeStatus says so', () => {
  assert.equal(nativeStatus().mmap, { available: true });
});

test('two processes map one file r+ and fill disjoint halves; numpy reads the result', () => {
  const path = join(dir, 'shared.npy');
  createNpySync(path, { dtype: '<f8', shape: [1000, 500] }).close();
  const fill = (from, to) =>
    child(`
import { loadNpySync } from '@npyts/core/node';
const m = loadNpySync(${JSON.stringify(path)}, { mmap: 'r+', expect: '<f8' });
for (let r = ${from}; r < ${to}; r++) for (let c = 0; c < 500; c++) m.data[r * 500 + c] = r * 1000 + c;
m.close();
console.log(m.data.length);`);
  assert.equal([fill(0, 500), fill(500, 1000)], ['0', '0']); // closed maps are empty
  const ok = python(`a = np.load(${JSON.stringify(path)}); r, c = np.indices(a.shape); print(int((a == r * 1000 + c).all()))`).trim();
  assert.is(ok, '1');
});

test('createNpy({ mmap: true }) maps the new file; its writes reach the file numpy reads', async () => {
  const path = join(dir, 'created.npy');
  const m = createNpySync(path, { dtype: '<i4', shape: [3, 4], order: 'F', mmap: true });
  m.data.set([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  m.close();
  assert.is(python(`print(np.load(${JSON.stringify(path)}).ravel(order='F').tolist())`).trim(), '[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]');
  const r = await loadNpy(path, { mmap: 'r', expect: '<i4' });
  assert.equal([...r.shape, r.order, r.get(2, 3)], [3, 4, 'F', 12]);
  r.close();
});

test("a column of a 6 GiB file through a r map equals numpy and costs the resident memory numpy's own map costs", () => {
  const path = join(dir, 'huge.npy');
  // 24576 rows of 256 KiB (sparse on disk); a map this large is a V8 external backing store (Node's
  // Buffer-based N-API path stops at 4 GiB).
  python(`a = np.lib.format.open_memmap(${JSON.stringify(path)}, mode='w+', dtype='<f4', shape=(24576, 65536))
for r in (0, 1, 12345, 24575): a[r, 7] = r + 0.5
a.flush()`);
  const out = JSON.parse(
    child(`
import { loadNpySync } from '@npyts/core/node';
import { readFileSync } from 'node:fs';
const rss = () => Number(/VmRSS:\\s+(\\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
const base = rss();
const m = loadNpySync(${JSON.stringify(path)}, { mmap: 'r' });
let sum = 0;
for (let r = 0; r < 24576; r++) sum += m.data[r * 65536 + 7];
console.log(JSON.stringify({ sum, grew: rss() - base, size: m.data.byteLength }));`),
  );
  // numpy's own mmap, the same column, measured the same way: the kernel's read-around decides how
  // many neighbouring pages each touched page brings in (on ext4 here, nearly the whole sparse file).
  const [want, numpyGrew] = JSON.parse(
    python(`
def rss(): return int([l for l in open('/proc/self/status') if l.startswith('VmRSS')][0].split()[1]) / 1024
base = rss()
a = np.load(${JSON.stringify(path)}, mmap_mode='r')
s = float(a[:, 7].astype(np.float64).sum())
print(json.dumps([s, rss() - base]))`),
  );
  assert.is(out.sum, want);
  assert.is(out.size, 6 * 2 ** 30);
  assert.ok(out.grew <= numpyGrew * 1.1 + 32, `resident memory grew ${out.grew.toFixed(0)} MiB; numpy's map of the same column ${numpyGrew.toFixed(0)} MiB`);
  assert.ok(out.grew < 6 * 1024 + 64, `resident memory grew ${out.grew.toFixed(0)} MiB`);
});

test('copy-on-write maps keep their writes: the file is unchanged, a new map sees the old values', () => {
  const path = join(dir, 'cow.npy');
  python(`np.save(${JSON.stringify(path)}, np.arange(10, dtype='<i8'))`);
  const before = readFileSync(path);
  const c = loadNpySync(path, { mmap: 'c' });
  c.data[3] = 999n;
  assert.is(c.get(3), 999n);
  c.close();
  assert.equal(readFileSync(path), before);
  const r = loadNpySync(path, { mmap: 'r' });
  assert.is(r.get(3), 3n);
  r.close();
});

test('what cannot be mapped is refused with a pointer to region reads; without the addon, nativeStatus says why', () => {
  const be = join(dir, 'be.npy');
  python(`np.save(${JSON.stringify(be)}, np.arange(4, dtype='>f4'))`);
  assert.throws(
    () => loadNpySync(be, { mmap: 'r' }),
    (e) => e.code === 'NOT_MAPPABLE' && /big-endian/.test(e.message) && /openNpyFile\(path\)\.read/.test(e.message),
  );
  const objects = join(dir, 'objects.npy');
  python(`np.save(${JSON.stringify(objects)}, np.array([1, 'a'], dtype=object), allow_pickle=True)`);
  assert.throws(
    () => loadNpySync(objects, { mmap: 'r' }),
    (e) => e.code === 'PICKLE_UNSUPPORTED',
  );
  const without = JSON.parse(
    child(
      `
import { loadNpySync, nativeStatus } from '@npyts/core/node';
let message = '';
try { loadNpySync(${JSON.stringify(be)}, { mmap: 'r' }); } catch (e) { message = e.message; }
console.log(JSON.stringify({ status: nativeStatus().mmap, message }));`,
      { NPYTS_NATIVE: '0' },
    ),
  );
  assert.is(without.status.available, false);
  assert.match(without.status.reason, /NPYTS_NATIVE=0/);
  assert.match(without.message, /memory maps need @npyts\/native.*openNpyFile\(path\)\.read/);
});

test('a map is not memory of the JS heap: a 3 GiB map adds nothing to the array buffers V8 counts, and ten opens force no collection for "external memory pressure"', () => {
  const path = join(dir, 'sparse-3g.npy');
  createNpySync(path, { dtype: '<f4', shape: [3 * 2 ** 28] }).close();
  const code = `
import { loadNpySync } from '@npyts/core/node';
const before = process.memoryUsage().arrayBuffers;
const maps = [];
for (let i = 0; i < 10; i++) maps.push(loadNpySync(${JSON.stringify(path)}, { mmap: 'r' }));
console.log(JSON.stringify({ added: process.memoryUsage().arrayBuffers - before, length: maps[9].data.length }));`;
  const r = spawnSync(process.execPath, ['--trace-gc', '--input-type=module', '-e', code], { encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  const { added, length } = JSON.parse(lines.find((l) => l.startsWith('{')));
  assert.is(length, 3 * 2 ** 28);
  assert.ok(added < 1 << 20, `ten 3 GiB maps added ${added} bytes to process.memoryUsage().arrayBuffers`);
  assert.equal(
    lines.filter((l) => l.includes('external memory pressure')),
    [],
  );
});

test.run();
