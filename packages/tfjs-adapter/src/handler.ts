/**
 * A tfjs IOHandler over one .npz: `tf.loadLayersModel(npzHandler(...))`, `model.save(npzHandler(...))`,
 * `tf.loadGraphModel(npzHandler(...))`, and `npz://` URLs through tfjs's routers.
 *
 * Long because tfjs's IOHandler is one object with load and save, over three kinds of source and
 * both weight layouts; the layouts' rules are in pytorch.ts and assign.ts, the sources in sources.ts.
 */
import * as tf from '@tensorflow/tfjs-core';
import {
  NdArray,
  NpyError,
  familyOf,
  parseDescr,
  toOrder,
  weightsOfArchive,
  type DType,
  type NpzArchive,
  type NpzWriteOptions,
  type OnProgress,
  type WeightFile,
} from '@npyts/core';
import { MAX_JSON_DEPTH, knownKeys, mapInParallel, nestsDeeperThan, progressReporter, settleAll, type ProgressReporter } from '@npyts/core/plumbing';
import { stringArray, tensorDTypeOf, tensorValues, type ToTensorOptions, type WeightDType } from './tensors.js';
import { checkEntryOptions, isArchive, openArchive, writeArchive, type NpzSink, type NpzSource, type SourceOptions } from './sources.js';
import { arrayKeys, axesOf, type WeightKey, type WeightLike } from './weights.js';
import { namingWeight, planFrom, stepArray, stepBytes, type PlanStep } from './assign.js';
import { hasLayers, type LayersModelLike } from './layers.js';
import type { PlannedWeight, PytorchLayoutOptions } from './pytorch.js';

type Artifacts = tf.io.ModelArtifacts;
type Spec = tf.io.WeightsManifestEntry;

/**
 * The member holding the model's topology and metadata, unless options name another.
 * @example
 * JSON.parse(new TextDecoder().decode(decodeNpz(bytes).bytes(MODEL_JSON))).modelTopology;
 */
export const MODEL_JSON = 'model.json';

/** Something that gives a model's topology: a tfjs-layers model (its `toJSON`). */
export interface TopologySource {
  toJSON(unused?: null, returnString?: boolean): unknown;
}

/** Options of {@link npzHandler}. */
export interface NpzHandlerOptions extends SourceOptions, ToTensorOptions, PytorchLayoutOptions, Pick<NpzWriteOptions, 'compress' | 'level' | 'date'> {
  /**
   * The topology when the archive has no `model.json` (weights written by numpy): the JSON object
   * tfjs or Keras' `model.to_json()` gives, or a model to take it from. Wins over the archive's.
   * A model (rather than JSON) also lets every name and shape be checked before tfjs sees them.
   */
  modelTopology?: object | TopologySource;
  /**
   * How the archive holds the weights: `'tfjs'` (default) by tfjs's names, or `'pytorch'`, a PyTorch
   * state_dict mapped layer by layer (see {@link planWeights}); `'pytorch'` needs `modelTopology` to be
   * a model built in tfjs.
   */
  layout?: 'tfjs' | 'pytorch';
  /** The model's weight names → arrays in the archive, for archives written with other names (PyTorch's, say). */
  names?: Readonly<Record<string, WeightKey>>;
  /** Accept arrays no weight of the saved model uses (default: refuse; only checked when the archive lists its weights). */
  ignoreUnused?: boolean;
  /**
   * Hand the weights to tfjs as a stream, one member at a time (`getWeightStream`): a graph model's
   * weights are then never held twice. tfjs-layers does not read streams, so the default is to stream
   * only graph models (a `model.json` whose `format` is `graph-model`).
   */
  stream?: boolean;
  /** The name of the JSON member (default `model.json`). */
  metadataMember?: string;
  /**
   * Told as each weight's data is read: `{ bytes, total, tensor }`, never decreasing, ending at the
   * total (of a stream: as tfjs pulls it). `signal` aborts the load between and during reads.
   */
  onProgress?: OnProgress;
}

/** The options of {@link npzHandler} beside a source's. */
const NPZ_HANDLER_KEYS = knownKeys<Omit<NpzHandlerOptions, keyof SourceOptions>>({
  modelTopology: true,
  layout: true,
  names: true,
  ignoreUnused: true,
  stream: true,
  metadataMember: true,
  onProgress: true,
  float64: true,
  int64: true,
  epsilon: true,
  flattenLayout: true,
  compress: true,
  level: true,
  date: true,
});

