/**
 * One entry for every weight file npyts reads: `.npz` archives, `.safetensors` files and their
 * sharded sets, told apart by their bytes (not their names), from any source the archive reader takes.
 */
import { openingOver } from '../io/open.js';
import type { NdArray } from '../array/ndarray.js';
import { NpyError, unknownKey, withWhere } from '../errors.js';
import { getEvery } from '../io/settle.js';
import type { DescrInput } from '../format/descr-types.js';
import type { ByteSource } from '../io/byte-source.js';
import { resolveUrl, sourceOf, type NpySource } from '../io/open.js';
import type { HttpOptions } from '../io/url.js';
import { NpzArchive, type NpzOptions } from '../npz/archive.js';
import { matchesDescr } from '../format/header.js';
import type { Expecting } from '../npy.js';
import { SafetensorsFile, type TensorInfo, type TensorReadOptions } from '../safetensors/file.js';
import { ShardedSafetensors, parseShardIndex } from '../safetensors/sharded.js';
import type { TorchFile } from '../torch/file.js';
import { isTorchArchive } from '../torch/layout.js';

/** The kinds of weight file: a .npz, a .safetensors file, a sharded set of them. */
export type WeightFormat = 'npz' | 'safetensors' | 'safetensors-sharded' | 'torch';

/** What every kind of weight file does, as {@link WeightFile} exposes it. */
interface WeightReads {
  /** The name of the tensor a key names (an archive's `w.npy` is `w`), or null for none; a name of `names` by default. */
  keyOf?(name: string): string | null;
  info(name: string, signal?: AbortSignal): Promise<TensorInfo>;
  get(name: string, options: TensorReadOptions): Promise<NdArray>;
  getAll(signal?: AbortSignal): Promise<Map<string, NdArray>>;
  close(): Promise<void>;
}

/**
 * An open weight file of any kind: tensor `names`, each tensor's `info` (dtype and shape, read
 * without its data), `get`, `getAll`, and the file's `metadata`. Close it, or `await using` it.
 * @example
 * await using w = await openWeights('https://example.org/model.safetensors');
 * for (const name of w.names) console.log(name, (await w.info(name)).shape);
 */
export class WeightFile implements AsyncDisposable {
  /** @internal */
  constructor(
    /** Which kind of file this is. */
    readonly format: WeightFormat,
    /** Tensor names, in the file's order. */
    readonly names: readonly string[],
    /** What the file says besides its tensors (safetensors' `__metadata__`, a sharded index's `metadata`; empty for .npz). */
    readonly metadata: Readonly<Record<string, unknown>>,
    private readonly reads: WeightReads,
  ) {}

  has(name: string): boolean {
    return this.keyOf(name) !== null;
  }

  /** The tensor name a key names (a .npz member's `w.npy` is `w`), or null where it names none. */
  keyOf(name: string): string | null {
    if (this.reads.keyOf) return this.reads.keyOf(name);
    return this.names.includes(name) ? name : null;
  }

  /** A tensor's dtype and shape, without reading its data. */
  info(name: string, options: { signal?: AbortSignal | undefined } = {}): Promise<TensorInfo> {
    return this.reads.info(name, options.signal);
  }

  /**
   * One tensor: only its bytes are read.
   * @example
   * const w = await file.get('fc.weight', { expect: '<f4' });
   */
  async get<const S extends DescrInput>(name: string, options: TensorReadOptions & Expecting<S>): Promise<NdArray<S>>;
  async get(name: string, options?: TensorReadOptions): Promise<NdArray>;
  async get(name: string, options: TensorReadOptions = {}): Promise<NdArray> {
    return this.reads.get(name, options);
  }

  /** Every tensor by name, in the file's order. */
  getAll(options: { signal?: AbortSignal | undefined } = {}): Promise<Map<string, NdArray>> {
    return this.reads.getAll(options.signal);
  }

