// One long-lived Python per test file and interpreter, instead of one process per snippet: starting
// Python and importing torch costs 2-3 s of CPU (20 s and more of wall time on a busy 2-core
// machine), and a test file asks torch a few dozen questions. Each snippet still runs on its own: in
// fresh globals, with its own stdout, and a snippet that raises (or `raise SystemExit(...)`) fails
// only the test that ran it, with Python's traceback. State kept inside modules (torch.manual_seed,
// torch's config) does carry over: a snippet that changes it sets it back.
import { spawn, spawnSync } from 'node:child_process';

const SERVER = `
import sys, json, io, contextlib, traceback
out, inp = sys.stdout, sys.stdin
for line in inp:
    code = json.loads(line)
    buf = io.StringIO()
    g = {'__name__': '__main__'}
    try:
        with contextlib.redirect_stdout(buf):
            exec(compile(code, '<snippet>', 'exec'), g)
        reply = {'stdout': buf.getvalue()}
    except BaseException:
        reply = {'error': traceback.format_exc(), 'stdout': buf.getvalue()}
    del g
    out.write(json.dumps(reply) + '\\n')
    out.flush()
`;

const sessions = new Map();

/**
 * The Python session of this process for interpreter `which` (started at the first call, stopped
 * when the process exits). `run(code)` resolves to what the snippet printed, or rejects with its
 * traceback; snippets run one at a time, in the order asked.
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
  };
  child.on('error', (e) => fail(`${which} could not start: ${e.message}`));
  child.on('exit', (code, signal) => fail(`${which} exited (${signal ?? `code ${code}`})`));
  let queue = Promise.resolve();
  s = {
    run(code) {
      const reply = queue.then(
        () =>
          new Promise((resolve) => {
            if (dead) return resolve({ error: dead });
            pending.push(resolve);
            child.stdout.ref?.();
            child.stdin.write(`${JSON.stringify(code)}\n`);
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
