/**
 * Inflating members off the main thread in browsers: the platform's `DecompressionStream('deflate-raw')`
 * (the browser's own zlib) run in a small pool of Web Workers, one member per worker at a time, the
 * largest waiting member first; members of at most 64 KiB inflate with fflate on the calling thread.
 * Measured in Chromium on a 191 MB deflated archive of random float32 weights: fflate 2.3 s (one
 * thread), DecompressionStream on the main thread 1.1 s, in two workers 0.55 s of inflating (bench:
 * `npm run bench -- --browser`). Where there are no workers (or a page's policy refuses a worker
 * made from a blob: URL), the stream runs on the calling thread; without `DecompressionStream`,
 * fflate does the work.
 *
 * Every path writes into a buffer of exactly the declared size and fails as soon as more would
 * come out, so memory is bounded by the declaration, which the zip reader has already checked
 * against the compressed bytes present.
 */
import { NpyError } from '../errors.js';
import { fflateCodec } from './fflate.js';
import { checkInflatedSize } from './zip.js';
import { crc32, makeCrc32 } from './crc32.js';
import { dataStartOf } from '../format/header.js';

/**
 * What one inflate gave: the first `split` bytes (a .npy header) and the rest (the array's data, in
 * a buffer of its own), how much came out, whether more would have, and (from a worker) the CRC-32.
 */
interface Inflated {
  head: Uint8Array;
  body: Uint8Array;
  produced: number;
  overflow: boolean;
  crc?: number | null;
}

/**
 * One inflate, run wherever the module runs (worker or page), into a head of `split` bytes and a
 * body of the rest: the body is an array's data in a buffer that starts with it, so the array owns
 * its buffer whole. A negative `split` is found from the first bytes out, at the end of a .npy
 * header (`dataStart`: where the data starts, null while more bytes are needed), so that nothing
 * is inflated twice to learn it. Self-contained: its source is the worker's.
 */
async function inflateWithStream(raw: Uint8Array, size: number, split: number, dataStart: (prefix: Uint8Array) => number | null): Promise<Inflated> {
  let head = new Uint8Array(0);
  let body: Uint8Array | null = null;
  let produced = 0;
  /** Output that came before a negative split was known (a few bytes, or the stream's first chunk). */
  let early = new Uint8Array(0);
  const begin = (at: number): void => {
    split = Math.min(Math.max(at, 0), size);
    head = new Uint8Array(split);
    body = new Uint8Array(size - split);
  };
  /** Write `chunk`, which starts at byte `at` of the member, into head and body. */
  const place = (chunk: Uint8Array, at: number): void => {
    let rest = chunk;
    if (at < split) {
      const n = Math.min(split - at, rest.length);
      head.set(rest.subarray(0, n), at);
      rest = rest.subarray(n);
      at += n;
    }
    if (rest.length) body!.set(rest, at - split);
  };
  if (split >= 0) begin(split);
  const source = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(raw);
      c.close();
    },
  });
  const reader = source.pipeThrough(new DecompressionStream('deflate-raw') as unknown as ReadableWritablePair<Uint8Array, Uint8Array>).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    if (produced + value.length > size) {
      await reader.cancel();
      // The caller refuses the member: nothing is allocated for it that was not already.
      return { head, body: body ?? new Uint8Array(0), produced, overflow: true };
    }
    if (body === null) {
      const joined = new Uint8Array(early.length + value.length);
      joined.set(early);
      joined.set(value, early.length);
      early = joined;
      const at = dataStart(early);
      if (at !== null) {
        begin(at);
        place(early, 0);
      }
    } else {
      place(value, produced);
    }
    produced += value.length;
  }
  if (body === null) {
    begin(dataStart(early) ?? 0);
    place(early, 0);
  }
  return { head, body: body!, produced, overflow: false };
}

/**
 * The worker's program: inflate each posted member, take its CRC-32 there too (so the page's thread
 * does not walk every inflated byte again), and send the buffer back (transferred, not copied).
 */
function workerProgram(inflate: typeof inflateWithStream, makeCrc: typeof makeCrc32, dataStart: typeof dataStartOf): void {
  const scope = globalThis as unknown as { onmessage: (ev: MessageEvent) => void; postMessage: (m: unknown, t?: Transferable[]) => void };
  const crc = makeCrc();
  scope.onmessage = (ev) => {
    const { id, raw, size, split, withCrc } = ev.data as { id: number; raw: ArrayBuffer; size: number; split: number; withCrc: boolean };
    inflate(new Uint8Array(raw), size, split, dataStart).then(
      ({ head, body, produced, overflow }) =>
        scope.postMessage({ id, head: head.buffer, body: body.buffer, produced, overflow, crc: withCrc ? crc(body, crc(head)) : null }, [
          head.buffer,
          body.buffer,
        ]),
      (e: unknown) => scope.postMessage({ id, error: String(e) }),
    );
  };
}

