// checkSession on real exports (test/helpers/ort_check_fixtures.py, one Python process): an MLP, a CNN
// with BatchNorm, nn.TransformerEncoderLayer and a ResNet-18 exported by torch 2's TorchScript
// exporter (dynamo=False) and dynamo exporter (dynamo=True), and torchvision's resnet18 by Debian's
// torch 1.13 (which the script starts for that export), each module's PyTorch output recorded with
// forward hooks. Correct exports pass with the default tolerance, and the difference measured is
// the one onnxruntime-python measures; a copy with one initializer perturbed (with the onnx package)
// is refused naming the module of that initializer and the node that reads it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { copyFileSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { checkSession, DEFAULT_RTOL } from '@npyts/onnxruntime';
import { NpyError, NdArray, decodeNpz, encodeNpz, parseDescr } from '@npyts/core';
import { scratch } from '../helpers/numpy.mjs';

const dir = scratch();
execFileSync('python3', ['-W', 'ignore', join(dirname(fileURLToPath(import.meta.url)), '../helpers/ort_check_fixtures.py'), dir], { stdio: 'ignore' });
const cases = JSON.parse(readFileSync(join(dir, 'cases.json'), 'utf8'));
const exported = cases.filter((c) => c.exported);
const at = (name) => join(dir, name);

/** An NpyError with this code whose message passes `check`. */
async function refused(promise, code, check = () => true) {
  try {
    await promise;
  } catch (e) {
    assert.instance(e, NpyError, String(e));
    assert.is(e.code, code, e.message);
    assert.ok(check(e.message), e.message);
    return e.message;
  }
  assert.unreachable('not refused');
}

test('every model is exported, each exporter covers at least three of the four models', () => {
  for (const kind of ['mlp', 'cnn', 'transformer', 'resnet18'])
    assert.ok(
      exported.some((c) => c.name.startsWith(`${kind}-`)),
      kind,
    );
  for (const exporter of ['torchscript', 'dynamo']) assert.ok(exported.filter((c) => c.name.endsWith(exporter)).length >= 3, exporter);
  // torch 2.13's TorchScript exporter cannot export nn.TransformerEncoderLayer (its attention passes
  // is_causal as a tensor): the dynamo export covers it.
  for (const c of cases.filter((c) => !c.exported)) assert.is(c.name, 'transformer-torchscript', c.why);
  // torchvision's resnet18 by Debian's torch 1.13 and its TorchScript exporter.
  assert.ok(exported.some((c) => c.name === 'resnet18-torchvision'));
});

test('correct exports pass with the default tolerance, measuring what onnxruntime-python measures', async () => {
  for (const c of exported) {
    const session = await ort.InferenceSession.create(at(`${c.name}.onnx`));
    const report = await checkSession(session, at(`${c.name}.npz`), { model: at(`${c.name}.onnx`) });
    assert.equal(report.outputs, ['y'], c.name);
    assert.is(report.rtol, DEFAULT_RTOL);
    assert.ok(report.compared > 0, c.name);
    // Same ORT build in Python and Node: the same difference from PyTorch, to a rounding.
    assert.ok(Math.abs(report.maxAbsDiff - c.drift) <= 1e-7 * c.scale, `${c.name}: ${report.maxAbsDiff} vs ${c.drift}`);
    // The calibration: correct exports drift by float32 rounding, far below the default tolerance.
    assert.ok(c.relDrift < DEFAULT_RTOL / 20, `${c.name}: drift ${c.relDrift} of the output's scale`);
  }
});

test('a perturbed initializer is refused naming its module and the node that reads it, after one extra run', async () => {
  for (const c of exported) {
    const session = await ort.InferenceSession.create(at(`${c.name}-broken.onnx`));
    let created = 0;
    let runs = 0;
    const createSession = async (bytes) => {
      created++;
      const copy = await ort.InferenceSession.create(bytes);
      return {
        inputNames: copy.inputNames,
        outputNames: copy.outputNames,
        run: (feeds) => {
          runs++;
          return copy.run(feeds);
        },
      };
    };
    const message = await refused(checkSession(session, at(`${c.name}.npz`), { model: at(`${c.name}-broken.onnx`), createSession }), 'CHECK_FAILED');
    assert.ok(message.startsWith('the first PyTorch module whose output differs is '), `${c.name}: ${message}`);
    assert.ok(message.includes(`'${c.module}'`), `${c.name}: ${c.module} in ${message}`);
    assert.ok(message.includes(`'${c.node}'`), `${c.name}: ${c.node} in ${message}`);
    assert.ok(message.includes('at the output: check/output'), message);
    assert.is(created, 1, c.name);
    assert.is(runs, 1, c.name);
    // The TorchScript exporter names nodes by module path: the module is named as the one that differs.
    if (c.name.endsWith('torchscript')) assert.ok(message.startsWith(`the first PyTorch module whose output differs is '${c.module}'`), message);
    // A ReLU called twice in a block: its hook kept the second call, computed after the module that differs.
    if (c.name.startsWith('resnet18')) assert.ok(message.includes("'layer3.1.relu' (called again later: a hook records the last call)"), message);
  }
});

