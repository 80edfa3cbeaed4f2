// `node bench/paired-cases.mjs DIR [--quick] [--only CASE…]`: the main cases as interleaved rounds against numpy
// (bench/paired.mjs), the default (async) names beside the …Sync ones, with the targets of issue 29.
// Run by run.mjs in a process of its own, so that npyts' side is a lean process as numpy's is; prints
// the rows as JSON. Inputs are the bench's own (run.mjs makes them).
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadNpy, loadNpySync, nativeStatus, openNpyFile, openNpyFileSync, openNpz, saveNpy, saveNpySync } from '@npyts/core/node';
import { main as cliMain } from '../packages/cli/dist/main.js';
import { paired, startNumpy, verdict } from './paired.mjs';
import { benchCases, columnCase } from './timing.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const [dir] = process.argv.slice(2);
if (!dir) throw new Error('usage: node bench/paired-cases.mjs DIR [--quick] [--only CASE…]');
const quick = process.argv.includes('--quick');
// Only the rows of these numpy cases (e.g. `--only objects loadNpy`), for a quick look at a few.
const only = process.argv.includes('--only') ? process.argv.slice(process.argv.indexOf('--only') + 1) : null;
const file = (n) => join(dir, n);
let f4;
const pairedRows = [];
const numpy = startNumpy(join(here, 'numpy_side.py'), dir);
const { cases: c, cleanup } = benchCases(dir);
const asyncOut = file('npyts_async_out.npy');
const newPath = file('npyts_save_new.npy');
// A save that replaces no file: ext4 then does not write the new file out at the rename (see docs/performance.md).
const saveToNewPath = () => {
  rmSync(newPath, { force: true });
  saveNpySync(newPath, (f4 ??= loadNpySync(file('f4.npy'))));
};
const pairOf = async (op, name, fn, target) => {
  if (only && !only.includes(name)) return;
  const p = await paired(numpy, name, fn, { rounds: quick ? 3 : 5, repeats: quick ? 1 : 3 });
  pairedRows.push({ op, numpy_case: name, ...p, target, verdict: verdict(p, target) });
};
// `--js` (run with NPYTS_NATIVE=0): the cases the addon speeds up, on the JavaScript paths alone,
// with the targets of issue 43 for an install without the addon; the column of run.mjs's column.npy.
const jsOnly = process.argv.includes('--js');
if (jsOnly !== !nativeStatus().loaded) throw new Error('paired-cases.mjs: --js runs with NPYTS_NATIVE=0, and only then');
try {
  if (jsOnly) {
    await pairOf('loadNpySync f4', 'loadNpy', c.loadNpy, 1.1);
    await pairOf('saveNpySync f4', 'saveNpy', c.saveNpy, 1.3);
    await pairOf('saveNpy f4 (async)', 'saveNpy', () => saveNpy(asyncOut, (f4 ??= loadNpySync(file('f4.npy')))), 1.3);
    await pairOf('saveNpySync f4 to a new path (the old file removed first, both sides)', 'saveNpy_new', saveToNewPath, 1.3);
    await pairOf('load big-endian f8 → native', 'byteswap', c.byteswap, 1.0);
    await pairOf('object array, 100k mixed values (allowPickle)', 'objects', c.objects, 1.5);
    const col = openNpyFileSync(file('column.npy'));
    const [rows] = col.header.shape;
    const colAsync = await openNpyFile(file('column.npy'));
    try {
      await pairOf(columnCase(rows), 'column', () => col.read([0, 7], [rows, 1]), 3);
      await pairOf('openNpyFile().read (async): the same column', 'column', () => colAsync.read([0, 7], [rows, 1]), 3);
    } finally {
      col.close();
      await colAsync.close();
    }
  } else {
    await pairOf('loadNpySync f4', 'loadNpy', c.loadNpy, 1.1);
    await pairOf('loadNpy f4 (async)', 'loadNpy', () => loadNpy(file('f4.npy')), 1.1);
    await pairOf('saveNpySync f4', 'saveNpy', c.saveNpy, 1.0);
    await pairOf('saveNpy f4 (async)', 'saveNpy', () => saveNpy(asyncOut, (f4 ??= loadNpySync(file('f4.npy')))), 1.1);
    await pairOf('saveNpySync f4 to a new path (the old file removed first, both sides)', 'saveNpy_new', saveToNewPath, 1.0);
    await pairOf('load big-endian f8 → native', 'byteswap', c.byteswap, 1.2);
    await pairOf('F → C in memory (toOrder)', 'toC_inmemory', c.toC_inmemory, 0.5);
    await pairOf('object array, 100k mixed values (allowPickle)', 'objects', c.objects, 1.5);
    await pairOf('openNpzSync deflated member', 'loadNpz', c.loadNpz, 1.0);
    // The CLI in this process (its main), against numpy's equivalents: savetxt, loadtxt, assert_allclose.
    const silent = { stdout() {}, stderr() {} };
    const cli = async (...args) => {
      if ((await cliMain(args, silent)) > 1) throw new Error(`npyts ${args.join(' ')} failed`);
    };
    await pairOf('npyts convert .npy → .csv', 'csv_export', () => cli('convert', file('table.npy'), file('npyts_out.csv')), 1.0);
    await pairOf('npyts convert .csv → .npy', 'csv_import', () => cli('convert', file('table.csv'), file('npyts_out.npy')), 1.0);
    await pairOf('npyts diff (two arrays of doubles)', 'diff', () => cli('diff', file('diff_a.npy'), file('diff_b.npy')), 1.0);
    // Many small arrays: a ResNet-like state dict (320 members), stored and deflated, and 10 000 files.
    const every = async (path) => {
      const z = await openNpz(path);
      try {
        await z.getAll();
      } finally {
        await z.close();
      }
    };
    await pairOf('loadNpz, ResNet-like archive, stored (async getAll)', 'resnet_stored', () => every(file('resnet_stored.npz')), 1.0);
    await pairOf('loadNpz, ResNet-like archive, deflated (async getAll)', 'resnet_deflated', () => every(file('resnet_deflated.npz')), 1.0);
    await pairOf(
      '10 000 files of 4 KiB (loadNpySync)',
      'many_files',
      () => {
        for (let i = 0; i < 10_000; i++) loadNpySync(file(`many/${String(i).padStart(5, '0')}.npy`));
      },
      1.0,
    );
    await pairOf('object array, 1M short strings (allowPickle)', 'strings1m', () => loadNpySync(file('strings1m.npy'), { allowPickle: true }), 1.5);
  }
} finally {
  await numpy.close();
  cleanup();
  rmSync(asyncOut, { force: true });
  rmSync(newPath, { force: true });
  rmSync(file('npyts_out.csv'), { force: true });
  rmSync(file('npyts_out.npy'), { force: true });
}

process.stdout.write(JSON.stringify(pairedRows));
