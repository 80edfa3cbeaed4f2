/** Where archives come from: bytes, a Blob or File, a URL (relative to the page in a browser), a path in Node. */
import {
  NpyError,
  WeightFile,
  decodeNpz,
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
} from '@npyts/core';
import {
  LEVEL_RULES,
  NPZ_WRITE_KEYS,
  OPEN_NPZ_KEYS,
  OPEN_WEIGHTS_KEYS,
  TOLERANCE,
  checkNumber,
  checkNumbers,
  checkReadOptions,
  pickOptions,
  resolveUrl,
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
  // Only what openWeights takes: it refuses the adapter's own options (tolerances, layouts).
  const taken = pickOptions(options, OPEN_WEIGHTS_KEYS);
  if (source instanceof Uint8Array || source instanceof ArrayBuffer) return [await openWeights(source, taken), true];
  const text = String(source);
  if ((typeof Blob !== 'undefined' && source instanceof Blob) || source instanceof URL || SCHEME.test(text) || !inNode()) {
    return [await openWeights(source instanceof Blob ? source : resolveUrl(text), { wholeBodyBytes: Infinity, ...taken }), true];
  }
  return [await (await nodeEntry()).openWeights(text, taken), true];
}

/** Options for reading a source: the archive's, and those of URL reads (`fetch`, headers, request sizes; `signal` aborts any read). */
export interface SourceOptions extends NpzOptions, HttpOptions {}

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

/** True in Node (and runtimes that pose as it): a string without a scheme is a file path there. */
export function inNode(): boolean {
  const p = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return typeof p?.versions?.node === 'string';
}

/** `http:`, `https:`, `blob:`, `data:`, `file:`…: a string that names its scheme (a drive letter is not one). */
const SCHEME = /^[a-z][a-z0-9+.-]+:/i;

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
  if (source instanceof Uint8Array || source instanceof ArrayBuffer) return [decodeNpz(source, options), true];
  const text = String(source);
  if ((typeof Blob !== 'undefined' && source instanceof Blob) || source instanceof URL || SCHEME.test(text) || !inNode()) {
    return [await openNpz(source instanceof Blob ? source : resolveUrl(text), { wholeBodyBytes: Infinity, ...pickOptions(options, OPEN_NPZ_KEYS) }), true];
  }
  return [await (await nodeEntry()).openNpz(text, pickOptions(options, OPEN_NPZ_KEYS)), true];
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
    await target(encodeNpz(arrays, options));
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
