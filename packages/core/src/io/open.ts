/**
 * Region reads of a .npy from any source in the browser-safe entry: a URL (relative URLs resolve
 * against the page), a `Blob`/`File`, bytes in memory, or any {@link ByteSource}.
 */
import type { DescrInput } from '../format/descr-types.js';
import { readingHeader } from './header-read.js';
import { SOURCE, drive, performReads } from './steps.js';
import { blobSource, bytesSource, isByteSource, isPromise, type ByteSource } from './byte-source.js';
import { NpyError } from '../errors.js';
import { URL_KEYS, openNpyUrl, urlSource, type HttpOptions, type UrlOptions, type UrlSourceOptions } from './url.js';
import { npyReaderOf, type NpyReadStats, type NpyReader } from './reader.js';

export { npyReaderOf, type NpyReadStats, type NpyReader, type ReadTuning, type ReaderOptions } from './reader.js';
import { checkOptions, checkReadOptions, knownKeys } from '../options.js';
import { checkStore, openKey } from '../store/key.js';
import type { ReadStore } from '../store/types.js';
import { checkDataPresent, type DecodeOptions, type Expecting } from '../npy.js';

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
 * The byte source of a file given as a URL (read by range requests; a relative URL resolves against
 * the page; `tailBytes` is what the first request asks for, from the end; `opener` is the function
 * named when a path is given), a `Blob` (sliced), bytes (viewed), or a source (as it is): the one
 * place where every container's input becomes a source.
 * @example
 * const source = await sourceOf('https://example.org/model.safetensors');
 */
export async function sourceOf(input: NpySource, options: UrlSourceOptions = {}): Promise<ByteSource> {
  // Every opener's options, checked whatever the input: bytes ignore the HTTP ones, but a NaN is a mistake anywhere.
  checkReadOptions(options);
  if (typeof input === 'string' || input instanceof URL) return urlSource(resolveUrl(input), options);
  if (typeof Blob !== 'undefined' && input instanceof Blob) return blobSource(input);
  return settledSource(input);
}

/**
 * The source of `input`, a key of `store` where one is given (the input is then a string), else
 * what `sourceOf` makes of it: the one rule of `{ store }` for the openers of one file.
 * @internal
 */
export async function sourceIn(entry: string, input: unknown, options: HttpOptions & { store?: ReadStore | undefined }): Promise<ByteSource> {
  if (options.store === undefined) return sourceOf(input as NpySource, options);
  checkStore(entry, options.store, 'read');
  if (typeof input !== 'string')
    throw new NpyError('BAD_OPTION', `${entry}: with { store }, the file is given by its key in the store (a string), not ${typeof input}`);
  return openKey(options.store, input, options);
}

/**
 * `input` as a byte source when it is one, a promise of one (awaited), or bytes; anything else is
 * BAD_OPTION naming what was given (never read as bytes, whose first ones then look like no format).
 */
async function settledSource(input: unknown): Promise<ByteSource> {
  if (isByteSource(input)) return input;
  if (isPromise(input)) {
    const source: unknown = await input;
    if (isByteSource(source)) return source;
    throw new NpyError(
      'BAD_OPTION',
      `the promise given to open resolved to ${describe(source)}, not a byte source; pass a URL, a Blob, bytes or a byte source`,
    );
  }
  // By tag, not instanceof: bytes made in another realm (a vm context, a test runner's) are bytes too.
  const tag = Object.prototype.toString.call(input);
  if (ArrayBuffer.isView(input) || tag === '[object ArrayBuffer]' || tag === '[object SharedArrayBuffer]')
    return bytesSource(input as ArrayBuffer, 'the bytes');
  throw new NpyError('BAD_OPTION', `cannot open ${describe(input)}: pass a URL, a Blob, bytes (ArrayBuffer, Uint8Array) or a byte source`);
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

/**
 * Open a .npy from a {@link ByteSource}: the header is read now, regions when asked for.
 * @example
 * const h = await openNpySource(blobSource(file));
 */
export async function openNpySource(source: ByteSource, options: DecodeOptions & { signal?: AbortSignal | undefined; name?: string } = {}): Promise<NpyReader> {
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
  if (options.store !== undefined) {
    const opened = await sourceIn('openNpy', source, options);
    return openingOver(opened, source, () => openNpySource(opened, { ...options, name: String(source) }));
  }
  if (typeof source === 'string' || source instanceof URL) return openNpyUrl(resolveUrl(source), options);
  if (typeof Blob !== 'undefined' && source instanceof Blob) {
    return openNpySource(blobSource(source), options);
  }
  return openNpySource(await settledSource(source), options);
}
