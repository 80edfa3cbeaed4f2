/**
 * JavaScript representations of the Python values object arrays carry, chosen to lose nothing:
 * each has the numbers Python holds and a toJSON() for the CLI's documents.
 */
import { jsonNumber } from '../array/json.js';
import type { NdArray } from '../array/ndarray.js';

/**
 * Python complex.
 * @example
 * value instanceof PyComplex && [value.re, value.im];
 */
export class PyComplex {
  constructor(
    readonly re: number,
    readonly im: number,
  ) {}
  toJSON(): [unknown, unknown] {
    return [jsonNumber(this.re), jsonNumber(this.im)];
  }
}

/**
 * datetime.date
 * @example
 * new PyDate(2026, 11, 22).toString();   // '2026-11-22'
 */
export class PyDate {
  constructor(
    readonly year: number,
    readonly month: number,
    readonly day: number,
  ) {}
  toString(): string {
    return `${String(this.year).padStart(4, '0')}-${pad(this.month)}-${pad(this.day)}`;
  }
  toJSON(): string {
    return this.toString();
  }
}

/**
 * datetime.time (tz: offset east of UTC in seconds, or null for naive).
 * @example
 * value instanceof PyTime && value.hour;
 */
export class PyTime {
  constructor(
    readonly hour: number,
    readonly minute: number,
    readonly second: number,
    readonly microsecond: number,
    readonly utcOffsetSeconds: number | null = null,
    readonly fold = 0,
  ) {}
  toString(): string {
    const frac = this.microsecond ? `.${String(this.microsecond).padStart(6, '0')}` : '';
    return `${pad(this.hour)}:${pad(this.minute)}:${pad(this.second)}${frac}${offsetText(this.utcOffsetSeconds)}`;
  }
  toJSON(): string {
    return this.toString();
  }
}

/**
 * datetime.datetime: every field Python has, microseconds included; ISO 8601 text as Python's isoformat().
 * @example
 * value instanceof PyDatetime && value.year;
 */
export class PyDatetime {
  constructor(
    readonly year: number,
    readonly month: number,
    readonly day: number,
    readonly hour: number,
    readonly minute: number,
    readonly second: number,
    readonly microsecond: number,
    readonly utcOffsetSeconds: number | null = null,
    readonly fold = 0,
  ) {}
  toString(): string {
    const d = new PyDate(this.year, this.month, this.day).toString();
    const t = new PyTime(this.hour, this.minute, this.second, this.microsecond, this.utcOffsetSeconds).toString();
    return `${d}T${t}`;
  }
  toJSON(): string {
    return this.toString();
  }
}

/**
 * datetime.timedelta, normalised as Python keeps it.
 * @example
 * value instanceof PyTimedelta && value.days;
 */
export class PyTimedelta {
  constructor(
    readonly days: number,
    readonly seconds: number,
    readonly microseconds: number,
  ) {}
  /** Total microseconds, exact. */
  get totalMicroseconds(): bigint {
    return (BigInt(this.days) * 86400n + BigInt(this.seconds)) * 1000000n + BigInt(this.microseconds);
  }
  toJSON(): { days: number; seconds: number; microseconds: number } {
    return { days: this.days, seconds: this.seconds, microseconds: this.microseconds };
  }
  toString(): string {
    return `datetime.timedelta(days=${this.days}, seconds=${this.seconds}, microseconds=${this.microseconds})`;
  }
}

/**
 * datetime.timezone: a fixed UTC offset.
 * @example
 * value instanceof PyTimezone && value.utcOffsetSeconds;
 */
export class PyTimezone {
  constructor(
    readonly utcOffsetSeconds: number,
    readonly name: string | null = null,
  ) {}
}

/**
 * decimal.Decimal, as its exact decimal text.
 * @example
 * value instanceof PyDecimal && value.value;   // '3.14', exact
 */
export class PyDecimal {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
  toJSON(): string {
    return this.value;
  }
}

