/**
 * Keras weight files as tensor files: Keras 3's `.weights.h5` (datasets by path, such as
 * `layers/dense/vars/0`; a `vars` group's `name` attribute is its layer's name), legacy `.h5` files
 * (`model.save('m.h5')`, Keras 2's `save_weights`: `layer_names` and `weight_names` attributes) and
 * `.keras` zips (`config.json`, `metadata.json` and `model.weights.h5`, read by range through the
 * zip). Any other HDF5 file lists its datasets by path. Weights Keras stores as bfloat16 (uint16 or
 * opaque bytes with the attribute `dtype='bfloat16'`) read as bfloat16.
 */
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../array/json.js';
import { copyReason } from '../array/layout.js';
import { putOwn } from '../array/safe-object.js';
import type { NdArray } from '../array/ndarray.js';
import { NpyError, unknownKey, withWhere } from '../errors.js';
import type { DescrInput } from '../format/descr-types.js';
import { type DType, parseDescr } from '../format/dtype.js';
import { matchesDescr } from '../format/header.js';
import type { ByteSource, ReadOptions } from '../io/byte-source.js';
import { bytesSource } from '../io/byte-source.js';
import { getEvery, mapInParallel } from '../io/settle.js';
import type { NpzArchive } from '../npz/archive.js';
import type { Expecting } from '../npy.js';
import type { GetAllReadOptions, TensorFile, TensorInfo, TensorReadOptions } from '../weights/tensor-file.js';
import { bad } from '../hdf5/bytes.js';
import { type Hdf5Dataset, Hdf5File, type Hdf5Group } from '../hdf5/file.js';
import { KERAS_WEIGHTS } from './format.js';

/** Tensors read at once by getAll. */
const TENSORS_IN_FLIGHT = 4;

/**
 * What a Keras file says besides its weights: the model's configuration (`config.json` of a
 * `.keras`, the `model_config` attribute of a legacy `.h5`; null for a weights-only file), a
 * `.keras`'s `metadata.json`, and each layer's name by the group that holds its weights.
 */
export type KerasMetadata = {
  /** The model's configuration, parsed (what `keras.saving.deserialize_keras_object` reads); null where the file has none. */
  readonly config: Record<string, unknown> | null;
  /** A `.keras` file's `metadata.json` (`keras_version`, `date_saved`), parsed; null elsewhere. */
  readonly metadata: Record<string, unknown> | null;
  /**
   * Each layer's name by the group that holds its weights: a `.weights.h5`'s `vars` groups
   * (`'layers/dense/vars': 'dense'`: the group's `name` attribute), a legacy file's layer groups
   * (`'model_weights/dense': 'dense'`).
   */
  readonly layers: Readonly<Record<string, string>>;
  /** The `keras_version` and `backend` attributes of a legacy `.h5`, where it has them. */
  readonly kerasVersion?: string;
  readonly backend?: string;
};

/**
 * Where the HDF5 file's reads are views of a map (`openWeights(path, { mmap })`): `base`, the
 * file's first byte in the map (a `.keras`'s stored member starts inside the zip), or `all`, why
 * every dataset is copied (a deflated member is inflated). Null where nothing is mapped.
 */
type Mapping = { readonly base: number } | { readonly all: string } | null;

/** Most bytes one read of neighbouring datasets takes ({@link KerasFile.readAhead}): progress moves at least this often. */
const AHEAD_BYTES = 16 << 20;
/** Most bytes between two datasets read together (h5py puts each dataset's object header, a few KiB, between them). */
const AHEAD_GAP = 64 << 10;

/** Neighbouring datasets read with one read, when the first of them is asked for: the bytes kept until each is taken. */
interface AheadRun {
  readonly start: number;
  readonly length: number;
  bytes: Promise<Uint8Array | null> | null;
}

/** One tensor: its dataset, its shape, and the dtype it is read as. */
interface Entry {
  readonly dataset: Hdf5Dataset;
  readonly shape: readonly number[];
  readonly as: string | undefined;
}

/** A dataset's shape as a tensor's; a dataset with no value (h5py's `Empty`) is no tensor: `BAD_HDF5`. */
function tensorShape(d: Hdf5Dataset, what: string): readonly number[] {
  if (d.shape === null) throw bad(`${what} ${d.path} has no value (a null dataspace: h5py's Empty), not a tensor`);
  return d.shape;
}

