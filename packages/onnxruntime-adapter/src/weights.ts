/** Weight files swapped into an exported ONNX model's initializers, by name, refusing what the exporter changed. */
import { NpyError, type OnProgress, type TensorInfo, type WeightFile, blobSource, shapeRepr } from '@npyts/core';
import { HTTP_KEYS, checkOptions, extentsOf, inNode, knownKeys, progressReporter, settleAll } from '@npyts/core/plumbing';
import {
  ModelProto,
  decodeModel,
  encodeModel,
  type GraphNode,
  type ModelMessage,
  fileSize,
  inlineExternalData,
  isPath,
  modelBytes,
  openInput,
  openMapped,
  type ModelInput,
  type OpenInputOptions,
  type WeightInput,
} from './model.js';

export type { WeightInput } from './model.js';

/** Options of {@link withWeights}. */
export interface WithWeightsOptions extends OpenInputOptions {
  /** Aborts the reads: no tensor is read after it, and `withWeights` rejects with its reason (an `AbortError`). */
  signal?: AbortSignal;
  /**
   * Copy every swapped value into the model (bytes that alone make a session, to send elsewhere),
   * instead of pointing initializers into a local weight file or at tensors handed to ORT as
   * external data in memory. Default false.
   */
  inline?: boolean;
  /**
   * Told the swapped tensors' bytes handled so far, of their total, as each tensor is pointed at or
   * read (`{ bytes, total, tensor }`): never going back, ending at the total.
   */
  onProgress?: OnProgress;
}

/** What one wasm32 memory can hold: onnxruntime-web's WebAssembly builds are 32-bit. */
const WASM32_BYTES = 2 ** 32;

const WITH_WEIGHTS_KEYS = knownKeys<WithWeightsOptions>({ ...HTTP_KEYS, store: true, inline: true, onProgress: true });

/** One external data file of {@link WithWeightsResult.externalData}: ORT's `ExternalDataFileDescription`. */
export interface ExternalDataFile {
  /**
   * The name the model's initializers give (their `location`): the weight file's name, a shard's (as
   * its index names it), or, for one tensor read into memory, a name made for it (`npyts-memory-3`).
   */
  path: string;
  /**
   * The file's absolute path, which onnxruntime-web reads in Node; the bytes of one tensor read into
   * memory; or, in a page, one tensor's slice of the weights' `Blob` (`File`), which onnxruntime-web
   * reads itself when it makes the session (nothing of it was read before).
   */
  data: string | Uint8Array | Blob;
}

/** One tensor read into memory, as onnxruntime-node's `externalData` takes it. */
export interface ExternalDataBytes {
  /** The name the model's initializer gives (its `location`). */
  path: string;
  /** The tensor's bytes, little-endian, as ORT reads them. */
  data: Uint8Array;
}

/**
 * Session options making onnxruntime-node find what the model points into: the weight files (a
 * file, or a sharded set's shards beside its index), and the tensors read into memory.
 */
export interface WeightSessionOptions {
  extra?: { session: { model_external_initializers_file_folder_path: string } };
  /** The tensors read into memory, each its own external data "file" (onnxruntime-node 1.20 and later). */
  externalData?: ExternalDataBytes[];
}

