// Signal from noise: a case is timed as interleaved rounds, npyts then numpy (or numpy first, every
// other round), each side the median of a few runs, and reported as the median of the per-round
// ratios with their spread (the smallest and largest), after one uncounted round of each side. A slow
// moment of the machine then lands on one round's pair, not on one side's whole figure. numpy runs in
// one long-lived process (`numpy_side.py serve`) that times a case when asked.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { middleOf } from './timing.mjs';

/** numpy's side, asked one case at a time: `time(name, repeats)` resolves with its median seconds. */
export function startNumpy(script, dir) {
  const child = spawn('python3', [script, 'serve', dir], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const waiting = [];
  lines.on('line', (line) => waiting.shift()?.resolve(Number(JSON.parse(line))));
  child.on('exit', (code) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`numpy's side exited (${code})`));
  });
  return {
    time(name, repeats) {
      return new Promise((resolve, reject) => {
        waiting.push({ resolve, reject });
        child.stdin.write(`${name} ${repeats}\n`);
      });
    },
    close() {
      child.stdin.end();
      return new Promise((resolve) => child.on('close', resolve));
    },
  };
}

/** The median seconds of `repeats` runs of `fn` (sync or async) after one warm-up run. */
export async function medianSeconds(fn, repeats) {
  await fn();
  const times = [];
  for (let i = 0; i < repeats; i++) {
    const t = process.hrtime.bigint();
    await fn();
    times.push(Number(process.hrtime.bigint() - t) / 1e9);
  }
  return middleOf(times);
}

/** How long each side's runs of a round take at least, for a case of a few milliseconds. */
const MEASURE_SECONDS = 0.1;
/** The most runs of a case each side makes per round. */
const MAX_REPEATS = 25;

/**
 * A case paired with numpy's of the same name over `rounds` interleaved rounds: the medians of each
 * side's times, the median ratio, and the spread of the per-round ratios.
 */
export async function paired(numpy, name, fn, { rounds = 5, repeats: least = 3 } = {}) {
  const ours = [];
  const theirs = [];
  const ratios = [];
  // One round first, on both sides, not counted: a case's first runs meet memory and files the
  // machine has not touched yet (on this VM, the host backs a guest's fresh memory on first touch),
  // and JavaScript that V8 has not optimised yet. A case of a few milliseconds repeats more, so
  // that each side's median covers about MEASURE_SECONDS (and the JIT has warmed up).
  const first = await medianSeconds(fn, least);
  const repeats = Math.max(least, Math.min(MAX_REPEATS, Math.ceil(MEASURE_SECONDS / first)));
  await medianSeconds(fn, repeats);
  await numpy.time(name, repeats);
  for (let r = 0; r < rounds; r++) {
    let a;
    let b;
    if (r % 2 === 0) {
      a = await medianSeconds(fn, repeats);
      b = await numpy.time(name, repeats);
    } else {
      b = await numpy.time(name, repeats);
      a = await medianSeconds(fn, repeats);
    }
    ours.push(a);
    theirs.push(b);
    ratios.push(a / b);
  }
  return { seconds: middleOf(ours), baseline: middleOf(theirs), ratio: middleOf(ratios), spread: [Math.min(...ratios), Math.max(...ratios)], rounds };
}

/** A target against a paired ratio: met when the whole spread is under it, missed when all of it is over, else it crosses. */
export function verdict(pair, maxRatio) {
  if (pair.spread[1] <= maxRatio) return 'met';
  if (pair.spread[0] > maxRatio) return 'missed';
  return 'crosses';
}
