/** Files written beside their target and renamed over it, as steps: the one way npyts replaces a file. */
import type { FileRef, Operation } from '../io/steps.js';
import { tempBeside } from './fd.js';

/**
 * Write a file through a temporary file beside it, renamed over `path` only when `write` completes
 * (and, async, the signal has not fired): a crash, an error or an abort leaves the old file (or
 * none), never a part of the new one; the temporary file is removed on every error path.
 */
export function* writingBeside(path: string, write: (file: FileRef) => Operation<void>): Operation<void> {
  const temp = tempBeside(path);
  const file = (yield { op: 'open', path: temp, mode: 'wx' }) as FileRef;
  let open = true;
  try {
    yield* write(file);
    open = false;
    yield { op: 'close', file };
    yield { op: 'rename', from: temp, to: path };
  } catch (e) {
    if (open) {
      try { yield { op: 'close', file }; } catch { /* closing after a failure: the first error is the one to report */ }
    }
    yield { op: 'remove', path: temp };
    throw e;
  }
}