/** The JSON member: what tfjs's model.json holds, with the weights listed instead of a manifest. */
interface ModelJson {
  modelTopology?: object;
  format?: string;
  generatedBy?: string;
  convertedBy?: string | null;
  trainingConfig?: tf.io.TrainingConfig;
  userDefinedMetadata?: Record<string, object>;
  signature?: object;
  modelInitializer?: object;
  initializerSignature?: object;
  /** Every weight of the saved model, in tfjs's order; the arrays are the members of the same names. */
  weightSpecs?: { name: string; shape: number[]; dtype: WeightDType; group?: tf.io.WeightGroup }[];
}

const METADATA_FIELDS = [
  'format',
  'generatedBy',
  'convertedBy',
  'trainingConfig',
  'userDefinedMetadata',
  'signature',
  'modelInitializer',
  'initializerSignature',
] as const;

const utf8 = new TextDecoder('utf-8', { fatal: true });

async function readModelJson(archive: NpzArchive, member: string): Promise<ModelJson> {
  if (!archive.entries.some((e) => e.name === member)) return {};
  const bad = (why: string): never => {
    throw new NpyError('BAD_MODEL', `${member}: ${why}`, { member });
  };
  let text = '';
  try {
    text = utf8.decode(await archive.bytes(member));
  } catch (e) {
    if (e instanceof NpyError) throw e;
    bad('is not UTF-8 text');
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    bad(`is not JSON: ${(e as Error).message}`);
  }
  return checkModelJson(json, bad);
}

/**
 * The shape of a model document, checked once before anything walks it: an object, nested at most
 * {@link MAX_JSON_DEPTH} deep (measured without recursion), whose `weightSpecs` is a list of
 * `{ name, shape, dtype }` and whose other fields have the types tfjs expects.
 */
function checkModelJson(json: unknown, bad: (why: string) => never): ModelJson {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) bad('is not a JSON object');
  if (nestsDeeperThan(json, MAX_JSON_DEPTH)) bad(`nests deeper than ${MAX_JSON_DEPTH} levels`);
  const doc = json as Record<string, unknown>;
  const isObject = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (doc.modelTopology !== undefined && !isObject(doc.modelTopology)) bad('modelTopology is not an object');
  for (const f of ['format', 'generatedBy'] as const) if (doc[f] !== undefined && typeof doc[f] !== 'string') bad(`${f} is not a string`);
  if (doc.convertedBy !== undefined && doc.convertedBy !== null && typeof doc.convertedBy !== 'string') bad('convertedBy is not a string or null');
  for (const f of ['trainingConfig', 'userDefinedMetadata', 'signature', 'modelInitializer', 'initializerSignature'] as const) {
    if (doc[f] !== undefined && !isObject(doc[f])) bad(`${f} is not an object`);
  }
  if (doc.weightSpecs !== undefined) {
    if (!Array.isArray(doc.weightSpecs)) bad('weightSpecs is not a list');
    (doc.weightSpecs as unknown[]).forEach((w, i) => {
      const at = `weightSpecs[${i}]`;
      if (!isObject(w)) bad(`${at} is not an object`);
      const spec = w as Record<string, unknown>;
      if (typeof spec.name !== 'string' || spec.name === '') bad(`${at} has no name`);
      if (!Array.isArray(spec.shape) || !spec.shape.every((d) => Number.isSafeInteger(d) && (d as number) >= 0))
        bad(`${at} (${String(spec.name)}): shape is not a list of non-negative integers`);
      if (!WEIGHT_DTYPES.includes(spec.dtype as WeightDType))
        bad(`${at} (${String(spec.name)}): dtype ${JSON.stringify(spec.dtype)} is none of ${WEIGHT_DTYPES.join(', ')}`);
      if (spec.group !== undefined && typeof spec.group !== 'string') bad(`${at} (${String(spec.name)}): group is not a string`);
    });
  }
  return doc as ModelJson;
}

/** The dtypes a tfjs weight spec may name. */
const WEIGHT_DTYPES: readonly WeightDType[] = ['float32', 'int32', 'bool', 'string', 'complex64'];

