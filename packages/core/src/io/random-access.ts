/**
 * Random access to the bytes of a file wherever it lives, for region reads: a `Blob`/`File` (read
 * through `blob.slice()`, so a multi-gigabyte local file is never read whole), bytes in memory, or
 * any object with `size` and `read(offset, length)` (a file handle, an OPFS access handle, a cache).
 */

/** The bytes of one file, read by position. */
export interface RandomAccess {
  /** The file's size in bytes. */
  readonly size: number;
  /** `length` bytes at `offset` (fewer at the end of the file). */
  read(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array>;
  /** Release what the source holds open, if anything. */
  close?(): Promise<void> | void;
}

/** Bytes moved by the reads of a source, for tests and progress displays. */
export interface ReadStats {
  reads: number;
  bytes: number;
}

/**
 * A `Blob` or `File` as a {@link RandomAccess}: each read slices just its bytes.
 * @example
 * const h = await openNpy(blobSource(droppedFile));
 */
export function blobSource(blob: Blob, stats: ReadStats = { reads: 0, bytes: 0 }): RandomAccess & { readonly stats: ReadStats } {
  return {
    size: blob.size,
    stats,
    async read(offset, length, signal) {
      signal?.throwIfAborted();
      const bytes = new Uint8Array(await blob.slice(offset, Math.min(blob.size, offset + length)).arrayBuffer());
      signal?.throwIfAborted();
      stats.reads++;
      stats.bytes += bytes.length;
      return bytes;
    },
  };
}

/**
 * Bytes in memory as a {@link RandomAccess} (reads are views, not copies).
 * @example
 * const src = bytesSource(new Uint8Array(await res.arrayBuffer()));
 */
export function bytesSource(input: ArrayBuffer | ArrayBufferView): RandomAccess {
  const bytes =
    input instanceof Uint8Array ? input : ArrayBuffer.isView(input) ? new Uint8Array(input.buffer, input.byteOffset, input.byteLength) : new Uint8Array(input);
  return {
    size: bytes.length,
    read: async (offset, length) => bytes.subarray(offset, Math.min(bytes.length, offset + length)),
  };
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
export function withByteCache(source: RandomAccess, options: ByteCacheOptions = {}): RandomAccess & { readonly cacheStats: { hits: number; misses: number } } {
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
    const pending = source.read(k * blockBytes, blockBytes, signal);
    blocks.set(k, pending);
    pending.catch(() => blocks.delete(k)); // a failed or aborted read is not kept
    while (blocks.size > maxBlocks) blocks.delete(blocks.keys().next().value!);
    return pending;
  };
  return {
    size: source.size,
    cacheStats,
    async read(offset, length, signal) {
      const end = Math.min(source.size, offset + length);
      if (end <= offset) return new Uint8Array(0);
      const first = Math.floor(offset / blockBytes);
      const last = Math.floor((end - 1) / blockBytes);
      const parts = await Promise.all(Array.from({ length: last - first + 1 }, (_, i) => block(first + i, signal)));
      if (parts.length === 1) return parts[0]!.subarray(offset - first * blockBytes, end - first * blockBytes);
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
