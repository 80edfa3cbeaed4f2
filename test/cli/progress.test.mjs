// Progress on standard error: drawn (cli-progress) when standard error is a terminal and the work
// takes more than a second, with bytes, rate and time left; never with --quiet or without a terminal.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { cliBin, python, scratch } from '../helpers/numpy.mjs';

const dir = scratch();
const input = join(dir, 'random.npy');
python(`np.save(${JSON.stringify(input)}, np.random.default_rng(0).standard_normal(12 * 2**20))`); // 96 MiB: ~3 s to deflate here

/** Run the CLI with a terminal for its output (util-linux `script` gives it a pseudo-terminal). */
const inTerminal = (args) =>
  spawnSync('script', ['-q', '-e', '-c', [process.execPath, cliBin, ...args].map((a) => `'${a}'`).join(' '), '/dev/null'], { encoding: 'utf8' });

test('a convert to a deflated .npz shows bytes done, rate and time left on a terminal, then clears the bar', () => {
  const r = inTerminal(['convert', input, join(dir, 'out.npz'), '--compress']);
  assert.is(r.status, 0, r.stdout + r.stderr);
  const frames = r.stdout.split(/\r|\x1b\[1G/).filter((f) => /%/.test(f));
  assert.ok(frames.length >= 2, `frames: ${JSON.stringify(r.stdout.slice(0, 500))}`);
  assert.match(frames.at(-1), /100% \| 96\.0 MiB of 96\.0 MiB \| [\d.]+ MiB\/s \| \d+s left/);
  assert.match(r.stdout, /\x1b\[2K/, 'the bar is cleared at the end');
  assert.is(python(`print(np.load(${JSON.stringify(join(dir, 'out.npz'))})['random'].shape)`).trim(), '(12582912,)');
});

test('no bar with --quiet, and none when standard error is not a terminal', () => {
  const quiet = inTerminal(['convert', input, join(dir, 'quiet.npz'), '--compress', '--quiet']);
  assert.is(quiet.status, 0);
  assert.not.match(quiet.stdout, /%/);
  const piped = spawnSync(process.execPath, [cliBin, 'convert', input, join(dir, 'piped.npz'), '--compress'], { encoding: 'utf8' });
  assert.is(piped.status, 0);
  assert.is(piped.stderr, '');
});

test.run();
