/** Opening an HDF5 file from wherever it is: a URL, a `Blob`, bytes, or any byte source. */
import { openingOver, sourceOf, type NpySource } from '../io/open.js';
import { HTTP_KEY_SET, type HttpOptions } from '../io/url.js';
import { checkOptions } from '../options.js';
import { Hdf5File } from './file.js';

/**
 * Open an HDF5 file (the subset h5py and Keras write) from a URL, a `Blob`/`File`, bytes or any
 * {@link ByteSource}: the superblock and root group are read now, groups, attributes and datasets
 * when asked for, by range (one dataset of a remote file moves the metadata walked to it and its
 * bytes). `@npyts/core/node`'s `openHdf5` opens paths too.
 * @example
 * const f = await openHdf5('https://example.org/model.weights.h5');
 * const kernel = await f.get('layers/dense/vars/0');
 * if (kernel.kind === 'dataset') console.log(kernel.shape, await kernel.read());
 */
export async function openHdf5(input: NpySource, options: HttpOptions = {}): Promise<Hdf5File> {
  checkOptions('openHdf5', options, HTTP_KEY_SET);
  options.signal?.throwIfAborted();
  const source = await sourceOf(input, { ...options, tailBytes: 1, opener: 'openHdf5' });
  return openingOver(source, input, () => Hdf5File.open(source, options));
}
