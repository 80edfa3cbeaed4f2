// Keras 2, for the tests that need files Keras 2 itself wrote: pip here offers Keras 3 only (no tf-keras),
// but the tensorflow-cpu wheel still ships TensorFlow's own copy of Keras 2 (tensorflow.python.keras,
// with the real Keras 2 .h5 writer). It is installed apart from the main python3 (pip --target into a
// cache keyed by its version, by installOnce as the runtimes are), since installing it
// there would change the numpy, protobuf and h5py the other tests rely on; it is used through PYTHONPATH.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installOnce } from './install-once.mjs';

/** The tensorflow-cpu release whose bundled Keras 2 the tests use. */
export const TF_VERSION = '2.21.0';

/** The directory to put on PYTHONPATH for `from tensorflow.python import keras`, installing it first when it is not there. */
export function installTf2() {
  const cache = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'npyts-tf2');
  const dir = join(cache, TF_VERSION);
  const done = (d) => existsSync(join(d, 'tensorflow', 'python', 'keras', 'saving', 'hdf5_format.py'));
  return installOnce(dir, done, (partial) => {
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
    if (r.status !== 0) throw new Error(`pip install --target of tensorflow-cpu==${TF_VERSION} failed (status ${r.status}):\n${r.stdout}${r.stderr}`);
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(installTf2());