/** What {@link withWeights} made, and what it did with every name. */
export interface WithWeightsResult {
  /**
   * The model's bytes: swapped initializers point into the weight file (see `external`) or hold their
   * values (see `copied`). For `ort.InferenceSession.create(model, sessionOptions)`.
   */
  model: Uint8Array;
  /**
   * What onnxruntime-node needs to find the weight file (the folder it is in, a sharded set's index's
   * folder; empty when nothing points into it): `ort.InferenceSession.create(model, sessionOptions)`.
   */
  sessionOptions: WeightSessionOptions;
  /**
   * For onnxruntime-web: `{ externalData }`, one entry for each file pointed into (the weight file,
   * or each shard of a sharded set that holds a swapped tensor, by path: in Node only; it reads each
   * whole), and one for each tensor read into memory (its bytes); empty when nothing points out of the model.
   */
  externalData: ExternalDataFile[];
  /** Initializers whose values now come from the weight file. */
  replaced: string[];
  /**
   * Of `replaced`, those the model points at in the weight file, or in their shard of a sharded set
   * (ONNX external data), or, in a page, at their slice of the weights' `Blob` (in `externalData`):
   * none of their bytes was read.
   */
  external: string[];
  /**
   * Of `replaced`, those whose values were read (copied) from the file, each with why (its layout in
   * the file, or how the file was given): each is handed to ORT as external data in memory (in
   * `sessionOptions.externalData` and `externalData`), or with `{ inline: true }` held in the model's bytes.
   */
  copied: Record<string, string>;
  /** Initializers the file has no tensor for: they keep the exported values. */
  kept: string[];
  /** Tensors of the file that no initializer is named after. */
  unused: string[];
}

/** ONNX's TensorProto.DataType codes as numpy dtype names (npyts' `DType.name`). */
const ONNX_DTYPES: Record<number, string> = {
  1: 'float32',
  2: 'uint8',
  3: 'int8',
  4: 'uint16',
  5: 'int16',
  6: 'int32',
  7: 'int64',
  8: 'string',
  9: 'bool',
  10: 'float16',
  11: 'float64',
  12: 'uint32',
  13: 'uint64',
  14: 'complex64',
  15: 'complex128',
  16: 'bfloat16',
  17: 'float8_e4m3fn',
  18: 'float8_e4m3fnuz',
  19: 'float8_e5m2',
  20: 'float8_e5m2fnuz',
};

/** Names exporters make up: the dynamo exporter's `val_113`, the TorchScript exporter's `onnx::Conv_208`. */
const GENERATED = /^(_?val_\d+|onnx::|_v_\d+$|const_)|::/;
/** ONNX's floating-point TensorProto.DataType codes (float, float16, double, bfloat16). */
const FLOAT_TYPES = new Set([1, 10, 11, 16]);
/** A BatchNorm's buffers: present in a state_dict, absent from a graph that folded the BatchNorm away. */
const BATCHNORM_BUFFER = /(^|\.)(running_mean|running_var)$/;

const HOW_TO_EXPORT =
  'export for swapping without folding: torch.onnx.export(..., dynamo=False, do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE) for the TorchScript exporter (its eval mode fuses BatchNorm into Conv even without constant folding), ' +
  'or torch.onnx.export(..., dynamo=True, optimize=False) for the dynamo exporter';

interface Initializer {
  name: string;
  dims: (number | { toNumber(): number })[];
  data_type: number;
  raw_data?: Uint8Array;
  data_location?: number;
  external_data?: unknown[];
  [field: string]: unknown;
}

/** onnx.TensorProto, to copy an initializer. */
const TensorProto = ModelProto.root.lookupType('onnx.TensorProto');

const num = (v: number | { toNumber(): number }): number => (typeof v === 'number' ? v : v.toNumber());

