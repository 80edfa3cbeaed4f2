// Keras 2, for the tests that need files Keras 2 itself wrote: pip here offers Keras 3 only (no tf-keras),
// but the tensorflow-cpu wheel still ships TensorFlow's own copy of Keras 2 (tensorflow.python.keras,
// with the real Keras 2 .h5 writer). It is installed apart from the main python3 (pip --target into a
// cache keyed by its version, as test/runtimes/install.mjs installs the runtimes), since installing it
// there would change the numpy, protobuf and h5py the other tests rely on; it is used through PYTHONPATH.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The tensorflow-cpu release whose bundled Keras 2 the tests use. */
export const TF_VERSION = '2.21.0';

/** Whether process `pid` is running (signal 0 checks without sending one). */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

/** The directory to put on PYTHONPATH for `from tensorflow.python import keras`, installing it first when it is not there. */
export function installTf2() {
  const cache = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'npyts-tf2');
  const dir = join(cache, TF_VERSION);
  const done = (d) => existsSync(join(d, 'tensorflow', 'python', 'keras', 'saving', 'hdf5_format.py'));
  if (done(dir)) return dir;
  // Install beside and rename, so a cut-off install is never taken for a finished one. A cut-off
  // install's folder (1.5 GB) is removed by the next install, once its process is gone.
  mkdirSync(cache, { recursive: true });
  for (const name of readdirSync(cache)) {
    const pid = new RegExp(`^${TF_VERSION.replaceAll('.', '\\.')}\\.(\\d+)\\.partial$`).exec(name)?.[1];
    if (pid && Number(pid) !== process.pid && !alive(Number(pid))) rmSync(join(cache, name), { recursive: true, force: true });
  }
  const partial = `${dir}.${process.pid}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  const r = spawnSync(
    'python3',
    [
      '-m',
      'pip',
      'install',
      '-q',
      '--retries',
      '0',
      '--no-warn-conflicts',
      '--disable-pip-version-check',
      '--target',
      partial,
      `tensorflow-cpu==${TF_VERSION}`,
    ],
    { encoding: 'utf8' },
  );
  if (r.status !== 0 || !done(partial)) {
    rmSync(partial, { recursive: true, force: true });
    throw new Error(`pip install --target of tensorflow-cpu==${TF_VERSION} failed (status ${r.status}):\n${r.stdout}${r.stderr}`);
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

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(installTf2());
