// The bench's warm-up rule, one place for Node (bench/timing.mjs) and the page (browser-page.mjs):
// at least one run, and more until WARM_SECONDS have passed (at most WARM_RUNS), so that a case of a
// few milliseconds is timed after V8 has optimised its code (the unpickler takes about five runs),
// not in its first, interpreted runs. No Node imports: the page's bundle takes it too.

export const WARM_SECONDS = 0.2;
export const WARM_RUNS = 20;

/** Whether to warm up once more, after `runs` runs that took `seconds` in all. */
export function stillWarming(runs, seconds) {
  return runs === 0 || (runs < WARM_RUNS && seconds < WARM_SECONDS);
}