/**
 * The model's initializers, matched by name, with their values from a `.safetensors`, `.pt` or `.npz`
 * file: a fine-tuned state_dict runs in an exported graph without Python. The result is a new
 * model's bytes for `ort.InferenceSession.create(model, sessionOptions)`.
 *
 * Given a local path (Node, with @npyts/native's memory maps), the swapped initializers point into
 * the weight file as ONNX external data (`external`): its offsets come from a read-only map and none
 * of the tensors' bytes is read, ORT reads them when it makes the session (keep the file unchanged
 * while sessions use it). Given a sharded set's index (`model.safetensors.index.json`,
 * `pytorch_model.bin.index.json`), each points into the shard that holds it (its `location` the
 * shard's name, which the set checked to be a file beside the index). A tensor whose bytes ORT cannot
 * take as they are (misaligned for its type, big-endian, a deflated `.npz` member) is read, and
 * `copied` says why for each. In a page, weights given as a `Blob` (a `File`) are not read: each
 * tensor stored as ORT reads it is handed to onnxruntime-web as its slice of the Blob (`externalData`,
 * listed in `external`), which ORT reads into its own memory when it makes the session. Weights given
 * as bytes, a URL (only the swapped tensors' bytes are fetched), a `Blob` in Node (onnxruntime-node
 * takes buffers, not Blobs), or a path where memory maps are unavailable, are read. A tensor read is
 * handed to ORT as external data in memory, its own buffer (`sessionOptions.externalData` for -node, `externalData` for -web): no
 * buffer of the whole model is built, and time and memory grow linearly with the weights; except
 * where other tensors point into a local file, as onnxruntime-node takes external data from files or
 * from buffers, not both: the few read are then held in the model's bytes. With
 * `{ inline: true }` every swapped tensor is copied into the model's bytes instead, which then make a
 * session alone (-node and -web; one more copy of every tensor). `onProgress` is told each tensor as
 * it is pointed at or read; `signal` aborts between tensors.
 *
 * Everything is checked before anything is built, and refused rather than run wrong:
 * - a tensor whose dtype (`DTYPE_MISMATCH`) or shape (`SHAPE_MISMATCH`) differs from its initializer's, naming it;
 * - a graph whose exporter changed the values under the names (`WEIGHT_MISMATCH`): BatchNorm folded into the
 *   convolution before it (the file's `running_mean`/`running_var` have no initializer), or file tensors left
 *   unused while the model has generated names (`val_113`, `onnx::Conv_208`) that hold renamed, transposed or
 *   folded copies of them. The message says how to export for swapping (`do_constant_folding=False` with
 *   `training=torch.onnx.TrainingMode.PRESERVE`, or `optimize=False`). Detection works from names; a file with only some of the weights of a folded model
 *   cannot be told apart.
 *
 * Names the TorchScript exporter merged (an initializer equal to another at export becomes `Identity` of it,
 * as two biases at their initial zeros do, or a fresh BatchNorm's `running_var` of its `weight`) get
 * their own initializers again where the file names them, so that each takes the file's tensor.
 *
 * Initializers the file lacks keep their exported values (`kept`); file tensors no initializer is
 * named after are listed (`unused`). Only the main graph's initializers are swapped. The model is
 * bytes, a path (Node) or a URL; kept initializers an exporter stored beside the model (the dynamo
 * exporter's `model.onnx.data`) are read into the result from beside its path or URL, and refused
 * (`BAD_MODEL`) when the model is given as bytes.
 * @example
 * const { model, sessionOptions, copied } = await withWeights('mlp.onnx', 'finetuned.safetensors');
 * const session = await ort.InferenceSession.create(model, sessionOptions);
 */
