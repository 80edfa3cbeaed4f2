/** Reading ragged arrays from files: the blocking handle, the async reader, records with ragged fields. */
import { getField } from '../../array/records.js';
import type { DType } from '../../format/dtype.js';
import { NpyError } from '../../errors.js';
import { checkOptions, knownKeys } from '../../options.js';
import { RAGGED_PATH_KEYS } from '../../ragged/build.js';
import { namedObject } from '../../array/safe-object.js';
import { openNpyFile, openNpyFileSync, type NpyFileHandleSync } from '../regions.js';
import type { AsyncOptions } from '../../io/handles.js';
import { readNpyHeader, readNpyHeaderSync } from '../npy-files.js';
import { indexWords, raggedInfo, type RaggedElement, type RaggedInfo } from '../../ragged/convention.js';
import { openingLevel, pairsOf, readingPairs, runReadingSync, type RaggedLevel, type Reading } from '../../ragged/reading.js';
import { openRaggedWith, raggedMethods, type RaggedFacts, type RaggedReader } from '../../ragged/readers.js';
import { heapPathIn } from './files.js';
import type { RaggedPathOptions } from '../../ragged/build.js';

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

const OPEN_SYNC_KEYS = knownKeys<RaggedPathOptions>(RAGGED_PATH_KEYS);
const OPEN_KEYS = knownKeys<RaggedPathOptions & AsyncOptions>({ ...RAGGED_PATH_KEYS, signal: true });
const SIGNAL_KEYS = knownKeys<AsyncOptions>({ signal: true });

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
  const out = namedObject<RaggedInfo>();
  for (const f of dtype.fields ?? []) {
    const info = raggedInfo(f.dtype);
    if (info) out[f.name] = info;
  }
  return out;
}

const blockingFiles = { open: (p: string) => openNpyFileSync(p), read: (h: NpyFileHandleSync, s: number[], c: number[]) => h.read(s, c) };

/**
 * Open a record array some of whose fields are ragged; each element comes back with those fields resolved.
 * @example
 * const r = openRaggedRecordsSync('clips.npy');
 * r.get(0);   // { id: 1, frames: NdArray, label: 'cat' }
 * r.close();
 */
export function openRaggedRecordsSync(path: string, options: RaggedPathOptions = {}): RaggedRecordsHandle {
  checkOptions('openRaggedRecordsSync', options, OPEN_SYNC_KEYS);
  const main = openNpyFileSync(path);
  const fields = raggedFieldsOf(main.dtype);
  const heaps = namedObject<NpyFileHandleSync>();
  const closeAll = (): void => {
    main.close();
    for (const h of Object.values(heaps)) h.close();
  };
  try {
    if (Object.keys(fields).length === 0) throw new NpyError('NOT_RAGGED', `${path} has no ragged fields`);
    for (const [name, info] of Object.entries(fields)) {
      if (info.layout === 'offsets') throw new NpyError('BAD_RAGGED', `${path}: field '${name}' is an offsets index, which a record field cannot be`);
      heaps[name] = openNpyFileSync(heapPathIn(path, info.heap, options));
    }
  } catch (e) {
    closeAll();
    throw e;
  }
  const length = main.shape[0] ?? 0;
  const slice = (from: number, to: number): Record<string, unknown>[] => {
    if (!Number.isInteger(from) || !Number.isInteger(to) || from < 0 || to > length || from > to)
      throw new NpyError('BAD_INDEX', `elements [${from}, ${to}) are outside 0…${length}`);
    if (from === to) return [];
    const rows = main.read([from], [to - from]);
    const out = (rows.toList() as Record<string, unknown>[]).map((rec) => ({ ...rec }));
    for (const [name, info] of Object.entries(fields)) {
      const field = { name: `${path} field '${name}'`, info, heap: heaps[name]!, inner: null };
      const elements = readBlocking(readingPairs(field, pairsOf(field, indexWords(getField(rows, name)), from, to - from)));
      elements.forEach((e, k) => {
        out[k]![name] = e;
      });
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
  checkOptions('openRaggedSync', options, OPEN_SYNC_KEYS);
  const opened: NpyFileHandleSync[] = [];
  const closeAll = (): void => {
    for (const h of opened) h.close();
  };
  let level: RaggedLevel<NpyFileHandleSync>;
  try {
    level = runReadingSync(
      openingLevel<NpyFileHandleSync>(path, (i, h) => heapPathIn(i, h, options)),
      blockingFiles,
      opened,
    );
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
  checkOptions('openRagged', options, OPEN_KEYS);
  const reader = await openRaggedWith(
    (p) => openNpyFile(p, { signal: options.signal }),
    path,
    (index, heap) => heapPathIn(index, heap, options),
  );
  return Object.assign(reader, { [Symbol.asyncDispose]: () => reader.close() });
}

/**
 * Whether the .npy at `path` is a ragged index, reading only its header.
 * @example
 * await isRagged('words.npy');   // true
 */
export async function isRagged(path: string, options: AsyncOptions = {}): Promise<boolean> {
  checkOptions('isRagged', options, SIGNAL_KEYS);
  return raggedInfo((await readNpyHeader(path, options)).dtype) !== null;
}