/**
 * An open Keras weight file (or any HDF5 file, its datasets by path): `names` in Keras's order,
 * `info`, `get` (by range: one weight of a remote file moves its bytes and the metadata read when
 * the file was opened), and `metadata` ({@link KerasMetadata}).
 * @example
 * const f = await openWeights('model.keras');
 * f.names;                         // ['layers/dense/vars/0', 'layers/dense/vars/1', …]
 * f.metadata.layers;               // { 'layers/dense/vars': 'dense', … }
 */
export class KerasFile implements TensorFile, AsyncDisposable {
  /** `'keras'` for a file of Keras's layouts, `'hdf5'` for another HDF5 file. */
  readonly format: 'keras' | 'hdf5';
  readonly names: readonly string[];
  readonly metadata: KerasMetadata;
  private readonly entries: ReadonlyMap<string, Entry>;
  /** The datasets {@link readAhead} was told of, each with the run it is read in (until `get` takes it). */
  private readonly ahead = new Map<Hdf5Dataset, AheadRun>();
  private closed = false;

  private constructor(
    readonly hdf5: Hdf5File,
    format: 'keras' | 'hdf5',
    entries: Map<string, Entry>,
    metadata: KerasMetadata,
    private readonly release: () => Promise<void>,
    private readonly mapping: Mapping,
  ) {
    this.format = format;
    this.entries = entries;
    this.names = [...entries.keys()];
    this.metadata = metadata;
  }

  /** The model's configuration (see {@link KerasMetadata.config}). */
  get config(): Record<string, unknown> | null {
    return this.metadata.config;
  }

  /**
   * An HDF5 file's weights: every dataset is walked now (metadata only: headers and attributes),
   * each tensor read when asked for. `extra` is a `.keras`'s JSON members; `release` closes what
   * the file was read through; `mapping` says where its bytes are in a map (by default: at 0 where
   * the file's source hands out views).
   */
  static async fromHdf5(
    hdf5: Hdf5File,
    extra: { config: Record<string, unknown> | null; metadata: Record<string, unknown> | null } = { config: null, metadata: null },
    options: {
      signal?: AbortSignal | undefined;
      release?: () => Promise<void>;
      /** @internal Where the file's bytes are in a map (fromArchive's member); by default at 0 where the source hands out views. */
      mapping?: Mapping;
    } = {},
  ): Promise<KerasFile> {
    const { signal } = options;
    const entries = new Map<string, Entry>();
    const layers: Record<string, string> = {};
    const rootAttrs = await hdf5.root.attrs({ signal });
    const rootNames = await hdf5.root.children({ signal });
    let legacyRoot: Hdf5Group | null = null;
    let prefix = '';
    if (rootNames.includes('model_weights')) {
      const g = await hdf5.root.get('model_weights', { signal });
      if (g.kind === 'group' && Object.hasOwn(await g.attrs({ signal }), 'layer_names')) {
        legacyRoot = g;
        prefix = 'model_weights/';
      }
    } else if (Object.hasOwn(rootAttrs, 'layer_names')) {
      legacyRoot = hdf5.root;
    }
    let format: 'keras' | 'hdf5' = 'hdf5';
    let config = extra.config;
    const more: { kerasVersion?: string; backend?: string } = {};
    if (legacyRoot) {
      format = 'keras';
      if (config === null && typeof rootAttrs.model_config === 'string') config = parseJson(rootAttrs.model_config, 'the model_config attribute');
      // A legacy file records no dtype of its own for bfloat16 weights (h5py stores them as opaque
      // 2-byte values): the layers' dtype policies in the model's config say which they are.
      const bfloat16Layers = layersWithPolicy(config, 'bfloat16');
      const attrs = await legacyRoot.attrs({ signal });
      const layerNames = stringsOf(attrs.layer_names, `the layer_names attribute of /${prefix}`);
      for (const layer of layerNames) {
        const g = await legacyRoot.get(layer, { signal });
        if (g.kind !== 'group') throw bad(`layer '${layer}' of layer_names is a dataset at ${g.path}, not a group of weights`);
        putOwn(layers, `${prefix}${layer}`, layer);
        const weightNames = stringsOf((await g.attrs({ signal })).weight_names, `the weight_names attribute of ${g.path}`);
        for (const w of weightNames) {
          const d = await g.get(w, { signal });
          if (d.kind !== 'dataset') throw bad(`weight '${w}' of ${g.path} is a group, not a dataset`);
          const name = `${prefix}${layer}/${w}`;
          if (entries.has(name)) throw bad(`weight '${name}' is named twice by weight_names`);
          const byPolicy = d.dtype.kind === 'V' && d.dtype.itemsize === 2 && [layer, ...w.split('/')].some((n) => bfloat16Layers.has(n));
          entries.set(name, { dataset: d, shape: tensorShape(d, `weight '${w}' of ${g.path}:`), as: byPolicy ? 'bfloat16' : await bfloat16Of(d, signal) });
        }
      }
      const top = legacyRoot === hdf5.root ? rootAttrs : { ...rootAttrs, ...(await legacyRoot.attrs({ signal })) };
      if (typeof top.keras_version === 'string') more.kerasVersion = top.keras_version;
      if (typeof top.backend === 'string') more.backend = top.backend;
    } else {
      const found = await walk(hdf5.root, { address: hdf5.root.address, up: null }, new Set([hdf5.root.address]), signal);
      for (const [name, entry] of found.entries) entries.set(name, entry);
      for (const [group, layer] of found.layers) putOwn(layers, group, layer);
      if (rootNames.includes('layers') || Object.keys(layers).length) format = 'keras';
    }
    const mapping = options.mapping !== undefined ? options.mapping : hdf5.source.views ? { base: 0 } : null;
    return new KerasFile(hdf5, format, entries, { config, metadata: extra.metadata, layers, ...more }, options.release ?? (() => hdf5.close()), mapping);
  }

