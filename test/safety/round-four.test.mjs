// The fourth adversarial trial's findings (issue 53) on writers, planners and options: each as the
// case that was wrong. Outputs are read back by the reference (Python's safetensors, numpy).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import fc from 'fast-check';
import * as core from '@npyts/core';
import * as node from '@npyts/core/node';
import * as tfjs from '@npyts/tfjs';
import { combineNpzChecksums, encodeNpzPart, encodeSafetensors, planNpzParts } from '@npyts/core';
import { saveNpz, saveNpzSync, saveSafetensors, saveSafetensorsSync } from '@npyts/core/node';
import { python, scratch } from '../helpers/numpy.mjs';
import { npyErrorOf } from '../helpers/refusal.mjs';

const dir = scratch('npyts-round-four-');
const at = (name) => join(dir, name);
const f32 = (...v) => ({ data: new Float32Array(v) });

/** The names and values Python's safetensors reads from `path`, as JSON. */
function safetensorsOf(path) {
  return JSON.parse(
    python(`from safetensors.numpy import load_file
print(json.dumps({k: v.tolist() for k, v in load_file(${JSON.stringify(path)}).items()}))`),
  );
}

test("saveSafetensors of a tensor named '__proto__' writes it in the header: Python's safetensors reads every tensor", async () => {
  const tensors = new Map([
    ['__proto__', f32(1, 2)],
    ['w', f32(3)],
  ]);
  saveSafetensorsSync(at('proto-sync.safetensors'), tensors);
  await saveSafetensors(at('proto.safetensors'), tensors);
  writeFileSync(at('proto-bytes.safetensors'), encodeSafetensors({ ['__proto__']: f32(1, 2), w: f32(3) }));
  for (const name of ['proto-sync.safetensors', 'proto.safetensors', 'proto-bytes.safetensors']) {
    assert.equal(safetensorsOf(at(name)), { ['__proto__']: [1, 2], w: [3] }, name);
  }
});

test('a tensor name, metadata or npz key holding a lone surrogate is refused (BAD_OPTION) before anything is written', async () => {
  for (const bad of ['w\ud800', 'w\udbff', '\udc00x']) {
    assert.is((await npyErrorOf(() => encodeSafetensors(new Map([[bad, f32(1)]])))).code, 'BAD_OPTION');
    assert.is((await npyErrorOf(() => encodeSafetensors({ w: f32(1) }, { metadata: { [bad]: 'x' } }))).code, 'BAD_OPTION');
    assert.is((await npyErrorOf(() => encodeSafetensors({ w: f32(1) }, { metadata: { format: bad } }))).code, 'BAD_OPTION');
    assert.is((await npyErrorOf(() => core.encodeNpz({ [bad]: f32(1) }))).code, 'BAD_OPTION');
    assert.is((await npyErrorOf(() => planNpzParts({ members: [{ key: bad, dtype: '<f4', shape: [1] }] }))).code, 'BAD_OPTION');
  }
  // Two keys that both became 'w\ufffd.npy': one member named twice, one key for numpy.
  const path = at('surrogates.npz');
  const error = await npyErrorOf(() => saveNpzSync(path, { 'w\ud800': f32(1), 'w\udbff': f32(2) }));
  assert.is(error.code, 'BAD_OPTION');
  assert.match(error.message, /\\ud800/);
  assert.is((await npyErrorOf(() => saveNpz(path, { 'w\udbff': f32(2) }))).code, 'BAD_OPTION');
  assert.is(python(`import os; print(os.path.exists(${JSON.stringify(path)}))`).trim(), 'False');
  // A well-formed pair is a name like any other: numpy reads it.
  saveNpzSync(path, { 'w\ud83d\ude00': f32(5) });
  assert.equal(JSON.parse(python(`print(json.dumps({k: v.tolist() for k, v in np.load(${JSON.stringify(path)}).items()}))`)), { 'w\ud83d\ude00': [5] });
});

test("planNpzParts with a member keyed '__proto__' (np.savez writes one) makes an archive numpy reads", () => {
  const plan = planNpzParts({ members: [{ key: '__proto__', dtype: '<f4', shape: [2] }, { key: 'b', dtype: '<f4', shape: [1] }] });
  const part = encodeNpzPart(plan, 1, { ['__proto__']: f32(1, 2), b: f32(3) });
  const crcs = combineNpzChecksums(plan, part.checksums);
  assert.equal(Object.keys(crcs), ['__proto__', 'b']);
  writeFileSync(at('proto.npz'), part.bytes(JSON.parse(JSON.stringify(crcs))));
  assert.equal(JSON.parse(python(`print(json.dumps({k: v.tolist() for k, v in np.load(${JSON.stringify(at('proto.npz'))}).items()}))`)), {
    ['__proto__']: [1, 2],
    b: [3],
  });
  // A part's arrays are read by own key: an object without '__proto__' is refused, not read as Object.prototype.
  assert.throws(() => encodeNpzPart(plan, 1, { b: f32(3) }), (e) => e.code === 'BAD_OPTION' && /'__proto__'/.test(e.message));
});

test.run();
