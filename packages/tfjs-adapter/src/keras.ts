/**
 * Keras 3 models as tfjs models: `tf.loadLayersModel(kerasHandler('model.keras'))` builds the model from
 * Keras's config (keras-config.ts) and assigns every weight through Keras's records (keras-weights.ts).
 */
import * as tf from '@tensorflow/tfjs-core';
import { NpyError, type OnProgress, type OpenWeightsOptions, type WeightFile } from '@npyts/core';
import { knownKeys, mapInParallel } from '@npyts/core/plumbing';
import { planFrom, readAndAssign } from './assign.js';
import { kerasTopology, needsKerasLayers } from './keras-config.js';
import { kerasNames, SIZED_RESHAPE, trainingState, type KerasRecords } from './keras-weights.js';
import { hasLayers, type LayerLike, type LayersModelLike } from './layers.js';
import type { TensorShapes } from './keras-config-out.js';
import { checkEntryOptions, openWeightSource, type NpzSink, type NpzSource, type SourceOptions } from './sources.js';
import { saveKeras } from './keras-save.js';
import { kerasConfigOf, kerasMajorOf, kerasRecordsOf } from './keras-file.js';
import type { ToTensorOptions } from './tensors.js';
import { joinRepeatedInputs, registerRepeat, separateRepeatedInputs } from './keras-repeats.js';

/** Options of {@link kerasHandler}: where the file is read from, how its values become tensors, and progress. */
export interface KerasHandlerOptions extends SourceOptions, ToTensorOptions {
  /**
   * Map a file given by path (Node, with @npyts/native) instead of reading it, as `openWeights(path,
   * { mmap })`: a float32 or int32 weight stored as itself (Keras writes them so) becomes a tensor whose
   * values are a view of the map on tfjs's CPU backend (no copy at all; docs/larger-than-memory.md).
   */
  mmap?: OpenWeightsOptions['mmap'];
  /**
   * Told as each weight's data arrives: `{ bytes, total, tensor }`, never decreasing, ending at the
   * total. Nothing is assigned until every weight is read: a load aborted by `signal` leaves nothing.
   */
  onProgress?: OnProgress;
}

/** The options of {@link kerasHandler} beside a source's. */
const KERAS_HANDLER_KEYS = knownKeys<Omit<KerasHandlerOptions, keyof SourceOptions>>({ float64: true, int64: true, mmap: true, onProgress: true });

/** An opened Keras file: its model config, what it records of its layers, and its weights by path. */
interface KerasModelFile {
  /** The model config (`config.json`, or a legacy `.h5`'s `model_config`); null for a weights-only file. */
  readonly config: unknown;
  readonly records: KerasRecords;
  /** The weights by path (`layers/dense/vars/0`). */
  readonly weights: WeightFile;
  /** The Keras major version that wrote it (activations differ between 2 and 3). */
  readonly kerasMajor: 2 | 3;
}

/** An initializer as tfjs-layers holds one (only what is used here of it). */
interface InitializerLike {
  apply(shape: readonly number[], dtype?: tf.DataType): tf.Tensor;
  getClassName(): string;
  getConfig(): tf.serialization.ConfigDict;
}

/**
 * Stands in for every initializer of a model built from a Keras file: while {@link buildModel} builds
 * it, every weight is a view of one zero-filled buffer (grown by doubling to the largest weight's size,
 * never written, dropped after the build), so that no weight of the model is allocated, filled or paged
 * in before the file's values replace it (random and orthogonal fills of a large model cost seconds,
 * and even zeros cost a fresh buffer per weight). After the build it is the initializer the config
 * names, in what it makes and in how it is saved (`model.toJSON()` writes that initializer).
 */
class ShapeOnly extends tf.serialization.Serializable {
  static readonly className = 'NpytsShapeOnly';
  /** The shared zeros; concurrent builds may share it or each grow their own (all zeros either way). */
  static blank = new ArrayBuffer(0);
  /** Whether {@link buildModel} is building (tfjs's build is synchronous, so no other build sees it set). */
  static building = false;
  /**
   * The most values a weight of the model being built may have, and the file it must come from: set by
   * {@link buildModel} around tfjs's build (which is synchronous, so concurrent builds never see another's).
   */
  static limit: { values: number; where: string } | null = null;

