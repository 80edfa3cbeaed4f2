/**
 * The one list of weight formats npyts reads, each told by its first bytes. `openWeights`, the CLI,
 * the tfjs adapter and the viewer ask {@link formatOf}; nothing else sniffs. Adding a format is one
 * folder exporting one {@link WeightFormatEntry}, one line in {@link weightFormats}, and its error
 * codes (docs/architecture.md, "Adding a weight format").
 */
import { NpyError, withWhere } from '../errors.js';
import type { ByteSource } from '../io/byte-source.js';
import { zipFormat } from './zip-format.js';
import { safetensorsFormat } from '../safetensors/format.js';
import { legacyTorchFormat } from '../torch/layout.js';
import { ggufFormat } from '../gguf/file.js';
import { hdf5Format, isKerasShardMap, kerasShardMap, type KerasShardMap } from '../keras/format.js';
import { hdf5Start } from '../hdf5/signature.js';
import type { Place } from './place.js';
import { ShardedWeights, parseShardIndex } from './sharded.js';
import { checkNoDuplicateKeys } from '../safetensors/strict-json.js';
import { isReferenceSet, ReferenceSetFile } from '../refs/reader.js';
import type { FormatOptions, TensorFile } from './tensor-file.js';

/**
 * One weight format: its name, how its first bytes are told (`sniff`), and how a source of it is
 * opened as a {@link TensorFile}. `place` is where the file's siblings are (null where it has none:
 * bytes, a Blob, a source given without `resolve` or `place`).
 * @example
 * const entry: WeightFormatEntry = { name: 'gguf', sniff: (b) => b[0] === 0x47 && …, open: (source) => GgufFile.open(source) };
 */
export interface WeightFormatEntry<Name extends string = string> {
  /** The format's name: `'zip'`, `'safetensors'`, `'index'`, `'npy'`, `'pickle'`, … (what `weightFileKind` answers). */
  readonly name: Name;
  /** Whether a file is of this format, from its first bytes (up to {@link SNIFF_BYTES}; fewer in a shorter file) and its size. */
  sniff(first: Uint8Array, size: number): boolean;
  /** The file over `source` as a tensor file; the caller closes `source` when this fails. */
  open(source: ByteSource, place: Place | null, options: FormatOptions): Promise<TensorFile>;
  /**
   * Whether a file of this format is a set of tensors for `openWeights` (absent: it is). `false` for a
   * format listed only to be refused with advice (a .npy is one array, a plain pickle holds objects);
   * for a container whose members tell, a test of its member names (a zip is a torch.save
   * checkpoint's tensors, or a .npz of arrays, which `openNpz` and the model adapters also read).
   */
  readonly tensors?: false | ((members: readonly string[]) => boolean);
}

/**
 * Bytes read to tell a format: every entry's `sniff` decides from these.
 * @example
 * const first = new Uint8Array(await file.slice(0, SNIFF_BYTES).arrayBuffer());
 */
export const SNIFF_BYTES = 64;

/** A .npy is one array, not a set of tensors: refused, naming the readers that take it. */
const npyFormat: WeightFormatEntry<'npy'> = {
  name: 'npy',
  tensors: false,
  sniff: (b) => b[0] === 0x93 && b[1] === 0x4e && b[2] === 0x55,
  open: async (source) => {
    throw new NpyError(
      'BAD_MAGIC',
      `${source.name ?? 'the weight file'} is a .npy file, one array: read it with loadNpy (or openNpy), or save weights together with saveNpz`,
    );
  },
};

/** A plain pickle (not PyTorch's legacy format, which {@link legacyTorchFormat} takes first): refused, naming the fix. */
const pickleFormat: WeightFormatEntry<'pickle'> = {
  name: 'pickle',
  tensors: false,
  sniff: (b) => b[0] === 0x80 && b[1] !== undefined && b[1] <= 5,
  open: async (source) => {
    throw new NpyError(
      'BAD_MAGIC',
      `${source.name ?? 'the weight file'} is a plain pickle, not a torch.save file (neither its zip format nor its legacy one), which npyts does not read; save the tensors with torch.save(state_dict, path), or as .safetensors`,
    );
  },
};

/** Keras's sharded map (`x.weights.json`, told by its group paths), checked; null for another index. */
function kerasShardMapOf(bytes: Uint8Array, name: string): KerasShardMap | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    return null; // parseShardIndex says what is wrong
  }
  if (!isKerasShardMap(parsed)) return null;
  checkNoDuplicateKeys(new TextDecoder().decode(bytes));
  return kerasShardMap(parsed, name);
}

