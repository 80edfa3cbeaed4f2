/**
 * Sharded sets: an index (`model.safetensors.index.json`, or transformers' `pytorch_model.bin.index.json`)
 * whose `weight_map` names, for each tensor, the shard file that holds it. Each shard is found
 * through the set's {@link Place}, opened by the format its bytes say (a `.safetensors` file, a
 * `torch.save` file, …) when a call first needs it, and checked to hold what the index says.
 */
import type { NdArray } from '../array/ndarray.js';
import { NpyError, unknownKey, withWhere } from '../errors.js';
import type { DescrInput } from '../format/descr-types.js';
import type { ByteSource } from '../io/byte-source.js';
import { openingOver } from '../io/open.js';
import { getEvery, settleAll } from '../io/settle.js';
import type { Expecting } from '../npy.js';
import { checkNoDuplicateKeys } from '../safetensors/strict-json.js';
import type { Place, SiblingOptions } from './place.js';
import { checkKey, checkSiblingName, openKey } from '../store/key.js';
import type { GetAllReadOptions, TensorFile, TensorInfo, TensorReadOptions } from './tensor-file.js';

/** Shards read at once by getAll. */
const SHARDS_IN_FLIGHT = 4;

/** A sharded index's contents: its metadata, and which shard file holds each tensor. */
export interface ShardIndex {
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly weightMap: ReadonlyMap<string, string>;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Parse a sharded index (`model.safetensors.index.json`, `pytorch_model.bin.index.json`):
 * `weight_map` of tensor name → shard file, each shard a plain file name beside the index (no
 * folders, no `..`, no scheme, nor these percent-encoded: `UNSAFE_PATH`).
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
    throw new NpyError('BAD_SAFETENSORS', `${name} is not a JSON index of shards (${(e as Error).message})`);
  }
  const map = (parsed as { weight_map?: unknown } | null)?.weight_map;
  if (map === null || typeof map !== 'object' || Array.isArray(map)) {
    throw new NpyError('BAD_SAFETENSORS', `${name} has no "weight_map" object naming the shard of each tensor`);
  }
  const weightMap = new Map<string, string>();
  for (const [tensor, file] of Object.entries(map as Record<string, unknown>)) {
    if (typeof file !== 'string') throw new NpyError('BAD_SAFETENSORS', `${name}: the shard of '${tensor}' is not a file name`);
    checkSiblingName(file, `the shard of '${tensor}'`, name, true);
    weightMap.set(tensor, file);
  }
  const metadata = (parsed as { metadata?: unknown }).metadata;
  return { weightMap, metadata: metadata !== null && typeof metadata === 'object' && !Array.isArray(metadata) ? (metadata as Record<string, unknown>) : {} };
}

/** Opens a shard's bytes as a tensor file of whatever format they are (the format list's `openTensorFile`). */
export type OpenShard = (source: ByteSource, options: SiblingOptions) => Promise<TensorFile>;

/**
 * The tensors of a sharded set, each read from its shard. Opening the set makes no request of any
 * shard (each shard's name is checked against the place first); a call opens the shards it needs
 * (their headers), once, and checks that each holds the tensors the index puts in it.
 * @example
 * const set = await openWeights('model.safetensors.index.json');   // from @npyts/core/node
 */
export class ShardedWeights implements TensorFile, AsyncDisposable {
  /** Shards opened, or being opened, by file name. */
  private readonly shards = new Map<string, Promise<TensorFile>>();
  private closed = false;

  private constructor(
    private readonly index: ShardIndex,
    private readonly place: Place,
    private readonly openShard: OpenShard,
    private readonly options: SiblingOptions,
  ) {}

  /**
   * A set over `index`, its shards found through `place`: every shard name is checked now (before
   * any request), no shard is read yet.
   */
  static open(index: ShardIndex, place: Place, openShard: OpenShard, options: SiblingOptions = {}): ShardedWeights {
    for (const [tensor, file] of index.weightMap) checkKey(place, file, `the shard of '${tensor}'`, true);
    return new ShardedWeights(index, place, openShard, options);
  }

