/**
 * Progress on standard error for work that takes more than about a second: bytes done, rate and time
 * left, drawn by cli-progress. Only when standard error is a terminal and --quiet was not given.
 */
import { SingleBar } from 'cli-progress';

/** Work shorter than this shows no bar at all. */
const SHOW_AFTER_MS = 1000;

export interface Progress {
  /** `done` of `total` bytes. */
  update(done: number, total: number): void;
  /** Remove the bar (the work is over, or failed). */
  stop(): void;
}

const NONE: Progress = { update() {}, stop() {} };

const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
function bytes(n: number): string {
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

/** A progress bar labelled `label`, or nothing when standard error is not a terminal or `quiet`. */
export function startProgress(label: string, quiet: boolean, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (quiet || !stream.isTTY) return NONE;
  const started = Date.now();
  let bar: SingleBar | null = null;
  return {
    update(done, total) {
      const elapsed = Date.now() - started;
      const payload = { doneBytes: bytes(done), totalBytes: bytes(total), rate: bytes(done / Math.max(elapsed / 1000, 1e-3)) };
      if (bar) {
        if (bar.getTotal() !== total) bar.setTotal(total);
        bar.update(done, payload);
      } else if (elapsed >= SHOW_AFTER_MS && done < total) {
        bar = new SingleBar({
          stream,
          format: `${label} [{bar}] {percentage}% | {doneBytes} of {totalBytes} | {rate}/s | {eta_formatted} left`,
          hideCursor: true,
          clearOnComplete: true,
          etaBuffer: 20,
          fps: 5,
        });
        bar.start(total, done, payload);
      }
    },
    stop() {
      bar?.stop();
      bar = null;
    },
  };
}
