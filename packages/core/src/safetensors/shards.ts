/**
 * Hugging Face's sharded .safetensors layout, as `huggingface_hub`'s `save_torch_state_dict` makes
 * it: tied tensors saved once (`_clean_state_dict_for_safetensors`), the rest split in insertion
 * order (`split_state_dict_into_shards_factory`), shards named `model-0000k-of-0000n.safetensors`
 * and an index written by Python's `json.dump(index, f, indent=2)`. Only the plan and the index's
 * bytes: the writing is the platform's (node/safetensors.ts).
 */
import { NpyError } from '../errors.js';

/** `huggingface_hub`'s `MAX_SHARD_SIZE`: what a shard size left out means. */
export const DEFAULT_MAX_SHARD_SIZE = '5GB';

/** `huggingface_hub`'s size units: decimal, as its `parse_size_to_int` reads them. */
const SIZE_UNITS: ReadonlyMap<string, number> = new Map([
  ['TB', 10 ** 12],
  ['GB', 10 ** 9],
  ['MB', 10 ** 6],
  ['KB', 10 ** 3],
]);

/**
 * A shard size in bytes: a whole number, or a string as `huggingface_hub`'s `parse_size_to_int`
 * reads it (`"5GB"`, `"500 MB"`, `"1.5gb"`: a decimal number, then TB, GB, MB or KB, 1000-based,
 * truncated to whole bytes). Refused: other units, negative or not finite sizes, and the spellings
 * Python's `float` takes that a size has no use for (`"inf"`, `"1_000MB"`).
 * @example
 * parseShardSize('5GB');   // 5000000000
 */
export function parseShardSize(size: number | string): number {
  if (typeof size === 'number') {
    if (!Number.isSafeInteger(size) || size < 0)
      throw new NpyError('BAD_OPTION', `maxShardSize must be a whole number of bytes or a string such as '5GB', not ${size}`);
    return size;
  }
  if (typeof size !== 'string') throw new NpyError('BAD_OPTION', `maxShardSize must be a number of bytes or a string such as '5GB', not ${typeof size}`);
  const text = size.trim();
  const unit = SIZE_UNITS.get(text.slice(-2).toUpperCase());
  if (unit === undefined)
    throw new NpyError('BAD_OPTION', `maxShardSize '${size}' has no unit huggingface_hub takes: end it with TB, GB, MB or KB (or give a number of bytes)`);
  const value = text.slice(0, -2).trim();
  if (!/^\+?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(value))
    throw new NpyError('BAD_OPTION', `maxShardSize '${size}' is not a size: a decimal number before its unit, such as '5GB' or '1.5 GB'`);
  // Python's int(value * multiplier): a double product, truncated.
  const bytes = Math.trunc(Number(value) * unit);
  if (!Number.isSafeInteger(bytes)) throw new NpyError('BAD_OPTION', `maxShardSize '${size}' is more bytes than a size can be`);
  return bytes;
}

/** One tensor to shard: its name, its bytes, and what its data is (equal `tie`s are one tensor stored under several names). */
export interface ShardEntry {
  readonly name: string;
  readonly bytes: number;
  /** Tensors with the same `tie` (by identity) hold the same data: it is written once. Absent: not tied. */
  readonly tie?: unknown;
}

/** Where each tensor goes: the files in order with their tensors, the tied names dropped, and the index (absent for one file). */
export interface ShardPlan {
  /** Each file's name (the pattern's) and its tensors, in the order they were given. */
  readonly files: readonly { readonly name: string; readonly tensors: readonly string[] }[];
  /** Tensor names not written because another name holds the same data: [dropped, kept], in `huggingface_hub`'s order. */
  readonly dropped: readonly (readonly [string, string])[];
  /** The sum of the written tensors' bytes (the index's `total_size`). */
  readonly totalSize: number;
  /** The index's name and bytes, where there is more than one file. */
  readonly index: { readonly name: string; readonly bytes: Uint8Array } | null;
  /** Each file's `__metadata__`: `{format: 'pt'}` for shards; with the caller's metadata and the dropped names for one file. */
  readonly fileMetadata: Record<string, string>;
}

/** Python's string order: by code point (JavaScript's `<` compares UTF-16 units, which differs past U+FFFF). */
export function compareCodePoints(a: string, b: string): number {
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done || y.done) return x.done && y.done ? 0 : x.done ? -1 : 1;
    const d = x.value.codePointAt(0)! - y.value.codePointAt(0)!;
    if (d !== 0) return d;
  }
}

/**
 * A JSON string as Python's `json.dumps` writes it with `ensure_ascii` (its default): every
 * character outside ' '..'~' escaped, `\n`, `\t` and the like by their short forms.
 */
