import { readSync } from 'node:fs';
import { DEFAULT_MAX_HEADER_BYTES, NpyError, hasObject, readHeader } from '@npyts/core';
import { headerBytesNeeded } from '@npyts/core/plumbing';

export interface Io {
  stdout: (s: string) => void;
  /**
   * Text output that waits while the reader is behind (a pipe to a slow reader): for output that
   * grows with the file. Defaults to `stdout`.
   */
  stdoutPaced?: (s: string) => Promise<void> | void;
  stderr: (s: string) => void;
  /** Binary output for `convert IN -` (defaults to process.stdout). */
  stdoutBytes?: (b: Uint8Array) => void;
  /** Binary input for `-` (defaults to reading standard input). */
  stdin?: () => Uint8Array;
}

export class UsageError extends Error {}

/** A failure tied to one input file, printed as `npyts: error: FILE: message`. */
export class FileError extends Error {
  constructor(
    readonly file: string,
    override readonly cause: unknown,
  ) {
    super(cause instanceof Error ? cause.message : String(cause));
  }
}

export function withFile<T>(file: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw e instanceof FileError ? e : new FileError(file, e);
  }
}

/** {@link withFile} for work that is awaited. */
export async function withFileAsync<T>(file: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw e instanceof FileError ? e : new FileError(file, e);
  }
}

/**
 * Text from a file (names, messages) made safe for a terminal: control characters, and characters
 * that reorder or hide text, are shown as escapes instead of acting on the terminal.
 */
export function printable(s: string): string {
  // eslint-disable-next-line no-control-regex
  return s.replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]/g, (c) => {
    const cp = c.charCodeAt(0);
    return cp <= 0xff ? `\\x${cp.toString(16).padStart(2, '0')}` : `\\u${cp.toString(16).padStart(4, '0')}`;
  });
}

/** Standard input, read once: see {@link readStdin}. */
export function stdin(): Uint8Array {
  session.stdinBytes ??= withFile('<stdin>', () => (session.io.stdin ? session.io.stdin() : readStdin(0)));
  return session.stdinBytes;
}

/**
 * What a command reads from standard input, bounded by what the input is rather than by how long it
 * runs: a .npy up to its header (at most readHeader's limit) and then the data that header declares
 * (to the end only for an object array's pickle); a .npz (its directory is at its end) to the end;
 * anything else is refused after its first bytes (`cat /dev/zero | npyts info -` ends at once).
 */
export function readStdin(fd: number): Uint8Array {
  let bytes = new Uint8Array(64 << 10);
  let length = 0;
  let ended = false;
  /** Read until `want` bytes are held or the input ends. */
  const fill = (want: number): void => {
    while (length < want && !ended) {
      if (length === bytes.length) {
        // Grow by doubling: memory follows the bytes that actually arrive, not what a header claims.
        const grown = new Uint8Array(Math.min(bytes.length * 2, Math.max(want, bytes.length + 1)));
        grown.set(bytes);
        bytes = grown;
      }
      let n: number;
      try {
        n = readSync(fd, bytes, length, Math.min(bytes.length, want) - length, null);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'EAGAIN') {
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1); // a non-blocking pipe with nothing yet: wait a moment
          continue;
        }
        if (code !== 'EOF') throw e;
        n = 0;
      }
      if (n === 0) ended = true;
      length += n;
    }
  };
  fill(12);
  const zip = bytes[0] === 0x50 && bytes[1] === 0x4b;
  const npy = bytes[0] === 0x93 && bytes[1] === 0x4e;
  if (zip) fill(Number.POSITIVE_INFINITY);
  else if (npy) {
    fill(Math.min(headerBytesNeeded(bytes.subarray(0, length)), DEFAULT_MAX_HEADER_BYTES + 16));
    const header = readHeader(bytes.subarray(0, length));
    fill(hasObject(header.dtype) ? Number.POSITIVE_INFINITY : header.dataOffset + header.dataBytes);
  } else if (length > 0) {
    throw new NpyError('BAD_MAGIC', 'standard input is neither a .npy (it starts with \\x93NUMPY) nor a .npz (a zip, PK)', { offset: 0 });
  }
  return bytes.subarray(0, length);
}

/** The run of one command (main() sets it up): its streams, and the options that hold throughout. */
export const session = {
  io: undefined as unknown as Io,
  /** Standard input, read once when first asked for. */
  stdinBytes: undefined as Uint8Array | undefined,
  /** Whether --allow-pickle was given: decoding object arrays is opt-in. */
  allowPickle: false,
  /** Whether --quiet was given: no progress bars. */
  quiet: false,
};
