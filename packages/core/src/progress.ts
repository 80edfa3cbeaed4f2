/**
 * Progress of a long load, one rule for every entry that takes `onProgress`: the bytes of tensor
 * data read so far, out of the total the load will read, and the tensor those bytes belong to. A
 * reporter never goes back, never passes the total, and ends at it.
 */
import { NpyError } from './errors.js';

/** How far a load has come. */
export interface LoadProgress {
  /** Bytes of tensor data read so far. */
  bytes: number;
  /** Bytes of tensor data the whole load reads. */
  total: number;
  /** The tensor the latest bytes belong to (`''` before the first). */
  tensor: string;
}

/** Called as bytes arrive; see {@link LoadProgress}. */
export type OnProgress = (progress: LoadProgress) => void;

/** Counts the bytes of a load of `total` bytes and tells `onProgress` (absent: counts nothing). */
export interface ProgressReporter {
  /** `bytes` more of `tensor` have arrived. */
  add(tensor: string, bytes: number): void;
  /** The load is done: reports the total once, if it has not been reported. */
  end(): void;
}

const SILENT: ProgressReporter = { add() {}, end() {} };

/**
 * One reporter for a load of `total` bytes.
 * @example
 * const report = progressReporter(1024, ({ bytes, total }) => bar.set(bytes / total));
 * report.add('w', 512); report.add('b', 512); report.end();
 */
export function progressReporter(total: number, onProgress: OnProgress | undefined): ProgressReporter {
  if (onProgress === undefined) return SILENT;
  if (typeof onProgress !== 'function') throw new NpyError('BAD_OPTION', `option onProgress must be a function, not ${typeof onProgress}`);
  let bytes = 0;
  let last = -1;
  let tensor = '';
  const tell = () => {
    if (bytes === last) return;
    last = bytes;
    onProgress({ bytes, total, tensor });
  };
  return {
    add(name, more) {
      tensor = name;
      bytes = Math.min(total, bytes + Math.max(0, more));
      tell();
    },
    end() {
      bytes = total;
      tell();
    },
  };
}
