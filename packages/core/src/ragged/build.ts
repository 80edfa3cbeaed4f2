/** A ragged array built from values: heap rows, bounds, index words and arrays, checked before anything is written. */
import { toNdArray, type ArraySpec } from '../npy.js';
import { parseDescr, shapeRepr, type DType } from '../format/dtype.js';
import { NpyError } from '../errors.js';
import type { KnownKeys } from '../options.js';
import { NdArray } from '../array/ndarray.js';
import { toOrder } from '../array/order.js';
import { raggedIndexDType, widthFor, type RaggedInfo, type RaggedKind, type RaggedLayout } from './convention.js';

/** An element of a ragged array to save: an array, a string, or a list of elements. */
export type Input = NdArray | ArraySpec | string | Input[];

/** Options of ragged file functions (also heaps named by a URL): whether a heap may be outside the index's folder. */
export interface RaggedPathOptions {
  /**
   * Let an index name a heap outside its own folder (`..`, an absolute path, or a symlink that
   * leads out). Off by default: the heap's name comes from the file, and a file from elsewhere must
   * not make npyts read or write files it was not given.
   */
  allowHeapOutside?: boolean;
}

/** Options of `saveRagged`: the layout, the heap's name (to share one), and dtypes of record fields. */
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

/** The options {@link RaggedPathOptions} names (see `knownKeys`, options.ts). */
export const RAGGED_PATH_KEYS = { allowHeapOutside: true } as const satisfies KnownKeys<RaggedPathOptions>;
/** The options {@link SaveRaggedOptions} names. */
export const SAVE_RAGGED_KEYS = { ...RAGGED_PATH_KEYS, layout: true, heap: true, dtypes: true, shape: true } as const satisfies KnownKeys<SaveRaggedOptions>;

/** A text heap: 1-d bytes. */
export const bytesArray = (bytes: Uint8Array): NdArray => new NdArray(parseDescr('|u1'), [bytes.length], bytes);

export function kindOf(elements: Input[]): 'array' | 'utf8' | 'nested' {
  if (elements.length === 0) return 'array';
  if (elements.every((e) => typeof e === 'string')) return 'utf8';
  if (elements.every((e) => Array.isArray(e))) return 'nested';
  if (elements.some((e) => typeof e === 'string' || Array.isArray(e)))
    throw new NpyError('BAD_VALUE', 'ragged elements must all be arrays, all strings, or all lists');
  return 'array';
}