interface Job {
  raw: Uint8Array;
  size: number;
  split: number;
  withCrc: boolean;
  resolve(r: Inflated): void;
  reject(e: unknown): void;
}

/**
 * Workers used at once: one more than the cores the page reports (at least 2 cores, at most 5
 * workers). A worker's stream leaves its thread idle between chunks (a promise per 64 KiB of output
 * in Chromium 156); one extra worker fills those gaps: the deflated ResNet-like archive took
 * 0.78–0.79 s with 2 workers and 0.75–0.78 s with 3, on 2 cores.
 */
const POOL_SIZE = Math.min(5, Math.max(2, globalThis.navigator?.hardwareConcurrency ?? 2) + 1);
/** An idle pool is ended after this long, so a page that loaded its weights keeps no threads. */
const IDLE_MS = 2000;

let scriptUrl: string | null = null;
const idle: Worker[] = [];
const queue: Job[] = [];
let running = 0;
let idleTimer: ReturnType<typeof setTimeout> | null = null;
let workersRefused = false;

function newWorker(): Worker | null {
  if (!workersMayRun()) return null;
  try {
    scriptUrl ??= URL.createObjectURL(
      new Blob([`(${workerProgram.toString()})(${inflateWithStream.toString()}, ${makeCrc32.toString()}, ${dataStartOf.toString()})`], {
        type: 'text/javascript',
      }),
    );
    return new Worker(scriptUrl);
  } catch {
    workersRefused = true;
    return null;
  }
}

/**
 * The waiting job with the most bytes to inflate, taken out of the queue: the largest members start
 * first, and the small ones fill the workers at the end, so that no worker is left with a long
 * member while the others idle.
 */
function takeLargest(): Job {
  let at = 0;
  for (let i = 1; i < queue.length; i++) if (queue[i]!.size > queue[at]!.size) at = i;
  return queue.splice(at, 1)[0]!;
}

/**
 * Whether members may go to workers here: a runtime without workers (or blob: URLs to make them
 * from), or a page that refused one, inflates on its own thread.
 */
function workersMayRun(): boolean {
  return !workersRefused && typeof Worker !== 'undefined' && typeof Blob !== 'undefined' && typeof URL.createObjectURL === 'function';
}

let pumpScheduled = false;
/**
 * Start waiting jobs once this task's code has queued all it reads (getAll queues every member in
 * one go): the largest then go to the workers first, not the first few in archive order.
 */
function pumpSoon(): void {
  if (pumpScheduled) return;
  pumpScheduled = true;
  queueMicrotask(() => {
    pumpScheduled = false;
    pump();
  });
}

function pump(): void {
  while (queue.length && running < POOL_SIZE) {
    const worker = idle.pop() ?? newWorker();
    const job = takeLargest();
    if (!worker) {
      inflateWithStream(job.raw, job.size, job.split, dataStartOf).then(job.resolve, job.reject);
      continue;
    }
    running++;
    if (idleTimer) {
      clearTimeout(idleTimer);
      idleTimer = null;
    }
    const done = (): void => {
      running--;
      idle.push(worker);
      if (running === 0 && !queue.length) idleTimer = setTimeout(endIdleWorkers, IDLE_MS);
      pump();
    };
    worker.onmessage = (ev: MessageEvent) => {
      const m = ev.data as { head?: ArrayBuffer; body?: ArrayBuffer; produced: number; overflow: boolean; crc: number | null; error?: string };
      done();
      if (m.error === undefined) {
        job.resolve({ head: new Uint8Array(m.head!), body: new Uint8Array(m.body!), produced: m.produced, overflow: m.overflow, crc: m.crc });
        return;
      }
      // Corrupt data, or a worker that cannot run its program (a bundler may have rewritten the
      // function's source to call helpers the worker does not have). The page's thread decides:
      // it fails the same way on corrupt data, and where it succeeds workers are not used again.
      inflateWithStream(job.raw, job.size, job.split, dataStartOf).then((r) => {
        workersRefused = true;
        job.resolve(r);
      }, job.reject);
    };
    worker.onerror = (ev: ErrorEvent) => {
      // A worker that cannot run (a page's policy) is dropped; its job runs here.
      ev.preventDefault();
      running--;
      workersRefused = true;
      worker.terminate();
      inflateWithStream(job.raw, job.size, job.split, dataStartOf).then(job.resolve, job.reject);
      pump();
    };
    // The compressed bytes are copied once into a buffer the worker takes over.
    const raw = job.raw.slice();
    worker.postMessage({ id: 0, raw: raw.buffer, size: job.size, split: job.split, withCrc: job.withCrc }, [raw.buffer]);
  }
}