  close(): Promise<void> {
    return this.reads.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/**
 * A .npz archive as a weight file: its .npy members are its tensors, by numpy's keys (other members,
 * such as a model.json, are not tensors). An archive in which one key names two members (`k` and
 * `k.npy`) is refused: a reader could take one's header and the other's data.
 * @example
 * const weights = weightsOfArchive(await openNpz('weights.npz'));
 */
export function weightsOfArchive(archive: NpzArchive): WeightFile {
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
  return new WeightFile(
    'npz',
    names,
    {},
    {
      keyOf: (name) => (tensors.has(name) ? name : name.endsWith('.npy') && tensors.has(name.slice(0, -4)) ? name.slice(0, -4) : null),
      info: async (name, signal) => {
        const h = await archive.header(name, { signal });
        return { dtype: h.dtype, shape: h.shape };
      },
      get: async (name, { signal, expect }) => {
        if (expect !== undefined) {
          const { dtype } = await archive.header(name, { signal });
          if (!matchesDescr(dtype, expect)) throw new NpyError('UNEXPECTED_DTYPE', `'${name}' is ${dtype.name}, not ${String(expect)}`, { member: name });
        }
        return archive.get(name, { signal });
      },
      getAll: (signal) => archive.getEach(names, { signal }),
      close: () => archive.close(),
    },
  );
}

/** A .safetensors file or a sharded set as a weight file. */
function safetensorsWeights(file: SafetensorsFile | ShardedSafetensors): WeightFile {
  return new WeightFile(file instanceof SafetensorsFile ? 'safetensors' : 'safetensors-sharded', file.names, file.metadata, {
    info: async (name) => file.info(name),
    get: (name, options) => file.get(name, options),
    getAll: (signal) => file.getAll({ signal }),
    close: () => file.close(),
  });
}

/** A torch.save checkpoint as a weight file: its non-tensor values are its metadata. */
function torchWeights(file: TorchFile): WeightFile {
  return new WeightFile('torch', file.names, file.metadata, {
    info: async (name) => file.info(name),
    get: (name, options) => file.get(name, options),
    // Each tensor by get, so that one npyts cannot read does not hide the others (getEvery).
    getAll: (signal) => getEvery(file.names, 4, (name) => file.get(name, { signal })),
    close: () => file.close(),
  });
}

/** Options of {@link openWeights}: the archive's (for .npz) and, for URLs, the HTTP options. */
export interface OpenWeightsOptions extends NpzOptions, HttpOptions {
  /**
   * Only the tensors (and metadata) under this dotted path, with plain names: `{ root: 'model' }`
   * of a checkpoint `{'model': state_dict, 'optimizer': …}` gives `conv.weight`, not `model.conv.weight`.
   */
  root?: string;
}

/** The part of a weight file under `root`, named without it. */
function rooted(file: WeightFile, root: string): WeightFile {
  const prefix = `${root}.`;
  const names = file.names.filter((n) => n.startsWith(prefix)).map((n) => n.slice(prefix.length));
  if (names.length === 0) {
    const roots = [...new Set(file.names.map((n) => n.split('.')[0]!))];
    throw unknownKey(root, roots, 'the weight file (as a root)');
  }
  const metadata: Record<string, unknown> = Object.create(null);
  for (const [k, v] of Object.entries(file.metadata)) if (k.startsWith(prefix)) metadata[k.slice(prefix.length)] = v;
  return new WeightFile(file.format, names, metadata, {
    info: (name, signal) => file.info(prefix + name, { signal }),
    get: (name, options) => file.get(prefix + name, options),
    getAll: (signal) => getEvery(names, 4, (name) => file.get(prefix + name, { signal })),
    close: () => file.close(),
  });
}

/** Opens a shard named by a sharded index, given its file name. */
export type ShardOpener = (file: string, signal?: AbortSignal) => Promise<SafetensorsFile>;

/** What the first bytes of a file say it is (see {@link weightFileKind}). */
export type WeightFileKind = 'zip' | 'safetensors' | 'index' | 'npy' | 'pickle' | null;

/**
 * What a file's first bytes (64 are enough) say it is: a zip (a .npz or a torch.save file: see
 * `isTorchArchive`), a .safetensors file, a sharded index (JSON), a .npy, a pickle, or none of them.
 * The one place these rules live: `openWeights` and the CLI ask it.
 * @example
 * weightFileKind(firstBytes, file.size);   // 'safetensors'
 */
export function weightFileKind(first: Uint8Array, size: number): WeightFileKind {
  if (first[0] === 0x50 && first[1] === 0x4b) return 'zip';
  if (first[0] === 0x93 && first[1] === 0x4e && first[2] === 0x55) return 'npy';
  // A header length is below 2^56: its last byte is 0, which JSON text cannot hold.
  if (size >= 8 && first.length >= 8 && first[7] === 0) return 'safetensors';
  let i = 0;
  while (i < first.length && (first[i] === 0x20 || first[i] === 0x0a || first[i] === 0x0d || first[i] === 0x09)) i++;
  if (first[i] === 0x7b) return 'index';
  if (first[0] === 0x80 && first[1] !== undefined && first[1] <= 5) return 'pickle';
  return null;
}

/** The kind of weight file `first` says it is, or an error naming what it is not. */
function kindOf(first: Uint8Array, size: number, name: string): 'zip' | 'safetensors' | 'index' {
  const kind = weightFileKind(first, size);
  if (kind === 'zip' || kind === 'safetensors' || kind === 'index') return kind;
  if (kind === 'npy') {
    throw new NpyError('BAD_MAGIC', `${name} is a .npy file, one array: read it with loadNpy (or openNpy), or save weights together with saveNpz`);
  }
  if (kind === 'pickle') {
    throw new NpyError(
      'BAD_MAGIC',
      `${name} is a pickle: PyTorch's legacy format (before 1.6) or a plain pickle, which npyts does not read; save it again with torch.save(state_dict, path) in PyTorch ≥ 1.6 (or _use_new_zipfile_serialization=True), or as .safetensors`,
    );
  }
  throw new NpyError('BAD_MAGIC', `${name} is not a weight file npyts reads: a .npz, a torch.save file, a .safetensors file or a sharded safetensors index`);
}

/**
 * A shard opened over its source; the source is closed again when its header is refused.
 * @internal
 */
export async function openShardSource(source: ByteSource, signal?: AbortSignal): Promise<SafetensorsFile> {
  return openingOver(source, null, () => SafetensorsFile.open(source, { signal }));
}

/**
 * A weight file over `source`, of the kind its bytes say (see {@link openWeights}); `openShard`
 * opens the shards a sharded index names (none where the index was given as bytes).
 * @internal
 */
export async function openWeightsFrom(source: ByteSource, options: OpenWeightsOptions, openShard: ShardOpener | null): Promise<WeightFile> {
  const file = await openAnyWeights(source, options, openShard);
  if (options.root === undefined) return file;
  try {
    return rooted(file, options.root);
  } catch (e) {
    await file.close();
    throw withWhere(e, { file: source.name ?? 'the weight file' });
  }
}

/** {@link openWeightsFrom} before its root is applied. */
async function openAnyWeights(source: ByteSource, options: OpenWeightsOptions, openShard: ShardOpener | null): Promise<WeightFile> {
  const name = source.name ?? 'the weight file';
  try {
    const first = await source.read(0, Math.min(64, source.size), { signal: options.signal });
    switch (kindOf(first, source.size, name)) {
      case 'zip': {
        const archive = await NpzArchive.open(source, options);
        if (!isTorchArchive(archive)) return weightsOfArchive(archive);
        try {
          // Loaded when a checkpoint is met: the main entry's bundle holds no unpickler.
          const { TorchFile } = await import('../torch/file.js');
          return torchWeights(await TorchFile.fromArchive(archive, options));
        } catch (e) {
          await archive.close();
          throw e;
        }
      }
      case 'safetensors':
        return safetensorsWeights(await SafetensorsFile.open(source, options));
      case 'index': {
        if (!openShard) {
          throw new NpyError('BAD_OPTION', `${name} is a sharded safetensors index, whose shards are found beside it: open it by its path or URL`);
        }
        const bytes = await source.read(0, source.size, { signal: options.signal });
        const index = parseShardIndex(bytes, name);
        await source.close?.();
        return safetensorsWeights(await ShardedSafetensors.open(index, openShard, options.signal));
      }
    }
  } catch (e) {
    throw withWhere(e, { file: name });
  }
}

/**
 * Open a weight file of any kind from a URL (read by range: a remote file moves its header or
 * directory and the tensors asked for), a `Blob`/`File`, bytes, or any byte source: a `.npz`, a
 * `.safetensors` file, or a sharded set's `*.safetensors.index.json` (given by URL: its shards are
 * read from beside it). The kind is told by the bytes. `@npyts/core/node` adds paths.
 * @example
 * await using w = await openWeights('https://example.org/model.safetensors.index.json');
 * const embed = await w.get('model.embed_tokens.weight');
 */
export async function openWeights(input: NpySource, options: OpenWeightsOptions = {}): Promise<WeightFile> {
  options.signal?.throwIfAborted();
  const url = typeof input === 'string' || input instanceof URL ? resolveUrl(input) : null;
  // The first request of a URL learns the size with one byte: a .safetensors file is read from its
  // start, a zip's directory from its tail, each by the reads that need it.
  const source = await sourceOf(input, { ...options, tailBytes: 1 });
  const openShard: ShardOpener | null = url
    ? async (file, signal) => openShardSource(await sourceOf(new URL(file, url), { ...options, signal, tailBytes: 1 }), signal)
    : null;
  return openingOver(source, input, () => openWeightsFrom(source, options, openShard));
}