function topologyOf(given: NpzHandlerOptions['modelTopology']): object | undefined {
  if (given === undefined) return undefined;
  if (typeof (given as TopologySource).toJSON === 'function') return (given as TopologySource).toJSON(null, false) as object;
  return given;
}

/**
 * Names the topology gives weights: a layers model's layer names (Keras and tfjs name a weight
 * `layer/weight`), a graph model's node names (a weight is the constant node of its name).
 */
function weightNamesOf(topology: object): { layers: Set<string>; nodes: Set<string> } {
  const layers = new Set<string>();
  const nodes = new Set<string>();
  // Walked with a stack of its own, not recursion: a topology given by the caller may nest deep.
  const stack: unknown[] = [topology];
  while (stack.length) {
    const x = stack.pop();
    if (typeof x !== 'object' || x === null) continue;
    if (Array.isArray(x)) {
      for (const v of x) stack.push(v);
      continue;
    }
    const o = x as Record<string, unknown>;
    for (const item of Array.isArray(o.layers) ? o.layers : []) {
      const it = item as { name?: unknown; config?: { name?: unknown } };
      const name = it?.config?.name ?? it?.name;
      if (typeof name === 'string') layers.add(name);
    }
    for (const node of Array.isArray(o.node) ? o.node : [])
      if (typeof (node as { name?: unknown })?.name === 'string') nodes.add((node as { name: string }).name);
    for (const v of Object.values(o)) stack.push(v);
  }
  return { layers, nodes };
}

const topologyNames = new WeakMap<object, { layers: Set<string>; nodes: Set<string> }>();

/**
 * Whether an array of an archive without a weight list is one of the model's weights: its name is a
 * graph node's, or starts with a layer's name and `/`. Other arrays (test data, say) are not handed
 * to tfjs. A topology that names nothing takes every array.
 */
function isWeightOf(topology: object, key: string): boolean {
  let names = topologyNames.get(topology);
  if (!names) topologyNames.set(topology, (names = weightNamesOf(topology)));
  if (names.layers.size === 0 && names.nodes.size === 0) return true;
  if (names.nodes.has(key)) return true;
  for (let i = key.indexOf('/'); i > 0; i = key.indexOf('/', i + 1)) if (names.layers.has(key.slice(0, i))) return true;
  return false;
}

/** One weight as tfjs will ask for it: its spec, and where its values come from. */
export interface HandlerWeight {
  spec: Spec;
  step: PlannedWeight;
}

/** A float16 member travels as float16 with tfjs's dequantisation: half the bytes, exact values. */
function isHalf(dt: DType): boolean {
  return dt.realBytes === 2 && familyOf(dt) === 'float';
}

/**
 * The weights tfjs will receive, checked before any data is read, as {@link planWeights} checks them:
 * against the archive's own list when it has one (every missing, extra or mis-shaped weight reported
 * at once), else every array the topology names, each taken as it is.
 */
async function planByList(archive: NpzArchive, meta: ModelJson, topology: object, options: NpzHandlerOptions, metaMember: string): Promise<HandlerWeight[]> {
  const file = weightsOf(archive);
  const keyOf = (k: WeightKey): string => (typeof k === 'string' ? k : k.key);
  const mapped = new Map(Object.entries(options.names ?? {}));
  let wanted: WeightLike[] | undefined = meta.weightSpecs;
  if (!wanted) {
    // No list: the archive's arrays are the list, each weight shaped as its (mapped) array is.
    const mappedKeys = new Set([...mapped.values()].map(keyOf));
    const names = [...mapped.keys(), ...arrayKeys(archive, new Set([metaMember])).filter((k) => !mappedKeys.has(k) && isWeightOf(topology, k))];
    wanted = await settleAll(names.map(async (name) => ({ name, ...(await arrayAsStored(file, mapped.get(name) ?? name)) })));
  }
  const steps = await planFrom(wanted, file, {
    ...(options.names ? { names: options.names } : {}),
    ignoreUnused: !meta.weightSpecs || options.ignoreUnused === true,
    ignoreUnusedKeys: new Set([metaMember.replace(/\.npy$/, '')]),
  });
  const groups = new Map((meta.weightSpecs ?? []).map((s) => [s.name, s.group]));
  return handlerWeights(archive, steps, groups);
}

/**
 * The shape and tensor dtype of the array a key names, as a weight that takes it whole would have.
 * Where there is none (no such array, a dtype tfjs has not), planFrom finds and reports the same.
 */
