/**
 * How a torch.save file is laid out in its zip, for code that tells one apart without reading it
 * (the reader itself, `torch/file.ts`, is loaded only when a checkpoint is met).
 */
import type { NpzArchive } from '../npz/archive.js';
import type { WeightFormatEntry } from '../weights/formats.js';

/** The checkpoint's pickle: `data.pkl` in the one record folder. */
export const TORCH_PICKLE = /^[^/]+\/data\.pkl$/;

/**
 * Whether an opened zip is a torch.save checkpoint (its `<folder>/data.pkl`) rather than a .npz.
 * @example
 * isTorchArchive(await openNpz('model.pt'));   // true
 */
export function isTorchArchive(archive: Pick<NpzArchive, 'entries'>): boolean {
  return archive.entries.some((e) => TORCH_PICKLE.test(e.name));
}

/** The legacy format's magic number, 0x1950a86a20f9469cfc6c, as its first pickle holds it: LONG1 of 10 bytes. */
const LEGACY_MAGIC = [0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19];

/**
 * Whether a file's first bytes (32 are enough) are PyTorch's legacy format (before 1.6, or saved with
 * `_use_new_zipfile_serialization=False`): a pickle of its magic number, then the checkpoint's pickles.
 * @example
 * isLegacyTorchFile(await source.read(0, 32));   // true for an old pytorch_model.bin
 */
export function isLegacyTorchFile(first: Uint8Array): boolean {
  if (first[0] !== 0x80 || first[1] === undefined || first[1] < 2 || first[1] > 5) return false;
  // Protocol 4 and 5 put a FRAME (9 bytes) before the number.
  for (const at of [2, 11]) if (LEGACY_MAGIC.every((b, k) => first[at + k] === b)) return true;
  return false;
}

/**
 * PyTorch's legacy format in the weight format list (its reader, with the unpickler, loaded only
 * when such a file is met).
 * @example
 * legacyTorchFormat.sniff(firstBytes, size);   // true for an old pytorch_model.bin
 */
export const legacyTorchFormat: WeightFormatEntry<'torch-legacy'> = {
  name: 'torch-legacy',
  sniff: (first) => isLegacyTorchFile(first),
  open: async (source, _place, options) => {
    const { TorchFile } = await import('./file.js');
    return TorchFile.fromLegacy(source, options);
  },
};
