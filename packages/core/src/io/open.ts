/**
 * Region reads of a .npy from any source in the browser-safe entry: a URL (relative URLs resolve
 * against the page), a `Blob`/`File`, bytes in memory, or any {@link ByteSource}.
 */
import type { DescrInput } from '../format/descr-types.js';
import { readingHeader } from './header-read.js';
import { SOURCE, drive, performReads } from './steps.js';
import { blobSource, bytesSource, isByteSource, isPromise, type ByteSource } from './byte-source.js';
import { NpyError } from '../errors.js';
import { HTTP_KEYS, URL_KEYS, URL_SOURCE_KEYS, openNpyUrl, urlSource, type UrlOptions, type UrlSourceOptions } from './url.js';
import { npyReaderOf, type NpyReadStats, type NpyReader } from './reader.js';

export { npyReaderOf, type NpyReadStats, type NpyReader, type ReadTuning, type ReaderOptions } from './reader.js';
import { checkMapMode, checkOptions, checkReadOptions, knownKeys, pickOptions, warnNoMap, type MapMode } from '../options.js';
import { checkStore, openKey, refuseBesideStore } from '../store/key.js';
import type { ReadStore } from '../store/types.js';
import { DECODE_KEYS, checkDataPresent, type DecodeOptions, type Expecting } from '../npy.js';

/**
 * Where a .npy can be opened from in any runtime: a URL, a `Blob`, bytes, a byte source, or a promise
 * of a byte source (what `urlSource(url)` returns, passed without `await`).
 */
export type NpySource = string | URL | Blob | ArrayBuffer | ArrayBufferView | ByteSource | PromiseLike<ByteSource>;

/**
 * A URL as given, resolved against the page in a browser (`'data/x.npy'` is relative to the document).
 * @example
 * resolveUrl('data/w.npy');   // 'https://site/app/data/w.npy' on a page at https://site/app/
 */
export function resolveUrl(url: string | URL): string {
  const base = (globalThis as { location?: { href: string } }).location?.href;
  return base ? new URL(String(url), base).href : String(url);
}

/**
 * True in Node (and runtimes that pose as it): where a string without a URL scheme names a file.
 * @example
 * const { openWeights } = inNode() ? await import('@npyts/core/node') : await import('@npyts/core');
 */
export function inNode(): boolean {
  const p = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return typeof p?.versions?.node === 'string';
}

/**
 * Whether a string names a local file where there are files (Node): anything but a URL of a scheme
 * a runtime reads (`http:`, `https:`, `data:`, `blob:`); a `file:` URL names its file. So a name
 * with a colon (`ckpt-T10:00.npy`, `epoch:3.npz`, a drive letter `C:\\w.npz`) is a file, as
 * `np.save` and every path entry of npyts take it.
 * @example
 * namesFile('w.npz');                 // true
 * namesFile('epoch:3.npz');           // true
 * namesFile('https://example.org/w'); // false
 */
export function namesFile(text: string): boolean {
  return !/^(?:https?|data|blob):/i.test(text);
}

/**
 * What a runtime with a file system adds to `locate`: the path an input names, and a source
 * over a path. `@npyts/core/node` registers Node's when it loads (only node/ imports `node:*`).
 * @internal
 */
export interface LocalFiles {
  /** The path `input` names (a path, a `file:` URL), or null for anything else. */
  pathOf(input: unknown): string | null;
  /** A source over the file at `path` (a map of it with `mmap`, where maps can be made). */
  open(path: string, options: SourceOptions): Promise<ByteSource>;
}

let localFiles: LocalFiles | undefined;

/** Register the runtime's files (`@npyts/core/node` does, once loaded). @internal */
export function useLocalFiles(files: LocalFiles): void {
  localFiles = files;
}

/**
 * Where an input's bytes are: a key of a store, a file path (where a file system is registered), a
 * URL (resolved against the page), or a source (a `Blob` sliced, bytes viewed, a byte source or a
 * promise of one, checked when settled).
 * @internal
 */
export type Location =
  | { readonly store: ReadStore; readonly key: string }
  | { readonly path: string }
  | { readonly url: string }
  | { readonly source: ByteSource | PromiseLike<unknown> };

