/** Waiting for work started together. */
import { NpyError } from '../errors.js';

/**
 * Every promise's value, in order, once all have settled; else the first rejection (in order).
 * Unlike `Promise.all`, nothing is still running when it rejects: a caller that then closes the
 * file the work reads from cannot pull it from under a read still in flight.
 * @example
 * const [a, b] = await settleAll([z.get('a'), z.get('b')]);
 */
export async function settleAll<const P extends readonly unknown[]>(promises: P): Promise<{ -readonly [K in keyof P]: Awaited<P[K]> }> {
  const results = await Promise.allSettled(promises);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  // Typed as Promise.all types its values: a tuple of promises gives a tuple of their values.
  return results.map((r) => (r as PromiseFulfilledResult<unknown>).value) as { -readonly [K in keyof P]: Awaited<P[K]> };
}

/**
 * `count` workers that share a queue of work, run together and waited for by {@link settleAll}.
 * When one fails the others stop at their next `stopped()` check, so an error (a failed read, an
 * abort) does not wait for the rest of the work to be done for nothing.
 */
export async function inParallel(count: number, worker: (stopped: () => boolean) => Promise<void>): Promise<void> {
  let failed = false;
  const stopped = (): boolean => failed;
  await settleAll(
    Array.from({ length: count }, async () => {
      try {
        await worker(stopped);
      } catch (e) {
        failed = true;
        throw e;
      }
    }),
  );
}

/**
 * `fn` of each item, at most `count` at a time, the results in the items' order: work over many
 * small things (an archive's members) holds `count` of them in flight, not all at once. When one
 * fails, the others stop taking items, and the rejection waits for those in flight.
 * @example
 * const arrays = await mapInParallel(z.names, 8, (name) => z.get(name));
 */
export async function mapInParallel<T, U>(items: readonly T[], count: number, fn: (item: T) => Promise<U>): Promise<U[]> {
  const out = new Array<U>(items.length);
  let next = 0;
  await inParallel(Math.max(1, Math.min(count, items.length)), async (stopped) => {
    while (next < items.length && !stopped()) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  });
  return out;
}

/**
 * Bytes that work in flight may hold together: `take` waits while others hold too much (one piece
 * of work always proceeds, whatever its size), `give` returns them. Waiters wake when bytes come
 * back; work that fails or is aborted gives its bytes back too, so no waiter outlives it.
 */
export class ByteBudget {
  private used = 0;
  private waiting: (() => void)[] = [];
  constructor(private readonly limit: number) {}

  async take(bytes: number): Promise<void> {
    while (this.used > 0 && this.used + bytes > this.limit) await new Promise<void>((wake) => this.waiting.push(wake));
    this.used += bytes;
  }

  give(bytes: number): void {
    this.used -= bytes;
    for (const wake of this.waiting.splice(0)) wake();
  }

  /** `work`, holding `bytes` of the budget while it runs. */
  async holding<T>(bytes: number, work: () => Promise<T>): Promise<T> {
    await this.take(bytes);
    try {
      return await work();
    } finally {
      this.give(bytes);
    }
  }
}

/**
 * The codes that say "this tensor cannot be read" (a dtype npyts has no counterpart for; a GGUF
 * quantization gguf-py does not dequantize either): {@link getEvery} reads the others and then names
 * every such tensor in one error.
 */
const UNREADABLE: ReadonlySet<string> = new Set(['NO_COUNTERPART', 'GGUF_UNSUPPORTED']);

/** Whether `e` says that one tensor cannot be read, not that the read failed. */
function isUnreadable(e: unknown): e is NpyError {
  return e instanceof NpyError && UNREADABLE.has(e.code);
}

/**
 * The failures of {@link getEvery} as one error, or null where none failed: the failure itself
 * where there is one; else one error naming each, with their code where they share one and
 * `NO_COUNTERPART` where they differ.
 */
function unreadable(names: readonly string[], failures: readonly [string, NpyError][]): NpyError | null {
  if (failures.length === 0) return null;
  if (failures.length === 1) return failures[0]![1];
  // The first 20 by name, and how many more: a file of many such tensors gets a message of bounded size.
  const reasons = failures.slice(0, 20).map(([name, e]) => {
    const text = e.file !== undefined && e.message.startsWith(`${e.file}: `) ? e.message.slice(e.file.length + 2) : e.message;
    return `'${name}': ${text}`;
  });
  if (failures.length > 20) reasons.push(`and ${failures.length - 20} more`);
  const code = failures.every(([, e]) => e.code === failures[0]![1].code) ? failures[0]![1].code : 'NO_COUNTERPART';
  return new NpyError(
    code,
    `${failures.length} of the ${names.length} tensors cannot be read (${reasons.join('; ')}); get() the others by name`,
    failures[0]![1].file === undefined ? {} : { file: failures[0]![1].file },
  );
}

/**
 * Each tensor of `names` by `get`, at most `count` at a time, in the names' order. A tensor npyts
 * cannot read (`NO_COUNTERPART`: a dtype it has no counterpart for; `GGUF_UNSUPPORTED`: a GGUF
 * quantization gguf-py does not dequantize) does not stop the others: once all were tried, one
 * error names every such tensor and why. Any other failure stops the
 * work at once, as {@link mapInParallel} does. `onTensor` is told each name once its tensor is read.
 * @example
 * const all = await getEvery(f.names, 4, (name) => f.get(name));
 */
export async function getEvery<U>(
  names: readonly string[],
  count: number,
  get: (name: string) => Promise<U>,
  onTensor?: ((name: string) => void) | undefined,
): Promise<Map<string, U>> {
  const failures: [string, NpyError][] = [];
  const got = await mapInParallel(names, count, async (name) => {
    try {
      const value = await get(name);
      onTensor?.(name);
      return value;
    } catch (e) {
      if (!isUnreadable(e)) throw e;
      failures.push([name, e]);
      return undefined;
    }
  });
  const order = new Map(failures.length > 1 ? names.map((n, i) => [n, i]) : []);
  const failed = unreadable(
    names,
    failures.sort((a, b) => order.get(a[0])! - order.get(b[0])!),
  );
  if (failed) throw failed;
  return new Map(names.map((n, i) => [n, got[i] as U]));
}

/**
 * {@link getEvery}, blocking.
 * @example
 * const all = getEverySync(f.names, (name) => f.getSync(name));
 */
export function getEverySync<U>(names: readonly string[], get: (name: string) => U): Map<string, U> {
  const failures: [string, NpyError][] = [];
  const out = new Map<string, U>();
  for (const name of names) {
    try {
      out.set(name, get(name));
    } catch (e) {
      if (!isUnreadable(e)) throw e;
      failures.push([name, e]);
    }
  }
  const failed = unreadable(names, failures);
  if (failed) throw failed;
  return out;
}
