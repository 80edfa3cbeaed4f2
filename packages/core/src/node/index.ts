/**
 * `@npyts/core/node` — files, archives, regions and ragged arrays on disk (Node only). As in `fs`,
 * the plain names return promises and keep the event loop free (and take `{ signal }`); the
 * `…Sync` names block.
 * @module @npyts/core/node
 */
export {
  readNpyHeader,
  readNpyHeaderSync,
  loadNpy,
  loadNpySync,
  saveNpy,
  saveNpySync,
  type LoadOptions,
  type LoadOptionsAsync,
  type SaveOptions,
  type SaveOptionsSync,
} from './npy-files.js';
export { checkRegularFile, readHeaderFromFd, type AsyncOptions } from './fd.js';
export type { PickleOptions } from '../pickle/options.js';
export { writeBeside, type ReplaceOptions } from './beside.js';
export * from './npz/index.js';
export { fileSource } from './sources.js';
export { folderStore, siblingPath, type FolderStoreOptions } from './place.js';
export {
  openSafetensors,
  openSafetensorsSync,
  saveSafetensors,
  saveSafetensorsSync,
  type SaveSafetensorsOptions,
  type SaveSafetensorsOptionsSync,
  type SafetensorsSource,
} from './safetensors.js';
export { SafetensorsFile } from '../safetensors/file.js';
export { saveGguf, saveGgufSync, type GgufSource, type SaveGgufOptions, type SaveGgufOptionsSync } from './gguf.js';
export { openHdf5 } from './hdf5.js';
export { openWeights, loadWeights } from './weights.js';
export { referencesOf } from './references.js';
export { WeightFile, type WeightFormat, type OpenWeightsOptions, type GetAllOptions } from '../weights/open.js';
export { NpzArchive } from '../npz/archive.js';
export {
  openNpyFile,
  openNpyFileSync,
  createNpy,
  createNpySync,
  writeRegion,
  writeRegionSync,
  appendNpy,
  appendNpySync,
  type NpyFileHandle,
  type NpyFileHandleSync,
  type CreateOptions,
  type OpenOptions,
  type AppendOptions,
} from './regions.js';
export { nativeStatus, type NativeStatus } from './native.js';
export { regionStats } from '../io/region.js';
export { MappedArray, mapNpy, type MapMode } from './mmap.js';
export * from './ragged/index.js';
export { mergeLora } from './lora.js';
export type { MergeLoraOptions, LoraAdapterParts } from '../lora/merge.js';