/** Elements of kind `array` checked for one dtype and trailing shape, as C-order arrays in the heap's byte order. */
export function arrays(elements: Input[], heapDtype?: DType): { dtype: DType; tail: number[]; parts: NdArray[] } {
  const parts = elements.map((e) => toOrder(toNdArray(e as NdArray | ArraySpec), 'C'));
  const dtype = heapDtype ?? parts[0]?.dtype;
  if (!dtype) throw new NpyError('BAD_OPTION', 'an empty ragged array needs a heap to name its dtype');
  const first = parts[0];
  const tail = first ? first.shape.slice(1) : [];
  parts.forEach((p, i) => {
    if (p.ndim === 0) throw new NpyError('SHAPE_MISMATCH', `ragged element ${i} is 0-d; elements need a first axis`);
    if (p.dtype.withByteOrder('<').descrLiteral !== dtype.withByteOrder('<').descrLiteral) {
      throw new NpyError('DTYPE_MISMATCH', `ragged element ${i} has dtype ${p.dtype.descrLiteral}, the heap ${dtype.descrLiteral}`);
    }
    if (shapeRepr(p.shape.slice(1)) !== shapeRepr(tail))
      throw new NpyError('SHAPE_MISMATCH', `ragged element ${i} has trailing shape ${shapeRepr(p.shape.slice(1))}, the others ${shapeRepr(tail)}`);
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
  for (const p of parts) {
    out.set(p.data as Uint8Array, o);
    o += p.data.length;
  }
  return new NdArray(parts[0]?.dtype ?? dtype, [rows, ...tail], out, 'C');
}

/**
 * An index array of `dtype` (one or two unsigned fields) holding `words` in record order, written as
 * raw little-endian bytes (words stay below 2^53: an 8-byte word is two 32-bit halves, no BigInt).
 */
export function wordsArray(dtype: DType, words: ArrayLike<number>, shape: number[]): NdArray {
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
export function wordsOf(layout: RaggedLayout, bounds: Bounds): Float64Array {
  const n = bounds.length / 2;
  if (layout === 'ranges') return bounds;
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = bounds[2 * i + (layout === 'offsets' ? 1 : 0)]!;
  return out;
}

/** The largest of some words (0 for none). */
export const maxOf = (words: ArrayLike<number>): number => {
  let m = 0;
  for (let i = 0; i < words.length; i++) if (words[i]! > m) m = words[i]!;
  return m;
};

/** A whole new index: for offsets, the first offset (where the heap rows begin) comes first. */
export function indexArray(info: RaggedInfo, bounds: Bounds, firstOffset: number): NdArray {
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
export type Bounds = Float64Array;

/**
 * Strings as one UTF-8 heap and their bounds from `offset`, encoded here straight into the heap (no
 * array per string; TextEncoder's call per string cost more than the encoding). Lone surrogates
 * become U+FFFD, as TextEncoder makes them. With `terminated`, each string is followed by a NUL byte
 * (not within its bounds), and a string containing U+0000 is refused. The heap grows as needed.
 */
export function utf8Heap(strings: readonly string[], offset: number, terminated = false): { bytes: Uint8Array; bounds: Bounds } {
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
        if (c === 0 && terminated)
          throw new NpyError(
            'NOT_REPRESENTABLE',
            `string ${i} contains U+0000, which the zero-terminated layout cannot hold; use layout 'ranges' or 'offsets'`,
          );
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
export function heapRows(
  elements: Input[],
  offset: number,
  heapDtype?: DType,
  terminated = false,
): { kind: RaggedKind; rows: NdArray | null; bounds: Bounds; nested?: Input[] } {
  const kind = kindOf(elements);
  if (kind === 'utf8' || (terminated && elements.length === 0)) {
    const { bytes, bounds } = utf8Heap(elements as string[], offset, terminated);
    return { kind: terminated ? 'utf8z' : 'utf8', rows: bytesArray(bytes), bounds };
  }
  if (terminated) throw new NpyError('BAD_OPTION', 'the zero-terminated layout holds strings only');
  const bounds = new Float64Array(2 * elements.length);
  let at = offset;
  const bound = (i: number, rows: number): void => {
    bounds[2 * i] = at;
    bounds[2 * i + 1] = at + rows;
    at += rows;
  };
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
export function isRecordList(elements: unknown[]): elements is Record<string, unknown>[] {
  return (
    elements.length > 0 &&
    elements.every((e) => e !== null && typeof e === 'object' && Object.getPrototypeOf(e) === Object.prototype && !('data' in (e as object)))
  );
}

export const isRaggedValue = (v: unknown): boolean => typeof v === 'string' || v instanceof NdArray || (typeof v === 'object' && v !== null && 'data' in v);

/** The dtype of an ordinary (fixed-size) field from its JS values, unless given. */
export function scalarDescr(name: string, values: unknown[], given?: string): string {
  if (given) return given;
  if (values.every((v) => typeof v === 'boolean')) return '|b1';
  if (values.every((v) => typeof v === 'bigint')) return '<i8';
  if (values.every((v) => typeof v === 'number')) return '<f8';
  throw new NpyError('BAD_OPTION', `field '${name}' mixes kinds of values; give its dtype in options.dtypes`);
}

/** The index shape for `n` elements: `shape` when given (ranges and zero-terminated only), else `(n,)`. */
export function gridOf(n: number, layout: RaggedLayout, shape?: readonly number[]): number[] {
  if (!shape) return [n];
  if (layout === 'offsets') throw new NpyError('BAD_OPTION', 'an offsets index is 1-d; give N-d indexes the ranges or zero-terminated layout');
  if (shape.reduce((p, x) => p * x, 1) !== n) throw new NpyError('SHAPE_MISMATCH', `${n} elements do not fill an index of shape ${shapeRepr(shape)}`);
  return [...shape];
}
