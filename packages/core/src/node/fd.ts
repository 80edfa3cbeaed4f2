/**
 * File helpers shared by every file operation, blocking (file descriptors) and async (FileHandles):
 * whole reads and writes, and saves written beside the target.
 */
import { closeSync, constants, fstatSync, fsyncSync, openSync, readSync, statSync, writeSync, type Stats } from 'node:fs';
import { open as openAsync, type FileHandle } from 'node:fs/promises';
import { readInParallel } from './native.js';
import { inParallel } from '../io/settle.js';
import { NpyError } from '../errors.js';
import { readingHeader } from '../io/header-read.js';
import { SOURCE, driveSync } from '../io/steps.js';
import { performOnSource } from '../io/handles.js';
import type { SyncByteSource } from '../io/byte-source.js';
import type { NpyHeader } from '../format/header.js';
import type { DecodeOptions } from '../npy.js';

/** Refuse what is not a regular file: a FIFO, a socket or a device would make a read wait forever, a directory fails later less clearly. */
function checkRegular(path: string, stats: Stats): void {
  if (stats.isFile()) return;
  const what = stats.isFIFO()
    ? 'a FIFO'
    : stats.isDirectory()
      ? 'a directory'
      : stats.isSocket()
        ? 'a socket'
        : stats.isCharacterDevice() || stats.isBlockDevice()
          ? 'a device'
          : 'not a regular file';
  const fix = stats.isDirectory() ? 'give the path of a file' : 'copy the data to a regular file first';
  throw new NpyError('NOT_A_FILE', `${path} is ${what}; npyts reads and writes regular files only (${fix})`, { file: path });
}

/**
 * Refuse `path` unless it is a regular file (`NOT_A_FILE` names what it is), following links.
 * @example
 * checkRegularFile('/tmp/fifo');   // throws: /tmp/fifo is a FIFO; npyts reads and writes regular files only …
 */
export function checkRegularFile(path: string): void {
  checkRegular(path, statSync(path));
}

/** Refuse `path` if it is there and not a regular file; a path with nothing there is fine (it is about to be written). */
export function checkReplaceable(path: string, stats: Stats | undefined): void {
  if (stats) checkRegular(path, stats);
}

/** Open flags of an existing file: non-blocking, so that opening a FIFO returns at once (and is then refused) instead of waiting for a writer. */
const openFlags = (mode: 'r' | 'r+'): number => (mode === 'r+' ? constants.O_RDWR : constants.O_RDONLY) | constants.O_NONBLOCK;

/**
 * Open an existing regular file for reading (`'r'`) or reading and writing (`'r+'`); anything else
 * (a FIFO, a device, a directory) is refused with `NOT_A_FILE` before a byte is read.
 */
export function openFileSync(path: string, mode: 'r' | 'r+' = 'r'): number {
  const fd = openSync(path, openFlags(mode));
  try {
    checkRegular(path, fstatSync(fd));
  } catch (e) {
    closeSync(fd);
    throw e;
  }
  return fd;
}

/** {@link openFileSync}, async. */
export async function openFile(path: string, mode: 'r' | 'r+' = 'r'): Promise<FileHandle> {
  const fh = await openAsync(path, openFlags(mode));
  try {
    checkRegular(path, await fh.stat());
  } catch (e) {
    await fh.close();
    throw e;
  }
  return fh;
}

/** Largest single read or write; Node refuses more than 2 GiB per call. */
const IO_CHUNK = 1 << 30;

export function readFully(fd: number, target: Uint8Array, position: number): number {
  const parallel = readInParallel(fd, target, position);
  if (parallel !== null) return parallel;
  let done = 0;
  while (done < target.length) {
    const n = readSync(fd, target, done, Math.min(target.length - done, IO_CHUNK), position + done);
    if (n === 0) break;
    done += n;
  }
  return done;
}

