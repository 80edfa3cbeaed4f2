/** Ragged arrays on disk: write, open, read elements by region, append (heap first, index after). */
import { existsSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { getField } from '../array/records.js';
import { checkDataPresent, toNdArray, type ArraySpec } from '../npy.js';
import { parseDescr, recordDType, shapeRepr, type DType } from '../format/dtype.js';
import { NpyError } from '../errors.js';
import { NdArray, isOrderFree } from '../array/ndarray.js';
import { appending, droppingRows, openNpy, openNpySync, type NpyFileHandleSync } from './regions.js';
import type { AsyncOptions } from '../io/handles.js';
import { readingNpyHeader, readNpyHeader, readNpyHeaderSync, savingNpy } from './npy-files.js';
import type { NpyHeader } from '../format/header.js';
import { appendLocked } from './lock.js';
import { run, runSync } from './drive.js';
import { withFile, type Operation } from '../io/steps.js';
import { readingHeader } from '../io/header-read.js';
import { readingRegion } from '../io/region.js';
import { toOrder } from '../array/order.js';
import { decodeUtf8, followHeap, MAX_RAGGED_DEPTH, rowsInHeap, indexWords, raggedIndexDType, raggedInfo, referencedAxis, widthFor, type RaggedElement, type RaggedInfo, type RaggedKind, type RaggedLayout, type WordWidth } from '../ragged/convention.js';
import { openingLevel, pairsOf, readingPairs, runReadingSync, type RaggedLevel, type Reading } from '../ragged/reading.js';
import { openRaggedWith, raggedMethods, type RaggedFacts, type RaggedReader } from '../ragged/readers.js';
import { arrayFromValues } from '../array/write-value.js';

type Input = NdArray | ArraySpec | string | Input[];

/** Options of ragged file functions: whether a heap may be outside the index's folder. */
export interface RaggedPathOptions {
  /**
   * Let an index name a heap outside its own folder (`..`, an absolute path, or a symlink that
   * leads out). Off by default: the heap's name comes from the file, and a file from elsewhere must
   * not make npyts read or write files it was not given.
   */
  allowHeapOutside?: boolean;
}

/**
 * The heap's path for an index at `indexPath`, confined to the index's folder unless allowed.
 * @example
 * heapPathOf('/data/words.npy', 'words.npy.strings');   // '/data/words.npy.strings'
 */
export function heapPathOf(indexPath: string, heap: string, options: RaggedPathOptions = {}): string {
  const folder = resolve(dirname(indexPath));
  const target = resolve(folder, heap);
  if (options.allowHeapOutside) return target;
  const inside = (root: string, p: string): boolean => p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);
  const refuse = (why: string): never => {
    throw new NpyError('UNSAFE_PATH', `the ragged index ${indexPath} names the heap '${heap}', ${why}; pass { allowHeapOutside: true } to allow it`);
  };
  if (isAbsolute(heap)) refuse('an absolute path');
  if (heap.split(/[\\/]/).includes('..') || !inside(folder, target)) refuse('outside the index\'s folder');
  // Symlinks: the nearest part of the path that exists must resolve inside the folder too.
  let existing = target;
  while (!existsSync(existing) && inside(folder, dirname(existing)) && existing !== folder) existing = dirname(existing);
  if (existsSync(existing) && !inside(realpathSync(folder), realpathSync(existing))) refuse('which a symbolic link leads outside the index\'s folder');
  return target;
}

/** Options of {@link saveRaggedSync}: the layout, the heap's name (to share one), and dtypes of record fields. */
export interface SaveRaggedOptions extends RaggedPathOptions {
  /**
   * How the index locates elements: `'ranges'` (default; a `(start, stop)` pair of `<u8` per
   * element), `'offsets'` (Arrow-style: one offset per element plus one, in the smallest unsigned
   * width that fits, widened when an append needs it; the index owns its heap), or for strings
   * `'zero-terminated'` (one start per element in the smallest width; each string ends with a NUL
   * byte, so strings cannot contain U+0000). In records, string fields take `'zero-terminated'`,
   * other layouts give ranges (one element per record).
   */
  layout?: 'ranges' | 'offsets' | 'zero-terminated';
  /** The heap's path (relative to the index's folder): another file for cross-file references. Default `<index>.heap`, or `<index>.strings` for text. */
  heap?: string;
  /** For records: dtypes of the ordinary fields (default from the values: numbers `<f8`, bigints `<i8`, booleans `|b1`). */
  dtypes?: Record<string, string>;
  /** The index's shape, for an N-d index (elements in C order; ranges and zero-terminated layouts). Default `(n,)`. */
  shape?: readonly number[];
}

/** A text heap: 1-d bytes. */
const bytesArray = (bytes: Uint8Array): NdArray => new NdArray(parseDescr('|u1'), [bytes.length], bytes);

function kindOf(elements: Input[]): 'array' | 'utf8' | 'nested' {
  if (elements.length === 0) return 'array';
  if (elements.every((e) => typeof e === 'string')) return 'utf8';
  if (elements.every((e) => Array.isArray(e))) return 'nested';
  if (elements.some((e) => typeof e === 'string' || Array.isArray(e))) throw new NpyError('BAD_ARRAY', 'ragged elements must all be arrays, all strings, or all lists');
  return 'array';
}

