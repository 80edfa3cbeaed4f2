/** Files written beside their target and renamed over it, as steps: the one way npyts replaces a file. */
import { perform, type AwaitStep, type FileRef, type FileStep, type Operation, type Step } from '../io/steps.js';
import type { StoreWriter } from '../store/types.js';
import { NpyError, withWhere } from '../errors.js';
import { tempBeside } from './fd.js';
import { checkOptions, knownKeys, type KnownKeys } from '../options.js';
import { performAsync, performSync, runSync } from './drive.js';

/** How a save replaces its file. */
export interface ReplaceOptions {
  /**
   * Make the new file durable before it replaces the old one, and the replacement durable after:
   * `fsync` of the file before the rename, then of its directory. Without it (the default, as
   * `np.save`), a save is whole or absent for readers, errors, aborts and a crash of the process,
   * but a power loss or a crash of the system soon after it can leave the file empty or zeroed:
   * the data may still be in the page cache when the rename reaches the disk. A folder that cannot be
   * synced fails the save with the folder's error, which says the file is in place (Windows, which
   * cannot open a folder, and file systems that refuse the call are the exceptions: nothing more can
   * be done there).
   */
  durable?: boolean;
}

/** The options {@link ReplaceOptions} names (see `knownKeys`, options.ts). */
export const REPLACE_KEYS = { durable: true } as const satisfies KnownKeys<ReplaceOptions>;
const REPLACE_KEY_SET = knownKeys<ReplaceOptions>(REPLACE_KEYS);

/**
 * Write a file through a temporary file beside it, renamed over `path` only when `write` completes
 * (and, async, the signal has not fired): an error, an abort or a crash of the process leaves the
 * old file (or none), never a part of the new one, and so does a crash of the system with
 * `durable` (see {@link ReplaceOptions}); the temporary file is removed on every error path.
 */
export function* writingBeside<S extends Step>(
  path: string,
  write: (file: FileRef) => Operation<void, S>,
  options: ReplaceOptions = {},
): Operation<void, S | FileStep> {
  yield { op: 'replaceable', path };
  const temp = tempBeside(path);
  const file = yield* perform({ op: 'open', path: temp, mode: 'wx' });
  let open = true;
  try {
    yield* write(file);
    if (options.durable) yield { op: 'sync', file };
    open = false;
    yield { op: 'close', file };
    // One step: an abort cannot fall between the rename and its sync.
    yield { op: 'rename', from: temp, to: path, durable: options.durable ?? false };
  } catch (e) {
    if (open) {
      try {
        yield { op: 'close', file };
      } catch {
        /* closing after a failure: the first error is the one to report */
      }
    }
    yield { op: 'remove', path: temp };
    throw e;
  }
}

/** What a {@link besideWriter}'s file is handed next: a write, or null (complete). */
type HandedWrite = readonly [Uint8Array, number] | null;

/** The `await` step at which a {@link besideWriter}'s file waits for its next write: its writer answers it, no driver performs it. */
const NEXT_WRITE = (): Promise<HandedWrite> => Promise.reject(new Error("a writer's pause is not performed"));

/** A {@link besideWriter}'s steps: the file's, and its pauses for the next write. */
type WriterStep = FileStep | AwaitStep<HandedWrite>;

/** The file of a {@link besideWriter}: the writes it is handed, until null (complete). */
function* handedWrites(file: FileRef): Operation<void, WriterStep> {
  for (;;) {
    const next = yield* perform<AwaitStep<HandedWrite>>({ op: 'await', value: NEXT_WRITE });
    if (next === null) return;
    yield { op: 'write', file, bytes: next[0], at: next[1] };
  }
}

/** Thrown into a {@link besideWriter}'s file when it is aborted: the temporary file is removed. */
const ABORTED = new Error('aborted');

/**
 * A file written beside `path` as a store's writer ({@link writingBeside}'s steps, performed as it
 * is called: each `write` a positional write of the temporary file, `commit` its close and rename,
 * `abort` its removal): blocking (its methods return at once) or async. What a folder store writes
 * its keys with.
 */
