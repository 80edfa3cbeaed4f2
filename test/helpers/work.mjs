// Time that measures the work, not the clock: the CPU time this process spends (user and system, all
// its threads), which other busy processes on the machine do not inflate as they do wall time.
import process from 'node:process';

/** Milliseconds of CPU time this process has used so far (wall time only where a runtime cannot say). */
export function cpuMs() {
  if (typeof process.cpuUsage !== 'function') return performance.now();
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}
