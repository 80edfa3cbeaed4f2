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

/**
 * Items that arrive in batches while the VM runs: APPENDS and SETITEMS take them off the stack a
 * batch at a time. Each batch is kept as an exact-size copy, and they are joined once, when first
 * needed as one array. Pushing them one by one would over-allocate (an empty JS array's first push
 * reserves 17 slots) and copy a growing array over and over: most of an object array's allocations,
 * and so of its garbage collection.
 */
abstract class Batches {
  /** The items (once `array()` handed them out, the only place they are), or their first batch. */
  private head: unknown[] | undefined = undefined;
  /** Later batches, not yet joined to `head`. */
  private tail: unknown[][] | undefined = undefined;
  private handedOut = false;
  /** What the result holds in its place, once finished (set by the end of the run). */
  result: unknown = undefined;

  /** Add `from[start, end)`. */
  add(from: readonly unknown[], start: number, end: number): void {
    if (end <= start) return;
    if (this.head === undefined) {
      this.head = from.slice(start, end);
    } else if (!this.handedOut && end - start >= BATCH) {
      (this.tail ??= []).push(from.slice(start, end));
    } else {
      // Small additions extend the newest batch, so the batches are few (at most one per BATCH items).
      const last = this.tail ? this.tail[this.tail.length - 1]! : this.head;
      for (let i = start; i < end; i++) last.push(from[i]);
    }
  }

  /** Add all of `items`, an array nobody else holds (it may become the store itself). */
  addOwned(items: unknown[]): void {
    if (items.length === 0) return;
    if (this.head === undefined && !this.handedOut) this.head = items;
    else this.add(items, 0, items.length);
  }

  /** The items as one array: the same array from now on, which later additions extend. */
  array(): unknown[] {
    if (this.head === undefined) this.head = [];
    else if (this.tail !== undefined) {
      this.head = joinAll([this.head, ...this.tail]);
      this.tail = undefined;
    }
    this.handedOut = true;
    return this.head;
  }

  /** A new array of the items as they are now. */
  copy(): unknown[] {
    if (this.head === undefined) return [];
    return this.tail === undefined ? this.head.slice() : joinAll([this.head, ...this.tail]);
  }

  isEmpty(): boolean {
    return (this.head === undefined || this.head.length === 0) && this.tail === undefined;
  }
}

/** Batches smaller than this are pushed onto the newest batch. */
const BATCH = 16;

/** A Python list while the VM runs (an Array in the result). */
export class List extends Batches {}

/**
 * A Python dict while the VM runs: keys and values alternating, in the order they were set (a later
 * pair for an equal key wins, at the first one's place). The result's dict is made once, at the end.
 */
export class Dict extends Batches {
  /** The dict as a Map of settled keys, for the few constructors that look into one. */
  toMap(): Map<unknown, unknown> {
    const pairs = this.array();
    const m = new Map<unknown, unknown>();
    for (let i = 0; i < pairs.length; i += 2) m.set(settle(pairs[i]), pairs[i + 1]);
    return m;
  }
}

/** One array of the arrays' items, in order, copied at most a few times (concat takes a bounded count of arguments). */
function joinAll(arrays: unknown[][]): unknown[] {
  const GROUP = 4096;
  let level = arrays;
  while (level.length > 1) {
    const next: unknown[][] = [];
    for (let i = 0; i < level.length; i += GROUP) next.push(([] as unknown[]).concat(...level.slice(i, i + GROUP)));
    level = next;
  }
  return level[0] ?? [];
}

/** Resolve a Pending that BUILD has completed, and a list to its items (a dict stays a Dict). */
export function settle(v: unknown): unknown {
  if (v instanceof List) return v.array();
  return v instanceof Pending && v.resolved !== undefined ? v.resolved : v;
}
