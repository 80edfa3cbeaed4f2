/** Ragged arrays on disk: write, open, read elements by region, append (heap first, index after). */
import { existsSync, realpathSync } from 'node:fs';
import { access } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { getField } from '../array/records.js';
import { toNdArray, type ArraySpec } from '../npy.js';
import { parseDescr, recordDType, shapeRepr, type DType } from '../format/dtype.js';
import { NpyError } from '../errors.js';
import { NdArray } from '../array/ndarray.js';
import { appendHoldingLock, appendHoldingLockAsync, openNpy, openNpySync, type NpyFileHandleSync } from './regions.js';
import type { AsyncOptions } from '../io/handles.js';
import { readNpyHeader, readNpyHeaderSync, saveNpy, saveNpySync } from './npy-files.js';
import type { NpyHeader } from '../format/header.js';
import { withAppendLock, withAppendLockAsync } from './lock.js';
import { toOrder } from '../array/order.js';
import { boundsOf, decodeUtf8, openRaggedWith, raggedIndexDType, raggedInfo, readElement, type RaggedElement, type RaggedKind, type RaggedReader } from '../ragged/convention.js';
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

/** Options of {@link saveRaggedSync}: the heap's name (to share one), and dtypes of record fields. */
export interface SaveRaggedOptions extends RaggedPathOptions {
  /** The heap's path (relative to the index's folder): another file for cross-file references. Default `<index>.heap`, or `<index>.strings` for text. */
  heap?: string;
  /** For records: dtypes of the ordinary fields (default from the values: numbers `<f8`, bigints `<i8`, booleans `|b1`). */
  dtypes?: Record<string, string>;
}


function kindOf(elements: Input[]): RaggedKind | 'nested' {
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

function indexArray(kind: RaggedKind, heap: string, bounds: Bounds): NdArray {
  // (start, stop) little-endian uint64 pairs: the records' raw bytes, written directly, each as two
  // 32-bit halves (bounds stay below 2^53; no BigInt per value).
  const bytes = new Uint8Array(bounds.length * 8);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < bounds.length; i++) {
    const v = bounds[i]!;
    view.setUint32(8 * i, v >>> 0, true);
    view.setUint32(8 * i + 4, Math.floor(v / 2 ** 32), true);
  }
  return new NdArray(raggedIndexDType({ kind, heap }), [bounds.length / 2], bytes);
}

/** Element bounds as (start, stop) pairs, interleaved: one typed array instead of an array per element. */
type Bounds = Float64Array;

/**
 * Strings as one UTF-8 heap and their bounds from `offset`, encoded here straight into the heap (no
 * array per string; TextEncoder's call per string cost more than the encoding). Lone surrogates
 * become U+FFFD, as TextEncoder makes them. The heap grows as needed.
 */
