/** HDF5 files on disk: opened by path, read by position. */
import { Hdf5File } from '../hdf5/file.js';
import { openingOver, sourceOf, type NpySource } from '../io/open.js';
import { HTTP_KEY_SET, type HttpOptions } from '../io/url.js';
import { checkOptions } from '../options.js';

/**
 * Open an HDF5 file (the subset h5py and Keras write) without blocking: a path or `file:` URL
 * (positional reads of an open file handle), an `http(s)` URL (range requests), a `Blob`, bytes or a
 * byte source. The superblock and root group are read now, groups, attributes and datasets when
 * asked for. Close it, or `await using` it.
 * @example
 * await using f = await openHdf5('model.weights.h5');
 * const kernel = await f.get('layers/dense/vars/0');
 * if (kernel.kind === 'dataset') console.log(kernel.shape, await kernel.read());
 */
export async function openHdf5(input: string | NpySource, options: HttpOptions = {}): Promise<Hdf5File> {
  checkOptions('openHdf5', options, HTTP_KEY_SET);
  options.signal?.throwIfAborted();
  const source = await sourceOf(input, { ...options, tailBytes: 1 }, 'openHdf5');
  return openingOver(source, input, () => Hdf5File.open(source, options));
}