  private readonly real: InitializerLike;

  constructor(config: { real?: { className?: unknown; config?: unknown } } = {}) {
    super();
    // The config's own initializer, made as tfjs's deserialization makes it (an unknown one refused as tfjs refuses it).
    const { className, config: args } = config.real ?? {};
    const classes = tf.serialization.SerializationMap.getMap().classNameMap;
    const entry = typeof className === 'string' && Object.hasOwn(classes, className) ? classes[className] : undefined;
    if (!entry) throw new NpyError('UNSUPPORTED_LAYER', `the model config names an initializer tfjs does not have: ${JSON.stringify(className)}`);
    const [cls, fromConfig] = entry;
    this.real = fromConfig(cls, (args ?? {}) as tf.serialization.ConfigDict) as unknown as InitializerLike;
  }

  apply(shape: readonly number[], dtype: tf.DataType = 'float32'): tf.Tensor {
    if (!ShapeOnly.building) return this.real.apply(shape, dtype);
    const size = shape.reduce((n, d) => n * d, 1);
    // A config may claim any size (Dense(units=2**53)); every weight must be one of the file's tensors,
    // so one larger than the largest of them is refused before anything is allocated for it.
    const limit = ShapeOnly.limit;
    if (limit !== null && !(size <= limit.values)) {
      throw new NpyError(
        'WEIGHT_MISMATCH',
        `${limit.where}: the model config makes a weight of shape [${shape.join(', ')}] (${size} values), larger than any tensor the file holds ` +
          `(the largest has ${limit.values}); the config's sizes (units, filters, input shapes) disagree with its weights`,
      );
    }
    const Values = dtype === 'float32' ? Float32Array : dtype === 'int32' ? Int32Array : dtype === 'bool' ? Uint8Array : null;
    if (Values === null) return tf.zeros([...shape], dtype);
    const bytes = size * Values.BYTES_PER_ELEMENT;
    // Doubling: a few buffers in all, at most twice the largest weight, however the weights come.
    if (ShapeOnly.blank.byteLength < bytes) ShapeOnly.blank = new ArrayBuffer(Math.max(bytes, 2 * ShapeOnly.blank.byteLength));
    return tf.tensor(new Values(ShapeOnly.blank, 0, size), [...shape], dtype);
  }

  override getClassName(): string {
    return this.real.getClassName();
  }

  override getConfig(): tf.serialization.ConfigDict {
    return this.real.getConfig();
  }
}
tf.serialization.registerClass(ShapeOnly);

/**
 * tfjs-layers 4.22's Reshape gives a -1 in its target no size when it infers the shapes after it (it counts
 * the batch's null as an unknown size), so a layer after it that needs that size (a Dense after a Reshape to
 * (-1,), a Flatten) cannot be built. The model built for the weights' shapes uses this Reshape, which sizes
 * the -1 from its input's known sizes as Keras does, and the topology tfjs loads is given those sizes
 * ({@link sizeReshapes}). Registered when the first Keras model is built (tfjs-layers is loaded then);
 * its class name, {@link SIZED_RESHAPE}, is Keras's Reshape to the pairing of weights (keras-weights.ts).
 */
function registerSizedReshape(): void {
  const classes = tf.serialization.SerializationMap.getMap().classNameMap as Record<string, [unknown, unknown] | undefined>;
  const Reshape = classes.Reshape?.[0] as (new (args: object) => { computeOutputShape(s: (number | null)[]): (number | null)[] }) | undefined;
  if (classes[SIZED_RESHAPE] || !Reshape) return;
  class SizedReshape extends Reshape {
    static readonly className = SIZED_RESHAPE;
    // Saved as the Reshape it is, its -1 sized by sizeReshapes (tfjs and Keras have no SizedReshape).
    getClassName(): string {
      return 'Reshape';
    }
    override computeOutputShape(shape: (number | null)[]): (number | null)[] {
      const self = this as unknown as { targetShape: (number | null)[]; fixUnknownDimension(i: number[], o: (number | null)[]): number[] };
      const known = shape.slice(1);
      if (known.some((d) => d === null)) return super.computeOutputShape(shape);
      return [shape[0] ?? null, ...self.fixUnknownDimension(known as number[], self.targetShape)];
    }
  }
  tf.serialization.registerClass(SizedReshape as unknown as tf.serialization.SerializableConstructor<tf.serialization.Serializable>);
}

