/**
 * Ragged arrays in a store, in every runtime: an index .npy and its heap .npy, both keys of the same
 * store (the heap's name in the index's title is a key beside the index, checked by the key rule).
 * Saved as on disk (a new heap under a name the old index does not use, the index replaced in one
 * step, the old heap removed after), appended in place (heap rows first, flushed, then the index's),
 * and read by region reads of both keys.
 */
import { NdArray } from '../array/ndarray.js';
import { NpyError } from '../errors.js';
import type { NpyHeader } from '../format/header.js';
import { openNpy } from '../io/open.js';
import type { NpyReader } from '../io/reader.js';
import { appendingRows } from '../io/npy-ops.js';
import { SOURCE } from '../io/steps.js';
import { checkOptions, knownKeys } from '../options.js';
import {
  bytesArray,
  gridOf,
  heapRows,
  indexArray,
  isRecordList,
  kindOf,
  maxOf,
  wordsArray,
  wordsOf,
  type Input,
  type SaveRaggedOptions,
} from '../ragged/build.js';
import { OWNED_SUFFIX, indexWords, raggedIndexDType, raggedInfo, rowsInHeap, widthFor, type RaggedInfo, type WordWidth } from '../ragged/convention.js';
import { openRaggedWith, type RaggedReader } from '../ragged/readers.js';
import { checkAppend, editingKey, withKeyLock } from './append.js';
import { saveNpy, type InStore } from './entries.js';
import { checkKey, checkSiblingName, checkStore } from './key.js';
import type { EditStore, ReadStore } from './types.js';

/** What ragged files in a store need: keys read, written, edited in place and locked. */
export type RaggedStore = ReadStore & EditStore;

/** Options of {@link saveRagged} in a store: the index's layout and shape. */
export interface StoreSaveRaggedOptions extends Pick<SaveRaggedOptions, 'layout' | 'shape'>, InStore<RaggedStore> {}
/** Options of {@link appendRagged} in a store. */
export interface StoreAppendRaggedOptions extends InStore<RaggedStore> {}
/** Options of {@link openRagged} in a store. */
export interface StoreOpenRaggedOptions extends InStore<ReadStore> {}

const SAVE_KEYS = knownKeys<StoreSaveRaggedOptions>({ layout: true, shape: true, store: true, signal: true });
const APPEND_KEYS = knownKeys<StoreAppendRaggedOptions>({ store: true, signal: true });
const OPEN_KEYS = knownKeys<StoreOpenRaggedOptions>({ store: true, signal: true });

/** The folder part of a key (`a/b/` of `a/b/w.npy`; empty at the top). */
const folderOf = (key: string): string => key.slice(0, key.lastIndexOf('/') + 1);

/**
 * The key of the heap an index names: the name in its title, a key beside the index (the key rule
 * checks the name, then the key, before the store is asked for it).
 * @example
 * heapKeyOf(store, 'text/words.npy', 'words.npy.strings');   // 'text/words.npy.strings'
 */
export function heapKeyOf(store: ReadStore | EditStore, index: string, heap: string): string {
  checkSiblingName(heap, 'its heap', `the ragged index '${index}'`, false);
  const key = folderOf(index) + heap;
  checkKey(store, key, `the heap of '${index}'`);
  if (key === index) throw new NpyError('NAME_CLASH', `the ragged index '${index}' names itself as its heap`);
  return key;
}

/** Run `body` over `key` opened for region reads, closed on every path. */
async function reading<T>(store: ReadStore, key: string, signal: AbortSignal | undefined, body: (reader: NpyReader) => Promise<T>): Promise<T> {
  const reader = await openNpy(key, { store, signal });
  try {
    return await body(reader);
  } finally {
    await reader.close();
  }
}

/**
 * The ragged info of `key`'s index, or null where it is absent, not a .npy or not ragged (nothing of
 * it is then owned). A failure to read it (the network, an abort) is thrown: taken for "absent", a
 * save could write its new heap under the name the old index still reads.
 */
async function raggedInfoOrNull(store: ReadStore, key: string, signal: AbortSignal | undefined): Promise<RaggedInfo | null> {
  try {
    return await reading(store, key, signal, async (r) => raggedInfo(r.dtype));
  } catch (e) {
    if (signal?.aborted || (e instanceof NpyError && (e.code === 'NETWORK' || e.code === 'BAD_RESPONSE'))) throw e;
    return null;
  }
}

/** Refuse what the store's ragged entries leave to `@npyts/core/node`'s: records, and two levels. */
function refuseNotHere(entry: string, what: string): never {
  throw new NpyError('BAD_OPTION', `${entry} in a store does not write ${what}; save them with @npyts/core/node's ${entry}, or as several ragged arrays`);
}

