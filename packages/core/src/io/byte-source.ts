/**
 * The one idea every reader is built on: the bytes of one file, read by position, wherever they
 * live. A source is blocking ({@link SyncByteSource}: bytes in memory, a file opened with blocking
 * reads) or asynchronous ({@link AsyncByteSource}: a `Blob`, a URL, object storage, an async file
 * handle); a stored archive member is a window of one ({@link windowSource}). Every reader takes a
 * {@link ByteSource}; the blocking methods (`…Sync`) need a blocking one.
 */
import { NpyError } from '../errors.js';
import { CACHE_RULES, checkNumbers } from '../options.js';
import { settleAll } from './settle.js';

/** Options of one read: `signal` cancels it, even while it waits. */
export interface ReadOptions {
  signal?: AbortSignal | undefined;
}

/** What every source has: its size and, for errors, a name. */
interface ByteSourceBase {
  /** The file's size in bytes. */
  readonly size: number;
  /** Where the bytes come from (a path, a URL), named by the errors of what is read from them. */
  readonly name?: string | undefined;
  /**
   * Whether `read` hands out views of memory that stays as it is while any view of it lives (a
   * memory map of the file, `openWeights(path, { mmap })`): readers then give arrays over those
   * bytes where the layout allows, instead of copies (see `copyReason`, array/layout.ts). A source whose
   * memory may change or be reused leaves it unset.
   */
  readonly views?: boolean | undefined;
}

/** A source read with blocking reads (bytes in memory, a file descriptor). */
export interface SyncByteSource extends ByteSourceBase {
  /** `length` bytes at `offset` (fewer at the end of the file): a view where the source holds them. */
  read(offset: number, length: number, options?: ReadOptions): Uint8Array;
  /** Read into `target` at `offset` without a buffer of its own; the bytes read. */
  readInto?(target: Uint8Array, offset: number): number;
  /**
   * `length` bytes at `offset` (fewer at the end of the file) copied by a positional read of the
   * file, not through the memory `read` hands out: where `read` gives views of a map, a format's
   * small scattered records (a zip's local headers) are read this way, without faulting in a page of
   * the map for each (on a VM a fault costs about 100 µs, a read about 5). The file's bytes, not a
   * private map's changes to them: only for records no view is handed out of.
   */
  readCopy?(offset: number, length: number): Uint8Array;
  /** Release what the source holds open (a file descriptor). */
  close?(): void;
}

/** A source read asynchronously (a `Blob`, HTTP ranges, an async file handle). */
export interface AsyncByteSource extends ByteSourceBase {
  /** `length` bytes at `offset` (fewer at the end of the file). */
  read(offset: number, length: number, options?: ReadOptions): Promise<Uint8Array>;
  /** Read into `target` at `offset` without a buffer of its own (a file handle); the bytes read. */
  readInto?(target: Uint8Array, offset: number, options?: ReadOptions): Promise<number>;
  /**
   * Several ranges at once, where the source has a way to ask for them together (an HTTP server
   * answering `Range: bytes=a-b,c-d`): their bytes in order, each shorter only at the file's end.
   */
  readRanges?(ranges: readonly ByteRange[], options?: ReadOptions): Promise<Uint8Array[]>;
  /** How many ranges {@link readRanges} is worth handing at once now (1, or absent: read them one by one). */
  readonly rangesPerRead?: number;
  /** Release what the source holds open, if anything. */
  close?(): Promise<void> | void;
}

/** `length` bytes at `offset` of a source. */
export interface ByteRange {
  readonly offset: number;
  readonly length: number;
}

/** The bytes of one file, read by position: blocking or asynchronous. */
export type ByteSource = SyncByteSource | AsyncByteSource;

/**
 * A blocking source that can also be changed in place (an OPFS access handle): what region writes,
 * new files and appends need. Its `size` follows the writes.
 */
export interface WritableByteSource extends SyncByteSource {
  /** Write all of `bytes` at `offset`. */
  write(bytes: Uint8Array, offset: number): void;
  /** Cut or extend the file to `size` bytes. */
  truncate(size: number): void;
  /** Make what was written durable (an OPFS flush). */
  sync?(): void;
}

/** Whether `x` has the shape of a {@link ByteSource} (a `size` and a `read`). */
export function isByteSource(x: unknown): x is ByteSource {
  return typeof x === 'object' && x !== null && typeof (x as ByteSource).read === 'function' && typeof (x as ByteSource).size === 'number';
}

