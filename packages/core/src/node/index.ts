/**
 * `@npyts/core/node` — files, archives, regions and ragged arrays on disk (Node only).
 * @module @npyts/core/node
 */
export { readHeaderFromFd, readNpyHeader, loadNpy, saveNpy, type LoadOptions } from './npy-files.js';
export { writeBeside } from './fd.js';
export { zlibCodec, fileSource, loadNpz, saveNpz, streamNpzMember, openNpzMember, NpzArchive } from './npz-files.js';
export { openNpy, createNpy, writeRegion, appendNpy, regionStats, type NpyFileHandle, type CreateOptions } from './regions.js';
export { nativeStatus, type NativeStatus } from './native.js';
export * from './ragged.js';