/** Elements of kind `array` checked for one dtype and trailing shape, as C-order arrays in the heap's byte order. */
function arrays(elements: Input[], heapDtype?: DType): { dtype: DType; tail: number[]; parts: NdArray[] } {
  const parts = elements.map((e) => toOrder(toNdArray(e as NdArray | ArraySpec), 'C'));
  const dtype = heapDtype ?? parts[0]?.dtype;
  if (!dtype) throw new NpyError('BAD_ARRAY', 'an empty ragged array needs a heap to name its dtype');
  const first = parts[0];
  const tail = first ? first.shape.slice(1) : [];
  parts.forEach((p, i) => {
    if (p.ndim === 0) throw new NpyError('BAD_ARRAY', `ragged element ${i} is 0-d; elements need a first axis`);
    if (p.dtype.withByteOrder('<').descrLiteral !== dtype.withByteOrder('<').descrLiteral) {
      throw new NpyError('BAD_ARRAY', `ragged element ${i} has dtype ${p.dtype.descrLiteral}, the heap ${dtype.descrLiteral}`);
    }
    if (shapeRepr(p.shape.slice(1)) !== shapeRepr(tail)) throw new NpyError('BAD_ARRAY', `ragged element ${i} has trailing shape ${shapeRepr(p.shape.slice(1))}, the others ${shapeRepr(tail)}`);
  });
  return { dtype, tail, parts };
}

function concatenate(dtype: DType, tail: number[], parts: NdArray[]): NdArray {
  const rows = parts.reduce((n, p) => n + p.shape[0]!, 0);
  if (parts.length === 1) return parts[0]!;
  const Ctor = (parts[0]?.data.constructor ?? Uint8Array) as new (n: number) => Uint8Array;
  const total = parts.reduce((n, p) => n + p.data.length, 0);
  const out = new Ctor(total);
  let o = 0;
  for (const p of parts) { out.set(p.data as Uint8Array, o); o += p.data.length; }
  return new NdArray(parts[0]?.dtype ?? dtype, [rows, ...tail], out, 'C');
}

/**
 * An index array of `dtype` (one or two unsigned fields) holding `words` in record order, written as
 * raw little-endian bytes (words stay below 2^53: an 8-byte word is two 32-bit halves, no BigInt).
 */
function wordsArray(dtype: DType, words: ArrayLike<number>, shape: number[]): NdArray {
  const width = dtype.fields![0]!.dtype.itemsize;
  const bytes = new Uint8Array(words.length * width);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < words.length; i++) {
    const v = words[i]!;
    if (width === 8) {
      view.setUint32(8 * i, v >>> 0, true);
      view.setUint32(8 * i + 4, Math.floor(v / 2 ** 32), true);
    } else if (width === 4) view.setUint32(4 * i, v, true);
    else if (width === 2) view.setUint16(2 * i, v, true);
    else bytes[i] = v;
  }
  return new NdArray(dtype, shape, bytes);
}

/** The words an index of `layout` stores for elements with these bounds: pairs, stops (after a first offset), or starts. */
function wordsOf(layout: RaggedLayout, bounds: Bounds): Float64Array {
  const n = bounds.length / 2;
  if (layout === 'ranges') return bounds;
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = bounds[2 * i + (layout === 'offsets' ? 1 : 0)]!;
  return out;
}

/** The largest of some words (0 for none). */
const maxOf = (words: ArrayLike<number>): number => {
  let m = 0;
  for (let i = 0; i < words.length; i++) if (words[i]! > m) m = words[i]!;
  return m;
};

/** A whole new index: for offsets, the first offset (where the heap rows begin) comes first. */
function indexArray(info: RaggedInfo, bounds: Bounds, firstOffset: number): NdArray {
  let words = wordsOf(info.layout, bounds);
  if (info.layout === 'offsets') {
    const all = new Float64Array(words.length + 1);
    all[0] = firstOffset;
    all.set(words, 1);
    words = all;
  }
  const dtype = raggedIndexDType(info, widthFor(maxOf(words)));
  return wordsArray(dtype, words, [info.layout === 'ranges' ? bounds.length / 2 : words.length]);
}

/** Element bounds as (start, stop) pairs, interleaved: one typed array instead of an array per element. */
type Bounds = Float64Array;

/**
 * Strings as one UTF-8 heap and their bounds from `offset`, encoded here straight into the heap (no
 * array per string; TextEncoder's call per string cost more than the encoding). Lone surrogates
 * become U+FFFD, as TextEncoder makes them. With `terminated`, each string is followed by a NUL byte
 * (not within its bounds), and a string containing U+0000 is refused. The heap grows as needed.
 */
