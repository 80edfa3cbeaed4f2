// Costs bounded by the bytes present, not by what they claim (issue 26): integers written as text
// past Python's 4300 digits, pickled arrays of zero-size items whose element count overflows, and a
// deflated member that inflates far past a small declared size in the pure-JavaScript codec.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { unpickle } from '@npyts/core/pickle';
import { boundedChild, python, scratch } from '../helpers/numpy.mjs';

const dir = scratch('npyts-claims-');

/** Python's verdict on unpickling `bytes` (`ok` or the exception's name), and ours (`ok` or the NpyError code). */
function verdicts(file) {
  const theirs = python(`import pickle
try:
    pickle.loads(open(${JSON.stringify(file)}, 'rb').read()); print('ok')
except Exception as e:
    print(type(e).__name__)`).trim();
  const { ours } = boundedChild(
    dir,
    `import { unpickle } from '@npyts/core/pickle';
import { readFileSync } from 'node:fs';
let ours = 'ok';
try { unpickle(readFileSync(${JSON.stringify(file)})); } catch (e) { ours = e.code ?? e.name; }
globalThis.result = { ours };`,
    { timeoutMs: 20_000 },
  );
  return { theirs, ours };
}

test('INT, LONG and Fraction text past 4300 digits is refused as Python refuses it; up to the limit it reads as Python reads it', () => {
  const cases = {
    int: (d) => `b'I' + b'7' * ${d} + b'\\n.'`,
    long: (d) => `b'L-' + b'7' * ${d} + b'L\\n.'`,
    fraction: (d) => `b'cfractions\\nFraction\\n(V' + b'1' * ${d} + b'/3\\ntR.'`,
  };
  for (const [name, make] of Object.entries(cases)) {
    for (const digits of [4300, 4301, 8_000_000]) {
      const file = join(dir, `${name}-${digits}.pkl`);
      python(`open(${JSON.stringify(file)}, 'wb').write(${make(digits)})`);
      const { theirs, ours } = verdicts(file);
      if (theirs === 'ok') assert.is(ours, 'ok', `${name} ${digits}`);
      else assert.is(ours, 'TOO_LARGE', `${name} ${digits}: Python says ${theirs}`);
    }
  }
  // Up to the limit: the same value.
  const text = '9'.repeat(4300);
  assert.is(unpickle(new TextEncoder().encode(`I${text}\n.`)).toString(), python(`print(int('9' * 4300))`).trim());
});

test('a pickled array of zero-size items (V0, S0) whose element count overflows is refused as numpy refuses it; a countable one is read', () => {
  for (const dt of ['V0', 'S0']) {
    for (const shape of ['(2**40, 2**40)', '(10**6,)']) {
      const file = join(dir, `zero-${dt}.pkl`);
      python(`import pickle, numpy._core.multiarray as m
class A:
    def __reduce__(self):
        return (m._reconstruct, (np.ndarray, (0,), b'b'), (1, ${shape}, np.dtype('${dt}'), False, b''))
open(${JSON.stringify(file)}, 'wb').write(pickle.dumps(A(), protocol=4))`);
      const { theirs, ours } = verdicts(file);
      if (theirs === 'ok') assert.is(ours, 'ok', `${dt} ${shape}`);
      else assert.is(ours, 'SIZE_OVERFLOW', `${dt} ${shape}: numpy says ${theirs}`);
    }
  }
  // Pickle protocol 5's form, _frombuffer(bytes, dtype, shape, order): numpy rebuilds it with
  // np.frombuffer, which refuses zero-size items ("itemsize cannot be zero") whatever the shape.
  const file = join(dir, 'zero-frombuffer.pkl');
  python(`import pickle, numpy._core.numeric as n
class A:
    def __reduce__(self):
        return (n._frombuffer, (b'', np.dtype('V0'), (10**9,), 'C'))
open(${JSON.stringify(file)}, 'wb').write(pickle.dumps(A(), protocol=5))`);
  const { theirs, ours } = verdicts(file);
  assert.is.not(theirs, 'ok', 'numpy refuses it');
  assert.is(ours, 'BAD_PICKLE', `numpy says ${theirs}`);
});

test('the fflate codec stops a member that inflates far past a small declared size within a few MiB', () => {
  const r = boundedChild(
    dir,
    `import { fflateCodec } from '@npyts/core';
import { deflateRawSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
const peak = () => Number(/VmHWM:\\s+(\\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
const bomb = deflateRawSync(Buffer.alloc(1 << 30));
const before = peak();
let code = null;
try { fflateCodec.inflate(bomb, 1000, 'm'); } catch (e) { code = e.code; }
globalThis.result = { code, compressed: bomb.length, grew: peak() - before };`,
  );
  assert.is(r.code, 'ZIP_SIZE');
  assert.ok(r.grew < 40, `the peak grew ${r.grew.toFixed(0)} MiB for a ${r.compressed}-byte member declaring 1000 bytes`);
});

test.run();
