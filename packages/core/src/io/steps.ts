/**
 * The vocabularies of storage work. An operation (a load, a save, an append, a lock) is written
 * once, as a generator of the steps it needs; a driver performs them, blocking (the `…Sync` names)
 * or asynchronously (the plain names, with `signal` honoured between steps and inside long ones).
 * Steps are grouped by what a driver can do, and an operation's type names the groups it yields
 * (`Operation<T, S>`): a driver given an operation with a step it cannot perform does not compile.
 * A step that fails is thrown back into the operation at the `yield`, so its own `try`/`finally`
 * cleans up (closing files, removing a temporary file) with further steps; after an abort those
 * clean-up steps run without the signal.
 *
 * Browser-safe: the drivers for files are in node/drive.ts.
 */
import type { NdArray } from '../array/ndarray.js';
import { NpyError } from '../errors.js';
import { inParallel } from './settle.js';

/** A file as a driver holds it (a descriptor, a FileHandle): opaque to operations. */
export type FileRef = { readonly __fileRef: unique symbol };

/** The one file of a driver over one source (an archive, a positional source): its drivers ignore the reference. */
export const SOURCE = {} as FileRef;

/** One positional read: `into.length` bytes at `at`. */
export interface PositionalRead {
  readonly into: Uint8Array;
  readonly at: number;
}

/** A region as a strided walk: runs of `runLength` bytes at `base` + Σ index × stride over `counts`. */
export interface Strided {
  readonly base: number;
  readonly runLength: number;
  readonly counts: readonly number[];
  readonly strides: readonly number[];
}

/** A region read of an open .npy `part` (from an `openNpy` step): `count` elements along each axis from `start`. */
export interface RegionRead<P = unknown> {
  readonly part: P;
  readonly start: number[];
  readonly count: number[];
}

/**
 * How a file is opened: an existing regular file read-only (`'r'`) or read-write (`'r+'`), or a new
 * file that must not exist yet, write-only (`'wx'`) or read-write (`'wx+'`).
 */
export type OpenMode = 'r' | 'r+' | 'wx' | 'wx+';

/**
 * Bytes viewed where the driver holds them: the one step of an archive's or a zip's reads, which a
 * source in memory answers with views and a remote one with reads it keeps.
 */
export type ViewStep =
  /**
   * → `length` bytes at `at` (fewer at the end): a view of bytes the driver holds (an archive in
   * memory), else a buffer of their own. For reads whose bytes are only looked at, not kept.
   */
  { readonly op: 'view'; readonly file: FileRef; readonly at: number; readonly length: number };

/** Positional reads into the caller's buffers: every driver of a file or a byte source performs them. */
export type ReadStep =
  /** → bytes read (fewer only at the end of the file). `onPiece` sees pieces as they complete. */
  | { readonly op: 'read'; readonly file: FileRef; readonly into: Uint8Array; readonly at: number; readonly onPiece?: (piece: Uint8Array) => void }
  /**
   * Positional reads taken from `reads` as the driver is ready for them (blocking: one at a time;
   * async: several in flight, all settled before it answers), each handed to `onRead` with the
   * bytes it got (fewer only at the end of the file) as it completes. An error of `onRead` stops
   * the reads.
   */
  | { readonly op: 'reads'; readonly file: FileRef; readonly reads: Iterable<PositionalRead>; readonly onRead: (read: PositionalRead, got: number) => void };

/** Work on a file already open that every positional source performs (Node's file, an archive member, an OPFS access handle). */
export type HandleStep =
  | { readonly op: 'close'; readonly file: FileRef }
  /** Write all of `bytes` at `at` (at the file position when null). */
  | { readonly op: 'write'; readonly file: FileRef; readonly bytes: Uint8Array; readonly at: number | null }
  /** → the file's size in bytes. */
  | { readonly op: 'size'; readonly file: FileRef }
  /** Make the file's data durable (fsync). */
  | { readonly op: 'sync'; readonly file: FileRef }
  | { readonly op: 'truncate'; readonly file: FileRef; readonly size: number }
  /**
   * → whether the driver copied a strided region into `out` in one step (Node's addon from a map of
   * the file; false: read it by runs instead).
   */
  | { readonly op: 'gather'; readonly file: FileRef; readonly strided: Strided; readonly out: Uint8Array };

