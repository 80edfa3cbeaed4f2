/** Appending to ragged arrays: heap rows first (made durable), then the index rows, under the index's append lock. */
import { dirname, join, resolve } from 'node:path';
import type { DType } from '../../format/dtype.js';
import { NpyError } from '../../errors.js';
import { checkOptions, knownKeys } from '../../options.js';
import type { NdArray } from '../../array/ndarray.js';
import { appending, droppingRows } from '../regions.js';
import type { AsyncOptions } from '../../io/handles.js';
import { readingNpyHeader, savingNpy } from '../npy-files.js';
import type { NpyHeader } from '../../format/header.js';
import { appendLocked } from '../lock.js';
import { run, runSync } from '../drive.js';
import { perform, type FileStep, type Operation } from '../../io/steps.js';
import { followHeap, rowsInHeap, indexWords, raggedIndexDType, raggedInfo, widthFor, type RaggedInfo, type WordWidth } from '../../ragged/convention.js';
import { RAGGED_PATH_KEYS, heapRows, maxOf, wordsArray, wordsOf } from '../../ragged/build.js';
import { headerOrNull, heapPathIn, readingRegionAt } from './files.js';
import type { Input, RaggedPathOptions } from '../../ragged/build.js';

/** What appending needs of a ragged array on disk: its index header and layout, its heap, and the heap's dtype and row count. */
function* raggedFacts(
  path: string,
  options: RaggedPathOptions,
  chain: readonly string[] = [resolve(path)],
): Operation<{ index: NpyHeader; info: RaggedInfo; heapPath: string; heap: NpyHeader; heapDtype: DType; heapLength: number }, FileStep> {
  const index = yield* readingNpyHeader(path);
  const info = raggedInfo(index.dtype);
  if (!info) throw new NpyError('NOT_RAGGED', `${path} is not a ragged index (its dtype has no npyts.ragged title)`);
  if (info.kind === 'ref') throw new NpyError('DTYPE_MISMATCH', `${path} holds references; append to it with appendNpy (its heap is an ordinary array)`);
  const heapPath = heapPathIn(path, info.heap, options);
  const followed = followHeap(chain, heapPath);
  yield* heapMustExist(path, heapPath);
  const heap = yield* readingNpyHeader(heapPath);
  // Two levels: the heap is itself an index; the arrays' dtype is that of its own heap.
  const heapDtype = raggedInfo(heap.dtype) ? (yield* raggedFacts(heapPath, options, followed)).heapDtype : heap.dtype;
  return { index, info, heapPath, heap, heapDtype, heapLength: rowsInHeap(heap) };
}

/**
 * The ragged indexes other than `index` that name `heapPath` (a top-level index, or a record field's),
 * found in the heap's folder and the index's: where a heap is shared, its indexes are beside it.
 * The folders are listed by the engine's `list` step (async in an async append), and only when an
 * append would drop heap rows: the usual append lists nothing.
 */
function* indexesNaming(heapPath: string, index: string): Operation<string[], FileStep> {
  const self = resolve(index);
  const found: string[] = [];
  for (const folder of new Set([dirname(heapPath), dirname(self)])) {
    const names = yield* perform({ op: 'list', path: folder });
    for (const name of names ?? []) {
      const other = join(folder, name);
      if (other === self || other === heapPath) continue;
      const header = yield* headerOrNull(other);
      if (!header) continue;
      let infos: (RaggedInfo | null)[];
      try {
        infos = [raggedInfo(header.dtype), ...(header.dtype.fields ?? []).map((f) => raggedInfo(f.dtype))];
      } catch {
        continue; // a malformed title names no heap
      }
      if (infos.some((i) => i !== null && resolve(folder, i.heap) === heapPath)) found.push(other);
    }
  }
  return found;
}

/** Refuse an index whose heap is not there, naming both (before any lock is taken on the heap). */
function* heapMustExist(index: string, heapPath: string): Operation<void, FileStep> {
  if (!(yield* perform({ op: 'exists', path: heapPath }))) {
    throw new NpyError('NO_HEAP', `the ragged index ${index} names the heap ${heapPath}, which does not exist (was it moved, or not copied with the index?)`);
  }
}

export function* appendingRagged(path: string, elements: Input[], options: RaggedPathOptions): Operation<void, FileStep> {
  yield* appendLocked(path, () => appendingHoldingLock(path, elements, options));
}

/**
 * Appending for a caller holding the index's append lock. The heap's lock is taken too (another
 * index may share the heap): its length is read and both files grow while no other writer can move them.
 */