/** Whether a read's result is a promise (an async source) rather than the bytes (a blocking one). */
export function isPromise(x: unknown): x is Promise<unknown> {
  return typeof (x as Promise<unknown> | null)?.then === 'function';
}

/**
 * A blocking read of `source`: a source whose reads are asynchronous is refused (its blocking
 * methods cannot exist), naming the async method to use instead.
 */
export function readSync(source: ByteSource, offset: number, length: number): Uint8Array {
  const got = source.read(offset, length);
  if (isPromise(got)) {
    got.catch(() => {}); // refused below; its outcome is not wanted
    throw new NpyError(
      'ASYNC_SOURCE',
      `${source.name ?? 'this source'} is read asynchronously (a URL, a Blob, an async file): blocking methods cannot read it; use the async ones (get, header, bytes; await openNpz(...))`,
    );
  }
  return got;
}

/**
 * Close a source from a blocking `[Symbol.dispose]` (`using x = …`): a blocking source closes at once;
 * an async one's close is started and its failure ignored (`await using` waits for it).
 */
export function closeSourceNow(source: ByteSource): void {
  const closing = source.close?.();
  if (isPromise(closing)) closing.catch(() => {});
}

/** Bytes read by a source so far, for tests and progress displays. */
export interface ReadStats {
  /** Reads made (HTTP requests, for a URL). */
  reads: number;
  /** Bytes received, every one counted (a discarded body too). */
  bytes: number;
}

/**
 * A `Blob` or `File` as a source: each read slices just its bytes, so a multi-gigabyte file picked
 * in a page is never read whole.
 * @example
 * const z = await openNpz(blobSource(droppedFile));
 */
export function blobSource(blob: Blob, stats: ReadStats = { reads: 0, bytes: 0 }): AsyncByteSource & { readonly stats: ReadStats } {
  return {
    size: blob.size,
    name: (blob as File).name || 'the blob',
    stats,
    async read(offset, length, options = {}) {
      options.signal?.throwIfAborted();
      const bytes = new Uint8Array(await blob.slice(offset, Math.min(blob.size, offset + length)).arrayBuffer());
      options.signal?.throwIfAborted();
      stats.reads++;
      stats.bytes += bytes.length;
      return bytes;
    },
  };
}

/**
 * Bytes in memory as a blocking source (reads are views, not copies).
 * @example
 * const src = bytesSource(new Uint8Array(await res.arrayBuffer()));
 */
export function bytesSource(input: ArrayBuffer | ArrayBufferView, name?: string): SyncByteSource {
  const bytes =
    input instanceof Uint8Array ? input : ArrayBuffer.isView(input) ? new Uint8Array(input.buffer, input.byteOffset, input.byteLength) : new Uint8Array(input);
  return {
    size: bytes.length,
    ...(name === undefined ? {} : { name }),
    read: (offset, length) => bytes.subarray(offset, Math.min(bytes.length, offset + length)),
    readInto: (target, offset) => {
      const got = bytes.subarray(offset, Math.min(bytes.length, offset + target.length));
      target.set(got);
      return got.length;
    },
  };
}

/**
 * Bytes `[start, start + length)` of `source` as a source of their own (a stored archive member):
 * reads never stray past the window, and closing the window leaves the source open.
 * @example
 * const member = windowSource(archiveSource, dataOffset, entry.compressedSize, entry.name);
 * const h = await openNpy(member);
 */
export function windowSource<S extends ByteSource>(source: S, start: number, length: number, name?: string): S {
  const size = Math.max(0, Math.min(length, source.size - start));
  const clip = (offset: number, want: number): number => Math.max(0, Math.min(want, size - offset));
  const window: SyncByteSource | AsyncByteSource = {
    size,
    name: name ?? source.name,
    read: ((offset: number, want: number, options?: ReadOptions) => source.read(start + offset, clip(offset, want), options)) as never,
  };
  passReadsOn(window, source, (offset, want) => ({ offset: start + offset, length: clip(offset, want) }));
  return window as S;
}

/**
 * Give `to`, a source made over `from` (a window, an archive's members), the ways of reading `from`
 * has besides `read`: into a target, and several ranges at once. Each range is mapped by `range`
 * (a window's offset and end), and `before` runs first (a closed archive refuses). Options, the
 * signal among them, pass on.
 * @example
 * passReadsOn(window, source, (offset, length) => ({ offset: start + offset, length }));
 */