/** Paths, locks and the waits between lock attempts: what only Node's file system performs. */
export type FileSystemStep =
  /** → FileRef. An existing file must be a regular one (NOT_A_FILE otherwise). */
  | { readonly op: 'open'; readonly path: string; readonly mode: OpenMode }
  /** Reserve `bytes` after `at` (fallocate, where the addon has it): a hint, never an error. */
  | { readonly op: 'reserve'; readonly file: FileRef; readonly at: number; readonly bytes: number }
  /** Rename `from` over `to`; `durable`: then make the rename durable (fsync of their folder, where the platform has it). */
  | { readonly op: 'rename'; readonly from: string; readonly to: string; readonly durable?: boolean }
  /** Refuse a path that is there and is not a regular file (a directory, a FIFO): NOT_A_FILE, before anything is written. */
  | { readonly op: 'replaceable'; readonly path: string }
  /** Remove a file if it is there. */
  | { readonly op: 'remove'; readonly path: string }
  /** → whether a path exists. */
  | { readonly op: 'exists'; readonly path: string }
  /** → the names in a folder (not `.` and `..`), or null where it cannot be listed. */
  | { readonly op: 'list'; readonly path: string }
  /** → whether `file` is still the file at `path` (not replaced by a rename meanwhile). */
  | { readonly op: 'same'; readonly file: FileRef; readonly path: string }
  /** → true when the file's exclusive advisory lock is now held (waiting for it as the driver waits), null where there are no such locks. */
  | { readonly op: 'lock'; readonly file: FileRef }
  | { readonly op: 'unlock'; readonly file: FileRef }
  /** Let `ms` pass (blocking: sleep; async: a timer the signal cuts short). */
  | { readonly op: 'wait'; readonly ms: number };

/** The course of an operation, which every driver of files and sources performs. */
export type ControlStep =
  /** Run `work` over `bytes` (async: a piece at a time, with turns of the event loop between). */
  | { readonly op: 'compute'; readonly bytes: Uint8Array; readonly work: (piece: Uint8Array) => void }
  /** The operation's effect has happened: from here on, an abort no longer interrupts it. */
  | { readonly op: 'committed' };

/**
 * → what `value` resolves to: work of another source (a lazy weight file's tensor) done while the
 * operation holds its files open. Async drivers only: {@link driveSync} refuses, at compile time,
 * an operation that yields it.
 */
export interface AwaitStep<R = unknown> {
  readonly op: 'await';
  readonly value: (signal: AbortSignal | undefined) => Promise<R>;
}

/**
 * → an open .npy (what the driver reads regions of: a file handle, a URL reader) by its name (a
 * path, a URL); `heapOf` names the ragged index that names it, for the error when it is missing.
 * `opened` is never set: it only carries `P`, the type of what the ragged reader's driver opens, to
 * the step's result ({@link StepResult}).
 */
export interface OpenNpyStep<P = unknown> {
  readonly op: 'openNpy';
  readonly name: string;
  readonly heapOf?: string;
  readonly opened?: P;
}

/** The steps of a ragged reader (ragged/reading.ts), over parts of type `P` that its driver opens. */
export type RaggedStep<P = unknown> =
  | OpenNpyStep<P>
  /** → the arrays of region reads of open .npy files, in order (an async driver makes them together). */
  | { readonly op: 'regions'; readonly reads: readonly RegionRead<P>[] };

/** What the operations of an open .npy handle yield (io/handles.ts): Node's files and positional sources both perform them. */
export type PositionalStep = ReadStep | HandleStep | ControlStep;

