/**
 * The read stores over HTTP: a URL's folder ({@link urlStore}) and the user's `resolve` hook
 * ({@link hookStore}: presigned or otherwise signed URLs). A file's siblings (a sharded set's
 * shards) are keys of the store the file is in: a folder (`folderStore`, `@npyts/core/node`), a
 * URL's folder, the hook, or any store given as `{ store }`. Every key is checked by the key rule
 * (store/key.ts) before any request; here a key that resolves to another origin or outside the
 * folder is refused too (`UNSAFE_PATH`), and headers go only to the origin they were given for.
 */
import { NpyError } from '../errors.js';
import { isByteSource, type ByteSource } from '../io/byte-source.js';
import { checkSiblingName } from '../store/key.js';
import type { ReadStore, StoreOpenOptions } from '../store/types.js';
import { sourceOf } from '../io/open.js';
import { carriesCredentials, redactUrls } from '../io/redact.js';

/** What a {@link ResolveHook} answers for a sibling's name: a URL (a presigned one), or the bytes' source itself. */
export type SiblingAnswer = string | URL | Blob | ByteSource;

/**
 * The user's way to a sibling (a shard, a heap) by the name the file gives it: a URL (presigned, or
 * otherwise signed) or a source, or a promise of one. Its answers are the caller's to trust: they
 * are not confined to the index's folder, but the index's `headers` go only to the index's own origin.
 * @example
 * await openWeights(presignedIndexUrl, { resolve: (name) => presign(`models/llama/${name}`) });
 */
export type ResolveHook = (name: string) => SiblingAnswer | Promise<SiblingAnswer>;

/** Options of opening a sibling: the HTTP options of the file that names it, and its `signal`. */
export type SiblingOptions = StoreOpenOptions;

/** Where a file's siblings are: a {@link ReadStore} (the name kept for what it is to a file). */
export type Place = ReadStore;

/**
 * The URL of a sibling of the file at `base`, on its origin and under its folder: `UNSAFE_PATH`
 * otherwise (the one rule of URL siblings, shards and ragged heaps alike).
 * @example
 * siblingUrl('https://h/data/w.npy', 'w.npy.strings');   // 'https://h/data/w.npy.strings'
 */
export function siblingUrl(base: string, name: string, what: string, flat: boolean): string {
  checkSiblingName(name, what, base, flat);
  const index = new URL(base);
  const target = new URL(name, index);
  const folder = new URL('.', index);
  if (target.protocol !== index.protocol || target.origin !== index.origin || !target.pathname.startsWith(folder.pathname)) {
    throw new NpyError(
      'UNSAFE_PATH',
      `${base} names ${what} as '${name}', which resolves to ${target.origin}${target.pathname}, outside its folder (${folder.href})`,
    );
  }
  return target.href;
}

/** The origin of an absolute http(s) URL, or null (a path, a relative URL). */
function originOf(url: string | URL): string | null {
  try {
    const u = new URL(String(url));
    return /^https?:$/.test(u.protocol) ? u.origin : null;
  } catch {
    return null;
  }
}

/**
 * An HTTP 401/403 on a sibling: beside a signed index (its URL carries a signature, see
 * {@link carriesCredentials}) the fix is a `resolve` hook, since the sibling's URL has none; beside a
 * plain one the server refused the file itself (nginx answers 403 for a file it may not read: the
 * 0600 files `safetensors` and `huggingface_hub` write).
 */
function withResolveHint(e: unknown, href: string, index: string): unknown {
  if (!(e instanceof NpyError) || e.code !== 'HTTP_STATUS') return e;
  const status = /HTTP (40[13])\b/.exec(e.message)?.[1];
  if (status === undefined) return e;
  const file = e.file ?? href;
  if (carriesCredentials(index)) {
    return new NpyError(
      'HTTP_STATUS',
      `${e.message}; a file beside a presigned (or otherwise signed) URL needs its own signature: pass { resolve: (name) => signedUrlOf(name) } to openWeights, which then asks it for each sibling's URL`,
      { file },
    );
  }
  const fix =
    status === '403'
      ? 'check that the server may read it (nginx answers 403 for a file it cannot read, such as the mode 0600 files safetensors and huggingface_hub write: chmod a+r it)'
      : "pass the headers it needs ({ headers }, which go to the index's origin)";
  return new NpyError('HTTP_STATUS', `${e.message}; the server refused ${redactUrls(href)}, a file beside ${redactUrls(index)}: ${fix}`, { file });
}

/**
 * The files under the folder of `base` (a URL of a file, or of a folder ending in `/`), on its
 * origin, read by range with `httpOptions` and those of the file that names a key. That file's
 * `headers` go with a request only where the store is on its origin (`namedBy`: its URL; absent, the
 * store's own): a sharded index's credentials never reach a `place` on another origin.
 * @example
 * const store = urlStore('https://h/m/model.safetensors.index.json');
 * await openWeights('model.safetensors.index.json', { store });
 */
export function urlStore(base: string | URL, httpOptions: StoreOpenOptions = {}, namedBy?: string | null): ReadStore {
  const url = String(base);
  const sameOrigin = namedBy == null || originOf(namedBy) === originOf(url);
  return {
    where: url,
    check: (name, what) => void siblingUrl(url, name, what, false),
    inside(target) {
      const folder = new URL('.', url).href;
      return target.startsWith(folder) && target.length > folder.length ? target.slice(folder.length) : null;
    },
    async open(name, options = {}) {
      const href = siblingUrl(url, name, `'${name}'`, false);
      try {
        const { headers, ...rest } = options;
        const theirs = headers !== undefined && sameOrigin ? { headers } : {};
        return await sourceOf(href, { ...httpOptions, ...rest, ...theirs, within: new URL('.', url).href, tailBytes: 1 });
      } catch (e) {
        throw withResolveHint(e, href, url);
      }
    },
  };
}

/**
 * The keys the user's `resolve` hook answers for (presigned URLs): each key is checked as every key
 * is (the hook is asked only for names inside the index's folder), each answer trusted. The
 * `headers` of the file that names a key go to an answer on that file's own origin only (`index`:
 * its URL; null where it is no URL).
 * @example
 * const store = hookStore((name) => presign(`models/llama/${name}`), 'https://bucket.s3.amazonaws.com/models/llama/i.json');
 */
export function hookStore(
  resolve: ResolveHook,
  index: string | null = null,
  open: (input: SiblingAnswer, options: SiblingOptions & { tailBytes?: number }) => Promise<ByteSource> = sourceOf,
): ReadStore {
  if (typeof resolve !== 'function') throw new NpyError('BAD_OPTION', `option resolve must be a function (name) => URL, not ${typeof resolve}`);
  const origin = index !== null && /^https?:/i.test(index) ? new URL(index).origin : null;
  return {
    where: index ?? 'the weight file',
    async open(name, options = {}) {
      const answer = await resolve(name);
      if (isByteSource(answer) || (typeof Blob !== 'undefined' && answer instanceof Blob)) return open(answer, {});
      if (typeof answer !== 'string' && !(answer instanceof URL)) {
        throw new NpyError('BAD_OPTION', `the resolve hook answered ${typeof answer} for '${name}': answer a URL, a Blob or a byte source`);
      }
      const { headers, ...rest } = options;
      return open(answer, { ...rest, ...(headers && originOf(answer) === origin && origin !== null ? { headers } : {}), tailBytes: 1 });
    },
  };
}
