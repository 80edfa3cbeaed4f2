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
