/**
 * Keras 3's sharded weights (`model.save_weights('x.weights.json', max_shard_size=…)`): a JSON map
 * (`weight_map`: each `vars` group's HDF5 path, such as `/layers/dense/vars`, to the shard files that
 * hold its variables) beside `x_00000.weights.h5`, `x_00001.weights.h5`, …, each shard a
 * `.weights.h5` holding some of the groups. A group may be split over two shards, and its `name`
 * attribute is in the shard where the group was started.
 */
import type { NdArray } from '../array/ndarray.js';
import { NpyError, unknownKey, withWhere } from '../errors.js';
import type { DescrInput } from '../format/descr-types.js';
import { Hdf5File } from '../hdf5/file.js';
import { openingOver } from '../io/open.js';
import { getEvery, settleAll } from '../io/settle.js';
import type { Expecting } from '../npy.js';
import type { Place, SiblingOptions } from '../weights/place.js';
import { checkKey, openKey } from '../store/key.js';
import type { GetAllReadOptions, TensorFile, TensorInfo, TensorReadOptions } from '../weights/tensor-file.js';
import { type KerasMetadata, KerasFile } from './file.js';
import type { KerasShardMap } from './format.js';

/** Tensors read at once by getAll. */
const TENSORS_IN_FLIGHT = 4;

/** `a` before `b` in h5py's walk of one file: path components compared one by one. */
function byComponents(a: string, b: string): number {
  const x = a.split('/');
  const y = b.split('/');
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
  }
  return x.length - y.length;
}

/**
 * The weights of a Keras sharded set as one Keras file: every weight by its path (as in a
 * `.weights.h5`, in the order one file would list them) and each layer's name by its `vars` group.
 * Opening checks every shard name against the place before any request, then reads each shard's
 * HDF5 metadata (its groups and dataset headers, not its weights) and checks it holds only groups
 * the map puts in it, and that every group the map lists has variables in the shards it names;
 * `get` reads a weight's bytes from the one shard that holds it.
 * @example
 * const set = await openWeights('x.weights.json');   // from @npyts/core/node
 * await set.get('layers/dense/vars/0');
 */
export class KerasShardedWeights implements TensorFile, AsyncDisposable {
  /** `'keras'`: a Keras weights-only file, as a `.weights.h5` is. */
  readonly format = 'keras' as const;
  readonly names: readonly string[];
  /** No model config (a weights-only file); `layers` as for a `.weights.h5`; the map's `metadata` as `shardMap`. */
  readonly metadata: KerasMetadata & { readonly shardMap: Readonly<Record<string, unknown>> };
  private closed = false;

  private constructor(
    private readonly where: Map<string, KerasFile>,
    private readonly shards: readonly KerasFile[],
    layers: Record<string, string>,
    shardMap: Readonly<Record<string, unknown>>,
  ) {
    this.names = [...where.keys()].sort(byComponents);
    this.metadata = { config: null, metadata: null, layers, shardMap };
  }

  /**
   * The set over `map`, its shards found through `place` (every name checked first). `name` is the
   * map's file name, for messages.
   */
  static async open(map: KerasShardMap, place: Place, name: string, options: SiblingOptions = {}): Promise<KerasShardedWeights> {
    const files = [...new Set([...map.groups.values()].flat())];
    for (const f of files) checkKey(place, f, `a shard of ${name}`, true);
    const opened: KerasFile[] = [];
    try {
      for (const f of files) opened.push(await openShard(place, f, options));
      const where = new Map<string, KerasFile>();
      const layers: Record<string, string> = {};
      for (const [i, shard] of opened.entries()) {
        const file = files[i]!;
        for (const tensor of shard.names) {
          const group = tensor.slice(0, tensor.lastIndexOf('/'));
          if (!map.groups.get(group)?.includes(file)) {
            throw withWhere(new NpyError('BAD_KERAS', `${file} holds '${tensor}', but ${name} does not put its group '/${group}' in ${file}`), { file });
          }
          if (where.has(tensor)) throw withWhere(new NpyError('BAD_KERAS', `'${tensor}' is in two shards of ${name}`), { file });
          where.set(tensor, shard);
        }
        // A group split over shards has its `name` attribute only in the shard where it was started.
        for (const [g, layer] of Object.entries(shard.metadata.layers)) layers[g] ??= layer;
      }
      // Keras reads a group's variables from the shards the map names for it alone: a group whose shards
      // hold none would load as a layer with no variables, which Keras refuses ("expected 2 variables, but
      // received 0"), and the set would silently lack that layer's weights.
      const held = new Set([...where.keys()].map((t) => t.slice(0, t.lastIndexOf('/'))));
      for (const [group, shards] of map.groups) {
        if (held.has(group)) continue;
        const layer = group === 'vars' ? 'the model itself' : `layer group '/${group.slice(0, -'/vars'.length)}'`;
        throw withWhere(
          new NpyError(
            'BAD_KERAS',
            `${name} puts the variables of ${layer} ('/${group}') in ${shards.join(', ')}, which hold${shards.length === 1 ? 's' : ''} none of them: Keras would give that layer no variables, and refuses it; the map and its shards are not those Keras wrote together`,
          ),
          { file: name },
        );
      }
      return new KerasShardedWeights(where, opened, layers, map.metadata);
    } catch (e) {
      await settleAll(opened.map((s) => s.close()));
      throw e;
    }
  }

  has(name: string): boolean {
    return this.where.has(name);
  }

  /** A weight's dtype and shape, from its dataset's header (read when the set was opened). */
  info(name: string, options: { signal?: AbortSignal | undefined } = {}): TensorInfo {
    return this.shard(name).info(name, options);
  }

  /** One weight, read by range from the shard that holds it: no other shard is read. */
  async get<const S extends DescrInput>(name: string, options: TensorReadOptions & Expecting<S>): Promise<NdArray<S>>;
  async get(name: string, options?: TensorReadOptions): Promise<NdArray>;
  async get(name: string, options: TensorReadOptions = {}): Promise<NdArray> {
    if (this.closed) throw new NpyError('CLOSED', 'the Keras sharded set is closed');
    return this.shard(name).get(name, options);
  }

  /** Every weight by path, in {@link names}' order, a few read at once. */
  getAll({ signal, onTensor }: GetAllReadOptions = {}): Promise<Map<string, NdArray>> {
    return getEvery(this.names, TENSORS_IN_FLIGHT, (name) => this.get(name, { signal }), onTensor);
  }

  /** The name of the layer whose weights a weight is (its `vars` group's `name`), or null. */
  layerOf(name: string): string | null {
    this.shard(name);
    return this.metadata.layers[name.slice(0, name.lastIndexOf('/'))] ?? null;
  }

  /** Close every shard; later reads fail with CLOSED. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await settleAll(this.shards.map((s) => s.close()));
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  private shard(name: string): KerasFile {
    const s = this.where.get(name);
    if (!s) throw unknownKey(name, this.names, 'the Keras sharded set');
    return s;
  }
}

/** One shard, opened through the place as a `.weights.h5` (its metadata read, no weight). */
async function openShard(place: Place, file: string, options: SiblingOptions): Promise<KerasFile> {
  const source = await openKey(place, file, options, `'${file}'`, true);
  return openingOver(source, null, async () => {
    const hdf5 = await Hdf5File.open(source, options);
    const k = await KerasFile.fromHdf5(hdf5, undefined, options);
    if (k.format !== 'keras') throw new NpyError('BAD_KERAS', `${file} is an HDF5 file but not a Keras .weights.h5`);
    return k;
  }).catch((e: unknown) => {
    throw withWhere(e, { file: source.name ?? file });
  });
}
