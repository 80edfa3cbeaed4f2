/** What this package's functions share: ONNX's ModelProto through protobufjs, and the inputs they open. */
import protobuf from 'protobufjs/light.js';
import { NpyError, WeightFile, openWeights, type HttpOptions, type ReadStore } from '@npyts/core';
import { HTTP_KEYS, OPEN_WEIGHTS_KEYS, checkKey, inNode, namesFile, openKey, pickOptions, sourceOf } from '@npyts/core/plumbing';
import { urlStore } from '@npyts/core';
import { ONNX_SCHEMA } from './onnx-schema.js';

/** Where weights or a reference archive come from: a path (Node), a URL, bytes, a Blob, or a {@link WeightFile} already open (left open). */
export type WeightInput = string | URL | Uint8Array | ArrayBuffer | Blob | WeightFile;

/** Where an `.onnx` model comes from: a path (Node), a URL, or its bytes. */
export type ModelInput = string | URL | Uint8Array | ArrayBuffer;

const root = protobuf.Root.fromJSON(ONNX_SCHEMA as unknown as protobuf.INamespace);
/** onnx.ModelProto. @internal */
export const ModelProto = root.lookupType('onnx.ModelProto');

const GraphProto = root.lookupType('onnx.GraphProto');
const TensorProto = root.lookupType('onnx.TensorProto');

/** An initializer's raw_data at least this large is copied into the model's bytes by {@link encodeModel} itself. */
const LARGE_RAW = 1 << 16;

/** `n` (a length, below 2^53) as a protobuf varint. */
function varint(n: number): number[] {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
  return out;
}

/**
 * The model's bytes. protobufjs's writer grows its buffer by doubling and shifts each nested message
 * forward when it closes it, so encoding large initializers costs far more than linear time and
 * memory (1 GiB of raw_data: 97 s and a 4.1 GB peak; 256 MiB: 14 s). Here the initializers with large
 * raw_data are left out of what protobufjs encodes, and the graph field is written by hand around
 * them: every byte of them is copied once, into one buffer of the exact size. Fields are in another
 * order than protobufjs's (the graph last; its large initializers after the rest of it), which every
 * protobuf parser takes; a field is never split in two.
 * @internal
 */
export function encodeModel(message: ModelMessage): Uint8Array {
  const graph = message.graph;
  const initializers = (graph?.initializer ?? []) as { raw_data?: unknown }[];
  const large = initializers.filter((t) => t.raw_data instanceof Uint8Array && t.raw_data.byteLength >= LARGE_RAW);
  if (graph === undefined || large.length === 0) return ModelProto.encode(message).finish();
  const isLarge = new Set(large);
  const raws = large.map((t) => t.raw_data as Uint8Array);
  let rest: Uint8Array;
  let graphRest: Uint8Array;
  const tensors: Uint8Array[] = [];
  try {
    message.graph = undefined;
    rest = ModelProto.encode(message).finish();
    message.graph = graph;
    graph.initializer = initializers.filter((t) => !isLarge.has(t)) as typeof graph.initializer;
    graphRest = GraphProto.encode(graph).finish();
    for (const t of large) {
      delete t.raw_data;
      tensors.push(TensorProto.encode(t as protobuf.Message).finish());
    }
  } finally {
    message.graph = graph;
    if (graph) graph.initializer = initializers as typeof graph.initializer;
    large.forEach((t, i) => {
      t.raw_data = raws[i];
    });
  }
  // Each large initializer: GraphProto.initializer (field 5) holding the TensorProto's other fields
  // and its raw_data (field 9); the graph is ModelProto.graph (field 7). All length-delimited (wire type 2).
  const heads: number[][] = [];
  let graphLength = graphRest.byteLength;
  large.forEach((_, i) => {
    const raw = raws[i]!;
    const rawHead = [(9 << 3) | 2, ...varint(raw.byteLength)];
    const tensorLength = tensors[i]!.byteLength + rawHead.length + raw.byteLength;
    const head = [(5 << 3) | 2, ...varint(tensorLength)];
    heads.push(head, rawHead);
    graphLength += head.length + tensorLength;
  });
  const graphHead = [(7 << 3) | 2, ...varint(graphLength)];
  const out = new Uint8Array(rest.byteLength + graphHead.length + graphLength);
  let at = 0;
  const put = (bytes: ArrayLike<number>): void => {
    out.set(bytes, at);
    at += bytes.length;
  };
  put(rest);
  put(graphHead);
  put(graphRest);
  large.forEach((_, i) => {
    put(heads[2 * i]!);
    put(tensors[i]!);
    put(heads[2 * i + 1]!);
    put(raws[i]!);
  });
  return out;
}

