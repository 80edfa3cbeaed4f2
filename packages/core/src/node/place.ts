/**
 * A folder on disk as a store: keys are files under it, each confined to it (symbolic links too),
 * read by position and written beside the key, then renamed over it.
 */
import { existsSync, mkdirSync, readdirSync, realpathSync, rmSync, statSync, type Dirent } from 'node:fs';
import { mkdir, open, readdir, rm, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NpyError } from '../errors.js';
import { checkMapMode, checkOptions, knownKeys, type MapMode } from '../options.js';
import { checkSiblingName } from '../store/key.js';
import type { EditStore, Store, StoreEditor, StoreWriter } from '../store/types.js';
import { missingKey } from '../store/write.js';
import { besideWriter, type ReplaceOptions } from './beside.js';
import { run } from './drive.js';
import { takingKeyLock } from './lock.js';
import { sourceOf } from '../io/open.js';
import './sources.js';

/**
 * The path of a sibling of the file at `indexPath`, inside its folder: `UNSAFE_PATH` for a name
 * that leads out (`..`, an absolute path, a scheme, or a symbolic link that leads outside).
 * @example
 * siblingPath('/data/model.safetensors.index.json', 'model-00001-of-00002.safetensors', 'the shard', true);
 */
export function siblingPath(indexPath: string, name: string, what: string, flat: boolean): string {
  return pathIn(resolve(dirname(indexPath)), name, what, indexPath, flat);
}

/** The path of `name` inside `folder` (see {@link siblingPath}); `where` names what names it, for messages. */
function pathIn(folder: string, name: string, what: string, where: string, flat: boolean): string {
  checkSiblingName(name, what, where, flat);
  const target = resolve(folder, name);
  const inside = (root: string, p: string): boolean => p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);
  const refuse = (why: string): never => {
    throw new NpyError('UNSAFE_PATH', `${where} names ${what} as '${name}', ${why}`);
  };
  if (!inside(folder, target)) refuse("outside the file's folder");
  // Symlinks: the nearest part of the path that exists must resolve inside the folder too.
  let existing = target;
  while (!existsSync(existing) && inside(folder, dirname(existing)) && existing !== folder) existing = dirname(existing);
  if (existsSync(existing) && !inside(realpathSync(folder), realpathSync(existing))) refuse("which a symbolic link leads outside the file's folder");
  return target;
}

/** The keys of a folder's entries (files only, `/` between folder names). */
function keysOf(folder: string, entries: readonly Dirent[]): string[] {
  // parentPath from Node 20.12 on; path before it.
  return entries
    .filter((e) => e.isFile())
    .map((e) =>
      relative(folder, join(e.parentPath ?? e.path, e.name))
        .split(sep)
        .join('/'),
    );
}

/** Options of {@link folderStore}: memory maps for the files it opens. */
export interface FolderStoreOptions {
  /** Map each file opened instead of reading it (see `openWeights`'s `mmap`). */
  mmap?: MapMode | undefined;
}

const FOLDER_KEYS = knownKeys<FolderStoreOptions>({ mmap: true });

/** How a folder store writes: each key as every file is replaced (see `ReplaceOptions`), and whether blocking. */
export interface FolderWriteOptions extends ReplaceOptions {
  /** Write, remove and list blocking (every method answers at once): what a blocking save writes through. */
  sync?: boolean;
}

/**
 * `folder` as a store whose messages name `where` (the file whose siblings it holds, as a sharded
 * set's index). See {@link folderStore}.
 * @internal
 */
