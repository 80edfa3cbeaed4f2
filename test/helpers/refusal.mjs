// The one way the tests take the NpyError an operation must end in.
import { NpyError } from '@npyts/core';

/** The NpyError `work` ends in: any other error, or none, fails the test. */
export async function npyErrorOf(work) {
  try {
    await work();
  } catch (e) {
    if (e instanceof NpyError) return e;
    throw new Error(`not an NpyError: ${e?.stack ?? e}`);
  }
  throw new Error('no error');
}

/** The NpyError `promise` rejects with, checked to have `code` and a message matching `pattern` (a RegExp, or text it includes). */
export async function refusedWith(promise, code, pattern) {
  const e = await npyErrorOf(() => promise);
  if (e.code !== code) throw new Error(`${code} expected, ${e.code} given: ${e.message}`);
  const matches = pattern === undefined || (typeof pattern === 'string' ? e.message.includes(pattern) : pattern.test(e.message));
  if (!matches) throw new Error(`the message does not match ${pattern}: ${e.message}`);
  return e;
}