function utf8Heap(strings: readonly string[], offset: number, terminated = false): { bytes: Uint8Array; bounds: Bounds } {
  const bounds = new Float64Array(2 * strings.length);
  let units = 0;
  for (const s of strings) units += s.length;
  let out = new Uint8Array(units + (terminated ? strings.length : 0) + 1024);
  let p = 0;
  for (let i = 0; i < strings.length; i++) {
    const s = strings[i]!;
    const n = s.length;
    if (p + 3 * n + 1 > out.length) {
      const bigger = new Uint8Array(Math.max(2 * out.length, p + 3 * n + 1));
      bigger.set(out.subarray(0, p));
      out = bigger;
    }
    bounds[2 * i] = offset + p;
    for (let k = 0; k < n; k++) {
      const c = s.charCodeAt(k);
      if (c < 0x80) {
        if (c === 0 && terminated) throw new NpyError('BAD_ARRAY', `string ${i} contains U+0000, which the zero-terminated layout cannot hold; use layout 'ranges' or 'offsets'`);
        out[p++] = c;
      } else if (c < 0x800) {
        out[p++] = 0xc0 | (c >> 6);
        out[p++] = 0x80 | (c & 0x3f);
      } else if (c < 0xd800 || c > 0xdfff) {
        out[p++] = 0xe0 | (c >> 12);
        out[p++] = 0x80 | ((c >> 6) & 0x3f);
        out[p++] = 0x80 | (c & 0x3f);
      } else {
        const d = k + 1 < n ? s.charCodeAt(k + 1) : 0;
        if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
          // A surrogate pair: four bytes (within the 3-per-unit bound for its two units).
          const cp = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          out[p++] = 0xf0 | (cp >> 18);
          out[p++] = 0x80 | ((cp >> 12) & 0x3f);
          out[p++] = 0x80 | ((cp >> 6) & 0x3f);
          out[p++] = 0x80 | (cp & 0x3f);
          k++;
        } else {
          out[p++] = 0xef; // U+FFFD for a lone surrogate
          out[p++] = 0xbf;
          out[p++] = 0xbd;
        }
      }
    }
    bounds[2 * i + 1] = offset + p;
    if (terminated) out[p++] = 0;
  }
  return { bytes: out.subarray(0, p), bounds };
}

/** The heap rows appended for `elements`, and their bounds counted from `offset`. */
function heapRows(elements: Input[], offset: number, heapDtype?: DType, terminated = false): { kind: RaggedKind; rows: NdArray | null; bounds: Bounds; nested?: Input[] } {
  const kind = kindOf(elements);
  if (kind === 'utf8' || (terminated && elements.length === 0)) {
    const { bytes, bounds } = utf8Heap(elements as string[], offset, terminated);
    return { kind: terminated ? 'utf8z' : 'utf8', rows: bytesArray(bytes), bounds };
  }
  if (terminated) throw new NpyError('BAD_ARRAY', 'the zero-terminated layout holds strings only');
  const bounds = new Float64Array(2 * elements.length);
  let at = offset;
  const bound = (i: number, rows: number): void => { bounds[2 * i] = at; bounds[2 * i + 1] = at + rows; at += rows; };
  if (kind === 'nested') {
    // Two levels: this index ranges over a heap that is itself a ragged index.
    const inner = elements.flatMap((e) => e as Input[]);
    elements.forEach((e, i) => bound(i, (e as Input[]).length));
    return { kind: 'array', rows: null, bounds, nested: inner };
  }
  const { dtype, tail, parts } = arrays(elements, heapDtype);
  parts.forEach((p, i) => bound(i, p.shape[0]!));
  return { kind, rows: parts.length ? concatenate(dtype, tail, parts) : null, bounds };
}

/** Plain objects: records, some of whose fields are ragged (arrays or strings). */
function isRecordList(elements: unknown[]): elements is Record<string, unknown>[] {
  return elements.length > 0 && elements.every((e) => e !== null && typeof e === 'object' && Object.getPrototypeOf(e) === Object.prototype && !('data' in (e as object)));
}

const isRaggedValue = (v: unknown): boolean => typeof v === 'string' || v instanceof NdArray || (typeof v === 'object' && v !== null && 'data' in v);

/** The dtype of an ordinary (fixed-size) field from its JS values, unless given. */
function scalarDescr(name: string, values: unknown[], given?: string): string {
  if (given) return given;
  if (values.every((v) => typeof v === 'boolean')) return '|b1';
  if (values.every((v) => typeof v === 'bigint')) return '<i8';
  if (values.every((v) => typeof v === 'number')) return '<f8';
  throw new NpyError('BAD_ARRAY', `field '${name}' mixes kinds of values; give its dtype in options.dtypes`);
}

/**
 * Records with ragged fields, named as numpy#25374's option 1: `main.npy` holds the record array;
 * array fields range over `main.npy.heap1`, `main.npy.heap2`, … (in field order), and every string
 * field over the one `main.npy.strings`. Other fields are ordinary columns.
 */
function* savingRecords(path: string, records: Record<string, unknown>[], dtypes: Record<string, string>, layout: SaveRaggedOptions['layout'], taken: readonly string[]): Operation<void> {
  const strings = freshHeapName(path, `${basename(path)}.strings`, taken);
  const saves: { path: string; array: NdArray }[] = [];
  const names = Object.keys(records[0]!);
  const specs: { name: string; dtype: DType | string }[] = [];
  const columns: Record<string, unknown[]> = {};
  const terminated = layout === 'zero-terminated';
  const text: Uint8Array[] = [];
  let textBytes = 0;
  let arrayHeaps = 0;
  for (const name of names) {
    const values = records.map((r, i) => {
      if (!(name in r)) throw new NpyError('BAD_ARRAY', `record ${i} has no field '${name}'`);
      return r[name];
    });
    if (!values.every(isRaggedValue)) {
      specs.push({ name, dtype: scalarDescr(name, values, dtypes[name]) });
      columns[name] = values;
      continue;
    }
    let info: RaggedInfo;
    let bounds: Bounds;
    if (values.every((v) => typeof v === 'string')) {
      const heap = utf8Heap(values as string[], textBytes, terminated);
      text.push(heap.bytes);
      textBytes += heap.bytes.length;
      bounds = heap.bounds;
      info = { kind: terminated ? 'utf8z' : 'utf8', heap: strings, layout: terminated ? 'zero-terminated' : 'ranges' };
    } else {
      const heap = freshHeapName(path, `${basename(path)}.heap${++arrayHeaps}`, taken);
      const made = heapRows(values as Input[], 0);
      saves.push({ path: join(dirname(path), heap), array: made.rows ?? bytesArray(new Uint8Array(0)) });
      bounds = made.bounds;
      info = { kind: made.kind, heap, layout: 'ranges' };
    }
    specs.push({ name, dtype: raggedIndexDType(info) });
    columns[name] = values.map((_, i) => (info.layout === 'ranges' ? { start: BigInt(bounds[2 * i]!), stop: BigInt(bounds[2 * i + 1]!) } : { start: BigInt(bounds[2 * i]!) }));
  }
  if (text.length) {
    const all = new Uint8Array(textBytes);
    let at = 0;
    for (const t of text) { all.set(t, at); at += t.length; }
    saves.push({ path: join(dirname(path), strings), array: bytesArray(all) });
  }
  // Every field checked and every array built before the first write.
  const main = arrayFromValues(records.map((_, i) => Object.fromEntries(names.map((n) => [n, columns[n]![i]]))), recordDType(specs), { shape: [records.length] });
  for (const save of saves) yield* savingNpy(save.path, save.array);
  yield* savingNpy(path, main);
}

