/** Ragged readers with promises, over any source of region reads: files (`@npyts/core/node`) and URLs. */
import type { DType } from '../format/dtype.js';
import type { NdArray } from '../array/ndarray.js';
import { openNpyUrl, type NpyUrlHandle, type UrlOptions } from '../io/url.js';
import { heapUrlOf, type RaggedElement, type RaggedKind, type RaggedLayout } from './convention.js';
import { levelFacts, openingLevel, readingBounds, readingElements, runReading, type RaggedSource, type Reading } from './reading.js';

/** An open ragged array read asynchronously: the index rows, then the heap rows, of each element asked for. */
export interface RaggedReader {
  /** Number of elements (the product of `shape`). */
  readonly length: number;
  readonly kind: RaggedKind;
  readonly layout: RaggedLayout;
  /** The elements' grid: the index's shape; elements are addressed by flat C-order position or by multi-index. */
  readonly indexShape: number[];
  /** The whole array's shape with `*` for ragged axes, e.g. `(120, 5, 10, *, 20, 30)`. */
  readonly raggedShape: string;
  /** The heap's dtype and row count (for two levels, the inner index's element count and its heap's dtype). */
  readonly heapDtype: DType;
  readonly heapLength: number;
  get(i: number | readonly number[], options?: { signal?: AbortSignal | undefined }): Promise<RaggedElement>;
  slice(from: number, to: number, options?: { signal?: AbortSignal | undefined }): Promise<RaggedElement[]>;
  /** [start, stop) of element i in its heap (rows, bytes, or for a reference [ref, ref + 1)). */
  bounds(i: number | readonly number[], options?: { signal?: AbortSignal | undefined }): Promise<[number, number]>;
  /** Elements in order, `size` at a time. */
  chunks(size: number): AsyncGenerator<RaggedElement[]>;
  close(): Promise<void>;
}

/** A ragged array read over HTTP range requests, with the requests it made. */
export interface RaggedUrlReader extends RaggedReader {
  readonly stats: { requests: number; bytes: number };
}

/** What a ragged reader reads from: region reads of a .npy (a file, a URL), closed with the reader. */
export interface RaggedPart extends RaggedSource {
  read(start: readonly number[], count: readonly number[], options?: { signal?: AbortSignal | undefined }): Promise<NdArray>;
  close?(): Promise<void>;
}

/**
 * A ragged array over any source: `open` opens a .npy by its name (a path, a URL), `heapOf` names an
 * index's heap from the index's name and its title (and refuses one outside the index's folder).
 * @example
 * const r = await openRaggedWith((u) => openNpyUrl(u), url, (i, h) => heapUrlOf(i, h));
 */
export async function openRaggedWith<P extends RaggedPart>(open: (name: string) => Promise<P>, name: string, heapOf: (index: string, heap: string) => string): Promise<RaggedReader & { parts: P[] }> {
  const parts: P[] = [];
  const closeAll = async (): Promise<void> => { for (const p of parts) await p.close?.(); };
  const run = <T>(reading: Reading<P, T>, signal?: AbortSignal): Promise<T> => runReading(reading, { open, read: (p, s, c) => p.read(s, c, { signal }) }, parts);
  try {
    const level = await run(openingLevel<P>(name, heapOf));
    const facts = levelFacts(level);
    const slice = (from: number, to: number, options: { signal?: AbortSignal | undefined } = {}): Promise<RaggedElement[]> => {
      facts.check(from, to);
      return run(readingElements(level, from, to), options.signal);
    };
    const { flat, check, checkChunk, ...described } = facts;
    return {
      parts,
      ...described,
      get: async (i, options) => { const k = flat(i); return (await slice(k, k + 1, options))[0]!; },
      slice,
      bounds: (i, options) => { const k = flat(i); check(k, k + 1); return run(readingBounds(level, k), options?.signal); },
      async *chunks(size) {
        checkChunk(size);
        for (let i = 0; i < level.length; i += size) yield await slice(i, Math.min(level.length, i + size));
      },
      close: closeAll,
    };
  } catch (e) {
    await closeAll();
    throw e;
  }
}

/** Options of {@link openRaggedUrl}: those of URL reads, and whether heaps may be elsewhere. */
export interface RaggedUrlOptions extends UrlOptions {
  /** Let an index name a heap on another origin or outside its own folder (off by default). */
  allowHeapOutside?: boolean;
}

/**
 * Open a ragged array over HTTP: elements are read with range requests of the index and the heap.
 * @example
 * const r = await openRaggedUrl('https://example.org/clips.npy');
 * await r.get(7);
 */
export async function openRaggedUrl(url: string | URL, options: RaggedUrlOptions = {}): Promise<RaggedUrlReader> {
  const reader = await openRaggedWith((u) => openNpyUrl(u, options), String(url), (i, h) => heapUrlOf(i, h, options));
  // Requests of the index and every heap, counted when asked.
  return Object.defineProperty(reader, 'stats', {
    get: () => reader.parts.reduce((t, p) => ({ requests: t.requests + p.stats.requests, bytes: t.bytes + p.stats.bytes }), { requests: 0, bytes: 0 }),
    enumerable: true,
  }) as RaggedReader & { parts: NpyUrlHandle[] } & RaggedUrlReader;
}
