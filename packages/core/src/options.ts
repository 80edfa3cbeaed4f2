/**
 * The one check of numeric options: every public function that takes a count, a size or a limit
 * refuses one that is not a finite number of the kind it takes (`BAD_OPTION`), before any work. A
 * NaN compares false with everything, so an unchecked `maxParts: NaN` switches a limit off and a
 * `maxPartBytes: NaN` makes zero parts: the rules below are the only way options are checked.
 */
import { NpyError } from './errors.js';

/**
 * What one numeric option takes: a finite number, a whole one where `integer`, within `min`..`max`;
 * `Infinity` too where `unbounded` (a limit the caller lifts on purpose: "no limit").
 */
export interface NumberRule {
  integer: boolean;
  min: number;
  max?: number;
  unbounded?: boolean;
}

/**
 * A count of things (parts, requests): a whole number of at least 1.
 * @example
 * checkNumber('concurrency', 0, COUNT);   // throws NpyError BAD_OPTION
 */
export const COUNT: NumberRule = { integer: true, min: 1 };
/**
 * A number of bytes or things that may be 0 (a gap, a cache, an allowance): a whole number, not negative.
 * @example
 * checkNumber('maxGap', -1, AMOUNT);   // throws NpyError BAD_OPTION
 */
export const AMOUNT: NumberRule = { integer: true, min: 0 };
/**
 * A size in bytes that must hold something: a whole number of at least 1.
 * @example
 * checkNumber('maxPartBytes', Number.NaN, SIZE);   // throws NpyError BAD_OPTION
 */
export const SIZE: NumberRule = { integer: true, min: 1 };
/**
 * A tolerance: a finite number, not negative.
 * @example
 * checkNumber('rtol', 1e-5, TOLERANCE);   // takes it
 */
export const TOLERANCE: NumberRule = { integer: false, min: 0 };
/**
 * A limit in bytes that may be 0 or lifted with `Infinity` (a whole answer taken from a server without ranges).
 * @example
 * checkNumber('wholeBodyBytes', Infinity, LIMIT);   // takes it
 */
export const LIMIT: NumberRule = { integer: true, min: 0, unbounded: true };
/**
 * A time in milliseconds, above 0 (at least 1), or `Infinity` for no deadline.
 * @example
 * checkNumber('timeoutMs', 0, MILLISECONDS);   // throws NpyError BAD_OPTION
 */
export const MILLISECONDS: NumberRule = { integer: false, min: 1, unbounded: true };

/** Rules by option name. */
export type NumberRules = Readonly<Record<string, NumberRule>>;

/**
 * Refuse `value` unless it is absent or a number `rule` takes.
 * @example
 * checkNumber('maxParts', NaN, COUNT);   // throws NpyError BAD_OPTION
 */
export function checkNumber(name: string, value: unknown, rule: NumberRule): void {
  if (value === undefined) return;
  if (rule.unbounded && value === Number.POSITIVE_INFINITY) return;
  const ok =
    typeof value === 'number' &&
    Number.isFinite(value) &&
    (!rule.integer || Number.isSafeInteger(value)) &&
    value >= rule.min &&
    (rule.max === undefined || value <= rule.max);
  if (ok) return;
  const kind = (rule.integer ? 'an integer' : 'a finite number') + (rule.unbounded ? ' (or Infinity)' : '');
  const range = rule.max === undefined ? `of at least ${rule.min}` : `from ${rule.min} to ${rule.max}`;
  const shown = typeof value === 'number' ? String(value) : typeof value === 'string' ? JSON.stringify(value) : typeof value;
  throw new NpyError('BAD_OPTION', `option ${name} must be ${kind} ${range}, not ${shown}`);
}

/**
 * Refuse the options of `options` that `rules` names and that are not numbers of their kind.
 * @example
 * checkNumbers({ maxPartBytes: NaN }, PART_LIMIT_RULES);   // throws NpyError BAD_OPTION
 */
export function checkNumbers(options: object | null | undefined, ...rules: NumberRules[]): void {
  if (options === null || options === undefined) return;
  const given = options as Readonly<Record<string, unknown>>;
  for (const set of rules) for (const name of Object.keys(set)) checkNumber(name, given[name], set[name]!);
}

/** `maxHeaderBytes` (every reader of a .npy header). */
export const HEADER_RULES: NumberRules = { maxHeaderBytes: SIZE };
/** The unpickler's limits (object arrays, torch files). */
export const PICKLE_RULES: NumberRules = { maxDepth: AMOUNT, maxMemo: AMOUNT, maxMarks: AMOUNT, maxBytes: AMOUNT };
/** Every reader of a .npy or .npz: the header's limit and the unpickler's. */
export const DECODE_RULES: NumberRules = { ...HEADER_RULES, ...PICKLE_RULES };
/** HTTP reads (`HttpOptions`). */
export const HTTP_RULES: NumberRules = { requestBytes: SIZE, concurrency: COUNT, maxInFlight: SIZE, wholeBodyBytes: LIMIT, timeoutMs: MILLISECONDS };
/** A remote .npy (`UrlOptions`, beside the HTTP and decode rules). */
export const URL_RULES: NumberRules = { maxGap: AMOUNT, firstRequest: SIZE, rangesPerRequest: COUNT, tailBytes: SIZE };
/** A byte cache (`ByteCacheOptions`, and a URL's `cache`). */
export const CACHE_RULES: NumberRules = { maxBytes: AMOUNT, blockBytes: SIZE };
/** An object store's multipart limits (`PartLimits`). */
export const PART_LIMIT_RULES: NumberRules = { minPartBytes: AMOUNT, maxPartBytes: SIZE, maxParts: COUNT, maxObjectBytes: SIZE };
/** What a multipart plan is asked for, beside the store's limits: parts of about `partSize`, or `parts` of them, and rows to append. */
export const PLAN_RULES: NumberRules = { partSize: SIZE, parts: COUNT, rows: AMOUNT, objectSize: AMOUNT };
/** A reference set's chunks (`ReferenceOptions`). */
export const REFERENCE_RULES: NumberRules = { chunkBytes: SIZE };
/**
 * zlib's levels, 0 to 9.
 * @example
 * checkNumbers({ level: 10 }, LEVEL_RULES);   // throws NpyError BAD_OPTION
 */
