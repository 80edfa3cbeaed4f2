/** Ragged readers with promises, over any source of region reads: files (`@npyts/core/node`) and URLs. */
import type { DType } from '../format/dtype.js';
import type { NdArray } from '../array/ndarray.js';
import { URL_KEYS, openNpyUrl, type NpyUrlHandle, type UrlOptions } from '../io/url.js';
import { checkOptions, knownKeys } from '../options.js';
import { RAGGED_PATH_KEYS } from './build.js';
import { heapUrlOf, type RaggedElement, type RaggedKind, type RaggedLayout } from './convention.js';
import { levelFacts, openingLevel, readingBounds, readingElements, runReading, type RaggedLevel, type RaggedSource, type Reading } from './reading.js';
import { referencedAxis } from './convention.js';

/** What every open ragged array tells before reading an element. */
export interface RaggedFacts {
  /** The index's name (a path, a URL). */
  readonly path: string;
  /** Its heap's name (for two levels, the inner index's). */
  readonly heapPath: string;
  /** Number of elements (the product of `indexShape`). */
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
  /** The heap's trailing shape: an element is `(k, *tail)` (empty for strings, references and two levels). */
  readonly tail: number[];
}

/** An open ragged array read asynchronously: the index rows, then the heap rows, of each element asked for. */
export interface RaggedReader extends RaggedFacts {
  get(i: number | readonly number[], options?: { signal?: AbortSignal | undefined }): Promise<RaggedElement>;
  slice(from: number, to: number, options?: { signal?: AbortSignal | undefined }): Promise<RaggedElement[]>;
  /** [start, stop) of element i in its heap (rows, bytes, or for a reference [ref, ref + 1)). */
  bounds(i: number | readonly number[], options?: { signal?: AbortSignal | undefined }): Promise<[number, number]>;
  /** Shape of element i: `(k, *tail)`, the number of UTF-8 bytes, the number of sub-elements, or a reference's slice shape. */
  shape(i: number | readonly number[], options?: { signal?: AbortSignal | undefined }): Promise<number[]>;
  /** Elements in order, `size` at a time. */
  chunks(size: number): AsyncGenerator<RaggedElement[]>;
  close(): Promise<void>;
}

/** Runs a reading: blocking (its result) or with promises. */
type RunReading<P> = <T>(reading: Reading<P, T>, signal?: AbortSignal) => T | Promise<T>;

/**
 * The one definition of a ragged reader's methods: each is a reading run by `run`, so the blocking
 * handle (`openRaggedSync`) and the async reader are the same code. Checks run inside the readings,
 * so that an async reader rejects rather than throws.
 */
export function raggedMethods<P extends RaggedSource>(path: string, level: RaggedLevel<P>, run: RunReading<P>) {
  const { flat, check, checkChunk, ...facts } = levelFacts(level);
  const heap = level.inner ? null : level.heap;
  const tail = heap && level.info.kind !== 'ref' ? heap.shape.slice(1) : [];
  function* elements(from: number, to: number): Reading<P, RaggedElement[]> {
    check(from, to);
    return yield* readingElements(level, from, to);
  }
  function* element(i: number | readonly number[]): Reading<P, RaggedElement> {
    const k = flat(i);
    return (yield* elements(k, k + 1))[0]!;
  }
  function* bounding(i: number | readonly number[]): Reading<P, [number, number]> {
    const k = flat(i);
    check(k, k + 1);
    return yield* readingBounds(level, k);
  }
  function* shaping(i: number | readonly number[]): Reading<P, number[]> {
    // Every reference picks a slice of one shape; other elements are (k, *tail).
    if (level.info.kind === 'ref') {
      const k = flat(i);
      check(k, k + 1);
      return referencedAxis(level.heap.shape, level.heap.order === 'F').slice;
    }
    const [s, e] = yield* bounding(i);
    return [e - s, ...tail];
  }
  type Signal = { signal?: AbortSignal | undefined };
  return {
    path,
    heapPath: level.heapName,
    ...facts,
    tail,
    checkChunk,
    get: (i: number | readonly number[], options: Signal = {}) => run(element(i), options.signal),
    slice: (from: number, to: number, options: Signal = {}) => run(elements(from, to), options.signal),
    bounds: (i: number | readonly number[], options: Signal = {}) => run(bounding(i), options.signal),
    shape: (i: number | readonly number[], options: Signal = {}) => run(shaping(i), options.signal),
  };
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
export async function openRaggedWith<P extends RaggedPart>(
  open: (name: string) => Promise<P>,
  name: string,
  heapOf: (index: string, heap: string) => string,
): Promise<RaggedReader & { parts: P[] }> {
  const parts: P[] = [];
  const closeAll = async (): Promise<void> => {
    for (const p of parts) await p.close?.();
  };
  const run = <T>(reading: Reading<P, T>, signal?: AbortSignal): Promise<T> =>
    runReading(reading, { open, read: (p, s, c) => p.read(s, c, { signal }) }, parts);
  try {
    const level = await run(openingLevel<P>(name, heapOf));
    const { checkChunk, ...methods } = raggedMethods<P>(name, level, run);
    const reader = methods as unknown as Omit<RaggedReader, 'chunks' | 'close'>;
    return {
      parts,
      ...reader,
      async *chunks(size) {
        checkChunk(size);
        for (let i = 0; i < level.length; i += size) yield await reader.slice(i, Math.min(level.length, i + size));
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
const RAGGED_URL_KEYS = knownKeys<RaggedUrlOptions>({ ...URL_KEYS, ...RAGGED_PATH_KEYS });

/**
 * Open a ragged array over HTTP: elements are read with range requests of the index and the heap.
 * @example
 * const r = await openRaggedUrl('https://example.org/clips.npy');
 * await r.get(7);
 */
export async function openRaggedUrl(url: string | URL, options: RaggedUrlOptions = {}): Promise<RaggedUrlReader> {
  checkOptions('openRaggedUrl', options, RAGGED_URL_KEYS);
  // Heaps are confined to the index's folder, after redirects too (unless allowed elsewhere).
  const { allowHeapOutside, ...urlOptions } = options;
  const within = allowHeapOutside ? undefined : new URL('.', String(url)).href;
  const reader = await openRaggedWith(
    (u) => openNpyUrl(u, u === String(url) || within === undefined ? urlOptions : { ...urlOptions, within }),
    String(url),
    (i, h) => heapUrlOf(i, h, options),
  );
  // Requests of the index and every heap, counted when asked.
  return Object.defineProperty(reader, 'stats', {
    get: () => reader.parts.reduce((t, p) => ({ requests: t.requests + p.stats.requests, bytes: t.bytes + p.stats.bytes }), { requests: 0, bytes: 0 }),
    enumerable: true,
  }) as RaggedReader & { parts: NpyUrlHandle[] } & RaggedUrlReader;
}
