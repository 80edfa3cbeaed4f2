/**
 * Appends over a store, in every runtime: a key edited in place under the store's lock of it
 * (`EditStore`). The rows go after the data and are flushed before the header's shape is rewritten
 * (the steps of io/npy-ops.ts, the same as on Node's files and OPFS access handles), so a reader
 * sees the old array or the new one.
 */
import type { NdArray } from '../array/ndarray.js';
import type { AsyncByteSource } from '../io/byte-source.js';
import { performOnSourceAsync, type EditableSource } from '../io/handles.js';
import { appendingRows } from '../io/npy-ops.js';
import { SOURCE, drive, type Operation, type SourceStep } from '../io/steps.js';
import type { ArraySpec } from '../npy.js';
import { checkOptions, knownKeys } from '../options.js';
import type { InStore } from './entries.js';
import { checkKey, checkStore } from './key.js';
import type { EditStore, LockOptions, StoreEditor, StoreLock } from './types.js';

/** Options of {@link appendNpy} in a store: a store whose keys are edited in place, and `signal`. */
export interface StoreAppendOptions extends InStore<EditStore> {}

const APPEND_KEYS = knownKeys<StoreAppendOptions>({ store: true, signal: true });

/** An editor as the source the engine's steps run on: reads, writes and flushes go to the key. */
function editedSource(editor: StoreEditor, key: string, size: number): EditableSource {
  let end = size;
  const source: AsyncByteSource & Required<Pick<EditableSource, 'write' | 'sync'>> = {
    name: key,
    get size() {
      return end;
    },
    read: async (at, length) => editor.read(at, length),
    async write(bytes, at) {
      await editor.write(bytes, at);
      end = Math.max(end, at + bytes.length);
    },
    sync: async () => editor.flush(),
  };
  return source;
}

/**
 * Run `operation` (steps of io/npy-ops.ts on `SOURCE`) over `key` of `store` opened for edits, and
 * close it on every path. The caller holds the key's lock and checked the key.
 */
export async function editingKey<T>(store: EditStore, key: string, operation: Operation<T, SourceStep>, signal?: AbortSignal): Promise<T> {
  const editor = await store.edit(key);
  let result: T;
  try {
    result = await drive(operation, performOnSourceAsync(editedSource(editor, key, await editor.size()), key), signal);
  } catch (e) {
    try {
      await editor.close();
    } catch {
      /* closing after a failure: the first error is the one to report */
    }
    throw e;
  }
  await editor.close();
  return result;
}

/** `waiting`, or the signal's reason as soon as it fires. */
async function untilAborted(waiting: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return waiting;
  let onAbort!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    await Promise.race([waiting, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** Run `body` holding `store`'s lock of `key`, released on every path. */
export async function withKeyLock<T>(store: EditStore, key: string, body: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  const lock = await store.lock(key, { signal });
  try {
    return await body();
  } finally {
    await lock.release();
  }
}

/**
 * Refuse `options` of an append that are not a store's (unknown names, a store without `edit` and
 * `lock`) before anything is written. Shared by `appendRagged` in a store.
 */
export function checkAppend(entry: string, options: unknown, known: ReadonlySet<string>): void {
  checkOptions(entry, options, known);
  checkStore(entry, (options as { store?: unknown } | undefined)?.store, 'edit');
}

/**
 * Append along axis 0 (the last axis of a Fortran-order file) to the .npy under `key` of a store, in
 * place: the rows are written after the data and flushed, and only then is the header's shape
 * rewritten (within the header's room, which numpy ≥ 1.24 and npyts leave; else `HEADER_ROOM`,
 * before anything is written). Appenders of one key are serialised by the store's `lock`. An abort
 * before the header is rewritten leaves the old array.
 * @example
 * await appendNpy('log.npy', { data: new Float32Array(512), shape: [1, 512] }, { store });
 */
export async function appendNpy(key: string, input: NdArray | ArraySpec, options: StoreAppendOptions): Promise<void> {
  checkAppend('appendNpy', options, APPEND_KEYS);
  const { store, signal } = options;
  signal?.throwIfAborted();
  checkKey(store, key, `'${key}'`);
  await withKeyLock(store, key, () => editingKey(store, key, appendingRows(SOURCE, key, input, 'refuse'), signal), signal);
}

/**
 * Locks of keys within this program: each `lock(key)` waits for the one before it. The lock of a
 * store with no other way to hold a key (memory; OPFS where there are no Web Locks).
 * @example
 * const locks = keyLocks();
 * const held = await locks.lock('w.npy');
 */
export function keyLocks(): { lock(key: string, options?: LockOptions): Promise<StoreLock> } {
  const tails = new Map<string, Promise<void>>();
  return {
    async lock(key, { signal } = {}) {
      signal?.throwIfAborted();
      const before = tails.get(key) ?? Promise.resolve();
      let release!: () => void;
      const mine = new Promise<void>((resolve) => {
        release = resolve;
      });
      const tail = before.then(() => mine);
      tails.set(key, tail);
      try {
        await untilAborted(before, signal);
      } catch (e) {
        // Given up while waiting: the turn passes straight on to the next waiter (the tail stays: a holder may still be before it).
        release();
        throw e;
      }
      let held = true;
      return {
        release() {
          if (!held) return;
          held = false;
          release();
          if (tails.get(key) === tail) tails.delete(key);
        },
      };
    },
  };
}