async function arrayAsStored(file: WeightFile, key: WeightKey): Promise<{ shape: number[]; dtype: string }> {
  try {
    const info = await file.info(typeof key === 'string' ? key : key.key);
    const axes = axesOf(key, info.shape.length);
    return { shape: axes ? axes.map((a) => info.shape[a]!) : [...info.shape], dtype: tensorDTypeOf(info.dtype) };
  } catch {
    return { shape: [], dtype: '' };
  }
}

/** Each archive's arrays as a weight file, made once per archive. */
const weightFiles = new WeakMap<NpzArchive, WeightFile>();
function weightsOf(archive: NpzArchive): WeightFile {
  let file = weightFiles.get(archive);
  if (!file) weightFiles.set(archive, (file = weightsOfArchive(archive)));
  return file;
}

/**
 * The weights of a model given as the topology, planned as {@link planWeights} plans them: every
 * name and shape checked against the model before tfjs sees anything.
 */
async function planByModel(archive: NpzArchive, model: LayersModelLike, options: NpzHandlerOptions, metaMember: string): Promise<HandlerWeight[]> {
  const steps = await planFrom(model, weightsOf(archive), { ...options, ignoreUnusedKeys: new Set([metaMember.replace(/\.npy$/, '')]) });
  return handlerWeights(archive, steps);
}

/** Planned steps as tfjs's weight specs: float16 arrays travel as float16 unless summed or repeated. */
async function handlerWeights(archive: NpzArchive, steps: PlanStep[], groups?: ReadonlyMap<string, tf.io.WeightGroup | undefined>): Promise<HandlerWeight[]> {
  const plan: HandlerWeight[] = [];
  for (const { step } of steps) {
    const header = await archive.header(step.keys[0]!);
    const half = step.transform.kind !== 'sum' && step.transform.kind !== 'tile' && isHalf(header.dtype);
    const group = groups?.get(step.weight);
    plan.push({
      spec: {
        name: step.weight,
        shape: [...step.shape],
        dtype: tensorDTypeOf(header.dtype),
        ...(half ? { quantization: { dtype: 'float16' } } : {}),
        ...(group ? { group } : {}),
      },
      step,
    });
  }
  return plan;
}

/** How {@link npzHandler} reads the weights: progress told as each arrives, `signal` checked before each. */
interface Reading {
  report: ProgressReporter;
  sizes: ReadonlyMap<HandlerWeight, number>;
}

/** The progress of reading `plan` from `file` (no data read: the arrays' headers). */
async function readingOf(file: WeightFile, plan: readonly HandlerWeight[], onProgress: OnProgress | undefined): Promise<Reading> {
  const sizes = onProgress
    ? await stepBytes(
        file,
        plan.map((w) => w.step),
      )
    : [];
  const report = progressReporter(
    sizes.reduce((a, b) => a + b, 0),
    onProgress,
  );
  return { report, sizes: new Map(plan.map((w, i) => [w, sizes[i] ?? 0])) };
}

/** {@link weightBytes}, told to the load's progress; an error names the weight. */
async function readWeight(file: WeightFile, w: HandlerWeight, options: NpzHandlerOptions, reading: Reading): Promise<ArrayBuffer> {
  options.signal?.throwIfAborted();
  let bytes: ArrayBuffer;
  try {
    bytes = await weightBytes(file, w, options);
  } catch (e) {
    throw namingWeight(e, w.step);
  }
  reading.report.add(w.spec.name, reading.sizes.get(w) ?? 0);
  return bytes;
}

/** One weight's bytes as tfjs decodes them (little-endian, row-major), in a buffer of its own. */
export async function weightBytes(file: WeightFile, w: HandlerWeight, options: ToTensorOptions & { signal?: AbortSignal | undefined }): Promise<ArrayBuffer> {
  const array = await stepArray(file, w.step, options);
  if (w.spec.quantization) return ownBuffer(toOrder(array, 'C').data as Uint16Array); // float16 bits, row-major
  const v = tensorValues(array, options);
  if (v.dtype !== 'string') return ownBuffer(v.values);
  // tfjs's string encoding: each value as a little-endian uint32 byte count, then the bytes.
  const total = v.values.reduce((n, b) => n + 4 + b.length, 0);
  const out = new Uint8Array(total);
  const dv = new DataView(out.buffer);
  let at = 0;
  for (const b of v.values) {
    dv.setUint32(at, b.length, true);
    out.set(b, at + 4);
    at += 4 + b.length;
  }
  return out.buffer;
}

