/**
 * One entry for every weight file npyts reads: `.npz` archives, `torch.save` files, `.safetensors`
 * files and sharded sets, told apart by their bytes (the format list, `formats.ts`), from any source
 * the archive reader takes; a file's siblings (shards) are found through its {@link Place}.
 */
import type { NdArray } from '../array/ndarray.js';
import { unknownKey, withWhere } from '../errors.js';
import { checkOptions, knownKeys, type MapMode } from '../options.js';
import { getEvery } from '../io/settle.js';
import { progressReporter, type OnProgress } from '../progress.js';
import type { DescrInput } from '../format/descr-types.js';
import type { ByteSource } from '../io/byte-source.js';
import { locate, openingOver, resolveUrl, sourceAt, sourceOf, type NpySource } from '../io/open.js';
import type { NpzArchive } from '../npz/archive.js';
import { tensorsOfArchive } from './zip-format.js';
import type { Expecting } from '../npy.js';
import { formatOf, openTensorFile, type WeightFormatName } from './formats.js';
import { hookStore, urlStore, type Place, type ResolveHook } from './place.js';
import { refuseBesideStore } from '../store/key.js';
import type { ReadStore } from '../store/types.js';
import { FORMAT_KEYS, type FormatOptions, type TensorFile, type TensorInfo, type TensorReadOptions } from './tensor-file.js';

/**
 * The kinds of weight file, as each reader names its files: a .npz, a .safetensors file, a torch.save
 * file, a GGUF, a Keras file (`'keras'`: a .keras or Keras 3's weights; `'hdf5'`: other HDF5), a
 * sharded set (of .safetensors shards, or of any other), or the name of a format added to the list.
 */
export type WeightFormat = 'npz' | 'safetensors' | 'safetensors-sharded' | 'torch' | 'gguf' | 'keras' | 'hdf5' | 'sharded' | (string & {});

/**
 * An open weight file of any kind: tensor `names`, each tensor's `info` (dtype and shape, read
 * without its data), `get`, `getAll`, and the file's `metadata`. Close it, or `await using` it.
 * @example
 * await using w = await openWeights('https://example.org/model.safetensors');
 * for (const name of w.names) console.log(name, (await w.info(name)).shape);
 */
export class WeightFile implements TensorFile, AsyncDisposable {
  /** What `getAll` reports to when it is given no `onProgress` of its own (`openWeights`' option). */
  private readonly onProgress: OnProgress | undefined;
  /** Which kind of file this is. */
  readonly format: WeightFormat;
  /** Tensor names, in the file's order. */
  readonly names: readonly string[];
  /** What the file says besides its tensors (safetensors' `__metadata__`, a sharded index's `metadata`; empty for .npz). */
  readonly metadata: Readonly<Record<string, unknown>>;
  /**
   * Each metadata key's value type where the format records one the value does not show (a GGUF's,
   * as gguf-py names them: `'FLOAT32'` or `'FLOAT64'` for a number); absent for other formats.
   */
  readonly metadataTypes: Readonly<Record<string, string>> | undefined;

  /**
   * A weight file over an opened tensor file of any format.
   * @example
   * const w = new WeightFile(tensorsOfArchive(archive));
   */
  constructor(
    private readonly file: TensorFile,
    options: { onProgress?: OnProgress | undefined } = {},
  ) {
    // A wrong onProgress is refused here, not at the first getAll.
    progressReporter(0, options.onProgress);
    this.onProgress = options.onProgress;
    this.format = file.format;
    this.names = file.names;
    this.metadata = file.metadata;
    this.metadataTypes = file.metadataTypes;
  }

  has(name: string): boolean {
    return this.keyOf(name) !== null;
  }

  /** The tensor name a key names (a .npz member's `w.npy` is `w`), or null where it names none. */
  keyOf(name: string): string | null {
    if (this.file.keyOf) return this.file.keyOf(name);
    return this.names.includes(name) ? name : null;
  }

