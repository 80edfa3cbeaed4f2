/**
 * Ragged arrays, references and variable-length strings as plain .npy files (after numpy issue
 * #25374): what the files are, and how an index's words say where an element lives in its heap.
 *
 * An index is an ordinary .npy whose record dtype's first field carries the title
 * `npyts.ragged:v1 kind=<kind> heap=<percent-encoded path, relative to the index>`. Its field names
 * give the layout:
 * - `(start, stop)` (ranges): element = heap rows [start, stop); the index may have any shape.
 * - `(offsets,)` (offsets, Arrow-style): a 1-d index of n + 1 offsets, element i = rows
 *   [offsets[i], offsets[i+1]), in the smallest unsigned width that fits.
 * - `(start,)` with kind `utf8z` (zero-terminated strings): element = UTF-8 bytes from start to the
 *   next NUL byte of the heap; any shape.
 * - `(ref,)` with kind `ref` (references): element = one slice of the heap, `heap[ref]` for a C-order
 *   heap, `heap[..., ref]` for a Fortran-order one; any shape.
 * Kinds: `array` (rows of any dtype), `utf8` (bytes of text), `utf8z`, `ref`. A heap may itself be a
 * ragged index (a second level of raggedness). numpy loads every file with allow_pickle=False.
 */
import { type DType, recordDType } from '../format/dtype.js';
import { siblingUrl } from '../weights/place.js';
import { NpyError } from '../errors.js';
import type { NdArray } from '../array/ndarray.js';

/**
 * The title prefix that marks a ragged index's first field.
 * @example
 * raggedInfo(dtype)?.heap;   // set when the index dtype's title starts with RAGGED_TAG
 */
export const RAGGED_TAG = 'npyts.ragged:v1';

/** What an index's elements are: row ranges of arrays, UTF-8 text (ranged or zero-terminated), or references. */
export type RaggedKind = 'array' | 'utf8' | 'utf8z' | 'ref';

/** How an index locates its elements in the heap (told apart by the index's field names). */
export type RaggedLayout = 'ranges' | 'offsets' | 'zero-terminated' | 'references';

/** What a ragged index says about itself: its kind, its heap, and its layout. */
export interface RaggedInfo {
  kind: RaggedKind;
  /** The heap's path relative to the index file (or URL). */
  heap: string;
  layout: RaggedLayout;
}

/** The field names of each layout; the first carries the title. */
const FIELDS: Record<RaggedLayout, readonly string[]> = {
  ranges: ['start', 'stop'],
  offsets: ['offsets'],
  'zero-terminated': ['start'],
  references: ['ref'],
};

/** The kinds each layout can hold. */
const KINDS: Record<RaggedLayout, readonly RaggedKind[]> = {
  ranges: ['array', 'utf8'],
  offsets: ['array', 'utf8'],
  'zero-terminated': ['utf8z'],
  references: ['ref'],
};

/** An unsigned width in bytes: the compact layouts use the smallest that holds their largest word. */
export type WordWidth = 1 | 2 | 4 | 8;

/**
 * The smallest unsigned width holding `max`.
 * @example
 * widthFor(70000);   // 4
 */
export function widthFor(max: number): WordWidth {
  return max < 2 ** 8 ? 1 : max < 2 ** 16 ? 2 : max < 2 ** 32 ? 4 : 8;
}

/**
 * The index dtype of a layout (ranges when none is given): ranges `[((title, 'start'), '<u8'), ('stop', '<u8')]`, offsets
 * `[((title, 'offsets'), '<uW')]`, zero-terminated `[((title, 'start'), '<uW')]`, references
 * `[((title, 'ref'), '<u8')]`.
 * @example
 * raggedIndexDType({ kind: 'utf8', heap: 'w.npy.strings', layout: 'ranges' }).descrLiteral;
 */
export function raggedIndexDType(info: Omit<RaggedInfo, 'layout'> & { layout?: RaggedLayout }, width: WordWidth = 8): DType {
  const layout = info.layout ?? 'ranges';
  const words = layout === 'offsets' || layout === 'zero-terminated' ? width : 8;
  const word = words === 1 ? '|u1' : `<u${words}`;
  const title = `${RAGGED_TAG} kind=${info.kind} heap=${encodeURIComponent(info.heap)}`;
  return recordDType(FIELDS[layout].map((name, i) => ({ name, dtype: word, ...(i === 0 ? { title } : {}) })));
}

/**
 * What a ragged index says about itself, or null when the dtype is not one.
 * @example
 * raggedInfo(loadNpySync('words.npy').dtype);   // { kind: 'utf8', heap: 'words.npy.strings', layout: 'ranges' }
 */
