/** Waiting for work started together. */

/**
 * Every promise's value, in order, once all have settled; else the first rejection (in order).
 * Unlike `Promise.all`, nothing is still running when it rejects: a caller that then closes the
 * file the work reads from cannot pull it from under a read still in flight.
 */
export async function settleAll<T>(promises: readonly Promise<T>[]): Promise<T[]> {
  const results = await Promise.allSettled(promises);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<T>).value);
}
