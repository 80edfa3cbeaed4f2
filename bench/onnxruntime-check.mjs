// `node bench/onnxruntime-check.mjs DIR [REPEATS]`: what checkSession costs against one session.run, on
// a ResNet-18 exported by torch 2's TorchScript exporter (test/helpers/ort_check_fixtures.py makes it,
// with each module's PyTorch output recorded). Three times, each the median of REPEATS
// after a warm-up: session.run alone; checkSession on the correct export (one run, the reference read
// and compared); checkSession on a copy with one weight perturbed, given { model } (the run, then the
// model read and edited, a session made for the copy, and its one run with every module's value as an
// extra output). Prints one JSON object.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { checkSession, toOrtTensor } from '@npyts/onnxruntime';
import { loadNpz } from '@npyts/core/node';
import { middleOf } from './timing.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const [dir, repeatsArg] = process.argv.slice(2);
const repeats = Number(repeatsArg ?? 5);
mkdirSync(dir, { recursive: true });
if (!existsSync(join(dir, 'cases.json'))) {
  execFileSync('python3', ['-W', 'ignore', join(here, '..', 'test', 'helpers', 'ort_check_fixtures.py'), dir], { stdio: 'ignore' });
}
const name = 'resnet18-torchscript';
const at = (f) => join(dir, f);
const session = await ort.InferenceSession.create(at(`${name}.onnx`));
const broken = await ort.InferenceSession.create(at(`${name}-broken.onnx`));
const reference = readFileSync(at(`${name}.npz`));
const model = readFileSync(at(`${name}-broken.onnx`));
const arrays = await loadNpz(at(`${name}.npz`));
const x = toOrtTensor(arrays.get('check/input'));
const modules = [...arrays.keys()].filter((k) => k.startsWith('check/module/')).length;

async function time(fn) {
  await fn();
  const times = [];
  for (let i = 0; i < repeats; i++) {
    const t = process.hrtime.bigint();
    await fn();
    times.push(Number(process.hrtime.bigint() - t) / 1e9);
  }
  return middleOf(times);
}

const run = await time(() => session.run({ x }));
const passing = await time(() => checkSession(session, reference));
const failing = await time(() =>
  checkSession(broken, reference, { model }).then(
    () => Promise.reject(new Error('the broken copy passed')),
    (e) => (e.code === 'CHECK_FAILED' ? null : Promise.reject(e)),
  ),
);
console.log(
  JSON.stringify({
    model: name,
    modules,
    run_seconds: run,
    check_seconds: passing,
    check_ratio: passing / run,
    failed_check_seconds: failing,
    failed_check_ratio: failing / run,
  }),
);
