/**
 * The zip entry of the weight format list: a .npz archive (its .npy members are its tensors), a
 * torch.save checkpoint (a zip of `<folder>/data.pkl` and storages) or a `.keras` model (`config.json`
 * beside `model.weights.h5`), told apart by the directory.
 */
import type { NdArray } from '../array/ndarray.js';
import { copyReason } from '../array/layout.js';
import { NpyError } from '../errors.js';
import { hasObject } from '../npy.js';
import { STORED } from '../npz/zip.js';
import { matchesDescr } from '../format/header.js';
import { TORCH_PICKLE, isTorchArchive } from '../torch/layout.js';
import { isKerasArchive } from '../keras/format.js';
import type { WeightFormatEntry } from './formats.js';
import type { TensorFile, TensorReadOptions } from './tensor-file.js';
import { NpzArchive } from '../npz/archive.js';

/**
 * A .npz archive as a tensor file: its .npy members are its tensors, by numpy's keys (other members,
 * such as a model.json, are not tensors). An archive in which one key names two members (`k` and
 * `k.npy`) is refused: a reader could take one's header and the other's data.
 * @example
 * const file = tensorsOfArchive(await openNpz('weights.npz'));
 */
export function tensorsOfArchive(archive: NpzArchive): TensorFile {
  const members = new Set(archive.entries.map((e) => e.name));
  const names = archive.entries.filter((e) => e.name.endsWith('.npy')).map((e) => e.name.slice(0, -4));
  const both = names.filter((k) => members.has(k));
  if (both.length) {
    throw new NpyError(
      'NAME_CLASH',
      `the archive has both ${both.map((k) => `'${k}' and '${k}.npy'`).join(', ')}: one key names two members (numpy would read '${both[0]}'); keep one of each`,
    );
  }
  const tensors = new Set(names);
  return {
    format: 'npz',
    names,
    metadata: {},
    keyOf: (name) => (tensors.has(name) ? name : name.endsWith('.npy') && tensors.has(name.slice(0, -4)) ? name.slice(0, -4) : null),
    info: async (name, { signal } = {}) => {
      const h = await archive.header(name, { signal });
      if (!archive.source.views) return { dtype: h.dtype, shape: h.shape };
      // Over a map, why get() copies a member instead of viewing its bytes (see bytesToData).
      const copied =
        archive.entry(name).method !== STORED
          ? 'it is a deflated member, inflated'
          : hasObject(h.dtype)
            ? 'it holds Python objects, unpickled'
            : copyReason(h.dtype, (await archive.dataOffset(name, { signal })) + h.dataOffset);
      return copied === null ? { dtype: h.dtype, shape: h.shape } : { dtype: h.dtype, shape: h.shape, copied };
    },
    get: async (name, { signal, expect }: TensorReadOptions = {}): Promise<NdArray> => {
      if (expect !== undefined) {
        const { dtype } = await archive.header(name, { signal });
        if (!matchesDescr(dtype, expect)) throw new NpyError('UNEXPECTED_DTYPE', `'${name}' is ${dtype.name}, not ${String(expect)}`, { member: name });
      }
      return archive.get(name, { signal });
    },
    getAll: ({ signal, onTensor } = {}) => archive.getEach(names, { signal }, onTensor),
    close: () => archive.close(),
  };
}

/**
 * The refusal of `{ mmap: 'r+' }` for a zip (a .npz, a torch.save file, a .keras): a write through a
 * view changes a stored member's bytes and leaves its CRC-32 (in its local header and the central
 * directory) stale, so the file is no longer a valid zip: numpy's `np.load` and Python's `zipfile`
 * (Keras's reader) refuse it with "Bad CRC-32". Recomputing the CRCs at close() cannot be certain,
 * since views outlive close() and a write through one still reaches the file.
 */
function writableZipMap(name: string, archive: NpzArchive): NpyError {
  const kind = isKerasArchive(archive.names) ? 'a .keras model' : isTorchArchive(archive) ? 'a torch.save file' : 'a .npz';
  return new NpyError(
    'BAD_OPTION',
    `${name} is ${kind}, a zip: { mmap: 'r+' } is refused for it, since a write through a view would change a member's bytes and leave its CRC-32 in the zip stale, and numpy and Python's zipfile then refuse the file ("Bad CRC-32"); map it with 'c' (writes stay in this process) and save the changed tensors as a new file, or keep the weights as .safetensors or .npy, whose 'r+' writes reach the file`,
  );
}

/**
 * A zip (its first bytes `PK`): a .npz, or a torch.save file (whose reader, with the unpickler, is
 * loaded only when a checkpoint is met: a bundle that reads only .npz or .safetensors holds none).
 * @example
 * zipFormat.sniff(firstBytes, size);   // true for a .npz or a .pt
 */
export const zipFormat: WeightFormatEntry<'zip'> = {
  name: 'zip',
  sniff: (b) => b[0] === 0x50 && b[1] === 0x4b,
  tensors: (members) => members.some((name) => TORCH_PICKLE.test(name)) || isKerasArchive(members),
  open: async (source, _place, options) => {
    const archive = await NpzArchive.open(source, options);
    try {
      if (options.mmap === 'r+') throw writableZipMap(source.name ?? 'the weight file', archive);
      if (isKerasArchive(archive.names)) {
        const { KerasFile } = await import('../keras/file.js');
        return await KerasFile.fromArchive(archive, options);
      }
      if (!isTorchArchive(archive)) {
        if (!archive.entries.some((e) => e.name.endsWith('.npy')) && archive.entries.length > 0) {
          // A zip of other things (a .keras of another layout, a model.json beside files): not an empty set of weights.
          const shown = archive.entries.slice(0, 10).map((e) => e.name);
          throw new NpyError(
            'BAD_MAGIC',
            `the zip holds no .npy member (${shown.join(', ')}${archive.entries.length > 10 ? ', …' : ''}): it is not a .npz, a torch.save file or a .keras model`,
          );
        }
        return tensorsOfArchive(archive);
      }
      const { TorchFile } = await import('../torch/file.js');
      return await TorchFile.fromArchive(archive, options);
    } catch (e) {
      await archive.close();
      throw e;
    }
  },
};