/** A graph node as protobufjs decodes it. @internal */
export interface GraphNode {
  name: string;
  op_type: string;
  input: string[];
  output: string[];
  metadata_props?: { key: string; value: string }[];
}

/** A decoded model: the fields this package reads and edits. @internal */
export type ModelMessage = protobuf.Message & {
  graph?: {
    node?: GraphNode[];
    initializer?: { name: string; [field: string]: unknown }[];
    input?: { name: string }[];
    output?: { name: string; [field: string]: unknown }[];
  };
};

/** The model decoded, or BAD_MODEL. @internal */
export function decodeModel(bytes: Uint8Array): ModelMessage {
  try {
    return ModelProto.decode(bytes) as ModelMessage;
  } catch (e) {
    throw new NpyError('BAD_MODEL', `the model is not an ONNX ModelProto: ${(e as Error).message}`);
  }
}

/**
 * `@npyts/core/node`, loaded only when a path is used. The specifier is a variable so that browser
 * bundlers do not pull Node's file system into the page (as @npyts/tfjs does).
 */
async function nodeEntry(): Promise<typeof import('@npyts/core/node')> {
  const specifier = '@npyts/core/node';
  return (await import(/* @vite-ignore */ specifier)) as typeof import('@npyts/core/node');
}

/** A path when running in Node: a string that core's rule (`namesFile`) says names a file. @internal */
export const isPath = (input: unknown): input is string => typeof input === 'string' && inNode() && namesFile(input);

/** The options an input's opening takes: where it is (`store`) and how URLs are read. */
export interface OpenInputOptions extends HttpOptions {
  /** The store the inputs given as keys are in (the model's external data files are keys beside it). */
  store?: ReadStore | undefined;
}

/** The input opened as a weight file, and whether it was opened here (to be closed here). @internal */
export async function openInput(input: WeightInput, options: OpenInputOptions): Promise<[WeightFile, boolean]> {
  if (input instanceof WeightFile) return [input, false];
  // Only what openWeights takes (the entry checked the rest); where the bytes are is core's one rule,
  // with paths in Node, where its entry adds them.
  const open = inNode() ? (await nodeEntry()).openWeights : openWeights;
  return [await open(input, pickOptions(options, OPEN_WEIGHTS_KEYS)), true];
}

/**
 * A local weight file opened over a read-only memory map, so that a tensor stored with the layout it
 * has in memory is a view whose `byteOffset` is its place in the file and none of its bytes is read;
 * or, where maps cannot be made here, why not (the file is then opened by reading).
 * @internal
 */
export async function openMapped(path: string, options: HttpOptions): Promise<{ file: WeightFile; size: number; unmapped?: string }> {
  const node = await nodeEntry();
  const size = await fileSize(path);
  const map = node.nativeStatus().mmap;
  if (map?.available !== true)
    return {
      file: await node.openWeights(path, pickOptions(options, OPEN_WEIGHTS_KEYS)),
      size,
      unmapped: `memory maps are unavailable here (${map?.reason ?? 'no @npyts/native'})`,
    };
  return { file: await node.openWeights(path, { ...pickOptions(options, OPEN_WEIGHTS_KEYS), mmap: 'r' }), size };
}