function utf8Heap(strings: readonly string[], offset: number): { bytes: Uint8Array; bounds: Bounds } {
  const bounds = new Float64Array(2 * strings.length);
  let units = 0;
  for (const s of strings) units += s.length;
  let out = new Uint8Array(units + 1024);
  let p = 0;
  for (let i = 0; i < strings.length; i++) {
    const s = strings[i]!;
    const n = s.length;
    if (p + 3 * n > out.length) {
      const bigger = new Uint8Array(Math.max(2 * out.length, p + 3 * n));
      bigger.set(out.subarray(0, p));
      out = bigger;
    }
    bounds[2 * i] = offset + p;
    for (let k = 0; k < n; k++) {
      const c = s.charCodeAt(k);
      if (c < 0x80) {
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
  }
  return { bytes: out.subarray(0, p), bounds };
}

/** The heap rows appended for `elements`, and their bounds counted from `offset`. */
function heapRows(elements: Input[], offset: number, heapDtype?: DType): { kind: RaggedKind; rows: NdArray | null; bounds: Bounds; nested?: Input[] } {
  const kind = kindOf(elements);
  if (kind === 'utf8') {
    const { bytes, bounds } = utf8Heap(elements as string[], offset);
    return { kind, rows: new NdArray(arrayFromValues([], '|u1').dtype, [bytes.length], bytes), bounds };
  }
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
 * Records with ragged fields: `main.npy` holds the record array, each ragged field as a (start, stop)
 * index whose heap is `main.npy.<field>.heap` (or `.strings`). Other fields are ordinary columns.
 */
function* savingRecords(path: string, records: Record<string, unknown>[], dtypes: Record<string, string>): Writing<void> {
  const names = Object.keys(records[0]!);
  const specs: { name: string; dtype: DType | string }[] = [];
  const columns: Record<string, unknown[]> = {};
  for (const name of names) {
    const values = records.map((r, i) => {
      if (!(name in r)) throw new NpyError('BAD_ARRAY', `record ${i} has no field '${name}'`);
      return r[name];
    });
    if (values.every(isRaggedValue)) {
      const heap = `${basename(path)}.${name}.${values.every((v) => typeof v === 'string') ? 'strings' : 'heap'}`;
      const { kind, rows, bounds } = heapRows(values as Input[], 0);
      yield { op: 'save', path: join(dirname(path), heap), array: rows ?? arrayFromValues([], '|u1') };
      const index = indexArray(kind, heap, bounds);
      specs.push({ name, dtype: index.dtype });
      columns[name] = values.map((_, i) => ({ start: BigInt(bounds[2 * i]!), stop: BigInt(bounds[2 * i + 1]!) }));
    } else {
      specs.push({ name, dtype: scalarDescr(name, values, dtypes[name]) });
      columns[name] = values;
    }
  }
  const dtype = recordDType(specs);
  yield { op: 'save', path, array: arrayFromValues(records.map((_, i) => Object.fromEntries(names.map((n) => [n, columns[n]![i]]))), dtype, { shape: [records.length] }) };
}

/** Write a ragged array as steps (see {@link FileStep}): heap first, then the index. */
function* savingRagged(path: string, elements: Input[] | Record<string, unknown>[], options: SaveRaggedOptions = {}): Writing<void> {
  if (isRecordList(elements)) {
    yield* savingRecords(path, elements, options.dtypes ?? {});
    return;
  }
  const kind = kindOf(elements as Input[]);
  const heapName = options.heap ?? `${basename(path)}.${kind === 'utf8' ? 'strings' : 'heap'}`;
  const heapPath = heapPathOf(path, heapName, options);
  const shared = options.heap !== undefined && ((yield { op: 'exists', path: heapPath }) as boolean);
  let offset = 0;
  let heapDtype: DType | undefined;
  if (shared) {
    const h = (yield { op: 'header', path: heapPath }) as NpyHeader;
    offset = h.shape[0] ?? 0;
    heapDtype = h.dtype;
  }
  const { kind: k, rows, bounds, nested } = heapRows(elements as Input[], offset, heapDtype);
  if (nested) {
    if (shared) yield* appendingRagged(heapPath, nested, {});
    else yield* savingRagged(heapPath, nested);
  } else if (rows) {
    if (shared) yield* lockedAppend(heapPath, rows);
    else yield { op: 'save', path: heapPath, array: rows };
  } else if (!shared) {
    if (k !== 'utf8') throw new NpyError('BAD_ARRAY', 'an empty ragged array of arrays needs an existing heap to name its dtype');
    yield { op: 'save', path: heapPath, array: arrayFromValues([], '|u1') };
  }
  yield { op: 'save', path, array: indexArray(k, relative(dirname(path), heapPath), bounds) };
}

/**
 * Write a ragged array: the heap (or, for cross-file references, rows appended to an existing heap),
 * then the index. Elements are arrays of one dtype and trailing shape, strings, lists of those, or
 * plain objects (records whose array or string fields become ragged fields, one heap each).
 * The files are written off the event loop; `signal` stops between files.
 * @example
 * await saveRagged('words.npy', ['a', 'bc', 'def']);   // words.npy + words.npy.strings
 */
export function saveRagged(path: string, elements: Input[] | Record<string, unknown>[], options: SaveRaggedOptions & AsyncOptions = {}): Promise<void> {
  return runAsync(savingRagged(path, elements, options), options.signal);
}

/**
 * {@link saveRagged}, blocking.
 * @example
 * saveRaggedSync('words.npy', ['a', 'bc', 'def']);   // words.npy + words.npy.strings
 */
export function saveRaggedSync(path: string, elements: Input[] | Record<string, unknown>[], options: SaveRaggedOptions = {}): void {
  runSync(savingRagged(path, elements, options));
}

/** An open ragged array: elements are read with region reads of the index and of the heap only. */
export interface RaggedHandle {
  readonly path: string;
  readonly kind: RaggedKind;
  readonly heapPath: string;
  readonly length: number;
  /** The heap's dtype, row count and trailing shape (elements are `(k, *tail)`). */
  readonly heapDtype: DType;
  readonly heapLength: number;
  readonly tail: number[];
  /** [start, stop) of element i in the heap. */
  bounds(i: number): [number, number];
  /** Shape of element i: `(k, *tail)`, or the number of UTF-8 bytes, or the number of sub-elements. */
  shape(i: number): number[];
  get(i: number): RaggedElement;
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
  const h = openNpySync(path);
  try {
    return raggedInfo(h.dtype) !== null;
  } finally {
    h.close();
  }
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
function raggedFieldsOf(dtype: DType): Record<string, ReturnType<typeof raggedInfo> & object> {
  const out: Record<string, ReturnType<typeof raggedInfo> & object> = {};
  for (const f of dtype.fields ?? []) {
    const info = raggedInfo(f.dtype);
    if (info) out[f.name] = info;
  }
  return out;
}

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
  if (Object.keys(fields).length === 0) {
    main.close();
    throw new NpyError('BAD_DESCR', `${path} has no ragged fields`);
  }
  let heaps: Record<string, NpyFileHandleSync>;
  try {
    heaps = Object.fromEntries(Object.entries(fields).map(([name, info]) => [name, openNpySync(heapPathOf(path, info.heap, options))]));
  } catch (e) {
    main.close();
    throw e;
  }
  const length = main.shape[0] ?? 0;
  const slice = (from: number, to: number): Record<string, unknown>[] => {
    if (!Number.isInteger(from) || !Number.isInteger(to) || from < 0 || to > length || from > to) throw new NpyError('BAD_ARRAY', `elements [${from}, ${to}) are outside 0…${length}`);
    if (from === to) return [];
    const rows = main.read([from], [to - from]);
    const plain = rows.toList() as Record<string, unknown>[];
    const bounds = Object.fromEntries(Object.keys(fields).map((name) => [name, boundsOf(getField(rows, name))]));
    return plain.map((rec, k) => {
      const out: Record<string, unknown> = { ...rec };
      for (const [name, info] of Object.entries(fields)) {
        const heap = heaps[name]!;
        const [s, e] = bounds[name]![k]!;
        out[name] = readElement((a, b) => heap.read(a, b), heap.shape, info.kind, s, e);
      }
      return out;
    });
  };
  return {
    path,
    length,
    raggedFields: Object.fromEntries(Object.entries(fields).map(([n, i]) => [n, i.heap])),
    get: (i) => slice(i, i + 1)[0]!,
    slice,
    close() {
      main.close();
      for (const h of Object.values(heaps)) h.close();
    },
  };
}

/**
 * Open a ragged array (its index and heap): elements are read with region reads of both, on demand.
 * @example
 * const r = openRaggedSync('words.npy');
 * r.get(1);   // 'bc'
 * r.close();
 */
export function openRaggedSync(path: string, options: RaggedPathOptions = {}): RaggedHandle {
  const index: NpyFileHandleSync = openNpySync(path);
  const info = raggedInfo(index.dtype);
  if (!info) {
    index.close();
    const hint = Object.keys(raggedFieldsOf(index.dtype)).length ? '; it has ragged fields: use openRaggedRecords' : '';
    throw new NpyError('BAD_DESCR', `${path} is not a ragged index (its dtype has no npyts.ragged title)${hint}`);
  }
  let heapPath: string;
  let nested: RaggedHandle | null;
  let heap: NpyFileHandleSync | null;
  try {
    heapPath = heapPathOf(path, info.heap, options);
    nested = isRaggedSync(heapPath) ? openRaggedSync(heapPath, options) : null;
    heap = nested ? null : openNpySync(heapPath);
  } catch (e) {
    index.close();
    throw e;
  }
  const length = index.shape[0] ?? 0;
  const tail = heap ? heap.shape.slice(1) : [];
  const check = (from: number, to: number): void => {
    if (!Number.isInteger(from) || !Number.isInteger(to) || from < 0 || to > length || from > to) {
      throw new NpyError('BAD_ARRAY', `elements [${from}, ${to}) are outside 0…${length}`);
    }
  };
  const boundsRange = (from: number, to: number): [number, number][] => (from === to ? [] : boundsOf(index.read([from], [to - from])));
  const element = ([s, e]: [number, number]): RaggedElement => {
    if (nested) return nested.slice(s, e);
    return readElement((a, b) => heap!.read(a, b), heap!.shape, info.kind, s, e);
  };
  const slice = (from: number, to: number): RaggedElement[] => {
    check(from, to);
    return boundsRange(from, to).map(element);
  };
  return {
    path,
    kind: info.kind,
    heapPath,
    length,
    heapDtype: heap ? heap.dtype : nested!.heapDtype,
    heapLength: heap ? heap.shape[0] ?? 0 : nested!.length,
    tail,
    bounds(i) { check(i, i + 1); return boundsRange(i, i + 1)[0]!; },
    shape(i) { const [s, e] = this.bounds(i); return [e - s, ...tail]; },
    get: (i) => slice(i, i + 1)[0]!,
    slice,
    *chunks(size) {
      for (let i = 0; i < length; i += size) yield slice(i, Math.min(length, i + size));
    },
    close() {
      index.close();
      heap?.close();
      nested?.close();
    },
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

/** What appending needs of a ragged array on disk: its kind, its heap, and the heap's dtype and row count. */
function* raggedFacts(path: string, options: RaggedPathOptions): Writing<{ kind: RaggedKind; heapPath: string; heapDtype: DType; heapLength: number }> {
  const index = (yield { op: 'header', path }) as NpyHeader;
  const info = raggedInfo(index.dtype);
  if (!info) throw new NpyError('BAD_DESCR', `${path} is not a ragged index (its dtype has no npyts.ragged title)`);
  const heapPath = heapPathOf(path, info.heap, options);
  const heap = (yield { op: 'header', path: heapPath }) as NpyHeader;
  // Two levels: the heap is itself an index; the arrays' dtype is that of its own heap.
  const heapDtype = raggedInfo(heap.dtype) ? (yield* raggedFacts(heapPath, options)).heapDtype : heap.dtype;
  return { kind: info.kind, heapPath, heapDtype, heapLength: heap.shape[0] ?? 0 };
}

function* appendingRagged(path: string, elements: Input[], options: RaggedPathOptions): Writing<void> {
  yield { op: 'locked', path, body: () => appendingHoldingLock(path, elements, options) };
}

/**
 * Appending for a caller holding the index's append lock. The heap's lock is taken too (another
 * index may share the heap): its length is read and both files grow while no other writer can move them.
 */
function* appendingHoldingLock(path: string, elements: Input[], options: RaggedPathOptions): Writing<void> {
  const { heapPath, heapDtype, kind } = yield* raggedFacts(path, options);
  function* underHeapLock(): Writing<void> {
    const { heapLength } = yield* raggedFacts(path, options);
    const { kind: k, rows, bounds, nested } = heapRows(elements, heapLength, kind === 'utf8' ? undefined : heapDtype);
    if (elements.length && k !== kind) throw new NpyError('BAD_ARRAY', `cannot append ${k} elements to a ${kind} ragged array`);
    if (nested) yield* appendingHoldingLock(heapPath, nested, options);
    else if (rows && rows.size) yield { op: 'append', path: heapPath, array: rows };
    if (bounds.length) yield { op: 'append', path, array: indexArray(kind, relative(dirname(path), heapPath), bounds) };
  }
  yield { op: 'locked', path: heapPath, body: underHeapLock };
}

function* lockedAppend(path: string, array: NdArray): Writing<void> {
  yield { op: 'locked', path, body: function* () { yield { op: 'append', path, array }; } };
}

/**
 * Append elements: heap rows first (made durable), then the index rows — a crash leaves the previous
 * state. Waiting for another appender does not block the event loop.
 * @example
 * await appendRagged('words.npy', ['ghij']);
 */
export function appendRagged(path: string, elements: Input[], options: RaggedPathOptions & AsyncOptions = {}): Promise<void> {
  return runAsync(appendingRagged(path, elements, options), options.signal);
}

/**
 * {@link appendRagged}, blocking.
 * @example
 * appendRaggedSync('words.npy', ['ghij']);
 */
export function appendRaggedSync(path: string, elements: Input[], options: RaggedPathOptions = {}): void {
  runSync(appendingRagged(path, elements, options));
}

// The writers above are written once, as generators of the file steps they need; these drivers
// perform the steps blocking or asynchronously.

/** One file operation a ragged writer asks for. */
type FileStep =
  | { op: 'exists'; path: string }
  | { op: 'header'; path: string }
  | { op: 'save'; path: string; array: NdArray }
  /** Append to a file whose append lock the writer holds. */
  | { op: 'append'; path: string; array: NdArray }
  /** Run `body` holding the append lock of `path`. */
  | { op: 'locked'; path: string; body: () => Writing<void> };

/** A writer: yields file steps, is answered with their results, returns its own. */
type Writing<T> = Generator<FileStep, T, unknown>;

function runSync<T>(writing: Writing<T>): T {
  for (let step = writing.next(); ; ) {
    if (step.done) return step.value;
    const s = step.value;
    switch (s.op) {
      case 'exists': step = writing.next(existsSync(s.path)); break;
      case 'header': step = writing.next(readNpyHeaderSync(s.path)); break;
      case 'save': saveNpySync(s.path, s.array); step = writing.next(); break;
      case 'append': appendHoldingLock(s.path, s.array); step = writing.next(); break;
      case 'locked': withAppendLock(s.path, () => runSync(s.body())); step = writing.next(); break;
    }
  }
}

async function runAsync<T>(writing: Writing<T>, signal?: AbortSignal): Promise<T> {
  for (let step = writing.next(); ; ) {
    signal?.throwIfAborted();
    if (step.done) return step.value;
    const s = step.value;
    switch (s.op) {
      case 'exists': step = writing.next(await access(s.path).then(() => true, () => false)); break;
      case 'header': step = writing.next(await readNpyHeader(s.path, { signal })); break;
      case 'save': await saveNpy(s.path, s.array, { signal }); step = writing.next(); break;
      case 'append': await appendHoldingLockAsync(s.path, s.array, signal); step = writing.next(); break;
      case 'locked': await withAppendLockAsync(s.path, () => runAsync(s.body(), signal), signal); step = writing.next(); break;
    }
  }
}

/**
 * numpy's representation of ragged data — an object array of arrays or strings (StringDType arrays decode to one) — written as a ragged array.
 * @example
 * saveObjectArrayAsRaggedSync('tokens.npy', loadNpySync('objects.npy', { allowPickle: true }));
 */
export function saveObjectArrayAsRaggedSync(path: string, objects: NdArray, options: SaveRaggedOptions = {}): void {
  saveRaggedSync(path, objectItems(objects), options);
}

/**
 * {@link saveObjectArrayAsRaggedSync}, off the event loop.
 * @example
 * await saveObjectArrayAsRagged('tokens.npy', await loadNpy('objects.npy', { allowPickle: true }));
 */
export function saveObjectArrayAsRagged(path: string, objects: NdArray, options: SaveRaggedOptions & AsyncOptions = {}): Promise<void> {
  return saveRagged(path, objectItems(objects), options);
}

/** The elements of a 1-d object array of arrays or strings (bytes are UTF-8 text). */
function objectItems(objects: NdArray): Input[] {
  if (objects.dtype.kind !== 'O' || objects.ndim !== 1) {
    throw new NpyError('BAD_ARRAY', `only 1-d object arrays convert to a ragged array; this is ${objects.dtype.str} of shape ${shapeRepr(objects.shape)}`);
  }
  return (objects.data as unknown[]).map((v, i) => {
    if (typeof v === 'string' || v instanceof NdArray) return v as Input;
    if (v instanceof Uint8Array) return decodeUtf8(v) as Input;
    throw new NpyError('BAD_ARRAY', `object array element ${i} is neither an array nor a string`);
  });
}

/**
 * A ragged array as numpy's object array (arrays, strings, or lists of them), e.g. to write with the pickle codec.
 * @example
 * const objects = raggedToObjectArray(openRaggedSync('words.npy'));   // an '|O' NdArray
 */
export function raggedToObjectArray(handle: RaggedHandle): NdArray {
  const all = handle.slice(0, handle.length);
  return new NdArray(parseDescr('|O'), [all.length], all);
}
