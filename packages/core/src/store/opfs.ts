/**
 * The browser's own disk (the Origin Private File System) as a store: keys are files under a
 * directory handle (`await navigator.storage.getDirectory()`), folders made as keys name them.
 * Reads slice the file (`getFile()`); writes go to a file beside the key, written through a
 * synchronous access handle in a worker (positional writes, no copy) and renamed over the key at
 * commit, or, in a page (no sync handles there), through a writable stream, which the browser
 * itself keeps beside the file until it is closed. Appends edit a key in place through a sync
 * access handle (a worker only: a page is refused), under a Web Lock of the key.
 */
import { NpyError } from '../errors.js';
import { blobSource } from '../io/byte-source.js';
import { accessSource, type SyncAccessHandle } from '../io/access-handle.js';
import { keyLocks } from './append.js';
import type { EditStore, Store, StoreEditor, StoreLock, StoreWriter } from './types.js';
import { missingKey } from './write.js';

/** What the store uses of a `FileSystemFileHandle` (any object with these methods will do). */
export interface OpfsFileHandle {
  getFile(): Promise<Blob>;
  createSyncAccessHandle?: () => Promise<SyncAccessHandle & { close(): void }>;
  createWritable(options?: { keepExistingData?: boolean }): Promise<{
    write(data: { type: 'write'; position: number; data: Uint8Array }): Promise<void>;
    close(): Promise<void>;
    abort(): Promise<void>;
  }>;
  move?: (name: string) => Promise<void>;
}

/** What the store uses of a `FileSystemDirectoryHandle`. */
export interface OpfsDirectoryHandle {
  getDirectoryHandle(name: string, options?: { create?: boolean }): Promise<OpfsDirectoryHandle>;
  getFileHandle(name: string, options?: { create?: boolean }): Promise<OpfsFileHandle>;
  removeEntry(name: string): Promise<void>;
  entries(): AsyncIterable<[string, { kind: 'file' | 'directory' }]>;
}

/** Whether `e` is the DOMException a missing entry throws. */
function isMissing(e: unknown): boolean {
  return (e as { name?: string } | null)?.name === 'NotFoundError';
}

/** The file's folder and name of `key` (folders made where `create`). */
async function entryOf(root: OpfsDirectoryHandle, key: string, create: boolean): Promise<{ dir: OpfsDirectoryHandle; name: string }> {
  const parts = key.split('/');
  let dir = root;
  for (const part of parts.slice(0, -1)) dir = await dir.getDirectoryHandle(part, { create });
  return { dir, name: parts[parts.length - 1]! };
}

/** A file beside `name` that no other writer picks. */
function tempName(name: string): string {
  return `${name}.${Date.now()}.${Math.random().toString(36).slice(2, 8)}.tmp`;
}

/** Writes through a sync access handle into a file beside the key, moved over it at commit. */
async function besideWriter(dir: OpfsDirectoryHandle, name: string): Promise<StoreWriter> {
  const temp = tempName(name);
  const file = await dir.getFileHandle(temp, { create: true });
  const access = await file.createSyncAccessHandle!();
  let open = true;
  const close = (): void => {
    if (open) access.close();
    open = false;
  };
  return {
    write(bytes, at) {
      for (let done = 0; done < bytes.length; ) {
        const n = access.write(bytes.subarray(done), { at: at + done });
        if (n <= 0) throw new NpyError('WRITE_FAILED', `a write at byte ${at + done} of ${name} wrote nothing (is the storage quota full?)`);
        done += n;
      }
    },
    async commit() {
      access.flush();
      close();
      if (!file.move) throw new NpyError('WRITE_FAILED', `this browser cannot rename an OPFS file (no FileSystemFileHandle.move): ${name} was not replaced`);
      await file.move(name);
    },
    async abort() {
      close();
      await dir.removeEntry(temp).catch(() => {});
    },
  };
}

/** Whether sync access handles exist here (dedicated workers only; so does their interface). */
const inWorker = (): boolean => typeof (globalThis as { FileSystemSyncAccessHandle?: unknown }).FileSystemSyncAccessHandle === 'function';

/** The Web Locks of this origin, where the runtime has them (pages and workers). */
interface WebLocks {
  request(name: string, options: { signal?: AbortSignal }, callback: () => Promise<void>): Promise<void>;
}

/**
 * Hold `name` by the origin's Web Locks (every worker and page of the origin waits its turn), or,
 * where there are none, by `fallback` (this program only).
 */
