// `npm run bench [-- --quick] [-- --json] [-- --browser]`: npyts against numpy and Node's own file I/O,
// in one run; with --browser also the browser cases inside Chromium (bench/browser.mjs).
// Inputs are made by numpy; every time is the median of several runs after a warm-up.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, release, totalmem, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeNpy, readHeader, openNpyUrl } from '@npyts/core';
import { loadNpySync, openNpzSync, saveNpzSync, openNpyFile, openNpyFileSync, regionStats, nativeStatus } from '@npyts/core/node';
import { startNginx } from '../test/helpers/nginx.mjs';
import { unzipSync } from 'fflate';
import { parse as npyjsParse } from 'npyjs';
import { parseNpy as numpyTsParse } from 'numpy-ts';
import * as tf from '@tensorflow/tfjs-core';
import { toTensor } from '@npyts/tfjs';
import { columnCase, medianTime, middleOf, nativeSensitiveCases } from './timing.mjs';
import { paired, startNumpy, verdict } from './paired.mjs';
import { browserBench } from './browser.mjs';

const here = dirname(fileURLToPath(import.meta.url));
/** Run a bench script of this folder in a process of its own; what it prints is JSON. `js`: without @npyts/native. */
function benchScript(script, args, { js = false } = {}) {
  const out = execFileSync(process.execPath, [join(here, script), ...args], {
    encoding: 'utf8',
    maxBuffer: 1 << 20,
    stdio: ['ignore', 'pipe', 'inherit'],
    ...(js ? { env: { ...process.env, NPYTS_NATIVE: '0' } } : {}),
  });
  return JSON.parse(out);
}
const quick = process.argv.includes('--quick');
const asJSON = process.argv.includes('--json');
const inBrowser = process.argv.includes('--browser');
const MIB = quick ? 16 : 256;
const REPEATS = quick ? 3 : 7;
const dir = join(tmpdir(), `npyts-bench-${MIB}`);
mkdirSync(dir, { recursive: true });

const py = (...args) => JSON.parse(execFileSync('python3', [join(here, 'numpy_side.py'), ...args], { encoding: 'utf8', maxBuffer: 1 << 26 }) || 'null');
const log = (s) => {
  if (!asJSON) process.stderr.write(s + '\n');
};

log(`making ${MIB} MiB inputs with numpy in ${dir} …`);
py('make', dir, String(MIB));
const file = (n) => join(dir, n);

const median = (fn, repeats = REPEATS) => medianTime(fn, repeats);

// tfjs's CPU backend prints a notice on its first write in Node; make that write quietly.
await import('@tensorflow/tfjs-backend-cpu');
await tf.setBackend('cpu');
{
  const warn = console.warn;
  console.warn = () => {};
  tf.scalar(0).dispose();
  console.warn = warn;
}

const thpMode = () => {
  try {
    return /\[(\w+)\]/.exec(readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8'))[1];
  } catch {
    return 'n/a';
  }
};
log('timing numpy …');
const np = py('time', dir, String(REPEATS));
log('timing npyts …');
const f4 = loadNpySync(file('f4.npy'));
const rec3000 = readFileSync(file('rec3000.npy'));
const F = loadNpySync(file('f4_F.npy'));
const outFile = file('npyts_out.npy');
// Decoding bytes already in memory: npyts and the other JavaScript readers on the same buffer.
const f4bytes = readFileSync(file('f4.npy'));
const f4copy = () => {
  const b = new Uint8Array(f4bytes.length);
  b.set(f4bytes);
  return b;
};
const sameBytes = {
  npyts: median(() => decodeNpy(f4bytes)),
  npyts_copy: median(() => decodeNpy(f4bytes, { copy: true })),
  npyjs: median(() => npyjsParse(f4bytes.buffer.slice(f4bytes.byteOffset, f4bytes.byteOffset + f4bytes.length))),
  numpyts: median(() => numpyTsParse(f4bytes)),
  copy: median(f4copy),
};
const ours = {
  ...nativeSensitiveCases(dir, REPEATS),
  readFileSync: median(() => readFileSync(file('f4.npy'))),
  writeFileSync: median(() => writeFileSync(outFile, new Uint8Array(f4.data.buffer))),
  header3000: median(() => readHeader(rec3000), Math.max(REPEATS, 20)),
  decodeNpy_inmemory: median(() => decodeNpy(readFileSync(file('f4.npy')))),
  fflateUnzip: median(() => unzipSync(readFileSync(file('deflated.npz')))),
};
// The same cases on the JavaScript paths alone (no @npyts/native), in a child process.
const jsOnly = benchScript('js-paths.mjs', [dir, String(REPEATS)], { js: true });
const member = (() => {
  const a = openNpzSync(file('deflated.npz'));
  const m = a.getSync('member');
  a.close();
  return m;
})();
ours.saveNpz = median(() => saveNpzSync(outFile + '.npz', { member }, { compress: true }), Math.max(3, REPEATS >> 1));
rmSync(outFile + '.npz', { force: true });
// toTensor against tfjs's own transpose of the same Fortran-order 8192² data.
ours.toTensor = median(() => toTensor(F).dispose());
ours.tfTranspose = median(
  () => {
    // The Fortran data is a C-order tensor of the reversed shape; tf.transpose makes it row-major.
    const t = tf.tensor(F.data, [...F.shape].reverse(), 'float32');
    const tt = tf.transpose(t);
    tt.dataSync();
    t.dispose();
    tt.dispose();
  },
  Math.min(REPEATS, 3),
);
rmSync(outFile, { force: true });

// The main cases again as interleaved rounds against numpy (bench/paired-cases.mjs), in a process of
// their own: numpy answers from a lean process, and npyts' side should not carry this one's state
// (tfjs, and the gigabyte of inputs the cases above hold).
log('interleaved rounds against numpy …');
const pairedRows = benchScript('paired-cases.mjs', [dir, ...(quick ? ['--quick'] : [])]);

// GGUF: a Q4_K file dequantized to float32, against gguf-py and against reading as many float32 bytes (bench/gguf.mjs).
log('GGUF …');
const gguf = benchScript('gguf.mjs', [join(dir, 'gguf'), ...(quick ? ['--quick'] : [])]);

// Reference sets (issue 69): a set of 10 000 .npy files against numpy reading each header, and dask
// over the set against dask over the files np.load'ed (bench/refs.mjs).
log('reference sets …');
const refSets = benchScript('refs.mjs', [join(dir, 'refs'), ...(quick ? ['--quick'] : [])]);

// LoRA (issue 70): an adapter merged into a GPT-2 of about 1 GiB and saved, against peft's
// merge_and_unload() and save_pretrained (bench/lora.mjs).
log('LoRA merge …');
const lora = benchScript('lora.mjs', [join(dir, 'lora'), ...(quick ? ['--quick'] : [])]);

// Many small arrays: every member of a ResNet-like state dict (320 members), and 10 000 files of 4 KiB.
const allMembers = (path) => {
  const z = openNpzSync(path);
  for (const name of z.names) z.getSync(name);
  z.close();
};
// The same through node:zlib alone (libdeflate off): the browser's baseline, zlib against zlib.
const allMembersByZlib = (path) => {
  process.env.NPYTS_LIBDEFLATE = '0';
  try {
    allMembers(path);
  } finally {
    delete process.env.NPYTS_LIBDEFLATE;
  }
};
const manyFiles = Array.from({ length: 10_000 }, (_, i) => file(`many/${String(i).padStart(5, '0')}.npy`));
const beBytes = readFileSync(file('f8_be.npy'));
const small = {
  resnet_stored: median(() => allMembers(file('resnet_stored.npz'))),
  resnet_deflated: median(() => allMembers(file('resnet_deflated.npz'))),
  many_files: median(() => {
    for (const f of manyFiles) loadNpySync(f);
  }),
  byteswap_inmemory: median(() => decodeNpy(beBytes)),
  fresh_buffer: median(() => new Uint8Array(beBytes.length - 128).fill(1)),
  strings1m: median(() => loadNpySync(file('strings1m.npy'), { allowPickle: true })),
};
// The browser cases as rounds too: each round, every page case (a fresh Chromium), then its
// baselines (numpy's from the long-lived process, Node's here); each row reports the median of the
// rounds' ratios and their spread.
let browser = null;
if (inBrowser) {
  log('the browser cases, in Chromium …');
  const numpy = startNumpy(join(here, 'numpy_side.py'), dir);
  const rounds = [];
  try {
    for (let r = 0; r < (quick ? 1 : 3); r++) {
      const page = await browserBench(dir, REPEATS);
      const base = {
        resnet_deflated_zlib: median(() => allMembersByZlib(file('resnet_deflated.npz'))),
        resnet_deflated: median(() => allMembers(file('resnet_deflated.npz'))),
      };
      for (const name of ['resnet_stored', 'toC_inmemory', 'byteswap_inmemory', 'objects', 'strings1m']) base[name] = await numpy.time(name, REPEATS);
      rounds.push({ page, base });
    }
  } finally {
    await numpy.close();
  }
  browser = { chromium: rounds[0].page.chromium, cores: rounds[0].page.cores, rounds };
}

// One load in a fresh process, as a script that loads its weights once does: each runtime's own
// clock around the call only (start-up and imports excluded), median over REPEATS processes.
// The two alternate, and take turns going first: on this VM, memory freed by an earlier process is
// handed back to the host after about two seconds, and whoever touches it next pays to fault it in.
// Each case runs in three processes per round: npyts with the addon, npyts without it
// (NPYTS_NATIVE=0), numpy; the three take turns going first.
const onceCases = {
  f4: { npyts: `loadNpySync(${JSON.stringify(file('f4.npy'))})`, numpy: `np.load(${JSON.stringify(file('f4.npy'))})` },
  objects: {
    npyts: `loadNpySync(${JSON.stringify(file('objects.npy'))}, { allowPickle: true })`,
    numpy: `np.load(${JSON.stringify(file('objects.npy'))}, allow_pickle=True)`,
  },
};
const onceArgs = (who, c) =>
  who === 'numpy'
    ? ['python3', ['-c', `import numpy as np, time\nt = time.perf_counter(); ${c.numpy}; print(time.perf_counter() - t)`], process.env]
    : [
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `import { loadNpySync } from '@npyts/core/node'; const t = performance.now(); ${c.npyts}; console.log((performance.now() - t) / 1000);`,
        ],
        { ...process.env, NPYTS_NATIVE: who === 'npyts' ? '1' : '0' },
      ];
