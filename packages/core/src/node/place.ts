/** Where a file's siblings are on disk: its folder, each sibling confined to it (symbolic links too). */
import { existsSync, realpathSync, statSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NpyError } from '../errors.js';
import type { MapMode } from '../options.js';
import { checkSiblingName, type Place } from '../weights/place.js';
import { nodeSourceOf } from './sources.js';

/**
 * The path of a sibling of the file at `indexPath`, inside its folder: `UNSAFE_PATH` for a name
 * that leads out (`..`, an absolute path, a scheme, or a symbolic link that leads outside).
 * @example
 * siblingPath('/data/model.safetensors.index.json', 'model-00001-of-00002.safetensors', 'the shard', true);
 */
export function siblingPath(indexPath: string, name: string, what: string, flat: boolean): string {
  checkSiblingName(name, what, indexPath, flat);
  const folder = resolve(dirname(indexPath));
  const target = resolve(folder, name);
  const inside = (root: string, p: string): boolean => p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);
  const refuse = (why: string): never => {
    throw new NpyError('UNSAFE_PATH', `${indexPath} names ${what} as '${name}', ${why}`);
  };
  if (!inside(folder, target)) refuse("outside the file's folder");
  // Symlinks: the nearest part of the path that exists must resolve inside the folder too.
  let existing = target;
  while (!existsSync(existing) && inside(folder, dirname(existing)) && existing !== folder) existing = dirname(existing);
  if (existsSync(existing) && !inside(realpathSync(folder), realpathSync(existing))) refuse("which a symbolic link leads outside the file's folder");
  return target;
}

/**
 * The siblings of the file at `path`: files in its folder, read by position. Each sibling's size and
 * modification time are taken when its name is checked (as the set is opened); a sibling opened
 * later that differs is refused (`SOURCE_CHANGED`): a set is read as it was when opened. With
 * `mmap`, each sibling is mapped (see `openWeights`'s `mmap`).
 * @example
 * const place = folderPlace('/data/model.safetensors.index.json');
 */
export function folderPlace(path: string, flat = true, mmap?: MapMode): Place {
  const seen = new Map<string, { size: number; mtimeMs: number }>();
  const folder = dirname(resolve(path));
  return {
    where: folder,
    inside(target) {
      // An absolute path under the folder (or a file: URL of one), as a name relative to it.
      let file = target;
      try {
        if (target.startsWith('file:')) file = fileURLToPath(target);
      } catch {
        return null; // a file: URL of another host
      }
      if (!isAbsolute(file)) return null;
      const name = relative(folder, resolve(file));
      return name === '' || name.startsWith('..') || isAbsolute(name) ? null : name.split(sep).join('/');
    },
    check(name, what) {
      const target = siblingPath(path, name, what, flat);
      if (seen.has(name)) return;
      try {
        const { size, mtimeMs } = statSync(target);
        seen.set(name, { size, mtimeMs });
      } catch {
        // Missing now: opening it says so.
      }
    },
    async open(name, options) {
      const target = siblingPath(path, name, `'${name}'`, flat);
      const source = await nodeSourceOf(target, { ...options, tailBytes: 1, mmap });
      const was = seen.get(name);
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
  };
}