export async function withWeights(model: ModelInput, weights: WeightInput, options: WithWeightsOptions = {}): Promise<WithWeightsResult> {
  checkOptions('withWeights', options, WITH_WEIGHTS_KEYS);
  const message = decodeModel(await modelBytes(model, options));
  // A local file is mapped, so that the swapped initializers can point into it unread.
  let local: { path: string; size: number } | null = null;
  let whyInline = 'the weights were not given as a local path';
  let file: WeightFile;
  let owned = true;
  if (options.inline === true) {
    whyInline = '{ inline: true } was asked';
    [file, owned] = await openInput(weights, options);
  } else if (options.store === undefined && isPath(weights)) {
    const mapped = await openMapped(weights, options);
    file = mapped.file;
    if (mapped.unmapped === undefined) local = { path: absolute(weights), size: mapped.size };
    else whyInline = mapped.unmapped;
  } else {
    [file, owned] = await openInput(weights, options);
  }
  try {
    splitMerged(message, file);
    const initializers = (message.graph?.initializer ?? []) as Initializer[];
    const byName = new Map(initializers.map((t) => [t.name, t]));
    const matched = initializers.filter((t) => file.has(t.name));
    const kept = initializers.filter((t) => !file.has(t.name)).map((t) => t.name);
    const unused = file.names.filter((n) => !byName.has(n));

    const folded = unused.filter((n) => BATCHNORM_BUFFER.test(n));
    if (folded.length > 0) {
      throw new NpyError(
        'WEIGHT_MISMATCH',
        `refusing to swap weights by name: the model has no initializer for the BatchNorm statistics ${list(folded)}: the exporter folded the BatchNorm into the layer before it, so that layer's values under its name are not the file's; ${HOW_TO_EXPORT}`,
      );
    }
    const renamed = await renamedPairs(initializers, file, unused, options);
    if (renamed.length > 0) {
      throw new NpyError(
        'WEIGHT_MISMATCH',
        `refusing to swap weights by name: the file's ${list(renamed.map(([f]) => f))} match no initializer while the model holds exporter-generated floating-point initializers of their size (${list(renamed.map(([, m]) => m))}): the exporter renamed, transposed or folded weights; ${HOW_TO_EXPORT}`,
      );
    }

    const infos = await settleAll(matched.map((t) => file.info(t.name, options)));
    const wrongType: string[] = [];
    const wrongShape: string[] = [];
    matched.forEach((t, i) => {
      const { dtype, shape } = infos[i]!;
      const want = ONNX_DTYPES[t.data_type] ?? `ONNX type ${t.data_type}`;
      const dims = t.dims.map(num);
      if (dtype.name !== want || want === 'string') wrongType.push(`${t.name} (model ${want}, file ${dtype.name})`);
      else if (shapeRepr(shape) !== shapeRepr(dims)) wrongShape.push(`${t.name} (model ${shapeRepr(dims)}, file ${shapeRepr(shape)})`);
    });
    if (wrongType.length > 0) {
      throw new NpyError(
        'DTYPE_MISMATCH',
        `initializers whose file tensor has another dtype: ${wrongType.join(', ')}; cast the state_dict (or export the model) to match`,
      );
    }
    if (wrongShape.length > 0) {
      throw new NpyError('SHAPE_MISMATCH', `initializers whose file tensor has another shape: ${wrongShape.join(', ')}; the file is not this model's`);
    }
    // In a page, ONNX Runtime is onnxruntime-web's WebAssembly build, whose memory (wasm32) holds at
    // most 4 GiB: a session of more weights cannot be made there, so say so before a byte is read.
    if (!inNode()) {
      const bytes = infos.reduce((n, { dtype, shape }) => n + shape.reduce((a, d) => a * d, dtype.itemsize), 0);
      if (bytes > WASM32_BYTES) {
        throw new NpyError(
          'TOO_LARGE',
          `the model's weights are ${(bytes / 2 ** 30).toFixed(2)} GiB: onnxruntime-web's WebAssembly memory (wasm32) holds at most 4 GiB, weights and working memory together, so no session of them can be made in a page; run it with onnxruntime-node, or quantize the weights`,
        );
      }
    }

    // Where a tensor's bytes in a local file are what ORT reads (little-endian, aligned, stored), the
    // initializer points at them; the others are copied, each with why, and handed to ORT as external
    // data in memory, one buffer per tensor: no buffer of the whole model is ever built (encoding
    // them into the model's bytes, `inline`, costs a second copy of every one).
    const spans = new Map<string, Span>();
    // In a page, a Blob's (a File's) tensors that ORT reads as they lie are handed to it as slices of
    // the Blob, unread: onnxruntime-web reads each into its own memory when it makes the session, so
    // no second copy of the weights is held here. onnxruntime-node takes buffers, not Blobs ("must
    // have an 'data' property of type buffer or typed array"), so in Node they are read.
    const slices = !inNode() && options.inline !== true && weights instanceof Blob ? await blobSlices(weights, matched, infos, options) : null;
    const copied = new Map<string, string>();
    const inMemory = new Map<string, Uint8Array>();
    const shardSizes = new Map<string, Promise<number>>();
    const sizes = infos.map(({ dtype, shape }) => shape.reduce((a, b) => a * b, dtype.itemsize));
    const report = progressReporter(
      sizes.reduce((a, b) => a + b, 0),
      options.onProgress,
    );
    for (const [i, t] of matched.entries()) {
      options.signal?.throwIfAborted();
      const slice = slices?.get(t.name) ?? whyInline;
      const span = local === null ? slice : await spanInFile(file, t.name, local, shardSizes, options);
      if (span instanceof Blob) {
        setRaw(t, new Uint8Array(0));
      } else if (typeof span === 'string') {
        copied.set(t.name, span);
        const bytes = bytesOf((await file.get(t.name, options)).data);
        inMemory.set(t.name, bytes);
        setRaw(t, new Uint8Array(0));
      } else {
        spans.set(t.name, span);
        setRaw(t, new Uint8Array(0));
      }
      report.add(t.name, sizes[i]!);
    }
    options.signal?.throwIfAborted();
    // Kept initializers the exporter wrote beside the model (the dynamo exporter's model.onnx.data)
    // are read into the new bytes; from bytes this is BAD_MODEL.
    await inlineExternalData(message, model, options);
    for (const t of matched) {
      const span = spans.get(t.name);
      if (span !== undefined) setExternal(t, span.location, span.offset, span.length);
    }
    // Every file pointed into is in one folder: the weight file's, or the sharded set's index's.
    const folder = local === null ? '' : folderOf(local.path);
    const locations = [...new Set([...spans.values()].map((s) => s.location))].sort();
    // Each tensor read is its own external data buffer, under a name no file pointed into has. Not
    // where the model also points into files: onnxruntime-node then looks every external initializer
    // up in the buffers given and finds no file ("not found from the table user provided"), so those
    // few (a file's misaligned or big-endian tensors) are held in the model's bytes; nor with `inline`.
    const intoModel = options.inline === true || spans.size > 0;
    let prefix = 'npyts-memory-';
    while (locations.some((l) => l.startsWith(prefix))) prefix = `_${prefix}`;
    const memory: ExternalDataBytes[] = [];
    const inPage: ExternalDataFile[] = [];
    for (const t of matched) {
      const slice = slices?.get(t.name);
      if (slice instanceof Blob) {
        const path = `${prefix}${inPage.length}`;
        setExternal(t, path, 0, slice.size);
        inPage.push({ path, data: slice });
        continue;
      }
      const bytes = inMemory.get(t.name);
      if (bytes === undefined) continue;
      if (intoModel || bytes.byteLength === 0) {
        setRaw(t, bytes);
        continue;
      }
      const path = `${prefix}${inPage.length}`;
      setExternal(t, path, 0, bytes.byteLength);
      memory.push({ path, data: bytes });
      inPage.push({ path, data: bytes });
    }
    const sessionOptions: WeightSessionOptions = {};
    if (spans.size > 0) sessionOptions.extra = { session: { model_external_initializers_file_folder_path: folder } };
    if (memory.length > 0) sessionOptions.externalData = memory;
    const encoded = encodeModel(message);
    report.end();
    return {
      model: encoded,
      sessionOptions,
      externalData: [...locations.map((location) => ({ path: location, data: folder + location })), ...inPage],
      replaced: matched.map((t) => t.name),
      external: matched.filter((t) => spans.has(t.name) || slices?.get(t.name) instanceof Blob).map((t) => t.name),
      copied: Object.fromEntries(copied),
      kept,
      unused,
    };
  } finally {
    if (owned) await file.close();
  }
}

