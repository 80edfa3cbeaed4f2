/**
 * .npy over HTTP range requests: one small request for the header (a second if the header is
 * larger), then only the byte ranges a region needs, nearby ranges joined. A server that ignores
 * Range, or answers a different range than asked, is detected and reported, never misread; a file
 * replaced while it is read is refused (pinned to its first answer's ETag, date and size); every
 * request has a deadline. This file is long because it is the one place where requests are made and
 * answers checked (`HttpFile`), for every reader of a URL.
 */
import { NpyError } from '../errors.js';
import { HTTP_RULES, checkNumbers, checkOptions, checkReadOptions, knownKeys, type KnownKeys } from '../options.js';
import { FIRST_BLOCK, readingHeader } from './header-read.js';
import { SOURCE, drive, performReads } from './steps.js';
import type { NdArray } from '../array/ndarray.js';
import type { OpenNpy } from './region.js';
import { npyReaderOf } from './reader.js';
import { DECODE_KEYS, checkDataPresent, type DecodeOptions, type Expecting } from '../npy.js';
import type { DescrInput } from '../format/descr-types.js';
import { ByteBudget, inParallel } from './settle.js';
import type { AsyncByteSource } from './byte-source.js';
import { carriesCredentials, redactUrls } from './redact.js';

/** Options of every reader of a URL: the fetch hook, headers, request sizes, concurrency, the timeout. */
export interface HttpOptions {
  /**
   * The fetch to use (default `globalThis.fetch`): any WHATWG `fetch`, for auth, signed requests
   * (an S3 signer) or retries. It is called as `fetch(url, { headers, signal, redirect: 'manual' })`:
   * hand `redirect` on to fetch, so that npyts sees each redirect and checks where it leads before
   * it is requested (it then calls the hook again for the next URL). A hook that follows redirects
   * itself is checked only afterwards, by the final answer's `url`.
   */
  fetch?: (url: string, init: { headers: Record<string, string>; signal?: AbortSignal | undefined; redirect?: 'manual' }) => Promise<Response>;
  /** Cancels the opening requests (each read takes its own signal). */
  signal?: AbortSignal | undefined;
  /** Extra request headers (authorization, …). */
  headers?: Record<string, string>;
  /**
   * Bytes one request asks for at most (default 8 MiB, what object stores serve best): a longer
   * read is split into requests of this size, `concurrency` of them in flight.
   */
  requestBytes?: number;
  /** Requests in flight at once (default 6). */
  concurrency?: number;
  /**
   * Bytes that requests in flight may ask for together (default 16 MiB): the memory a long read
   * holds besides its result. A single request larger than this still goes alone.
   */
  maxInFlight?: number;
  /**
   * Whether several ranges may go in one request (`Range: bytes=a-b,c-d`). Object stores (S3 and
   * its compatibles) and many CDNs answer such a request with the whole object, so by default one
   * is sent only where that costs little or cannot happen: to an origin that has answered one as
   * multipart, to a server that names itself as one that does (nginx, Apache, Caddy, lighttpd), or
   * for a file of at most 1 MiB; elsewhere single ranges are sent. `true` sends them to any origin
   * (the first alone; one that then answers with a whole object is sent single ranges for the rest
   * of the process); `false` never sends one.
   */
  multiRange?: boolean;
  /**
   * A server that ignores `Range` (HTTP 200 with the whole body; Python's `http.server` does) is
   * still read when the body is at most this many bytes (default 256 MiB, sized for development
   * servers): the whole file is then downloaded once and kept, and a warning says so once per
   * origin. A larger body is refused (NO_RANGES), naming this option and the whole-response reader
   * of the format.
   */
  wholeBodyBytes?: number;
  /**
   * A folder URL every request must stay in, redirects included: a file found beside another (a
   * shard, a ragged heap, ONNX external data) redirected outside that file's folder or origin is
   * refused (`UNSAFE_PATH`) before the redirect's target is requested. Set by the readers of such
   * files. Without it, a redirect to another origin is followed without the `headers`.
   */
  within?: string;
  /**
   * Milliseconds a request waits for its answer's headers, and then for each next piece of its
   * body, before it fails with NETWORK (default 30 000): a server that accepts the connection and
   * never answers does not hold a read for the platform's own timeout (five minutes in Node).
   * `Infinity` waits as long as the connection lives; `signal` still cancels.
   */
  timeoutMs?: number;
}

/**
 * The options {@link HttpOptions} names (see `knownKeys`, options.ts): an entry that takes HTTP
 * options besides its own lists these among its known keys.
 * @example
 * const KEYS = knownKeys<MyOptions>({ ...HTTP_KEYS, inline: true });
 */
export const HTTP_KEYS = {
  fetch: true,
  signal: true,
  headers: true,
  requestBytes: true,
  concurrency: true,
  maxInFlight: true,
  multiRange: true,
  wholeBodyBytes: true,
  within: true,
  timeoutMs: true,
} as const satisfies KnownKeys<HttpOptions>;
/** {@link HTTP_KEYS} as the set an opener that takes only {@link HttpOptions} checks against. */
export const HTTP_KEY_SET: ReadonlySet<string> = knownKeys<HttpOptions>(HTTP_KEYS);

/** Options of {@link openNpyUrl}: the HTTP options, range joining, the first request and the cache. */
export interface UrlOptions extends DecodeOptions, HttpOptions {
  /**
   * Keep the bytes of recent reads (a size-bounded LRU keyed by byte range): repeating a region read
   * (a viewer paging back) costs no request. Off by default.
   */
  cache?: { maxBytes?: number };
  /** Ranges closer than this many bytes go in one request (default 64 KiB). */
  maxGap?: number;
  /**
   * Bytes asked for in the first request (default 4096; the header usually fits). They are kept, so
   * that a file no larger than this costs one request whatever is read of it.
   */
  firstRequest?: number;
  /** Ranges asked for in one multipart request (default 100; 1 never uses multi-range requests). */
  rangesPerRequest?: number;
}