function endIdleWorkers(): void {
  idleTimer = null;
  if (running) return;
  for (const w of idle.splice(0)) w.terminate();
}

/**
 * Members of at most this many inflated bytes inflate on the calling thread. The deflated
 * ResNet-like archive in Chromium: 268 of its 320 members are smaller; through the workers they took
 * the first 120 ms of 0.9 s, during which no large member had started.
 */
const INLINE_MAX = 64 << 10;

let rawDeflateStream: boolean | undefined;
/** Whether this runtime has the platform's raw-deflate stream (some older ones know only 'deflate' and 'gzip'). */
export function hasDecompressionStream(): boolean {
  if (rawDeflateStream === undefined) {
    try {
      rawDeflateStream = typeof ReadableStream !== 'undefined' && new DecompressionStream('deflate-raw') !== null;
    } catch {
      rawDeflateStream = false;
    }
  }
  return rawDeflateStream;
}

/** How {@link inflateAsync} splits, checks and stops. */
export interface InflateAsyncOptions {
  /**
   * Bytes at the start that are a header, handed back apart from the data after them (default 0);
   * `'npy'`: as many as a .npy preamble and header at the start take (found from the first bytes out).
   */
  split?: number | 'npy';
  /** Takes a member that has not started out of the queue; one that has runs to its end. */
  signal?: AbortSignal;
  /** Whether the CRC-32 is computed (default true); false gives `crc: null`. */
  withCrc?: boolean;
}

/**
 * Inflate a raw-deflate member of exactly `member.size` bytes, off the main thread where the
 * platform allows: its first `split` bytes (a header) and the rest (an array's data, in a buffer that
 * starts with it), with the CRC-32 of the whole (taken in the worker where there is one). More or
 * less than `member.size` is an error naming the member.
 * @example
 * const { head, body, crc } = await inflateAsync(compressed, entry, { split: header.dataOffset });
 */
export async function inflateAsync(
  raw: Uint8Array,
  member: { readonly size: number; readonly name: string },
  { split: splitAt = 0, signal, withCrc = true }: InflateAsyncOptions = {},
): Promise<{ head: Uint8Array; body: Uint8Array; crc: number | null }> {
  const { size, name } = member;
  const split = splitAt === 'npy' ? -1 : splitAt;
  signal?.throwIfAborted();
  // A small member inflates on this thread: a worker's round trip and a new stream cost more than
  // fflate takes for it (tens of microseconds), and most members of a model's state dict are small.
  // Where workers run, it waits for a later task first, so that members read together reach the
  // workers before this thread is busy with the small ones.
  if (size <= INLINE_MAX || !hasDecompressionStream()) {
    if (size <= INLINE_MAX && workersMayRun()) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      signal?.throwIfAborted();
    }
    const bytes = fflateCodec.inflate(raw, size, name);
    const at = split < 0 ? Math.min(dataStartOf(bytes) ?? 0, size) : split;
    // The body in a buffer of its own, as the stream's is (a copy, small beside fflate's work).
    return { head: bytes.subarray(0, at), body: at ? bytes.slice(at) : bytes, crc: withCrc ? crc32(bytes) : null };
  }
  let result: Inflated;
  const job = { raw, size, split, withCrc } as Job;
  // An abort takes a member that has not started yet out of the queue (one that has runs to its end).
  const onAbort = (): void => {
    const at = queue.indexOf(job);
    if (at >= 0) {
      queue.splice(at, 1);
      job.reject(signal!.reason);
    }
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    result = await new Promise((resolve, reject) => {
      job.resolve = resolve;
      job.reject = reject;
      queue.push(job);
      pumpSoon();
    });
  } catch (e) {
    signal?.throwIfAborted();
    throw new NpyError('ZIP_FORMAT', `corrupt deflate stream: ${e instanceof Error ? e.message : String(e)}`, { member: name });
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
  signal?.throwIfAborted();
  checkInflatedSize(result.overflow ? size + 1 : result.produced, size, name);
  const { head, body } = result;
  // A worker took the CRC-32 (or was told not to); the page's own stream did not.
  const crc = result.crc !== undefined ? result.crc : withCrc ? crc32(body, crc32(head)) : null;
  return { head, body, crc };
}