export function besideWriter(path: string, options: ReplaceOptions, sync: true): StoreWriter;
export function besideWriter(path: string, options: ReplaceOptions, sync: false): Promise<StoreWriter>;
export function besideWriter(path: string, options: ReplaceOptions, sync: boolean): StoreWriter | Promise<StoreWriter> {
  const operation = writingBeside(path, handedWrites, options);
  let over = false; // the operation has ended: renamed, or failed and its temporary file removed
  // Perform steps from `answer` on until the file waits for a write (false) or the operation is over (true).
  // Every await step of the operation is its pause (handedWrites yields no other): a writer answers it, no driver.
  const isPause = (step: WriterStep): step is AwaitStep<HandedWrite> => step.op === 'await';
  const ended = (): never => {
    throw new NpyError('WRITE_FAILED', `${path} was not written: its writer failed or was aborted before it was committed`);
  };
  const fail = (e: unknown): never => {
    over = true;
    throw e === ABORTED ? e : withWhere(e, { file: path });
  };
  if (sync) {
    const advance = (answer: unknown, failed: boolean): void => {
      for (;;) {
        let next: IteratorResult<WriterStep, void>;
        try {
          next = failed ? operation.throw(answer) : operation.next(answer);
        } catch (e) {
          fail(e);
        }
        if (next!.done) over = true;
        if (next!.done || isPause(next!.value)) return;
        try {
          answer = performSync(next!.value);
          failed = false;
        } catch (e) {
          answer = e;
          failed = true;
        }
      }
    };
    advance(undefined, false);
    return {
      write: (bytes, at) => (over ? ended() : advance([bytes, at], false)),
      commit: () => (over ? ended() : advance(null, false)),
      abort: () => {
        if (over) return;
        try {
          advance(ABORTED, true);
        } catch (e) {
          if (e !== ABORTED) throw e;
        }
      },
    };
  }
  const advance = async (answer: unknown, failed: boolean): Promise<void> => {
    for (;;) {
      let next: IteratorResult<WriterStep, void>;
      try {
        next = failed ? operation.throw(answer) : operation.next(answer);
      } catch (e) {
        fail(e);
      }
      if (next!.done) over = true;
      if (next!.done || isPause(next!.value)) return;
      try {
        answer = await performAsync(next!.value, undefined);
        failed = false;
      } catch (e) {
        answer = e;
        failed = true;
      }
    }
  };
  // Calls made before the last settled wait their turn: one generator, driven by one call at a time.
  let tail: Promise<unknown> = Promise.resolve();
  const inTurn = <T>(call: () => Promise<T>): Promise<T> => {
    const mine = tail.then(call, call);
    tail = mine.then(
      () => {},
      () => {},
    );
    return mine;
  };
  return advance(undefined, false).then(() => ({
    write: (bytes, at) => inTurn(async () => (over ? ended() : advance([bytes, at], false))),
    commit: () => inTurn(async () => (over ? ended() : advance(null, false))),
    abort: () =>
      inTurn(async () => {
        if (!over)
          await advance(ABORTED, true).catch((e: unknown) => {
            if (e !== ABORTED) throw e;
          });
      }),
  }));
}

/**
 * Write a file through a temporary file beside it, renamed over the target only when complete:
 * a crash or an error leaves the old file (or none), never a truncated one. The temporary file is
 * removed on every error path.
 * @example
 * writeBeside('out.bin', (fd) => writeSync(fd, bytes));   // renamed over out.bin when complete
 */
export function writeBeside(path: string, write: (fd: number) => void, options: ReplaceOptions = {}): void {
  checkOptions('writeBeside', options, REPLACE_KEY_SET);
  // The caller's writes are its own blocking calls on the descriptor the blocking driver opened: no steps.
  // biome-ignore lint/correctness/useYield: see above
  const writing = function* (file: FileRef): Operation<void, FileStep> {
    write(file as unknown as number);
  };
  runSync(writingBeside(path, writing, options), path);
}
