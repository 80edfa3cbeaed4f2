/** File-descriptor helpers shared by every file operation: whole reads and writes, and saves written beside the target. */
import { closeSync, openSync, readSync, renameSync, rmSync, writeSync } from 'node:fs';
import { readInParallel } from './native.js';

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
  for (let done = 0; done < bytes.length;) {
    done += writeSync(fd, bytes, done, Math.min(bytes.length - done, IO_CHUNK), position === undefined ? null : position + done);
  }
}
/** A temporary name beside `path`, unique to this process and call. */
function tempBeside(path: string): string {
  return `${path}.${process.pid}.${Date.now()}.${Math.random().toString(36).slice(2, 8)}.tmp`;
}

/**
 * Write a file through a temporary file beside it, renamed over the target only when complete:
 * a crash or an error leaves the old file (or none), never a truncated one. The temporary file is
 * removed on every error path.
 */
export function writeBeside(path: string, write: (fd: number) => void): void {
  const temp = tempBeside(path);
  const fd = openSync(temp, 'wx');
  try {
    write(fd);
    closeSync(fd);
    renameSync(temp, path);
  } catch (e) {
    try { closeSync(fd); } catch { /* already closed */ }
    rmSync(temp, { force: true });
    throw e;
  }
}
