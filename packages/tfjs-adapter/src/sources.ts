/** Where archives come from: bytes, a Blob or File, a URL (relative to the page in a browser), a path in Node. */
import {
  NpyError,
  WeightFile,
  encodeNpz,
  openNpz,
  openWeights,
  weightFormats,
  type WeightFormatEntry,
  weightsOfArchive,
  type HttpOptions,
  type NdArray,
  type NpzArchive,
  type NpzOptions,
  type NpzWriteOptions,
  type ReadStore,
} from '@npyts/core';
import {
  LEVEL_RULES,
  NPZ_WRITE_KEYS,
  OPEN_NPZ_KEYS,
  OPEN_WEIGHTS_KEYS,
  TOLERANCE,
  checkNumber,
  checkNumbers,
  checkOptions,
  checkReadOptions,
  inNode,
  pickOptions,
} from '@npyts/core/plumbing';

/** Where a .npz is read from: bytes, a `Blob`/`File`, a URL, or (in Node) a file path; or an opened archive. */
export type NpzSource = Uint8Array | ArrayBuffer | Blob | string | URL | NpzArchive;

/**
 * Where weights are read from: any {@link NpzSource}, or an opened weight file; by bytes, a `Blob`,
 * a URL or a path, a `.npz`, a `torch.save` file (`.pt`, `.pth`, `.bin`), a `.safetensors` file or
 * a sharded set's `*.safetensors.index.json`, or Keras's `.keras`, `.weights.h5` and `.h5` files,
 * told apart by their bytes.
 */
export type WeightSource = NpzSource | WeightFile;

/**
 * Open a source as a weight file of any kind. The second value says whether this call opened it (and
 * so must close it); an archive or weight file handed in is the caller's to close.
 */
export async function openWeightSource(source: WeightSource, options: SourceOptions = {}): Promise<[WeightFile, boolean]> {
  checkAdapterOptions(options);
  if (source instanceof WeightFile) return [source, false];
  if (isArchive(source)) return [weightsOfArchive(source), false];
  // Only what openWeights takes (the entry checked the rest: tolerances, layouts). Where the bytes
  // are is core's one rule (paths in Node, where its entry adds them); a URL's whole body is used
  // where a server ignores Range, as the weights are to be read anyway.
  const open = inNode() ? (await nodeEntry()).openWeights : openWeights;
  return [await open(source, { wholeBodyBytes: Infinity, ...pickOptions(options, OPEN_WEIGHTS_KEYS) }), true];
}

/**
 * Options for reading a source: the archive's, those of URL reads (`fetch`, headers, request sizes;
 * `signal` aborts any read), and the store a source given by key is in (`{ store }`).
 */
export interface SourceOptions extends NpzOptions, HttpOptions {
  /** The store the source is in, given by its key: `assignWeights(model, 'w.npz', { store })`. */
  store?: ReadStore | undefined;
}

/** The options every entry that reads a source takes (those of core's openers it hands them to). */
const SOURCE_KEYS: ReadonlySet<string> = new Set([...OPEN_WEIGHTS_KEYS, ...OPEN_NPZ_KEYS]);

/**
 * Refuse (`BAD_OPTION`, naming it) an option `entry` does not take, before anything is read: a
 * source's (see {@link SourceOptions}) and `own`, the entry's own; then the numeric ones.
 * @example
 * checkEntryOptions('loadTensors', options, TO_TENSOR_KEYS);
 */
export function checkEntryOptions(entry: string, options: object, own: ReadonlySet<string>): void {
  checkOptions(entry, options, new Set([...SOURCE_KEYS, ...own]));
  checkAdapterOptions(options);
}

/**
 * Refuse numeric options of any of the adapter's functions that are not numbers of their kind
 * (`BAD_OPTION`), before a source is opened, whatever the source: core's reading options, the
 * tolerances `rtol`/`atol`, `epsilon` (a number, or numbers by layer) and a save's zlib `level`.
 */
export function checkAdapterOptions(options: object): void {
  checkReadOptions(options);
  checkNumbers(options, { rtol: TOLERANCE, atol: TOLERANCE }, LEVEL_RULES);
  const { epsilon } = options as { epsilon?: unknown };
  if (epsilon !== null && typeof epsilon === 'object') for (const [name, e] of Object.entries(epsilon)) checkNumber(`epsilon['${name}']`, e, TOLERANCE);
  else checkNumber('epsilon', epsilon, TOLERANCE);
}

