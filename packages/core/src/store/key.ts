/**
 * The one rule of a key, for every store: a relative name inside the store (a sibling a file names
 * is a key of the store the file is in). Checked here, before any store is asked for a key.
 */
import { NpyError } from '../errors.js';
import { isByteSource, type ByteSource } from '../io/byte-source.js';
import type { ReadStore, StoreOpenOptions, WriteStore } from './types.js';

/** A string that starts with a scheme (`https:`, `file:`, `data:`, a drive letter `C:`). */
const SCHEME = /^[a-z][a-z0-9+.-]*:/i;

/** Whether `text` starts with a scheme (`https:`, `file:`, `data:`, a drive letter `C:`): the one test of it. */
export function hasScheme(text: string): boolean {
  return SCHEME.test(text);
}

/** `name` with its percent-escapes decoded where they decode (`%2e%2e` is `..` to a URL parser and to many servers). */
function unescaped(name: string): string {
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

/**
 * The one rule of a key (a sibling's name), for every store: a relative name inside the folder of
 * the file that names it. No scheme, no absolute path, no `.` or `..` segment, no backslash and no
 * NUL (nor these percent-encoded); `flat` (shards) refuses folders too.
 * @example
 * checkSiblingName('model-00001-of-00002.safetensors', 'the shard', 'i.json', true);   // passes
 * checkSiblingName('%2e%2e/x', 'the shard', 'i.json', false);                          // UNSAFE_PATH
 */
export function checkSiblingName(name: string, what: string, where: string, flat: boolean): void {
  const refuse = (why: string): never => {
    throw new NpyError(
      'UNSAFE_PATH',
      `${where} names ${what} as '${String(name).slice(0, 200)}', ${why}; a sibling is a file beside it, named relative to its folder${flat ? ' without folders' : ''}`,
    );
  };
  if (typeof name !== 'string') refuse(`a ${typeof name}, not a name`);
  for (const form of new Set([name, unescaped(name)])) {
    if (form === '') refuse('an empty name');
    if (form.includes('\0')) refuse('a name with a NUL byte');
    if (SCHEME.test(form)) refuse('a name with a scheme (another origin, a local file or inline data)');
    if (form.startsWith('/') || form.includes('\\')) refuse('an absolute path or a backslash');
    const parts = form.split('/');
    if (parts.some((p) => p === '..' || p === '.')) refuse("a path through '..' or '.', outside its folder");
    if (flat && parts.length > 1) refuse('a name with a folder');
  }
}

/**
 * Check `key` by the key rule (`flat`: no folders, as a sharded set's shards) and the store's own
 * check, before the store is asked for it.
 * @example
 * checkKey(store, 'model-00001-of-00002.safetensors', "the shard of 'fc.weight'", true);
 */
export function checkKey(store: ReadStore | WriteStore, key: string, what: string, flat = false): void {
  checkSiblingName(key, what, store.where ?? 'the store', flat);
  (store as ReadStore).check?.(key, what);
}

/**
 * The bytes of `key` in `store` as a source (the caller's to close), the key checked first.
 * @example
 * const shard = await openKey(place, 'model-00001-of-00002.safetensors', { signal });
 */
export async function openKey(store: ReadStore, key: string, options: StoreOpenOptions = {}, what = `'${key}'`, flat = false): Promise<ByteSource> {
  checkKey(store, key, what, flat);
  const source: unknown = await store.open(key, options);
  if (!isByteSource(source)) {
    throw new NpyError(
      'BAD_OPTION',
      `${store.where ?? 'the store'} answered ${typeof source} for '${key}': a store's open(key) gives a byte source ({ size, read })`,
    );
  }
  return source;
}

/** What each kind of store needs: its methods, and the stores that have them, for messages. */
const NEEDS = {
  read: { methods: ['open'], does: 'reads keys', stores: 'memoryStore(), urlStore(url), opfsStore(dir), folderStore(path)' },
  write: { methods: ['create'], does: 'writes keys', stores: 'memoryStore(), opfsStore(dir), folderStore(path)' },
  edit: { methods: ['create', 'edit', 'lock'], does: 'edits keys in place, one writer at a time', stores: 'memoryStore(), opfsStore(dir), folderStore(path)' },
} as const;

/**
 * Refuse (`BAD_OPTION`) a `store` option that is not a store of the kind an entry needs, naming the
 * method it lacks: `read` needs `open`, `write` needs `create`, `edit` (an append) needs `create`,
 * `edit` and `lock`. Checked before anything is read or written.
 * @example
 * checkStore('saveNpy', options.store, 'write');
 */
export function checkStore(entry: string, store: unknown, kind: 'read' | 'write' | 'edit'): void {
  const { methods, does, stores } = NEEDS[kind];
  const lacks = methods.filter((m) => typeof store !== 'object' || store === null || typeof (store as Record<string, unknown>)[m] !== 'function');
  if (lacks.length) {
    throw new NpyError(
      'BAD_OPTION',
      `${entry}: option store must be a store that ${does} (an object with ${methods.map((m) => `${m}(key)`).join(', ')}; ${typeof store === 'object' && store !== null ? `this one has no ${lacks.join(', ')}` : `not ${store === null ? 'null' : typeof store}`}): ${stores}`,
    );
  }
}

/**
 * Refuse (`BAD_OPTION`) each of `names` given beside `{ store }`: options that name another place
 * or a file on disk (`place`, `resolve`, `mmap`, `durable`), where the store decides where its keys
 * are and how they are written and read. The one check of it, for every entry that takes a store.
 * @example
 * refuseBesideStore('saveNpy', options, ['durable']);
 */
export function refuseBesideStore(entry: string, options: object, names: readonly string[]): void {
  for (const name of names) {
    if ((options as Record<string, unknown>)[name] === undefined) continue;
    const hint = name === 'mmap' ? "; map a folder's files with folderStore(path, { mmap })" : '';
    throw new NpyError(
      'BAD_OPTION',
      `${entry}: option ${name} does not apply beside store (the store decides where its keys are and how they are read and written${hint})`,
    );
  }
}
