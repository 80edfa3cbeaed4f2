/**
 * .npy over HTTP range requests: one small request for the header (a second if the header is
 * larger), then only the byte ranges a region needs, nearby ranges joined. A server that ignores
 * Range, or answers a different range than asked, is detected and reported, never misread.
 */
import { NpyError } from '../errors.js';
import { FIRST_BLOCK, readingHeader } from './header-read.js';
import { SOURCE, drive, performReads } from './steps.js';
import type { NdArray } from '../array/ndarray.js';
import { groupRuns, placeGroup, planRegion, regionArray, type OpenNpy, type RunGroup } from './region.js';
import { checkDataPresent, type DecodeOptions, type Expecting } from '../npy.js';
import type { DescrInput } from '../format/descr-types.js';
import { inParallel } from './settle.js';

/** Options of {@link openNpyUrl}: the fetch hook, headers, range joining, concurrency and the cache. */
export interface UrlOptions extends DecodeOptions {
  /**
   * The fetch to use (default `globalThis.fetch`): any WHATWG `fetch`, for auth, signed URLs or
   * retries. It is called as `fetch(url, { headers, signal })`.
   */
  fetch?: (url: string, init: { headers: Record<string, string>; signal?: AbortSignal | undefined }) => Promise<Response>;
  /** Cancels the opening requests (each read takes its own signal). */
  signal?: AbortSignal | undefined;
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
  /** Requests in flight at once (default 6). */
  concurrency?: number;
  /** Extra request headers (authorization, …). */
  headers?: Record<string, string>;
  /** Ranges asked for in one multipart request (default 100; 1 never uses multi-range requests). */
  rangesPerRequest?: number;
}

/** An open .npy over HTTP: its header, and regions read by range requests. */
export interface NpyUrlHandle<S extends DescrInput = DescrInput> extends OpenNpy<S> {
  readonly url: string;
  /** Size of the file on the server. */
  readonly size: number;
  /** Requests made, body bytes received, and reads served by the cache so far. */
  readonly stats: { requests: number; bytes: number; cached: number };
  read(start: readonly number[], count: readonly number[], options?: { signal?: AbortSignal | undefined }): Promise<NdArray<S>>;
  /** Nothing is held open between requests; for the same shape as other readers. */
  close(): Promise<void>;
}

/** Bytes one request asks for at most (ranges and the gaps between them): bounds memory in flight. */
const BATCH_BYTES = 1 << 20;

/**
 * A response body, read until `max` bytes: a server that sends more than it was asked for is
 * refused as soon as it does (the rest is never read), so its length cannot cost memory.
 */
async function readBody(res: Response, max: number, href: string): Promise<Uint8Array> {
  if (!res.body) return new Uint8Array(0);
  const out = new Uint8Array(max);
  let n = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (n + value.length > max) {
      await reader.cancel();
      httpError(`${href}: the server sent more than the ${max} bytes asked for`);
    }
    out.set(value, n);
    n += value.length;
  }
  return out.subarray(0, n);
}