test("the session's own class makes the copy, and BatchNorm folded by the exporter is said, its output compared", async () => {
  const session = await ort.InferenceSession.create(at('cnn-torchscript-broken.onnx'));
  const message = await refused(
    checkSession(session, at('cnn-torchscript.npz'), { model: readFileSync(at('cnn-torchscript-broken.onnx')) }),
    'CHECK_FAILED',
    (m) => m.includes("'bn2', recorded after it, has no ONNX node of its own (folded into it or removed by the exporter)"),
  );
  // The fused Conv node computes bn2's output: the value said is bn2's reference there, not conv2's.
  const [, key, index, want] = /: (check\/module\/\S+): at \[([\d,]+)\] ORT gives \S+ and the reference (\S+) \(/.exec(message) ?? [];
  assert.is(key, 'check/module/bn2', message);
  const reference = decodeNpz(readFileSync(at('cnn-torchscript.npz'))).getSync(key);
  const flat = index.split(',').reduce((at, i, k) => at * reference.shape[k] + Number(i), 0);
  assert.is(want, String(reference.data[flat]), message);
  const dynamo = await ort.InferenceSession.create(at('cnn-dynamo-broken.onnx'));
  await refused(checkSession(dynamo, at('cnn-dynamo.npz'), { model: at('cnn-dynamo-broken.onnx') }), 'CHECK_FAILED', (m) =>
    m.includes("the modules before it, up to 'relu1', agree; PyTorch's 'conv2' (no ONNX node of its own: the exporter fused it into another)"),
  );
});

/** The MLP's reference archive with its members changed. */
function archiveWith(change) {
  const members = Object.fromEntries(decodeNpz(readFileSync(at('mlp-dynamo.npz'))).getAllSync());
  change(members);
  return encodeNpz(members);
}

test('without { model } a difference is refused at the output, saying what names the module', async () => {
  const session = await ort.InferenceSession.create(at('mlp-dynamo-broken.onnx'));
  await refused(checkSession(session, readFileSync(at('mlp-dynamo.npz'))), 'CHECK_FAILED', (m) =>
    m.startsWith("the model's outputs differ from the reference: check/output: at ["),
  );
  // A copy ORT cannot make or run is said, the output's difference still reported.
  const createSession = async () => {
    throw new Error('no session for you');
  };
  await refused(checkSession(session, at('mlp-dynamo.npz'), { model: at('mlp-dynamo-broken.onnx'), createSession }), 'CHECK_FAILED', (m) =>
    m.startsWith("the model's outputs differ, and ONNX Runtime could not run the model's copy with the modules' values as extra outputs (no session for you)"),
  );
  // A reference output that no module explains: every module agrees, the difference comes after them.
  const good = await ort.InferenceSession.create(at('mlp-dynamo.onnx'));
  const scaled = archiveWith((m) => {
    const y = m['check/output'];
    m['check/output'] = new NdArray(
      y.dtype,
      y.shape,
      y.data.map((v) => v * 1.1),
      'C',
    );
  });
  await refused(checkSession(good, scaled, { model: at('mlp-dynamo.onnx') }), 'CHECK_FAILED', (m) =>
    m.startsWith("every module compared agrees with PyTorch, up to '4': the difference arises after it"),
  );
  // The dynamo exporter keeps the weights in mlp-dynamo.onnx.data: read beside a path, not found from bytes.
  await refused(
    checkSession(good, scaled, { model: readFileSync(at('mlp-dynamo.onnx')) }),
    'CHECK_FAILED',
    (m) =>
      m.includes("the model's copy cannot be made: the model keeps initializers in mlp-dynamo.onnx.data beside it; pass the model's path or URL") &&
      m.includes('or pass { createSession: (bytes) => ort.InferenceSession.create(bytes, sessionOptions) }'),
  );
  // Files beside the model are found by the rule of every sibling: a symbolic link out of its folder is refused.
  const linked = at('linked');
  rmSync(linked, { recursive: true, force: true });
  mkdirSync(linked);
  copyFileSync(at('mlp-dynamo.onnx'), join(linked, 'mlp-dynamo.onnx'));
  symlinkSync(at('mlp-dynamo.onnx.data'), join(linked, 'mlp-dynamo.onnx.data'));
  await refused(checkSession(good, scaled, { model: join(linked, 'mlp-dynamo.onnx') }), 'CHECK_FAILED', (m) =>
    /the model's copy cannot be made: .*mlp-dynamo\.onnx\.data'?, which a symbolic link leads outside the file's folder/.test(m),
  );
  // From bytes with the caller's createSession, which tells ORT where the files are (as withWeights's
  // sessionOptions do), the copy keeps its pointers and the modules are compared.
  const beside = (bytes) => ort.InferenceSession.create(bytes, { extra: { session: { model_external_initializers_file_folder_path: dir } } });
  await refused(checkSession(good, scaled, { model: readFileSync(at('mlp-dynamo.onnx')), createSession: beside }), 'CHECK_FAILED', (m) =>
    m.startsWith("every module compared agrees with PyTorch, up to '4': the difference arises after it"),
  );
  // A tolerance stated by the caller is the one used.
  const report = await checkSession(session, at('mlp-dynamo.npz'), { rtol: 1 });
  assert.is(report.rtol, 1);
  await refused(checkSession(session, at('mlp-dynamo.npz'), { rtol: -1 }), 'BAD_OPTION');
});

test('inputs that are not what the model wants are refused before ORT runs, naming the input and what it wants', async () => {
  const session = await ort.InferenceSession.create(at('mlp-dynamo.onnx'));
  await refused(
    checkSession(
      session,
      archiveWith((m) => {
        m['check/input/z'] = m['check/input'];
        delete m['check/input'];
      }),
    ),
    'NPZ_KEY',
    (m) => m.includes("the model's input 'x' (float32 [3, 16])") && m.includes('check/input/x'),
  );
  await refused(
    checkSession(
      session,
      archiveWith((m) => {
        const x = m['check/input'];
        m['check/input'] = new NdArray(parseDescr('<f8'), x.shape, Float64Array.from(x.data), 'C');
      }),
    ),
    'DTYPE_MISMATCH',
    (m) => m.includes("check/input is float64 but the model's input 'x' is float32 [3, 16]"),
  );
  await refused(
    checkSession(
      session,
      archiveWith((m) => {
        const x = m['check/input'];
        m['check/input'] = new NdArray(x.dtype, [3, 4, 4], x.data, 'C');
      }),
    ),
    'SHAPE_MISMATCH',
    (m) => m.includes("check/input has shape [3, 4, 4] but the model's input 'x' is float32 [3, 16]"),
  );
  await refused(
    checkSession(
      session,
      archiveWith((m) => {
        delete m['check/output'];
      }),
    ),
    'NPZ_KEY',
    (m) => m.includes("the model's outputs 'y'"),
  );
  // What ORT refuses where the session says nothing of its inputs (no inputMetadata before ORT 1.22).
  const bare = { inputNames: session.inputNames, outputNames: session.outputNames, run: (feeds) => session.run(feeds) };
  await refused(
    checkSession(
      bare,
      archiveWith((m) => {
        const x = m['check/input'];
        m['check/input'] = new NdArray(parseDescr('<f8'), x.shape, Float64Array.from(x.data), 'C');
      }),
    ),
    'CHECK_FAILED',
    (m) => m.startsWith('ONNX Runtime could not run the model on the reference inputs: ') && m.includes("the model's inputs are 'x'"),
  );
  // Named members work as the bare ones do.
  const named = archiveWith((m) => {
    m['check/input/x'] = m['check/input'];
    m['check/output/y'] = m['check/output'];
    delete m['check/input'];
    delete m['check/output'];
  });
  assert.is((await checkSession(session, named)).outputs[0], 'y');
});

test.run();