/** The index shape for `n` elements: `shape` when given (ranges and zero-terminated only), else `(n,)`. */
function gridOf(n: number, layout: RaggedLayout, shape?: readonly number[]): number[] {
  if (!shape) return [n];
  if (layout === 'offsets') throw new NpyError('BAD_ARRAY', 'an offsets index is 1-d; give N-d indexes the ranges or zero-terminated layout');
  if (shape.reduce((p, x) => p * x, 1) !== n) throw new NpyError('BAD_ARRAY', `${n} elements do not fill an index of shape ${shapeRepr(shape)}`);
  return [...shape];
}

/**
 * Write a ragged array as steps (see {@link FileStep}). A ragged array already at `path` is replaced
 * under its append lock (so no append mixes the two), and never in place: the new heaps are written
 * under names the old index does not use, the new index is renamed over the old one (the one atomic
 * step), and only then are the old heaps removed. A reader, a crash or an abort at any moment sees the
 * old array or the new one, never the old index over a new heap.
 */
function* savingRagged(path: string, elements: Input[] | Record<string, unknown>[], options: SaveRaggedOptions = {}): Operation<void> {
  if (!((yield { op: 'exists', path }) as boolean)) {
    yield* replacingRagged(path, elements, options, []);
    return;
  }
  yield* appendLocked(path, function* () {
    yield* replacingRagged(path, elements, options, yield* ownedHeaps(path));
  });
}

/** Heap names an index owns (written by default, and removed when it is replaced): `.heap`, `.strings`, `.heapN`, and their alternates `….1`. */
const OWNED_SUFFIX = /^\.(heap\d*|strings)(\.1)?$/;

/**
 * The heaps the ragged file at `path` owns, with those of the indexes they hold (two levels), as
 * resolved paths; none when the file is absent, unreadable or not ragged. Only names of
 * {@link OWNED_SUFFIX} beside the index count: a heap named by the caller is never owned.
 */
function* ownedHeaps(path: string, chain: readonly string[] = [resolve(path)]): Operation<string[]> {
  const header = yield* headerOrNull(path);
  if (!header) return [];
  const infos: RaggedInfo[] = [];
  try {
    const top = raggedInfo(header.dtype);
    if (top) infos.push(top);
    else for (const f of header.dtype.fields ?? []) { const i = raggedInfo(f.dtype); if (i) infos.push(i); }
  } catch {
    return []; // a malformed title: nothing of it is ours to remove
  }
  const index = resolve(path);
  const out: string[] = [];
  for (const info of infos) {
    const heap = resolve(dirname(index), info.heap);
    if (!heap.startsWith(index) || !OWNED_SUFFIX.test(heap.slice(index.length)) || chain.includes(heap) || out.includes(heap)) continue;
    if (!((yield { op: 'exists', path: heap }) as boolean)) continue;
    out.push(heap, ...(chain.length < MAX_RAGGED_DEPTH ? yield* ownedHeaps(heap, [...chain, heap]) : []));
  }
  return out;
}

/** `wanted` (a heap name beside the index), or its alternate `wanted.1` when the index being replaced uses `wanted`. */
function freshHeapName(path: string, wanted: string, taken: readonly string[]): string {
  return taken.includes(resolve(dirname(path), wanted)) ? `${wanted}.1` : wanted;
}

/** Write the new heaps and index (replacing one whose heaps are `taken`), then remove the heaps of `taken` the new one does not use. */
function* replacingRagged(path: string, elements: Input[] | Record<string, unknown>[], options: SaveRaggedOptions, taken: readonly string[]): Operation<void> {
  if (isRecordList(elements)) {
    if (options.shape) throw new NpyError('BAD_ARRAY', 'records with ragged fields are 1-d; `shape` is for an index of elements');
    yield* savingRecords(path, elements, options.dtypes ?? {}, options.layout, taken);
  } else {
    yield* savingElements(path, elements as Input[], options, taken);
  }
  if (!taken.length) return;
  const kept = yield* ownedHeaps(path);
  for (const heap of taken) if (!kept.includes(heap)) yield { op: 'remove', path: heap };
}

