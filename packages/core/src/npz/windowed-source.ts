/**
 * Synchronous zip parsing over an asynchronous source (a file handle, a Blob, HTTP ranges): the
 * parsing step runs against the windows of bytes fetched so far; when it needs more it throws
 * {@link NeedBytes}, the bytes are fetched, and the step runs again. Steps are pure reads, so a
 * re-run only repeats a little parsing; each operation costs the bytes it needs plus one window.
 */
import { NeedBytes, type ByteSource } from './zip.js';

/** Reads at least this much on a miss (a local header, a small member's prefix) to save round trips. */
const MIN_WINDOW = 64 << 10;
/** Re-runs of one step before it is taken for a bug (every step needs a handful of windows at most). */
const MAX_MISSES = 64;

/** A {@link ByteSource} that serves only the windows it was given, and asks for others. */
export class WindowedSource implements ByteSource {
  private windows: { offset: number; bytes: Uint8Array }[] = [];

  constructor(readonly size: number) {}

  read(offset: number, length: number): Uint8Array {
    const end = Math.min(this.size, offset + length);
    if (end <= offset) return new Uint8Array(0);
    for (const w of this.windows) {
      if (w.offset <= offset && w.offset + w.bytes.length >= end) return w.bytes.subarray(offset - w.offset, end - w.offset);
    }
    throw new NeedBytes(offset, end - offset);
  }

  readInto(target: Uint8Array, offset: number): number {
    const got = this.read(offset, target.length);
    target.set(got);
    return got.length;
  }

  /**
   * Run `step` until it no longer asks for bytes, fetching each window it asks for with `fetch`;
   * the windows are dropped afterwards (memory is held only while an operation runs).
   */
  async run<T>(step: () => T, fetch: (offset: number, length: number) => Promise<Uint8Array>): Promise<T> {
    try {
      for (let misses = 0; ; misses++) {
        try {
          return step();
        } catch (e) {
          if (!(e instanceof NeedBytes) || misses >= MAX_MISSES) throw e;
          const length = Math.min(this.size - e.offset, Math.max(e.length, MIN_WINDOW));
          this.windows.push({ offset: e.offset, bytes: await fetch(e.offset, length) });
        }
      }
    } finally {
      this.windows = [];
    }
  }
}
