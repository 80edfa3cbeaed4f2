// The one timing rule of the bench: the median of `repeats` runs after one warm-up run.
import { toOrder } from '@npyts/core';
import { loadNpy, saveNpy, loadNpz } from '@npyts/core/node';
import { rmSync } from 'node:fs';
import { join } from 'node:path';

export function medianTime(fn, repeats) {
  fn();
  const times = [];
  for (let i = 0; i < repeats; i++) {
    const t = process.hrtime.bigint();
    fn();
    times.push(Number(process.hrtime.bigint() - t) / 1e9);
  }
  times.sort((a, b) => a - b);
  return times[times.length >> 1];
}

/** The cases whose speed @npyts/native changes, timed with whatever this process has loaded. */
export function nativeSensitiveCases(dir, repeats) {
  const file = (n) => join(dir, n);
  const f4 = loadNpy(file('f4.npy'));
  const F = loadNpy(file('f4_F.npy'));
  const out = file('npyts_js_out.npy');
  const times = {
    loadNpy: medianTime(() => loadNpy(file('f4.npy')), repeats),
    byteswap: medianTime(() => loadNpy(file('f8_be.npy')), repeats),
    toC: medianTime(() => toOrder(loadNpy(file('f4_F.npy')), 'C'), repeats),
    toC_inmemory: medianTime(() => toOrder(F, 'C'), repeats),
    saveNpy: medianTime(() => saveNpy(out, f4), repeats),
    loadNpz: medianTime(() => { const a = loadNpz(file('deflated.npz')); a.get('member'); a.close(); }, repeats),
  };
  rmSync(out, { force: true });
  return times;
}