  /** What the names holding the same data share (tied torch weights), or undefined: see {@link TensorFile.tieOf}. */
  tieOf(name: string): unknown {
    return this.file.tieOf?.(name);
  }

  /**
   * Say that `get` will be asked for each of `names` next (a model's load): a format that can reads
   * neighbouring tensors together then (a Keras file: one read of up to 16 MiB, each tensor a view of
   * it), instead of one read and one buffer per tensor. Nothing is read now. Formats that cannot do
   * nothing; `getAll` needs no such hint.
   * @example
   * w.readAhead(['layers/dense/vars/0', 'layers/dense/vars/1']);
   */
  readAhead(names: Iterable<string>): void {
    this.file.readAhead?.(names);
  }

  /** A tensor's dtype and shape, without reading its data. */
  async info(name: string, options: { signal?: AbortSignal | undefined } = {}): Promise<TensorInfo> {
    return this.file.info(name, options);
  }

  /**
   * One tensor: only its bytes are read.
   * @example
   * const w = await file.get('fc.weight', { expect: '<f4' });
   */
  async get<const S extends DescrInput>(name: string, options: TensorReadOptions & Expecting<S>): Promise<NdArray<S>>;
  async get(name: string, options?: TensorReadOptions): Promise<NdArray>;
  async get(name: string, options: TensorReadOptions = {}): Promise<NdArray> {
    return this.file.get(name, options);
  }

  /**
   * Every tensor by name, in the file's order. With `onProgress` (or the one `openWeights` was
   * given), it is told each tensor as it arrives: `bytes` of the `total` (the tensors' bytes as they
   * are given: dtype size × elements, so a deflated or quantized tensor counts what it becomes),
   * never going back, ending at the total. `signal` aborts the load: no tensor is read after it,
   * the reads in flight are waited for, and it rejects with the signal's reason (an `AbortError`).
   * @example
   * const all = await w.getAll({ onProgress: ({ bytes, total }) => bar.set(bytes / total), signal });
   */
  async getAll(options: GetAllOptions = {}): Promise<Map<string, NdArray>> {
    const onProgress = options.onProgress ?? this.onProgress;
    const { signal } = options;
    if (onProgress === undefined) return this.file.getAll({ signal });
    // The total from each tensor's dtype and shape (headers only: no tensor data is read for it).
    const sizes = await getEvery(this.names, 8, async (name) => {
      const { dtype, shape } = await this.file.info(name, { signal });
      return shape.reduce((a, b) => a * b, dtype.itemsize);
    });
    let total = 0;
    for (const size of sizes.values()) total += size;
    const report = progressReporter(total, onProgress);
    // The format's own getAll (its batching of small neighbours kept), told each tensor as it arrives.
    // An abort stops the workers at the next tensor, even where reads (views of a map) never look at the signal.
    const all = await this.file.getAll({
      signal,
      onTensor: (name) => {
        signal?.throwIfAborted();
        report.add(name, sizes.get(name) ?? 0);
      },
    });
    signal?.throwIfAborted();
    report.end();
    return all;
  }