const freshProcesses = {};
for (const [name, c] of Object.entries(onceCases)) {
  const times = { npyts: [], npyts_js: [], numpy: [] };
  const order = ['npyts', 'npyts_js', 'numpy'];
  for (let i = 0; i < REPEATS; i++) {
    for (let k = 0; k < 3; k++) {
      const who = order[(i + k) % 3];
      const [cmd, args, env] = onceArgs(who, c);
      times[who].push(Number(execFileSync(cmd, args, { encoding: 'utf8', cwd: here, env })));
    }
  }
  // Per round, each npyts time over numpy's of the same round: the spread of those ratios.
  const ratios = (who) => times[who].map((t, i) => t / times.numpy[i]).sort((a, b) => a - b);
  freshProcesses[name] = {
    npyts: middleOf(times.npyts),
    npyts_js: middleOf(times.npyts_js),
    numpy: middleOf(times.numpy),
    spread: { npyts: [ratios('npyts')[0], ratios('npyts').at(-1)], npyts_js: [ratios('npyts_js')[0], ratios('npyts_js').at(-1)] },
  };
}
const freshProcess = freshProcesses.f4;

// Peak memory of a whole-file load, each in a fresh process. VmHWM is per address space; getrusage's
// maxrss would carry this (large) parent's peak across fork and exec.
const hwm = "Number(/VmHWM:\\s+(\\d+)/.exec(require('fs').readFileSync('/proc/self/status', 'utf8'))[1]) * 1024";
const nodePeak = (code) =>
  Number(
    execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { createRequire } from 'node:module'; const require = createRequire(import.meta.url); ${code}; console.log(${hwm});`,
      ],
      { encoding: 'utf8', cwd: here },
    ),
  );
const pyPeak = (code) =>
  Number(
    execFileSync(
      'python3',
      ['-c', `import numpy as np, re\n${code}\nprint(int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)) * 1024)`],
      { encoding: 'utf8' },
    ),
  );
const rss = {
  npyts_loadNpy: nodePeak(`const { loadNpySync } = await import('@npyts/core/node'); loadNpySync(${JSON.stringify(file('f4.npy'))})`),
  node_baseline: nodePeak(`await import('@npyts/core/node')`),
  numpy_load: pyPeak(`np.load(${JSON.stringify(file('f4.npy'))})`),
  python_baseline: pyPeak(''),
};

// Region reads of a large, mostly sparse file: one row and one 8-column stripe through every row.
const GIB = quick ? 1 : 6;
const bigFile = file(`big-${GIB}g.npy`);
const big = py('make-big', bigFile, String(GIB));
const [bigRows] = big.shape;
const npRegions = py('time-regions', bigFile, String(REPEATS));
const regionCase = (read) => {
  const before = { ...regionStats };
  const t = median(read);
  return { seconds: t, bytes: (regionStats.bytes - before.bytes) / (REPEATS + 1) };
};
const handle = openNpyFileSync(bigFile);
const regions = {
  row: regionCase(() => handle.read([bigRows >> 1, 0], [1, 32768])),
  column_block: regionCase(() => handle.read([0, 100], [bigRows, 8])),
};
handle.close();
let http = null;
try {
  const server = await startNginx(dir);
  try {
    const h = await openNpyUrl(`${server.base}/${bigFile.split('/').pop()}`);
    const httpCase = async (start, count) => {
      await h.read(start, count);
      const times = [];
      let bytesMoved = 0;
      let requests = 0;
      for (let i = 0; i < REPEATS; i++) {
        const b0 = h.stats.bytes;
        const r0 = h.stats.requests;
        const t = process.hrtime.bigint();
        await h.read(start, count);
        times.push(Number(process.hrtime.bigint() - t) / 1e9);
        bytesMoved = h.stats.bytes - b0;
        requests = h.stats.requests - r0;
      }
      return { seconds: middleOf(times), bytes: bytesMoved, requests };
    };
    http = { row: await httpCase([bigRows >> 1, 0], [1, 32768]), column_block: await httpCase([0, 100], [bigRows, 8]) };
  } finally {
    server.stop();
  }
} catch (e) {
  log(`(no HTTP region case: ${e.message})`);
}
// One column of a C-order float32 file whose rows are 4 KiB apart (every page holds one value of it).
const colFile = file('column.npy');
const colGib = quick ? 0.25 : 1;
const npColumn = py('column', colFile, String(colGib), String(REPEATS));
const [colRows] = npColumn.shape;
const colHandle = openNpyFileSync(colFile);
const column = { file_gib: colGib, shape: npColumn.shape, npyts: median(() => colHandle.read([0, 7], [colRows, 1])), numpy_mmap: npColumn.numpy_mmap };
colHandle.close();
const colAsync = await openNpyFile(colFile);
{
  const times = [];
  for (let i = 0; i < REPEATS; i++) {
    const t = process.hrtime.bigint();
    await colAsync.read([0, 7], [colRows, 1]);
    times.push(Number(process.hrtime.bigint() - t) / 1e9);
  }
  column.npyts_async = middleOf(times);
}
await colAsync.close();
// The same region reads as interleaved rounds against numpy's memory map (its own process again).
{
  const numpyRegions = startNumpy(join(here, 'numpy_side.py'), dir);
  const pairOf = async (op, name, fn, target) => {
    const p = await paired(numpyRegions, name, fn, { rounds: quick ? 3 : 5, repeats: quick ? 1 : 5 });
    pairedRows.push({ op, numpy_case: name, ...p, target, verdict: verdict(p, target) });
  };
  const h = openNpyFileSync(bigFile);
  const c = openNpyFileSync(colFile);
  const ca = await openNpyFile(colFile);
  try {
    await pairOf(`openNpyFileSync().read: one row of ${GIB} GiB`, 'region_row', () => h.read([bigRows >> 1, 0], [1, 32768]), 1.5);
    await pairOf(`openNpyFileSync().read: an 8-column stripe of ${GIB} GiB`, 'region_block', () => h.read([0, 100], [bigRows, 8]), 1.5);
    await pairOf(columnCase(colRows), 'column', () => c.read([0, 7], [colRows, 1]), 1.2);
    await pairOf(`openNpyFile().read (async): the same column`, 'column', () => ca.read([0, 7], [colRows, 1]), 1.2);
  } finally {
    h.close();
    c.close();
    await ca.close();
    await numpyRegions.close();
  }
}
// The cases the addon speeds up, as interleaved rounds on the JavaScript paths alone (NPYTS_NATIVE=0,
// a process of its own), now that column.npy is there: the second column of the table below.
log('interleaved rounds against numpy without the addon …');
const pairedJsRows = benchScript('paired-cases.mjs', [dir, '--js', ...(quick ? ['--quick'] : [])], { js: true });
rmSync(colFile, { force: true });
const regionPeak = {
  npyts: nodePeak(
    `const { openNpyFileSync } = await import('@npyts/core/node'); const h = openNpyFileSync(${JSON.stringify(bigFile)}); h.read([0, 100], [${bigRows}, 8]); h.close()`,
  ),
  numpy: pyPeak(`a = np.load(${JSON.stringify(bigFile)}, mmap_mode='r'); b = np.array(a[:, 100:108])`),
};
rmSync(bigFile, { force: true });

// Ragged data: npyts' plain-.npy layouts against numpy's pickled object arrays (bench/ragged.mjs).
log('ragged data …');
const ragged = benchScript('ragged.mjs', [dir, ...(quick ? ['--quick'] : [])]);

// tfjs models: tfjs's own loader against loadLayersModel(npzHandler(...)), fresh processes (bench/tfjs-models.mjs).
log('tfjs models …');
const tfjsModels = benchScript('tfjs-models.mjs', [join(dir, 'tfjs-models'), String(Math.max(3, REPEATS >> 1)), String(quick ? 5e6 : 50e6)]);

// Weight files as users hold them: .safetensors and torch.save's .pt against Python's loaders (bench/weights.mjs).
log('weight files …');
const weights = benchScript('weights.mjs', [join(dir, 'weights'), ...(quick ? ['--quick'] : [])]);

// A .keras ResNet50 into tfjs against Keras's load_model and tfjs's own format (bench/keras-models.mjs).
log('Keras models …');
const kerasModels = benchScript('keras-models.mjs', [join(dir, 'keras-models'), String(quick ? 1 : 3)]);

// A fresh process's mapped .pt and one 64 MiB tensor, against a fresh torch.load(mmap=True) (bench/torch-fresh.mjs).
log('fresh-process mapped .pt …');
const torchFresh = benchScript('torch-fresh.mjs', [join(dir, 'torch-fresh'), String(quick ? 2 : 5)]);

// Resident memory of a tfjs model whose weights come from a mapped .safetensors (bench/tfjs-mapped-rss.mjs).
log('tfjs model from a mapped .safetensors …');
const tfjsMappedRss = benchScript('tfjs-mapped-rss.mjs', [join(dir, 'tfjs-mapped-rss'), String(quick ? 0.25 : 2)]);

// checkSession against one session.run on a ResNet-18 export (bench/onnxruntime-check.mjs).
log('onnxruntime checkSession …');
const ortCheck = benchScript('onnxruntime-check.mjs', [join(dir, 'onnxruntime-check'), String(REPEATS)]);

// withWeights on a ~500 MB state_dict against reading the file once, time and peak RSS (bench/onnxruntime-weights.mjs).
log('onnxruntime withWeights …');
const ortWeights = benchScript('onnxruntime-weights.mjs', [join(dir, 'onnxruntime-weights'), ...(quick ? ['--quick'] : [])]);

// A ~1 GiB .pt converted to sharded .safetensors against huggingface_hub's save_torch_state_dict, time and peak RSS (bench/shards.mjs).
log('sharded .safetensors convert …');
const shards = benchScript('shards.mjs', [join(dir, 'shards'), ...(quick ? ['--quick'] : [])]);
// withWeights + session of ~256 MiB and ~1 GiB models against ORT's own loader, time and peak VmHWM (bench/onnxruntime-large.mjs).
log('onnxruntime withWeights, large models …');
const ortLarge = benchScript('onnxruntime-large.mjs', [join(dir, 'onnxruntime-large'), ...(quick ? ['--quick'] : [])]);
// withWeights in a page (Chromium) from a File, against ORT's own loader of its external data file (bench/onnxruntime-page.mjs).
let ortPage = null;
if (inBrowser) {
  log('onnxruntime withWeights in a page …');
  ortPage = benchScript('onnxruntime-page.mjs', [join(dir, 'onnxruntime-page'), ...(quick ? ['--quick'] : [])]);
}
// ~1 GiB of Dense weights into tfjs from .safetensors, .npz and .keras, against tfjs's own model.json + weights.bin (bench/tfjs-large.mjs).
log('tfjs, large models …');
const tfjsLarge = benchScript('tfjs-large.mjs', [join(dir, 'tfjs-large'), ...(quick ? ['--quick'] : [])]);

// A .npy written into object storage as 8 parts at once, against one PutObject (bench/parts.mjs).
log('multipart upload (moto) …');
const upload = benchScript('parts.mjs', [...(quick ? ['--quick'] : [])]);

const bytes = MIB * (1 << 20);
// [operation, npyts seconds, bytes, baselines, target: [baseline, largest npyts/baseline ratio] from issue 7, JS-only seconds]
const rows = [
  ['loadNpySync f4 C native', ours.loadNpy, bytes, { 'np.load': np.loadNpy, 'fs.readFileSync': ours.readFileSync }, ['np.load', 1.1], jsOnly.loadNpy],
  [
    'loadNpySync f4 C native, once in a fresh process',
    freshProcess.npyts,
    bytes,
    { 'np.load, once in a fresh process': freshProcess.numpy },
    ['np.load, once in a fresh process', 1.1],
    null,
  ],
  ['load big-endian f8 → native', ours.byteswap, bytes, { "np.load().astype('<f8')": np.byteswap }, ["np.load().astype('<f8')", 1.2], jsOnly.byteswap],
  ['load F-order f4 → C (toOrder)', ours.toC, bytes, { 'np.ascontiguousarray(np.load())': np.toC }, null, jsOnly.toC],
  ['F → C in memory (toOrder)', ours.toC_inmemory, bytes, { 'np.ascontiguousarray': np.toC_inmemory }, ['np.ascontiguousarray', 0.5], jsOnly.toC_inmemory],
  [
    'toTensor of F-order f4 (toOrder + tf.tensor)',
    ours.toTensor,
    bytes,
    { 'np.ascontiguousarray': np.toC_inmemory, 'tf.transpose (cpu)': ours.tfTranspose },
    ['tf.transpose (cpu)', 0.1],
    null,
  ],
  ['saveNpySync f4', ours.saveNpy, bytes, { 'np.save': np.saveNpy, 'fs.writeFileSync': ours.writeFileSync }, ['np.save', 1.2], jsOnly.saveNpy],
  ['header of a 3000-field record', ours.header3000, 0, { read_array_header_2_0: np.header3000 }, null, null],
  [
    'decode f4 bytes in memory (zero-copy view)',
    sameBytes.npyts,
    bytes,
    { 'npyjs parse': sameBytes.npyjs, 'numpy-ts parseNpy': sameBytes.numpyts },
    null,
    null,
  ],
  [
    'decode f4 bytes in memory (copy)',
    sameBytes.npyts_copy,
    bytes,
    { 'npyjs parse': sameBytes.npyjs, 'numpy-ts parseNpy': sameBytes.numpyts, 'Uint8Array copy alone': sameBytes.copy },
    null,
    null,
  ],
  [
    'object array, 100k mixed values (allowPickle)',
    ours.objects,
    0,
    { 'np.load(allow_pickle=True)': np.objects },
    ['np.load(allow_pickle=True)', 2.0],
    jsOnly.objects,
  ],
  [
    'object array, 1M short strings (allowPickle)',
    small.strings1m,
    0,
    { 'np.load(allow_pickle=True)': np.strings1m },
    ['np.load(allow_pickle=True)', 2.0],
    null,
  ],
  [
    'openNpzSync deflated member (half size)',
    ours.loadNpz,
    bytes / 2,
    { "np.load(...)['member']": np.loadNpz, 'fflate unzipSync (no CRC check)': ours.fflateUnzip },
    ["np.load(...)['member']", 1.0],
    jsOnly.loadNpz,
  ],
  ['saveNpzSync compressed (half size)', ours.saveNpz, bytes / 2, { 'np.savez_compressed': np.saveNpz }, null, null],
];
const report = {
  machine: {
    cpus: cpus().length,
    cpu: cpus()[0]?.model,
    memory_gib: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    kernel: release(),
    numpy: np.version,
    transparent_hugepages: thpMode(),
    native: nativeStatus(),
  },
  size_mib: MIB,
  repeats: REPEATS,
  rows: rows.map(([op, t, b, base, target, js]) => ({
    op,
    seconds: t,
    mb_per_s: b ? b / 1e6 / t : null,
    js_only_seconds: js ?? null,
    baselines: Object.fromEntries(Object.entries(base).map(([k, v]) => [k, { seconds: v, ratio: t / v }])),
    target: target ? { baseline: target[0], max_ratio: target[1], ratio: t / base[target[0]], met: t / base[target[0]] <= target[1] } : null,
  })),
  paired: pairedRows,
  paired_without_addon: pairedJsRows,
  fresh_processes: freshProcesses,
  many_small: small,
  browser,
  ragged,
  tfjs_models: tfjsModels,
  weights,
  gguf,
  reference_sets: refSets,
  lora,
  multipart_upload: upload,
  onnxruntime_check: ortCheck,
  onnxruntime_weights: ortWeights,
  sharded_safetensors: shards,
  onnxruntime_large: ortLarge,
  onnxruntime_page: ortPage,
  tfjs_large: tfjsLarge,
  keras_models: kerasModels,
  torch_fresh: torchFresh,
  tfjs_mapped_rss: tfjsMappedRss,
  regions: { file_gib: GIB, shape: big.shape, local: regions, http, numpy_mmap: npRegions, peak_rss: regionPeak, column },
  peak_rss: {
    file_bytes: bytes,
    ...rss,
  },
};

if (asJSON) {
  console.log(JSON.stringify(report, null, 2));
} else {
  const ms = (s) => (s * 1000).toFixed(s < 0.01 ? 3 : 1) + ' ms';
  const mc = report.machine;
  console.log(
    `npyts bench — ${MIB} MiB inputs, median of ${REPEATS} after a warm-up; ${mc.cpus} × ${mc.cpu}, ${mc.memory_gib} GiB, Linux ${mc.kernel} (transparent huge pages: ${mc.transparent_hugepages}), Node ${mc.node}, numpy ${mc.numpy}; @npyts/native ${mc.native.loaded ? 'in use' : `not in use (${mc.native.reason})`}\n`,
  );
  const range = (p) => `${p.spread[0].toFixed(2)}–${p.spread[1].toFixed(2)}`;
  console.log(
    `Against numpy, interleaved: each row is ${pairedRows[0]?.rounds ?? 0} rounds of npyts then numpy (numpy first every other round), each side the median of a few runs (enough to take about 0.1 s), after one uncounted round; the ratio is the median of the rounds' ratios and the spread their range. A target is met when the whole spread is under it.`,
  );
  console.log('| operation | npyts | numpy | npyts / numpy | spread | target |');
  console.log('|---|---|---|---|---|---|');
  for (const p of pairedRows)
    console.log(
      `| ${p.op} | ${ms(p.seconds)} | ${ms(p.baseline)} | ${p.ratio.toFixed(2)} | ${range(p)} | ≤ ${p.target} ${p.verdict === 'met' ? 'met' : p.verdict === 'missed' ? '**missed**' : '**crosses**'} |`,
    );
  // Issue 43: the same cases with the addon and without it (NPYTS_NATIVE=0), as the README's install
  // gives each where a prebuilt binary fits and where none does.
  console.log('\nWith and without @npyts/native (each side interleaved with numpy as above; without it, targets of an install with no addon):');
  console.log('| operation | with the addon / numpy | spread | without / numpy | spread | target without |');
  console.log('|---|---|---|---|---|---|');
  for (const p of pairedJsRows) {
    const w = pairedRows.find((r) => r.op === p.op && r.numpy_case === p.numpy_case);
    const verdictOf = (x) => (x.verdict === 'met' ? 'met' : x.verdict === 'missed' ? '**missed**' : '**crosses**');
    console.log(`| ${p.op} | ${w ? w.ratio.toFixed(2) : ''} | ${w ? range(w) : ''} | ${p.ratio.toFixed(2)} | ${range(p)} | ≤ ${p.target} ${verdictOf(p)} |`);
  }
  for (const [name, f] of Object.entries(freshProcesses)) {
    const r = (x) => (x / f.numpy).toFixed(2);
    const sp = (x) => `${x[0].toFixed(2)}–${x[1].toFixed(2)}`;
    const target = name === 'objects' ? 2 : 1.1;
    const met = f.npyts_js / f.numpy <= target && f.spread.npyts_js[1] <= target;
    console.log(
      `| ${name === 'objects' ? 'object array, 100k mixed values' : 'loadNpySync f4'}, once in a fresh process (numpy ${ms(f.numpy)}) | ${r(f.npyts)} | ${sp(f.spread.npyts)} | ${r(f.npyts_js)} | ${sp(f.spread.npyts_js)} | ≤ ${target} ${met ? 'met' : '**missed**'} |`,
    );
  }
  console.log('\nEvery case once each (medians of single runs, one after the other; see the spread above for how far one figure moves):');
  console.log('| operation | npyts | throughput | npyts, JavaScript only | baseline | baseline time | npyts / baseline | target |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of report.rows) {
    for (const [name, b] of Object.entries(r.baselines)) {
      const t = r.target?.baseline === name ? `≤ ${r.target.max_ratio} ${r.target.met ? 'met' : '**missed**'}` : '';
      console.log(
        `| ${r.op} | ${ms(r.seconds)} | ${r.mb_per_s ? r.mb_per_s.toFixed(0) + ' MB/s' : ''} | ${r.js_only_seconds ? ms(r.js_only_seconds) : ''} | ${name} | ${ms(b.seconds)} | ${b.ratio.toFixed(2)} | ${t} |`,
      );
    }
  }
  console.log(
    `\nWeight files: a state_dict of ${weights.made.tensors} float32 tensors (${(weights.made.bytes / 1e6).toFixed(0)} MB) as .safetensors and as torch.save's .pt, and a .safetensors of ${weights.made.many} tensors of two floats (the per-tensor cost), loaded whole (loadWeights) against Python's safetensors.numpy.load_file and torch.load(weights_only=True), interleaved as above.`,
  );
  console.log('| operation | npyts | Python | npyts / Python | spread | target |');
  console.log('|---|---|---|---|---|---|');
  for (const p of weights.rows)
    console.log(
      `| ${p.op} | ${ms(p.seconds)} | ${ms(p.baseline)} | ${p.ratio.toFixed(2)} | ${range(p)} | ≤ ${p.target} ${p.verdict === 'met' ? 'met' : p.verdict === 'missed' ? '**missed**' : '**crosses**'} |`,
    );
  for (const r of weights.remote)
    console.log(`One tensor of a remote ${r.file} (nginx): ${r.moved_bytes} bytes moved in all for a tensor of ${r.tensor_bytes} bytes.`);
  console.log(
    `\nGGUF: a file of ${(gguf.made.q4k_bytes / 1e6).toFixed(0)} MB of Q4_K tensors (${(gguf.made.values / 1e6).toFixed(0)} M values), opened and every tensor dequantized to float32 (GgufFile.getAll), against gguf-py (GGUFReader, gguf.quants.dequantize) and against loadNpySync of a float32 .npy of as many bytes; and a float32 tensor quantized to Q8_0 (encodeGguf) against gguf.quants.quantize; interleaved as above.`,
  );
  console.log('| operation | npyts | baseline | npyts / baseline | spread | target |');
  console.log('|---|---|---|---|---|---|');
  for (const p of gguf.rows)
    console.log(
      `| ${p.op} | ${ms(p.seconds)} | ${ms(p.baseline)} (${p.baseline_case}) | ${p.ratio.toFixed(2)} | ${range(p)} | ≤ ${p.target} ${p.verdict === 'met' ? 'met' : p.verdict === 'missed' ? '**missed**' : '**crosses**'} |`,
    );
  {
    const { made, headers: h, dask: d } = refSets;
    console.log(
      `\nReference sets: referencesOf of ${made.files} .npy files joined along axis 0 ${ms(h.seconds)}, numpy reading each header (read_magic, read_array_header) ${ms(h.baseline)}: ${h.ratio.toFixed(2)} × (spread ${h.spread[0].toFixed(2)}–${h.spread[1].toFixed(2)}, ${h.rounds} interleaved rounds). dask's sum over the set ${ms(d.seconds)}, over the files np.load'ed ${ms(d.baseline)}: ${d.ratio.toFixed(2)} × (spread ${d.spread[0].toFixed(2)}–${d.spread[1].toFixed(2)}).`,
    );
  }
  console.log(
    `\nLoRA merge (bench/lora.mjs): an adapter (r 16 on c_attn, c_proj, c_fc) merged into a ${(lora.bytes / 2 ** 20).toFixed(0)} MiB float32 GPT-2 and written as .safetensors, mergeLora + saveSafetensors ${ms(lora.seconds)}, peft's from_pretrained + merge_and_unload() + save_pretrained (PyTorch's default threads; Node merges on one) ${ms(lora.baseline)}: ${lora.ratio.toFixed(2)} × (spread ${lora.spread[0].toFixed(2)}–${lora.spread[1].toFixed(2)}, ${lora.rounds} interleaved rounds).`,
  );
  console.log(
    `\nObject storage (moto_server on loopback): a ${(upload.bytes / 1e6).toFixed(0)} MB .npy as ${upload.parts} parts uploaded at once (planParts, encodePart per region) ${ms(upload.parts_seconds)} (${(upload.bytes / 1e6 / upload.parts_seconds).toFixed(0)} MB/s), as one PutObject ${ms(upload.whole_seconds)} (${(upload.bytes / 1e6 / upload.whole_seconds).toFixed(0)} MB/s): ${upload.ratio.toFixed(2)} × (spread ${upload.spread[0].toFixed(2)}–${upload.spread[1].toFixed(2)}). moto is one Python process; against a real store, parts from several machines add their bandwidth.`,
  );
  console.log(`\n${kerasModels.line}`);
  console.log(`\n${torchFresh.line}`);
  console.log(`\n${tfjsMappedRss.line}`);
  console.log(
    `\nONNX Runtime (bench/onnxruntime-check.mjs): ${ortCheck.model} with ${ortCheck.modules} modules recorded; one session.run ${ms(ortCheck.run_seconds)}, checkSession on the correct export ${ms(ortCheck.check_seconds)} (${ortCheck.check_ratio.toFixed(2)} ×), on a broken copy with { model } ${ms(ortCheck.failed_check_seconds)} (${ortCheck.failed_check_ratio.toFixed(1)} ×: one extra run, most of it ORT making the copy's session).`,
  );
  console.log(
    `\nONNX Runtime withWeights (bench/onnxruntime-weights.mjs): a ${(ortWeights.bytes / 1e6).toFixed(0)} MB .safetensors state_dict of ${ortWeights.layers} Linear(${ortWeights.width}, ${ortWeights.width}) layers swapped into their torch.onnx.export model; each case a fresh Node process, ${ortWeights.rounds} interleaved rounds.`,
  );
  console.log('| operation | npyts | baseline | time ratio (spread) | peak RSS | baseline peak RSS | RSS ratio (spread) |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of ortWeights.rows)
    console.log(
      `| ${r.op} | ${ms(r.seconds)} | ${ms(r.baseline_seconds)} (${r.baseline}) | ${r.time.ratio.toFixed(2)} (${r.time.spread.map((v) => v.toFixed(2)).join('–')}) | ${(r.peak_rss / 1e6).toFixed(0)} MB | ${(r.baseline_peak_rss / 1e6).toFixed(0)} MB | ${r.rss.ratio.toFixed(2)} (${r.rss.spread.map((v) => v.toFixed(2)).join('–')}) |`,
    );
  console.log(
    `\nSharded .safetensors (bench/shards.mjs): ${shards.op}, a ${(shards.bytes / 1e6).toFixed(0)} MB torch.save state_dict of ${shards.tensors} float32 tensors (largest ${(shards.largest_tensor / 1e6).toFixed(0)} MB) into ${shards.files} files, against ${shards.baseline}; each a fresh process, ${shards.rounds} interleaved rounds, medians (spread). Time ${shards.seconds.toFixed(2)} s against ${shards.baseline_seconds.toFixed(2)} s: ${shards.time_ratio.toFixed(2)} × (${shards.time_ratio_spread.map((v) => v.toFixed(2)).join('–')}). Peak RSS ${(shards.peak_rss / 1e6).toFixed(0)} MB (${shards.peak_rss_spread.map((v) => (v / 1e6).toFixed(0)).join('–')}), huggingface_hub's ${(shards.baseline_peak_rss / 1e6).toFixed(0)} MB; target ≤ largest tensor + 100 MiB = ${(shards.rss_limit / 1e6).toFixed(0)} MB: ${shards.verdict === 'met' ? 'met' : '**missed**'}.`,
  );
  console.log(
    `\nONNX Runtime withWeights on large models (bench/onnxruntime-large.mjs): withWeights + InferenceSession.create + one run, each case a fresh Node process, ${ortLarge.rounds} interleaved rounds; peak is VmHWM over the process after its modules loaded. memory: weights from a file-backed Blob, each tensor handed to ORT as external data in memory; inline: { inline: true }; pointed: by path, into the mapped file; ort: ORT's own session from the model and its external data file.`,
  );
  console.log("| model | case | time | spread | time ÷ ORT (spread) | peak | peak − ORT's peak | largest tensor |");
  console.log('|---|---|---|---|---|---|---|---|');
  for (const size of ortLarge.sizes) {
    const ortPeak = size.rows.find((r) => r.case === 'ort').peak;
    for (const r of size.rows)
      console.log(
        `| ${(size.bytes / 2 ** 20).toFixed(0)} MiB | ${r.case} | ${ms(r.seconds)} | ${r.seconds_spread.map(ms).join('–')} | ${r.time_vs_ort.ratio.toFixed(2)} (${r.time_vs_ort.spread.map((v) => v.toFixed(2)).join('–')}) | ${(r.peak / 2 ** 20).toFixed(0)} MiB | ${((r.peak - ortPeak) / 2 ** 20).toFixed(0)} MiB | ${(size.largest_tensor / 2 ** 20).toFixed(0)} MiB |`,
      );
  }
  if (ortPage) {
    console.log(
      `\nONNX Runtime withWeights in a page (bench/onnxruntime-page.mjs): onnxruntime-web's wasm build in Chromium, weights chosen as Files; withWeights + InferenceSession.create + one run, each case a fresh browser, ${ortPage.rounds} interleaved rounds; peak is the renderer's VmHWM over its resident size once the page loaded. slices: each tensor handed to ORT as its slice of the File, unread; read: each tensor read into a buffer first (openWeights(file)); ort: ORT's own session from the model and its external data File.`,
    );
    console.log("| model | case | time | spread | peak | spread | peak − ORT's peak (spread) | largest tensor |");
    console.log('|---|---|---|---|---|---|---|---|');
    const mb = (v) => `${(v / 2 ** 20).toFixed(0)} MiB`;
    for (const size of ortPage.sizes)
      for (const r of size.rows)
        console.log(
          `| ${mb(size.bytes)} | ${r.case} | ${ms(r.seconds)} | ${r.seconds_spread.map(ms).join('–')} | ${mb(r.peak)} | ${r.peak_spread.map(mb).join('–')} | ${mb(r.peak_over_ort)} (${r.peak_over_ort_spread.map(mb).join('–')}) | ${mb(size.largest_tensor)} |`,
        );
  }
  {
    const mb = (v) => `${(v / 2 ** 20).toFixed(0)} MiB`;
    console.log(
      `\ntfjs on a large model (bench/tfjs-large.mjs): ${tfjsLarge.layers} Dense(${tfjsLarge.width}) layers, ${mb(tfjsLarge.bytes)} of weights written by Keras 3 (.keras), safetensors and np.savez, and by tfjs's own model.save (model.json + weights.bin); load + one predict, each case a fresh Node process, ${tfjsLarge.rounds} interleaved rounds, medians (min–max); peak is VmHWM over the process's resident size before the load. safetensors, safetensors-mmap ({ mmap: 'r' }), npz: assignWeights into a model built in code (zeros); keras: tf.loadLayersModel(kerasHandler(path)); tfjs: tf.loadLayersModel of model.json + weights.bin.`,
    );
    console.log("| case | time | spread | time ÷ tfjs (spread) | peak | spread | peak − tfjs's peak (spread) |");
    console.log('|---|---|---|---|---|---|---|');
    for (const r of tfjsLarge.rows)
      console.log(
        `| ${r.case} | ${ms(r.seconds)} | ${r.seconds_spread.map(ms).join('–')} | ${r.time_vs_tfjs.toFixed(2)} (${r.time_vs_tfjs_spread.map((v) => v.toFixed(2)).join('–')}) | ${mb(r.peak)} | ${r.peak_spread.map(mb).join('–')} | ${mb(r.peak_over_tfjs)} (${r.peak_over_tfjs_spread.map(mb).join('–')}) |`,
      );
  }
  const ratioCell = (t, base, target) => `${(t / base).toFixed(2)} | ${target ? `≤ ${target} ${t / base <= target ? 'met' : '**missed**'}` : ''}`;
  console.log(
    "\nMany small arrays: every member of a ResNet-like state dict (320 members, PyTorch names), and 10 000 separate 4 KiB .npy files; numpy's `{k: v for k, v in np.load(f).items()}` and a loop of np.load.",
  );
  console.log('| case | npyts (Node) | numpy | npyts / numpy | target |');
  console.log('|---|---|---|---|---|');
  for (const [k, label] of [
    ['resnet_stored', 'ResNet-like archive, stored'],
    ['resnet_deflated', 'ResNet-like archive, deflated'],
    ['many_files', '10 000 files of 4 KiB'],
  ]) {
    console.log(`| ${label} | ${ms(small[k])} | ${ms(np[k])} | ${ratioCell(small[k], np[k], 1.0)} |`);
  }
  console.log(
    `Node, ${MIB} MiB big-endian float64 → native in memory (decodeNpy): ${ms(small.byteswap_inmemory)}; a fresh buffer of that size allocated and filled: ${ms(small.fresh_buffer)}; numpy's astype ${ms(np.byteswap_inmemory)}, or ${ms(np.byteswap_inmemory_fresh)} when every result is kept.`,
  );
  if (browser) {
    const b = browser;
    console.log(
      `\nIn the browser: Chromium ${b.chromium} (headless, ${b.cores} cores), the page and the inputs served by nginx on 127.0.0.1; times from performance.now() in the page.`,
    );
    console.log(
      `Each row: ${b.rounds.length} rounds (the page's cases in a fresh Chromium, then the baselines: numpy's in its long-lived process, Node's in this one); the times are medians of the rounds, the ratio the median of the rounds' ratios and the spread their range. A target is met when the whole spread is under it.`,
    );
    console.log('| case | Chromium | baseline | baseline time | ratio | spread | target |');
    console.log('|---|---|---|---|---|---|---|');
    // `ours` names a page case; `theirs` a baseline of the round (`base`), or of the page (`page:` …),
    // or a one-shot figure of this run (a number) where the baseline is not a round's.
    const line = (label, ours, baseLabel, theirs, target) => {
      const pair = b.rounds.map(({ page, base }) => {
        const t = page[ours];
        const u = typeof theirs === 'number' ? theirs : theirs.startsWith('page:') ? page[theirs.slice(5)] : base[theirs];
        return [t, u, t / u];
      });
      const ratios = pair.map((p) => p[2]);
      const p = { ratio: middleOf(ratios), spread: [Math.min(...ratios), Math.max(...ratios)] };
      const cell = target ? `≤ ${target} ${verdict(p, target) === 'met' ? 'met' : verdict(p, target) === 'missed' ? '**missed**' : '**crosses**'}` : '';
      console.log(
        `| ${label} | ${ms(middleOf(pair.map((x) => x[0])))} | ${baseLabel} | ${ms(middleOf(pair.map((x) => x[1])))} | ${p.ratio.toFixed(2)} | ${p.spread.map((x) => x.toFixed(2)).join('–')} | ${cell} |`,
      );
    };
    line(`fetch + decodeNpy of a ${MIB} MiB .npy`, 'fetch_decode', 'fetch + arrayBuffer() alone (Chromium)', 'page:fetch_only', 1.1);
    line(
      'every member of the deflated ResNet-like archive (readAll: DecompressionStream in workers)',
      'resnet_deflated',
      'the same in Node (node:zlib)',
      'resnet_deflated_zlib',
      1.2,
    );
    line('the same', 'resnet_deflated', 'the same in Node (libdeflate, the addon)', 'resnet_deflated', null);
    line("the same with fflate on the page's thread (get)", 'resnet_deflated_fflate', 'the same in Node (node:zlib)', 'resnet_deflated_zlib', null);
    line('every member of the stored ResNet-like archive (readAll)', 'resnet_stored', 'numpy', 'resnet_stored', 1.0);
    line('the same, opened with { checkCrc: false } (no CRC-32 check)', 'resnet_stored_nocrc', 'numpy (checks CRC-32)', 'resnet_stored', 1.0);
    line(`F → C of ${Math.round(Math.sqrt(MIB * 2 ** 18))}² float32 in memory (toOrder)`, 'toC_inmemory', 'np.ascontiguousarray', 'toC_inmemory', 0.5);
    line(`big-endian float64 → native, ${MIB} MiB in memory (decodeNpy)`, 'byteswap_inmemory', "a.astype('<f8')", 'byteswap_inmemory', 1.2);
    line('the same', 'byteswap_inmemory', "a.astype('<f8'), every result kept (fresh memory each time; once, this run)", np.byteswap_inmemory_fresh, null);
    line(
      `a fresh ${MIB} MiB buffer, allocated and filled (the floor of any decode into new memory)`,
      'fresh_buffer',
      "a.astype('<f8')",
      'byteswap_inmemory',
      null,
    );
    line('object array, 100k mixed values (pickleCodec)', 'objects', 'np.load(allow_pickle=True)', 'objects', 2.0);
    line('object array, 1M short strings (pickleCodec)', 'strings1m', 'np.load(allow_pickle=True)', 'strings1m', 2.0);
  }
  const rd = report.ragged;
  console.log(
    `\nRagged data: npyts' index + heap .npy files, in each layout, against numpy's object arrays (pickle) of the same values; write and read are medians of 3; reading 100 random elements includes opening. Targets (1 M strings, compact index): size ≤ 1.0 × the pickle, write ≤ 1.0 × np.save, read 100 ≥ 30 × faster.`,
  );
  console.log('| data | layout | npyts size | / pickle | npyts write | numpy write | / numpy | npyts read 100 | numpy read 100 | faster |');
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  for (const [k, label] of [
    ['strings', `${rd.count} short strings`],
    ['sequences', '10 000 float32 sequences'],
  ]) {
    const np = rd.numpy[k];
    for (const a of rd[k]) {
      console.log(
        `| ${label} | ${a.layout} | ${(a.bytes / 1e6).toFixed(2)} MB | ${(a.bytes / np.bytes).toFixed(2)} | ${ms(a.write)} | ${ms(np.write)} | ${(a.write / np.write).toFixed(2)} | ${ms(a.read100)} | ${ms(np.read100)} | ${(np.read100 / a.read100).toFixed(0)} × |`,
      );
    }
  }
  console.log(
    `numpy: pickle ${(rd.numpy.strings.bytes / 1e6).toFixed(2)} MB for the strings, ${(rd.numpy.sequences.bytes / 1e6).toFixed(2)} MB for the sequences.`,
  );
  const tm = report.tfjs_models;
  console.log(
    `\nA tfjs-layers model of ${(tm.parameters / 1e6).toFixed(1)} M float32 parameters (three dense layers), loaded in a fresh process each time: tfjs's own format (model.json + weights.bin read from disk, tf.io.fromMemory) against tf.loadLayersModel(npzHandler(...)). Peak: the process's VmHWM above its size just before the load.`,
  );
  console.log(`Ratios: the median of ${tm.tfjs.rounds} rounds' ratios (each round loads every format once, in turn), with their spread.`);
  console.log('| format | file size | load | / tfjs | spread | target | peak memory added | / tfjs |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const [k, label, target] of [
    ['tfjs', "tfjs's own (fromMemory)", null],
    ['npz_stored', '.npz stored', 1.0],
    ['npz_deflated', '.npz deflated', 1.2],
  ]) {
    const r = tm[k];
    const t = target ? `≤ ${target} ${verdict(r, target)}` : '';
    const spread = target ? `${r.spread[0].toFixed(2)}–${r.spread[1].toFixed(2)}` : '';
    console.log(
      `| ${label} | ${(tm.bytes[k] / 1e6).toFixed(0)} MB | ${ms(r.seconds)} | ${r.ratio.toFixed(2)} | ${spread} | ${t} | ${(r.peakBytes / 2 ** 20).toFixed(0)} MiB | ${(r.peakBytes / tm.tfjs.peakBytes).toFixed(3)} |`,
    );
  }
  const rg = report.regions;
  console.log(`\nRegion reads of a ${rg.file_gib} GiB float32 file ${JSON.stringify(rg.shape)} (C order): one row, and an 8-column stripe through every row.`);
  console.log('| region | npyts openNpyFileSync | bytes read | over HTTP (nginx) | bytes, requests | numpy mmap_mode="r" |');
  console.log('|---|---|---|---|---|---|');
  for (const k of ['row', 'column_block']) {
    const h = rg.http?.[k];
    console.log(
      `| ${k.replace('_', ' ')} | ${ms(rg.local[k].seconds)} | ${(rg.local[k].bytes / 1024).toFixed(0)} KiB | ${h ? ms(h.seconds) : 'n/a'} | ${h ? `${(h.bytes / 1024).toFixed(0)} KiB, ${h.requests}` : ''} | ${ms(rg.numpy_mmap[k])} |`,
    );
  }
  const col = rg.column;
  const ratio = (x) => (x / rg.numpy_mmap.column_block).toFixed(2);
  console.log(
    `Target: ≤ 1.5 × numpy mmap. 8-column stripe: ${ratio(rg.local.column_block.seconds)} × ${rg.local.column_block.seconds / rg.numpy_mmap.column_block <= 1.5 ? 'met' : '**missed**'}.`,
  );
  console.log(
    `One column of a ${col.file_gib} GiB float32 file ${JSON.stringify(col.shape)} (rows 4 KiB apart): openNpyFileSync ${ms(col.npyts)}, openNpyFile (async) ${ms(col.npyts_async)}, numpy np.array(mmap[:, 7]) ${ms(col.numpy_mmap)}: ${(col.npyts / col.numpy_mmap).toFixed(2)} × (target ≤ 1.5: ${col.npyts / col.numpy_mmap <= 1.5 ? 'met' : '**missed**'}).`,
  );
  const mb = (x) => (x / 2 ** 20).toFixed(0) + ' MiB';
  console.log(`Peak RSS of the column-stripe read (fresh process each): npyts ${mb(rg.peak_rss.npyts)}, numpy mmap ${mb(rg.peak_rss.numpy)}.`);
  const m = report.peak_rss;
  const over = (peak, base) => ((peak - base) / m.file_bytes).toFixed(2);
  console.log(
    `\nPeak RSS of a whole-file load of the ${mb(m.file_bytes)} file (fresh process each): npyts ${mb(m.npyts_loadNpy)} (Node alone ${mb(m.node_baseline)}; the load adds ${over(m.npyts_loadNpy, m.node_baseline)} × the file size), numpy ${mb(m.numpy_load)} (Python + numpy alone ${mb(m.python_baseline)}; adds ${over(m.numpy_load, m.python_baseline)} ×).`,
  );
}