/**
 * fractions.Fraction, exact.
 * @example
 * value instanceof PyFraction && [value.numerator, value.denominator];
 */
export class PyFraction {
  constructor(
    readonly numerator: bigint,
    readonly denominator: bigint,
  ) {}
  toString(): string {
    return this.denominator === 1n ? String(this.numerator) : `${this.numerator}/${this.denominator}`;
  }
  toJSON(): string {
    return this.toString();
  }
}

/**
 * slice(start, stop, step) and range(start, stop, step).
 * @example
 * pickled.value instanceof PySlice;   // a Python slice or range
 */
export class PySlice {
  constructor(
    readonly kind: 'slice' | 'range',
    readonly start: unknown,
    readonly stop: unknown,
    readonly step: unknown,
  ) {}
  toJSON(): Record<string, unknown> {
    return { [this.kind]: [this.start, this.stop, this.step] };
  }
  toString(): string {
    const text = (v: unknown): string => (v === null ? 'None' : String(v));
    return `${this.kind}(${text(this.start)}, ${text(this.stop)}, ${text(this.step)})`;
  }
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

function offsetText(seconds: number | null): string {
  if (seconds === null) return '';
  const sign = seconds < 0 ? '-' : '+';
  const s = Math.abs(seconds);
  const rest = s % 60 ? `:${pad(s % 60)}` : '';
  return `${sign}${pad(Math.floor(s / 3600))}:${pad(Math.floor((s % 3600) / 60))}${rest}`;
}

/**
 * A numpy masked array (`numpy.ma.MaskedArray`): its data, and its mask (`True` where a value is
 * masked; for records, one boolean per field). Rebuilt from the pickle as plain data.
 * @example
 * const m = decodeNpy(bytes, { pickle: pickleCodec }).get() as PyMaskedArray;
 * m.mask.get(0);   // true where numpy's masked array hides a value
 */
export class PyMaskedArray {
  constructor(
    readonly data: NdArray,
    readonly mask: NdArray,
    readonly fillValue: unknown,
  ) {}
  toJSON(): Record<string, unknown> {
    return { data: this.data, mask: this.mask };
  }
}

// Python's tuple and frozenset arrive as an Array and a Set, as list and set do. Which ones were
// tuples and frozensets is remembered (weakly, on the objects themselves), so that a value read and
// saved again is written as what it was: `{(1, 2): (3, 4)}` stays a dict of tuples, not of lists.
const TUPLES = new WeakSet<readonly unknown[]>();
const FROZENSETS = new WeakSet<ReadonlySet<unknown>>();

/**
 * Marks an array to be pickled as a Python tuple (arrays read from a tuple are marked already).
 * @example
 * pickle(pyTuple([1, 'a']));   // Python reads (1, 'a')
 */
export function pyTuple<T extends unknown[]>(items: T): T {
  TUPLES.add(items);
  return items;
}
/**
 * Whether `value` was read from a Python tuple, or marked by {@link pyTuple}.
 * @example
 * isPyTuple(unpickle(bytes));   // true for a pickled (1, 2), false for [1, 2]
 */
export function isPyTuple(value: unknown): value is unknown[] {
  return Array.isArray(value) && TUPLES.has(value);
}
/**
 * Marks a Set to be pickled as a Python frozenset (Sets read from a frozenset are marked already).
 * @example
 * pickle(pyFrozenset(new Set([1, 2])));   // Python reads frozenset({1, 2})
 */
export function pyFrozenset<T extends Set<unknown>>(items: T): T {
  FROZENSETS.add(items);
  return items;
}
/**
 * Whether `value` was read from a Python frozenset, or marked by {@link pyFrozenset}.
 * @example
 * isPyFrozenset(unpickle(bytes));   // true for a pickled frozenset({1}), false for {1}
 */
export function isPyFrozenset(value: unknown): value is Set<unknown> {
  return value instanceof Set && FROZENSETS.has(value);
}