function httpError(message: string): never {
  throw new NpyError('TRUNCATED', message);
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

/** `work` (a request and the reading of its body), its network failures as {@link networkError}. */
async function overNetwork<T>(href: string, what: string, signal: AbortSignal | undefined, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (e) {
    throw networkError(e, href, what, signal);
  }
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
  const href = String(url);
  try {
    new URL(href);
  } catch {
    throw new NpyError(
      'NETWORK',
      `'${href}' is not a URL: this openNpy reads URLs, Blobs and bytes; in Node, open a file with openNpyFile (region reads) or loadNpy from '@npyts/core/node'`,
    );
  }
  const doFetch = options.fetch ?? ((u, init) => globalThis.fetch(u, init));
  const stats = { requests: 0, bytes: 0, cached: 0 };
  let total = -1;

  /** Bytes [from, from + length) of the file, checked against what the server says it sent. */
  const range = async (from: number, length: number, signal = options.signal): Promise<Uint8Array> => {
    const last = from + length - 1;
    return overNetwork(href, `bytes ${from}-${last}`, signal, async () => {
      stats.requests++;
      const res = await doFetch(href, { headers: { ...options.headers, Range: `bytes=${from}-${last}` }, signal });
      if (res.status === 200) {
        await res.body?.cancel();
        httpError(`${href}: the server ignored the Range header (HTTP 200 with the whole body); it does not support range requests`);
      }
      if (res.status === 416) {
        await res.body?.cancel();
        httpError(`${href}: the server says bytes ${from}-${last} are outside the file (HTTP 416)`);
      }
      if (res.status !== 206) {
        await res.body?.cancel();
        httpError(`${href}: HTTP ${res.status} for bytes ${from}-${last}`);
      }
      const cr = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(res.headers.get('content-range') ?? '');
      if (!cr) {
        await res.body?.cancel();
        httpError(`${href}: a 206 answer without a valid Content-Range header`);
      }
      const [gotFrom, gotLast, size] = [Number(cr[1]), Number(cr[2]), cr[3] === '*' ? -1 : Number(cr[3])];
      if (size >= 0) total = size;
      const expectLast = total >= 0 ? Math.min(last, total - 1) : last;
      if (gotFrom !== from || gotLast !== expectLast) {
        await res.body?.cancel();
        httpError(`${href}: asked for bytes ${from}-${last}, the server sent ${gotFrom}-${gotLast} (Content-Range: ${res.headers.get('content-range')})`);
      }
      const expected = gotLast - gotFrom + 1;
      const body = await readBody(res, expected, href);
      stats.bytes += body.length;
      if (body.length !== expected) httpError(`${href}: Content-Range promised ${expected} bytes, the body has ${body.length}`);
      return body;
    });
  };

  /**
   * Several ranges in one request (`Range: bytes=a-b,c-d,…`, answered as multipart/byteranges).
   * Returns null when the server does not answer that way; the caller then asks range by range.
   */
  const multiRange = async (groups: { offset: number; length: number }[], signal?: AbortSignal): Promise<Uint8Array[] | null> => {
    const spec = groups.map((g) => `${g.offset}-${g.offset + g.length - 1}`).join(',');
    return overNetwork(href, `bytes ${spec.length > 60 ? `${spec.slice(0, 60)}…` : spec}`, signal, async () => {
      stats.requests++;
      const res = await doFetch(href, { headers: { ...options.headers, Range: `bytes=${spec}` }, signal });
      const type = res.headers.get('content-type') ?? '';
      const boundary = /multipart\/byteranges;\s*boundary="?([^";]+)"?/i.exec(type)?.[1];
      if (res.status !== 206 || !boundary) {
        await res.body?.cancel();
        return null;
      }
      // The parts plus their headers and boundaries; a body much longer than that is refused unread.
      const wanted = groups.reduce((n, g) => n + g.length, 0);
      const body = await readBody(res, wanted + groups.length * 512 + 4096, href);
      stats.bytes += body.length;
      const parts = parseByteranges(body, boundary, href);
      return groups.map((g) => {
        const p = parts.find((x) => x.from <= g.offset && x.from + x.bytes.length >= g.offset + g.length);
        if (!p) httpError(`${href}: the multipart answer lacks bytes ${g.offset}-${g.offset + g.length - 1}`);
        return p.bytes.subarray(g.offset - p.from, g.offset - p.from + g.length);
      });
    });
  };
  let multiRangeWorks = (options.rangesPerRequest ?? 100) > 1;

  // The first answer (the file's first bytes) is kept: region reads inside it need no request.
  let first: Uint8Array = new Uint8Array(0);
  const header = await drive(
    readingHeader(SOURCE, options, options.firstRequest ?? FIRST_BLOCK),
    performReads(async (at, length) => {
      const got = await range(at, length);
      if (at === 0) first = got;
      return got;
    }),
  );
  const cache = options.cache ? new RangeCache(options.cache.maxBytes ?? 64 << 20) : null;
  if (total >= 0) checkDataPresent(header, total - header.dataOffset);
  const maxGap = options.maxGap ?? 65536;
  const concurrency = Math.max(1, options.concurrency ?? 6);

  return {
    url: href,
    header,
    dtype: header.dtype,
    shape: [...header.shape],
    order: header.fortranOrder ? 'F' : 'C',
    get size() {
      return total;
    },
    stats,
    async close() {
      /* nothing held open */
    },
    async read(start, count, readOptions = {}) {
      const { signal } = readOptions;
      signal?.throwIfAborted();
      const plan = planRegion(header, start, count);
      const out = new Uint8Array(plan.bytes);
      const perRequest = options.rangesPerRequest ?? 100;
      // Groups are made lazily and requested in batches of at most `perRequest` ranges and
      // BATCH_BYTES bytes, `concurrency` at a time: memory is the region plus what is in flight.
      const groups = groupRuns(plan.runs, maxGap, { maxBytes: BATCH_BYTES, splitRuns: true });
      let held: IteratorResult<RunGroup> | null = null; // a group that did not fit the last batch
      const nextBatch = (): RunGroup[] => {
        const batch: RunGroup[] = [];
        let bytes = 0;
        const limit = multiRangeWorks ? perRequest : 1;
        while (batch.length < limit) {
          const g = held ?? groups.next();
          held = null;
          if (g.done) break;
          const inFirst = g.value.offset + g.value.length <= first.length ? first.subarray(g.value.offset, g.value.offset + g.value.length) : null;
          const known = inFirst ?? cache?.get(g.value.offset, g.value.length);
          if (known) {
            placeGroup(out, g.value, known);
            stats.cached++;
            continue;
          }
          if (batch.length && bytes + g.value.length > BATCH_BYTES) {
            held = g;
            break;
          }
          batch.push(g.value);
          bytes += g.value.length;
        }
        return batch;
      };
      const worker = async (stopped: () => boolean): Promise<void> => {
        for (let batch = nextBatch(); batch.length && !stopped(); batch = nextBatch()) {
          if (batch.length > 1 && multiRangeWorks) {
            const bodies = await multiRange(batch, signal);
            if (bodies) {
              batch.forEach((g, i) => {
                placeGroup(out, g, bodies[i]!);
                cache?.set(g.offset, bodies[i]!);
              });
              continue;
            }
            multiRangeWorks = false; // this server answers one range at a time
          }
          for (const g of batch) {
            const body = await range(g.offset, g.length, signal);
            placeGroup(out, g, body);
            cache?.set(g.offset, body);
          }
        }
      };
      await inParallel(concurrency, worker);
      return regionArray(header, plan, out);
    },
  };
}

