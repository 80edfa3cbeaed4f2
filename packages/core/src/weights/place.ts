/**
 * Where a file's siblings are (a sharded set's shards, a ragged index's heap): one {@link Place}
 * idea, whatever the file came from. A folder (`@npyts/core/node`), a URL's directory, or the user's
 * `resolve` hook (presigned or otherwise signed URLs). Every sibling a file names is checked here,
 * before any request: a name that leads out of the place (another origin, a scheme, `..`, `%2e%2e`,
 * an absolute path) is refused with `UNSAFE_PATH`, and headers go only to the origin they were given for.
 */
import { NpyError } from '../errors.js';
import { isByteSource, type ByteSource } from '../io/byte-source.js';
import { sourceOf } from '../io/open.js';
import type { HttpOptions } from '../io/url.js';
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
export type SiblingOptions = HttpOptions;

/**
 * Where a file's siblings are: a folder, a URL's directory, or a hook.
 * @example
 * const place = urlPlace('https://h/models/model.safetensors.index.json');
 * place.check('model-00001-of-00002.safetensors');   // refuses '../x', 'https:evil', '%2e%2e'
 * const shard = await place.open('model-00001-of-00002.safetensors', {});
 */
export interface Place {
  /** The place in words, for messages (a folder, a URL's directory, "the resolve hook"). */
  readonly where: string;
  /**
   * Refuse (`UNSAFE_PATH`) a sibling name that leads outside the place; `what` names it in the
   * message (`"the shard of 'fc.weight'"`). Asked for every name before any request is made.
   */
  check(name: string, what: string): void;
  /** The sibling's bytes as a source (checked first); the source is the caller's to close. */
  open(name: string, options: SiblingOptions): Promise<ByteSource>;
  /**
   * The sibling name of `target`, an absolute path or URL (a reference set's), where it lies under
   * the place's folder; null where it does not (or the place has no folder: a hook). The name is then
   * checked as every sibling's is.
   */
  inside?(target: string): string | null;
}

/** A string that starts with a scheme (`https:`, `file:`, `data:`, a drive letter `C:`). */
const SCHEME = /^[a-z][a-z0-9+.-]*:/i;

/** `name` with its percent-escapes decoded where they decode (`%2e%2e` is `..` to a URL parser and to many servers). */
function unescaped(name: string): string {
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

/**
 * The one rule of a sibling's name, for every place: a relative name inside the folder of the file
 * that names it. No scheme, no absolute path, no `.` or `..` segment, no backslash and no NUL (nor
 * these percent-encoded); `flat` (shards) refuses folders too.
 * @example
 * checkSiblingName('model-00001-of-00002.safetensors', 'the shard', 'i.json', true);   // passes
 * checkSiblingName('%2e%2e/x', 'the shard', 'i.json', false);                          // UNSAFE_PATH
 */
export function checkSiblingName(name: string, what: string, where: string, flat: boolean): void {
  const refuse = (why: string): never => {
    throw new NpyError(
      'UNSAFE_PATH',
      `${where} names ${what} as '${name.slice(0, 200)}', ${why}; a sibling is a file beside it, named relative to its folder${flat ? ' without folders' : ''}`,
    );
  };
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
 * The siblings of the file at `url`: URLs in its folder on its origin, read by range with the
 * file's HTTP options (its headers stay on its origin, which every sibling shares).
 * @example
 * const place = urlPlace('https://h/m/model.safetensors.index.json');
 */
export function urlPlace(url: string, flat = true): Place {
  const folder = new URL('.', url).href;
  return {
    where: folder,
    check: (name, what) => void siblingUrl(url, name, what, flat),
    inside: (target) => (target.startsWith(folder) && target.length > folder.length ? target.slice(folder.length) : null),
    async open(name, options) {
      const href = siblingUrl(url, name, `'${name}'`, flat);
      try {
        return await sourceOf(href, { ...options, within: new URL('.', url).href, tailBytes: 1 });
      } catch (e) {
        throw withResolveHint(e, href, url);
      }
    },
  };
}

/**
 * The siblings the user's `resolve` hook gives: each name is checked as every sibling's is (the hook
 * is asked only for names inside the index's folder), each answer trusted. The index's `headers` go
 * to an answer on the index's own origin only (`origin`: null where the index is no URL).
 * @example
 * const place = hookPlace((name) => presign(name), 'https://bucket.s3.amazonaws.com');
 */
export function hookPlace(
  resolve: ResolveHook,
  index: string | null,
  flat = true,
  open: (input: SiblingAnswer, options: SiblingOptions & { tailBytes?: number }) => Promise<ByteSource> = sourceOf,
): Place {
  const origin = index !== null && /^https?:/i.test(index) ? new URL(index).origin : null;
  const where = index ?? 'the weight file';
  return {
    where: 'the resolve hook',
    check: (name, what) => checkSiblingName(name, what, where, flat),
    async open(name, options) {
      checkSiblingName(name, `'${name}'`, where, flat);
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
