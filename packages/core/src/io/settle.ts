/** Waiting for work started together. */

/**
 * Every promise's value, in order, once all have settled; else the first rejection (in order).
 * Unlike `Promise.all`, nothing is still running when it rejects: a caller that then closes the
 * file the work reads from cannot pull it from under a read still in flight.
 * @example
 * const [a, b] = await settleAll([z.get('a'), z.get('b')]);
 */
export async function settleAll<T>(promises: readonly Promise<T>[]): Promise<T[]> {
  const results = await Promise.allSettled(promises);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<T>).value);
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