/** The view's bytes as an ArrayBuffer holding exactly them (tfjs takes whole buffers). */
function ownBuffer(view: ArrayBufferView): ArrayBuffer {
  const { buffer, byteOffset, byteLength } = view;
  if (byteOffset === 0 && byteLength === buffer.byteLength && buffer instanceof ArrayBuffer) return buffer;
  return new Uint8Array(buffer, byteOffset, byteLength).slice().buffer;
}

/**
 * tfjs's weight data read in order. A range inside one of its buffers is a view of it (no copy of the
 * weights on the way to the file); a range across two buffers is joined.
 */
class WeightReader {
  private readonly shards: ArrayBuffer[];
  private shard = 0;
  private at = 0;

  constructor(data: tf.io.WeightData | undefined) {
    this.shards = data === undefined ? [] : Array.isArray(data) ? data : [data];
  }

  /** The next n bytes. */
  bytes(n: number): Uint8Array {
    while (this.shard < this.shards.length && this.at === this.shards[this.shard]!.byteLength) {
      this.shard++;
      this.at = 0;
    }
    const current = this.shards[this.shard];
    if (current && this.at + n <= current.byteLength) {
      const view = new Uint8Array(current, this.at, n);
      this.at += n;
      return view;
    }
    // A length read from the data (a string's) is believed only as far as the data goes.
    const left = this.shards.slice(this.shard).reduce((k, b) => k + b.byteLength, 0) - this.at;
    if (n > left) throw new NpyError('TRUNCATED', `tfjs weight data ends ${n - left} bytes before the weights its specs list`);
    const out = new Uint8Array(n);
    for (let filled = 0; filled < n; ) {
      const s = this.shards[this.shard];
      if (!s) throw new NpyError('TRUNCATED', `tfjs weight data ends ${n - filled} bytes before the weights its specs list`);
      const k = Math.min(n - filled, s.byteLength - this.at);
      out.set(new Uint8Array(s, this.at, k), filled);
      filled += k;
      this.at += k;
      if (this.at === s.byteLength) {
        this.shard++;
        this.at = 0;
      }
    }
    return out;
  }

  /** The next n elements as a typed array: a view when aligned for its type, else a copy. */
  typed<T extends Float32Array | Int32Array | Uint16Array | Uint8Array>(
    Ctor: { new (b: ArrayBuffer, o: number, n: number): T; BYTES_PER_ELEMENT: number },
    n: number,
  ): T {
    const b = this.bytes(n * Ctor.BYTES_PER_ELEMENT);
    const bytes = b.byteOffset % Ctor.BYTES_PER_ELEMENT === 0 ? b : b.slice();
    return new Ctor(bytes.buffer as ArrayBuffer, bytes.byteOffset, n);
  }
}

/** tfjs's weight data and specs back as arrays (the inverse of what {@link npzHandler} loads). */
export function arraysOf(artifacts: Artifacts): Map<string, NdArray> {
  const specs = artifacts.weightSpecs ?? [];
  const data = new WeightReader(artifacts.weightData);
  const arrays = new Map<string, NdArray>();
  for (const spec of specs) {
    if (arrays.has(spec.name)) throw new NpyError('NAME_CLASH', `two weights named '${spec.name}'`);
    const n = spec.shape.reduce((a, b) => a * b, 1);
    const q = spec.quantization;
    let array: NdArray;
    if (spec.dtype === 'string') {
      const values: Uint8Array[] = [];
      for (let i = 0; i < n; i++) values.push(data.bytes(new DataView(data.bytes(4).slice().buffer).getUint32(0, true)).slice());
      array = stringArray(values, spec.shape);
    } else if (q?.dtype === 'float16') {
      array = new NdArray(parseDescr('<f2'), spec.shape, data.typed(Uint16Array, n));
    } else if (q) {
      // uint8/uint16 with scale and min: tfjs's affine dequantisation, in float32 as tfjs does it.
      const raw = q.dtype === 'uint8' ? data.typed(Uint8Array, n) : data.typed(Uint16Array, n);
      const out = new Float32Array(n);
      const scale = q.scale ?? 1;
      const min = q.min ?? 0;
      for (let i = 0; i < n; i++) out[i] = raw[i]! * scale + min;
      array =
        spec.dtype === 'int32' ? new NdArray(parseDescr('<i4'), spec.shape, Int32Array.from(out, Math.round)) : new NdArray(parseDescr('<f4'), spec.shape, out);
    } else {
      const descr = { float32: '<f4', int32: '<i4', bool: '|b1', complex64: '<c8' }[spec.dtype];
      const values =
        spec.dtype === 'bool'
          ? data.typed(Uint8Array, n)
          : spec.dtype === 'int32'
            ? data.typed(Int32Array, n)
            : data.typed(Float32Array, spec.dtype === 'complex64' ? 2 * n : n);
      array = new NdArray(parseDescr(descr), spec.shape, values);
    }
    arrays.set(spec.name, array);
  }
  return arrays;
}

