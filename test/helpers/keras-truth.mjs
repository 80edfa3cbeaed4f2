// Keras's own predictions for the tests that load its files into tfjs: one Python process builds,
// saves and runs every model of a test file (a script that writes its files into a folder and prints
// {name: {inputs, outputs}}), and tfjs's predictions are compared with them.
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs-core';
import * as assert from 'uvu/assert';

const helpers = dirname(fileURLToPath(import.meta.url));

/** What test/helpers/SCRIPT printed after writing its models into `dir`, run with `env` added. */
export function kerasTruth(script, dir, env) {
  return JSON.parse(
    execFileSync('python3', ['-W', 'ignore', join(helpers, script), dir], {
      encoding: 'utf8',
      env: { ...process.env, TF_CPP_MIN_LOG_LEVEL: '3', ...env },
      maxBuffer: 1 << 26,
      stdio: ['ignore', 'pipe', 'ignore'],
    }),
  );
}

/** The largest difference between tfjs's predictions on Keras's inputs and Keras's, relative to max(1, |Keras's|). */
export function worstRelativeError(model, { inputs, outputs }) {
  const xs = inputs.map((x, i) => tf.tensor(x, undefined, model.inputs[i].dtype));
  const made = model.predict(xs.length === 1 ? xs[0] : xs);
  const ys = Array.isArray(made) ? made : [made];
  assert.is(ys.length, outputs.length);
  let err = 0;
  ys.forEach((y, i) => {
    const a = y.dataSync();
    const b = outputs[i].flat(Infinity);
    assert.is(a.length, b.length);
    for (let j = 0; j < b.length; j++) err = Math.max(err, Math.abs(a[j] - b[j]) / Math.max(1, Math.abs(b[j])));
  });
  tf.dispose([...xs, ...ys]);
  return err;
}