/**
 * The one input dispatch: where the bytes of what a user passes to `entry` are. With `{ store }`
 * the input is a key of it (a string); else a path or `file:` URL is a file (in Node), another URL
 * is read by range, a `Blob` by slices, bytes as they are. Anything else is BAD_OPTION.
 * @example
 * locate('w.npy', { store }, 'openNpy');              // { store, key: 'w.npy' }
 * locate('https://example.org/w.npy', {}, 'openNpy'); // { url: 'https://example.org/w.npy' }
 * @internal
 */
export function locate(input: unknown, options: { store?: ReadStore | undefined; mmap?: MapMode | undefined }, entry: string): Location {
  if (options.store !== undefined) {
    checkStore(entry, options.store, 'read');
    if (typeof input !== 'string')
      throw new NpyError('BAD_OPTION', `${entry}: with { store }, the file is given by its key in the store (a string), not ${typeof input}`);
    refuseBesideStore(entry, options, ['mmap']);
    return { store: options.store, key: input };
  }
  const path = localFiles?.pathOf(input) ?? null;
  if (path !== null) return { path };
  if (typeof input === 'string' || input instanceof URL) return { url: resolveUrl(input) };
  if (typeof Blob !== 'undefined' && input instanceof Blob) return { source: blobSource(input) };
  if (isByteSource(input) || isPromise(input)) return { source: input };
  // By tag, not instanceof: bytes made in another realm (a vm context, a test runner's) are bytes too.
  const tag = Object.prototype.toString.call(input);
  if (ArrayBuffer.isView(input) || tag === '[object ArrayBuffer]' || tag === '[object SharedArrayBuffer]')
    return { source: bytesSource(input as ArrayBuffer, 'the bytes') };
  throw new NpyError('BAD_OPTION', `${entry}: cannot open ${describe(input)}: pass a URL, a Blob, bytes (ArrayBuffer, Uint8Array) or a byte source`);
}

/** Options of {@link sourceOf}: those of a URL's reads, the store a key is in, and a file's map mode. */
export interface SourceOptions extends UrlSourceOptions {
  store?: ReadStore | undefined;
  mmap?: MapMode | undefined;
}

/**
 * The byte source of what a user passes (see `locate`): a store's key, a file (Node), a URL
 * read by range requests (`tailBytes` is what the first request asks for, from the end), a `Blob`,
 * bytes or a source: the one place where every container's input becomes a source.
 * @example
 * const source = await sourceOf('https://example.org/model.safetensors', {}, 'openWeights');
 */
export async function sourceOf(input: unknown, options: SourceOptions = {}, entry = 'open'): Promise<ByteSource> {
  // Every opener's options, checked whatever the input: bytes ignore the HTTP ones, but a NaN is a mistake anywhere.
  checkReadOptions(options);
  checkMapMode(options.mmap);
  return sourceAt(locate(input, options, entry), options);
}

/** The source of a {@link Location}. @internal */
export async function sourceAt(where: Location, options: SourceOptions): Promise<ByteSource> {
  if ('store' in where) return openKey(where.store, where.key, pickOptions(options, HTTP_KEYS));
  if ('path' in where && localFiles !== undefined) {
    options.signal?.throwIfAborted();
    return localFiles.open(where.path, options);
  }
  if (options.mmap) warnNoMap('memory maps need a file given by path');
  if ('url' in where) return urlSource(where.url, pickOptions(options, URL_SOURCE_KEYS));
  if (!('source' in where)) throw new NpyError('BAD_OPTION', 'no file system here to open a path in');
  const { source } = where;
  if (isByteSource(source)) return source;
  const settled: unknown = await source;
  if (isByteSource(settled)) return settled;
  throw new NpyError('BAD_OPTION', `the promise given to open resolved to ${describe(settled)}, not a byte source; pass a URL, a Blob, bytes or a byte source`);
}

/** What a value is, for a message: its class's name, or its type. */
function describe(x: unknown): string {
  if (x === null) return 'null';
  const name = typeof x === 'object' ? (x as object).constructor?.name : undefined;
  return name ? `a ${name}` : typeof x;
}

/**
 * Whether a source opened from `input` is the caller's own (left open when opening fails): the
 * source itself, or a promise of it that the caller holds.
 */
