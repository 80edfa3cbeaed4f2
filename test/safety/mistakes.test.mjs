// The public API walked with the mistakes a user makes in the first hour: each ends in one NpyError
// whose code names the condition and whose message names the file or URL and says what to do.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer } from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NpyError, getField, openNpy } from '@npyts/core';
import { appendNpy, loadNpy, loadNpySync, loadNpz, openNpyFile, openNpz, saveNpy, saveNpz } from '@npyts/core/node';
import { toStdlib } from '@npyts/stdlib';
import { python, scratch } from '../helpers/numpy.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = scratch('npyts-mistakes-');
const at = (name) => join(dir, name);
python(`
np.save(${JSON.stringify(at('w.npy'))}, np.arange(6, dtype='<f4').reshape(2, 3))
np.save(${JSON.stringify(at('objects.npy'))}, np.array([[1, 2], 'x'], dtype=object), allow_pickle=True)
np.save(${JSON.stringify(at('rec.npy'))}, np.zeros(2, [('a', '<i4'), ('b', '<f8')]))
np.savez(${JSON.stringify(at('z.npz'))}, a=np.arange(3), objects=np.array([None], dtype=object))
with open(${JSON.stringify(at('deep.npy'))}, 'wb') as f:
    np.lib.format.write_array_header_2_0(f, {'descr': '<f8', 'fortran_order': False, 'shape': (1,) * 60})
    f.write(np.zeros(1).tobytes())
`);
mkdirSync(at('a-directory'));

/** Each mistake: what is done, the code, and what the message must say (the where and the fix). */
const mistakes = [
  ['an object array loaded without opting in', () => loadNpy(at('objects.npy')), 'PICKLE_UNSUPPORTED', [/objects\.npy/, /allowPickle/]],
  ['an archive with an object member loaded without opting in', () => loadNpz(at('z.npz')), 'PICKLE_UNSUPPORTED', [/z\.npz/, /objects/, /allowPickle/]],
  ['the wrong dtype expected', () => loadNpy(at('w.npy'), { expect: '<f8' }), 'UNEXPECTED_DTYPE', [/w\.npy/, /'<f8'/, /'<f4'/]],
  ['an archive read as a .npy', () => loadNpy(at('z.npz')), 'BAD_MAGIC', [/z\.npz/, /loadNpz/]],
  ['a .npy read as an archive', () => openNpz(at('w.npy')), 'ZIP_FORMAT', [/w\.npy/, /loadNpy/]],
  [
    'a member that is not there',
    async () => {
      const z = await openNpz(at('z.npz'));
      try {
        await z.get('b');
      } finally {
        await z.close();
      }
    },
    'NPZ_KEY',
    [/z\.npz/, /'b'/, /'a'/],
  ],
  ['a field that is not there', () => getField(loadNpySync(at('rec.npy')), 'c'), 'NO_FIELD', [/'c'/, /'a', 'b'/]],
  ['a record array given to toStdlib', () => toStdlib(loadNpySync(at('rec.npy'))), 'DTYPE_MISMATCH', [/toStdlibFields/]],
  ['a value that does not fit its dtype', () => loadNpySync(at('w.npy')).set([0, 0], 'x'), 'BAD_VALUE', [/"x"/, /<f4/]],
  ['a bare typed array where an array is taken', () => saveNpy(at('bare.npy'), new Float32Array(3)), 'BAD_VALUE', [/\{ data, shape/]],
  [
    'rows of another dtype appended',
    async () => {
      await saveNpy(at('log.npy'), { data: new Float32Array(2), shape: [1, 2] });
      await appendNpy(at('log.npy'), { data: new Float64Array(2), shape: [1, 2] });
    },
    'DTYPE_MISMATCH',
    [/log\.npy/, /'<f8'/, /'<f4'/],
  ],
  [
    'a save over a directory',
    () => saveNpy(at('a-directory'), { data: new Float32Array(1), shape: [1] }),
    'NOT_A_FILE',
    [/a-directory/, /directory/, /path of a file/],
  ],
  [
    'a region outside the array',
    async () => {
      const h = await openNpyFile(at('w.npy'));
      try {
        await h.read([0, 0], [5, 1]);
      } finally {
        await h.close();
      }
    },
    'BAD_INDEX',
    [/axis 0/, /length 2/],
  ],
  [
    'a handle used after close',
    async () => {
      const h = await openNpyFile(at('w.npy'));
      await h.close();
      await h.read([0, 0], [1, 1]);
    },
    'CLOSED',
    [/w\.npy/],
  ],
  ['a header past a raised limit', () => loadNpy(at('deep.npy'), { maxHeaderBytes: 100 }), 'HEADER_TOO_LARGE', [/deep\.npy/, /maxHeaderBytes/]],
  ['a list given where an array is written into an archive', () => saveNpz(at('list.npz'), { a: [1, 2, 3] }), 'BAD_VALUE', [/arrayFromValues/]],
];

for (const [what, work, code, says] of mistakes) {
  test(`${what}: one NpyError ${code} that says where and what to do`, async () => {
    const e = await npyErrorOf(work);
    assert.is(e.code, code, e.message);
    for (const pattern of says) assert.match(e.message, pattern);
  });
}

test("a path given to the browser-safe openNpy in Node: without @npyts/core/node loaded, one NpyError NETWORK naming it; with it, the file (paths are one rule, Node's)", async () => {
  // A process that imports the browser-safe entry alone: nothing has registered Node's files.
  const alone = execFileSync(
    process.execPath,
    ['--input-type=module', '-e', "import('@npyts/core').then((m) => m.openNpy('data/x.npy')).catch((e) => console.log(JSON.stringify([e.code, e.message])))"],
    { cwd: root, encoding: 'utf8' },
  );
  const [code, message] = JSON.parse(alone);
  assert.is(code, 'NETWORK', message);
  assert.match(message, /data\/x\.npy/);
  assert.match(message, /@npyts\/core\/node/);
  // Here it is loaded: the same call opens the file.
  const h = await openNpy(at('w.npy'));
  assert.equal(h.shape, [2, 3]);
  await h.close?.();
});

test('a reset connection names the URL and the bytes asked for (NETWORK), not TypeError: terminated', async () => {
  const server = createServer((req) => req.socket.destroy());
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}/w.npy`;
  try {
    const e = await npyErrorOf(() => openNpy(url));
    assert.is(e.code, 'NETWORK');
    assert.match(e.message, /w\.npy/);
    assert.match(e.message, /bytes \d+/);
  } finally {
    server.close();
  }
});

test('an error names its file once: a message that starts with the file is not prefixed again, one that merely starts with the same letters is', () => {
  assert.is(new NpyError('CLOSED', 'w.npy is closed', { file: 'w.npy' }).message, 'w.npy is closed');
  assert.is(new NpyError('BAD_DATA', 'w.npy: cut short', { file: 'w.npy' }).message, 'w.npy: cut short');
  assert.is(new NpyError('BAD_VALUE', 'width 3 is too wide', { file: 'w' }).message, 'w: width 3 is too wide');
  assert.is(new NpyError('BAD_VALUE', 'too wide', { file: 'w', offset: 8 }).message, 'w: too wide (at byte 8)');
});

test('a CLI error is one line that names the file once', async () => {
  const { runCli } = await import('../helpers/numpy.mjs');
  writeFileSync(at('bad.npy'), 'not numpy');
  const r = await runCli(['info', at('bad.npy')]);
  assert.is(r.code, 1);
  assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  assert.is(r.stderr.split(at('bad.npy')).length - 1, 1, r.stderr);
});

test.run();