/** The options {@link UrlOptions} names. */
export const URL_KEYS = {
  ...DECODE_KEYS,
  ...HTTP_KEYS,
  cache: true,
  maxGap: true,
  firstRequest: true,
  rangesPerRequest: true,
} as const satisfies KnownKeys<UrlOptions>;
const URL_KEY_SET = knownKeys<UrlOptions>(URL_KEYS);

/** An open .npy over HTTP: its header, and regions read by range requests. */
export interface NpyUrlHandle<S extends DescrInput = DescrInput> extends OpenNpy<S> {
  /** The URL as given (not enumerated, so that printing the handle shows no presigned URL's signature). */
  readonly url: string;
  /** Size of the file on the server. */
  readonly size: number;
  /** Requests made, body bytes received (every one, a discarded body too), and reads served by the cache so far. */
  readonly stats: { requests: number; bytes: number; cached: number };
  read(start: readonly number[], count: readonly number[], options?: { signal?: AbortSignal | undefined }): Promise<NdArray<S>>;
  /** Nothing is held open between requests; for the same shape as other readers. */
  close(): Promise<void>;
}

/** Bytes one request asks for at most by default (ranges and the gaps between them): bounds memory in flight. */
const REQUEST_BYTES = 8 << 20;

/** Bytes the requests in flight ask for together, by default. */
const IN_FLIGHT_BYTES = 16 << 20;

/** Bodies of at most this many bytes are used whole when a server ignores `Range` (a development server's files). */
const WHOLE_BODY_BYTES = 256 << 20;

/**
 * A whole object sent for a multi-range request is read when it is at most this large; a larger one
 * is left unread and asked for by single ranges (which S3 answers), not downloaded whole.
 */
const WHOLE_MULTI_BYTES = 1 << 20;

/**
 * Servers that answer a request for several ranges with the parts asked for (multipart/byteranges),
 * by their `Server` header: nginx (and OpenResty), Apache, Caddy, lighttpd, LiteSpeed. Another
 * origin is sent one only once it is known to take them (or `multiRange: true`).
 */
const MULTI_RANGE_SERVERS = /^(nginx|openresty|apache|caddy|lighttpd|litespeed)\b/i;

/** Milliseconds a request waits for its headers, or for the next piece of its body, by default. */
const TIMEOUT_MS = 30_000;

/**
 * Origins (scheme, host and port) that answered a multi-range request with something other than a
 * multipart 206: for the rest of the process they are sent one range per request, whoever reads.
 */
const singleRangeOrigins = new Set<string>();

/** Redirects one request follows at most (fetch's own bound is 20): a loop ends as NETWORK. */
const MAX_REDIRECTS = 10;

/** Whether `url` lies in the folder `within` (its origin, under its path). */
function inFolder(url: URL, within: string): boolean {
  const folder = new URL(within);
  return url.origin === folder.origin && url.pathname.startsWith(folder.pathname);
}

/** The refusal of a file redirected (or, by a fetch hook that follows redirects, answered) from outside the folder `within`. */
function outsideFolder(href: string, to: URL, within: string, how: string): NpyError {
  return new NpyError(
    'UNSAFE_PATH',
    `${redactUrls(href)} was ${how} ${to.origin}${to.pathname}, outside the folder of the file that names it (${redactUrls(new URL(within).href)}): ` +
      "a file found beside another is read only from that file's folder, on its origin, redirects included; pass { resolve } to give its URL yourself",
  );
}

/** Origins that answered a multi-range request as multipart/byteranges: they take them from everyone. */
const multiRangeOrigins = new Set<string>();

/** The first multi-range request to each origin whose answer is awaited: the others wait for it. */
const probes = new Map<string, Promise<unknown>>();

/** Origins already warned about ignoring `Range`: the warning is said once per origin. */
const warnedOrigins = new Set<string>();

/**
 * The timer of one request: it fails the request when the answer's headers, or the next piece of
 * its body, take longer than `ms`. Every wait of the request goes through {@link race}, so a fetch
 * hook that ignores the signal times out too.
 */
class Deadline {
  fired = false;
  /** Whether the answer's headers have arrived. */
  answered = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private fail: (e: unknown) => void = () => {};
  private readonly expired: Promise<never>;

  constructor(
    private readonly ms: number,
    private readonly controller: AbortController,
  ) {
    this.expired = new Promise<never>((_, reject) => {
      this.fail = reject;
    });
    this.expired.catch(() => {});
    this.arm();
  }

  /** Start the wait again (the headers or a piece of the body arrived). */
  arm(): void {
    this.stop();
    if (!Number.isFinite(this.ms)) return;
    this.timer = setTimeout(() => {
      this.fired = true;
      const e = new Error('timed out');
      this.controller.abort(e);
      this.fail(e);
    }, this.ms);
  }