/** The JSON member of a save: everything of tfjs's artifacts but the weight bytes. */
function modelJsonOf(artifacts: Artifacts): ModelJson {
  if (artifacts.modelTopology instanceof ArrayBuffer) {
    throw new NpyError('BAD_TARGET', 'a binary (GraphDef) topology cannot be saved in an .npz; save the model as JSON');
  }
  const json: ModelJson = {};
  if (artifacts.modelTopology !== undefined) json.modelTopology = artifacts.modelTopology;
  for (const field of METADATA_FIELDS) if (artifacts[field] !== undefined) (json as Record<string, unknown>)[field] = artifacts[field];
  json.weightSpecs = (artifacts.weightSpecs ?? []).map((s) => ({
    name: s.name,
    shape: s.shape,
    dtype: s.quantization?.dtype === 'float16' ? 'float32' : s.dtype,
    ...(s.group ? { group: s.group } : {}),
  }));
  return json;
}

/**
 * A tfjs `IOHandler` over one .npz. Loading reads a source (a path in Node, a URL, a `File`/`Blob`,
 * bytes); saving writes a path (Node) or hands the bytes to a function ({@link browserDownload} in a page).
 * Weights are members named as tfjs names them (`dense/kernel.npy`: `np.load(f)['dense/kernel']`) and the
 * topology, training config and the list of weights are a stored `model.json` member.
 * @example
 * await model.save(npzHandler('model.npz'));
 * const again = await tf.loadLayersModel(npzHandler('model.npz'));
 * const fromNumpy = await tf.loadLayersModel(npzHandler('weights.npz', { modelTopology: topologyJson }));
 */