export function folderStoreOf(folder: string, where: string, mmap?: MapMode, writing: FolderWriteOptions = {}): Store & EditStore {
  const { sync = false, ...replace } = writing;
  // Each key's size and modification time, taken when its name is checked (as a set is opened): a
  // key opened later that differs is refused (`SOURCE_CHANGED`): a set is read as it was when opened.
  // A key this store writes, edits or removes is forgotten, and taken again when next checked.
  const seen = new Map<string, { size: number; mtimeMs: number }>();
  const pathOf = (key: string, what = `'${key}'`): string => pathIn(folder, key, what, where, false);
  return {
    where,
    inside(target) {
      // An absolute path under the folder (or a file: URL of one), as a key relative to it.
      let file = target;
      try {
        if (target.startsWith('file:')) file = fileURLToPath(target);
      } catch {
        return null; // a file: URL of another host
      }
      if (!isAbsolute(file)) return null;
      const name = relative(resolve(folder), resolve(file));
      return name === '' || name.startsWith('..') || isAbsolute(name) ? null : name.split(sep).join('/');
    },
    check(key, what) {
      const target = pathOf(key, what);
      if (seen.has(key)) return;
      try {
        const { size, mtimeMs } = statSync(target);
        seen.set(key, { size, mtimeMs });
      } catch {
        // Missing now: opening it says so.
      }
    },
    async open(key, options = {}) {
      const target = pathOf(key);
      const source = await sourceOf(target, { ...options, tailBytes: 1, mmap }, 'folderStore');
      const was = seen.get(key);
      if (was) {
        const now = await stat(target).catch(() => null);
        if (!now || source.size !== was.size || now.mtimeMs !== was.mtimeMs) {
          await source.close?.();
          throw new NpyError(
            'SOURCE_CHANGED',
            `${target} changed after the set that names it was opened (${was.size} bytes then, ${source.size} now${now && now.mtimeMs !== was.mtimeMs ? '; modified since' : ''}): open the set again to read the new file`,
          );
        }
      }
      return source;
    },
    // Each key written beside it and renamed over it: the steps every file of npyts is replaced by (node/beside.ts).
    create(key): StoreWriter | Promise<StoreWriter> {
      const target = pathOf(key);
      // The store's own write: what it knew of the key is stale once the writer commits.
      const forgetting = (writer: StoreWriter): StoreWriter => ({
        write: (bytes, at) => writer.write(bytes, at),
        commit: () => {
          const done = writer.commit();
          if (done instanceof Promise) return done.then(() => void seen.delete(key));
          seen.delete(key);
        },
        abort: () => writer.abort(),
      });
      if (sync) {
        mkdirSync(dirname(target), { recursive: true });
        return forgetting(besideWriter(target, replace, true));
      }
      return mkdir(dirname(target), { recursive: true }).then(async () => forgetting(await besideWriter(target, replace, false)));
    },
    async edit(key): Promise<StoreEditor> {
      const target = pathOf(key);
      const file = await open(target, 'r+').catch((e: NodeJS.ErrnoException) => {
        throw e.code === 'ENOENT' ? missingKey(key, where) : e;
      });
      return {
        size: async () => (await file.stat()).size,
        async read(at, length) {
          const out = new Uint8Array(length);
          let done = 0;
          while (done < length) {
            const { bytesRead } = await file.read(out, done, length - done, at + done);
            if (bytesRead <= 0) break;
            done += bytesRead;
          }
          return out.subarray(0, done);
        },
        async write(bytes, at) {
          for (let done = 0; done < bytes.length; ) {
            const { bytesWritten } = await file.write(bytes, done, bytes.length - done, at + done);
            if (bytesWritten <= 0) throw new NpyError('WRITE_FAILED', `a write at byte ${at + done} of ${target} wrote nothing`);
            done += bytesWritten;
          }
        },
        flush: () => file.datasync(),
        async close() {
          await file.close();
          seen.delete(key);
        },
      };
    },
    async lock(key, { signal } = {}) {
      // The lock appendNpy(path) takes (flock, or a lock file beside): path and store appenders wait for each other.
      const target = pathOf(key);
      const release = await run(takingKeyLock(target), signal, target);
      return { release: () => run(release(), undefined, target) };
    },
    remove(key) {
      seen.delete(key);
      return sync ? rmSync(pathOf(key), { force: true }) : rm(pathOf(key), { force: true });
    },
    list() {
      const options = { recursive: true, withFileTypes: true } as const;
      return sync ? keysOf(folder, readdirSync(folder, options)) : readdir(folder, options).then((entries) => keysOf(folder, entries));
    },
  };
}

/**
 * A folder as a store, read and written: keys are files under it (`sub/w.npy`), none outside it
 * (symbolic links that lead out refused too); writes go beside the key and are renamed over it.
 * @example
 * const store = folderStore('/data/models');
 * await saveNpy('w.npy', array, { store });
 * await using w = await openWeights('llama/model.safetensors.index.json', { store });
 */
export function folderStore(path: string, options: FolderStoreOptions = {}): Store & EditStore {
  checkOptions('folderStore', options, FOLDER_KEYS);
  checkMapMode(options.mmap);
  return folderStoreOf(resolve(path), path, options.mmap);
}
