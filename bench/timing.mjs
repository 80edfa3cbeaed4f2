// The bench's timing rule (the median of `repeats` runs after the warm-up of bench/warm-up.mjs)
// and the cases whose speed @npyts/native can change, shared by run.mjs, js-paths.mjs and profile.mjs.
import { toOrder } from '@npyts/core';
import { loadNpySync, saveNpySync, openNpzSync } from '@npyts/core/node';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { stillWarming } from './warm-up.mjs';

/** The middle value (the upper one of an even count). */
export const middleOf = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

export function medianTime(fn, repeats) {
  const start = process.hrtime.bigint();
  for (let n = 0; stillWarming(n, Number(process.hrtime.bigint() - start) / 1e9); n++) fn();
  const times = [];
  for (let i = 0; i < repeats; i++) {
    const t = process.hrtime.bigint();
    fn();
    times.push(Number(process.hrtime.bigint() - t) / 1e9);
  }
  return middleOf(times);
}

/**
 * The native-sensitive cases on the bench inputs in `dir`, as functions (inputs they need are
 * loaded on first use), and `cleanup` for the file saveNpySync writes.
 */
export function benchCases(dir) {
  const file = (n) => join(dir, n);
  const out = file('npyts_case_out.npy');
  let f4;
  let F;
  return {
    cases: {
      loadNpy: () => loadNpySync(file('f4.npy')),
      byteswap: () => loadNpySync(file('f8_be.npy')),
      toC: () => toOrder(loadNpySync(file('f4_F.npy')), 'C'),
      toC_inmemory: () => toOrder((F ??= loadNpySync(file('f4_F.npy'))), 'C'),
      saveNpy: () => saveNpySync(out, (f4 ??= loadNpySync(file('f4.npy')))),
      loadNpz: () => {
        const a = openNpzSync(file('deflated.npz'));
        a.getSync('member');
        a.close();
      },
      objects: () => loadNpySync(file('objects.npy'), { allowPickle: true }),
    },
    cleanup: () => rmSync(out, { force: true }),
  };
}

/** Every case of benchCases timed with whatever this process has loaded. */
export function nativeSensitiveCases(dir, repeats) {
  const { cases, cleanup } = benchCases(dir);
  const times = Object.fromEntries(Object.entries(cases).map(([name, fn]) => [name, medianTime(fn, repeats)]));
  cleanup();
  return times;
}

/** The label of the column case (one float32 column of a C-order file of 1024 columns, `rows` rows): run.mjs and paired-cases.mjs --js join on it. */
export function columnCase(rows) {
  return `openNpyFileSync().read: one column of ${Number(((rows * 4096) / 2 ** 30).toFixed(2))} GiB (rows 4 KiB apart)`;
}