export const LEVEL_RULES: NumberRules = { level: { integer: true, min: 0, max: 9 } };

/**
 * Refuse the options of a reader that takes HTTP sources: the decode, HTTP, URL and cache rules.
 * @example
 * checkReadOptions({ concurrency: 0 });   // throws NpyError BAD_OPTION
 */
export function checkReadOptions(options: object | null | undefined): void {
  checkNumbers(options, DECODE_RULES, HTTP_RULES, URL_RULES);
  const cache = (options as { cache?: unknown } | null | undefined)?.cache;
  if (cache !== null && typeof cache === 'object') checkNumbers(cache, { maxBytes: AMOUNT });
}

/** numpy's mmap modes: read, read and write the file, copy-on-write (writes stay in this process). */
export type MapMode = 'r' | 'r+' | 'c';

/** Whether the one "no memory maps here" warning was given. */
let mapWarned = false;

/**
 * The one warning (once a process) that `{ mmap }` cannot map here and the file is read by copying.
 * @internal
 */
export function warnNoMap(why: string): void {
  if (mapWarned) return;
  mapWarned = true;
  const text = `npyts: mmap: ${why}; weight files are read by copying instead`;
  const proc = (globalThis as { process?: { emitWarning?: (text: string, options: { code: string }) => void } }).process;
  if (proc?.emitWarning) proc.emitWarning(text, { code: 'NPYTS_NO_MMAP' });
  else console.warn(text);
}

/**
 * Refuse an `mmap` option that is not one of numpy's modes (absent: no map).
 * @example
 * checkMapMode('w');   // throws NpyError BAD_OPTION
 */
export function checkMapMode(value: unknown): asserts value is MapMode | undefined {
  if (value === undefined || value === 'r' || value === 'r+' || value === 'c') return;
  const shown = typeof value === 'string' ? JSON.stringify(value) : typeof value;
  throw new NpyError('BAD_OPTION', `option mmap must be 'r', 'r+' or 'c' (numpy's mmap modes), not ${shown}`);
}

/**
 * Every option an entry takes, one `true` a key: built from its options type, so that a key the
 * type gains and the list lacks fails to compile. Keys beyond the type may be listed (an option
 * another entry of the same family reads).
 */
export type KnownKeys<T> = { readonly [K in keyof T]-?: true } & Readonly<Record<string, true>>;

/**
 * The option names of `keys` as a set, checked against `T` by the compiler (see {@link KnownKeys}).
 * @example
 * const SAVE_KEYS = knownKeys<SaveOptions>({ version: true, pickle: true, store: true, signal: true });
 */
export function knownKeys<T>(keys: KnownKeys<T>): ReadonlySet<string> {
  return new Set(Object.keys(keys));
}

/**
 * The one rule of options: refuse (`BAD_OPTION`) an options value that is not an object, and any
 * option `entry` does not know (own keys only, with a value: `{ x: undefined }` is no option),
 * naming it and what the entry takes, before anything is read or written.
 * @example
 * checkOptions('saveNpy', { stroe: s }, SAVE_KEYS);   // BAD_OPTION: saveNpy takes no option 'stroe'
 */
export function checkOptions(entry: string, options: unknown, known: ReadonlySet<string>): void {
  if (options === undefined || options === null) return;
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new NpyError('BAD_OPTION', `${entry}: options must be an object, not ${Array.isArray(options) ? 'an array' : typeof options}`);
  }
  for (const key of Object.keys(options)) {
    if (known.has(key) || (options as Record<string, unknown>)[key] === undefined) continue;
    const near = [...known].filter((k) => k.toLowerCase() === key.toLowerCase() || k.startsWith(key.slice(0, 3)));
    throw new NpyError(
      'BAD_OPTION',
      `${entry} takes no option '${key.slice(0, 100)}'${near.length ? ` (did you mean ${near.map((k) => `'${k}'`).join(' or ')}?)` : ''}; it takes ${[...known].sort().join(', ')}`,
    );
  }
}

/**
 * Only the options of `options` that one of `known` names: what a caller that takes a wider set of
 * options (an adapter's, which are its own and core's) hands to a core entry, which refuses the rest.
 * @example
 * await openWeights(source, pickOptions(adapterOptions, OPEN_WEIGHTS_KEYS));
 */
export function pickOptions<T extends object>(options: T, ...known: (ReadonlySet<string> | Readonly<Record<string, true>>)[]): Partial<T> {
  const out: Partial<T> = {};
  for (const [key, value] of Object.entries(options)) {
    if (known.some((k) => (k instanceof Set ? k.has(key) : Object.hasOwn(k, key)))) (out as Record<string, unknown>)[key] = value;
  }
  return out;
}