function givenByCaller(source: ByteSource, input: unknown): boolean {
  return source === input || isPromise(input);
}

/**
 * `open()` over a source made for it from `input`: when opening fails, the source is closed (a
 * source the caller handed in as `input` is theirs, and left open). The one rule of every opener.
 * @example
 * return openingOver(source, input, () => NpzArchive.open(source, options));
 */
export async function openingOver<T>(source: ByteSource, input: unknown, open: () => Promise<T>): Promise<T> {
  try {
    return await open();
  } catch (e) {
    if (!givenByCaller(source, input)) await source.close?.();
    throw e;
  }
}

/** Options of {@link openNpySource}: the decode options, `signal`, and the name messages give the file. */
export interface NpySourceOptions extends DecodeOptions {
  signal?: AbortSignal | undefined;
  name?: string | undefined;
}

/** The options {@link NpySourceOptions} names. */
const NPY_SOURCE_KEYS: ReadonlySet<string> = knownKeys<NpySourceOptions>({ ...DECODE_KEYS, signal: true, name: true });

/**
 * Open a .npy from a {@link ByteSource}: the header is read now, regions when asked for.
 * @example
 * const h = await openNpySource(blobSource(file));
 */
export async function openNpySource(source: ByteSource, options: NpySourceOptions = {}): Promise<NpyReader> {
  checkOptions('openNpySource', options, NPY_SOURCE_KEYS);
  checkReadOptions(options);
  const stats: NpyReadStats = { requests: 0, bytes: 0, cached: 0 };
  const header = await drive(readingHeader(SOURCE, options), performReads(countedReads(source, stats)), options.signal);
  checkDataPresent(header, source.size - header.dataOffset);
  return npyReaderOf(source, header, options.name ?? source.name ?? 'the file', { stats });
}

/** Reads of `source`, each counted in `stats`. */
function countedReads(source: ByteSource, stats: NpyReadStats) {
  return async (at: number, length: number, signal?: AbortSignal): Promise<Uint8Array> => {
    const got = await source.read(at, length, { signal });
    stats.requests++;
    stats.bytes += got.length;
    return got;
  };
}

/** Options of {@link openNpy}: the decode and HTTP options, and the store a file given by key is in. */
export interface OpenNpyOptions extends UrlOptions {
  /** The store the file is in, given by its key: `openNpy('w.npy', { store })`. */
  store?: ReadStore | undefined;
}

/** The options {@link OpenNpyOptions} names (see `knownKeys`, options.ts). */
export const OPEN_NPY_KEYS: ReadonlySet<string> = knownKeys<OpenNpyOptions>({ ...URL_KEYS, store: true });

/**
 * Open a .npy for region reads from a URL (HTTP ranges), a `Blob`/`File` (slices: a dropped
 * multi-gigabyte file is never read whole), bytes, or any {@link ByteSource}. In Node,
 * `@npyts/core/node`'s `openNpyFile` opens paths.
 * @example
 * const h = await openNpy(droppedFile, { expect: '<f4' });
 * const rows = await h.read([0, 0], [10, 512]);
 * const remote = await openNpy('data/big.npy', { headers: { authorization: 'Bearer …' } });
 */
export async function openNpy<const S extends DescrInput>(source: NpySource, options: OpenNpyOptions & Expecting<S>): Promise<NpyReader<S>>;
export async function openNpy(source: NpySource, options?: OpenNpyOptions): Promise<NpyReader>;
export async function openNpy(source: NpySource, options: OpenNpyOptions = {}): Promise<NpyReader> {
  checkOptions('openNpy', options, OPEN_NPY_KEYS);
  checkReadOptions(options);
  const where = locate(source, options, 'openNpy');
  // A URL's reader keeps the first answer and joins ranges (openNpyUrl); every other source is read by position.
  if ('url' in where) return openNpyUrl(where.url, pickOptions(options, URL_KEYS));
  const opened = await sourceAt(where, options);
  const name = 'key' in where ? where.key : 'path' in where ? where.path : undefined;
  return openingOver(opened, source, () => openNpySource(opened, { ...pickOptions(options, NPY_SOURCE_KEYS), ...(name !== undefined ? { name } : {}) }));
}
