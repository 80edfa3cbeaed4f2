/** @npyts/core/node — files, archives, regions and ragged arrays on disk (Node only). */
export * from './files.js';
export { nativeStatus, type NativeStatus } from './native.js';
export * from './ragged-node.js';
