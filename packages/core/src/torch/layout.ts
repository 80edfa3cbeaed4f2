/**
 * How a torch.save file is laid out in its zip, for code that tells one apart without reading it
 * (the reader itself, `torch/file.ts`, is loaded only when a checkpoint is met).
 */
import type { NpzArchive } from '../npz/archive.js';

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
