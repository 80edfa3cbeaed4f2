/**
 * Ragged arrays and variable-length strings as plain .npy files (after numpy issue #25374).
 *
 * An index file is an ordinary .npy of records `(start, stop)`, both `<u8`: element i is rows
 * [start, stop) of a heap file, itself an ordinary .npy — the concatenated elements (shape
 * `(total, *tail)`, any dtype, records included), UTF-8 bytes (`|u1`) for strings, or another ragged
 * index for a second level of raggedness. The title of the `start` field says what the file is and
 * where its heap lives: `npyts.ragged:v1 kind=array heap=main.npy.heap` (kind `array` or `utf8`; the
 * heap path is relative to the index file, percent-encoded). numpy loads every file with
 * allow_pickle=False; a reader tells a ragged index from an ordinary array by that title.
 */
import { DType, recordDType } from '../format/dtype.js';
import { NpyError } from '../errors.js';
import type { NdArray } from '../array/ndarray.js';
import { openNpyUrl, type NpyUrlHandle, type UrlOptions } from '../io/url.js';

/**
 * The title that marks a ragged index's `start` field.
 * @example
 * raggedInfo(dtype)?.heap;   // set when the index dtype's title starts with RAGGED_TAG
 */
export const RAGGED_TAG = 'npyts.ragged:v1';

/** What a ragged array holds: arrays (`'array'`) or UTF-8 strings (`'utf8'`). */
export type RaggedKind = 'array' | 'utf8';

/** What a ragged index says about itself: its kind and heap. */
export interface RaggedInfo {
  kind: RaggedKind;
  /** The heap's path relative to the index file (or URL). */
  heap: string;
}

/**
 * The index dtype for a heap: `[((title, 'start'), '<u8'), ('stop', '<u8')]`.
 * @example
 * raggedIndexDType({ kind: 'utf8', heap: 'w.npy.strings' }).descrLiteral;
 */
export function raggedIndexDType(info: RaggedInfo): DType {
  return recordDType([
    { name: 'start', dtype: '<u8', title: `${RAGGED_TAG} kind=${info.kind} heap=${encodeURIComponent(info.heap)}` },
    { name: 'stop', dtype: '<u8' },
  ]);
}

/**
 * What a ragged index says about itself, or null when the dtype is not one.
 * @example
 * raggedInfo(loadNpySync('words.npy').dtype);   // { kind: 'utf8', heap: 'words.npy.strings' }
 */
export function raggedInfo(dtype: DType): RaggedInfo | null {
  const f = dtype.fields;
  if (!f || f.length !== 2 || f[0]!.name !== 'start' || f[1]!.name !== 'stop') return null;
  const title = f[0]!.title ?? '';
  if (!title.startsWith(`${RAGGED_TAG} `)) return null;
  const kind = /\bkind=(\S+)/.exec(title)?.[1];
  const heap = /\bheap=(\S+)/.exec(title)?.[1];
  if ((kind !== 'array' && kind !== 'utf8') || !heap) {
    throw new NpyError('BAD_DESCR', `ragged index title is malformed: ${JSON.stringify(title)}`);
  }
  return { kind, heap: decodeURIComponent(heap) };
}

/** One element of a ragged array: an array, a string, or (two levels) a list of those. */
export type RaggedElement = NdArray | string | RaggedElement[];

const utf8 = new TextDecoder('utf-8', { fatal: true });

export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new NpyError('BAD_ARRAY', 'a ragged string element is not valid UTF-8');
  }
}

/** An element from its heap: reads rows [start, stop) (whole trailing axes) with `read`, text for utf8 heaps. */
export function readElement<R extends NdArray | Promise<NdArray>>(
  read: (start: number[], count: number[]) => R, heapShape: readonly number[], kind: RaggedKind, start: number, stop: number,
): R extends Promise<NdArray> ? Promise<NdArray | string> : NdArray | string {
  const tail = heapShape.slice(1);
  const rows = read([start, ...tail.map(() => 0)], [stop - start, ...tail]);
  const asElement = (part: NdArray): NdArray | string => (kind === 'utf8' ? decodeUtf8(part.data as Uint8Array) : part);
  return (rows instanceof Promise ? rows.then(asElement) : asElement(rows as NdArray)) as never;
}