/** Where an initializer's bytes are: `length` bytes at `offset` of the file `location`, named relative to the weights' folder. */
interface Span {
  location: string;
  offset: number;
  length: number;
}

/**
 * A tensor's bytes in the mapped file (a sharded set's: in its shard, which `info().shard` names),
 * or why they are not what ORT reads: `get` over a map gives a view of the file exactly where the
 * bytes have the tensor's layout (`info().copied` says why not).
 */
async function spanInFile(
  file: WeightFile,
  name: string,
  local: { path: string; size: number },
  shardSizes: Map<string, Promise<number>>,
  options: WithWeightsOptions,
): Promise<Span | string> {
  const { copied, shard } = await file.info(name, options);
  if (copied !== undefined) return shard === undefined ? copied : `in ${shard}, ${copied}`;
  const data = (await file.get(name, options)).data as ArrayBufferView;
  if (data.byteLength === 0) return 'it holds no bytes';
  // A shard's name is the set's, checked by the project's rule for siblings when the set was
  // opened (a plain file name beside the index: no folder, `..`, scheme or link out of it).
  const location = shard ?? baseName(local.path);
  let size = local.size;
  if (shard !== undefined) {
    if (!shardSizes.has(shard)) shardSizes.set(shard, fileSize(folderOf(local.path) + shard));
    size = await shardSizes.get(shard)!;
  }
  // A view of the map is over the whole file it maps.
  if (data.buffer.byteLength !== size) return `it was read as a copy, not as a view of ${shard ?? 'the file'}'s map`;
  return { location, offset: data.byteOffset, length: data.byteLength };
}