/** Write ragged elements: all checks first, then the heap (or rows appended to a shared one), then the index. */
function* savingElements(path: string, elements: Input[], options: SaveRaggedOptions, taken: readonly string[]): Operation<void> {
  const layout = options.layout ?? 'ranges';
  const kind = kindOf(elements);
  const terminated = layout === 'zero-terminated' && kind !== 'nested';
  const shared = options.heap !== undefined && ((yield { op: 'exists', path: heapPathOf(path, options.heap, options) }) as boolean);
  const heapName = options.heap ?? freshHeapName(path, `${basename(path)}.${kind === 'utf8' || terminated ? 'strings' : 'heap'}`, taken);
  const heapPath = heapPathOf(path, heapName, options);
  if (heapPath === resolve(path)) throw new NpyError('BAD_ARRAY', `${path} cannot be its own heap`);
  if (shared && layout === 'offsets') throw new NpyError('BAD_ARRAY', `an offsets index owns its heap, and ${heapName} exists; share a heap with the ranges layout`);
  let offset = 0;
  let heapDtype: DType | undefined;
  if (shared) {
    const h = yield* readingNpyHeader(heapPath);
    offset = rowsInHeap(h);
    heapDtype = h.dtype;
  }
  const { kind: k, rows, bounds, nested } = heapRows(elements, offset, heapDtype, terminated);
  const info: RaggedInfo = { kind: k, heap: relative(dirname(path), heapPath), layout: nested && layout === 'zero-terminated' ? 'ranges' : layout };
  // Every check before the first write: a refused save leaves the files as they were.
  const grid = info.layout === 'offsets' && !options.shape ? null : gridOf(bounds.length / 2, info.layout, options.shape);
  if (!nested && !rows && !shared && k !== 'utf8') throw new NpyError('BAD_ARRAY', 'an empty ragged array of arrays needs an existing heap to name its dtype');
  const index = indexArray(info, bounds, offset);
  if (nested) {
    if (shared) yield* appendingRagged(heapPath, nested, {});
    else yield* savingRagged(heapPath, nested, { layout });
  } else if (rows) {
    if (shared) yield* lockedAppend(heapPath, rows);
    else yield* savingNpy(heapPath, rows);
  } else if (!shared) {
    yield* savingNpy(heapPath, bytesArray(new Uint8Array(0)));
  }
  yield* savingNpy(path, grid ? new NdArray(index.dtype, grid, index.data) : index);
}

/**
 * Write a ragged array: the heap (or, for cross-file references, rows appended to an existing heap),
 * then the index. Elements are arrays of one dtype and trailing shape, strings, lists of those, or
 * plain objects (records whose array or string fields become ragged fields). `layout` picks the
 * index (ranges by default, Arrow-style offsets, or zero-terminated strings); `shape` gives an N-d
 * index its shape (elements in C order).
 * The files are written off the event loop; `signal` stops between files.
 * @example
 * await saveRagged('words.npy', ['a', 'bc', 'def'], { layout: 'offsets' });   // words.npy + words.npy.strings
 */
export function saveRagged(path: string, elements: Input[] | Record<string, unknown>[], options: SaveRaggedOptions & AsyncOptions = {}): Promise<void> {
  return run(savingRagged(path, elements, options), options.signal);
}

/**
 * {@link saveRagged}, blocking.
 * @example
 * saveRaggedSync('words.npy', ['a', 'bc', 'def']);   // words.npy + words.npy.strings
 */
export function saveRaggedSync(path: string, elements: Input[] | Record<string, unknown>[], options: SaveRaggedOptions = {}): void {
  runSync(savingRagged(path, elements, options));
}

function* savingReferences(path: string, refs: NdArray | ArraySpec, heap: string | NdArray | ArraySpec, options: RaggedPathOptions): Operation<void> {
  const heapPath = heapPathOf(path, typeof heap === 'string' ? heap : `${basename(path)}.heap`, options);
  const given = typeof heap === 'string' ? null : toNdArray(heap);
  const h = given ? null : (yield* readingNpyHeader(heapPath));
  const heapShape = given ? given.shape : h!.shape;
  if (heapShape.length === 0) throw new NpyError('BAD_ARRAY', 'references need a heap with at least one axis');
  // The order the heap has (or will have) on disk: saveNpy writes Fortran order only where it differs from C.
  const { rows } = referencedAxis(heapShape, given ? given.order === 'F' && !isOrderFree(given.shape) : h!.fortranOrder);
  const r = toOrder(toNdArray(refs), 'C');
  if (r.dtype.kind !== 'i' && r.dtype.kind !== 'u') throw new NpyError('BAD_ARRAY', `references must be integers, not ${r.dtype.str}`);
  const words = new Float64Array(r.size);
  for (let i = 0; i < r.size; i++) {
    const v = Number(r.data[i] as number | bigint);
    if (!(v >= 0 && v < rows)) throw new NpyError('BAD_ARRAY', `reference ${i} is ${v}, outside the heap's ${rows} rows`);
    words[i] = v;
  }
  if (given) yield* savingNpy(heapPath, given);
  const dtype = raggedIndexDType({ kind: 'ref', heap: relative(dirname(path), heapPath), layout: 'references' });
  yield* savingNpy(path, wordsArray(dtype, words, r.shape));
}

/**
 * Write references (numpy#25374): an index of any shape whose integers each pick one slice of a heap
 * — `heap[ref]`, or `heap[..., ref]` for a Fortran-ordered heap — so a `(120, 5, 10)` index into a
 * `(100, 20, 30)` heap reads as `(120, 5, 10, 20, 30)`. `heap` is an existing .npy (a path relative
 * to the index's folder) or an array, written as `<index>.heap`.
 * @example
 * await saveReferences('picks.npy', { data: new Int32Array([2, 0, 2]), shape: [3] }, 'frames.npy');
 */