function* appendingHoldingLock(path: string, elements: Input[], options: RaggedPathOptions): Operation<void, FileStep> {
  // Only the heap's name is needed to take its lock; the facts are read under both locks below.
  const info = raggedInfo((yield* readingNpyHeader(path)).dtype);
  if (!info) throw new NpyError('NOT_RAGGED', `${path} is not a ragged index (its dtype has no npyts.ragged title)`);
  const heapPath = heapPathIn(path, info.heap, options);
  followHeap([resolve(path)], heapPath); // an index that is its own heap would wait for its own lock
  yield* heapMustExist(path, heapPath);
  function* underHeapLock(): Operation<void, FileStep> {
    const { index, info, heap, heapDtype, heapLength } = yield* raggedFacts(path, options);
    const { layout, kind } = info;
    const count = index.shape[0] ?? 0;
    let start = heapLength;
    if (layout === 'offsets') {
      // The last offset is where the new rows go. Heap rows past it were left by an append that
      // stopped before its index was written; the index owns its heap, so they are dropped.
      const last = count ? indexWords(yield* readingRegionAt(path, [count - 1], [1]))[0]! : 0;
      if (last > heapLength) throw new NpyError('BAD_RAGGED', `${path} ends at row ${last} of its heap, which has ${heapLength}`);
      // A heap that is itself an offsets index keeps one word more than its elements.
      if (last < heapLength) {
        // Unless another index names the heap: the rows past this index's end are then (or may be)
        // its elements, and dropping them would leave it unreadable. Nothing is changed.
        const others = yield* indexesNaming(heapPath, path);
        if (others.length) {
          throw new NpyError(
            'NAME_CLASH',
            `${path} is an offsets index, which owns its heap, but ${others.join(', ')} also ${others.length > 1 ? 'name' : 'names'} its heap ${heapPath}: appending would drop the ${heapLength - last} heap rows past ${path}'s end, which may be theirs. Nothing was changed; give each index a heap of its own (save ${path} again, or share heaps with the ranges layout)`,
          );
        }
        yield* droppingRows(heapPath, last + (heap.shape[0] ?? 0) - heapLength);
      }
      start = last;
    }
    const { kind: k, rows, bounds, nested } = heapRows(elements, start, kind === 'array' ? heapDtype : undefined, layout === 'zero-terminated');
    if (elements.length && k !== kind) throw new NpyError('DTYPE_MISMATCH', `cannot append ${k} elements to a ${kind} ragged array`);
    if (nested) yield* appendingHoldingLock(heapPath, nested, options);
    else if (rows?.size) yield* appending(heapPath, rows);
    if (!bounds.length) return;
    const words = wordsOf(layout, bounds);
    const width = index.dtype.fields![0]!.dtype.itemsize as WordWidth;
    const need = widthFor(maxOf(words));
    const per = index.shape.slice(1).reduce((p, x) => p * x, 1);
    if ((bounds.length / 2) % per) throw new NpyError('SHAPE_MISMATCH', `${path} has index rows of ${per} elements; append a multiple of ${per}`);
    const rowsShape = [bounds.length / 2 / per, ...index.shape.slice(1)];
    if (layout === 'ranges' || need <= width) {
      yield* appending(path, wordsArray(raggedIndexDType(info, width), words, rowsShape));
      return;
    }
    // A word no longer fits: the index is rewritten in the wider width (beside, then renamed over).
    const old = indexWords(
      yield* readingRegionAt(
        path,
        index.shape.map(() => 0),
        index.shape,
      ),
    );
    const all = new Float64Array(old.length + words.length);
    all.set(old);
    all.set(words, old.length);
    yield* savingNpy(path, wordsArray(raggedIndexDType(info, need), all, [index.shape[0]! + rowsShape[0]!, ...index.shape.slice(1)]));
  }
  yield* appendLocked(heapPath, underHeapLock);
}

export function* lockedAppend(path: string, array: NdArray): Operation<void, FileStep> {
  yield* appendLocked(path, () => appending(path, array));
}

const APPEND_SYNC_KEYS = knownKeys<RaggedPathOptions>(RAGGED_PATH_KEYS);
const APPEND_KEYS = knownKeys<RaggedPathOptions & AsyncOptions>({ ...RAGGED_PATH_KEYS, signal: true });

/**
 * Append elements: heap rows first (made durable), then the index rows — a crash leaves the previous
 * state. A compact index whose words outgrow their width is rewritten wider, beside and renamed over.
 * Waiting for another appender does not block the event loop.
 * @example
 * await appendRagged('words.npy', ['ghij']);
 */
export function appendRagged(path: string, elements: Input[], options: RaggedPathOptions & AsyncOptions = {}): Promise<void> {
  checkOptions('appendRagged', options, APPEND_KEYS);
  return run(appendingRagged(path, elements, options), options.signal, path);
}

/**
 * {@link appendRagged}, blocking.
 * @example
 * appendRaggedSync('words.npy', ['ghij']);
 */
export function appendRaggedSync(path: string, elements: Input[], options: RaggedPathOptions = {}): void {
  checkOptions('appendRaggedSync', options, APPEND_SYNC_KEYS);
  runSync(appendingRagged(path, elements, options), path);
}
