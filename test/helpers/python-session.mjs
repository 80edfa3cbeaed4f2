// One long-lived Python per test file and interpreter, instead of one process per snippet: starting
// Python and importing torch costs 2-3 s of CPU (20 s and more of wall time on a busy 2-core
// machine), and a test file asks torch a few dozen questions. Each snippet still runs on its own: in
// fresh globals, with its own stdout, and a snippet that raises (or `raise SystemExit(...)`) fails
// only the test that ran it, with Python's traceback. State kept inside modules (torch.manual_seed,
// torch's config) does carry over: a snippet that changes it sets it back.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SERVER = `
import sys, os, json, io, contextlib, traceback, types
out, inp = sys.stdout, sys.stdin
home = os.getcwd()
server = sys.modules['__main__']
for line in inp:
    ask = json.loads(line)
    code, cwd = (ask, None) if isinstance(ask, str) else (ask['code'], ask.get('cwd'))
    buf = io.StringIO()
    # The snippet's globals are a fresh __main__ module's, so that what it defines can be pickled by
    # name (multiprocessing sends functions so).
    main = types.ModuleType('__main__')
    sys.modules['__main__'] = main
    g = main.__dict__
    try:
        if cwd:
            os.chdir(cwd)
        with contextlib.redirect_stdout(buf):
            try:
                exec(compile(code, '<snippet>', 'exec'), g)
            except SystemExit as e:
                if e.code not in (None, 0):
                    raise
        reply = {'stdout': buf.getvalue()}
    except BaseException:
        reply = {'error': traceback.format_exc(), 'stdout': buf.getvalue()}
    finally:
        os.chdir(home)
        sys.modules['__main__'] = server
    del g, main
    out.write(json.dumps(reply) + '\\n')
    out.flush()
`;

const sessions = new Map();

/**
 * The Python session of this process for interpreter `which` (started at the first call, stopped
 * when the process exits). `run(code, { cwd, timeoutMs })` resolves to what the snippet printed, or
 * rejects with its traceback; snippets run one at a time, in the order asked, each in `cwd` if given
 * (a script's working directory: files it names and modules it imports are found there), and one
 * that runs past `timeoutMs` (counted from when it starts) is stopped and rejects saying so.
 */
export function pythonSession(which = 'python3') {
  let s = sessions.get(which);
  if (s) return s;
  const child = spawn(which, ['-W', 'ignore', '-u', '-c', SERVER], { stdio: ['pipe', 'pipe', 'inherit'] });
  // An idle session does not keep the test process alive (it ends when the process does); a
  // snippet that runs does.
  child.unref();
  child.stdin.unref?.();
  child.stdout.unref?.();
  let pending = [];
  // At exit an idle session ends by itself (its stdin closes); one still running a snippet is stopped.
  process.on('exit', () => {
    if (pending.length) child.kill();
  });
  let rest = '';
  let dead = null;
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk) => {
    rest += chunk;
    for (let nl = rest.indexOf('\n'); nl >= 0; nl = rest.indexOf('\n')) {
      const line = rest.slice(0, nl);
      rest = rest.slice(nl + 1);
      pending.shift()?.(JSON.parse(line));
      if (!pending.length) child.stdout.unref?.();
    }
  });
  const fail = (why) => {
    dead = why;
    for (const resolve of pending) resolve({ error: why });
    pending = [];
    // A dead session is forgotten: the next call for this interpreter starts a new one.
    if (sessions.get(which) === s) sessions.delete(which);
  };
  child.on('error', (e) => fail(`${which} could not start: ${e.message}`));
  child.on('exit', (code, signal) => fail(`${which} exited (${signal ?? `code ${code}`})`));
  let queue = Promise.resolve();
  s = {
    run(code, { cwd, timeoutMs } = {}) {
      const reply = queue.then(
        () =>
          new Promise((resolve) => {
            if (dead) return resolve({ error: dead });
            pending.push(resolve);
            child.stdout.ref?.();
            child.stdin.write(`${JSON.stringify(cwd ? { code, cwd } : code)}\n`);
            // A snippet that runs past its time stops the interpreter (Python cannot interrupt
            // native code from outside), fails with that reason, and the next call starts afresh.
            if (timeoutMs) {
              const timer = setTimeout(() => {
                fail(`the snippet ran past ${timeoutMs / 1000} s and was stopped`);
                child.kill('SIGKILL');
              }, timeoutMs);
              timer.unref();
              const done = pending[pending.length - 1];
              pending[pending.length - 1] = (r) => {
                clearTimeout(timer);
                done(r);
              };
            }
          }),
      );
      queue = reply;
      return reply.then((r) => {
        if (r.error) throw new Error(`Python (${which}) failed:\n${r.stdout ?? ''}${r.error}`);
        return r.stdout;
      });
    },
  };
  sessions.set(which, s);
  return s;
}

/**
 * Whether interpreter `which` has every one of `modules`, found without importing them (importing
 * torch to see whether it is there costs seconds).
 */
export function hasPythonModules(which, ...modules) {
  const check = 'import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in sys.argv[1:]))';
  return spawnSync(which, ['-c', check, ...modules], { stdio: 'ignore' }).status === 0;
}

// The synchronous form of a session, for the tests' `python(code)` (which most files call in loops,
// and which returns what the snippet printed, as a blocking call): the same server behind two named
// pipes that this process reads and writes with blocking calls, so a snippet costs no interpreter
// start and no numpy import. Frames are `<byte length>\n<JSON>` both ways.
const SYNC_SERVER = `
import sys, os, json, io, contextlib, traceback
req_path, res_path, ready_path = sys.argv[1:4]
# Opened without waiting for a writer, then made blocking: the test process opens its end after it
# sees the ready file, so neither side can wait for the other forever at the start.
req = os.open(req_path, os.O_RDONLY | os.O_NONBLOCK)
os.set_blocking(req, True)
open(ready_path, 'w').close()
res = os.open(res_path, os.O_WRONLY)
def read_exactly(n):
    parts = []
    while n:
        b = os.read(req, n)
        if not b:
            sys.exit(0)
        parts.append(b)
        n -= len(b)
    return b''.join(parts)
