/** Saving ragged arrays and references: new heaps beside the old, the index renamed over, old heaps removed (the one atomic step). */
import { basename, dirname, join, relative, resolve } from 'node:path';
import { toNdArray, type ArraySpec } from '../../npy.js';
import { recordDType, type DType } from '../../format/dtype.js';
import { NpyError } from '../../errors.js';
import { checkOptions, knownKeys } from '../../options.js';
import { REPLACE_KEYS } from '../beside.js';
import { RAGGED_PATH_KEYS, SAVE_RAGGED_KEYS } from '../../ragged/build.js';
import { namedObject } from '../../array/safe-object.js';
import { NdArray, isOrderFree } from '../../array/ndarray.js';
import type { AsyncOptions } from '../../io/handles.js';
import { readingNpyHeader, savingNpy } from '../npy-files.js';
import type { ReplaceOptions } from '../beside.js';
import { appendLocked } from '../lock.js';
import { run, runSync } from '../drive.js';
import { perform, type FileStep, type Operation } from '../../io/steps.js';
import { toOrder } from '../../array/order.js';
import { MAX_RAGGED_DEPTH, OWNED_SUFFIX, rowsInHeap, raggedIndexDType, raggedInfo, referencedAxis, type RaggedInfo } from '../../ragged/convention.js';
import { arrayFromValues } from '../../array/from-values.js';
import { appendingRagged, lockedAppend } from './append.js';
import {
  type Bounds,
  type SaveRaggedOptions,
  bytesArray,
  gridOf,
  heapRows,
  indexArray,
  isRaggedValue,
  isRecordList,
  kindOf,
  scalarDescr,
  utf8Heap,
  wordsArray,
} from '../../ragged/build.js';
import { headerOrNull, heapPathIn } from './files.js';
import type { Input, RaggedPathOptions } from '../../ragged/build.js';

/** Options of {@link saveRaggedSync}: the layout and names, and how each file is replaced (`durable`: each heap and the index are made durable before the index is renamed into place). */
export interface SaveRaggedFileOptions extends SaveRaggedOptions, ReplaceOptions {}

const SAVE_SYNC_KEYS = knownKeys<SaveRaggedFileOptions>({ ...SAVE_RAGGED_KEYS, ...REPLACE_KEYS });
const SAVE_KEYS = knownKeys<SaveRaggedFileOptions & AsyncOptions>({ ...SAVE_RAGGED_KEYS, ...REPLACE_KEYS, signal: true });
const REFERENCES_SYNC_KEYS = knownKeys<RaggedPathOptions & ReplaceOptions>({ ...RAGGED_PATH_KEYS, ...REPLACE_KEYS });
const REFERENCES_KEYS = knownKeys<RaggedPathOptions & ReplaceOptions & AsyncOptions>({ ...RAGGED_PATH_KEYS, ...REPLACE_KEYS, signal: true });

/**
 * Records with ragged fields, named as numpy#25374's option 1: `main.npy` holds the record array;
 * array fields range over `main.npy.heap1`, `main.npy.heap2`, … (in field order), and every string
 * field over the one `main.npy.strings`. Other fields are ordinary columns.
 */
