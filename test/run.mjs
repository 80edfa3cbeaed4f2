// Runs the uvu suites in test/ and ends with the line `N passed, N failed`.
// Usage: node test/run.mjs [--in-process] [--jobs N] [--skip path-fragment]... [path-fragment...]
//   (only files whose path, e.g. `npz/npz`, contains a fragment, and none a --skip fragment)
//
// By default each test file runs in a process of its own, several at once (the files are
// independent: each makes its fixtures with numpy and PyTorch and starts the servers it needs), the
// slowest first; a file whose first lines hold `@serial` (it measures the event loop's latency, which
// a neighbour's load would blur) runs alone after the others. Each file's output is printed whole when
// it ends. `--in-process` runs every file in this one process instead, as uvu's deferred mode does:
// the other runtimes' suites (Bun, Deno, Node 22) run that way, since they need no Node to spawn.
import { readFileSync, readdirSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');

const args = process.argv.slice(2);
const inProcess = args.includes('--in-process');
const jobsAt = args.indexOf('--jobs');
/** Whether argument `i` is the value of an option (--jobs N, --skip F). */
const isOptionValue = (i) => i > 0 && (args[i - 1] === '--jobs' || args[i - 1] === '--skip');
const skip = args.filter((_, i) => i > 0 && args[i - 1] === '--skip');
const only = args.filter((a, i) => !a.startsWith('--') && !isOptionValue(i));

// Suites live in folders that mirror packages/core/src (format/, array/, npy/, io/, npz/, pickle/,
// ragged/, node/) plus adapters/, cli/, packages/, apps/ and safety/.
const files = readdirSync(here, { recursive: true })
  .filter((f) => f.endsWith('.test.mjs'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .filter((f) => !skip.some((o) => f.includes(o)))
  .sort();

/** uvu's totals in what a run printed: the last ones (a failure message may quote another run's). */
function totals(printed) {
  // eslint-disable-next-line no-control-regex
  const plain = printed.replace(/\x1b\[[0-9;]*m/g, '');
  const last = (label) => Number([...plain.matchAll(new RegExp(`${label}:\\s+(\\d+)`, 'g'))].at(-1)?.[1] ?? 0);
  const total = last('Total');
  const passed = last('Passed');
  const skipped = last('Skipped');
  return { total, passed, skipped, failed: total - passed - skipped };
}

function finish({ total, passed, skipped, failed }) {
  console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
  process.exitCode = failed > 0 || total === 0 ? 1 : 0;
}

/**
 * Debian packages the tests drive: unzip (checks our archives), nginx (HTTP range reads), chromium
 * (the viewer), python3-torch (real PyTorch models, with Debian's numpy 1.24) and python3-torchvision
 * (torchvision's architectures, ported in the tfjs tests). Install what is
 * missing, so that `npm ci && npm test` is the whole set-up.
 */
function installDebianPackages() {
  // Whether a Python module is there, found without importing it (importing torch costs seconds).
  const hasModules = (python, modules) =>
    `${python} -c "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in ${JSON.stringify(modules).replace(/"/g, "'")}))"`;
  const missing = [
    ['unzip', 'command -v unzip'],
    ['nginx-light', 'command -v nginx || test -x /usr/sbin/nginx'],
    ['chromium', 'test -x /usr/bin/chromium'],
    ['python3-torch', hasModules('/usr/bin/python3', ['torch'])],
    ['python3-torchvision', hasModules('/usr/bin/python3', ['torchvision'])],
    // Zarr v2, xarray, dask and distributed read reference sets, over HTTP with aiohttp (not in the pip source of python3).
    [
      'python3-zarr python3-xarray python3-dask python3-distributed python3-fsspec python3-aiohttp',
      hasModules('/usr/bin/python3', ['zarr', 'xarray', 'dask', 'distributed', 'fsspec', 'aiohttp']),
    ],
  ]
    .filter(([, check]) => spawnSync('sh', ['-c', check], { stdio: 'ignore' }).status !== 0)
    .map(([pkg]) => pkg);
  if (!missing.length) return;
  console.log(`installing Debian packages the tests need: ${missing.join(' ')}`);
  const r = spawnSync('sh', ['-c', `apt-get update -qq && apt-get install -y -qq ${missing.join(' ')} >/dev/null`], { stdio: 'inherit' });
  if (r.status !== 0) console.log(`could not install ${missing.join(' ')}; the tests that need them will fail`);
}

/**
 * Python packages the tests ask for ground truth, in the `python3` that has numpy 2: PyTorch 2.x,
 * safetensors, ml_dtypes, huggingface_hub's shard splitter, Keras 3 and h5py, onnx, onnxruntime and
 * onnxscript, and gguf-py. Each installs from these machines' package source (`--retries 0` keeps pip
 * from waiting on an index it cannot reach); only the missing ones are installed. transformers is
 * not needed: the one test that uses it falls back to a model of its own.
 */
const PYTHON_PACKAGES = [
  // [module, pip name]
  ['torch', 'torch'],
  ['safetensors', 'safetensors'],
  ['ml_dtypes', 'ml-dtypes'],
  ['huggingface_hub', 'huggingface_hub'],
  ['keras', 'keras'],
  ['h5py', 'h5py'],
  ['onnx', 'onnx'],
  ['onnxruntime', 'onnxruntime'],
  ['onnxscript', 'onnxscript'],
  ['gguf', 'gguf'],
  ['tensorstore', 'tensorstore'],
];

function installPythonPackages() {
  const check = 'import importlib.util as u, sys; print(" ".join(m for m in sys.argv[1:] if u.find_spec(m) is None))';
  const found = spawnSync('python3', ['-c', check, ...PYTHON_PACKAGES.map(([m]) => m)], { encoding: 'utf8' });
  const absent = new Set((found.stdout ?? '').split(/\s+/).filter(Boolean));
  const missing = PYTHON_PACKAGES.filter(([m]) => absent.has(m)).map(([, pip]) => pip);
  if (found.status !== 0 || !missing.length) return;
  console.log(`installing the Python packages the tests need: ${missing.join(' ')}`);
  const r = spawnSync('python3', ['-m', 'pip', 'install', '-q', '--retries', '0', ...missing], { stdio: 'inherit' });
  if (r.status !== 0) console.log(`could not install ${missing.join(' ')}; the tests that need them will fail`);
}

/**
 * Files that take minutes on a 2-core machine start first, so that the others fill the time beside
 * them (longest first keeps the last process from starting late). Measured on a fresh clone.
 */
const SLOW_FIRST = [
  'packages/guides.test.mjs',
  'packages/runtimes.test.mjs',
  'packages/publish.test.mjs',
  'safety/hostile.test.mjs',
  'io/parts.test.mjs',
  'node/async.test.mjs',
  'npz/npz-large.test.mjs',
  'io/region.test.mjs',
  'packages/',
  'apps/',
];
const rank = (f) => {
  const i = SLOW_FIRST.findIndex((s) => f.startsWith(s));
  return i < 0 ? SLOW_FIRST.length : i;
};

/** The longest one file may run (the slowest takes about 5 minutes on a busy 2-core machine). */
const FILE_LIMIT_S = 600;

async function runInParallel() {
  const serial = files.filter((f) => /@serial/.test(readFileSync(join(here, f), 'utf8').slice(0, 2000)));
  const parallel = files.filter((f) => !serial.includes(f)).sort((a, b) => rank(a) - rank(b));
  // Most files wait on Python, browsers and servers as much as they compute: one more process than
  // cores keeps the cores busy without crowding the files that measure time.
  const jobs = jobsAt >= 0 ? Math.max(1, Number(args[jobsAt + 1])) : availableParallelism() + 1;
  const sum = { total: 0, passed: 0, skipped: 0, failed: 0 };
  const started = performance.now();
  const times = [];
  const runOne = (f) =>
    new Promise((resolve) => {
      const t0 = performance.now();
      const child = spawn(process.execPath, [join(here, f)], { cwd: root, env: { ...process.env, FORCE_COLOR: '0' } });
      // A file that hangs fails alone, with what it printed, instead of holding the suite until CI's limit.
      const limit = setTimeout(() => {
        printed += `\n${f} was stopped after ${FILE_LIMIT_S} s\n`;
        child.kill('SIGKILL');
      }, FILE_LIMIT_S * 1000);
      let printed = '';
      child.stdout.on('data', (c) => {
        printed += c;
      });
      child.stderr.on('data', (c) => {
        printed += c;
      });
      child.on('close', (code, signal) => {
        clearTimeout(limit);
        const t = totals(printed);
        // A file that died before uvu printed its totals (a crash at import) counts as one failure.
        if (t.total === 0 || ((code !== 0 || signal) && t.failed === 0)) {
          t.total += 1;
          t.failed += 1;
          printed += `\n${f} exited with ${signal ?? `code ${code}`} without a passing summary\n`;
        }
        for (const k of Object.keys(sum)) sum[k] += t[k];
        const seconds = (performance.now() - t0) / 1000;
        times.push([f, seconds]);
        process.stdout.write(`\n${f} (${seconds.toFixed(1)} s)\n${printed.trimEnd()}\n`);
        resolve();
      });
    });
  const queue = [...parallel];
  await Promise.all(
    Array.from({ length: Math.min(jobs, queue.length) }, async () => {
      while (queue.length) await runOne(queue.shift());
    }),
  );
  for (const f of serial) await runOne(f);
  const slowest = times.sort((a, b) => b[1] - a[1]).slice(0, 10);
  console.log(
    `\n${files.length} files in ${((performance.now() - started) / 1000).toFixed(0)} s, ${jobs} at a time; slowest: ${slowest.map(([f, s]) => `${f} ${s.toFixed(0)} s`).join(', ')}`,
  );
  finish(sum);
}

if (inProcess) {
  // Deferred mode: uvu queues the suites of each imported file and runs them all in `exec`.
  globalThis.UVU_DEFER = 1;
  const uvu = await import('uvu');
  for (const [i, f] of files.entries()) {
    globalThis.UVU_INDEX = i;
    globalThis.UVU_QUEUE.push([f]);
    await import(pathToFileURL(join(here, f)).href);
  }
  // uvu reports its totals only as text: keep a copy of what it prints to count them.
  let printed = '';
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = (chunk, ...rest) => {
    printed += String(chunk);
    if (printed.length > 1 << 20) printed = printed.slice(-4096);
    return write(chunk, ...rest);
  };
  await uvu.exec(false);
  process.stdout.write = write;
  finish(totals(printed));
} else {
  installDebianPackages();
  installPythonPackages();
  await runInParallel();
}
