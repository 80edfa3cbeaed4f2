// `node bench/onnxruntime-page.mjs DIR [--quick]`: withWeights in a page (onnxruntime-web's wasm build in
// Debian's Chromium, as test/apps/ort-browser.test.mjs runs it) on the models of bench/onnxruntime-large.mjs
// (about 256 MiB and 1 GiB of .safetensors; 64 MiB with --quick), the weights chosen through
// <input type=file> (File objects: Blobs backed by the file). Each case runs in a fresh browser, times
// withWeights + InferenceSession.create + one run, and reads the renderer's peak resident size
// (VmHWM, reset through /proc/PID/clear_refs once the page and its modules are loaded) over its
// resident size then. Cases interleave over rounds, medians with their spread. Cases:
// - slices: withWeights(model, file): each tensor handed to ORT as its slice of the File, unread;
// - read: withWeights(model, await openWeights(file)): each tensor read into a buffer of its own and
//   handed to ORT as external data in memory (what a Blob got before slices);
// - ort: ORT's own session from the exported model and its external data file chosen the same way.
// The swapped sessions' outputs are checked against PyTorch's. Prints one JSON object. Linux only (/proc).
import { copyFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleForPage, pageOverData, procStatus, rendererPids } from '../test/helpers/chromium.mjs';
import { middleOf } from './timing.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const [dir] = process.argv.slice(2);
if (!dir) throw new Error('usage: node bench/onnxruntime-page.mjs DIR [--quick]');
const quick = process.argv.includes('--quick');
const rounds = quick ? 2 : 3;
const cases = ['slices', 'read', 'ort'];
const root = join(here, '..');

await bundleForPage(
  "export * as ort from 'onnxruntime-web/wasm'; export { withWeights, toOrtTensor, fromOrtTensor } from '@npyts/onnxruntime'; export { decodeNpy, openWeights } from '@npyts/core';",
  join(dir, 'bundle.js'),
);
copyFileSync(join(root, 'node_modules', 'onnxruntime-web', 'dist', 'ort-wasm-simd-threaded.wasm'), join(dir, 'ort.wasm'));

/** One case in a fresh browser: seconds, the renderer's peak over its resident size before the case. */
async function once(sub, which) {
  const marker = `--npyts-ort-page=${process.pid}`;
  const { page, base, problems, close } = await pageOverData(dir, [marker]);
  try {
    await page.setContent('<input id="files" type="file" multiple>');
    await page.setInputFiles('#files', [join(dir, sub, 'big.safetensors'), join(dir, sub, 'big.onnx.data')]);
    // The modules and the wasm binary loaded, uncounted.
    await page.evaluate(async (base) => {
      const { ort } = await import(`${base}/data/bundle.js`);
      ort.env.wasm.numThreads = 1;
      ort.env.wasm.wasmBinary = await (await fetch(`${base}/data/ort.wasm`)).arrayBuffer();
    }, base);
    const pids = rendererPids(marker);
    for (const pid of pids) writeFileSync(`/proc/${pid}/clear_refs`, '5');
    const before = Math.max(...pids.map((pid) => procStatus(pid, 'VmRSS')));
    const r = await page.evaluate(
      async ([base, sub, which]) => {
        const { ort, withWeights, toOrtTensor, fromOrtTensor, decodeNpy, openWeights } = await import(`${base}/data/bundle.js`);
        const [weights, data] = [...document.getElementById('files').files];
        const bytes = async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer());
        const x = toOrtTensor(decodeNpy(await bytes(`${base}/data/${sub}/x.npy`)));
        const modelUrl = new URL(`${base}/data/${sub}/big.onnx`);
        const t = performance.now();
        let session;
        if (which === 'ort') session = await ort.InferenceSession.create(await bytes(modelUrl), { externalData: [{ path: 'big.onnx.data', data }] });
        else {
          const r = await withWeights(modelUrl, which === 'slices' ? weights : await openWeights(weights));
          session = await ort.InferenceSession.create(r.model, { externalData: r.externalData });
        }
        const y = fromOrtTensor((await session.run({ x })).y).data;
        const seconds = (performance.now() - t) / 1000;
        let worst = 0;
        if (which !== 'ort') {
          const want = decodeNpy(await bytes(`${base}/data/${sub}/want.npy`)).data;
          const scale = want.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
          worst = want.reduce((m, v, i) => Math.max(m, Math.abs(v - y[i])), 0) / scale;
        }
        await session.release();
        return { seconds, worst };
      },
      [base, sub, which],
    );
    if (!(r.worst <= 1e-4)) throw new Error(`${which}: the session's output differs from PyTorch's by ${r.worst} of its scale`);
    if (problems.length > 0) throw new Error(problems.join('\n'));
    const peak = Math.max(...pids.map((pid) => procStatus(pid, 'VmHWM')));
    return { seconds: r.seconds, peak: peak - before };
  } finally {
    await close();
  }
}

const sizes = [];
for (const mib of quick ? [64] : [256, 1024]) {
  const sub = `${mib}`;
  const made = JSON.parse(
    execFileSync('python3', ['-W', 'ignore', join(here, 'onnxruntime_side.py'), join(dir, sub), String(Math.round((mib * 2 ** 20) / 1e6))], {
      encoding: 'utf8',
    }),
  );
  const seen = Object.fromEntries(cases.map((k) => [k, []]));
  for (let r = 0; r < rounds; r++) for (const k of r % 2 === 0 ? cases : [...cases].reverse()) seen[k].push(await once(sub, k));
  const spread = (xs) => [Math.min(...xs), Math.max(...xs)];
  const rows = cases.map((k) => {
    const overOrt = seen[k].map((m, i) => m.peak - seen.ort[i].peak);
    return {
      case: k,
      seconds: middleOf(seen[k].map((m) => m.seconds)),
      seconds_spread: spread(seen[k].map((m) => m.seconds)),
      peak: middleOf(seen[k].map((m) => m.peak)),
      peak_spread: spread(seen[k].map((m) => m.peak)),
      peak_over_ort: middleOf(overOrt),
      peak_over_ort_spread: spread(overOrt),
    };
  });
  sizes.push({ mib, ...made, largest_tensor: made.width * made.width * 4, rows });
}
console.log(JSON.stringify({ rounds, sizes }));