/**
 * Write a ragged array under `key` of a store (its heap `<key>.heap`, or `<key>.strings` for text, a
 * key beside it): the heap is written under a name the old index does not use, then the index
 * replaces the old one in one step (under its lock: no append mixes the two), then the old index's
 * own heap is removed. A reader sees the old array or the new one; one that opened the old index
 * just before finds its heap gone (NOT_FOUND), never the old index over a new heap. Elements are
 * arrays of one dtype and trailing shape, or strings.
 * @example
 * await saveRagged('words.npy', ['a', 'bc', 'def'], { store, layout: 'offsets' });   // words.npy + words.npy.strings
 */
export async function saveRagged(key: string, elements: Input[], options: StoreSaveRaggedOptions): Promise<void> {
  checkAppend('saveRagged', options, SAVE_KEYS);
  checkStore('saveRagged', options.store, 'read');
  const { store, signal } = options;
  if (!Array.isArray(elements)) throw new NpyError('BAD_VALUE', 'saveRagged takes an array of elements');
  if (isRecordList(elements)) refuseNotHere('saveRagged', 'records with ragged fields');
  const layout = options.layout ?? 'ranges';
  const kind = kindOf(elements);
  if (kind === 'nested') refuseNotHere('saveRagged', 'lists of lists (two levels of indexes)');
  const terminated = layout === 'zero-terminated';
  checkKey(store, key, `'${key}'`);
  signal?.throwIfAborted();
  await withKeyLock(
    store,
    key,
    async () => {
      const old = await raggedInfoOrNull(store, key, signal);
      // The old index's heap, where it is one it owns (a default name beside it): removed once replaced.
      const base = key.slice(folderOf(key).length);
      const oldHeap = old?.heap.startsWith(base) && OWNED_SUFFIX.test(old.heap.slice(base.length)) ? folderOf(key) + old.heap : null;
      const wanted = `${base}.${kind === 'utf8' || terminated ? 'strings' : 'heap'}`;
      const heapName = oldHeap === folderOf(key) + wanted ? `${wanted}.1` : wanted;
      const heapKey = heapKeyOf(store, key, heapName);
      // Every check before the first write: a refused save leaves the keys as they were.
      const { kind: k, rows, bounds } = heapRows(elements, 0, undefined, terminated);
      const info: RaggedInfo = { kind: k, heap: heapName, layout };
      const grid = layout === 'offsets' && !options.shape ? null : gridOf(bounds.length / 2, layout, options.shape);
      if (!rows && k !== 'utf8') throw new NpyError('BAD_OPTION', 'an empty ragged array of arrays needs a heap to name its dtype; save at least one element');
      const index = indexArray(info, bounds, 0);
      await saveNpy(heapKey, rows ?? bytesArray(new Uint8Array(0)), { store, signal });
      await saveNpy(key, grid ? new NdArray(index.dtype, grid, index.data) : index, { store, signal });
      if (oldHeap && oldHeap !== heapKey) await store.remove(oldHeap);
    },
    signal,
  );
}

/** The header facts of `key`: its dtype and shape. */
const headerOf = (store: ReadStore, key: string, signal?: AbortSignal): Promise<Pick<NpyHeader, 'dtype' | 'shape'>> =>
  reading(store, key, signal, async (r) => ({ dtype: r.dtype, shape: [...r.shape] }));

/**
 * Append elements to the ragged array under `key` of a store, in place: the heap's rows first
 * (flushed, then its header), then the index's rows (the same), under the locks of both keys. A stop
 * between the two leaves heap rows no index names: the old array. A compact index whose words
 * outgrow their width is written again, wider, replacing the key in one step.
 * @example
 * await appendRagged('words.npy', ['ghij'], { store });
 */
