/**
 * Saving .safetensors through a store, in every runtime: one file, or `huggingface_hub`'s sharded
 * layout (shards.ts plans it). The one way a save is written: Node's path saves with `maxShardSize`
 * are this over a folder store (node/place.ts), a page's are this over `opfsStore` or any
 * `WriteStore`. Tensors are held (arrays) or read one at a time (a weight file's `get`): only one
 * tensor's data is held while it is written. Written as steps (io/steps.ts) of which the only one is
 * `await`, where a store answers with a promise: a store that answers at once (Node's blocking
 * folder store) runs blocking.
 */
import type { NdArray } from '../array/ndarray.js';
import { allocateBuffer } from '../array/memory.js';
import { NpyError } from '../errors.js';
import { isPromise } from '../io/byte-source.js';
import { drive, driveSync, perform, unknownStep, type AwaitStep, type ControlStep, type Operation, type Step } from '../io/steps.js';
import { toNdArray } from '../npy.js';
import { checkKey } from '../store/key.js';
import type { StoreWriter, WriteStore } from '../store/types.js';
import { isTensorSource, type TensorFile } from '../weights/tensor-file.js';
import { checkTensorName, checkedBytes, safetensorsLayout, type SafetensorsEntry, type SafetensorsInput, type SafetensorsWriteOptions } from './encode.js';
import { isPatternFile, planShards, type ShardPlan } from './shards.js';

/**
 * Tensors read one at a time: a weight file from `openWeights` (any format), or anything with its
 * `names`, `info` and `get`. Only one tensor's data is held at a time while it is written.
 */
export type SafetensorsSource = Pick<TensorFile, 'names' | 'info' | 'get' | 'tieOf'>;

interface TensorEntry extends SafetensorsEntry {
  /** What its data is, for ties: equal keys are the same bytes. */
  readonly tie?: unknown;
}

/** Tensors to write: their names, dtypes and shapes now, their data when asked (held, or read from `lazy`). */
export interface Tensors {
  readonly entries: readonly TensorEntry[];
  readonly array: ((name: string) => NdArray) | null;
  readonly lazy?: SafetensorsSource;
  /** The one buffer a source's tensors are read into, each in turn (where its format copies them): see `TensorReadOptions.into`. */
  readonly into?: (bytes: number) => ArrayBufferLike;
}

/** A file name pattern of a sharded save: `model` and `.safetensors` for `model-00001-of-00002.safetensors`. */
export interface ShardPattern {
  readonly prefix: string;
  readonly suffix: string;
}

/** Whether tensors are a weight file read a tensor at a time (not arrays by name). */
export const isSource = (x: SafetensorsInput | SafetensorsSource): x is SafetensorsSource => isTensorSource(x);

/** The tensors to write: held arrays (two names whose data is the same bytes are tied), or a source's names, dtypes and shapes (its data read later). */
export async function tensorsOf(input: SafetensorsInput | SafetensorsSource, signal?: AbortSignal): Promise<Tensors> {
  if (!isSource(input)) return inMemory(input);
  const entries: TensorEntry[] = [];
  for (const name of input.names) {
    const info = await input.info(name, { signal });
    entries.push({ name, dtype: info.dtype, shape: info.shape, tie: input.tieOf?.(name) });
  }
  // One buffer for every tensor (grown where a later one is larger): a written tensor's memory is
  // reused at once, not left for the collector to free (which it does late for large buffers).
  let buffer: ArrayBufferLike | null = null;
  const into = (bytes: number): ArrayBufferLike => (buffer !== null && buffer.byteLength >= bytes ? buffer : (buffer = allocateBuffer(bytes)));
  return { entries, array: null, lazy: input, into };
}