function* savingRecords(
  path: string,
  records: Record<string, unknown>[],
  dtypes: Record<string, string>,
  layout: SaveRaggedOptions['layout'],
  taken: readonly string[],
  replace: ReplaceOptions,
): Operation<void, FileStep> {
  const strings = freshHeapName(path, `${basename(path)}.strings`, taken);
  const saves: { path: string; array: NdArray }[] = [];
  const names = Object.keys(records[0]!);
  const specs: { name: string; dtype: DType | string }[] = [];
  const columns = namedObject<unknown[]>();
  const terminated = layout === 'zero-terminated';
  const text: Uint8Array[] = [];
  let textBytes = 0;
  let arrayHeaps = 0;
  for (const name of names) {
    const values = records.map((r, i) => {
      if (!Object.hasOwn(r, name)) throw new NpyError('NO_FIELD', `record ${i} has no field '${name}'`);
      return r[name];
    });
    if (!values.every(isRaggedValue)) {
      specs.push({ name, dtype: scalarDescr(name, values, Object.hasOwn(dtypes, name) ? dtypes[name] : undefined) });
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
    columns[name] = values.map((_, i) =>
      info.layout === 'ranges' ? { start: BigInt(bounds[2 * i]!), stop: BigInt(bounds[2 * i + 1]!) } : { start: BigInt(bounds[2 * i]!) },
    );
  }
  if (text.length) {
    const all = new Uint8Array(textBytes);
    let at = 0;
    for (const t of text) {
      all.set(t, at);
      at += t.length;
    }
    saves.push({ path: join(dirname(path), strings), array: bytesArray(all) });
  }
  // Every field checked and every array built before the first write.
  const main = arrayFromValues(
    records.map((_, i) => Object.fromEntries(names.map((n) => [n, columns[n]![i]]))),
    recordDType(specs),
    { shape: [records.length] },
  );
  for (const save of saves) yield* savingNpy(save.path, save.array, replace);
  yield* savingNpy(path, main, replace);
}

/**
 * Write a ragged array as steps (see {@link FileStep}). A ragged array already at `path` is replaced
 * under its append lock (so no append mixes the two), and never in place: the new heaps are written
 * under names the old index does not use, the new index is renamed over the old one (the one atomic
 * step), and only then are the old heaps removed. A reader, an error, an abort or a crash of the process
 * at any moment sees the old array or the new one, never the old index over a new heap (a crash of the
 * system too, with `durable`).
 */
function* savingRagged(path: string, elements: Input[] | Record<string, unknown>[], options: SaveRaggedFileOptions = {}): Operation<void, FileStep> {
  if (!(yield* perform({ op: 'exists', path }))) {
    yield* replacingRagged(path, elements, options, []);
    return;
  }
  yield* appendLocked(path, function* () {
    yield* replacingRagged(path, elements, options, yield* ownedHeaps(path));
  });
}

/**
 * The heaps the ragged file at `path` owns, with those of the indexes they hold (two levels), as
 * resolved paths; none when the file is absent, unreadable or not ragged. Only names of
 * {@link OWNED_SUFFIX} beside the index count: a heap named by the caller is never owned.
 */
function* ownedHeaps(path: string, chain: readonly string[] = [resolve(path)]): Operation<string[], FileStep> {
  const header = yield* headerOrNull(path);
  if (!header) return [];
  const infos: RaggedInfo[] = [];
  try {
    const top = raggedInfo(header.dtype);
    if (top) infos.push(top);
    else
      for (const f of header.dtype.fields ?? []) {
        const i = raggedInfo(f.dtype);
        if (i) infos.push(i);
      }
  } catch {
    return []; // a malformed title: nothing of it is ours to remove
  }
  const index = resolve(path);
  const out: string[] = [];
  for (const info of infos) {
    const heap = resolve(dirname(index), info.heap);
    if (!heap.startsWith(index) || !OWNED_SUFFIX.test(heap.slice(index.length)) || chain.includes(heap) || out.includes(heap)) continue;
    if (!(yield* perform({ op: 'exists', path: heap }))) continue;
    out.push(heap, ...(chain.length < MAX_RAGGED_DEPTH ? yield* ownedHeaps(heap, [...chain, heap]) : []));
  }
  return out;
}

/** `wanted` (a heap name beside the index), or its alternate `wanted.1` when the index being replaced uses `wanted`. */
function freshHeapName(path: string, wanted: string, taken: readonly string[]): string {
  return taken.includes(resolve(dirname(path), wanted)) ? `${wanted}.1` : wanted;
}

/** Write the new heaps and index (replacing one whose heaps are `taken`), then remove the heaps of `taken` the new one does not use. */
function* replacingRagged(
  path: string,
  elements: Input[] | Record<string, unknown>[],
  options: SaveRaggedFileOptions,
  taken: readonly string[],
): Operation<void, FileStep> {
  if (isRecordList(elements)) {
    if (options.shape) throw new NpyError('SHAPE_MISMATCH', 'records with ragged fields are 1-d; `shape` is for an index of elements');
    yield* savingRecords(path, elements, options.dtypes ?? {}, options.layout, taken, { durable: options.durable ?? false });
  } else {
    yield* savingElements(path, elements as Input[], options, taken);
  }
  if (!taken.length) return;
  const kept = yield* ownedHeaps(path);
  for (const heap of taken) if (!kept.includes(heap)) yield { op: 'remove', path: heap };
}

/** Write ragged elements: all checks first, then the heap (or rows appended to a shared one), then the index. */
function* savingElements(path: string, elements: Input[], options: SaveRaggedFileOptions, taken: readonly string[]): Operation<void, FileStep> {
  const replace = { durable: options.durable ?? false };
  const layout = options.layout ?? 'ranges';
  const kind = kindOf(elements);
  const terminated = layout === 'zero-terminated' && kind !== 'nested';
  const shared = options.heap !== undefined && (yield* perform({ op: 'exists', path: heapPathIn(path, options.heap, options) }));
  const heapName = options.heap ?? freshHeapName(path, `${basename(path)}.${kind === 'utf8' || terminated ? 'strings' : 'heap'}`, taken);
  const heapPath = heapPathIn(path, heapName, options);
  if (heapPath === resolve(path)) throw new NpyError('NAME_CLASH', `${path} cannot be its own heap`);
  if (shared && layout === 'offsets')
    throw new NpyError('NAME_CLASH', `an offsets index owns its heap, and ${heapName} exists; share a heap with the ranges layout`);
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
  if (!nested && !rows && !shared && k !== 'utf8') throw new NpyError('BAD_OPTION', 'an empty ragged array of arrays needs an existing heap to name its dtype');
  const index = indexArray(info, bounds, offset);
  if (nested) {
    if (shared) yield* appendingRagged(heapPath, nested, {});
    else yield* savingRagged(heapPath, nested, { layout, ...replace });
  } else if (rows) {
    if (shared) yield* lockedAppend(heapPath, rows);
    else yield* savingNpy(heapPath, rows, replace);
  } else if (!shared) {
    yield* savingNpy(heapPath, bytesArray(new Uint8Array(0)), replace);
  }
  yield* savingNpy(path, grid ? new NdArray(index.dtype, grid, index.data) : index, replace);
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
export function saveRagged(path: string, elements: Input[] | Record<string, unknown>[], options: SaveRaggedFileOptions & AsyncOptions = {}): Promise<void> {
  checkOptions('saveRagged', options, SAVE_KEYS);
  return run(savingRagged(path, elements, options), options.signal, path);
}

/**
 * {@link saveRagged}, blocking.
 * @example
 * saveRaggedSync('words.npy', ['a', 'bc', 'def']);   // words.npy + words.npy.strings
 */
export function saveRaggedSync(path: string, elements: Input[] | Record<string, unknown>[], options: SaveRaggedFileOptions = {}): void {
  checkOptions('saveRaggedSync', options, SAVE_SYNC_KEYS);
  runSync(savingRagged(path, elements, options), path);
}

function* savingReferences(
  path: string,
  refs: NdArray | ArraySpec,
  heap: string | NdArray | ArraySpec,
  options: RaggedPathOptions & ReplaceOptions,
): Operation<void, FileStep> {
  const replace = { durable: options.durable ?? false };
  const heapPath = heapPathIn(path, typeof heap === 'string' ? heap : `${basename(path)}.heap`, options);
  const given = typeof heap === 'string' ? null : toNdArray(heap);
  const h = given ? null : yield* readingNpyHeader(heapPath);
  const heapShape = given ? given.shape : h!.shape;
  if (heapShape.length === 0) throw new NpyError('SHAPE_MISMATCH', 'references need a heap with at least one axis');
  // The order the heap has (or will have) on disk: saveNpy writes Fortran order only where it differs from C.
  const { rows } = referencedAxis(heapShape, given ? given.order === 'F' && !isOrderFree(given.shape) : h!.fortranOrder);
  const r = toOrder(toNdArray(refs), 'C');
  if (r.dtype.kind !== 'i' && r.dtype.kind !== 'u') throw new NpyError('DTYPE_MISMATCH', `references must be integers, not ${r.dtype.str}`);
  const words = new Float64Array(r.size);
  for (let i = 0; i < r.size; i++) {
    const v = Number(r.data[i] as number | bigint);
    if (!(v >= 0 && v < rows)) throw new NpyError('BAD_INDEX', `reference ${i} is ${v}, outside the heap's ${rows} rows`);
    words[i] = v;
  }
  if (given) yield* savingNpy(heapPath, given, replace);
  const dtype = raggedIndexDType({ kind: 'ref', heap: relative(dirname(path), heapPath), layout: 'references' });
  yield* savingNpy(path, wordsArray(dtype, words, r.shape), replace);
}

/**
 * Write references (numpy#25374): an index of any shape whose integers each pick one slice of a heap
 * — `heap[ref]`, or `heap[..., ref]` for a Fortran-ordered heap — so a `(120, 5, 10)` index into a
 * `(100, 20, 30)` heap reads as `(120, 5, 10, 20, 30)`. `heap` is an existing .npy (a path relative
 * to the index's folder) or an array, written as `<index>.heap`.
 * @example
 * await saveReferences('picks.npy', { data: new Int32Array([2, 0, 2]), shape: [3] }, 'frames.npy');
 */
export function saveReferences(
  path: string,
  refs: NdArray | ArraySpec,
  heap: string | NdArray | ArraySpec,
  options: RaggedPathOptions & ReplaceOptions & AsyncOptions = {},
): Promise<void> {
  checkOptions('saveReferences', options, REFERENCES_KEYS);
  return run(savingReferences(path, refs, heap, options), options.signal, path);
}

/**
 * {@link saveReferences}, blocking.
 * @example
 * saveReferencesSync('picks.npy', { data: new Int32Array([2, 0, 2]), shape: [3] }, 'frames.npy');
 */
export function saveReferencesSync(
  path: string,
  refs: NdArray | ArraySpec,
  heap: string | NdArray | ArraySpec,
  options: RaggedPathOptions & ReplaceOptions = {},
): void {
  checkOptions('saveReferencesSync', options, REFERENCES_SYNC_KEYS);
  runSync(savingReferences(path, refs, heap, options), path);
}
