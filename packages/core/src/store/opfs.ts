/**
 * The browser's own disk (the Origin Private File System) as a store: keys are files under a
 * directory handle (`await navigator.storage.getDirectory()`), folders made as keys name them.
 * Reads slice the file (`getFile()`); writes go to a file beside the key, written through a
 * synchronous access handle in a worker (positional writes, no copy) and renamed over the key at
 * commit, or, in a page (no sync handles there), through a writable stream, which the browser
 * itself keeps beside the file until it is closed.
 */
import { NpyError } from '../errors.js';
import { blobSource } from '../io/byte-source.js';
import type { SyncAccessHandle } from '../io/access-handle.js';
import type { Store, StoreWriter } from './types.js';
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
export function opfsStore(directory: OpfsDirectoryHandle): Store {
  const where = 'the OPFS directory';
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
      // Sync access handles exist in dedicated workers only (so does their interface); a page writes through a stream.
      const inWorker = typeof (globalThis as { FileSystemSyncAccessHandle?: unknown }).FileSystemSyncAccessHandle === 'function';
      return inWorker ? besideWriter(dir, name) : streamWriter(dir, name);
    },
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
