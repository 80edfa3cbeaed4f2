/**
 * Region reads of a .npy from any source in the browser-safe entry: a URL (relative URLs resolve
 * against the page), a `Blob`/`File`, bytes in memory, or any {@link ByteSource}.
 */
import type { NdArray } from '../array/ndarray.js';
import type { DescrInput } from '../format/descr-types.js';
import type { NpyHeader } from '../format/header.js';
import { readingHeader } from './header-read.js';
import { groupRuns, placeGroup, planRegion, regionArray, type OpenNpy } from './region.js';
import { ByteBudget, inParallel } from './settle.js';
import { allocateBuffer } from '../array/memory.js';
import { NpyError } from '../errors.js';
import { SOURCE, drive, performReads } from './steps.js';
import { blobSource, bytesSource, isByteSource, type ByteSource } from './byte-source.js';
import { openNpyUrl, urlSource, type HttpOptions, type UrlOptions } from './url.js';
import { checkDataPresent, type DecodeOptions, type Expecting } from '../npy.js';

/** What a reader has read so far: requests (reads of its source, or HTTP requests), body bytes, and reads a cache served. */
export interface NpyReadStats {
  requests: number;
  bytes: number;
  cached: number;
}

/** An open .npy whose regions are read asynchronously, whatever holds its bytes. */
export interface NpyReader<S extends DescrInput = DescrInput> extends OpenNpy<S> {
  /** What this reader has read so far (the header included). */
  readonly stats: NpyReadStats;
  /** The hyperslab [start, start + count) of each axis, in native byte order and the file's memory order. */
  read(start: readonly number[], count: readonly number[], options?: { signal?: AbortSignal | undefined }): Promise<NdArray<S>>;
  close(): Promise<void>;
}

/** Where a .npy can be opened from in any runtime. */
export type NpySource = string | URL | Blob | ArrayBuffer | ArrayBufferView | ByteSource;

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
 * the page; `tailBytes` is what the first request asks for, from the end), a `Blob` (sliced), bytes
 * (viewed), or a source (as it is): the one place where every container's input becomes a source.
 * @example
 * const source = await sourceOf('https://example.org/model.safetensors');
 */
export async function sourceOf(input: NpySource, options: HttpOptions & { tailBytes?: number } = {}): Promise<ByteSource> {
  if (typeof input === 'string' || input instanceof URL) return urlSource(resolveUrl(input), options);
  if (typeof Blob !== 'undefined' && input instanceof Blob) return blobSource(input);
  if (isByteSource(input)) return input;
  return bytesSource(input as ArrayBuffer | ArrayBufferView, 'the bytes');
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
    if (source !== input) await source.close?.();
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
  return npyReaderOf(source, header, options.name ?? source.name ?? 'the file', stats);
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

/** Reads of `source` into a target, each counted in `stats`; null where the source cannot read into one. */
function countedReadsInto(source: ByteSource, stats: NpyReadStats) {
  if (!source.readInto) return null;
  const into = source.readInto.bind(source) as (target: Uint8Array, offset: number, options?: { signal?: AbortSignal | undefined }) => number | Promise<number>;
  return async (target: Uint8Array, at: number, signal?: AbortSignal): Promise<number> => {
    signal?.throwIfAborted();
    const got = await into(target, at, { signal });
    stats.requests++;
    stats.bytes += got;
    return got;
  };
}

/** Ranges of a region closer than this go in one read of a source (remote sources favour fewer, larger reads). */
const SOURCE_MAX_GAP = 64 << 10;
/** Bytes one read of a source asks for at most. */
const SOURCE_READ_BYTES = 8 << 20;
/** Reads of a source in flight at once, and the bytes they may hold together. */
const SOURCE_CONCURRENCY = 6;
const SOURCE_IN_FLIGHT = 16 << 20;

/**
 * The reader of a .npy in `source` whose header was read already (an archive member's, read with
 * its local header): a region is read as groups of nearby runs, several reads in flight at once (a
 * remote source answers them together), at most 16 MiB held by reads in flight.
 */
export function npyReaderOf(source: ByteSource, header: NpyHeader, name: string, stats: NpyReadStats = { requests: 0, bytes: 0, cached: 0 }): NpyReader {
  const read = countedReads(source, stats);
  const readInto = countedReadsInto(source, stats);
  return {
    stats,
    header,
    dtype: header.dtype,
    shape: [...header.shape],
    order: header.fortranOrder ? 'F' : 'C',
    async read(start, count, readOptions = {}) {
      const { signal } = readOptions;
      signal?.throwIfAborted();
      const plan = planRegion(header, start, count);
      const out = new Uint8Array(allocateBuffer(plan.bytes));
      // One generator shared by the workers: each takes the next group as it is free.
      const groups = groupRuns(plan.runs, SOURCE_MAX_GAP, { maxBytes: SOURCE_READ_BYTES, splitRuns: true });
      const budget = new ByteBudget(SOURCE_IN_FLIGHT);
      await inParallel(SOURCE_CONCURRENCY, async (stopped) => {
        for (let g = groups.next(); !g.done && !stopped(); g = groups.next()) {
          const group = g.value;
          const only = group.runs.length === 1 ? group.runs[0]! : null;
          if (readInto && only && only.length === group.length) {
            // One run, read straight into its place in the region: no buffer of its own, no copy.
            const got = await readInto(out.subarray(only.regionOffset, only.regionOffset + only.length), only.fileOffset, signal);
            if (got < only.length) {
              throw new NpyError('DATA_TRUNCATED', `${name} ends at byte ${only.fileOffset + got}, the region needs byte ${only.fileOffset + only.length}`);
            }
            continue;
          }
          const body = await budget.holding(group.length, () => read(group.offset, group.length, signal));
          if (body.length < group.length) {
            throw new NpyError('DATA_TRUNCATED', `${name} ends at byte ${group.offset + body.length}, the region needs byte ${group.offset + group.length}`);
          }
          placeGroup(out, group, body);
        }
      });
      return regionArray(header, plan, out);
    },
    close: async () => {
      await source.close?.();
    },
  };
}

/**
 * Open a .npy for region reads from a URL (HTTP ranges), a `Blob`/`File` (slices: a dropped
 * multi-gigabyte file is never read whole), bytes, or any {@link ByteSource}. In Node,
 * `@npyts/core/node`'s `openNpyFile` opens paths.
 * @example
 * const h = await openNpy(droppedFile, { expect: '<f4' });
 * const rows = await h.read([0, 0], [10, 512]);
 * const remote = await openNpy('data/big.npy', { headers: { authorization: 'Bearer …' } });
 */
export async function openNpy<const S extends DescrInput>(source: NpySource, options: UrlOptions & Expecting<S>): Promise<NpyReader<S>>;
export async function openNpy(source: NpySource, options?: UrlOptions): Promise<NpyReader>;
export async function openNpy(source: NpySource, options: UrlOptions = {}): Promise<NpyReader> {
  if (typeof source === 'string' || source instanceof URL) return openNpyUrl(resolveUrl(source), options);
  if (typeof Blob !== 'undefined' && source instanceof Blob) {
    return openNpySource(blobSource(source), options);
  }
  if (isByteSource(source)) return openNpySource(source, options);
  return openNpySource(bytesSource(source as ArrayBuffer | ArrayBufferView), { ...options, name: 'the bytes' });
}
