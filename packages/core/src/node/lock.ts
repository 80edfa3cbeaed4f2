/**
 * One writer at a time for appends: an exclusive advisory lock on the file (flock, through
 * @npyts/native), or, where the addon is absent, a lock file beside it created exclusively. Either
 * way a second writer waits its turn (up to a bound, then an NpyError), and nothing is lost.
 * Readers take no lock: an append makes its data durable before the header says it exists.
 */
import { linkSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { NpyError } from '../errors.js';
import { perform, type FileStep, type Operation } from '../io/steps.js';

/** How long a writer waits for a lock file before giving up (flock waits as long as it takes). */
export const LOCK_WAIT_MS = 60_000;

/** Whether a process with this id is alive (a lock file left by a killed writer is stale). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Remove a lock file whose content `stale` judges left behind, and only that one: it is renamed
 * away first (atomic), so a lock another writer created meanwhile is never deleted, but given back.
 */
function removeIfStale(lockPath: string, stale: (content: string) => boolean): void {
  const grabbed = `${lockPath}.${process.pid}.stale`;
  try {
    renameSync(lockPath, grabbed);
  } catch {
    return; // already gone
  }
  let content: string | null = null;
  try {
    content = readFileSync(grabbed, 'utf8');
  } catch {
    /* unreadable: treated as live */
  }
  try {
    if (content === null || !stale(content)) linkSync(grabbed, lockPath); // a live writer's lock: put it back
  } catch {
    /* a newer lock exists already */
  } finally {
    rmSync(grabbed, { force: true });
  }
}

/** How old a lock file without a process id must be to count as left behind (this version never writes one; older ones could, when killed between create and write). */
const EMPTY_LOCK_STALE_MS = 2_000;

/**
 * Take `${path}.lock`, waiting while a live process holds it and removing stale ones. The lock file
 * is written whole beside and linked into place (link fails when the name exists), so it always
 * holds its writer's process id. Its own file calls are small and blocking (metadata, a few bytes);
 * the waits between attempts are steps. Returns the release function.
 */
function* lockFileBeside(path: string): Operation<() => void, FileStep> {
  const lockPath = `${path}.lock`;
  const deadline = Date.now() + LOCK_WAIT_MS;
  const mine = `${lockPath}.${process.pid}.${Math.random().toString(36).slice(2, 8)}.new`;
  writeFileSync(mine, String(process.pid));
  try {
    for (let wait = 1; ; wait = Math.min(wait * 2, 50)) {
      try {
        linkSync(mine, lockPath);
        return () => rmSync(lockPath, { force: true });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      let content: string | null = null;
      try {
        content = readFileSync(lockPath, 'utf8');
      } catch {
        /* removed meanwhile */
      }
      const holder = Number(content);
      if (content !== null && Number.isInteger(holder) && holder > 0 && content.trim() !== '') {
        if (!alive(holder)) {
          removeIfStale(lockPath, (now) => now === content);
          continue;
        }
      } else if (content !== null) {
        // No process id: left by a writer killed between creating and writing it, once it is old.
        let age = 0;
        try {
          age = Date.now() - statSync(lockPath).mtimeMs;
        } catch {
          continue;
        }
        if (age > EMPTY_LOCK_STALE_MS) {
          removeIfStale(lockPath, (now) => now === content);
          continue;
        }
      }
      if (Date.now() > deadline) {
        throw new NpyError(
          'LOCKED',
          `${path} is being appended to by process ${holder || 'unknown'} (lock file ${lockPath}); gave up after ${LOCK_WAIT_MS / 1000} s`,
        );
      }
      yield { op: 'wait', ms: wait };
    }
  } finally {
    rmSync(mine, { force: true });
  }
}

/**
 * Take the exclusive append lock of `path`: flock on the file itself where the addon has it
 * (blocking: waits in the kernel; async: polled on timers, so the event loop runs and the signal
 * stops the wait), else a lock file beside it. When a writer replaced the file (an append that had
 * to rewrite it) while this one waited, the lock is taken again on the new file. Returns the steps
 * that release it.
 */
export function* takingAppendLock(path: string): Operation<() => Operation<void, FileStep>, FileStep> {
  for (;;) {
    const file = yield* perform({ op: 'open', path, mode: 'r' });
    let locked: boolean | null;
    try {
      locked = yield* perform({ op: 'lock', file });
    } catch (e) {
      yield { op: 'close', file };
      throw e;
    }
    if (locked === null) {
      yield { op: 'close', file };
      const release = yield* lockFileBeside(path);
      // biome-ignore lint/correctness/useYield: releasing a lock file is one blocking call
      return function* () {
        release();
      };
    }
    let same: boolean;
    try {
      same = yield* perform({ op: 'same', file, path });
    } catch (e) {
      yield { op: 'unlock', file };
      yield { op: 'close', file };
      throw e;
    }
    const unlocking = function* (): Operation<void, FileStep> {
      yield { op: 'unlock', file };
      yield { op: 'close', file };
    };
    if (same) return unlocking;
    yield* unlocking(); // replaced while we waited: lock the new one
  }
}

/**
 * A store's lock of the file at `path` ({@link takingAppendLock}), taken also where the file is not
 * there yet (a key a ragged save is about to make): by the lock file beside it, then.
 */
export function* takingKeyLock(path: string): Operation<() => Operation<void, FileStep>, FileStep> {
  if (yield* perform({ op: 'exists', path })) return yield* takingAppendLock(path);
  const release = yield* lockFileBeside(path);
  // biome-ignore lint/correctness/useYield: releasing a lock file is one blocking call
  return function* () {
    release();
  };
}

/** Run `body` holding the exclusive append lock of `path` (see {@link takingAppendLock}). */
export function* appendLocked<T>(path: string, body: () => Operation<T, FileStep>): Operation<T, FileStep> {
  const release = yield* takingAppendLock(path);
  try {
    return yield* body();
  } finally {
    yield* release();
  }
}
