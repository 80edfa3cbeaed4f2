// Compiled by test/io/steps.test.mjs: an operation is typed by the steps it yields (io/steps.ts), so
// a driver that cannot perform one of them refuses it at compile time. Each `@ts-expect-error` line
// must stay an error.
import { runSync, run } from '../../../packages/core/src/node/drive.js';
import { performOnBytes } from '../../../packages/core/src/npz/zip.js';
import {
  drive,
  driveSync,
  perform,
  performReads,
  SOURCE,
  type AwaitStep,
  type FileStep,
  type Operation,
  type ViewStep,
} from '../../../packages/core/src/io/steps.js';

declare const read: (at: number, length: number) => Promise<Uint8Array>;

/** An operation that waits for another source's work: only an async driver performs it. */
function* awaiting(): Operation<number, FileStep | AwaitStep> {
  const size = yield* perform({ op: 'size', file: SOURCE });
  const more = yield* perform({ op: 'await', value: async () => 1 });
  return size + more; // both typed number, without a cast
}

/** A file-system operation. */
function* removing(path: string): Operation<boolean, FileStep> {
  const there = yield* perform({ op: 'exists', path });
  if (there) yield { op: 'remove', path };
  return there;
}

/** An archive's kind of operation: views of the source only. */
function* viewing(): Operation<Uint8Array, ViewStep> {
  return yield* perform({ op: 'view', file: SOURCE, at: 0, length: 4 });
}

// Each driver takes the operations whose steps it performs.
export const ran = [
  run(awaiting()),
  runSync(removing('x')),
  driveSync(viewing(), performOnBytes({ size: 4, read: () => new Uint8Array(4) })),
  drive(viewing(), performReads(read)),
];

// @ts-expect-error the blocking driver cannot wait for a promise: an operation that awaits is refused
runSync(awaiting());
// @ts-expect-error the blocking engine itself refuses an operation that awaits, whatever its driver
driveSync(awaiting(), (step) => step);
// @ts-expect-error a zip source's driver performs views alone, no file-system step
driveSync(removing('x'), performOnBytes({ size: 4, read: () => new Uint8Array(4) }));
// @ts-expect-error a read-only source's driver (a Blob, HTTP ranges) performs reads alone
drive(removing('x'), performReads(read));
// @ts-expect-error Node's file drivers hold no bytes to view
run(viewing());

/** An operation yields only steps of its vocabulary. */
export function* outside(): Operation<void, ViewStep> {
  // @ts-expect-error a `remove` is not a step of ViewStep
  yield { op: 'remove', path: 'x' };
}

/** A step's result is typed by the step. */
export function* sized(): Operation<number, FileStep> {
  // @ts-expect-error `size` answers a number
  const s: string = yield* perform({ op: 'size', file: SOURCE });
  return s.length;
}