export function passReadsOn(
  to: SyncByteSource | AsyncByteSource,
  from: ByteSource,
  range: (offset: number, length: number) => ByteRange,
  before: () => void = () => {},
): void {
  if (from.views) (to as { views?: boolean }).views = true;
  if (from.readInto) {
    const into = from.readInto.bind(from) as (target: Uint8Array, offset: number, options?: ReadOptions) => number | Promise<number>;
    (to as { readInto?: unknown }).readInto = (target: Uint8Array, offset: number, options?: ReadOptions) => {
      before();
      const r = range(offset, target.length);
      return into(target.subarray(0, r.length), r.offset, options);
    };
  }
  if ('readRanges' in from && from.readRanges) {
    const ranged = from as AsyncByteSource;
    Object.defineProperties(to, {
      readRanges: {
        value: async (ranges: readonly ByteRange[], options?: ReadOptions) => {
          before();
          return ranged.readRanges!(
            ranges.map((r) => range(r.offset, r.length)),
            options,
          );
        },
      },
      rangesPerRead: { get: () => ranged.rangesPerRead },
    });
  }
}

/**
 * `source` read through `before` (a check that throws, as a closed file's does) in every way it
 * reads: one rule for the readers that refuse reads after close().
 * @example
 * const through = checkedReads(source, () => { if (closed) throw new NpyError('CLOSED', 'closed'); });
 */
export function checkedReads(source: ByteSource, before: () => void): AsyncByteSource {
  const through: AsyncByteSource = {
    size: source.size,
    name: source.name,
    read: async (at, length, options) => {
      before();
      return source.read(at, length, options);
    },
  };
  passReadsOn(through, source, (offset, length) => ({ offset, length }), before);
  return through;
}

/** Options of {@link withByteCache}: its size bound and block size. */
export interface ByteCacheOptions {
  /** Most bytes kept (default 64 MiB); the least recently used blocks go first. */
  maxBytes?: number;
  /** Reads are made and kept in blocks of this size (default 64 KiB). */
  blockBytes?: number;
}

/**
 * A size-bounded LRU cache in front of a source: reads are made in aligned blocks, and blocks read
 * before are served from memory. For repeated reads of the same parts of a remote or slow file
 * (a viewer paging back and forth); one-off reads gain nothing from it.
 * @example
 * const cached = withByteCache(blobSource(file), { maxBytes: 32 << 20 });
 */
export function withByteCache(source: ByteSource, options: ByteCacheOptions = {}): AsyncByteSource & { readonly cacheStats: { hits: number; misses: number } } {
  checkNumbers(options, CACHE_RULES);
  const blockBytes = Math.max(1, options.blockBytes ?? 64 << 10);
  const maxBlocks = Math.max(1, Math.floor((options.maxBytes ?? 64 << 20) / blockBytes));
  // A Map keeps insertion order: re-inserting a block on use makes the first key the least recent.
  const blocks = new Map<number, Promise<Uint8Array>>();
  const cacheStats = { hits: 0, misses: 0 };
  const block = (k: number, signal?: AbortSignal): Promise<Uint8Array> => {
    const known = blocks.get(k);
    if (known) {
      cacheStats.hits++;
      blocks.delete(k);
      blocks.set(k, known);
      return known;
    }
    cacheStats.misses++;
    const pending = Promise.resolve(source.read(k * blockBytes, blockBytes, { signal }));
    blocks.set(k, pending);
    pending.catch(() => blocks.delete(k)); // a failed or aborted read is not kept
    while (blocks.size > maxBlocks) blocks.delete(blocks.keys().next().value!);
    return pending;
  };
  return {
    size: source.size,
    name: source.name,
    cacheStats,
    async read(offset, length, readOptions = {}) {
      const end = Math.min(source.size, offset + length);
      if (end <= offset) return new Uint8Array(0);
      const first = Math.floor(offset / blockBytes);
      const last = Math.floor((end - 1) / blockBytes);
      const parts = await settleAll(Array.from({ length: last - first + 1 }, (_, i) => block(first + i, readOptions.signal)));
      // A copy: the bytes may become an array's own memory, and the cached block serves later reads too.
      if (parts.length === 1) return parts[0]!.slice(offset - first * blockBytes, end - first * blockBytes);
      const out = new Uint8Array(end - offset);
      parts.forEach((p, i) => {
        const blockStart = (first + i) * blockBytes;
        const from = Math.max(offset, blockStart);
        const to = Math.min(end, blockStart + p.length);
        if (to > from) out.set(p.subarray(from - blockStart, to - blockStart), from - offset);
      });
      return out;
    },
    close: () => source.close?.(),
  };
}
