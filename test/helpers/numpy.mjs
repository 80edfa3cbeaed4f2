// Bridges the tests to numpy: every fixture and every expected value comes from numpy at test time.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pythonSession, pythonSync } from './python-session.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const script = join(here, 'npyfixtures.py');

/** Run a command of npyfixtures.py and parse its JSON output. */
export function numpy(command, ...args) {
  scriptSource ??= readFileSync(script, 'utf8');
  return JSON.parse(pythonSync(scriptSource, { argv: [script, command, ...args], file: script }));
}
let scriptSource;

/** Run a short Python snippet with numpy imported as np; returns stdout. */
export function python(code) {
  return pythonSync(`import numpy as np, sys, json, io\n${code}`);
}

/**
 * {@link python} in this file's long-lived Python session (one interpreter start, and one import of
 * numpy and torch, for the whole file): the snippet runs in fresh globals; resolves to its stdout.
 */
export function pythonAsync(code) {
  return pythonSession('python3').run(`import numpy as np, sys, json, io\n${code}`);
}

/** A fresh temporary directory, removed at process exit. */
const scratchDirs = [];
process.on('exit', () => {
  for (const dir of scratchDirs) rmSync(dir, { recursive: true, force: true });
});

export function scratch(prefix = 'npyts-test-') {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  scratchDirs.push(dir);
  return dir;
}

/**
 * {@link scratch} in memory (/dev/shm) where it is a tmpfs that may hold programs (no `noexec`) and
 * has `bytes` free; otherwise on disk. For trees of many small files (a fresh project's
 * node_modules): on this kind of VM, writing and removing 50 000 files on disk takes a minute or
 * more, in memory a second.
 */
export function memoryScratch(prefix, bytes) {
  const shm = '/dev/shm';
  try {
    const mount = readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .map((l) => l.split(' '))
      .find((f) => f[1] === shm);
    const { bavail, bsize } = statfsSync(shm);
    if (mount?.[2] === 'tmpfs' && !mount[3].split(',').includes('noexec') && bavail * bsize >= bytes) {
      const dir = mkdtempSync(join(shm, prefix));
      scratchDirs.push(dir);
      return dir;
    }
  } catch {
    // No /proc or no /dev/shm: on disk.
  }
  return scratch(prefix);
}

export function writeJSON(path, value) {
  writeFileSync(
    path,
    JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? String(v) : v)),
  );
  return path;
}

const repoRoot = join(here, '..', '..');
export const cliBin = join(repoRoot, 'packages', 'cli', 'bin', 'npyts.js');

/** Run the CLI in-process; returns { code, stdout, stderr }. */
export async function runCli(args) {
  const { main } = await import('@npyts/cli/dist/main.js');
  let stdout = '';
  let stderr = '';
  const code = await main(args, {
    stdout: (s) => {
      stdout += s;
    },
    stderr: (s) => {
      stderr += s;
    },
  });
  return { code, stdout, stderr };
}

/** Run the real `npyts` executable in a child process. */
export function spawnCli(args) {
  const r = spawnSync(process.execPath, [cliBin, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 28 });
  if (r.error) throw r.error;
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Run an ES module `code` in a child Node process and SIGKILL it after `ms` milliseconds (crash-safety tests). */
export async function runThenKill(code, ms) {
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { cwd: repoRoot, stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, ms));
  child.kill('SIGKILL');
  if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.once('exit', r));
}

/**
 * Run an ES module snippet in a fresh Node process (working folder `dir`) with a time limit; it
 * sets `globalThis.result`, printed as one JSON line.
 * Returns that value with the child's peak resident memory in MiB (`rssMiB`): VmHWM of its own
 * address space (getrusage's maxrss would count the parent's memory copied at fork).
 */
export function boundedChild(dir, code, { timeoutMs = 30_000, maxOldSpaceMiB = 4096 } = {}) {
  // Import declarations are hoisted: the snippet's imports resolve from the repository, its files from `dir`.
  const wrapped = `process.chdir(${JSON.stringify(dir)});\n${code}\nconst hwm = Number(/VmHWM:\\s+(\\d+)/.exec((await import('node:fs')).readFileSync('/proc/self/status', 'utf8'))[1]);\nconsole.log(JSON.stringify({ ...globalThis.result, rssMiB: hwm / 1024 }));`;
  const r = spawnSync(process.execPath, [`--max-old-space-size=${maxOldSpaceMiB}`, '--input-type=module', '-e', wrapped], {
    encoding: 'utf8',
    timeout: timeoutMs,
    cwd: repoRoot,
    maxBuffer: 1 << 26,
  });
  if (r.error) throw new Error(`child did not finish within ${timeoutMs} ms: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`child failed (${r.status}): ${r.stderr.slice(-2000)}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}