/** Write all of `bytes` at `position` (at the file position when omitted), however the kernel splits it. */
export function writeFully(fd: number, bytes: Uint8Array, position?: number): void {
  for (let done = 0; done < bytes.length; ) {
    done += writeSync(fd, bytes, done, Math.min(bytes.length - done, IO_CHUNK), position === undefined ? null : position + done);
  }
}
/**
 * Errors of a directory's fsync that mean its file system has none (it refuses the call): nothing
 * more can be done there. Windows cannot open a directory at all, so there it is not tried.
 */
const NO_DIRECTORY_SYNC = new Set(['EINVAL', 'ENOTSUP']);
const directoriesSync = process.platform !== 'win32';

/** A failed sync of `dir`, the folder of a file already renamed into place: said so, not hidden (`durable` was asked for). */
function directorySyncFailed(e: unknown, dir: string): void {
  const error = e as NodeJS.ErrnoException;
  if (NO_DIRECTORY_SYNC.has(error.code ?? '')) return;
  error.message = `the file is in place, but its folder ${dir} could not be synced, so the save may not survive a crash of the system (${error.message})`;
  throw error;
}

/** fsync a directory, so that entries renamed into it survive a crash of the system; a no-op where the platform has no such sync. */
export function syncDirectorySync(path: string): void {
  if (!directoriesSync) return;
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    directorySyncFailed(e, path);
    return;
  }
  try {
    fsyncSync(fd);
  } catch (e) {
    directorySyncFailed(e, path);
  } finally {
    closeSync(fd);
  }
}

/** {@link syncDirectorySync}, on the thread pool. */
export async function syncDirectory(path: string): Promise<void> {
  if (!directoriesSync) return;
  let dir: FileHandle;
  try {
    dir = await openAsync(path, 'r');
  } catch (e) {
    directorySyncFailed(e, path);
    return;
  }
  try {
    await dir.sync();
  } catch (e) {
    directorySyncFailed(e, path);
  } finally {
    await dir.close();
  }
}

/** A temporary name beside `path`, unique to this process and call. */
export function tempBeside(path: string): string {
  return `${path}.${process.pid}.${Date.now()}.${Math.random().toString(36).slice(2, 8)}.tmp`;
}

// Async: the reads and writes run on libuv's thread pool; the event loop only sees their completions.

/** Piece of one async read: small enough that an abort is noticed quickly. */
const ASYNC_PIECE = 8 << 20;
/**
 * Piece of one async write. Writes to one file do not overlap (the file system takes them in turn),
 * so each is a round trip to the thread pool: larger pieces, fewer trips. 64 MiB take about 10 ms
 * into the page cache here, which bounds how late an abort is noticed.
 */
const ASYNC_WRITE_PIECE = 64 << 20;
/**
 * CPU work on large buffers (a byte swap, a CRC-32) in async operations is done in slices of this
 * many bytes (a multiple of every swap unit), as many as fit in {@link TURN_MS} per turn of the
 * event loop. A budget in time, not in bytes: the same megabyte takes 0.1 ms with the addon, 1 ms in
 * plain JavaScript, and 8 ms on a virtual machine where each freshly written page faults slowly.
 */
const CPU_SLICE = 64 << 10;
/** How long one turn of the event loop may compute before it yields. */
const TURN_MS = 2;
/** Pieces in flight at once (libuv's pool has 4 threads by default). */
const IN_FLIGHT = 4;

export type { AsyncOptions } from '../io/handles.js';

/**
 * Fill `target` from `fh` at `position`, in pieces read in parallel; the bytes read (fewer at the
 * end of the file). `onPiece` sees each piece as it completes (to byte-swap it while later pieces
 * are still being read, so no single step holds the event loop for long).
 */