/** What a positional source's driver performs (io/handles.ts): an archive member, an OPFS file. */
export type SourceStep = ViewStep | PositionalStep;

/** What Node's file drivers perform (node/drive.ts); the async one performs {@link AwaitStep} too. */
export type FileStep = PositionalStep | FileSystemStep;

/** One thing an operation asks its driver to do; the driver answers with its {@link StepResult}. */
export type Step = ViewStep | ReadStep | HandleStep | FileSystemStep | ControlStep | AwaitStep | RaggedStep;

/** The steps a blocking driver can perform: all but {@link AwaitStep}. */
export type SyncStep = Exclude<Step, AwaitStep>;

/** The step of one op. */
export type StepOf<K extends Step['op']> = Extract<Step, { readonly op: K }>;

/** What a driver answers each step with, by its op (the steps of generic results are in {@link StepResult}). */
interface Results {
  view: Uint8Array;
  read: number;
  reads: void;
  close: void;
  write: void;
  size: number;
  sync: void;
  truncate: void;
  gather: boolean;
  open: FileRef;
  reserve: void;
  rename: void;
  replaceable: void;
  remove: void;
  exists: boolean;
  list: string[] | null;
  same: boolean;
  lock: boolean | null;
  unlock: void;
  wait: void;
  compute: void;
  committed: void;
  regions: NdArray[];
}

/** The result of a step: what its driver answers it with. */
export type StepResult<S extends Step> =
  S extends AwaitStep<infer R> ? R : S extends OpenNpyStep<infer P> ? P : S extends { readonly op: infer K extends keyof Results } ? Results[K] : never;

/**
 * An operation: yields steps of the vocabulary `S` (a driver of a smaller vocabulary refuses it at
 * compile time), is answered with their results, returns its own.
 */
export type Operation<T, S extends Step> = Generator<S, T, unknown>;

/**
 * Yield one step and return its result, typed by the step: `const file = yield* perform({ op: 'open', path, mode: 'r' })`.
 * An operation asks for every result this way, never by casting what `yield` gives.
 */
export function* perform<S extends Step>(step: S): Generator<S, StepResult<S>, unknown> {
  // The one bridge from a generator's untyped `next(value)`: the drivers (`driveSync`, `drive`)
  // answer each step with the result {@link StepResult} names for it.
  return (yield step) as StepResult<S>;
}

/** Performs one step of the vocabulary `S`, blocking. */
export type PerformSync<S extends Step> = (step: S) => unknown;

/** Performs one step of the vocabulary `S` asynchronously; `signal` is undefined once the operation is cleaning up or has committed. */
export type PerformAsync<S extends Step> = (step: S, signal: AbortSignal | undefined) => Promise<unknown>;

/**
 * The async driver of a source read by `read(at, length, signal)` (a Blob, HTTP ranges): it answers
 * `view` and `read` steps, nothing else.
 */
export function performReads(read: (at: number, length: number, signal?: AbortSignal) => Promise<Uint8Array>): PerformAsync<ViewStep | ReadStep> {
  return async (step, signal) => {
    switch (step.op) {
      case 'view':
        return read(step.at, step.length, signal);
      case 'reads':
        return readEach(step, async (r) => {
          const got = await read(r.at, r.into.length, signal);
          r.into.set(got);
          return got.length;
        });
      case 'read': {
        const got = await read(step.at, step.into.length, signal);
        step.into.set(got);
        if (got.length > 0) step.onPiece?.(step.into.subarray(0, got.length));
        return got.length;
      }
      default:
        throw unknownStep(step);
    }
  };
}

/**
 * The error of a step outside a driver's vocabulary: the types rule it out, so only a caller past
 * them (plain JavaScript, a cast) reaches it; refused, never answered with nothing.
 * @example
 * default: throw unknownStep(step);
 */
export function unknownStep(step: never): NpyError {
  return new NpyError('INTERNAL', `a driver was given a step it does not know ('${String((step as { op?: unknown } | null)?.op)}'); please report this`);
}