/** A local file's size in bytes (Node). @internal */
export async function fileSize(path: string): Promise<number> {
  const source = (await nodeEntry()).fileSource(path);
  const size = source.size;
  source.close?.();
  return size;
}

/** A model's bytes: read from a path (Node) or URL, or the bytes given. @internal */
export async function modelBytes(model: ModelInput, options: OpenInputOptions = {}): Promise<Uint8Array> {
  if (model instanceof Uint8Array) return model;
  if (model instanceof ArrayBuffer) return new Uint8Array(model);
  // Core's one input rule: a key of `store`, a path (Node's entry, loaded here, adds paths), a URL.
  if (inNode()) await nodeEntry();
  const source = await sourceOf(model, pickOptions(options, HTTP_KEYS, { store: true }), 'the model');
  try {
    const bytes = await source.read(0, source.size);
    if (bytes.length !== source.size) throw new NpyError('TRUNCATED', `the model '${String(model)}' ends at byte ${bytes.length} of ${source.size}`);
    return bytes;
  } finally {
    await source.close?.();
  }
}

interface ExternalTensor {
  name: string;
  data_location?: number;
  external_data?: { key: string; value: string }[];
  raw_data?: Uint8Array;
  [field: string]: unknown;
}

/**
 * The initializers a model keeps in files beside it (the dynamo exporter writes `model.onnx.data`),
 * read into the model, so that its bytes alone make a session: files are found beside the model's
 * path or URL. A model given as bytes has nothing to find them beside: BAD_MODEL names the files.
 * @internal
 */
export async function inlineExternalData(message: ModelMessage, model: ModelInput, options: OpenInputOptions = {}): Promise<void> {
  const external = ((message.graph?.initializer ?? []) as ExternalTensor[]).filter((t) => t.data_location === 1);
  if (external.length === 0) return;
  const field = (t: ExternalTensor, key: string): string | undefined => t.external_data?.find((e) => e.key === key)?.value;
  if (typeof model !== 'string' && !(model instanceof URL)) {
    const files = [...new Set(external.map((t) => field(t, 'location')))].join(', ');
    throw new NpyError('BAD_MODEL', `the model keeps initializers in ${files} beside it; pass the model's path or URL so that they can be read`);
  }
  // Each file beside the model is opened once, and its name is checked by the project's one rule for
  // siblings (no scheme, no other origin, nothing outside the model's folder) before any read: a
  // model's `location` must never send the user's headers elsewhere.
  const opened = new Map<string, { read(offset: number, length: number): Uint8Array | Promise<Uint8Array>; size: number; close?(): unknown }>();
  try {
    for (const t of external) {
      const location = field(t, 'location') ?? '';
      const what = `initializer ${t.name}'s external data`;
      let source = opened.get(location);
      if (source === undefined) {
        // The places sharded sets use: a folder (symbolic links that lead out of it refused too), a URL's folder.
        const store =
          options.store ?? (isPath(model) ? (await nodeEntry()).folderStore(String(model).replace(/[^/\\]*$/, '') || '.') : urlStore(String(model)));
        checkKey(store, location, what);
        source = await openKey(store, location, options, what);
        opened.set(location, source);
      }
      const offset = Number(field(t, 'offset') ?? 0);
      const length = Number(field(t, 'length') ?? source.size - offset);
      // The model's claims are checked against the file's size before anything is allocated.
      if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 0 || offset + length > source.size) {
        throw new NpyError('TRUNCATED', `${location} (${source.size} bytes) does not hold initializer ${t.name}'s ${length} bytes at offset ${offset}`);
      }
      const bytes = (await source.read(offset, length)).slice();
      if (bytes.length !== length) throw new NpyError('TRUNCATED', `${location} ends before initializer ${t.name}'s ${length} bytes at offset ${offset}`);
      t.raw_data = bytes;
      t.external_data = [];
      t.data_location = 0;
    }
  } finally {
    for (const source of opened.values()) await source.close?.();
  }
}