/** Tensors held in memory; two names whose data is the same bytes (same buffer, offset, length, dtype, shape) are tied. */
export function inMemory(input: SafetensorsInput): Tensors {
  const arrays = new Map<string, NdArray>();
  const regions = new Map<ArrayBufferLike, Map<string, object>>();
  const entries = (input instanceof Map ? [...input.entries()] : Object.entries(input)).map(([name, value]): TensorEntry => {
    checkTensorName(name);
    const array = toNdArray(value);
    arrays.set(name, array);
    let tie: object | undefined;
    const data: unknown = array.data;
    if (ArrayBuffer.isView(data) && data.byteLength > 0) {
      const key = `${data.byteOffset}:${data.byteLength}:${array.dtype.str}:${array.order}:${array.shape.join(',')}`;
      let inBuffer = regions.get(data.buffer);
      if (!inBuffer) regions.set(data.buffer, (inBuffer = new Map()));
      tie = inBuffer.get(key);
      if (!tie) inBuffer.set(key, (tie = {}));
    }
    return { name, dtype: array.dtype, shape: array.shape, tie };
  });
  return { entries, array: (name) => arrays.get(name)! };
}

/**
 * The folder and file names of a sharded save: `DIR/NAME.safetensors` names its pattern (NAME in
 * place of `model`); any other target is the folder. `separators`: the characters that end a folder
 * name (`/` for a store's keys; a platform's path separators).
 */
export function shardTarget(target: string, separators = '/'): { folder: string; pattern: ShardPattern } {
  let cut = -1;
  for (const s of separators) cut = Math.max(cut, target.lastIndexOf(s));
  const file = target.slice(cut + 1);
  if (file.endsWith('.safetensors')) {
    // A folder of one separator is the root (`/model.safetensors`); none is the store's or the current folder.
    const folder = cut < 0 ? '' : target.slice(0, cut) || target.slice(0, cut + 1);
    return { folder, pattern: { prefix: file.slice(0, -'.safetensors'.length), suffix: '.safetensors' } };
  }
  return { folder: target, pattern: { prefix: 'model', suffix: '.safetensors' } };
}

/** The split of a sharded save, made (and its size option checked) before any folder or file is made. */
export function shardPlan(pattern: ShardPattern, tensors: Tensors, maxShardSize: number | string | undefined, options: SafetensorsWriteOptions): ShardPlan {
  return planShards(
    tensors.entries.map((e) => ({ name: e.name, bytes: e.shape.reduce((n, d) => n * d, e.dtype.itemsize), tie: e.tie })),
    maxShardSize,
    { pattern, ...(options.metadata ? { metadata: options.metadata } : {}) },
  );
}

/** The steps of a save through a store: an `await` where the store or a source answers with a promise, `committed`. */
export type SaveStep = ControlStep | AwaitStep;

/**
 * How a save's operation takes what a store or a source answers: waited for with an `await` step
 * (async), or as answered (blocking: held tensors, Node's blocking folder store).
 */
export interface Answers<S extends SaveStep> {
  /** What `ask` answers: asked only when the driver takes the step (so an abort before it asks nothing), a promise waited for. */
  settled<T>(ask: () => T | Promise<T>): Operation<T, S>;
  tensor(tensors: Tensors, name: string): Operation<NdArray, S>;
}

/** Answers waited for: a promise is an `await` step, a source's tensor read when the save reaches it. */
export const WAITED: Answers<SaveStep> = {
  *settled<T>(ask: () => T | Promise<T>): Operation<T, SaveStep> {
    // Asked inside the step: a store's work starts only once the driver performs it, and is awaited by it on every path.
    return yield* perform<AwaitStep<T>>({ op: 'await', value: async () => ask() });
  },
  *tensor(tensors, name) {
    if (tensors.array) return tensors.array(name);
    const { lazy, into } = tensors;
    return yield* perform<AwaitStep<NdArray>>({ op: 'await', value: (signal) => lazy!.get(name, { signal, into }) });
  },
};