export function saveReferences(path: string, refs: NdArray | ArraySpec, heap: string | NdArray | ArraySpec, options: RaggedPathOptions & AsyncOptions = {}): Promise<void> {
  return run(savingReferences(path, refs, heap, options), options.signal);
}

/**
 * {@link saveReferences}, blocking.
 * @example
 * saveReferencesSync('picks.npy', { data: new Int32Array([2, 0, 2]), shape: [3] }, 'frames.npy');
 */
export function saveReferencesSync(path: string, refs: NdArray | ArraySpec, heap: string | NdArray | ArraySpec, options: RaggedPathOptions = {}): void {
  runSync(savingReferences(path, refs, heap, options));
}

/** An open ragged array: elements are read with region reads of the index and of the heap only. */
export interface RaggedHandle extends RaggedFacts {
  /** [start, stop) of element i in the heap (rows; bytes for strings; [ref, ref + 1) for a reference). */
  bounds(i: number | readonly number[]): [number, number];
  /** Shape of element i: `(k, *tail)`, the number of UTF-8 bytes, the number of sub-elements, or a reference's slice shape. */
  shape(i: number | readonly number[]): number[];
  get(i: number | readonly number[]): RaggedElement;
  slice(from: number, to: number): RaggedElement[];
  /** Elements in order, `size` at a time. */
  chunks(size: number): Generator<RaggedElement[]>;
  close(): void;
}

/**
 * Whether the .npy at `path` is a ragged index (its dtype carries the npyts.ragged title).
 * @example
 * isRaggedSync('words.npy');   // true for a ragged index
 */
export function isRaggedSync(path: string): boolean {
  return raggedInfo(readNpyHeaderSync(path).dtype) !== null;
}

/** A record array some of whose fields are ragged: each element is an object with those fields resolved. */
export interface RaggedRecordsHandle {
  readonly path: string;
  readonly length: number;
  /** The ragged fields and their heaps. */
  readonly raggedFields: Record<string, string>;
  get(i: number): Record<string, unknown>;
  slice(from: number, to: number): Record<string, unknown>[];
  close(): void;
}

/** The ragged fields of a record dtype: field name → its index info. */
function raggedFieldsOf(dtype: DType): Record<string, RaggedInfo> {
  const out: Record<string, RaggedInfo> = {};
  for (const f of dtype.fields ?? []) {
    const info = raggedInfo(f.dtype);
    if (info) out[f.name] = info;
  }
  return out;
}

const blockingFiles = { open: (p: string) => openNpySync(p), read: (h: NpyFileHandleSync, s: number[], c: number[]) => h.read(s, c) };

/**
 * Open a record array some of whose fields are ragged; each element comes back with those fields resolved.
 * @example
 * const r = openRaggedRecordsSync('clips.npy');
 * r.get(0);   // { id: 1, frames: NdArray, label: 'cat' }
 * r.close();
 */
export function openRaggedRecordsSync(path: string, options: RaggedPathOptions = {}): RaggedRecordsHandle {
  const main = openNpySync(path);
  const fields = raggedFieldsOf(main.dtype);
  const heaps: Record<string, NpyFileHandleSync> = {};
  const closeAll = (): void => { main.close(); for (const h of Object.values(heaps)) h.close(); };
  try {
    if (Object.keys(fields).length === 0) throw new NpyError('BAD_DESCR', `${path} has no ragged fields`);
    for (const [name, info] of Object.entries(fields)) {
      if (info.layout === 'offsets') throw new NpyError('BAD_DESCR', `${path}: field '${name}' is an offsets index, which a record field cannot be`);
      heaps[name] = openNpySync(heapPathOf(path, info.heap, options));
    }
  } catch (e) {
    closeAll();
    throw e;
  }
  const length = main.shape[0] ?? 0;
  const slice = (from: number, to: number): Record<string, unknown>[] => {
    if (!Number.isInteger(from) || !Number.isInteger(to) || from < 0 || to > length || from > to) throw new NpyError('BAD_ARRAY', `elements [${from}, ${to}) are outside 0…${length}`);
    if (from === to) return [];
    const rows = main.read([from], [to - from]);
    const out = (rows.toList() as Record<string, unknown>[]).map((rec) => ({ ...rec }));
    for (const [name, info] of Object.entries(fields)) {
      const field = { name: `${path} field '${name}'`, info, heap: heaps[name]!, inner: null };
      const elements = readBlocking(readingPairs(field, pairsOf(field, indexWords(getField(rows, name)), from, to - from)));
      elements.forEach((e, k) => { out[k]![name] = e; });
    }
    return out;
  };
  return {
    path,
    length,
    raggedFields: Object.fromEntries(Object.entries(fields).map(([n, i]) => [n, i.heap])),
    get: (i) => slice(i, i + 1)[0]!,
    slice,
    close: closeAll,
  };
}

/** A reader's steps performed blocking, on files already open. */
const readBlocking = <T>(reading: Reading<NpyFileHandleSync, T>): T => runReadingSync(reading, blockingFiles);

/**
 * Open a ragged array (its index and heap): elements are read with region reads of both, on demand.
 * @example
 * const r = openRaggedSync('words.npy');
 * r.get(1);   // 'bc'
 * r.close();
 */