  close(): Promise<void> {
    return this.file.close();
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
  return new WeightFile(tensorsOfArchive(archive));
}

/** Options of {@link WeightFile.getAll}. */
export interface GetAllOptions {
  /** Aborts the load (see {@link WeightFile.getAll}). */
  signal?: AbortSignal | undefined;
  /** Told the bytes read so far, of the total, and the tensor they belong to, as each tensor arrives. */
  onProgress?: OnProgress | undefined;
}

/** Options of {@link openWeights}: the archive's (for .npz) and, for URLs, the HTTP options. */
export interface OpenWeightsOptions extends FormatOptions {
  /**
   * The default `onProgress` of the file's `getAll` (and so of `loadWeights`): told the bytes of
   * tensor data read, of the total, as each tensor arrives. Opening reads no tensor data and reports
   * nothing; `get` of one tensor reports nothing either. See {@link WeightFile.getAll}.
   */
  onProgress?: OnProgress | undefined;
  /**
   * Where the file's siblings (a sharded set's shards) are, found by the name the index gives each:
   * a hook answering a URL (a presigned one: docs/larger-than-memory.md has the recipe), a `Blob` or a source,
   * or a promise of one. Every name is checked first (`UNSAFE_PATH` for one that leads out of the
   * index's folder); the answers are trusted, and `headers` go only to the index's own origin.
   * @example
   * await openWeights(presignedIndexUrl, { resolve: (name) => presign(`models/m/${name}`) });
   */
  resolve?: ResolveHook;
  /**
   * Where the siblings of a file given as bytes, a `Blob` or a source are: the URL of the file (or of
   * its folder, ending in `/`), or in Node a path. A URL or path input is its own place.
   */
  place?: string | URL;
  /**
   * Only the tensors (and metadata) under this dotted path, with plain names: `{ root: 'model' }`
   * of a checkpoint `{'model': state_dict, 'optimizer': …}` gives `conv.weight`, not `model.conv.weight`.
   */
  root?: string;
  /**
   * Map the file (and each shard of a set) into memory instead of reading it, as numpy's
   * `mmap_mode` (`'r'`, `'r+'`: writes reach the file, `'c'`: copy-on-write; `'r+'` is refused for
   * a zip, a .npz, torch.save or .keras file, whose CRC-32s its writes would leave stale): every tensor whose
   * bytes already have its layout is a typed-array view of one shared map, and the others are copied
   * (`info(name).copied` says why). Node, with @npyts/native, for a file given by path; elsewhere
   * (no addon, a URL, bytes, a browser) one warning (`NPYTS_NO_MMAP`, once a process) and the file
   * is read as without it. See docs/larger-than-memory.md, "Memory-mapped weight files".
   */
  mmap?: MapMode | undefined;
  /**
   * The store the file is in, given by its key (`openWeights('model.safetensors.index.json', { store })`):
   * a sharded set's shards are keys of the same store. `resolve` and `place` are shorthands for one
   * (a hook, a URL's folder) and do not apply beside it.
   */
  store?: ReadStore | undefined;
}

/**
 * Open a weight file given as a key of `options.store`: its siblings are keys of the same store.
 * Options that name another place (`place`, `resolve`, `mmap`: map a folder's files with
 * `folderStore(path, { mmap })`) are refused, as is a key that is not a string.
 * @internal
 */
export async function openWeightsIn(key: unknown, options: OpenWeightsOptions & { store: ReadStore }, entry = 'openWeights'): Promise<WeightFile> {
  refuseBesideStore(entry, options, ['place', 'resolve']);
  const where = locate(key, options, entry);
  const source = await sourceAt(where, options);
  return openingOver(source, key, () => openWeightsFrom(source, options, options.store));
}

/**
 * The options {@link OpenWeightsOptions} names, and `onProgress` (the loads' progress; see
 * `loadWeights`), which every weight entry takes.
 * @example
 * await openWeights(source, pickOptions(adapterOptions, OPEN_WEIGHTS_KEYS));
 */
export const OPEN_WEIGHTS_KEYS: ReadonlySet<string> = knownKeys<OpenWeightsOptions>({
  ...FORMAT_KEYS,
  resolve: true,
  place: true,
  root: true,
  mmap: true,
  store: true,
  onProgress: true,
});

/** The part of a weight file under `root`, named without it. */
function rooted(file: WeightFile, root: string, onProgress: OnProgress | undefined): WeightFile {
  const prefix = `${root}.`;
  const names = file.names.filter((n) => n.startsWith(prefix)).map((n) => n.slice(prefix.length));
  if (names.length === 0) {
    const roots = [...new Set(file.names.map((n) => n.split('.')[0]!))];
    throw unknownKey(root, roots, 'the weight file (as a root)');
  }
  const metadata: Record<string, unknown> = Object.create(null);
  for (const [k, v] of Object.entries(file.metadata)) if (k.startsWith(prefix)) metadata[k.slice(prefix.length)] = v;
  let metadataTypes: Record<string, string> | undefined;
  if (file.metadataTypes) {
    metadataTypes = Object.create(null) as Record<string, string>;
    for (const [k, v] of Object.entries(file.metadataTypes)) if (k.startsWith(prefix)) metadataTypes[k.slice(prefix.length)] = v;
  }
  return new WeightFile(
    {
      format: file.format,
      names,
      metadata,
      ...(metadataTypes ? { metadataTypes } : {}),
      info: (name, options) => file.info(prefix + name, options),
      get: (name, options) => file.get(prefix + name, options),
      getAll: ({ signal, onTensor } = {}) => getEvery(names, 4, (name) => file.get(prefix + name, { signal }), onTensor),
      close: () => file.close(),
    },
    { onProgress },
  );
}

/** What the first bytes of a file say it is (see {@link weightFileKind}): the name of its entry in the format list. */
export type WeightFileKind = WeightFormatName | null;

/**
 * What a file's first bytes (64 are enough) say it is: the name of its format in the format list
 * (`formatOf(first, size)?.name`): a zip (a .npz or a torch.save file: see `isTorchArchive`), a
 * .safetensors file, a sharded index (JSON), a .npy, a pickle, or none of them.
 * @example
 * weightFileKind(firstBytes, file.size);   // 'safetensors'
 */
export function weightFileKind(first: Uint8Array, size: number): WeightFileKind {
  return formatOf(first, size)?.name ?? null;
}

/**
 * The place of a file's siblings: the user's hook, the place given, or the file's own URL (none for
 * bytes, a Blob or a source given without one).
 * @internal
 */
export function placeOf(url: string | null, options: OpenWeightsOptions): Place | null {
  if (options.resolve) return hookStore(options.resolve, url ?? (options.place === undefined ? null : resolveUrl(options.place)));
  if (options.place !== undefined) return urlStore(resolveUrl(options.place), {}, url);
  return url === null ? null : urlStore(url);
}

/**
 * A weight file over `source`, of the kind its bytes say (see {@link openWeights}); `place` is where
 * its siblings are (a sharded index's shards; null where it has none).
 * @internal
 */
export async function openWeightsFrom(source: ByteSource, options: OpenWeightsOptions, place: Place | null): Promise<WeightFile> {
  const file = new WeightFile(await openTensorFile(source, place, options), { onProgress: options.onProgress });
  if (options.root === undefined) return file;
  try {
    return rooted(file, options.root, options.onProgress);
  } catch (e) {
    await file.close();
    throw withWhere(e, { file: source.name ?? 'the weight file' });
  }
}

/**
 * Open a weight file of any kind from a URL (read by range: a remote file moves its header or
 * directory and the tensors asked for), a `Blob`/`File`, bytes, or any byte source: a `.npz`, a
 * `torch.save` file, a `.safetensors` file, or a sharded set's index (`*.safetensors.index.json`,
 * `pytorch_model.bin.index.json`: given by URL, its shards are read from beside it; given otherwise,
 * from `place` or through `resolve`). The kind is told by the bytes. `@npyts/core/node` adds paths.
 * @example
 * await using w = await openWeights('https://example.org/model.safetensors.index.json');
 * const embed = await w.get('model.embed_tokens.weight');
 */
export async function openWeights(input: NpySource, options: OpenWeightsOptions = {}): Promise<WeightFile> {
  checkOptions('openWeights', options, OPEN_WEIGHTS_KEYS);
  options.signal?.throwIfAborted();
  progressReporter(0, options.onProgress);
  if (options.store !== undefined) return openWeightsIn(input, { ...options, store: options.store });
  const url = typeof input === 'string' || input instanceof URL ? resolveUrl(input) : null;
  const place = placeOf(url, options);
  // The first request of a URL learns the size with one byte: a .safetensors file is read from its
  // start, a zip's directory from its tail, each by the reads that need it.
  const source = await sourceOf(input, { ...options, tailBytes: 1 }, 'openWeights');
  return openingOver(source, input, () => openWeightsFrom(source, options, place));
}
