/**
 * HDF5 and `.keras` files in the weight format list, told by their first bytes or a zip's members;
 * the HDF5 reader and the Keras layouts (`keras/file.ts`) are loaded only when such a file is opened.
 */
import { NpyError, withWhere } from '../errors.js';
import { isHdf5 } from '../hdf5/signature.js';
import type { ByteSource } from '../io/byte-source.js';
import type { WeightFormatEntry } from '../weights/formats.js';
import { checkSiblingName } from '../store/key.js';
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
// Its type written out (JSR's rule: every exported symbol has an explicit type), `open` giving a KerasFile.
export const hdf5Format: {
  readonly name: 'hdf5';
  sniff(first: Uint8Array, _size: number): boolean;
  open(source: ByteSource, _place?: unknown, options?: { signal?: AbortSignal | undefined }): Promise<KerasFile>;
} = {
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

/** A Keras sharded map: each `vars` group's path (without its leading `/`) and the shards that hold its variables. */
export interface KerasShardMap {
  /** The map's `metadata` (Keras writes `total_size`). */
  readonly metadata: Readonly<Record<string, unknown>>;
  /** Group path (`layers/dense/vars`) → shard file names, in the map's order. */
  readonly groups: ReadonlyMap<string, readonly string[]>;
}

/**
 * Whether a parsed JSON index is Keras's sharded map rather than a safetensors/transformers index:
 * its `weight_map` keys are HDF5 group paths (`/vars`, `/layers/dense/vars`).
 * @example
 * isKerasShardMap(JSON.parse(text));   // true for a .weights.json Keras wrote
 */
export function isKerasShardMap(parsed: unknown): boolean {
  const map = (parsed as { weight_map?: unknown } | null)?.weight_map;
  if (map === null || typeof map !== 'object' || Array.isArray(map)) return false;
  const keys = Object.keys(map);
  return keys.length > 0 && keys.every((k) => k.startsWith('/') && (k === '/vars' || k.endsWith('/vars')));
}

/**
 * Check a Keras sharded map (parsed JSON, {@link isKerasShardMap}): each group's shards a string or a
 * list of strings, each a plain file name beside the map (`UNSAFE_PATH` otherwise).
 * @example
 * const map = kerasShardMap(JSON.parse(text), 'x.weights.json');
 */
export function kerasShardMap(parsed: unknown, name: string): KerasShardMap {
  const map = (parsed as { weight_map: Record<string, unknown> }).weight_map;
  const groups = new Map<string, readonly string[]>();
  for (const [group, files] of Object.entries(map)) {
    const list = typeof files === 'string' ? [files] : files;
    if (!Array.isArray(list) || list.length === 0 || !list.every((f): f is string => typeof f === 'string')) {
      throw new NpyError('BAD_KERAS', `${name}: the shards of '${group}' are not a file name or a list of file names`);
    }
    for (const f of list) checkSiblingName(f, `a shard of '${group}'`, name, true);
    groups.set(group.slice(1), list);
  }
  const metadata = (parsed as { metadata?: unknown }).metadata;
  return { groups, metadata: metadata !== null && typeof metadata === 'object' && !Array.isArray(metadata) ? (metadata as Record<string, unknown>) : {} };
}
