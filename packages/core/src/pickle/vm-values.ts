/** What the pickle machine holds while it runs, besides plain values: tuples, constructions BUILD completes. */
import { NpyError } from '../errors.js';

export function bad(message: string, offset?: number): never {
  throw new NpyError('BAD_PICKLE', `pickle: ${message}`, offset === undefined ? {} : { offset });
}

/** A Python tuple while the VM runs (turned into an Array in the result). */
export class Tuple {
  constructor(readonly items: unknown[]) {}
}

/** The result of an allowlisted constructor that BUILD completes later. */
export abstract class Pending {
  resolved: unknown = undefined;
  abstract build(state: unknown): void;
}

/** Resolve a Pending that BUILD has completed. */
export function settle(v: unknown): unknown {
  return v instanceof Pending && v.resolved !== undefined ? v.resolved : v;
}
