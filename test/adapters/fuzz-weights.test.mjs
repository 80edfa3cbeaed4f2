// Property-based fuzzing (fast-check, fixed seed) of what the tfjs adapter decides from an archive's
// names and check members: state_dicts whose module names collide, and reference outputs with
// non-finite values. (Kept out of format/'s fuzz suite, which also runs under Bun, Deno and Node 22.)
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import * as tfl from '@tensorflow/tfjs-layers';
import { NpyError, encodeNpz } from '@npyts/core';
import { DEFAULT_RTOL, assignWeights, checkModel } from '@npyts/tfjs';
import { useCpuBackend } from '../helpers/tfjs.mjs';

await useCpuBackend();
const settings = (numRuns) => ({ seed: 20261126, numRuns, endOnFailure: true });

// State_dicts whose module names collide once dots read as '_' or '/': every layer named after a
// module gets exactly that module's weights, or the load is refused (NAME_CLASH, WEIGHT_MISMATCH) and
// the model is left as it was; never another module's weights.
test('fuzz: state_dict archives with colliding module names pair exactly or are refused, never swapped', async () => {
  const outcomes = { paired: 0, refused: 0 };
  // Modules that share their parts and differ in separators ('a.x_y', 'a_x.y', 'a_x_y'): they read
  // alike once dots become '_', which is where pairing by name can go wrong.
  const part = fc.constantFrom('a', 'b', 'x', 'y', 'x_y', 'a_x');
  const colliding = fc.array(part, { minLength: 2, maxLength: 3 }).chain((parts) =>
    fc
      .uniqueArray(
        fc.array(fc.constantFrom('.', '_'), { minLength: parts.length - 1, maxLength: parts.length - 1 }).map((seps) => seps.join('')),
        {
          minLength: 2,
          maxLength: 3,
        },
      )
      .map((patterns) => [...new Set(patterns.map((seps) => parts.map((p, i) => (i ? seps[i - 1] + p : p)).join('')))]),
  );
  await fc.assert(
    fc.asyncProperty(colliding, fc.boolean(), async (modules, dotsToUnderscores) => {
      // Each module: a 2→2 linear layer whose weights say which module it is.
      const arrays = {};
      modules.forEach((m, k) => {
        arrays[`${m}.weight`] = { data: Float32Array.from({ length: 4 }, (_, i) => k * 10 + i), shape: [2, 2] };
        arrays[`${m}.bias`] = { data: Float32Array.from({ length: 2 }, (_, i) => -k * 10 - i), shape: [2] };
      });
      // Layers named after the modules (dots turned to '_', as tfjs names cannot hold dots).
      // A name taken already (two modules normalise to it) goes to a layer paired by order instead.
      const names = [];
      for (const m of modules) {
        const name = dotsToUnderscores ? m.replace(/\./g, '_') : m.replace(/\./g, '/');
        names.push(names.includes(name) ? `by_order_${names.length}` : name);
      }
      const input = tfl.input({ shape: [2] });
      let x = input;
      for (const name of names) x = tfl.layers.dense({ units: 2, name }).apply(x);
      const model = tfl.model({ inputs: input, outputs: x });
      const before = model.getWeights().map((w) => Array.from(w.dataSync()));
      try {
        await assignWeights(model, encodeNpz(arrays), { layout: 'pytorch' });
      } catch (e) {
        if (!(e instanceof NpyError)) throw e;
        assert.ok(['NAME_CLASH', 'WEIGHT_MISMATCH'].includes(e.code), e.message);
        outcomes.refused++;
        assert.equal(
          model.getWeights().map((w) => Array.from(w.dataSync())),
          before,
        );
        return;
      }
      // Each layer's bias says which module it took: the one named exactly, or the only one that normalises to it.
      outcomes.paired++;
      names.forEach((name) => {
        if (name.startsWith('by_order_')) return;
        const k = -model.getLayer(name).getWeights()[1].dataSync()[0] / 10;
        const exact = modules.indexOf(name);
        const normal = modules.filter((m) => m.replace(/\./g, dotsToUnderscores ? '_' : '/') === name);
        assert.ok(exact >= 0 ? k === exact : normal.length === 1 && k === modules.indexOf(normal[0]), `layer ${name} took module ${modules[k]} of ${modules}`);
      });
    }),
    settings(200),
  );
  assert.ok(outcomes.paired > 10 && outcomes.refused > 5, JSON.stringify(outcomes));
});

// check/output with non-finite values: accepted exactly when the model's output matches every
// non-finite reference value (same infinity, NaN for NaN), the finite ones within the tolerance, and at
// least one finite value is compared.
test('fuzz: check members with non-finite values prove what they compare, no more', async () => {
  const model = tfl.sequential({ layers: [tfl.layers.activation({ activation: 'linear', inputShape: [3] })] });
  const value = fc.oneof(fc.constantFrom(Number.NaN, Infinity, -Infinity, 0), fc.float({ min: -1e6, max: 1e6, noNaN: true }).map(Math.fround));
  await fc.assert(
    fc.asyncProperty(
      fc.array(value, { minLength: 3, maxLength: 3 }),
      fc.array(fc.oneof(fc.constant(null), value), { minLength: 3, maxLength: 3 }),
      async (x, change) => {
        const ref = x.map((v, i) => (change[i] === null ? v : change[i]));
        const archive = encodeNpz({
          'check/input': { data: Float32Array.from(x), shape: [1, 3] },
          'check/output': { data: Float32Array.from(ref), shape: [1, 3] },
        });
        const same = (a, b) =>
          Object.is(a, b) ||
          (Number.isNaN(a) && Number.isNaN(b)) ||
          (Number.isFinite(a) &&
            Number.isFinite(b) &&
            Math.abs(a - b) <= DEFAULT_RTOL * Math.max(...ref.filter(Number.isFinite).map(Math.abs), 0) + DEFAULT_RTOL * Math.abs(b));
        const finite = ref.filter(Number.isFinite).length;
        const shouldPass = finite > 0 && x.every((v, i) => same(Math.fround(v), ref[i]));
        let passed = true;
        try {
          await checkModel(model, archive);
        } catch (e) {
          if (!(e instanceof NpyError) || e.code !== 'CHECK_FAILED') throw e;
          passed = false;
        }
        assert.is(passed, shouldPass, `input ${x}, reference ${ref}`);
      },
    ),
    settings(300),
  );
});

test.run();