/** A sharded set's JSON index (a safetensors/transformers index, or Keras's `x.weights.json`): its shards are found through the place and told by their own bytes. */
const indexFormat: WeightFormatEntry<'index'> = {
  name: 'index',
  sniff: (b) => {
    let i = 0;
    while (i < b.length && (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09)) i++;
    return b[i] === 0x7b;
  },
  open: async (source, place, options) => {
    const name = source.name ?? 'the index';
    if (!place) {
      throw new NpyError(
        'BAD_OPTION',
        `${name} is the index of a sharded set, whose shards are found beside it: open it by its path or URL, or pass { resolve: (name) => urlOrSourceOf(name) }`,
      );
    }
    const bytes = await source.read(0, source.size, { signal: options.signal });
    const keras = kerasShardMapOf(bytes, name);
    if (keras) {
      await source.close?.();
      const { KerasShardedWeights } = await import('../keras/sharded.js');
      return KerasShardedWeights.open(keras, place, name, options);
    }
    const index = parseShardIndex(bytes, name);
    await source.close?.();
    return ShardedWeights.open(index, place, (shard, o) => openTensorFile(shard, null, { ...options, ...o }), options);
  },
};

/** A reference set (kerchunk's JSON, `referencesOf`'s output): its arrays read from the files it names, found through the place. */
const referencesFormat: WeightFormatEntry<'references'> = {
  name: 'references',
  sniff: (b) => isReferenceSet(b),
  open: (source, place, options) => ReferenceSetFile.open(source, place, options),
};

/**
 * The weight formats, asked in this order. A format whose bytes start with a magic goes before
 * `safetensors`, whose test is the weakest (its 8th byte is 0).
 * @example
 * weightFormats.map((f) => f.name);   // ['zip', 'npy', 'gguf', 'hdf5', 'torch-legacy', 'safetensors', 'references', 'index', 'pickle']
 */
export const weightFormats: readonly [
  typeof zipFormat,
  typeof npyFormat,
  typeof ggufFormat,
  typeof hdf5Format,
  typeof legacyTorchFormat,
  typeof safetensorsFormat,
  typeof referencesFormat,
  typeof indexFormat,
  typeof pickleFormat,
] = [zipFormat, npyFormat, ggufFormat, hdf5Format, legacyTorchFormat, safetensorsFormat, referencesFormat, indexFormat, pickleFormat];

/** The names of the formats of {@link weightFormats}. */
export type WeightFormatName = (typeof weightFormats)[number]['name'];

/**
 * The format a file's first bytes (up to {@link SNIFF_BYTES}) say it is, or null for none.
 * @example
 * formatOf(firstBytes, file.size)?.name;   // 'safetensors'
 */
export function formatOf(first: Uint8Array, size: number): WeightFormatEntry<WeightFormatName> | null {
  return weightFormats.find((f) => f.sniff(first, size)) ?? null;
}

/**
 * The weight file over `source`, opened by the format its first bytes say; `place` is where its
 * siblings are. Errors name the file; the caller closes `source` when this fails.
 * @example
 * const file = await openTensorFile(blobSource(blob), null, {});
 */
export async function openTensorFile(source: ByteSource, place: Place | null, options: FormatOptions): Promise<TensorFile> {
  const name = source.name ?? 'the weight file';
  try {
    const first = await source.read(0, Math.min(SNIFF_BYTES, source.size), { signal: options.signal });
    let format = formatOf(first, source.size);
    // An HDF5 file may start with a user block (h5py's userblock_size=, zeros unless written), which
    // no first bytes tell, and whose zeros pass safetensors' weak test, though a safetensors header
    // starts with '{': there, its superblock is looked for where the HDF5 library looks.
    if (format === null || (format === safetensorsFormat && first[8] !== 0x7b)) {
      if ((await hdf5Start((at, n) => source.read(at, n, { signal: options.signal }), source.size)) !== null) format = hdf5Format;
    }
    if (!format) {
      throw new NpyError(
        'BAD_MAGIC',
        `${name} is not a weight file npyts reads: a .npz, a torch.save file, a .safetensors file, a GGUF file, an HDF5 (Keras) file, a sharded set's index or a reference set (${weightFormats.map((f) => f.name).join(', ')})`,
      );
    }
    return await format.open(source, place, options);
  } catch (e) {
    throw withWhere(e, { file: name });
  }
}
