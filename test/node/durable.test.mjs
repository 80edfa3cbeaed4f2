// `{ durable: true }` on every save that replaces a file: the temporary file is fsync'd before the
// rename and the directory after it, in that order (seen by strace, the real system calls); without
// it neither happens. The saved bytes are the same either way, and numpy loads them.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, chownSync, cpSync, mkdirSync, readFileSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { loadNpySync } from '@npyts/core/node';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { python, scratch } from '../helpers/numpy.mjs';

const dir = realpathSync(scratch('npyts-durable-'));
const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

// One save in a child process, named by the function that makes it; its file is `out`.
const script = `
import * as node from '@npyts/core/node';
const [name, out, durable] = process.argv.slice(1);
const data = { data: new Float32Array([1.5, -2, 3]), shape: [3] };
const options = durable === '1' ? { durable: true } : {};
const input = name.startsWith('saveNpz') || name.startsWith('saveSafetensors') ? { w: data } : name.startsWith('saveRagged') ? ['a', 'bc', 'def'] : data;
if (name === 'saveWeights') {
  const tf = await import('@tensorflow/tfjs-core');
  await import('@tensorflow/tfjs-backend-cpu');
  await (await import('@npyts/tfjs')).saveWeights([tf.variable(tf.tensor([1.5, -2, 3]), true, 'w')], out, options);
} else if (name.endsWith('Sharded')) {
  // A sharded save (one shard: the target file itself), written through a folder store.
  await node[name.slice(0, -'Sharded'.length)](out, input, { ...options, maxShardSize: '5GB' });
} else await node[name](out, input, options);
`;

/** The system calls of one save: opens, fsyncs and renames, in order, with the path or fd they name. */
function traceSave(name, out, durable) {
  const log = join(dir, `${name}-${durable}.strace`);
  const r = spawnSync(
    'strace',
    [
      '-f',
      '-qq',
      '-e',
      'trace=openat,fsync,fdatasync,rename,renameat,renameat2,close',
      '-o',
      log,
      process.execPath,
      '--input-type=module',
      '-e',
      script,
      name,
      out,
      durable ? '1' : '0',
    ],
    {
      cwd: repoRoot,
      encoding: 'utf8',
    },
  );
  assert.is(r.status, 0, r.stderr);
  return joinInterrupted(readFileSync(log, 'utf8').split('\n'));
}

/**
 * strace -f splits a call that another thread interrupts into `PID  fsync(23 <unfinished ...>` and,
 * later, `PID  <... fsync resumed>) = 0`: each pair becomes one line again, so that a busy machine's
 * interleaving (libuv's pool fsyncs while the main thread runs) does not hide a call.
 */
function joinInterrupted(lines) {
  const pending = new Map(); // pid → the call's start
  const out = [];
  for (const line of lines) {
    const unfinished = /^(\d+)\s+(.*) <unfinished \.\.\.>$/.exec(line);
    if (unfinished) {
      pending.set(unfinished[1], unfinished[2]);
      continue;
    }
    const resumed = /^(\d+)\s+<\.\.\. \w+ resumed>(.*)$/.exec(line);
    if (resumed && pending.has(resumed[1])) {
      out.push(`${resumed[1]}  ${pending.get(resumed[1])}${resumed[2]}`);
      pending.delete(resumed[1]);
      continue;
    }
    out.push(line);
  }
  return out;
}

/** What happened to `out`'s temporary file and its directory: 'sync-file', 'rename', 'sync-dir', in order. */
function eventsOf(lines, out) {
  const fds = new Map(); // fd → 'temp' | 'dir' while open
  const events = [];
  for (const line of lines) {
    const open = /openat\(AT_FDCWD, "([^"]+)", [^)]*\)\s+= (\d+)/.exec(line);
    if (open) {
      const [, path, fd] = open;
      // The temporary file is `${out}.PID.TIME.RANDOM.tmp` (not another file's, such as `${out}.strings.…`).
      if (path.startsWith(`${out}.`) && /^\d+\.\d+\.[a-z0-9]+\.tmp$/.test(path.slice(out.length + 1))) fds.set(fd, 'temp');
      else if (path === dirname(out) && events.at(-1) === 'rename') fds.set(fd, 'dir');
      continue;
    }
    const sync = /f(?:data)?sync\((\d+)\)\s+= 0/.exec(line);
    if (sync && fds.has(sync[1])) events.push(`sync-${fds.get(sync[1]) === 'temp' ? 'file' : 'dir'}`);
    const close = /close\((\d+)\)/.exec(line);
    if (close) fds.delete(close[1]);
    // (\s+: strace pads a resumed call's result to its column, "<... rename resumed>)       = 0".)
    if (/rename(?:at2?)?\(.*"([^"]+)"(?:, \d+)?\)\s+= 0/.test(line) && line.includes(`"${out}"`)) events.push('rename');
  }
  return events;
}