export function openRaggedSync(path: string, options: RaggedPathOptions = {}): RaggedHandle {
  const opened: NpyFileHandleSync[] = [];
  const closeAll = (): void => { for (const h of opened) h.close(); };
  let level: RaggedLevel<NpyFileHandleSync>;
  try {
    level = runReadingSync(openingLevel<NpyFileHandleSync>(path, (i, h) => heapPathOf(i, h, options)), blockingFiles, opened);
  } catch (e) {
    closeAll();
    throw e;
  }
  const { checkChunk, ...methods } = raggedMethods(path, level, readBlocking);
  const handle = methods as unknown as Omit<RaggedHandle, 'chunks' | 'close'>;
  return {
    ...handle,
    *chunks(size) {
      checkChunk(size);
      for (let i = 0; i < level.length; i += size) yield handle.slice(i, Math.min(level.length, i + size));
    },
    close: closeAll,
  };
}

/**
 * Open a ragged array (its index and heap) without blocking: elements are read with async region
 * reads of both, on demand. Close it, or `await using` it.
 * @example
 * const r = await openRagged('words.npy');
 * await r.get(1);   // 'bc'
 * for await (const chunk of r.chunks(1000)) console.log(chunk.length);
 * await r.close();
 */
export async function openRagged(path: string, options: RaggedPathOptions & AsyncOptions = {}): Promise<RaggedReader & AsyncDisposable> {
  const reader = await openRaggedWith((p) => openNpy(p, { signal: options.signal }), path, (index, heap) => heapPathOf(index, heap, options));
  return Object.assign(reader, { [Symbol.asyncDispose]: () => reader.close() });
}

/**
 * Whether the .npy at `path` is a ragged index, reading only its header.
 * @example
 * await isRagged('words.npy');   // true
 */
export async function isRagged(path: string, options: AsyncOptions = {}): Promise<boolean> {
  return raggedInfo((await readNpyHeader(path, options)).dtype) !== null;
}

/** What appending needs of a ragged array on disk: its index header and layout, its heap, and the heap's dtype and row count. */
function* raggedFacts(path: string, options: RaggedPathOptions, chain: readonly string[] = [resolve(path)]): Operation<{ index: NpyHeader; info: RaggedInfo; heapPath: string; heap: NpyHeader; heapDtype: DType; heapLength: number }> {
  const index = yield* readingNpyHeader(path);
  const info = raggedInfo(index.dtype);
  if (!info) throw new NpyError('BAD_DESCR', `${path} is not a ragged index (its dtype has no npyts.ragged title)`);
  if (info.kind === 'ref') throw new NpyError('BAD_ARRAY', `${path} holds references; append to it with appendNpy (its heap is an ordinary array)`);
  const heapPath = heapPathOf(path, info.heap, options);
  const followed = followHeap(chain, heapPath);
  yield* heapMustExist(path, heapPath);
  const heap = yield* readingNpyHeader(heapPath);
  // Two levels: the heap is itself an index; the arrays' dtype is that of its own heap.
  const heapDtype = raggedInfo(heap.dtype) ? (yield* raggedFacts(heapPath, options, followed)).heapDtype : heap.dtype;
  return { index, info, heapPath, heap, heapDtype, heapLength: rowsInHeap(heap) };
}

/** Refuse an index whose heap is not there, naming both (before any lock is taken on the heap). */
function* heapMustExist(index: string, heapPath: string): Operation<void> {
  if (!((yield { op: 'exists', path: heapPath }) as boolean)) {
    throw new NpyError('NO_HEAP', `the ragged index ${index} names the heap ${heapPath}, which does not exist (was it moved, or not copied with the index?)`);
  }
}

function* appendingRagged(path: string, elements: Input[], options: RaggedPathOptions): Operation<void> {
  yield* appendLocked(path, () => appendingHoldingLock(path, elements, options));
}

/**
 * Appending for a caller holding the index's append lock. The heap's lock is taken too (another
 * index may share the heap): its length is read and both files grow while no other writer can move them.
 */
function* appendingHoldingLock(path: string, elements: Input[], options: RaggedPathOptions): Operation<void> {
  // Only the heap's name is needed to take its lock; the facts are read under both locks below.
  const info = raggedInfo((yield* readingNpyHeader(path)).dtype);
  if (!info) throw new NpyError('BAD_DESCR', `${path} is not a ragged index (its dtype has no npyts.ragged title)`);
  const heapPath = heapPathOf(path, info.heap, options);
  followHeap([resolve(path)], heapPath); // an index that is its own heap would wait for its own lock
  yield* heapMustExist(path, heapPath);
  function* underHeapLock(): Operation<void> {
    const { index, info, heap, heapDtype, heapLength } = yield* raggedFacts(path, options);
    const { layout, kind } = info;
    const count = index.shape[0] ?? 0;
    let start = heapLength;
    if (layout === 'offsets') {
      // The last offset is where the new rows go. Heap rows past it were left by an append that
      // stopped before its index was written; the index owns its heap, so they are dropped.
      const last = count ? indexWords(yield* readingRegionAt(path, [count - 1], [1]))[0]! : 0;
      if (last > heapLength) throw new NpyError('BAD_ARRAY', `${path} ends at row ${last} of its heap, which has ${heapLength}`);
      // A heap that is itself an offsets index keeps one word more than its elements.
      if (last < heapLength) yield* droppingRows(heapPath, last + (heap.shape[0] ?? 0) - heapLength);
      start = last;
    }
    const { kind: k, rows, bounds, nested } = heapRows(elements, start, kind === 'array' ? heapDtype : undefined, layout === 'zero-terminated');
    if (elements.length && k !== kind) throw new NpyError('BAD_ARRAY', `cannot append ${k} elements to a ${kind} ragged array`);
    if (nested) yield* appendingHoldingLock(heapPath, nested, options);
    else if (rows && rows.size) yield* appending(heapPath, rows);
    if (!bounds.length) return;
    const words = wordsOf(layout, bounds);
    const width = index.dtype.fields![0]!.dtype.itemsize as WordWidth;
    const need = widthFor(maxOf(words));
    const per = index.shape.slice(1).reduce((p, x) => p * x, 1);
    if (bounds.length / 2 % per) throw new NpyError('BAD_ARRAY', `${path} has index rows of ${per} elements; append a multiple of ${per}`);
    const rowsShape = [bounds.length / 2 / per, ...index.shape.slice(1)];
    if (layout === 'ranges' || need <= width) {
      yield* appending(path, wordsArray(raggedIndexDType(info, width), words, rowsShape));
      return;
    }
    // A word no longer fits: the index is rewritten in the wider width (beside, then renamed over).
    const old = indexWords(yield* readingRegionAt(path, index.shape.map(() => 0), index.shape));
    const all = new Float64Array(old.length + words.length);
    all.set(old);
    all.set(words, old.length);
    yield* savingNpy(path, wordsArray(raggedIndexDType(info, need), all, [index.shape[0]! + rowsShape[0]!, ...index.shape.slice(1)]));
  }
  yield* appendLocked(heapPath, underHeapLock);
}

