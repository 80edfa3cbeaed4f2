/**
 * HDF5 and `.keras` files in the weight format list, told by their first bytes or a zip's members;
 * the HDF5 reader and the Keras layouts (`keras/file.ts`) are loaded only when such a file is opened.
 */
import { withWhere } from '../errors.js';
import { isHdf5 } from '../hdf5/signature.js';
import type { ByteSource } from '../io/byte-source.js';
import type { WeightFormatEntry } from '../weights/formats.js';
import type { KerasFile } from './file.js';

/** A `.keras` zip's weights member. */
export const KERAS_WEIGHTS = 'model.weights.h5';

/**
 * Whether a zip's members are a `.keras` model's: `config.json` beside Keras's weights
 * (`model.weights.h5`, `model.weights.npz`, or a sharded set's `model.weights.json`).
 * @example
 * isKerasArchive(archive.names);   // true for a .keras
 */
export function isKerasArchive(names: readonly string[]): boolean {
  return names.includes('config.json') && names.some((n) => n === KERAS_WEIGHTS || n === 'model.weights.npz' || n === 'model.weights.json');
}

/**
 * HDF5 files as one of the weight formats: Keras's `.weights.h5` and legacy `.h5` (and any other
 * HDF5 file, its datasets by path), told by the HDF5 signature.
 * @example
 * hdf5Format.sniff(firstBytes, size);   // true for a .h5
 */
export const hdf5Format = {
  name: 'hdf5',
  /** Whether the file starts with the HDF5 signature. */
  sniff(first: Uint8Array, _size: number): boolean {
    return isHdf5(first);
  },
  /** Open an HDF5 file's weights over a source (an HDF5 file has no siblings: `place` is unused). */
  async open(source: ByteSource, _place?: unknown, options: { signal?: AbortSignal | undefined } = {}): Promise<KerasFile> {
    const { Hdf5File } = await import('../hdf5/file.js');
    const { KerasFile } = await import('./file.js');
    const hdf5 = await Hdf5File.open(source, options);
    try {
      return await KerasFile.fromHdf5(hdf5, undefined, options);
    } catch (e) {
      throw withWhere(e, { file: source.name ?? 'the HDF5 file' });
    }
  },
} as const satisfies WeightFormatEntry;