/** A copy of a topology with every initializer {@link ShapeOnly}, and every Reshape one that sizes its -1 ({@link SIZED_RESHAPE}). */
function shapeOnly(topology: object): object {
  return JSON.parse(JSON.stringify(topology), (key, value: unknown) =>
    key.endsWith('_initializer') && value !== null && typeof value === 'object'
      ? { class_name: ShapeOnly.className, config: { real: value } }
      : key === 'class_name' && value === 'Reshape'
        ? SIZED_RESHAPE
        : value,
  ) as object;
}

/**
 * The Reshape layers of a model {@link buildModel} built given the sizes of their -1 that the build found,
 * so that the model saves (`toJSON`) as a Reshape tfjs and Keras build again with every size known; one
 * whose input has an unknown size keeps its -1 (sized as the model runs). The values are the same either
 * way: only what tfjs infers of the layers after it differs.
 */
function sizeReshapes(built: { readonly layers: readonly LayerLike[] }): void {
  for (const layer of built.layers) {
    if (hasLayers(layer)) sizeReshapes(layer);
    else if ((layer.constructor as { className?: unknown }).className === SIZED_RESHAPE) {
      const sized = layer as unknown as { outputShape: (number | null)[]; targetShape: (number | null)[] };
      const shape = sized.outputShape.slice(1);
      if (shape.every((d) => typeof d === 'number' && d > 0)) sized.targetShape = shape;
    }
  }
}

/**
 * The layers model tfjs builds from a topology, with no memory for its weights until they are assigned
 * (see {@link ShapeOnly}): the model a load hands to tfjs, or one built for its weights' and tensors'
 * shapes only (tfjs-layers, loaded only when a Keras model is).
 */
async function buildModel(topology: object, limit: typeof ShapeOnly.limit = null): Promise<LayersModelLike & { dispose(): unknown }> {
  let layers: typeof import('@tensorflow/tfjs-layers');
  try {
    layers = await import('@tensorflow/tfjs-layers');
  } catch {
    throw new NpyError('BAD_MODEL', 'loading a Keras model needs @tensorflow/tfjs-layers (npm install @tensorflow/tfjs-layers)');
  }
  registerSizedReshape();
  registerRepeat(layers);
  ShapeOnly.limit = limit;
  ShapeOnly.building = true;
  let built: ReturnType<typeof layers.models.modelFromJSON>;
  try {
    // modelFromJSON builds the model before its first await (it has no weights to fetch).
    built = layers.models.modelFromJSON({ modelTopology: shapeOnly(topology) as tf.io.ModelJSON['modelTopology'] & {} });
  } finally {
    ShapeOnly.limit = null;
    ShapeOnly.building = false;
  }
  try {
    return (await built) as unknown as LayersModelLike & { dispose(): unknown };
  } finally {
    ShapeOnly.blank = new ArrayBuffer(0);
  }
}

/**
 * Dispose of a model {@link buildModel} built, every weight with it: tfjs's dispose() keeps the weights of a
 * model nested in a Sequential after another layer (the call took a reference the outer model never gives back).
 */
function disposeBuilt(model: LayersModelLike & { dispose(): unknown }): void {
  const variables = model.weights.map((w) => (w as unknown as { val?: tf.Variable }).val);
  model.dispose();
  for (const v of variables) if (v && !v.isDisposed) v.dispose();
}

/**
 * The output shapes of a functional topology's layers, from the model tfjs builds of it:
 * Keras 3's config records each call argument's shape. A Sequential topology needs none.
 */
async function outputShapes(topology: unknown): Promise<TensorShapes> {
  const known = new Map<string, { shape: readonly (number | null)[]; dtype: string }>();
  const key = (layer: string, node: number, tensor: number): string => JSON.stringify([layer, node, tensor]);
  if (topology === null || typeof topology !== 'object' || (topology as { class_name?: unknown }).class_name === 'Sequential') return () => undefined;
  const model = await buildModel(topology);
  try {
    const walk = (layers: readonly LayerLike[]): void => {
      for (const layer of layers) {
        layer.inboundNodes.forEach((node, i) => {
          const outputs = (node as unknown as { outputTensors: readonly { shape: readonly (number | null)[]; dtype: string }[] }).outputTensors;
          outputs.forEach((t, j) => known.set(key(layer.name, i, j), { shape: [...t.shape], dtype: t.dtype }));
        });
        if (hasLayers(layer)) walk(layer.layers);
      }
    };
    walk(model.layers);
  } finally {
    disposeBuilt(model);
  }
  return (layer, node, tensor) => known.get(key(layer, node, tensor));
}