/**
 * Each tensor's slice of a Blob where its bytes are what ORT reads (little-endian, C order, stored:
 * `extentsOf`, which reference sets are made by), or why it is read instead. A file whose tensors
 * cannot be found in place (a deflated `.npz`, a checkpoint's strided views) has every tensor read.
 */
async function blobSlices(
  blob: Blob,
  matched: readonly Initializer[],
  infos: readonly TensorInfo[],
  options: WithWeightsOptions,
): Promise<Map<string, Blob | string>> {
  const out = new Map<string, Blob | string>();
  let extents: Awaited<ReturnType<typeof extentsOf>>;
  try {
    extents = await extentsOf(blobSource(blob), 'array', null, options.signal);
  } catch (e) {
    if (!(e instanceof NpyError)) throw e;
    for (const t of matched) out.set(t.name, `its bytes in the Blob are not as ORT reads them (${e.message})`);
    return out;
  }
  const byName = new Map(extents.map((x) => [x.name, x]));
  matched.forEach((t, i) => {
    const x = byName.get(t.name);
    const { dtype, shape } = infos[i]!;
    const length = shape.reduce((a, b) => a * b, dtype.itemsize);
    if (x === undefined || shapeRepr(x.shape) !== shapeRepr(shape) || x.dtype.itemsize !== dtype.itemsize)
      out.set(t.name, 'it has no extent of its own in the Blob');
    else if (x.dtype.str.startsWith('>')) out.set(t.name, 'it is big-endian in the Blob');
    else if ((x.fortranOrder || x.order !== undefined) && shape.filter((d) => d > 1).length > 1) out.set(t.name, 'it is not in C order in the Blob');
    else if (length === 0) out.set(t.name, 'it holds no bytes');
    else if (x.offset + length > blob.size) out.set(t.name, 'its bytes end past the Blob');
    else out.set(t.name, blob.slice(x.offset, x.offset + length));
  });
  return out;
}

const baseName = (path: string): string => path.replace(/^.*[/\\]/, '');
const folderOf = (path: string): string => path.slice(0, path.length - baseName(path).length) || '.';

/** The path made absolute against the working directory (Node), `.` and `..` resolved, so that a session finds it from anywhere. */
function absolute(path: string): string {
  const given = /^([/\\]|[A-Za-z]:)/.test(path) ? path : `${(globalThis as { process?: { cwd(): string } }).process!.cwd()}/${path}`;
  const parts: string[] = [];
  for (const part of given.split(/[/\\]+/)) {
    if (part === '..') parts.pop();
    else if (part !== '.' && part !== '') parts.push(part);
  }
  return /^[A-Za-z]:$/.test(parts[0] ?? '') ? parts.join('/') : `/${parts.join('/')}`;
}

/**
 * Unused file tensors paired with an exporter-generated floating-point initializer of as many
 * elements (a Linear's weight stored transposed as `val_113`, a folded convolution as `onnx::Conv_208`).
 * BatchNorm's step counter (`num_batches_tracked`) is never in a graph and is not counted.
 */