  /** `'safetensors-sharded'` where every shard is named `.safetensors`, else `'sharded'` (each shard is told by its bytes). */
  get format(): string {
    return [...this.index.weightMap.values()].every((f) => f.endsWith('.safetensors')) ? 'safetensors-sharded' : 'sharded';
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

  /** The shard that holds a tensor, opened (its header read) on first need. */
  async shardOf(name: string, signal?: AbortSignal): Promise<TensorFile> {
    const file = this.index.weightMap.get(name);
    if (file === undefined) throw unknownKey(name, this.names, 'the sharded set');
    if (this.closed) throw new NpyError('CLOSED', 'the sharded set is closed');
    let shard = this.shards.get(file);
    if (!shard) {
      shard = this.opening(file, signal);
      this.shards.set(file, shard);
      // A failed open (an abort, a network error) is tried again by the next call that needs it.
      shard.catch(() => {
        if (this.shards.get(file) === shard) this.shards.delete(file);
      });
    }
    return shard;
  }

  /** Open one shard and check it holds every tensor the index puts in it. */
  private async opening(file: string, signal?: AbortSignal): Promise<TensorFile> {
    const source = await openKey(this.place, file, { ...this.options, signal }, `'${file}'`, true);
    const shard = await openingOver(source, null, async () => {
      const opened = await this.openShard(source, { ...this.options, signal });
      try {
        const holds = new Set(opened.names);
        for (const [tensor, f] of this.index.weightMap) {
          if (f === file && !holds.has(tensor)) throw new NpyError('BAD_SAFETENSORS', `the index puts '${tensor}' in ${file}, which does not hold it`);
        }
      } catch (e) {
        await opened.close();
        throw e;
      }
      return opened;
    }).catch((e: unknown) => {
      throw withWhere(e, { file: source.name ?? file });
    });
    if (this.closed) {
      await shard.close();
      throw new NpyError('CLOSED', 'the sharded set is closed');
    }
    return shard;
  }

  /** A tensor's dtype and shape, from its shard's header (read when first needed), and which shard holds it (`shard`). */
  async info(name: string, options: { signal?: AbortSignal | undefined } = {}): Promise<TensorInfo> {
    const info = await (await this.shardOf(name, options.signal)).info(name, options);
    return { ...info, shard: this.index.weightMap.get(name)! };
  }

  /** One tensor, read from its shard: no other shard is read. */
  async get<const S extends DescrInput>(name: string, options: TensorReadOptions & Expecting<S>): Promise<NdArray<S>>;
  async get(name: string, options?: TensorReadOptions): Promise<NdArray>;
  async get(name: string, options: TensorReadOptions = {}): Promise<NdArray> {
    return (await this.shardOf(name, options.signal)).get(name, options);
  }

  /** Every tensor, by name in the index's order, a few read at once. */
  async getAll(options: GetAllReadOptions = {}): Promise<Map<string, NdArray>> {
    // Each tensor by get, so that one npyts cannot read does not hide the others (getEvery).
    return getEvery(this.names, SHARDS_IN_FLIGHT, (name) => this.get(name, { signal: options.signal }), options.onTensor);
  }

  /** Close every shard opened. */
  async close(): Promise<void> {
    this.closed = true;
    const opened = [...this.shards.values()];
    this.shards.clear();
    await settleAll(opened.map(async (s) => (await s.catch(() => null))?.close()));
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/**
 * @deprecated The sharded set of any shard format: {@link ShardedWeights}.
 * @example
 * const set = await openWeights('model.safetensors.index.json');   // a ShardedWeights behind a WeightFile
 */
export const ShardedSafetensors = ShardedWeights;
/** @deprecated {@link ShardedWeights}. */
export type ShardedSafetensors = ShardedWeights;