/**
 * A Keras config translated ({@link kerasTopology}), `@npyts/tfjs/keras-layers` imported first where
 * the config needs what it registers ({@link needsKerasLayers}: decided from the config, so that a model
 * needing it loads in one call and one that does not leaves tfjs's registry as it was, its GRU included).
 */
async function translated(config: unknown, where: string, kerasMajor: 2 | 3): Promise<ReturnType<typeof kerasTopology>> {
  if (needsKerasLayers(config, kerasMajor)) {
    try {
      await import('./keras-layers.js');
    } catch (e) {
      throw new NpyError('BAD_MODEL', `${where} needs @npyts/tfjs/keras-layers, which could not be loaded (${String(e)}); it needs @tensorflow/tfjs-layers`);
    }
  }
  return kerasTopology(config, where, kerasMajor);
}

/**
 * Models built and assigned by {@link kerasHandler}'s `load`, waiting for tfjs to take them: the
 * artifacts name one by number ({@link BuiltModel}). A model whose artifacts are dropped untaken is
 * disposed when they are collected, so that its weights are not held for ever.
 */
const waiting = new Map<number, LayersModelLike & { dispose(): unknown }>();
let lastId = 0;
const untaken = new FinalizationRegistry<number>((id) => {
  const model = waiting.get(id);
  waiting.delete(id);
  if (model) disposeBuilt(model);
});

/**
 * The topology of artifacts {@link kerasHandler} loads: tfjs's deserialization of it gives the model
 * `load` built and assigned (once; tfjs builds nothing again and copies no weight).
 */
class BuiltModel extends tf.serialization.Serializable {
  static readonly className = 'NpytsKerasModel';

  static override fromConfig<T extends tf.serialization.Serializable>(
    _cls: tf.serialization.SerializableConstructor<T>,
    config: tf.serialization.ConfigDict,
  ): T {
    const id = config.id;
    const model = typeof id === 'number' ? waiting.get(id) : undefined;
    if (!model) {
      throw new NpyError(
        'BAD_MODEL',
        "these artifacts of kerasHandler's load() hold a model that was already taken (or disposed); call tf.loadLayersModel(kerasHandler(source)) again for another",
      );
    }
    waiting.delete(id as number);
    return model as unknown as T;
  }

  override getConfig(): tf.serialization.ConfigDict {
    return {};
  }
}
tf.serialization.registerClass(BuiltModel);

/**
 * A Keras file's model as tfjs's artifacts: the topology translated (every unsupported layer refused at
 * once), the model built from it once, each weight paired through Keras's records and checked (names,
 * counts, shapes) against the built model's before the first byte of weight data is read, then every
 * weight read into one tensor of its own and assigned. tfjs's deserialization of the artifacts gives
 * that model ({@link BuiltModel}): no second build, no weight data handed over to be copied again.
 */
async function kerasArtifacts(file: KerasModelFile, where: string, options: KerasHandlerOptions = {}): Promise<tf.io.ModelArtifacts> {
  if (file.config === null || file.config === undefined) {
    throw new NpyError('BAD_MODEL', `${where} holds weights only (no model config); build the model in tfjs and use assignWeights(model, source)`);
  }
  const topology = separateRepeatedInputs((await translated(file.config, where, file.kerasMajor)).topology);
  // Every weight of the model is one of the file's tensors: none may be larger than the largest (the
  // tensors' headers, read when the file was opened; no data).
  const sizes = await mapInParallel([...file.weights.names], 8, async (name) => (await file.weights.info(name)).shape.reduce((n, d) => n * d, 1));
  const values = sizes.reduce((a, b) => Math.max(a, b), 0);
  const model = await buildModel(topology, { values, where });
  try {
    sizeReshapes(model);
    const names = kerasNames(model, file.records, where);
    const steps = await planFrom(model, file.weights, { names, ignoreUnusedKeys: trainingState(file.records) });
    // Neighbouring weights read together, each tensor a view of the read (not a read and a buffer of its own).
    file.weights.readAhead(steps.flatMap((s) => s.step.keys));
    await readAndAssign(steps, file.weights, options);
  } catch (e) {
    disposeBuilt(model);
    throw e;
  }
  const id = ++lastId;
  waiting.set(id, model);
  const artifacts: tf.io.ModelArtifacts = {
    modelTopology: { class_name: BuiltModel.className, config: { id } },
    format: 'layers-model',
    generatedBy: 'keras',
    convertedBy: 'npyts',
  };
  untaken.register(artifacts, id);
  return artifacts;
}