export function npzHandler(target: NpzSource | NpzSink, options: NpzHandlerOptions = {}): tf.io.IOHandler {
  checkEntryOptions('npzHandler', options, NPZ_HANDLER_KEYS);
  const metaMember = options.metadataMember ?? MODEL_JSON;
  const describe = typeof target === 'string' || target instanceof URL ? String(target) : 'the archive';
  return {
    async load(): Promise<Artifacts> {
      if (typeof target === 'function')
        throw new NpyError('BAD_TARGET', 'this npzHandler only saves (its target is a function); load from a path, URL, Blob or bytes');
      const [archive, opened] = await openArchive(target, options);
      let keepOpen = false;
      try {
        const meta = await readModelJson(archive, metaMember);
        const modelTopology = topologyOf(options.modelTopology) ?? meta.modelTopology;
        if (options.layout === 'pytorch' && !hasLayers(options.modelTopology)) {
          throw new NpyError(
            'WEIGHT_MISMATCH',
            "npzHandler with layout 'pytorch' needs the tfjs model as modelTopology (a model built in code, whose layers are paired with the PyTorch modules), not JSON",
          );
        }
        if (modelTopology === undefined) {
          throw new NpyError(
            'BAD_MODEL',
            `${describe} has no ${metaMember} member with a model topology; pass { modelTopology } (a JSON object or a model), or build the model and use assignWeights(model, source)`,
          );
        }
        const plan = hasLayers(options.modelTopology)
          ? await planByModel(archive, options.modelTopology, options, metaMember)
          : await planByList(archive, meta, modelTopology, options, metaMember);
        const artifacts: Artifacts = { modelTopology, weightSpecs: plan.map((w) => w.spec) };
        for (const field of METADATA_FIELDS) if (meta[field] !== undefined) (artifacts as Record<string, unknown>)[field] = meta[field];
        if (options.stream ?? meta.format === 'graph-model') {
          // A memory archive stays usable; a file is opened again when tfjs asks for the stream.
          const reopen = opened && !(target instanceof Uint8Array || target instanceof ArrayBuffer || isArchive(target));
          keepOpen = !reopen && opened;
          const reading = await readingOf(weightsOf(archive), plan, options.onProgress);
          artifacts.getWeightStream = () => weightStream(reopen ? null : archive, target as NpzSource, plan, options, reading);
        } else {
          // A buffer per weight (tfjs takes a list of them as its weight data): never one of the whole model.
          // Two members at a time: one inflates (or is read) on libuv's threads while the other is checked.
          const reading = await readingOf(weightsOf(archive), plan, options.onProgress);
          artifacts.weightData = await mapInParallel(plan, 3, (w) => readWeight(weightsOf(archive), w, options, reading));
          reading.report.end();
        }
        return artifacts;
      } finally {
        if (opened && !keepOpen) await archive.close();
      }
    },
    async save(artifacts: Artifacts): Promise<tf.io.SaveResult> {
      if (typeof target !== 'function' && typeof target !== 'string') {
        throw new NpyError('BAD_TARGET', 'npzHandler saves to a path (Node) or a function receiving the bytes');
      }
      const json = JSON.stringify(modelJsonOf(artifacts));
      // onProgress tells a load's progress; a save's writer counts in its own terms.
      const { onProgress: _load, ...writing } = options;
      await writeArchive(target, arraysOf(artifacts), { ...writing, files: { [metaMember]: json } });
      return { modelArtifactsInfo: tf.io.getModelArtifactsInfoForJSON(artifacts) };
    },
  };
}

/** The weights one member at a time, each buffer exactly one weight's bytes (tfjs decodes as they arrive). */
function weightStream(
  archive: NpzArchive | null,
  source: NpzSource,
  plan: HandlerWeight[],
  options: NpzHandlerOptions,
  reading: Reading,
): ReadableStream<ArrayBuffer> {
  let open: NpzArchive | null = archive;
  let next = 0;
  const release = async (): Promise<void> => {
    if (open && open !== archive) await open.close();
    open = null;
  };
  return new ReadableStream<ArrayBuffer>(
    {
      async pull(controller) {
        try {
          open ??= (await openArchive(source, options))[0];
          if (next === plan.length) {
            await release();
            reading.report.end();
            controller.close();
            return;
          }
          controller.enqueue(await readWeight(weightsOf(open), plan[next++]!, options, reading));
        } catch (e) {
          await release();
          controller.error(e);
        }
      },
      async cancel() {
        await release();
      },
    },
    { highWaterMark: 0 },
  );
}

/**
 * `npz://` + a path or URL, for tfjs's routers.
 * @example
 * await model.save(`${NPZ_SCHEME}out/model.npz`);   // 'npz://out/model.npz'
 */
export const NPZ_SCHEME = 'npz://';

let routersRegistered = false;

/**
 * Let tfjs route `npz://` URLs to {@link npzHandler}: `npz://model.npz` (a path in Node, a URL
 * relative to the page in a browser), `npz://https://host/model.npz`. Done once when this package
 * is imported; calling it again does nothing.
 * @example
 * registerNpzRouters();
 * const model = await tf.loadLayersModel('npz://https://example.com/model.npz');
 */
export function registerNpzRouters(): void {
  if (routersRegistered) return;
  routersRegistered = true;
  // tfjs's routers answer null for URLs they do not take (its IORouter type omits the null).
  const route = ((url: string | string[], load?: tf.io.LoadOptions): tf.io.IOHandler | null => {
    if (typeof url !== 'string' || !url.startsWith(NPZ_SCHEME)) return null;
    const options: NpzHandlerOptions = {};
    if (load?.fetchFunc) options.fetch = load.fetchFunc as typeof fetch;
    if (load?.streamWeights !== undefined) options.stream = load.streamWeights;
    return npzHandler(url.slice(NPZ_SCHEME.length), options);
  }) as Parameters<typeof tf.io.registerLoadRouter>[0];
  tf.io.registerLoadRouter(route);
  tf.io.registerSaveRouter(route);
}