/** Bounds of elements [from, to) from the index rows read as (start, stop) pairs. */
export function boundsOf(index: NdArray): [number, number][] {
  const raw = index.data as Uint8Array;
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const out: [number, number][] = [];
  for (let i = 0; i < index.size; i++) {
    const s = view.getBigUint64(i * 16, true);
    const e = view.getBigUint64(i * 16 + 8, true);
    if (e < s || e > BigInt(Number.MAX_SAFE_INTEGER)) throw new NpyError('BAD_ARRAY', `ragged element ${i} has invalid bounds [${s}, ${e})`);
    out.push([Number(s), Number(e)]);
  }
  return out;
}

/** An open ragged array read asynchronously: the index rows, then the heap rows, of each element asked for. */
export interface RaggedReader {
  readonly length: number;
  readonly kind: RaggedKind;
  /** The heap's dtype and row count (for two levels, the inner index's). */
  readonly heapDtype: DType;
  readonly heapLength: number;
  get(i: number, options?: { signal?: AbortSignal | undefined }): Promise<RaggedElement>;
  slice(from: number, to: number, options?: { signal?: AbortSignal | undefined }): Promise<RaggedElement[]>;
  /** Elements in order, `size` at a time. */
  chunks(size: number): AsyncGenerator<RaggedElement[]>;
  close(): Promise<void>;
}

/** A ragged array read over HTTP range requests, with the requests it made. */
export interface RaggedUrlReader extends RaggedReader {
  readonly stats: { requests: number; bytes: number };
}

/** What a ragged reader reads from: region reads of a .npy (a file, a URL), closed with the reader. */
export interface RaggedPart {
  readonly dtype: DType;
  readonly shape: number[];
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
  const index = await open(name);
  const parts: P[] = [index];
  const closeAll = async (): Promise<void> => { for (const p of parts) await p.close?.(); };
  try {
    const info = raggedInfo(index.dtype);
    if (!info) {
      const fields = index.dtype.fields?.some((f) => raggedInfo(f.dtype)) ? '; it has ragged fields: use openRaggedRecordsSync' : '';
      throw new NpyError('BAD_DESCR', `${name} is not a ragged index (its dtype has no ${RAGGED_TAG} title)${fields}`);
    }
    const heapName = heapOf(name, info.heap);
    const heap = await open(heapName);
    parts.push(heap);
    const nested = raggedInfo(heap.dtype) ? await openRaggedWith(open, heapName, heapOf) : null;
    if (nested) {
      await heap.close?.();
      parts.pop();
      parts.push(...nested.parts);
    }
    const length = index.shape[0] ?? 0;
    const slice = async (from: number, to: number, options: { signal?: AbortSignal | undefined } = {}): Promise<RaggedElement[]> => {
      if (!Number.isInteger(from) || !Number.isInteger(to) || from < 0 || to > length || from > to) throw new NpyError('BAD_ARRAY', `elements [${from}, ${to}) are outside 0…${length}`);
      if (from === to) return [];
      const bounds = boundsOf(await index.read([from], [to - from], options));
      return Promise.all(bounds.map(async ([s, e]) => {
        if (nested) return nested.slice(s, e, options);
        return readElement((a, b) => heap.read(a, b, options), heap.shape, info.kind, s, e);
      }));
    };
    return {
      parts,
      length,
      kind: info.kind,
      heapDtype: nested ? nested.heapDtype : heap.dtype,
      heapLength: nested ? nested.length : heap.shape[0] ?? 0,
      get: async (i, options) => (await slice(i, i + 1, options))[0]!,
      slice,
      async *chunks(size) {
        for (let i = 0; i < length; i += size) yield await slice(i, Math.min(length, i + size));
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
 * The heap's URL: on the index's origin and under its folder, unless allowed.
 * @example
 * heapUrlOf('https://h/data/w.npy', 'w.npy.strings');   // 'https://h/data/w.npy.strings'
 */
export function heapUrlOf(indexUrl: string, heap: string, options: RaggedUrlOptions = {}): string {
  const index = new URL(indexUrl);
  const target = new URL(heap, index);
  const folder = new URL('.', index);
  if (!options.allowHeapOutside && (target.origin !== index.origin || target.protocol !== index.protocol || !target.pathname.startsWith(folder.pathname))) {
    throw new NpyError('UNSAFE_PATH', `the ragged index ${indexUrl} names the heap '${heap}', outside its own folder (${folder.href}); pass { allowHeapOutside: true } to allow it`);
  }
  return target.href;
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
