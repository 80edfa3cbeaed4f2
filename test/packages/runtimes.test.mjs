// The core suites (dtypes and headers, arrays, .npy reading and writing, pickles) under every other
// runtime the registry gives us as a package: Node 22, the current Node, Bun and Deno. They are not in
// the root's dependencies (~600 MB for every contributor): test/runtimes is their own npm project,
// installed once into a cache (installRuntimes). Each must pass exactly as many tests as this Node does.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installRuntimes } from '../runtimes/install.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SUITES = ['format/', 'array/', 'npy/', 'pickle/'];
const installed = join(installRuntimes(), 'node_modules');
const runtimes = {
  'Node 22': [join(installed, 'node-v22', 'bin', 'node'), []],
  'Node (current)': [join(installed, 'node-v26', 'bin', 'node'), []],
  Bun: [join(installed, '@oven', 'bun-linux-x64', 'bin', 'bun'), []],
  Deno: [join(installed, '@deno', 'linux-x64-glibc', 'deno'), ['run', '-A']],
};

function suites(binary, args) {
  const r = spawnSync(binary, [...args, join(root, 'test', 'run.mjs'), '--in-process', ...SUITES], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 1 << 26,
    env: { ...process.env, NO_COLOR: '1' },
  });
  const last = r.stdout.trim().split('\n').pop();
  const m = /^(\d+) passed, (\d+) failed/.exec(last ?? '');
  return {
    passed: m ? Number(m[1]) : 0,
    failed: m ? Number(m[2]) : -1,
    output: r.stdout.slice(-3000) + r.stderr.slice(-2000),
    version: spawnSync(binary, ['--version'], { encoding: 'utf8' }).stdout.trim().split('\n')[0],
  };
}

const here = suites(process.execPath, []);

test(`this Node (${process.version}) passes the core suites`, () => {
  assert.is(here.failed, 0, here.output);
  assert.ok(here.passed > 200);
});

for (const [name, [binary, args]] of Object.entries(runtimes)) {
  test(`${name} passes the same ${SUITES.join(' ')} suites`, () => {
    assert.ok(existsSync(binary), `${binary} is not installed (test/runtimes/package.json)`);
    const r = suites(binary, args);
    console.log(`      ${name}: ${r.version}: ${r.passed} passed`);
    assert.is(r.failed, 0, r.output);
    assert.is(r.passed, here.passed, r.output);
  });
}

test.run();
