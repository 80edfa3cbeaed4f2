// The browser side of `npm run bench -- --browser`, bundled for the page by bench/browser.mjs: each
// case timed inside Chromium with performance.now(), the median of `repeats` runs after a warm-up.
import { decodeNpy, decodeNpz, toOrder } from '@npyts/core';
import { pickleCodec } from '@npyts/core/pickle';

async function median(fn, repeats) {
  await fn();
  const times = [];
  for (let i = 0; i < repeats; i++) {
    const t = performance.now();
    await fn();
    times.push(performance.now() - t);
  }
  return times.sort((a, b) => a - b)[repeats >> 1] / 1000;
}

const fetchBytes = async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer());

export async function run(repeats) {
  const r = { cores: navigator.hardwareConcurrency, userAgent: navigator.userAgent };
  // A whole .npy by fetch: the decode is a view of the fetched buffer, so this is fetch's own cost.
  r.fetch_only = await median(() => fetchBytes('/f4.npy'), repeats);
  r.fetch_decode = await median(async () => decodeNpy(await fetchBytes('/f4.npy')), repeats);
  // Every member of the ResNet-like archives, the deflated members inflated in workers by the
  // platform's DecompressionStream (the default), and by fflate on the page's thread (get()).
  for (const kind of ['stored', 'deflated']) {
    const bytes = await fetchBytes(`/resnet_${kind}.npz`);
    r[`resnet_${kind}`] = await median(() => decodeNpz(bytes).readAll(), repeats);
    if (kind === 'deflated') r.resnet_deflated_fflate = await median(() => { for (const _ of decodeNpz(bytes)); }, Math.min(3, repeats));
  }
  // F → C of the 8192² float32 array, and a big-endian float64 file decoded to native order.
  const F = decodeNpy(await fetchBytes('/f4_F.npy'));
  r.toC_inmemory = await median(() => toOrder(F, 'C'), repeats);
  const be = await fetchBytes('/f8_be.npy');
  r.byteswap_inmemory = await median(() => decodeNpy(be), repeats);
  // The floor under it: a fresh buffer of the same size, allocated and written once.
  r.fresh_buffer = await median(() => new Uint8Array(be.length - 128).fill(1), repeats);
  // Object arrays (pickles), decoded by the safe unpickler.
  for (const name of ['objects', 'strings1m']) {
    const bytes = await fetchBytes(`/${name}.npy`);
    r[name] = await median(() => decodeNpy(bytes, { pickle: pickleCodec }), repeats);
  }
  return r;
}