def read_frame():
    head = b''
    while not head.endswith(b'\\n'):
        b = os.read(req, 1)
        if not b:
            sys.exit(0)
        head += b
    return json.loads(read_exactly(int(head)))
while True:
    ask = read_frame()
    buf = io.StringIO()
    g = {'__name__': '__main__'}
    argv = sys.argv
    try:
        if 'argv' in ask:
            sys.argv = ask['argv']
        with contextlib.redirect_stdout(buf):
            try:
                exec(compile(ask['code'], ask.get('file', '<snippet>'), 'exec'), g)
            except SystemExit as e:
                if e.code not in (None, 0):
                    raise
        reply = {'stdout': buf.getvalue()}
    except BaseException:
        reply = {'error': traceback.format_exc(), 'stdout': buf.getvalue()}
    finally:
        sys.argv = argv
    del g
    data = json.dumps(reply).encode()
    frame = str(len(data)).encode() + b'\\n' + data
    while frame:
        frame = frame[os.write(res, frame):]
`;

const syncSessions = new Map();

/** Block this thread for `ms` milliseconds. */
function sleepSync(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Start interpreter `which` behind two named pipes; null where pipes cannot be made here. */
function startSyncSession(which) {
  const dir = mkdtempSync(join(tmpdir(), 'npyts-python-'));
  const [req, res, ready] = ['req', 'res', 'ready'].map((n) => join(dir, n));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  if (spawnSync('mkfifo', [req, res]).status !== 0) return null;
  const child = spawn(which, ['-W', 'ignore', '-c', SYNC_SERVER, req, res, ready], { stdio: ['ignore', 'inherit', 'inherit'] });
  child.unref();
  let exited = null;
  child.on('error', (e) => {
    exited = e.message;
  });
  // The ready file appears once the interpreter has opened its end; a Python that cannot start
  // never makes it (the wait is bounded, generously for a busy machine).
  for (const start = Date.now(); !existsSync(ready); sleepSync(5)) {
    if (Date.now() - start > 120_000) throw new Error(`${which} did not start within 120 s`);
  }
  const writeFd = openSync(req, 'w');
  const readFd = openSync(res, 'r');
  const readExactly = (n) => {
    const out = Buffer.allocUnsafe(n);
    for (let at = 0; at < n; ) {
      const got = readSync(readFd, out, at, n - at, null);
      if (got === 0) throw new Error(`${which} exited while running a snippet${exited ? `: ${exited}` : ''}`);
      at += got;
    }
    return out;
  };
  return (ask) => {
    const data = Buffer.from(JSON.stringify(ask));
    const frame = Buffer.concat([Buffer.from(`${data.length}\n`), data]);
    for (let at = 0; at < frame.length; ) at += writeSync(writeFd, frame, at);
    let head = '';
    while (!head.endsWith('\n')) head += readExactly(1).toString('latin1');
    const reply = JSON.parse(readExactly(Number(head)).toString('utf8'));
    if (reply.error) throw new Error(`Python (${which}) failed:\n${reply.stdout ?? ''}${reply.error}`);
    return reply.stdout;
  };
}

/**
 * Run `code` in this process's synchronous session of interpreter `which` (fresh globals each time;
 * state inside modules carries over, as for {@link pythonSession}); returns what it printed, or
 * throws with Python's traceback. `argv` sets `sys.argv` for the snippet (a script run as `__main__`).
 * Where named pipes cannot be made, each call starts an interpreter of its own.
 */
export function pythonSync(code, { which = 'python3', argv, file } = {}) {
  let ask = syncSessions.get(which);
  if (ask === undefined) {
    ask = process.env.NPYTS_TEST_PYTHON_PER_CALL ? null : startSyncSession(which);
    syncSessions.set(which, ask);
  }
  if (ask) return ask({ code, ...(argv ? { argv } : {}), ...(file ? { file } : {}) });
  const args = argv ? [file, ...argv.slice(1)] : ['-c', code];
  return execFileSync(which, ['-W', 'ignore', ...args], { maxBuffer: 1 << 30, encoding: 'utf8' });
}