const spawnOk = spawnSync('strace', ['-qq', '-e', 'trace=none', 'true']).status === 0;

for (const [name, ext] of [
  ['saveNpySync', 'npy'],
  ['saveNpy', 'npy'],
  ['saveNpzSync', 'npz'],
  ['saveNpz', 'npz'],
  ['saveSafetensorsSync', 'safetensors'],
  ['saveSafetensors', 'safetensors'],
  ['saveSafetensorsSyncSharded', 'safetensors'],
  ['saveSafetensorsSharded', 'safetensors'],
  ['saveWeights', 'npz'], // @npyts/tfjs, through saveNpz
]) {
  test(`${name}({ durable: true }) syncs the file before the rename and the directory after it; without it, neither`, () => {
    assert.ok(spawnOk, 'strace cannot trace here: the test needs it (apt-get install strace)');
    const out = join(dir, `${name}.${ext}`);
    assert.equal(eventsOf(traceSave(name, out, true), out), ['sync-file', 'rename', 'sync-dir']);
    const durableBytes = readFileSync(out);
    assert.equal(eventsOf(traceSave(name, out, false), out), ['rename']);
    // (A zip member records its time, so two .npz saves can differ there.)
    if (ext !== 'npz') assert.ok(readFileSync(out).equals(durableBytes), 'the same bytes either way');
  });
}

test('saveRaggedSync({ durable: true }) makes the heap durable before the index is renamed into place', () => {
  const out = join(dir, 'words.npy');
  const lines = traceSave('saveRaggedSync', out, true);
  const heap = eventsOf(lines, `${out}.strings`);
  assert.equal(heap, ['sync-file', 'rename', 'sync-dir']);
  assert.equal(eventsOf(lines, out), ['sync-file', 'rename', 'sync-dir']);
  const renames = lines.filter((l) => /rename/.test(l) && / = 0$/.test(l));
  assert.ok(renames[0].includes(`"${out}.strings"`) && renames[1].includes(`"${out}"`), 'the heap is in place before the index');
  const again = traceSave('saveRaggedSync', out, false);
  assert.equal(eventsOf(again, out), ['rename'], again.filter((l) => l.includes(out) || /rename|<unfinished|resumed>/.test(l)).join('\n'));
});

test('a call that another thread interrupted is read whole, its padded result included (how a busy machine once hid a rename)', () => {
  // strace -f's own form when the pool's thread runs between a call's start and its end.
  const out = '/d/words.npy';
  const trace = [
    `41  openat(AT_FDCWD, "${out}.41.1.ab.tmp", O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0666 <unfinished ...>`,
    '42  close(9)                          = 0',
    '41  <... openat resumed>)             = 23',
    '41  fsync(23 <unfinished ...>',
    '42  openat(AT_FDCWD, "/elsewhere", O_RDONLY) = 9',
    '41  <... fsync resumed>)              = 0',
    '41  close(23)                         = 0',
    `41  rename("${out}.41.1.ab.tmp", "${out}" <unfinished ...>`,
    '42  close(9)                          = 0',
    '41  <... rename resumed>)             = 0',
  ];
  assert.equal(eventsOf(joinInterrupted(trace), out), ['sync-file', 'rename']);
});

