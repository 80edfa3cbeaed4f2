// The browser side of `npm run bench -- --browser`, bundled for the page by bench/browser.mjs: each
// case timed inside Chromium with performance.now(), the median of `repeats` runs after the bench's
// warm-up (bench/warm-up.mjs).
import { decodeNpy, decodeNpz, toOrder } from '@npyts/core';
import { pickleCodec } from '@npyts/core/pickle';
import { stillWarming } from './warm-up.mjs';

async function median(fn, repeats) {
  const start = performance.now();
  for (let n = 0; stillWarming(n, (performance.now() - start) / 1000); n++) await fn();
  const times = [];
  for (let i = 0; i < repeats; i++) {
    const t = performance.now();
    await fn();
    times.push(performance.now() - t);
  }
  return times.sort((a, b) => a - b)[repeats >> 1] / 1000;
}

const fetchBytes = async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer());

/** Each case: its input fetched once (outside the timing), and the work timed. */
const cases = {
  // A whole .npy by fetch: the decode is a view of the fetched buffer, so this is fetch's own cost.
  fetch_only: async () => () => fetchBytes('/f4.npy'),
  fetch_decode: async () => async () => decodeNpy(await fetchBytes('/f4.npy')),
  // Every member of the ResNet-like archives: deflated members inflated in workers by the
  // platform's DecompressionStream (readAll, the default), or by fflate on the page's thread (get).
  resnet_stored: async () => {
    const bytes = await fetchBytes('/resnet_stored.npz');
    return () => decodeNpz(bytes).getAll();
  },
  // The same, opened without the CRC-32 check (the documented opt-out: CRC-32 runs in JavaScript here).
  resnet_stored_nocrc: async () => {
    const bytes = await fetchBytes('/resnet_stored.npz');
    return () => decodeNpz(bytes, { checkCrc: false }).getAll();
  },
  resnet_deflated: async () => {
    const bytes = await fetchBytes('/resnet_deflated.npz');
    return () => decodeNpz(bytes).getAll();
  },
  resnet_deflated_fflate: async () => {
    const bytes = await fetchBytes('/resnet_deflated.npz');
    return () => {
      for (const _ of decodeNpz(bytes));
    };
  },
  // F → C of the 8192² float32 array, and a big-endian float64 file decoded to native order.
  toC_inmemory: async () => {
    const F = decodeNpy(await fetchBytes('/f4_F.npy'));
    return () => toOrder(F, 'C');
  },
  byteswap_inmemory: async () => {
    const be = await fetchBytes('/f8_be.npy');
    return () => decodeNpy(be);
  },
  // The floor under it: a fresh buffer of the same size, allocated and written once.
  fresh_buffer: async () => {
    const n = (await fetchBytes('/f8_be.npy')).length - 128;
    return () => new Uint8Array(n).fill(1);
  },
  // Object arrays (pickles), decoded by the safe unpickler.
  objects: async () => {
    const bytes = await fetchBytes('/objects.npy');
    return () => decodeNpy(bytes, { pickle: pickleCodec });
  },
  strings1m: async () => {
    const bytes = await fetchBytes('/strings1m.npy');
    return () => decodeNpy(bytes, { pickle: pickleCodec });
  },
};

export const caseNames = Object.keys(cases);

/** Prepare a case (fetch its input) and return the work to time, for a profiler around it. */
export async function prepare(name) {
  return cases[name]();
}

/** Median seconds of each case named (all by default). */
export async function run(repeats, names = caseNames) {
  const r = { cores: navigator.hardwareConcurrency };
  for (const name of names) {
    const fn = await cases[name]();
    r[name] = await median(fn, name === 'resnet_deflated_fflate' ? Math.min(3, repeats) : repeats);
  }
  return r;
}