function* lockedAppend(path: string, array: NdArray): Operation<void> {
  yield* appendLocked(path, () => appending(path, array));
}

/**
 * Append elements: heap rows first (made durable), then the index rows — a crash leaves the previous
 * state. A compact index whose words outgrow their width is rewritten wider, beside and renamed over.
 * Waiting for another appender does not block the event loop.
 * @example
 * await appendRagged('words.npy', ['ghij']);
 */
export function appendRagged(path: string, elements: Input[], options: RaggedPathOptions & AsyncOptions = {}): Promise<void> {
  return run(appendingRagged(path, elements, options), options.signal);
}

/**
 * {@link appendRagged}, blocking.
 * @example
 * appendRaggedSync('words.npy', ['ghij']);
 */
export function appendRaggedSync(path: string, elements: Input[], options: RaggedPathOptions = {}): void {
  runSync(appendingRagged(path, elements, options));
}

/** The steps of a region read of the .npy at `path` (a few words of an index). */
function* readingRegionAt(path: string, start: number[], count: number[]): Operation<NdArray> {
  return yield* withFile(path, 'r', function* (file) {
    const header = yield* readingHeader(file);
    checkDataPresent(header, ((yield { op: 'size', file }) as number) - header.dataOffset);
    return yield* readingRegion(path, file, header, start, count);
  });
}

/** The header at `path`, or null where there is none to read. */
function* headerOrNull(path: string): Operation<NpyHeader | null> {
  try {
    return yield* readingNpyHeader(path);
  } catch {
    return null;
  }
}

/**
 * numpy's representation of ragged data — an object array (of any shape) of arrays or strings
 * (StringDType arrays decode to one) — written as a ragged array whose index has the object array's shape.
 * @example
 * saveObjectArrayAsRaggedSync('tokens.npy', loadNpySync('objects.npy', { allowPickle: true }));
 */
export function saveObjectArrayAsRaggedSync(path: string, objects: NdArray, options: SaveRaggedOptions = {}): void {
  saveRaggedSync(path, objectItems(objects), { ...options, ...gridOption(objects) });
}

/**
 * {@link saveObjectArrayAsRaggedSync}, off the event loop.
 * @example
 * await saveObjectArrayAsRagged('tokens.npy', await loadNpy('objects.npy', { allowPickle: true }));
 */
export function saveObjectArrayAsRagged(path: string, objects: NdArray, options: SaveRaggedOptions & AsyncOptions = {}): Promise<void> {
  return saveRagged(path, objectItems(objects), { ...options, ...gridOption(objects) });
}

/** An N-d object array keeps its shape as the index's shape (1-d needs none, so any layout applies). */
const gridOption = (objects: NdArray): { shape?: number[] } => (objects.ndim === 1 ? {} : { shape: objects.shape });

/** The elements of an object array of arrays or strings in C order (bytes are UTF-8 text). */
function objectItems(objects: NdArray): Input[] {
  if (objects.dtype.kind !== 'O') {
    throw new NpyError('BAD_ARRAY', `only object arrays convert to a ragged array; this is ${objects.dtype.str} of shape ${shapeRepr(objects.shape)}`);
  }
  return (toOrder(objects, 'C').data as unknown[]).map((v, i) => {
    if (typeof v === 'string' || v instanceof NdArray) return v as Input;
    if (v instanceof Uint8Array) return decodeUtf8(v) as Input;
    throw new NpyError('BAD_ARRAY', `object array element ${i} is neither an array nor a string`);
  });
}

/**
 * A ragged array as numpy's object array of the index's shape (arrays, strings, or lists of them), e.g. to write with the pickle codec.
 * @example
 * const objects = raggedToObjectArray(openRaggedSync('words.npy'));   // an '|O' NdArray
 */
export function raggedToObjectArray(handle: RaggedHandle): NdArray {
  const all = handle.slice(0, handle.length);
  return new NdArray(parseDescr('|O'), handle.indexShape, all);
}