/** True for an opened archive handed in by the caller (it is theirs to close). */
export function isArchive(source: unknown): source is NpzArchive {
  return typeof source === 'object' && source !== null && 'names' in source && 'get' in source && 'entry' in source;
}

/**
 * Open a source as an archive. The second value says whether this call opened it (and so must close it).
 * A string with a scheme, or any string outside Node, is a URL: relative ones resolve against the page.
 */
export async function openArchive(source: NpzSource, options: SourceOptions = {}): Promise<[NpzArchive, boolean]> {
  checkAdapterOptions(options);
  if (isArchive(source)) return [checkNotTorch(source, 'the archive'), false];
  const [archive, opened] = await openAny(source, options);
  try {
    checkNotTorch(archive, typeof source === 'string' || source instanceof URL ? String(source) : 'the archive');
  } catch (e) {
    if (opened) await archive.close();
    throw e;
  }
  return [archive, opened];
}

/**
 * Refuse a `torch.save` file (a zip of `data.pkl` and tensor storages, not of .npy members): its
 * pickle would need PyTorch's classes, and reading it as an archive would find no arrays at all.
 */
function checkNotTorch(archive: NpzArchive, what: string): NpzArchive {
  if (archive.entries.some((e) => e.name.endsWith('.npy'))) return archive;
  const members = archive.entries.map((e) => e.name);
  const formats: readonly WeightFormatEntry[] = weightFormats;
  if (formats.some((f) => typeof f.tensors === 'function' && f.tensors(members))) {
    throw new NpyError(
      'BAD_MODEL',
      `${what} is a torch.save file (a zip of data.pkl and tensor storages), not a model archive of arrays; assign its weights to a model with assignWeights(model, file, { layout: 'pytorch' })`,
    );
  }
  return archive;
}

/**
 * {@link openArchive} before its checks. Bytes are viewed, a `Blob` sliced and a URL read by range
 * (core's `openNpz`): only the directory is read now, and each member when it is needed. A server
 * that ignores `Range` sends the whole archive, which is then used whole (the weights were to be
 * read anyway).
 */
async function openAny(source: Exclude<NpzSource, NpzArchive>, options: SourceOptions): Promise<[NpzArchive, boolean]> {
  const open = inNode() ? (await nodeEntry()).openNpz : openNpz;
  return [await open(source, { wholeBodyBytes: Infinity, ...pickOptions(options, OPEN_NPZ_KEYS) }), true];
}

/**
 * `@npyts/core/node`, loaded only when a path is used. The specifier is a variable so that browser
 * bundlers do not pull Node's file system into the page.
 */
export async function nodeEntry(): Promise<typeof import('@npyts/core/node')> {
  const specifier = '@npyts/core/node';
  return (await import(/* @vite-ignore */ specifier)) as typeof import('@npyts/core/node');
}

/** Where archive bytes go: a function receiving them (upload, IndexedDB, a download in the page). */
export type NpzSink = (npz: Uint8Array) => unknown;

/**
 * Archive bytes to a file (a path, Node only: written beside and renamed, like every npyts save) or to a sink.
 * @example
 * await writeArchive('out.npz', { w: a }, {});
 */
export async function writeArchive(
  target: string | NpzSink,
  arrays: Map<string, NdArray>,
  options: NpzWriteOptions & { signal?: AbortSignal | undefined; durable?: boolean | undefined },
): Promise<void> {
  if (typeof target === 'function') {
    await target(encodeNpz(arrays, pickOptions(options, NPZ_WRITE_KEYS)));
    return;
  }
  if (!inNode())
    throw new NpyError(
      'BAD_TARGET',
      `saving to '${target}' needs a file system; in a browser pass a function that receives the bytes, or browserDownload('${target}')`,
    );
  await (await nodeEntry()).saveNpz(target, arrays, pickOptions(options, NPZ_WRITE_KEYS, { durable: true, signal: true }));
}

/**
 * A sink that offers the archive as a download in a browser page (like tfjs's `downloads://`).
 * @example
 * await saveWeights(model, browserDownload('weights.npz'));
 */
export function browserDownload(fileName: string): NpzSink {
  return (npz) => {
    const doc = (globalThis as { document?: Document }).document;
    if (!doc) throw new NpyError('BAD_TARGET', 'browserDownload needs a page (document); in Node save to a path');
    const url = URL.createObjectURL(new Blob([npz as Uint8Array<ArrayBuffer>], { type: 'application/zip' }));
    const a = doc.createElement('a');
    a.href = url;
    a.download = fileName;
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 0);
  };
}