/** Answers taken as given: held tensors, and a store that answers at once. */
export const AT_ONCE: Answers<ControlStep> = {
  *settled<T>(ask: () => T | Promise<T>): Operation<T, ControlStep> {
    const value = ask();
    if (isPromise(value)) {
      value.then(undefined, () => {}); // refused below: its own failure is not the one to report
      throw new NpyError('BAD_OPTION', 'a blocking save was given a store that answers with promises: use the async save');
    }
    return value;
  },
  // biome-ignore lint/correctness/useYield: held tensors are there already
  *tensor(tensors, name) {
    if (!tensors.array) throw new NpyError('BAD_OPTION', 'a blocking save was given a weight file read a tensor at a time: use the async save');
    return tensors.array(name);
  },
};

/** Writes of a file's bytes at positions, as steps: a store writer's, or a file's on disk (node/safetensors.ts). */
export type PutBytes<S extends Step = SaveStep> = (bytes: Uint8Array, at: number) => Operation<void, S>;

/**
 * How `names` of `tensors` are written as one .safetensors file (its header checked now, before any
 * file is made): the header, then each tensor's bytes, read (a source's) one at a time.
 * @internal
 */
export function fileWriter<S extends SaveStep>(
  tensors: Tensors,
  names: readonly string[],
  options: SafetensorsWriteOptions,
  answers: Answers<S>,
  signal?: AbortSignal,
): <P extends Step>(put: PutBytes<P>) => Operation<void, S | P> {
  const byName = new Map(tensors.entries.map((e) => [e.name, e]));
  const { header, order } = safetensorsLayout(
    names.map((n) => byName.get(n)!),
    options,
  );
  return function* <P extends Step>(put: PutBytes<P>): Operation<void, S | P> {
    signal?.throwIfAborted();
    yield* put(header, 0);
    let at = header.length;
    for (const t of order) {
      const array = yield* answers.tensor(tensors, t.name);
      const bytes = checkedBytes(array, t, byName.get(t.name));
      signal?.throwIfAborted();
      if (bytes.length) yield* put(bytes, at);
      at += bytes.length;
    }
  };
}

/** The {@link PutBytes} of a store's writer. */
const putTo =
  <S extends SaveStep>(writer: StoreWriter, answers: Answers<S>): PutBytes<S> =>
  (bytes, at) =>
    answers.settled(() => writer.write(bytes, at));

/** A file of a save: its key and how it is written. */
interface KeyWrite<S extends SaveStep> {
  readonly key: string;
  readonly write: (put: PutBytes<S>) => Operation<void, S>;
}

/**
 * Keys that change together (a sharded set's shards), each written beside its key and none
 * committed until all are complete: an error or an abort while they are written leaves every key
 * as it was. `beforeCommits` runs once all are written (a sharded set removes its old index there:
 * while the shards are committed there is no index, so a reader cannot take a half-committed set
 * for a whole one).
 */
function* writingKeys<S extends SaveStep>(
  store: WriteStore,
  files: readonly KeyWrite<S>[],
  answers: Answers<S>,
  signal?: AbortSignal,
  beforeCommits?: () => Operation<void, S>,
): Operation<void, S | ControlStep> {
  for (const f of files) checkKey(store, f.key, `'${f.key}'`);
  const writers: StoreWriter[] = [];
  let committed = 0;
  try {
    for (const f of files) {
      const writer = yield* answers.settled(() => store.create(f.key));
      writers.push(writer);
      yield* f.write(putTo(writer, answers));
    }
    signal?.throwIfAborted();
    if (beforeCommits) yield* beforeCommits();
    // From here on the save is made: an abort no longer stops it.
    yield { op: 'committed' };
    for (const w of writers) {
      yield* answers.settled(() => w.commit());
      committed++;
    }
  } catch (e) {
    for (const w of writers.slice(committed)) {
      try {
        yield* answers.settled(() => w.abort());
      } catch {
        /* aborting after a failure: the first error is the one to report */
      }
    }
    throw e;
  }
}

