/**
 * Opening an archive from wherever it is: a URL, a `Blob`, bytes, or any byte source; a reference set
 * (refs/archive.ts) opens as the archive of its arrays.
 */
import type { ByteSource, SyncByteSource } from '../io/byte-source.js';
import { locate, openingOver, sourceOf } from '../io/open.js';
import { HTTP_KEYS, type HttpOptions } from '../io/url.js';
import { checkOptions, knownKeys } from '../options.js';
import type { ReadStore } from '../store/types.js';
import { NPZ_KEYS, NpzArchive, type NpzOptions } from './archive.js';
import { orReferenceSet } from '../refs/archive.js';
import { urlStore, type Place } from '../weights/place.js';

/** Where an archive can be opened from in any runtime (`@npyts/core/node` adds paths); a promise of a source is awaited. */
export type NpzSource = string | URL | Blob | ArrayBuffer | ArrayBufferView | ByteSource | PromiseLike<ByteSource>;

/** Options of {@link openNpz}: the archive's, and (for a URL) the HTTP options. */
export interface OpenNpzOptions extends NpzOptions, HttpOptions {
  /** The store the archive is in, given by its key: `openNpz('w.npz', { store })`. */
  store?: ReadStore | undefined;
}

/**
 * The options {@link OpenNpzOptions} names (see `knownKeys`, options.ts).
 * @example
 * await openNpz(source, pickOptions(adapterOptions, OPEN_NPZ_KEYS));
 */
export const OPEN_NPZ_KEYS: ReadonlySet<string> = knownKeys<OpenNpzOptions>({ ...NPZ_KEYS, ...HTTP_KEYS, store: true });

/**
 * Open a .npz from a URL, a `Blob`/`File`, bytes or any {@link ByteSource}: only the directory is
 * read now (from the archive's tail, by range); each member, a member's header, or a region of a
 * stored member is read when asked for, and moves only its own bytes.
 * @example
 * const z = await openNpz('https://example.org/model.npz', { fetch: signedFetch });
 * const w = await z.get('dense/kernel', { expect: '<f4' });
 * const rows = await (await z.openMember('big')).read([0, 0], [10, 512]);
 */
export async function openNpz(input: ArrayBuffer | ArrayBufferView | SyncByteSource, options?: OpenNpzOptions): Promise<NpzArchive<SyncByteSource>>;
export async function openNpz(input: NpzSource, options?: OpenNpzOptions): Promise<NpzArchive>;
export async function openNpz(input: NpzSource, options: OpenNpzOptions = {}): Promise<NpzArchive> {
  checkOptions('openNpz', options, OPEN_NPZ_KEYS);
  options.signal?.throwIfAborted();
  const source = await sourceOf(input, options, 'openNpz');
  // A reference set's place: the store it is in, or the folder of its URL.
  const place = (): Place | null => {
    const where = locate(input, options, 'openNpz');
    return 'store' in where ? where.store : 'url' in where ? urlStore(where.url) : null;
  };
  return openingOver(source, input, () => orReferenceSet(source, options, place, () => NpzArchive.open(source, options)));
}
