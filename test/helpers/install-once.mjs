// One install into a cache shared by test processes (the other runtimes, tensorflow-cpu): made in a
// folder beside its place and renamed into it, so that a cut-off install is never taken for a
// finished one; a cut-off install's folder is removed by the next install once its process is gone.
import { mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** Whether process `pid` is running (signal 0 checks without sending one). */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

/**
 * `dir`, installed by `install(folder)` (which fills the folder, or throws) unless `done(dir)` says
 * it is there. Two processes may install at once: the first rename wins, the other uses its copy.
 */
export function installOnce(dir, done, install) {
  if (done(dir)) return dir;
  const cache = dirname(dir);
  mkdirSync(cache, { recursive: true });
  const prefix = `${basename(dir)}.`;
  for (const name of readdirSync(cache)) {
    if (!name.startsWith(prefix) || !name.endsWith('.partial')) continue;
    const pid = Number(name.slice(prefix.length, -'.partial'.length));
    if (Number.isInteger(pid) && pid !== process.pid && !alive(pid)) rmSync(join(cache, name), { recursive: true, force: true });
  }
  const partial = `${dir}.${process.pid}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  try {
    install(partial);
    if (!done(partial)) throw new Error(`the install into ${partial} left it incomplete`);
  } catch (e) {
    rmSync(partial, { recursive: true, force: true });
    throw e;
  }
  try {
    renameSync(partial, dir);
  } catch (e) {
    // Another process finished the same install first: use its copy.
    rmSync(partial, { recursive: true, force: true });
    if (!done(dir)) throw e;
  }
  return dir;
}