export function raggedInfo(dtype: DType): RaggedInfo | null {
  const f = dtype.fields;
  const title = f?.[0]?.title ?? '';
  if (!f || !title.startsWith(`${RAGGED_TAG} `)) return null;
  const bad = (why: string): never => {
    throw new NpyError('BAD_RAGGED', `ragged index dtype ${JSON.stringify(dtype.descrLiteral)}: ${why}`);
  };
  const names = f.map((x) => x.name).join(',');
  const layout = (Object.keys(FIELDS) as RaggedLayout[]).find(
    (l) => FIELDS[l].join(',') === names && (l !== 'zero-terminated' || /\bkind=utf8z\b/.test(title)),
  );
  if (!layout) bad(`its fields (${names}) are none of the layouts (start, stop), (offsets), (start) for kind utf8z, (ref)`);
  const kind = /\bkind=(\S+)/.exec(title)?.[1] as RaggedKind | undefined;
  const heap = /\bheap=(\S+)/.exec(title)?.[1];
  if (!kind || !KINDS[layout!].includes(kind) || !heap) bad(`the title ${JSON.stringify(title)} needs kind=${KINDS[layout!].join('|')} and heap=`);
  for (const x of f) {
    if (x.dtype.kind !== 'u' || x.dtype.form !== 'scalar') bad(`field '${x.name}' is ${x.dtype.str}; ragged index words are unsigned integers`);
  }
  let path = '';
  try {
    path = decodeURIComponent(heap!);
  } catch {
    bad(`the heap name ${JSON.stringify(heap)} is not percent-encoded`);
  }
  if (path === '' || path.includes('\0')) bad(`the heap name ${JSON.stringify(heap)} is empty or holds a NUL byte, which no file name can`);
  return { kind: kind!, heap: path, layout: layout! };
}

/**
 * How many rows a heap offers the index above it: an offsets index has one word more than it has
 * elements, every other array (a plain heap, or an index of another layout) one row per first-axis entry.
 * @example
 * rowsInHeap({ shape: [6], dtype: raggedIndexDType({ kind: 'utf8', heap: 'h', layout: 'offsets' }) });   // 5
 */
export function rowsInHeap(header: { shape: readonly number[]; dtype: DType }): number {
  const rows = header.shape[0] ?? 0;
  return raggedInfo(header.dtype)?.layout === 'offsets' ? Math.max(0, rows - 1) : rows;
}

/**
 * The axis references pick along — the first, or the last of a Fortran-ordered heap — as its
 * length and the shape of one slice.
 * @example
 * referencedAxis([100, 20, 30], false);   // { rows: 100, slice: [20, 30] }
 */
export function referencedAxis(shape: readonly number[], fortran: boolean): { rows: number; slice: number[] } {
  return fortran ? { rows: shape[shape.length - 1] ?? 0, slice: shape.slice(0, -1) } : { rows: shape[0] ?? 0, slice: shape.slice(1) };
}

/** Heap names an index owns (written by default, and removed when it is replaced): `.heap`, `.strings`, `.heapN`, and their alternates `….1`, after the index's own name. */
export const OWNED_SUFFIX = /^\.(heap\d*|strings)(\.1)?$/;

/** How deep indexes may nest (an index whose heap is an index, …): far past any real use, and a file cannot make a reader loop. */
export const MAX_RAGGED_DEPTH = 32;

/**
 * The chain of indexes followed so far with `next` added, refused when `next` is already in it (a
 * cycle a file's title made) or the chain is deeper than {@link MAX_RAGGED_DEPTH}.
 */
export function followHeap(chain: readonly string[], next: string): string[] {
  if (chain.includes(next)) throw new NpyError('BAD_RAGGED', `ragged indexes form a cycle: ${[...chain.slice(chain.indexOf(next)), next].join(' → ')}`);
  if (chain.length >= MAX_RAGGED_DEPTH) throw new NpyError('BAD_RAGGED', `ragged indexes nest deeper than ${MAX_RAGGED_DEPTH} levels (${chain[0]} → …)`);
  return [...chain, next];
}

/** One element of a ragged array: an array, a string, or (two levels) a list of those. */
export type RaggedElement = NdArray | string | RaggedElement[];

const utf8 = new TextDecoder('utf-8', { fatal: true });

export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new NpyError('BAD_RAGGED', 'a ragged string element is not valid UTF-8');
  }
}

/**
 * The words of index records as numbers, field after field within each record (two per record for
 * ranges, one otherwise). Records are read raw in C order; a word above 2^53 is refused.
 */
export function indexWords(rows: NdArray): Float64Array {
  const fields = rows.dtype.fields!;
  const raw = rows.data as Uint8Array;
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const item = rows.dtype.itemsize;
  const k = fields.length;
  const n = rows.size;
  const out = new Float64Array(n * k);
  for (let j = 0; j < k; j++) {
    const { offset, dtype } = fields[j]!;
    const little = dtype.byteOrder !== '>';
    const w = dtype.itemsize;
    for (let i = 0; i < n; i++) {
      const at = i * item + offset;
      let v: number;
      if (w === 1) v = view.getUint8(at);
      else if (w === 2) v = view.getUint16(at, little);
      else if (w === 4) v = view.getUint32(at, little);
      else {
        const lo = view.getUint32(at + (little ? 0 : 4), little);
        const hi = view.getUint32(at + (little ? 4 : 0), little);
        if (hi >= 2 ** 21) throw new NpyError('BAD_RAGGED', `ragged index word ${i * k + j} (field '${fields[j]!.name}') is above 2^53`);
        v = hi * 2 ** 32 + lo;
      }
      out[i * k + j] = v;
    }
  }
  return out;
}

/**
 * The heap's URL: on the index's origin and under its folder, unless allowed.
 * @example
 * heapUrlOf('https://h/data/w.npy', 'w.npy.strings');   // 'https://h/data/w.npy.strings'
 */
export function heapUrlOf(indexUrl: string, heap: string, options: { allowHeapOutside?: boolean } = {}): string {
  if (options.allowHeapOutside) return new URL(heap, indexUrl).href;
  try {
    return siblingUrl(indexUrl, heap, 'the ragged heap', false);
  } catch (e) {
    if (!(e instanceof NpyError)) throw e;
    throw new NpyError('UNSAFE_PATH', `the ragged index ${e.message}; pass { allowHeapOutside: true } to allow it`);
  }
}