  /**
   * A `.keras` zip's model: `config.json`, `metadata.json` and `model.weights.h5` (a stored member
   * is read by range; a deflated one is read whole). A `.keras` whose weights are
   * `model.weights.npz` is refused: Keras writes them as pickled `Variable` objects that Keras
   * itself cannot load (`np.load(allow_pickle=False)`).
   */
  static async fromArchive(archive: NpzArchive, options: { signal?: AbortSignal | undefined } = {}): Promise<KerasFile> {
    const { signal } = options;
    // A stored member is read by range (its local header, then its bytes), so a remote .keras moves its JSON, not 64 KiB around it.
    const member = async (name: string): Promise<ByteSource> =>
      archive.entry(name).method === 0 ? archive.storedMember(name, { signal }) : bytesSource(await archive.bytes(name, { signal }), name);
    const json = async (name: string): Promise<Record<string, unknown> | null> => {
      if (!archive.has(name)) return null;
      const m = await member(name);
      return parseJson(new TextDecoder().decode(await m.read(0, m.size, { signal })), name);
    };
    const config = await json('config.json');
    const metadata = await json('metadata.json');
    if (!archive.has(KERAS_WEIGHTS)) {
      if (archive.has('model.weights.npz')) {
        throw new NpyError(
          'KERAS_UNSUPPORTED',
          "the .keras file's weights are model.weights.npz, which Keras writes as pickled Variable objects and cannot load itself (np.load with allow_pickle=False refuses them): save the model with the default weights format (model.weights.h5)",
        );
      }
      if (archive.has('model.weights.json')) {
        throw new NpyError(
          'KERAS_UNSUPPORTED',
          "the .keras file holds sharded weights (model.weights.json), which Keras 3.15 itself neither writes nor loads (load_model expects model.weights.h5 or model.weights.npz): save the model with keras.saving.save_model, and sharded weights beside it with model.save_weights('x.weights.json', max_shard_size=...)",
        );
      }
      throw new NpyError('BAD_KERAS', `the .keras file has no ${KERAS_WEIGHTS}; it has ${archive.names.join(', ') || 'no member'}`);
    }
    const source = await member(KERAS_WEIGHTS);
    try {
      const hdf5 = await Hdf5File.open(source, { signal });
      const mapping: Mapping = !archive.source.views
        ? null
        : archive.entry(KERAS_WEIGHTS).method === 0
          ? { base: await archive.dataOffset(KERAS_WEIGHTS, { signal }) }
          : { all: `${KERAS_WEIGHTS} is a deflated member of the .keras file; it is inflated` };
      return await KerasFile.fromHdf5(hdf5, { config, metadata }, { signal, release: () => archive.close(), mapping });
    } catch (e) {
      throw withWhere(e, { member: KERAS_WEIGHTS });
    }
  }

