/**
 * Sharded safetensors: a `*.safetensors.index.json` whose `weight_map` names, for each tensor, the
 * shard file that holds it (as transformers writes them). The shards' headers are read when the set
 * is opened; each tensor is read from its shard when asked for.
 */
import type { NdArray } from '../array/ndarray.js';
import { NpyError, unknownKey } from '../errors.js';
import type { DescrInput } from '../format/descr-types.js';
import { getEvery, mapInParallel, settleAll } from '../io/settle.js';
import type { Expecting } from '../npy.js';
import type { SafetensorsFile, TensorInfo, TensorReadOptions } from './file.js';
import { checkNoDuplicateKeys } from './strict-json.js';

/** Shards whose headers are read at once when a set is opened. */
const SHARDS_IN_FLIGHT = 4;

/** A sharded index's contents: its metadata, and which shard file holds each tensor. */
export interface ShardIndex {
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly weightMap: ReadonlyMap<string, string>;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Parse a sharded index (`model.safetensors.index.json`): `weight_map` of tensor name → shard file,
 * each shard a plain file name beside the index (no folders, no `..`: `UNSAFE_PATH`).
 * @example
 * const { weightMap } = parseShardIndex(bytes, 'model.safetensors.index.json');
 */
export function parseShardIndex(bytes: Uint8Array, name: string): ShardIndex {
  let parsed: unknown;
  try {
    const text = utf8.decode(bytes);
    checkNoDuplicateKeys(text);
    parsed = JSON.parse(text);
  } catch (e) {
    if (e instanceof NpyError) throw e;
    throw new NpyError('BAD_SAFETENSORS', `${name} is not a JSON index of safetensors shards (${(e as Error).message})`);
  }
  const map = (parsed as { weight_map?: unknown } | null)?.weight_map;
  if (map === null || typeof map !== 'object' || Array.isArray(map)) {
    throw new NpyError('BAD_SAFETENSORS', `${name} has no "weight_map" object naming the shard of each tensor`);
  }
  const weightMap = new Map<string, string>();
  for (const [tensor, file] of Object.entries(map as Record<string, unknown>)) {
    if (typeof file !== 'string') throw new NpyError('BAD_SAFETENSORS', `${name}: the shard of '${tensor}' is not a file name`);
    if (file === '' || file === '.' || file === '..' || /[/\\]/.test(file) || file.includes('\0')) {
      throw new NpyError('UNSAFE_PATH', `${name} names the shard '${file}' for '${tensor}'; a shard is a file beside the index, named without folders`);
    }
    weightMap.set(tensor, file);
  }
  const metadata = (parsed as { metadata?: unknown }).metadata;
  return { weightMap, metadata: metadata !== null && typeof metadata === 'object' && !Array.isArray(metadata) ? (metadata as Record<string, unknown>) : {} };
}

/**
 * The tensors of a sharded set, each read from its shard: the same reads as one {@link SafetensorsFile}.
 * @example
 * const set = await openWeights('model.safetensors.index.json');   // from @npyts/core/node
 */
export class ShardedSafetensors implements AsyncDisposable {
  private constructor(
    private readonly index: ShardIndex,
    private readonly shards: ReadonlyMap<string, SafetensorsFile>,
  ) {}

  /**
   * Open every shard the index names (headers only) with `openShard`, and check that each holds
   * the tensors the index says it does. A failure closes the shards opened.
   */
  static async open(
    index: ShardIndex,
    openShard: (file: string, signal?: AbortSignal) => Promise<SafetensorsFile>,
    signal?: AbortSignal,
  ): Promise<ShardedSafetensors> {
    const files = [...new Set(index.weightMap.values())];
    const opened: SafetensorsFile[] = [];
    try {
      const shards = await mapInParallel(files, SHARDS_IN_FLIGHT, async (file) => {
        const shard = await openShard(file, signal);
        opened.push(shard);
        return shard;
      });
      const byFile = new Map(files.map((f, i) => [f, shards[i]!]));
      for (const [tensor, file] of index.weightMap) {
        if (!byFile.get(file)!.has(tensor)) throw new NpyError('BAD_SAFETENSORS', `the index puts '${tensor}' in ${file}, which does not hold it`);
      }
      return new ShardedSafetensors(index, byFile);
    } catch (e) {
      // The first error is the one to report; a shard that fails to close as well adds nothing.
      await Promise.allSettled(opened.map((s) => s.close()));
      throw e;
    }
  }

  /** Tensor names in the index's order. */
  get names(): string[] {
    return [...this.index.weightMap.keys()];
  }

  /** The index's `metadata` (transformers writes `total_size`). */
  get metadata(): Readonly<Record<string, unknown>> {
    return this.index.metadata;
  }

  has(name: string): boolean {
    return this.index.weightMap.has(name);
  }

  /** The shard that holds a tensor. */
  shardOf(name: string): SafetensorsFile {
    const file = this.index.weightMap.get(name);
    if (file === undefined) throw unknownKey(name, this.names, 'the sharded set');
    return this.shards.get(file)!;
  }

  /** A tensor's dtype and shape, from its shard's header. */
  info(name: string): TensorInfo {
    return this.shardOf(name).info(name);
  }

  /** One tensor, read by range from its shard. */
  async get<const S extends DescrInput>(name: string, options: TensorReadOptions & Expecting<S>): Promise<NdArray<S>>;
  async get(name: string, options?: TensorReadOptions): Promise<NdArray>;
  async get(name: string, options: TensorReadOptions = {}): Promise<NdArray> {
    return this.shardOf(name).get(name, options);
  }

  /** Every tensor, by name in the index's order, a few read at once. */
  async getAll(options: { signal?: AbortSignal | undefined } = {}): Promise<Map<string, NdArray>> {
    return getEvery(this.names, SHARDS_IN_FLIGHT, (name) => this.get(name, options));
  }

  /** Close every shard. */
  async close(): Promise<void> {
    await settleAll([...this.shards.values()].map((s) => s.close()));
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