/**
 * A tfjs `IOHandler` over a Keras 3 model file: `tf.loadLayersModel(kerasHandler(source))` builds the
 * model from a `.keras` file or a legacy full-model `.h5` (Keras 2 or 3) and assigns every weight.
 * The source is a path (Node), a URL, a `Blob`/`File` or bytes. Layers, activations and options tfjs
 * cannot build are refused together (`UNSUPPORTED_LAYER`) before anything is built; weights are paired
 * through Keras's records and checked (`WEIGHT_MISMATCH`) before any is read. bfloat16 and float16
 * weights become float32 exactly. The model is built once, by `load()`, and each weight read into a
 * tensor of its own and assigned; the artifacts name that model, which `tf.loadLayersModel` takes as
 * it is (give them to it once). `onProgress` is told as the weights arrive; `signal` aborts the load.
 *
 * Saving (`model.save(kerasHandler('out.keras'))`) writes a `.keras` file Keras 3 loads with
 * `keras.saving.load_model`: to a path in Node (written beside it, then renamed over it), or to a
 * function given the file's bytes (`browserDownload('model.keras')` in a page). A layer Keras 3 has no
 * class for is refused (`UNSUPPORTED_LAYER`, listing all of them) before anything is written.
 * @example
 * const model = await tf.loadLayersModel(kerasHandler('model.keras'));
 * const legacy = await tf.loadLayersModel(kerasHandler('https://example.com/model.h5'));
 * const mapped = await tf.loadLayersModel(kerasHandler('model.h5', { mmap: 'r', onProgress: ({ bytes, total }) => console.log(bytes / total) }));
 * await model.save(kerasHandler('out.keras'));
 */
export function kerasHandler(source: NpzSource | NpzSink, options: KerasHandlerOptions = {}): tf.io.IOHandler {
  checkEntryOptions('kerasHandler', options, KERAS_HANDLER_KEYS);
  const where =
    typeof source === 'string' || source instanceof URL ? String(source) : source instanceof Blob && 'name' in source ? String(source.name) : 'the Keras file';
  return {
    async load(): Promise<tf.io.ModelArtifacts> {
      if (typeof source === 'function')
        throw new NpyError('BAD_TARGET', 'this kerasHandler only saves (its target is a function); load from a path, URL, Blob or bytes');
      const [weights, opened] = await openWeightSource(source, options);
      try {
        const records = kerasRecordsOf(weights);
        if (!records) {
          throw new NpyError(
            'BAD_MODEL',
            `${where} is a ${weights.format} file, not a Keras model (.keras or a full-model .h5); load it with npzHandler or assignWeights`,
          );
        }
        return await kerasArtifacts({ config: kerasConfigOf(weights), records, weights, kerasMajor: kerasMajorOf(weights) }, where, options);
      } finally {
        if (opened) await weights.close();
      }
    },
    async save(artifacts: tf.io.ModelArtifacts): Promise<tf.io.SaveResult> {
      if (typeof source !== 'string' && typeof source !== 'function') {
        throw new NpyError('BAD_TARGET', 'kerasHandler saves to a path (Node) or a function receiving the bytes (browserDownload in a page)');
      }
      // As written in Keras: without the layers put in for a tensor given twice to one call (keras-repeats.ts).
      const asWritten = { ...artifacts, modelTopology: joinRepeatedInputs(artifacts.modelTopology) };
      await saveKeras(asWritten, source, where, await outputShapes(asWritten.modelTopology), options);
      return { modelArtifactsInfo: tf.io.getModelArtifactsInfoForJSON(artifacts) };
    },
  };
}