  /** A tensor's dtype and shape, from its dataset's header (nothing is read); over a map, why `get` copies it. */
  info(name: string, _options: { signal?: AbortSignal | undefined } = {}): TensorInfo {
    const { dataset, shape, as } = this.entry(name);
    const dtype = as === undefined ? dataset.dtype : parseDescr(as);
    const copied = this.copyReason(dataset, dtype);
    return copied === null ? { dtype, shape } : { dtype, shape, copied };
  }

  /** Over a map, why get() copies a dataset instead of viewing its bytes; null where it views them (the rule of bytesToData). */
  private copyReason(dataset: Hdf5Dataset, dtype: DType): string | null {
    const m = this.mapping;
    if (m === null) return null;
    if ('all' in m) return m.all;
    const at = dataset.dataOffset;
    if (dataset.byteLength === 0) return null; // nothing to view or copy
    if (at === null) return 'it is a compact dataset (its bytes are in its object header, read as a copy)';
    if (at < 0) return null; // no storage allocated: get() refuses it
    return copyReason(dtype, m.base + at);
  }

  /**
   * One tensor, read by range (only its bytes move).
   * @example
   * const kernel = await f.get('layers/dense/vars/0', { expect: '<f4' });
   */
  async get<const S extends DescrInput>(name: string, options: TensorReadOptions & Expecting<S>): Promise<NdArray<S>>;
  async get(name: string, options?: TensorReadOptions): Promise<NdArray>;
  async get(name: string, options: TensorReadOptions = {}): Promise<NdArray> {
    this.checkOpen();
    const { dataset, as } = this.entry(name);
    const dtype = this.info(name).dtype;
    if (options.expect !== undefined && !matchesDescr(dtype, options.expect)) {
      throw withWhere(new NpyError('UNEXPECTED_DTYPE', `tensor '${name}' is ${dtype.name}, not ${String(options.expect)}`), { file: this.fileName });
    }
    const array = await dataset.read({ signal: options.signal, ...(as === undefined ? {} : { as }) }, await this.held(dataset, options.signal));
    // Never null: a dataset with no value is not made a tensor (tensorShape, walk).
    if (array === null) throw withWhere(bad(`tensor '${name}' (${dataset.path}) has no value`), { file: this.fileName });
    return array;
  }

  /** Every tensor by name, in Keras's order, a few read at once (neighbours with one read: {@link readAhead}). */
  async getAll({ signal, onTensor }: GetAllReadOptions = {}): Promise<Map<string, NdArray>> {
    this.readAhead(this.names);
    return getEvery(this.names, TENSORS_IN_FLIGHT, (name) => this.get(name, { signal }), onTensor);
  }

  /**
   * Told that `get` will be asked for each of `names` (a model's load): neighbouring datasets are then
   * read together, with one read of up to 16 MiB when the first of them is asked for, and each tensor
   * is a view of that read (a copy where unaligned) instead of a read and a buffer of its own. Nothing
   * is read now; the bytes of a run are held until each of its tensors is taken, or the file closed.
   * Over a map (`mmap`) every tensor is a view already: nothing changes.
   */
  readAhead(names: Iterable<string>): void {
    this.checkOpen();
    if (this.mapping !== null) return;
    const size = this.hdf5.source.size;
    const wanted: { dataset: Hdf5Dataset; at: number; end: number }[] = [];
    for (const name of names) {
      const dataset = this.entries.get(name)?.dataset;
      const at = dataset?.dataOffset;
      // Compact datasets (in their header), unallocated or past-the-end ones: get reads (or refuses) them alone.
      if (dataset === undefined || at === null || at === undefined || at < 0 || this.ahead.has(dataset)) continue;
      const end = at + dataset.byteLength;
      if (dataset.byteLength > 0 && end <= size) wanted.push({ dataset, at, end });
    }
    wanted.sort((a, b) => a.at - b.at);
    let run: { start: number; end: number; members: Hdf5Dataset[] } | null = null;
    const close = (): void => {
      if (run === null) return;
      const r: AheadRun = { start: run.start, length: run.end - run.start, bytes: null };
      for (const d of run.members) this.ahead.set(d, r);
    };
    for (const w of wanted) {
      // Overlapping datasets (a malformed file) are read alone, as get reads them.
      if (run !== null && w.at >= run.end && w.at - run.end <= AHEAD_GAP && w.end - run.start <= AHEAD_BYTES) {
        run.end = w.end;
        run.members.push(w.dataset);
      } else if (run === null || w.at >= run.end) {
        close();
        run = { start: w.at, end: w.end, members: [w.dataset] };
      }
    }
    close();
  }