/** Reads in flight at once for a `reads` step (libuv's pool has 4 threads by default). */
const READS_IN_FLIGHT = 4;

/** Perform a `reads` step, blocking: each read in turn, handed to `onRead` before the next is taken. */
export function readEachSync(step: StepOf<'reads'>, read: (r: PositionalRead) => number): void {
  for (const r of step.reads) step.onRead(r, read(r));
}

/** Perform a `reads` step asynchronously: a few reads in flight, each handed to `onRead` as it completes and the next one then taken. */
export async function readEach(step: StepOf<'reads'>, read: (r: PositionalRead) => Promise<number>): Promise<void> {
  const it = step.reads[Symbol.iterator]();
  await inParallel(READS_IN_FLIGHT, async (stopped) => {
    while (!stopped()) {
      const next = it.next();
      if (next.done) return;
      step.onRead(next.value, await read(next.value));
    }
  });
}

/**
 * Run an operation, each step performed blocking. Its vocabulary must be one `perform` knows, and
 * hold no {@link AwaitStep}: an operation that awaits does not compile here.
 */
export function driveSync<T, S extends SyncStep>(operation: Operation<T, S>, perform: PerformSync<S>): T {
  // The answer to the last step: its value, or (failed) the error thrown back into the operation.
  let value: unknown;
  let failed = false;
  for (;;) {
    const next: IteratorResult<S, T> = failed ? operation.throw(value) : operation.next(value);
    if (next.done) return next.value;
    try {
      value = perform(next.value);
      failed = false;
    } catch (error) {
      value = error;
      failed = true;
    }
  }
}

/**
 * Run an operation, each step performed asynchronously. The signal is checked before every step
 * and handed to the step; once it has fired (or the operation has committed), the operation's
 * clean-up steps run without it.
 */
export async function drive<T, S extends Step>(operation: Operation<T, S>, perform: PerformAsync<S>, signal?: AbortSignal): Promise<T> {
  let value: unknown;
  let failed = false;
  let live = signal;
  for (;;) {
    const next: IteratorResult<S, T> = failed ? operation.throw(value) : operation.next(value);
    if (next.done) return next.value;
    const step: S = next.value;
    try {
      if (live?.aborted) {
        const reason: unknown = live.reason;
        live = undefined;
        throw reason;
      }
      if (step.op === 'committed') live = undefined; // an abort up to here was honoured; none after
      value = await perform(step, live);
      failed = false;
    } catch (error) {
      if (signal?.aborted) live = undefined; // the clean-up after an abort is not itself aborted
      value = error;
      failed = true;
    }
  }
}

/** Steps that read all of `into` from `at` (fewer at the end of the file): the bytes read. */
export function* readInto(file: FileRef, into: Uint8Array, at: number, onPiece?: (piece: Uint8Array) => void): Operation<number, ReadStep> {
  return yield* perform(onPiece ? { op: 'read', file, into, at, onPiece } : { op: 'read', file, into, at });
}

/** `length` bytes from `at` (fewer at the end of the file), in a buffer of their own. */
export function* readBytes(file: FileRef, at: number, length: number): Operation<Uint8Array, ReadStep> {
  const out = new Uint8Array(length);
  return out.subarray(0, yield* perform({ op: 'read', file, into: out, at }));
}

/** The step {@link ViewStep} `view`: `length` bytes at `at`, viewed where the driver holds them. */
export function* viewBytes(file: FileRef, at: number, length: number): Operation<Uint8Array, ViewStep> {
  return yield* perform({ op: 'view', file, at, length });
}

/** Open a file, run `body` with it, close it on every path. */
export function* withFile<T, S extends Step>(
  path: string,
  mode: OpenMode,
  body: (file: FileRef) => Operation<T, S>,
): Operation<T, S | StepOf<'open' | 'close'>> {
  const file = yield* perform({ op: 'open', path, mode });
  try {
    return yield* body(file);
  } finally {
    yield { op: 'close', file };
  }
}
