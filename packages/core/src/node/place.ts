/**
 * A folder on disk as a store: keys are files under it, each confined to it (symbolic links too),
 * read by position and written beside the key, then renamed over it.
 */
import { existsSync, realpathSync, statSync } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NpyError } from '../errors.js';
import { checkMapMode, checkOptions, knownKeys, type MapMode } from '../options.js';
import { checkSiblingName } from '../store/key.js';
import type { Store, StoreWriter } from '../store/types.js';
import { tempBeside } from './fd.js';
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

/** Options of {@link folderStore}: memory maps for the files it opens. */
export interface FolderStoreOptions {
  /** Map each file opened instead of reading it (see `openWeights`'s `mmap`). */
  mmap?: MapMode | undefined;
}

const FOLDER_KEYS = knownKeys<FolderStoreOptions>({ mmap: true });

/**
 * `folder` as a store whose messages name `where` (the file whose siblings it holds, as a sharded
 * set's index). See {@link folderStore}.
 * @internal
 */
export function folderStoreOf(folder: string, where: string, mmap?: MapMode): Store {
  // Each key's size and modification time, taken when its name is checked (as a set is opened): a
  // key opened later that differs is refused (`SOURCE_CHANGED`): a set is read as it was when opened.
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
    async create(key): Promise<StoreWriter> {
      const target = pathOf(key);
      await mkdir(dirname(target), { recursive: true });
      const temp = tempBeside(target);
      const file = await open(temp, 'wx');
      let closed = false;
      const close = async (): Promise<void> => {
        if (!closed) await file.close();
        closed = true;
      };
      return {
        async write(bytes, at) {
          for (let done = 0; done < bytes.length; ) {
            const { bytesWritten } = await file.write(bytes, done, bytes.length - done, at + done);
            if (bytesWritten <= 0) throw new NpyError('WRITE_FAILED', `a write at byte ${at + done} of ${target} wrote nothing`);
            done += bytesWritten;
          }
        },
        async commit() {
          await close();
          await rename(temp, target);
        },
        async abort() {
          await close().catch(() => {});
          await rm(temp, { force: true });
        },
      };
    },
    async remove(key) {
      await rm(pathOf(key), { force: true });
    },
    async list() {
      const entries = await readdir(folder, { recursive: true, withFileTypes: true });
      // parentPath from Node 20.12 on; path before it.
      return entries
        .filter((e) => e.isFile())
        .map((e) =>
          relative(folder, join(e.parentPath ?? e.path, e.name))
            .split(sep)
            .join('/'),
        );
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
export function folderStore(path: string, options: FolderStoreOptions = {}): Store {
  checkOptions('folderStore', options, FOLDER_KEYS);
  checkMapMode(options.mmap);
  return folderStoreOf(resolve(path), path, options.mmap);
}