export async function appendRagged(key: string, elements: Input[], options: StoreAppendRaggedOptions): Promise<void> {
  checkAppend('appendRagged', options, APPEND_KEYS);
  checkStore('appendRagged', options.store, 'read');
  const { store, signal } = options;
  if (!Array.isArray(elements)) throw new NpyError('BAD_VALUE', 'appendRagged takes an array of elements');
  checkKey(store, key, `'${key}'`);
  signal?.throwIfAborted();
  await withKeyLock(
    store,
    key,
    async () => {
      const first = raggedInfo((await headerOf(store, key, signal)).dtype);
      if (!first) throw new NpyError('NOT_RAGGED', `'${key}' is not a ragged index (its dtype has no npyts.ragged title)`);
      const heapKey = heapKeyOf(store, key, first.heap);
      await withKeyLock(
        store,
        heapKey,
        async () => {
          // Read again under both locks: no other writer moves either key from here on.
          const index = await headerOf(store, key, signal);
          const info = raggedInfo(index.dtype);
          if (!info || info.heap !== first.heap) throw new NpyError('SOURCE_CHANGED', `'${key}' was replaced while this append waited; append again`);
          if (info.kind === 'ref')
            throw new NpyError('DTYPE_MISMATCH', `'${key}' holds references; append to it with appendNpy (its heap is an ordinary array)`);
          const heap = await headerOf(store, heapKey, signal);
          if (raggedInfo(heap.dtype)) refuseNotHere('appendRagged', `to '${key}', whose heap is itself an index (two levels)`);
          const heapLength = rowsInHeap(heap);
          const { layout, kind } = info;
          const count = index.shape[0] ?? 0;
          let start = heapLength;
          if (layout === 'offsets') {
            // The last offset is where the new rows go.
            const last = count ? indexWords(await reading(store, key, signal, (r) => r.read([count - 1], [1], { signal })))[0]! : 0;
            if (last > heapLength) throw new NpyError('BAD_RAGGED', `'${key}' ends at row ${last} of its heap, which has ${heapLength}`);
            if (last < heapLength) {
              // Rows an append left when it stopped before its index was written: the index owns them,
              // but another index may share the heap, which only the folder's listing on disk can tell.
              throw new NpyError(
                'BAD_RAGGED',
                `'${key}' is an offsets index ending at row ${last} of its heap '${heapKey}', which has ${heapLength} (rows an interrupted append left); nothing was changed: append with @npyts/core/node's appendRagged on the files, which drops them, or save the array again`,
              );
            }
            start = last;
          }
          const { kind: k, rows, bounds, nested } = heapRows(elements, start, kind === 'array' ? heap.dtype : undefined, layout === 'zero-terminated');
          if (elements.length && k !== kind) throw new NpyError('DTYPE_MISMATCH', `cannot append ${k} elements to a ${kind} ragged array`);
          if (nested) refuseNotHere('appendRagged', 'lists of lists (two levels of indexes)');
          if (!bounds.length) return;
          const words = wordsOf(layout, bounds);
          const width = index.dtype.fields![0]!.dtype.itemsize as WordWidth;
          const need = widthFor(maxOf(words));
          const per = index.shape.slice(1).reduce((p, x) => p * x, 1);
          if ((bounds.length / 2) % per) throw new NpyError('SHAPE_MISMATCH', `'${key}' has index rows of ${per} elements; append a multiple of ${per}`);
          const rowsShape = [bounds.length / 2 / per, ...index.shape.slice(1)];
          // Checked before the first write: a refused append leaves both keys as they were.
          if (rows?.size) await editingKey(store, heapKey, appendingRows(SOURCE, heapKey, rows, 'refuse'), signal);
          if (layout === 'ranges' || need <= width) {
            await editingKey(store, key, appendingRows(SOURCE, key, wordsArray(raggedIndexDType(info, width), words, rowsShape), 'refuse'), signal);
            return;
          }
          // A word no longer fits: the index is written again in the wider width, replacing the key.
          const old = indexWords(
            await reading(store, key, signal, (r) =>
              r.read(
                index.shape.map(() => 0),
                index.shape,
                { signal },
              ),
            ),
          );
          const all = new Float64Array(old.length + words.length);
          all.set(old);
          all.set(words, old.length);
          await saveNpy(key, wordsArray(raggedIndexDType(info, need), all, [index.shape[0]! + rowsShape[0]!, ...index.shape.slice(1)]), { store, signal });
        },
        signal,
      );
    },
    signal,
  );
}

/**
 * Open the ragged array under `key` of a store for reads of elements (`get`, `slice`, `chunks`):
 * region reads of the index and of its heap, a key beside it. The reader's `close` closes both.
 * @example
 * const words = await openRagged('words.npy', { store });
 * await words.get(1);   // 'bc'
 */
export async function openRagged(key: string, options: StoreOpenRaggedOptions): Promise<RaggedReader> {
  checkOptions('openRagged', options, OPEN_KEYS);
  checkStore('openRagged', options?.store, 'read');
  const { store, signal } = options;
  checkKey(store, key, `'${key}'`);
  signal?.throwIfAborted();
  const { parts: _, ...reader } = await openRaggedWith(
    (name) => openNpy(name, { store, signal }),
    key,
    (index, heap) => heapKeyOf(store, index, heap),
  );
  return reader;
}