test('an abort that arrives while the file is renamed into place is too late: the durable save completes', () => {
  const out = join(dir, 'abort-late.npy');
  // The abort fires inside the rename (the real one, watched through node:fs/promises).
  const code = `
import { syncBuiltinESMExports } from 'node:module';
import fsp from 'node:fs/promises';
const controller = new AbortController();
const rename = fsp.rename;
let armed = false;
fsp.rename = async (...args) => { await rename(...args); if (armed) controller.abort(); };
syncBuiltinESMExports();
const { saveNpy, loadNpySync } = await import('@npyts/core/node');
await saveNpy(${JSON.stringify(out)}, { data: new Float32Array([1, 2]) });
let outcome = 'resolved';
armed = true;
try {
  await saveNpy(${JSON.stringify(out)}, { data: new Float32Array([3, 4]) }, { durable: true, signal: controller.signal });
} catch (e) { outcome = e.name; }
console.log(JSON.stringify({ aborted: controller.signal.aborted, outcome, data: Array.from(loadNpySync(${JSON.stringify(out)}).data) }));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { cwd: repoRoot, encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout), { aborted: true, outcome: 'resolved', data: [3, 4] });
});

/** The built @npyts/core and its dependency copied into `folder`, every part readable by all: a cwd any user can import it from. */
function worldReadableCopy(folder) {
  const modules = join(folder, 'node_modules');
  for (const part of ['package.json', 'dist']) cpSync(join(repoRoot, 'packages', 'core', part), join(modules, '@npyts', 'core', part), { recursive: true });
  cpSync(join(repoRoot, 'node_modules', 'fflate'), join(modules, 'fflate'), { recursive: true, dereference: true });
  const open = (p) => {
    const directory = statSync(p).isDirectory();
    chmodSync(p, directory ? 0o755 : 0o644);
    if (directory) for (const name of readdirSync(p)) open(join(p, name));
  };
  open(folder);
  return folder;
}

test('a folder that cannot be synced fails a durable save, saying the file is in place (not skipped in silence); without durable the save succeeds', () => {
  // A folder its user may write into but not open (mode 333): the rename works, the folder's sync cannot.
  const folder = join(dir, 'unreadable');
  mkdirSync(folder);
  const asRoot = process.getuid?.() === 0;
  // The child imports the package from where it runs: as nobody, from a copy of the built package in
  // the scratch folder, since the clone's own folder may be private (mktemp -d makes 0700 folders).
  let cwd = repoRoot;
  if (asRoot) {
    chownSync(folder, 65534, 65534); // run as nobody: root opens any folder
    chmodSync(dir, 0o711); // and nobody passes through the scratch folder to it
    cwd = worldReadableCopy(join(dir, 'package'));
    const reach = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '-e', "require('@npyts/core/package.json')"], {
      cwd,
      encoding: 'utf8',
    });
    if (reach.status !== 0) {
      console.log(`skipped: nobody cannot run node from ${cwd} (a private folder above the scratch folder or node?): ${reach.stderr || reach.error}`);
      return;
    }
  }
  chmodSync(folder, 0o333);
  const code = `
import { saveNpySync, saveNpy } from '@npyts/core/node';
const out = [];
for (const [save, durable] of [[saveNpySync, true], [saveNpy, true], [saveNpySync, false]]) {
  try { await save(${JSON.stringify(join(folder, 'x.npy'))}, { data: new Float32Array([1, 2]) }, { durable }); out.push('saved'); }
  catch (e) { out.push(e.code + ': ' + e.message); }
}
console.log(JSON.stringify(out));`;
  const command = asRoot ? 'setpriv' : process.execPath;
  const args = [...(asRoot ? ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath] : []), '--input-type=module', '-e', code];
  const r = spawnSync(command, args, { cwd, encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
  const [blocking, async, plain] = JSON.parse(r.stdout);
  for (const got of [blocking, async]) assert.match(got, /^EACCES: the file is in place, but its folder .*unreadable could not be synced/);
  assert.is(plain, 'saved');
  chmodSync(folder, 0o755);
  assert.equal(Array.from(loadNpySync(join(folder, 'x.npy')).data), [1, 2]);
});

test('numpy loads what a durable save wrote', () => {
  const out = join(dir, 'saveNpySync.npy');
  const got = python(`import numpy as np, json; print(json.dumps(np.load(${JSON.stringify(out)}).tolist()))`);
  assert.equal(JSON.parse(got), [1.5, -2, 3]);
});

test.run();
