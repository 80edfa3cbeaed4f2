import { readFileSync } from 'node:fs';

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

/** Standard input, read once, whole. */
export function stdin(): Uint8Array {
  session.stdinBytes ??= session.io.stdin ? session.io.stdin() : new Uint8Array(readFileSync(0));
  return session.stdinBytes;
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
