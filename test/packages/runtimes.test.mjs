// The core suites (dtypes and headers, arrays, .npy reading and writing, pickles) under every other
// runtime the registry gives us as a package: Node 22, the current Node, Bun and Deno. They are not in
// the root's dependencies (~600 MB for every contributor): test/runtimes is their own npm project,
// installed once into a cache (installRuntimes). Each must pass every test, and all as many tests as
// each other. (This Node runs the same files in the suite itself; npy/numpy1, which checks numpy 1.x
// wheels against the codec, is left to that run: it is 30 s of Python per runtime, and tests numpy's
// versions, not JavaScript's runtimes.)
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installRuntimes } from '../runtimes/install.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SUITES = ['format/', 'array/', 'npy/', 'pickle/'];
const SKIPPED = ['npy/numpy1'];
const installed = join(installRuntimes(), 'node_modules');
const runtimes = {
  'Node 22': [join(installed, 'node-v22', 'bin', 'node'), []],
  'Node (current)': [join(installed, 'node-v26', 'bin', 'node'), []],
  Bun: [join(installed, '@oven', 'bun-linux-x64', 'bin', 'bun'), []],
  Deno: [join(installed, '@deno', 'linux-x64-glibc', 'deno'), ['run', '-A']],
};

/** Run the core suites under `binary` (in one process, as uvu's deferred mode does), without blocking this one. */
function suites(binary, args) {
  return new Promise((resolve) => {
    const child = spawn(binary, [...args, join(root, 'test', 'run.mjs'), '--in-process', ...SKIPPED.flatMap((s) => ['--skip', s]), ...SUITES], {
      cwd: root,
      env: { ...process.env, NO_COLOR: '1' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => {
      stdout += c;
    });
    child.stderr.on('data', (c) => {
      stderr += c;
    });
    child.on('error', (e) => {
      stderr += String(e);
    });
    child.on('close', () => {
      const last = stdout.trim().split('\n').pop();
      const m = /^(\d+) passed, (\d+) failed/.exec(last ?? '');
      resolve({
        passed: m ? Number(m[1]) : 0,
        failed: m ? Number(m[2]) : -1,
        output: stdout.slice(-3000) + stderr.slice(-2000),
        version: existsSync(binary) ? spawnSync(binary, ['--version'], { encoding: 'utf8' }).stdout.trim().split('\n')[0] : 'missing',
      });
    });
  });
}

// Two runtimes at a time (each mostly waits on the numpy it starts): the four runs take about half
// as long as one after another, which keeps this file off the suite's critical path.
let active = 0;
const waiting = [];
const limited = (run) =>
  new Promise((resolve) => {
    const go = () => {
      active++;
      run().then((r) => {
        active--;
        resolve(r);
        waiting.shift()?.();
      });
    };
    if (active < 2) go();
    else waiting.push(go);
  });
const runs = new Map(Object.entries(runtimes).map(([name, [binary, args]]) => [name, limited(() => suites(binary, args))]));
const results = new Map();
for (const [name, run] of runs) results.set(name, await run);

for (const [name, [binary]] of Object.entries(runtimes)) {
  test(`${name} passes the ${SUITES.join(' ')} suites`, () => {
    assert.ok(existsSync(binary), `${binary} is not installed (test/runtimes/package.json)`);
    const r = results.get(name);
    console.log(`      ${name}: ${r.version}: ${r.passed} passed`);
    assert.is(r.failed, 0, r.output);
    assert.ok(r.passed > 200, r.output);
  });
}

test('every runtime passes as many tests as every other (none left a file or a test out)', () => {
  const counts = Object.fromEntries([...results].map(([name, r]) => [name, r.passed]));
  assert.is(new Set(Object.values(counts)).size, 1, JSON.stringify(counts));
});

test.run();