export async function readFullyAsync(
  fh: FileHandle,
  target: Uint8Array,
  position: number,
  signal?: AbortSignal,
  onPiece?: (piece: Uint8Array) => void,
): Promise<number> {
  signal?.throwIfAborted();
  let next = 0;
  let end = target.length;
  const worker = async (stopped: () => boolean): Promise<void> => {
    while (next < end && !stopped()) {
      const from = next;
      const to = Math.min(end, from + ASYNC_PIECE);
      next = to;
      let done = from;
      while (done < to) {
        const { bytesRead } = await fh.read(target, done, to - done, position + done);
        signal?.throwIfAborted();
        if (bytesRead === 0) {
          end = Math.min(end, done); // end of file: nothing after this is there
          break;
        }
        done += bytesRead;
      }
      if (done > from && onPiece) await inTurns(target.subarray(from, done), onPiece, signal);
    }
  };
  await inParallel(Math.min(IN_FLIGHT, Math.ceil(target.length / ASYNC_PIECE) || 1), worker);
  return Math.min(end, target.length);
}

/**
 * Slices of CPU work waiting for their turn of the event loop. One queue for every async operation
 * of the process: four pieces of one read that complete together, or two loads at once, still do
 * at most {@link TURN_MS} of work per turn, not one slice each.
 */
const waitingForTurn: Array<() => void> = [];
/** Whether a slice has run in the current turn (the next check phase passes the turn on). */
let turnTaken = false;

function passTurn(): void {
  const next = waitingForTurn.shift();
  if (!next) {
    turnTaken = false;
    return;
  }
  next(); // its slice runs as this callback's microtasks, before the loop turns again
  setImmediate(passTurn);
}

/** Resolves when a slice of CPU work may run (nothing to wait for when no slice ran this turn); rejects on abort while waiting. */
function cpuTurn(signal?: AbortSignal): Promise<void> | undefined {
  signal?.throwIfAborted();
  if (!turnTaken) {
    turnTaken = true;
    setImmediate(passTurn);
    return undefined;
  }
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      const at = waitingForTurn.indexOf(go);
      if (at >= 0) waitingForTurn.splice(at, 1);
      reject(signal?.reason);
    };
    const go = () => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    waitingForTurn.push(go);
  });
}

/**
 * Run `work` on `bytes` a slice at a time, {@link TURN_MS} of slices per turn of the event loop across all async
 * operations (and noticing an abort): for CPU work on large buffers (CRC-32, byte swaps).
 */
export async function inTurns(bytes: Uint8Array, work: (piece: Uint8Array) => void, signal?: AbortSignal): Promise<void> {
  for (let at = 0; at < bytes.length; ) {
    const wait = cpuTurn(signal);
    if (wait) await wait;
    signal?.throwIfAborted();
    const until = performance.now() + TURN_MS;
    do {
      work(bytes.subarray(at, at + CPU_SLICE));
      at += CPU_SLICE;
    } while (at < bytes.length && performance.now() < until);
  }
}

/** Write all of `bytes` at `position` (sequentially after `position` when it is a number, at the file position otherwise). */
export async function writeFullyAsync(fh: FileHandle, bytes: Uint8Array, position: number | null, signal?: AbortSignal): Promise<void> {
  for (let done = 0; done < bytes.length; ) {
    signal?.throwIfAborted();
    const { bytesWritten } = await fh.write(bytes, done, Math.min(bytes.length - done, ASYNC_WRITE_PIECE), position === null ? null : position + done);
    done += bytesWritten;
  }
  signal?.throwIfAborted();
}

/**
 * Read just the header of an open file (a few hundred bytes in the common case).
 * @example
 * const header = readHeaderFromFd(openSync('x.npy', 'r'));
 */
export function readHeaderFromFd(fd: number, options: DecodeOptions = {}): NpyHeader {
  const file: SyncByteSource = {
    // Asked only where a step needs it (reading a header does not).
    get size() {
      return fstatSync(fd).size;
    },
    name: 'the file',
    read: (offset, length) => {
      const out = new Uint8Array(length);
      return out.subarray(0, readFully(fd, out, offset));
    },
    readInto: (target, offset) => readFully(fd, target, offset),
  };
  return driveSync(readingHeader(SOURCE, options), performOnSource(file, 'the file'));
}