async function webLock(name: string, signal: AbortSignal | undefined, fallback: () => Promise<StoreLock>): Promise<StoreLock> {
  const locks = (globalThis as { navigator?: { locks?: WebLocks } }).navigator?.locks;
  if (!locks) return fallback();
  return new Promise<StoreLock>((resolve, reject) => {
    let release!: () => void;
    const held = new Promise<void>((done) => {
      release = done;
    });
    locks
      .request(name, signal ? { signal } : {}, () => {
        resolve({ release });
        return held;
      })
      .catch(reject);
  });
}

/**
 * A key edited in place through a sync access handle (a worker): writes at positions, `flush` makes
 * them durable. The handle is exclusive: another handle of the file is refused by the browser while
 * this one is open.
 */
async function accessEditor(dir: OpfsDirectoryHandle, name: string): Promise<StoreEditor> {
  const access = await (await dir.getFileHandle(name)).createSyncAccessHandle!();
  const source = accessSource(access, name);
  return {
    size: () => source.size,
    read: (at, length) => source.read(at, length),
    write: (bytes, at) => source.write(bytes, at),
    flush: () => access.flush(),
    close: () => access.close(),
  };
}

/** Writes through a writable stream (a page): the browser keeps them beside the file until `close`. */
async function streamWriter(dir: OpfsDirectoryHandle, name: string): Promise<StoreWriter> {
  let existed = true;
  await dir.getFileHandle(name).catch((e: unknown) => {
    if (!isMissing(e)) throw e;
    existed = false;
  });
  const stream = await (await dir.getFileHandle(name, { create: true })).createWritable({ keepExistingData: false });
  return {
    write: (bytes, at) => stream.write({ type: 'write', position: at, data: bytes }),
    commit: () => stream.close(),
    async abort() {
      await stream.abort();
      // A key that was not there before stays absent (the handle made it, empty).
      if (!existed) await dir.removeEntry(name).catch(() => {});
    },
  };
}

/**
 * The Origin Private File System under `directory` as a store, read and written.
 * @example
 * const store = opfsStore(await navigator.storage.getDirectory());
 * await saveNpy('w.npy', array, { store });
 * const h = await openNpy('w.npy', { store });
 */
export function opfsStore(directory: OpfsDirectoryHandle): Store & EditStore {
  const where = 'the OPFS directory';
  const locks = keyLocks();
  return {
    where,
    async open(key) {
      try {
        const { dir, name } = await entryOf(directory, key, false);
        const file = await (await dir.getFileHandle(name)).getFile();
        return blobSource(file);
      } catch (e) {
        throw isMissing(e) ? missingKey(key, where) : e;
      }
    },
    async create(key) {
      const { dir, name } = await entryOf(directory, key, true);
      // A page has no sync access handles: it writes through a stream.
      return inWorker() ? besideWriter(dir, name) : streamWriter(dir, name);
    },
    async edit(key) {
      // A page's OPFS has no writes in place (a writable stream copies the file and swaps it in at
      // close): an append there would rewrite the whole file, so it is refused by name.
      if (!inWorker()) {
        throw new NpyError(
          'BAD_OPTION',
          `${where} edits '${key}' in place only in a dedicated worker (sync access handles); a page has none: append in a worker, or save the grown array whole`,
        );
      }
      try {
        const { dir, name } = await entryOf(directory, key, false);
        return await accessEditor(dir, name);
      } catch (e) {
        if (isMissing(e)) throw missingKey(key, where);
        // Another handle holds the file (a writer that did not take the store's lock).
        if ((e as { name?: string } | null)?.name === 'NoModificationAllowedError')
          throw new NpyError('LOCKED', `${where}: '${key}' is open for writing elsewhere (another access handle); append when it is closed`);
        throw e;
      }
    },
    lock: (key, { signal } = {}) => webLock(`npyts opfsStore ${key}`, signal, () => locks.lock(key, { signal })),
    async remove(key) {
      try {
        const { dir, name } = await entryOf(directory, key, false);
        await dir.removeEntry(name);
      } catch (e) {
        if (!isMissing(e)) throw e;
      }
    },
    async list() {
      const keys: string[] = [];
      const walk = async (dir: OpfsDirectoryHandle, prefix: string): Promise<void> => {
        for await (const [name, entry] of dir.entries()) {
          if (entry.kind === 'file') keys.push(prefix + name);
          else await walk(await dir.getDirectoryHandle(name), `${prefix}${name}/`);
        }
      };
      await walk(directory, '');
      return keys;
    },
  };
}
