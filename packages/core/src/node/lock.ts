/**
 * One writer at a time for appends: an exclusive advisory lock on the file (flock, through
 * @npyts/native), or, where the addon is absent, a lock file beside it created exclusively. Either
 * way a second writer waits its turn (up to a bound, then an NpyError), and nothing is lost.
 * Readers take no lock: an append makes its data durable before the header says it exists.
 */
import { closeSync, fstatSync, linkSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { NpyError } from '../errors.js';
import { setTimeout as delay } from 'node:timers/promises';
import { lockExclusive, tryLockExclusive, unlock } from './native.js';
import { openFileSync } from './fd.js';

/** How long a writer waits for a lock file before giving up (flock waits as long as it takes). */
export const LOCK_WAIT_MS = 60_000;

const sleeper = new Int32Array(new SharedArrayBuffer(4));
function sleep(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}

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
  try { content = readFileSync(grabbed, 'utf8'); } catch { /* unreadable: treated as live */ }
  try {
    if (content === null || !stale(content)) linkSync(grabbed, lockPath); // a live writer's lock: put it back
  } catch { /* a newer lock exists already */ } finally {
    rmSync(grabbed, { force: true });
  }
}

/** How old a lock file without a process id must be to count as left behind (this version never writes one; older ones could, when killed between create and write). */
const EMPTY_LOCK_STALE_MS = 2_000;

/**
 * Take `${path}.lock`, waiting while a live process holds it and removing stale ones. The lock file
 * is written whole beside and linked into place (link fails when the name exists), so it always
 * holds its writer's process id. A generator of the waits (in ms) the caller sleeps, blocking or
 * not; returns the release function.
 */
function* lockFileBeside(path: string): Generator<number, () => void> {
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
      try { content = readFileSync(lockPath, 'utf8'); } catch { /* removed meanwhile */ }
      const holder = Number(content);
      if (content !== null && Number.isInteger(holder) && holder > 0 && content.trim() !== '') {
        if (!alive(holder)) {
          removeIfStale(lockPath, (now) => now === content);
          continue;
        }
      } else if (content !== null) {
        // No process id: left by a writer killed between creating and writing it, once it is old.
        let age = 0;
        try { age = Date.now() - statSync(lockPath).mtimeMs; } catch { continue; }
        if (age > EMPTY_LOCK_STALE_MS) {
          removeIfStale(lockPath, (now) => now === content);
          continue;
        }
      }
      if (Date.now() > deadline) {
        throw new NpyError('LOCKED', `${path} is being appended to by process ${holder || 'unknown'} (lock file ${lockPath}); gave up after ${LOCK_WAIT_MS / 1000} s`);
      }
      yield wait;
    }
  } finally {
    rmSync(mine, { force: true });
  }
}

function lockFileBesideSync(path: string): () => void {
  const attempts = lockFileBeside(path);
  for (let step = attempts.next(); ; step = attempts.next()) {
    if (step.done) return step.value;
    sleep(step.value);
  }
}

async function lockFileBesideAsync(path: string, signal?: AbortSignal): Promise<() => void> {
  const attempts = lockFileBeside(path);
  try {
    for (let step = attempts.next(); ; step = attempts.next()) {
      if (step.done) return step.value;
      await delay(step.value, undefined, { signal });
    }
  } finally {
    attempts.return(() => {}); // an abort while waiting: the generator's own clean-up runs
  }
}

/**
 * Run `fn` holding the exclusive append lock of `path`. With flock the lock belongs to the file
 * itself; when a writer replaced the file (an append that had to rewrite it) while this one
 * waited, the lock is taken again on the new file.
 */
export function withAppendLock<T>(path: string, fn: () => T): T {
  for (;;) {
    const fd = openFileSync(path);
    let locked: boolean | null;
    try {
      locked = lockExclusive(fd);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
    if (locked === null) {
      closeSync(fd);
      const release = lockFileBesideSync(path);
      try { return fn(); } finally { release(); }
    }
    try {
      if (fstatSync(fd).ino !== statSync(path).ino) continue; // replaced while we waited: lock the new one
      return fn();
    } finally {
      unlock(fd);
      closeSync(fd);
    }
  }
}

/**
 * {@link withAppendLock} for async work: waiting for another writer polls (flock with LOCK_NB, or the
 * lock file) on timers, so the event loop keeps running; `signal` stops the wait.
 */
export async function withAppendLockAsync<T>(path: string, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  for (;;) {
    signal?.throwIfAborted();
    const fd = openFileSync(path);
    let locked: boolean | null;
    try {
      for (let wait = 1; (locked = tryLockExclusive(fd)) === false; wait = Math.min(wait * 2, 50)) await delay(wait, undefined, { signal });
    } catch (e) {
      closeSync(fd);
      throw e;
    }
    if (locked === null) {
      closeSync(fd);
      const release = await lockFileBesideAsync(path, signal);
      try { return await fn(); } finally { release(); }
    }
    try {
      if (fstatSync(fd).ino !== statSync(path).ino) continue; // replaced while we waited: lock the new one
      return await fn();
    } finally {
      unlock(fd);
      closeSync(fd);
    }
  }
}