  /** The bytes of `dataset` from its {@link readAhead} run (read now if it is the first of it asked for), or undefined. */
  private async held(dataset: Hdf5Dataset, signal: AbortSignal | undefined): Promise<Uint8Array | undefined> {
    const run = this.ahead.get(dataset);
    if (run === undefined) return undefined;
    this.ahead.delete(dataset);
    run.bytes ??= readRun(this.hdf5.source, run, signal).catch(() => null);
    const bytes = await run.bytes;
    const from = (dataset.dataOffset ?? 0) - run.start;
    // A run that failed or came back short: the dataset is read alone, and refused by its own read where it must be.
    if (bytes === null || from + dataset.byteLength > bytes.length) return undefined;
    return bytes.subarray(from, from + dataset.byteLength);
  }

  /** The name of the layer whose weights a tensor is (its `vars` group's `name`, a legacy file's layer), or null. */
  layerOf(name: string): string | null {
    this.entry(name);
    let best: string | null = null;
    for (const group of Object.keys(this.metadata.layers)) {
      if (name.startsWith(`${group}/`) && (best === null || group.length > best.length)) best = group;
    }
    return best === null ? null : this.metadata.layers[best]!;
  }

  /** Release the file; later reads fail with CLOSED. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.ahead.clear();
    await this.hdf5.close();
    await this.release();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  private entry(name: string): Entry {
    const e = this.entries.get(name);
    if (!e) throw withWhere(unknownKey(name, this.names, 'the Keras file'), { file: this.fileName });
    return e;
  }

  private get fileName(): string {
    return this.hdf5.source.name ?? 'the Keras file';
  }

  private checkOpen(): void {
    if (this.closed) throw new NpyError('CLOSED', `${this.fileName} is closed`);
  }
}

/**
 * One read of a {@link KerasFile.readAhead} run, into memory of its own placed so that each byte lies at
 * the same offset modulo 8 as in the file (a dataset aligned in the file is viewed, not copied).
 */
async function readRun(source: ByteSource, run: AheadRun, signal: AbortSignal | undefined): Promise<Uint8Array> {
  const pad = run.start % 8;
  const into = new Uint8Array(new ArrayBuffer(pad + run.length), pad, run.length);
  const readInto = source.readInto?.bind(source) as ((target: Uint8Array, offset: number, options?: ReadOptions) => number | Promise<number>) | undefined;
  if (readInto) return into.subarray(0, await readInto(into, run.start, { signal }));
  const got = await source.read(run.start, run.length, { signal });
  into.set(got);
  return into.subarray(0, got.length);
}

/** Members of one group opened at once by {@link walk} (a local file's reads wait on each other less; a remote one's overlap). */
const WALK_IN_FLIGHT = 8;

/** The groups from the root to one being walked (innermost first), to tell a cycle from a second path. */
interface Ancestry {
  readonly address: number;
  readonly up: Ancestry | null;
}

/** What {@link walk} finds below a group, in h5py's order: its tensors, and the layer names of its `vars` groups. */
interface Found {
  readonly entries: [string, Entry][];
  readonly layers: [string, string][];
}

/**
 * Every dataset below `group` (depth-first, in h5py's order), each group once: a cycle or a second path
 * to one is `BAD_HDF5`. A group's members are opened a few at a time, and what is found is put in order.
 */
async function walk(group: Hdf5Group, ancestry: Ancestry, seen: Set<number>, signal: AbortSignal | undefined): Promise<Found> {
  const found: Found[] = await mapInParallel(await group.children({ signal }), WALK_IN_FLIGHT, async (name): Promise<Found> => {
    const child = await group.get(name, { signal });
    if (child.kind === 'dataset') {
      // A dataset with no value (h5py's Empty, a null dataspace) holds no tensor: it is not listed.
      if (child.shape === null) return { entries: [], layers: [] };
      return { entries: [[child.path.slice(1), { dataset: child, shape: child.shape, as: await bfloat16Of(child, signal) }]], layers: [] };
    }
    if (seen.has(child.address)) {
      let up: Ancestry | null = ancestry;
      while (up !== null && up.address !== child.address) up = up.up;
      if (up !== null) throw bad(`group ${child.path} is its own ancestor (its header is at byte ${child.address}): a cycle`);
      throw bad(`group ${child.path} is reached by a second path (its header is at byte ${child.address})`);
    }
    seen.add(child.address);
    const layers: [string, string][] = [];
    if (name === 'vars') {
      const layer = (await child.attrs({ signal })).name;
      if (typeof layer === 'string') layers.push([child.path.slice(1), layer]);
    }
    const below = await walk(child, { address: child.address, up: ancestry }, seen, signal);
    return { entries: below.entries, layers: [...layers, ...below.layers] };
  });
  return { entries: found.flatMap((f) => f.entries), layers: found.flatMap((f) => f.layers) };
}

/**
 * `'bfloat16'` where Keras stored a dataset's bfloat16 values as 2-byte integers or opaque bytes (its
 * attribute `dtype`); a dataset of other values is read as h5py reads it, whatever the attribute says.
 */
async function bfloat16Of(d: Hdf5Dataset, signal: AbortSignal | undefined): Promise<string | undefined> {
  if (d.dtype.itemsize !== 2 || !['u', 'i', 'V'].includes(d.dtype.kind)) return undefined;
  const attrs = await d.attrs({ signal });
  return attrs.dtype === 'bfloat16' ? 'bfloat16' : undefined;
}

/**
 * The names of the layers of a Keras model config (at any depth: nested models' layers too) whose
 * dtype policy is `policy`: Keras 3 writes it as a `DTypePolicy` object, Keras 2 as its name.
 */
function layersWithPolicy(config: unknown, policy: string): Set<string> {
  const names = new Set<string>();
  const seen = new Set<object>();
  const visit = (v: unknown): void => {
    if (v === null || typeof v !== 'object' || seen.has(v)) return;
    seen.add(v);
    const layer = (v as { config?: { name?: unknown; dtype?: unknown } }).config;
    if (typeof layer?.name === 'string') {
      const dtype = layer.dtype as { config?: { name?: unknown } } | string | undefined;
      const name = typeof dtype === 'string' ? dtype : dtype?.config?.name;
      if (name === policy) names.add(layer.name);
    }
    for (const child of Object.values(v)) visit(child);
  };
  visit(config);
  return names;
}

/** An attribute that must be a list of strings (a legacy file's `layer_names`, `weight_names`). */
function stringsOf(v: unknown, what: string): string[] {
  if (Array.isArray(v)) return v;
  if (typeof v === 'string') return [v];
  if (v !== null && typeof v === 'object' && 'size' in v && (v as NdArray).size === 0) return [];
  throw bad(`${what} is not a list of strings`);
}

function parseJson(text: string, what: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new NpyError('BAD_KERAS', `${what} is not JSON: ${(e as Error).message}`);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new NpyError('BAD_KERAS', `${what} is not a JSON object`);
  // Keras parses it with Python's json, which stops at its recursion limit; every walk of the config
  // after this one (here and in the tfjs adapter) may then recurse without overflowing the stack.
  if (nestsDeeperThan(v, MAX_JSON_DEPTH)) {
    throw new NpyError('BAD_KERAS', `${what} nests deeper than ${MAX_JSON_DEPTH} levels (Keras's JSON parser stops there too); no real model config does`);
  }
  return v as Record<string, unknown>;
}