/** The parts of a multipart/byteranges body: where each starts in the file, and its bytes. */
function parseByteranges(body: Uint8Array, boundary: string, href: string): { from: number; bytes: Uint8Array }[] {
  const latin = new TextDecoder('latin1');
  const delimiter = new TextEncoder().encode(`--${boundary}`);
  const find = (needle: Uint8Array, from: number): number => indexOfBytes(body, needle, from);
  const parts: { from: number; bytes: Uint8Array }[] = [];
  let at = find(delimiter, 0);
  while (at >= 0) {
    const after = at + delimiter.length;
    if (body[after] === 0x2d && body[after + 1] === 0x2d) break; // closing --boundary--
    const headersEnd = find(new Uint8Array([13, 10, 13, 10]), after);
    if (headersEnd < 0) httpError(`${href}: a multipart part has no end of headers`);
    const headers = latin.decode(body.subarray(after, headersEnd));
    const cr = /content-range:\s*bytes (\d+)-(\d+)\/(\d+|\*)/i.exec(headers);
    if (!cr) httpError(`${href}: a multipart part has no Content-Range`);
    const from = Number(cr[1]);
    const length = Number(cr[2]) - from + 1;
    const start = headersEnd + 4;
    if (start + length > body.length) httpError(`${href}: a multipart part is shorter than its Content-Range says`);
    parts.push({ from, bytes: body.subarray(start, start + length) });
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
