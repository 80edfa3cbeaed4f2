/**
 * The two drivers of io/steps.ts for Node's file system: blocking (descriptors, `fs.*Sync`) and async
 * (FileHandles on libuv's thread pool, reads overlapped in pieces, `signal` honoured while waiting).
 * Every file operation of @npyts/core/node is a generator of steps run by one of these.
 */
import { closeSync, existsSync, fstatSync, fsyncSync, ftruncateSync, openSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { access, open as openAsync, readdir, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { drive, driveSync, readEach, readEachSync, unknownStep, type AwaitStep, type FileRef, type FileStep, type Operation } from '../io/steps.js';
import { gatherRegion, lockExclusive, preallocate, tryLockExclusive, unlock } from './native.js';
import {
  checkReplaceable,
  inTurns,
  openFile,
  openFileSync,
  readFully,
  readFullyAsync,
  syncDirectory,
  syncDirectorySync,
  writeFully,
  writeFullyAsync,
} from './fd.js';
import { withWhere } from '../errors.js';

const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** The largest region the async driver copies with the addon's strided gather (on the calling thread); larger ones are read by runs on the thread pool. */
const ASYNC_GATHER_MAX = 16 << 20;

const fd = (file: FileRef): number => file as unknown as number;
const handle = (file: FileRef): FileHandle => file as unknown as FileHandle;
const ref = (x: number | FileHandle): FileRef => x as unknown as FileRef;

/** @internal The blocking driver's step. */
export function performSync(step: FileStep): unknown {
  switch (step.op) {
    case 'open':
      return ref(step.mode === 'r' || step.mode === 'r+' ? openFileSync(step.path, step.mode) : openSync(step.path, step.mode));
    case 'close':
      return closeSync(fd(step.file));
    case 'read': {
      const n = readFully(fd(step.file), step.into, step.at);
      if (n > 0) step.onPiece?.(step.into.subarray(0, n));
      return n;
    }
    case 'reads':
      return readEachSync(step, (r) => readFully(fd(step.file), r.into, r.at));
    case 'write':
      return writeFully(fd(step.file), step.bytes, step.at ?? undefined);
    case 'size':
      return fstatSync(fd(step.file)).size;
    case 'sync':
      return fsyncSync(fd(step.file));
    case 'truncate':
      return ftruncateSync(fd(step.file), step.size);
    case 'reserve':
      return preallocate(fd(step.file), step.at, step.bytes);
    case 'rename':
      renameSync(step.from, step.to);
      if (step.durable) syncDirectorySync(dirname(step.to));
      return undefined;
    case 'remove':
      return rmSync(step.path, { force: true });
    case 'gather':
      return gatherRegion(fd(step.file), step.strided, step.out);
    case 'exists':
      return existsSync(step.path);
    case 'list':
      try {
        return readdirSync(step.path);
      } catch {
        return null;
      }
    case 'replaceable':
      return checkReplaceable(step.path, statSync(step.path, { throwIfNoEntry: false }));
    case 'same': {
      try {
        return fstatSync(fd(step.file)).ino === statSync(step.path).ino;
      } catch {
        return false;
      }
    }
    case 'lock':
      return lockExclusive(fd(step.file));
    case 'unlock':
      return unlock(fd(step.file));
    case 'wait':
      return Atomics.wait(sleeper, 0, 0, step.ms);
    case 'compute':
      return step.work(step.bytes);
    case 'committed':
      return undefined;
    default:
      throw unknownStep(step);
  }
}

/** @internal The async driver's step. */
export async function performAsync(step: FileStep | AwaitStep, signal: AbortSignal | undefined): Promise<unknown> {
  switch (step.op) {
    case 'open':
      return ref(step.mode === 'r' || step.mode === 'r+' ? await openFile(step.path, step.mode) : await openAsync(step.path, step.mode));
    case 'close':
      return handle(step.file).close();
    case 'read':
      return readFullyAsync(handle(step.file), step.into, step.at, signal, step.onPiece);
    case 'reads':
      return readEach(step, (r) => readFullyAsync(handle(step.file), r.into, r.at, signal));
    case 'write':
      return writeFullyAsync(handle(step.file), step.bytes, step.at, signal);
    case 'size':
      return (await handle(step.file).stat()).size;
    case 'sync':
      return handle(step.file).sync();
    case 'truncate':
      return handle(step.file).truncate(step.size);
    case 'reserve':
      return preallocate(handle(step.file).fd, step.at, step.bytes);
    case 'rename':
      await rename(step.from, step.to);
      if (step.durable) await syncDirectory(dirname(step.to));
      return undefined;
    case 'remove':
      return rm(step.path, { force: true });
    // A strided copy runs on the calling thread: async, only for regions of a few milliseconds.
    case 'gather':
      return step.out.length <= ASYNC_GATHER_MAX && gatherRegion(handle(step.file).fd, step.strided, step.out);
    case 'replaceable':
      return stat(step.path).then(
        (stats) => checkReplaceable(step.path, stats),
        (e: NodeJS.ErrnoException) => {
          if (e.code !== 'ENOENT') throw e;
        },
      );
    case 'list':
      return readdir(step.path).catch(() => null);
    case 'exists':
      return access(step.path).then(
        () => true,
        () => false,
      );
    case 'same': {
      try {
        return (await handle(step.file).stat()).ino === (await stat(step.path)).ino;
      } catch {
        return false;
      }
    }
    case 'lock': {
      // flock without blocking, polled on timers: the event loop keeps running and the signal stops the wait.
      for (let wait = 1; ; wait = Math.min(wait * 2, 50)) {
        const locked = tryLockExclusive(handle(step.file).fd);
        if (locked !== false) return locked;
        await delay(wait, undefined, signal ? { signal } : {});
      }
    }
    case 'unlock':
      return unlock(handle(step.file).fd);
    case 'wait':
      return delay(step.ms, undefined, signal ? { signal } : {});
    case 'compute':
      return inTurns(step.bytes, step.work, signal);
    case 'committed':
      return undefined;
    case 'await':
      return step.value(signal);
    default:
      throw unknownStep(step);
  }
}

/**
 * Run a file operation blocking; its NpyErrors name `file`.
 * @example
 * const header = runSync(readingNpyHeader('x.npy'), 'x.npy');
 */
export function runSync<T>(operation: Operation<T, FileStep>, file?: string): T {
  try {
    return driveSync(operation, performSync);
  } catch (e) {
    throw file === undefined ? e : withWhere(e, { file });
  }
}

/**
 * Run a file operation off the event loop; `signal` aborts it between steps and while waiting. Its
 * NpyErrors name `file`.
 * @example
 * const header = await run(readingNpyHeader('x.npy'), AbortSignal.timeout(1000), 'x.npy');
 */
export function run<T>(operation: Operation<T, FileStep | AwaitStep>, signal?: AbortSignal, file?: string): Promise<T> {
  const running = drive(operation, performAsync, signal);
  return file === undefined ? running : running.catch((e: unknown) => Promise.reject(withWhere(e, { file })));
}