export function pythonJsonString(s: string): string {
  return JSON.stringify(s).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * The split `save_torch_state_dict` makes of tensors given in order, with the file names of
 * `pattern` (`model.safetensors` is `{ prefix: 'model', suffix: '.safetensors' }`): tied names
 * dropped (the code-point-first name of each tie kept, the others recorded in the metadata as
 * `dropped: kept`), then a shard closed when the next tensor would take it past `maxShardSize`, and
 * a tensor larger than that alone in a shard of its own, numbered before the one still filling.
 * @example
 * const plan = planShards([{ name: 'a', bytes: 8 }, { name: 'b', bytes: 8 }], 10);
 * plan.files;   // [{ name: 'model-00001-of-00002.safetensors', tensors: ['a'] }, …]
 */
export function planShards(
  entries: readonly ShardEntry[],
  maxShardSize: number | string = DEFAULT_MAX_SHARD_SIZE,
  options: { pattern?: { prefix: string; suffix: string }; metadata?: Record<string, string> } = {},
): ShardPlan {
  const max = parseShardSize(maxShardSize);
  const { prefix, suffix } = options.pattern ?? { prefix: 'model', suffix: '.safetensors' };
  const metadata = new Map<string, string>(Object.entries(options.metadata ?? {}));
  // Ties, in the order of their first name (huggingface_hub's groups, whose sort leaves disjoint sets in place).
  const ties = new Map<unknown, string[]>();
  for (const e of entries) {
    if (e.tie === undefined) continue;
    const names = ties.get(e.tie);
    if (names) names.push(e.name);
    else ties.set(e.tie, [e.name]);
  }
  const dropped: [string, string][] = [];
  const gone = new Set<string>();
  for (const names of ties.values()) {
    if (names.length < 2) continue;
    const sorted = [...names].sort(compareCodePoints);
    const kept = sorted[0]!;
    for (const name of sorted.slice(1)) {
      dropped.push([name, kept]);
      gone.add(name);
      if (!metadata.has(name)) metadata.set(name, kept); // the caller's metadata is not overridden
    }
  }
  // split_state_dict_into_shards_factory, step by step.
  const shards: string[][] = [];
  let current: string[] = [];
  let currentSize = 0;
  let totalSize = 0;
  for (const e of entries) {
    if (gone.has(e.name)) continue;
    if (e.bytes > max) {
      totalSize += e.bytes;
      shards.push([e.name]);
      continue;
    }
    if (currentSize + e.bytes > max) {
      shards.push(current);
      current = [];
      currentSize = 0;
    }
    current.push(e.name);
    currentSize += e.bytes;
    totalSize += e.bytes;
  }
  if (current.length > 0) shards.push(current);
  if (shards.length === 0) throw new NpyError('BAD_OPTION', 'there are no tensors to save (huggingface_hub writes no file at all for an empty state dict)');
  const fileMetadata: Record<string, string> = { format: 'pt' };
  if (shards.length === 1) {
    for (const [k, v] of metadata) Object.defineProperty(fileMetadata, k, { value: v, enumerable: true, writable: true, configurable: true });
    return { files: [{ name: `${prefix}${suffix}`, tensors: shards[0]! }], dropped, totalSize, index: null, fileMetadata };
  }
  const n = String(shards.length).padStart(5, '0');
  const files = shards.map((tensors, i) => ({ name: `${prefix}-${String(i + 1).padStart(5, '0')}-of-${n}${suffix}`, tensors }));
  // json.dump({"metadata": {"total_size": …, **metadata}, "weight_map": …}, f, indent=2)
  const meta: string[] = [`    "total_size": ${metadata.has('total_size') ? pythonJsonString(metadata.get('total_size')!) : totalSize}`];
  for (const [k, v] of metadata) if (k !== 'total_size') meta.push(`    ${pythonJsonString(k)}: ${pythonJsonString(v)}`);
  const map: string[] = [];
  for (const f of files) for (const t of f.tensors) map.push(`    ${pythonJsonString(t)}: ${pythonJsonString(f.name)}`);
  const text = `{\n  "metadata": {\n${meta.join(',\n')}\n  },\n  "weight_map": {\n${map.join(',\n')}\n  }\n}`;
  return { files, dropped, totalSize, index: { name: `${prefix}${suffix}.index.json`, bytes: new TextEncoder().encode(text) }, fileMetadata };
}

/** Whether a file name is one a save with `pattern` writes (a single file, a shard, the index): huggingface_hub removes these before it saves. */
export function isPatternFile(name: string, pattern: { prefix: string; suffix: string }): boolean {
  if (!name.startsWith(pattern.prefix)) return false;
  let rest = name.slice(pattern.prefix.length);
  const numbered = /^-\d{5}-of-\d{5}/.exec(rest);
  if (numbered) rest = rest.slice(numbered[0].length);
  if (!rest.startsWith(pattern.suffix)) return false;
  rest = rest.slice(pattern.suffix.length);
  return rest === '' || rest === '.index.json';
}