async function renamedPairs(
  initializers: readonly Initializer[],
  file: WeightFile,
  unused: readonly string[],
  options: WithWeightsOptions,
): Promise<[string, string][]> {
  const generated = initializers.filter((t) => GENERATED.test(t.name) && FLOAT_TYPES.has(t.data_type));
  if (generated.length === 0) return [];
  const sizes = new Map(generated.map((t) => [t.dims.map(num).reduce((a, b) => a * b, 1), t.name]));
  const pairs: [string, string][] = [];
  for (const name of unused) {
    if (name.endsWith('num_batches_tracked')) continue;
    const { shape } = await file.info(name, options);
    const match = sizes.get(shape.reduce((a, b) => a * b, 1));
    if (match !== undefined) pairs.push([name, match]);
  }
  return pairs;
}

function bytesOf(data: unknown): Uint8Array {
  const d = data as ArrayBufferView;
  return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
}

/**
 * The TorchScript exporter merges initializers that are equal when it runs (two biases still at their
 * initial zeros, a fresh BatchNorm's running_var and weight): it keeps one, and each other becomes
 * `Identity(kept one)` whose output carries that other's PyTorch name. Where the file names either,
 * each merged name gets its own initializer again, a copy of the kept one's exported values under
 * its name, and its Identity goes, so that the nodes that read the name read that initializer: the
 * file's tensors are then swapped in one by one, equal or not, and a name the file lacks keeps the
 * exported value. Splitting whether or not the file's values differ means no tensor is read to
 * decide (a local file's stay unread, pointed at; a remote one's are fetched once) and every
 * PyTorch name is listed in `replaced` or `kept`.
 *
 * An Identity whose output has an exporter-generated name (`onnx::…`) is not a PyTorch tensor of its
 * own: it is left reading the kept initializer, and refused (`WEIGHT_MISMATCH`) where the file
 * swaps the kept one without naming it, as the value under the generated name cannot be told.
 */
function splitMerged(message: ModelMessage, file: WeightFile): void {
  const graph = message.graph;
  if (graph === undefined) return;
  const initializers = (graph.initializer ?? []) as Initializer[];
  const byName = new Map(initializers.map((t) => [t.name, t]));
  const split = new Set<GraphNode>();
  for (const node of graph.node ?? []) {
    const source = node.input[0];
    const n = node.output[0];
    if (node.op_type !== 'Identity' || source === undefined || n === undefined || !byName.has(source) || byName.has(n)) continue;
    if (file.has(n) || (file.has(source) && !GENERATED.test(n))) {
      const copy = TensorProto.decode(TensorProto.encode(byName.get(source)!).finish()) as unknown as Initializer;
      copy.name = n;
      initializers.push(copy);
      split.add(node);
    } else if (file.has(source)) {
      throw new NpyError(
        'WEIGHT_MISMATCH',
        `refusing to swap weights by name: in the model ${n}, a name the exporter made up, is an alias of the initializer ${source}, and the file has ${source} but no ${n}: whether ${n} is ${source} itself (to take its new value) or a tensor merged with it (to keep the exported one) cannot be told; save the values ${n} should hold under that name in the file`,
      );
    }
  }
  if (split.size === 0) return;
  graph.initializer = initializers;
  graph.node = graph.node!.filter((node) => !split.has(node));
}

/** Store the values inline as raw little-endian bytes, clearing every other place a TensorProto can hold them. */
function setRaw(t: Initializer, bytes: Uint8Array): void {
  for (const field of ['float_data', 'int32_data', 'string_data', 'int64_data', 'double_data', 'uint64_data', 'external_data']) t[field] = [];
  t.data_location = 0;
  t.raw_data = bytes;
}

/** Point the values at `length` bytes at `offset` of the file `location` beside the model (ONNX external data). */
function setExternal(t: Initializer, location: string, offset: number, length: number): void {
  setRaw(t, new Uint8Array(0));
  delete t.raw_data;
  t.data_location = 1;
  t.external_data = [
    { key: 'location', value: location },
    { key: 'offset', value: String(offset) },
    { key: 'length', value: String(length) },
  ];
}

function list(names: readonly string[]): string {
  const shown = names.slice(0, 6).join(', ');
  return names.length > 6 ? `${shown} and ${names.length - 6} more` : shown;
}