/** Options of a save through a store: the file's metadata, a shard size (sharded: see node/safetensors.ts), and `signal`. */
export interface StoreSafetensorsOptions extends SafetensorsWriteOptions {
  maxShardSize?: number | string | undefined;
  signal?: AbortSignal | undefined;
}

/**
 * Write `tensors` under `target` of `store`: one file at the key, or (`maxShardSize`) the sharded
 * layout of `huggingface_hub` in the folder `target` names (see {@link shardTarget}), every shard
 * written beside before any is committed, the old index removed first and the new one written last,
 * then an earlier save's files that this one does not replace removed. Everything is checked
 * (names, dtypes, the size) before any key is written.
 */
function* savingSafetensors<S extends SaveStep>(
  store: WriteStore,
  target: string,
  tensors: Tensors,
  options: StoreSafetensorsOptions,
  answers: Answers<S>,
): Operation<void, S | ControlStep> {
  const { signal, maxShardSize, ...fileOptions } = options;
  if (maxShardSize === undefined) {
    const write = fileWriter(
      tensors,
      tensors.entries.map((e) => e.name),
      fileOptions,
      answers,
      signal,
    );
    yield* writingKeys(store, [{ key: target, write }], answers, signal);
    return;
  }
  const { folder, pattern } = shardTarget(target);
  const plan = shardPlan(pattern, tensors, maxShardSize, fileOptions);
  const keyOf = (name: string): string => (folder === '' ? name : `${folder.replace(/\/$/, '')}/${name}`);
  const files = plan.files.map((f) => ({ key: keyOf(f.name), write: fileWriter<S>(tensors, f.tensors, { metadata: plan.fileMetadata }, answers, signal) }));
  const index = plan.index;
  const indexKey = keyOf(index?.name ?? `${pattern.prefix}${pattern.suffix}.index.json`);
  yield* writingKeys<S>(store, files, answers, signal, function* (): Operation<void, S> {
    yield* answers.settled(() => store.remove(indexKey));
  });
  const written = new Set(files.map((f) => f.key));
  if (index) {
    written.add(indexKey);
    yield* writingKeys(
      store,
      [
        {
          key: indexKey,
          write: (put) => put(index.bytes, 0),
        },
      ],
      answers,
    );
  }
  // An earlier save's files that this one does not replace (a stale index beside a single file, shards past the new count).
  const inFolder = keyOf('');
  for (const key of yield* answers.settled(() => store.list())) {
    if (written.has(key) || !key.startsWith(inFolder)) continue;
    const name = key.slice(inFolder.length);
    if (!name.includes('/') && isPatternFile(name, pattern)) yield* answers.settled(() => store.remove(key));
  }
}

/** The steps of a save through a store, performed: a promise waited for, the commit noted, work done at once. */
async function performSave(step: SaveStep, signal: AbortSignal | undefined): Promise<unknown> {
  return step.op === 'await' ? step.value(signal) : performControl(step);
}

/** The course of a save, blocking. */
function performControl(step: ControlStep): unknown {
  switch (step.op) {
    case 'committed':
      return;
    case 'compute':
      return step.work(step.bytes);
    default:
      throw unknownStep(step);
  }
}

/**
 * {@link savingSafetensors}, run: tensors held or a source read a tensor at a time.
 * @internal
 */
export async function saveSafetensorsTo(
  store: WriteStore,
  target: string,
  input: SafetensorsInput | SafetensorsSource,
  options: StoreSafetensorsOptions,
): Promise<void> {
  options.signal?.throwIfAborted();
  const tensors = await tensorsOf(input, options.signal);
  await drive(savingSafetensors(store, target, tensors, options, WAITED), performSave, options.signal);
}

/**
 * {@link savingSafetensors} of held tensors, blocking: the store must answer at once (Node's blocking folder store).
 * @internal
 */
export function saveSafetensorsToSync(store: WriteStore, target: string, input: SafetensorsInput, options: StoreSafetensorsOptions): void {
  driveSync(savingSafetensors(store, target, inMemory(input), options, AT_ONCE), performControl);
}
