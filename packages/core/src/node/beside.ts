/** Files written beside their target and renamed over it, as steps: the one way npyts replaces a file. */
import { perform, type FileRef, type FileStep, type Operation, type Step } from '../io/steps.js';
import { tempBeside } from './fd.js';
import { checkOptions, knownKeys, type KnownKeys } from '../options.js';
import { runSync } from './drive.js';

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

/** One file of {@link writingTogether}: its target and how its bytes are written. */
export interface FileBeside<S extends Step> {
  readonly path: string;
  readonly write: (file: FileRef) => Operation<void, S>;
}

/**
 * Files that change together (a sharded set's shards and its index), each written beside its target
 * and none renamed until all are complete: an error or an abort while they are written leaves every
 * target as it was, and every temporary file is removed. `beforeRenames` runs once all are written
 * (a sharded set removes its old index there: while the shards are renamed there is no index, so a
 * reader cannot take a half-renamed set for a whole one).
 */
export function* writingTogether<S extends Step>(
  files: readonly FileBeside<S>[],
  options: ReplaceOptions = {},
  beforeRenames?: () => Operation<void, FileStep>,
): Operation<void, S | FileStep> {
  const temps: string[] = [];
  let renamed = 0;
  try {
    for (const f of files) {
      yield { op: 'replaceable', path: f.path };
      const temp = tempBeside(f.path);
      const file = yield* perform({ op: 'open', path: temp, mode: 'wx' });
      temps.push(temp);
      let open = true;
      try {
        yield* f.write(file);
        if (options.durable) yield { op: 'sync', file };
        open = false;
        yield { op: 'close', file };
      } catch (e) {
        if (open) {
          try {
            yield { op: 'close', file };
          } catch {
            /* closing after a failure: the first error is the one to report */
          }
        }
        throw e;
      }
    }
    if (beforeRenames) yield* beforeRenames();
    for (const [i, f] of files.entries()) {
      yield { op: 'rename', from: temps[i]!, to: f.path, durable: options.durable ?? false };
      renamed = i + 1;
    }
  } catch (e) {
    for (const temp of temps.slice(renamed)) yield { op: 'remove', path: temp };
    throw e;
  }
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