  race<T>(work: Promise<T>): Promise<T> {
    return Number.isFinite(this.ms) ? Promise.race([work, this.expired]) : work;
  }

  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/**
 * A response body, read until `max` bytes, each chunk counted as it arrives: a server that sends
 * more than it was asked for is refused (`tooLong`) as soon as it does (the rest is never read), so
 * its length cannot cost memory. Each chunk restarts the request's deadline.
 */
async function readBody(res: Response, max: number, counted: { bytes: number }, deadline: Deadline, tooLong: () => NpyError): Promise<Uint8Array> {
  if (!res.body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let n = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await deadline.race(reader.read());
    if (done) break;
    deadline.arm();
    counted.bytes += value.length;
    if (n + value.length > max) {
      await reader.cancel().catch(() => {});
      throw tooLong();
    }
    chunks.push(value);
    n += value.length;
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(n);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** `length` bytes to fill, or an NpyError where one buffer cannot hold them (a size a server claims). */
function bufferFor(length: number, href: string): Uint8Array {
  try {
    return new Uint8Array(length);
  } catch {
    throw new NpyError('TOO_LARGE', `${href}: a read of ${length} bytes is larger than one buffer can hold; read it in regions`);
  }
}

/** An answer that is not the one asked for (a wrong range, more bytes than asked, a broken multipart body). */
function badResponse(message: string): never {
  throw new NpyError('BAD_RESPONSE', message);
}

/**
 * A failure of the request itself (a reset connection, a redirect loop, a refused connection: fetch's
 * `TypeError: fetch failed` or `terminated`) as an NpyError naming the URL and the bytes asked for;
 * an NpyError of ours or an abort the caller asked for passes through.
 */
function networkError(e: unknown, href: string, what: string, signal: AbortSignal | undefined): unknown {
  if (e instanceof NpyError || signal?.aborted) return e;
  const err = e as Error & { cause?: { code?: string; message?: string } };
  const cause = err?.cause?.code ?? err?.cause?.message;
  return new NpyError(
    'NETWORK',
    `${href}: the request for ${what} failed (${err?.message ?? String(e)}${cause ? `: ${cause}` : ''}); check the URL and that the server is reachable`,
  );
}

/**
 * `href` as a URL, or an NpyError that says where files are opened instead: with `opener` (the
 * function given the path, whose twin in `@npyts/core/node` opens paths), that one; else the .npy readers.
 */
function checkedUrl(href: string, opener?: string): URL {
  try {
    return new URL(href);
  } catch {
    throw new NpyError(
      'NETWORK',
      opener
        ? `'${href}' is not a URL: ${opener} of '@npyts/core' reads URLs, Blobs and bytes; in Node, open a path with import { ${opener} } from '@npyts/core/node'`
        : `'${href}' is not a URL: this openNpy reads URLs, Blobs and bytes; in Node, open a file with openNpyFile (region reads) or loadNpy from '@npyts/core/node'`,
    );
  }
}

/** What a URL source is made with besides the HTTP options: the first request's size, and the opener named when a path is given. */
export interface UrlSourceOptions extends HttpOptions {
  tailBytes?: number;
  /** The opener the input was given to (`'openHdf5'`), named by the refusal of a path as the one to import from `@npyts/core/node`. */
  opener?: string;
}

/** The options {@link UrlSourceOptions} names. @internal */
export const URL_SOURCE_KEYS = { ...HTTP_KEYS, tailBytes: true, opener: true } as const satisfies KnownKeys<UrlSourceOptions>;
const URL_SOURCE_KEY_SET: ReadonlySet<string> = knownKeys<UrlSourceOptions>(URL_SOURCE_KEYS);

/** What a file is read as, for the advice of a refusal: by its reader, else by its name's extension. */
export type UrlFormat = 'npy' | 'npz' | 'weights';

/** How to read the whole response of a file of `format` (or, not knowing it, of each format). */
function wholeReader(format: UrlFormat | undefined, url: URL): string {
  const ext = /\.([a-z0-9]+)$/i.exec(url.pathname)?.[1]?.toLowerCase();
  const kind =
    format ??
    (ext === 'npy' ? 'npy' : ext === 'npz' ? 'npz' : ext && ['safetensors', 'pt', 'pth', 'bin', 'ckpt', 'json'].includes(ext) ? 'weights' : undefined);
  const npy = 'readNpy(await fetch(url))';
  const npz = 'openNpz(await (await fetch(url)).blob())';
  const weights = 'openWeights(await (await fetch(url)).blob())';
  if (kind === 'npy') return npy;
  if (kind === 'npz') return npz;
  if (kind === 'weights') return weights;
  return `${weights} for a weight file, ${npz} for a .npz, ${npy} for a .npy`;
}

/** A number of bytes as people say it (`8.4 MB`, `256 MiB` for a power of two). */
function bytesText(n: number): string {
  if (n >= 1 << 20 && n % (1 << 20) === 0) return `${n / (1 << 20)} MiB`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} MB`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)} kB`;
  return `${n} bytes`;
}

/**
 * Whether conditional headers (`If-Match`) may go with each request: always, except cross-origin
 * from a page, where a header that is not CORS-safelisted would add a preflight that many servers
 * (a bucket's CORS rule allowing only `Range`) refuse. There, each answer's validators are still
 * compared with the first's.
 */
function mayCondition(origin: string): boolean {
  const page = (globalThis as { location?: { origin?: string } }).location?.origin;
  return page === undefined || page === origin;
}

/**
 * One file on an HTTP server, read by range requests: the one place requests are made, answers
 * checked and bytes counted, for `.npy` readers and byte sources alike. The file is pinned to its
 * first answer: later requests carry `If-Match` with its ETag (or `If-Unmodified-Since` with its
 * Last-Modified), and every answer's ETag, Last-Modified and size are compared with the first's, so
 * that bytes of a file replaced while it is read are refused (SOURCE_CHANGED), never mixed.
 */
export class HttpFile {
  readonly stats = { requests: 0, bytes: 0, cached: 0 };
  /** The file's size, once an answer has said it (-1 before). */
  size = -1;
  /** The whole file, when a server that ignores `Range` sent it (small enough to keep). */
  whole: Uint8Array | null = null;
  /** What the requests in flight of every read of this file hold together. */
  readonly budget: ByteBudget;
  /** The URL as messages and names show it: without its query's credentials. */
  readonly shown: string;
  private readonly url: URL;
  private readonly origin: string;
  private readonly doFetch: NonNullable<HttpOptions['fetch']>;
  private readonly wholeBodyBytes: number;
  private readonly timeoutMs: number;
  /** The `Server` header of the first answer that has one ('' until then; hidden from a page by CORS unless exposed). */
  private server = '';
  /** The validators of the first answer (null before it). */
  private pin: { etag: string | null; lastModified: string | null } | null = null;

  constructor(
    readonly href: string,
    private readonly options: HttpOptions,
    private readonly format?: UrlFormat,
    opener?: string,
  ) {
    checkNumbers(options, HTTP_RULES);
    this.url = checkedUrl(href, opener);
    this.origin = this.url.origin;
    this.shown = redactUrls(href);
    this.doFetch = options.fetch ?? ((u, init) => globalThis.fetch(u, init));
    this.budget = new ByteBudget(Math.max(1, options.maxInFlight ?? IN_FLIGHT_BYTES));
    this.wholeBodyBytes = options.wholeBodyBytes ?? WHOLE_BODY_BYTES;
    this.timeoutMs = options.timeoutMs ?? TIMEOUT_MS;
  }

  get requestBytes(): number {
    return Math.max(1, this.options.requestBytes ?? REQUEST_BYTES);
  }

  get concurrency(): number {
    return Math.max(1, this.options.concurrency ?? 6);
  }

  /**
   * Whether multi-range requests may be sent to this file's origin: where it is known to answer them,
   * or asked for (`multiRange: true`). An origin not known yet is sent one only where a whole-object
   * answer (S3's, a CDN's) would cost little: a file of at most 1 MiB, or a server that says it is
   * one that answers them (nginx, Apache, Caddy, lighttpd). Else its first request for several
   * ranges could bring the whole object, which a client cannot stop in time (the socket's buffers
   * take megabytes before the answer's headers are read): single ranges are sent instead.
   */
  get multiRange(): boolean {
    if (this.options.multiRange === false || singleRangeOrigins.has(this.origin)) return false;
    if (this.options.multiRange === true || multiRangeOrigins.has(this.origin)) return true;
    return (this.size >= 0 && this.size <= WHOLE_MULTI_BYTES) || MULTI_RANGE_SERVERS.test(this.server);
  }

  /**
   * One request for `Range: bytes=spec` and the handling of its answer (`use`), under the request's
   * deadline: a failure of the request is NETWORK naming `what`, a timeout NETWORK naming `timeoutMs`.
   */
  private async exchange<T>(spec: string, what: string, signal: AbortSignal | undefined, use: (res: Response, deadline: Deadline) => Promise<T>): Promise<T> {
    signal?.throwIfAborted();
    const controller = new AbortController();
    const deadline = new Deadline(this.timeoutMs, controller);
    const onAbort = (): void => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    const pin = this.pin && mayCondition(this.origin) ? this.conditions(this.pin) : {};
    try {
      this.stats.requests++;
      const res = await this.send({ ...pin, Range: `bytes=${spec}` }, controller.signal, deadline);
      deadline.answered = true;
      this.server ||= res.headers.get('server') ?? '';
      deadline.arm();
      return await use(res, deadline);
    } catch (e) {
      if (deadline.fired && !signal?.aborted && !(e instanceof NpyError)) {
        const late = deadline.answered ? `the answer for ${what} stalled: no bytes came` : `no answer came for ${what}`;
        throw new NpyError(
          'NETWORK',
          `${this.shown}: ${late} in ${this.timeoutMs} ms (timeoutMs, 30 000 by default); check that the server is reachable and answering, or pass a larger timeoutMs`,
        );
      }
      throw networkError(e, this.shown, what, signal);
    } finally {
      deadline.stop();
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /**
   * One request of the file, redirects followed here one by one (`redirect: 'manual'`), each target
   * checked before it is requested: inside `within` where that is set (else UNSAFE_PATH), http(s)
   * only, at most {@link MAX_REDIRECTS}. The user's `headers` go only to the file's own origin, as
   * fetch does with `Authorization` alone; `ours` (Range, the pin's conditions) go everywhere.
   */
  private async send(ours: Record<string, string>, signal: AbortSignal, deadline: Deadline): Promise<Response> {
    const { within } = this.options;
    let url = this.url;
    for (let hops = 0; ; hops++) {
      const headers = url.origin === this.origin ? { ...this.options.headers, ...ours } : ours;
      let res = await deadline.race(this.doFetch(url.href, { headers, signal, redirect: 'manual' }));
      if (res.type === 'opaqueredirect') {
        // In a browser a manual redirect is opaque: its target cannot be read, so it cannot be
        // checked first. It is followed by the browser then, without the user's headers where the
        // file is a sibling (which must not carry them elsewhere; a same-origin redirect that needs
        // them then fails with its HTTP status), and the answer's `url` is checked after.
        res = await deadline.race(this.doFetch(url.href, { headers: within === undefined ? headers : ours, signal }));
      }
      const location = res.status >= 300 && res.status < 400 ? res.headers.get('location') : null;
      if (location === null) {
        // A hook (or a browser) that followed redirects itself: its final answer is checked.
        if (within !== undefined && res.url && !inFolder(new URL(res.url), within)) {
          await res.body?.cancel().catch(() => {});
          throw outsideFolder(this.href, new URL(res.url), within, 'answered from');
        }
        return res;
      }
      await res.body?.cancel().catch(() => {});
      let next: URL;
      try {
        next = new URL(location, url);
      } catch {
        badResponse(`${this.shown}: HTTP ${res.status} redirects to '${redactUrls(location).slice(0, 200)}', which is not a URL`);
      }
      if (within !== undefined && !inFolder(next, within)) throw outsideFolder(this.href, next, within, `redirected (HTTP ${res.status}) to`);
      if (next.protocol !== 'http:' && next.protocol !== 'https:') {
        throw new NpyError('UNSAFE_PATH', `${this.shown} was redirected (HTTP ${res.status}) to a ${next.protocol} URL; only http(s) redirects are followed`);
      }
      if (hops === MAX_REDIRECTS) throw new Error(`more than ${MAX_REDIRECTS} redirects`); // NETWORK, naming the URL and the bytes
      url = next;
    }
  }

  /** The headers that make a request fail (HTTP 412) when the file is no longer the one first answered. */
  private conditions(pin: { etag: string | null; lastModified: string | null }): Record<string, string> {
    // If-Match compares strongly: a weak ETag never matches it, so it is not sent.
    if (pin.etag && !pin.etag.startsWith('W/')) return { 'If-Match': pin.etag };
    if (pin.lastModified) return { 'If-Unmodified-Since': pin.lastModified };
    return {};
  }

  /**
   * The answer `res` (of a file of `size` bytes, -1 if it does not say) checked against the first
   * answer, which pins the file: another ETag, Last-Modified or size is SOURCE_CHANGED.
   */
  private pinned(res: Response, size: number): void {
    const etag = res.headers.get('etag');
    const lastModified = res.headers.get('last-modified');
    if (!this.pin) {
      this.pin = { etag, lastModified };
      return;
    }
    const was = this.pin;
    const why =
      etag && was.etag && etag !== was.etag
        ? `its ETag was ${was.etag}, an answer now says ${etag}`
        : lastModified && was.lastModified && lastModified !== was.lastModified
          ? `it was last modified ${was.lastModified}, an answer now says ${lastModified}`
          : size >= 0 && this.size >= 0 && size !== this.size
            ? `it had ${this.size} bytes, an answer now says ${size}`
            : null;
    if (why) throw this.changed(why);
  }

  private changed(why: string): NpyError {
    return new NpyError(
      'SOURCE_CHANGED',
      `${this.shown}: the file changed on the server while it was read (${why}); its bytes are not mixed with the old ones: open it again to read the new version`,
    );
  }

  /**
   * A `200` answer to a range request: the whole file. It is used (and kept) up to `wholeBodyBytes`,
   * else refused naming that option and the way to read a whole response of the format.
   */
  private async wholeAnswer(res: Response, deadline: Deadline, limit = this.wholeBodyBytes): Promise<Uint8Array> {
    const declared = Number(res.headers.get('content-length') ?? Number.NaN);
    const refusal = (): NpyError =>
      new NpyError(
        'NO_RANGES',
        `${this.shown}: the server ignores Range requests and sent the whole file (${declared >= 0 ? bytesText(declared) : `more than ${bytesText(limit)}`}), ` +
          `more than wholeBodyBytes (${bytesText(limit)}${this.options.wholeBodyBytes === undefined ? ', the default' : ''}) takes; ` +
          `pass a larger wholeBodyBytes to take it whole, or read the whole response: ${wholeReader(this.format, this.url)}`,
      );
    if (declared > limit) {
      await res.body?.cancel().catch(() => {});
      throw refusal();
    }
    this.pinned(res, declared >= 0 ? declared : -1);
    const body = await readBody(res, limit, this.stats, deadline, refusal);
    this.pinned(res, body.length);
    this.whole = body;
    this.size = body.length;
    return body;
  }

  /** Says once per origin that its server sends whole files: every file read from it is a whole download. */
  private warnWhole(): void {
    if (warnedOrigins.has(this.origin)) return;
    warnedOrigins.add(this.origin);
    console.warn(
      `npyts: ${this.origin} ignores HTTP Range requests (Python's http.server does), so every file read from it is downloaded whole; ` +
        'serve the files with a server that answers ranges (nginx, caddy, an object store) to read only what is used',
    );
  }

  private async statusError(res: Response, asked: string): Promise<never> {
    await res.body?.cancel().catch(() => {});
    if (res.status === 412) throw this.changed(`HTTP 412: it no longer matches ${res.headers.get('etag') ?? 'the ETag or date of its first answer'}`);
    const why =
      res.status === 416
        ? ' (the range is outside the file)'
        : res.status === 401 || res.status === 403
          ? carriesCredentials(this.href)
            ? ' (check the signature: it may have expired)'
            : " (the server refused it: check the credentials, or the file's permissions on the server)"
          : '';
    throw new NpyError('HTTP_STATUS', `${this.shown}: HTTP ${res.status} for ${asked}${why}`);
  }

  /**
   * Bytes [from, from + length) of the file, checked against what the server says it sent (fewer at
   * the file's end); `suffix` asks for the file's last `length` bytes instead (`bytes=-length`).
   */
  async range(from: number, length: number, signal?: AbortSignal, suffix = false): Promise<Uint8Array> {
    // Copies: what a read returns may become an array's own memory (zero-copy), which a caller may write.
    if (this.whole) return suffix ? this.whole.slice(Math.max(0, this.whole.length - length)) : this.whole.slice(from, from + length);
    const last = from + length - 1;
    const spec = suffix ? `-${length}` : `${from}-${last}`;
    const what = suffix ? `the last ${length} bytes` : `bytes ${spec}`;
    return this.exchange(spec, what, signal, async (res, deadline) => {
      if (res.status === 200) {
        const whole = await this.wholeAnswer(res, deadline);
        this.warnWhole();
        return suffix ? whole.slice(Math.max(0, whole.length - length)) : whole.slice(from, from + length);
      }
      if (res.status !== 206) return this.statusError(res, what);
      const cr = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(res.headers.get('content-range') ?? '');
      if (!cr) {
        await res.body?.cancel().catch(() => {});
        badResponse(`${this.shown}: a 206 answer without a valid Content-Range header`);
      }
      const [gotFrom, gotLast, size] = [Number(cr[1]), Number(cr[2]), cr[3] === '*' ? -1 : Number(cr[3])];
      this.pinned(res, size);
      if (size >= 0) this.size = size;
      const wantFrom = suffix ? Math.max(0, this.size - length) : from;
      const wantLast = suffix ? this.size - 1 : this.size >= 0 ? Math.min(last, this.size - 1) : last;
      if (gotFrom !== wantFrom || gotLast !== wantLast || (suffix && size < 0)) {
        await res.body?.cancel().catch(() => {});
        badResponse(`${this.shown}: asked for ${what}, the server sent ${gotFrom}-${gotLast} (Content-Range: ${res.headers.get('content-range')})`);
      }
      const expected = gotLast - gotFrom + 1;
      const body = await readBody(
        res,
        expected,
        this.stats,
        deadline,
        () => new NpyError('BAD_RESPONSE', `${this.shown}: the server sent more than the ${expected} bytes asked for`),
      );
      if (body.length !== expected) badResponse(`${this.shown}: Content-Range promised ${expected} bytes, the body has ${body.length}`);
      return body;
    });
  }

  /**
   * Several ranges in one request (`Range: bytes=a-b,c-d,…`, answered as multipart/byteranges).
   * Returns null when the origin does not answer that way (remembered for it); the caller then asks
   * range by range. Until an origin has answered one, a single request finds out: the others wait
   * for its answer rather than each paying for a whole object.
   */
  async multiRangeRead(groups: readonly { offset: number; length: number }[], signal?: AbortSignal): Promise<Uint8Array[] | null> {
    for (;;) {
      if (singleRangeOrigins.has(this.origin)) return null;
      if (multiRangeOrigins.has(this.origin)) return this.multiRangeRequest(groups, signal);
      const probe = probes.get(this.origin);
      if (!probe) break;
      await probe.catch(() => {}); // a probe that failed leaves the origin unknown: the next request probes
      signal?.throwIfAborted();
    }
    const probe = this.multiRangeRequest(groups, signal);
    probes.set(this.origin, probe);
    try {
      return await probe;
    } finally {
      probes.delete(this.origin);
    }
  }

  private async multiRangeRequest(groups: readonly { offset: number; length: number }[], signal?: AbortSignal): Promise<Uint8Array[] | null> {
    const spec = groups.map((g) => `${g.offset}-${g.offset + g.length - 1}`).join(',');
    return this.exchange(spec, `bytes ${spec.length > 60 ? `${spec.slice(0, 60)}…` : spec}`, signal, async (res, deadline) => {
      const type = res.headers.get('content-type') ?? '';
      const boundary = /multipart\/byteranges;\s*boundary="?([^";]+)"?/i.exec(type)?.[1];
      if (res.status !== 206 || !boundary) {
        if (res.status >= 400) return this.statusError(res, `bytes ${spec}`);
        // A whole object (S3 answers so) or a single range: this origin is sent one range at a time.
        singleRangeOrigins.add(this.origin);
        const declared = Number(res.headers.get('content-length') ?? Number.NaN);
        if (res.status === 200 && declared <= Math.min(this.wholeBodyBytes, WHOLE_MULTI_BYTES)) {
          // A small whole object is read (and counted) and kept: every range of it is then at hand.
          const whole = await this.wholeAnswer(res, deadline, Math.min(this.wholeBodyBytes, WHOLE_MULTI_BYTES));
          return groups.map((g) => {
            if (g.offset + g.length > whole.length)
              badResponse(`${this.shown}: the whole answer has ${whole.length} bytes, bytes ${g.offset}-${g.offset + g.length - 1} were asked for`);
            return whole.subarray(g.offset, g.offset + g.length);
          });
        }
        if (res.status === 200 || res.status === 206) this.pinned(res, res.status === 200 && declared >= 0 ? declared : -1);
        await res.body?.cancel().catch(() => {}); // a large one is left unread
        return null;
      }
      multiRangeOrigins.add(this.origin);
      this.pinned(res, -1);
      // The parts plus their headers and boundaries; a body much longer than that is refused unread.
      const wanted = groups.reduce((n, g) => n + g.length, 0);
      const max = wanted + groups.length * 512 + 4096;
      const body = await readBody(
        res,
        max,
        this.stats,
        deadline,
        () => new NpyError('BAD_RESPONSE', `${this.shown}: the server sent more than the ${max} bytes asked for`),
      );
      const parts = parseByteranges(body, boundary, this.shown);
      for (const p of parts) if (p.size >= 0) this.pinned(res, p.size);
      return groups.map((g) => {
        const p = parts.find((x) => x.from <= g.offset && x.from + x.bytes.length >= g.offset + g.length);
        if (!p) badResponse(`${this.shown}: the multipart answer lacks bytes ${g.offset}-${g.offset + g.length - 1}`);
        return p.bytes.subarray(g.offset - p.from, g.offset - p.from + g.length);
      });
    });
  }

  /**
   * `length` bytes at `offset` (fewer at the file's end), in requests of at most `requestBytes`,
   * `concurrency` in flight.
   */
  async read(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array> {
    signal?.throwIfAborted();
    const end = this.size >= 0 ? Math.min(this.size, offset + length) : offset + length;
    if (end <= offset) return new Uint8Array(0);
    if (this.whole) return this.whole.slice(offset, end);
    const piece = this.requestBytes;
    if (end - offset <= piece) return this.range(offset, end - offset, signal);
    // Pages of the buffer are touched only as pieces arrive: memory follows the bytes received.
    const out = bufferFor(end - offset, this.shown);
    let next = offset;
    let got = 0;
    await inParallel(this.concurrency, async (stopped) => {
      while (next < end && !stopped()) {
        const at = next;
        const length = Math.min(end, at + piece) - at;
        next = at + length;
        const body = await this.budget.holding(length, () => this.range(at, length, signal));
        out.set(body, at - offset);
        got += body.length;
      }
    });
    return got === out.length ? out : out.subarray(0, got);
  }
}

/** Bytes a zip reader searches for the end record in: 22 + the longest comment. The tail a URL source fetches first. */
const ZIP_TAIL = 22 + 0xffff;

/**
 * `http` as a byte source. Bytes it already holds (`kept`, at `keptAt`: the first or the last bytes
 * of the file, read when it was opened) and, with a `cache`, bytes of recent reads are served without
 * a request; several ranges go in one request while the origin answers them as multipart.
 */
function httpSource(http: HttpFile, kept: Uint8Array, keptAt: number, options: { cache?: RangeCache | null; rangesPerRequest?: number } = {}): AsyncByteSource {
  const { cache = null } = options;
  const perRequest = Math.max(1, options.rangesPerRequest ?? 100);
  const keptEnd = keptAt + kept.length;
  /** The bytes of a range already here (a copy: it may become an array's own memory), else null. */
  const endOf = (offset: number, length: number): number => (http.size >= 0 ? Math.min(http.size, offset + length) : offset + length);
  const known = (offset: number, length: number): Uint8Array | null => {
    const end = endOf(offset, length);
    const hit = offset >= keptAt && end <= keptEnd ? kept.subarray(offset - keptAt, end - keptAt) : (cache?.get(offset, length) ?? null);
    if (!hit) return null;
    http.stats.cached++;
    return hit.slice();
  };
  const fetched = (offset: number, body: Uint8Array): Uint8Array => {
    cache?.set(offset, body);
    return body;
  };
  /** A range's bytes: what is held, else a request (the part before held bytes at the end is asked for). */
  const read = async (offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array> => {
    const end = endOf(offset, length);
    if (end <= offset) return new Uint8Array(0);
    const hit = known(offset, end - offset);
    if (hit) return hit;
    if (offset >= keptAt || end <= keptAt) return fetched(offset, await http.read(offset, end - offset, signal));
    // What lies before the kept bytes is asked for; what lies in them is already here.
    const asked = await http.read(offset, keptAt - offset, signal);
    if (asked.length < keptAt - offset) return asked;
    const out = new Uint8Array(end - offset);
    out.set(asked);
    out.set(kept.subarray(0, end - keptAt), asked.length);
    return out;
  };
  return {
    get size() {
      return http.size;
    },
    name: http.shown,
    read: (offset, length, readOptions = {}) => read(offset, length, readOptions.signal),
    get rangesPerRead() {
      return http.multiRange ? perRequest : 1;
    },
    async readRanges(wanted, readOptions = {}) {
      const { signal } = readOptions;
      // Clipped to the file (a short file then gives short bodies, as read() does); empty ones need no request.
      const ranges = wanted.map((r) => ({ offset: r.offset, length: Math.max(0, endOf(r.offset, r.length) - r.offset) }));
      const out: (Uint8Array | null)[] = ranges.map((r) => (r.length === 0 ? new Uint8Array(0) : known(r.offset, r.length)));
      const asked = ranges.filter((_, i) => !out[i]);
      const bodies = asked.length > 1 && http.multiRange ? await http.multiRangeRead(asked, signal) : null;
      let next = 0;
      for (let i = 0; i < ranges.length; i++) {
        if (out[i]) continue;
        const r = ranges[i]!;
        out[i] = bodies ? fetched(r.offset, bodies[next++]!) : await read(r.offset, r.length, signal);
      }
      return out as Uint8Array[];
    },
  };
}

/**
 * A URL as a byte source, read by range requests: one request now (the file's last 64 KiB, which
 * gives its size and, for an archive, its end record and usually its directory), then only the
 * ranges asked for, long reads in `requestBytes` pieces `concurrency` at a time, several ranges in
 * one request where the origin takes them. Every byte received is counted in `stats`.
 * @example
 * const src = await urlSource(presignedUrl);
 * const z = await openNpz(src);
 */
export async function urlSource(
  url: string | URL,
  options: UrlSourceOptions = {},
): Promise<AsyncByteSource & { readonly stats: { reads: number; bytes: number; cached: number } }> {
  checkOptions('urlSource', options, URL_SOURCE_KEY_SET);
  checkReadOptions(options);
  const http = new HttpFile(String(url), options, undefined, options.opener);
  const tail = await http.range(0, Math.max(1, options.tailBytes ?? ZIP_TAIL), options.signal, true);
  const source = httpSource(http, tail, http.size - tail.length);
  const stats = {
    get reads() {
      return http.stats.requests;
    },
    get bytes() {
      return http.stats.bytes;
    },
    get cached() {
      return http.stats.cached;
    },
  };
  return Object.assign(source, { stats });
}

/**
 * Open a .npy by URL for region reads.
 * @example
 * const h = await openNpyUrl('https://example.org/big.npy', { expect: '<f4' });
 * const rows = await h.read([0, 0], [10, 512]);
 */
export async function openNpyUrl<const S extends DescrInput>(url: string | URL, options: UrlOptions & Expecting<S>): Promise<NpyUrlHandle<S>>;
export async function openNpyUrl(url: string | URL, options?: UrlOptions): Promise<NpyUrlHandle>;
export async function openNpyUrl(url: string | URL, options: UrlOptions = {}): Promise<NpyUrlHandle> {
  checkOptions('openNpyUrl', options, URL_KEY_SET);
  checkReadOptions(options);
  const http = new HttpFile(String(url), options, 'npy');
  // The first answer (the file's first bytes) is kept: region reads inside it need no request.
  let first: Uint8Array = new Uint8Array(0);
  const header = await drive(
    readingHeader(SOURCE, options, options.firstRequest ?? FIRST_BLOCK),
    performReads(async (at, length) => {
      const got = await http.range(at, length, options.signal);
      if (at === 0) first = got;
      return got;
    }),
  );
  if (http.size >= 0) checkDataPresent(header, http.size - header.dataOffset);
  const cache = options.cache ? new RangeCache(options.cache.maxBytes ?? 64 << 20) : null;
  const source = httpSource(http, first, 0, { cache, ...(options.rangesPerRequest !== undefined ? { rangesPerRequest: options.rangesPerRequest } : {}) });
  const reader = npyReaderOf(source, header, http.shown, {
    stats: http.stats,
    countReads: false, // the HTTP file counts every request and byte, a discarded body too
    tuning: { maxGap: options.maxGap ?? 65536, readBytes: http.requestBytes, concurrency: http.concurrency, budget: http.budget },
  });
  return Object.defineProperties(reader, {
    url: { value: http.href, enumerable: false },
    size: { get: () => http.size, enumerable: true },
  }) as NpyUrlHandle;
}

/** The parts of a multipart/byteranges body: where each starts in the file, the file's size it gives (-1 if none), and its bytes. */
function parseByteranges(body: Uint8Array, boundary: string, href: string): { from: number; size: number; bytes: Uint8Array }[] {
  const latin = new TextDecoder('latin1');
  const delimiter = new TextEncoder().encode(`--${boundary}`);
  const find = (needle: Uint8Array, from: number): number => indexOfBytes(body, needle, from);
  const parts: { from: number; size: number; bytes: Uint8Array }[] = [];
  let at = find(delimiter, 0);
  while (at >= 0) {
    const after = at + delimiter.length;
    if (body[after] === 0x2d && body[after + 1] === 0x2d) break; // closing --boundary--
    const headersEnd = find(new Uint8Array([13, 10, 13, 10]), after);
    if (headersEnd < 0) badResponse(`${href}: a multipart part has no end of headers`);
    const headers = latin.decode(body.subarray(after, headersEnd));
    const cr = /content-range:\s*bytes (\d+)-(\d+)\/(\d+|\*)/i.exec(headers);
    if (!cr) badResponse(`${href}: a multipart part has no Content-Range`);
    const from = Number(cr[1]);
    const length = Number(cr[2]) - from + 1;
    const start = headersEnd + 4;
    if (start + length > body.length) badResponse(`${href}: a multipart part is shorter than its Content-Range says`);
    parts.push({ from, size: cr[3] === '*' ? -1 : Number(cr[3]), bytes: body.subarray(start, start + length) });
    at = find(delimiter, start + length);
  }
  return parts;
}

/**
 * Where `needle` first occurs in `haystack` at or after `from` (-1 if nowhere), in time linear in
 * both (Knuth–Morris–Pratt): a server's long multipart boundary cannot make the search quadratic.
 */
function indexOfBytes(haystack: Uint8Array, needle: Uint8Array, from: number): number {
  const m = needle.length;
  if (m === 0) return from;
  const fail = new Int32Array(m);
  for (let i = 1, k = 0; i < m; i++) {
    while (k > 0 && needle[i] !== needle[k]) k = fail[k - 1]!;
    if (needle[i] === needle[k]) k++;
    fail[i] = k;
  }
  for (let i = from, k = 0; i < haystack.length; i++) {
    while (k > 0 && haystack[i] !== needle[k]) k = fail[k - 1]!;
    if (haystack[i] === needle[k]) k++;
    if (k === m) return i - m + 1;
  }
  return -1;
}

/** Bodies of recent range reads, by offset and length, least recently used dropped first. */
class RangeCache {
  private readonly entries = new Map<string, Uint8Array>();
  private bytes = 0;
  constructor(private readonly maxBytes: number) {}

  get(offset: number, length: number): Uint8Array | undefined {
    const key = `${offset}+${length}`;
    const hit = this.entries.get(key);
    if (hit) {
      this.entries.delete(key);
      this.entries.set(key, hit);
    }
    return hit;
  }

  set(offset: number, body: Uint8Array): void {
    if (body.length > this.maxBytes) return;
    const key = `${offset}+${body.length}`;
    if (this.entries.has(key)) return;
    // A copy: a multi-range body's parts are views of one large buffer, which must not be kept whole.
    this.entries.set(key, body.slice());
    this.bytes += body.length;
    for (const [k, v] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(k);
      this.bytes -= v.length;
    }
  }
}
