/** What this package's functions share: ONNX's ModelProto through protobufjs, and the inputs they open. */
import protobuf from 'protobufjs/light.js';
import { NpyError, WeightFile, openWeights, urlSource, type HttpOptions } from '@npyts/core';
import { OPEN_WEIGHTS_KEYS, checkKey, openKey, pickOptions } from '@npyts/core/plumbing';
import { urlStore } from '@npyts/core';
import { ONNX_SCHEMA } from './onnx-schema.js';

/** Where weights or a reference archive come from: a path (Node), a URL, bytes, a Blob, or a {@link WeightFile} already open (left open). */
export type WeightInput = string | URL | Uint8Array | ArrayBuffer | Blob | WeightFile;

/** Where an `.onnx` model comes from: a path (Node), a URL, or its bytes. */
export type ModelInput = string | URL | Uint8Array | ArrayBuffer;

const root = protobuf.Root.fromJSON(ONNX_SCHEMA as unknown as protobuf.INamespace);
/** onnx.ModelProto. @internal */
export const ModelProto = root.lookupType('onnx.ModelProto');

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

function inNode(): boolean {
  const p = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return typeof p?.versions?.node === 'string';
}

/**
 * `@npyts/core/node`, loaded only when a path is used. The specifier is a variable so that browser
 * bundlers do not pull Node's file system into the page (as @npyts/tfjs does).
 */
async function nodeEntry(): Promise<typeof import('@npyts/core/node')> {
  const specifier = '@npyts/core/node';
  return (await import(/* @vite-ignore */ specifier)) as typeof import('@npyts/core/node');
}

/** A path when running in Node and the string names no URL scheme. @internal */
export const isPath = (input: unknown): input is string => typeof input === 'string' && inNode() && !/^[a-z][a-z0-9+.-]+:/i.test(input);

/** The input opened as a weight file, and whether it was opened here (to be closed here). @internal */
export async function openInput(input: WeightInput, options: HttpOptions): Promise<[WeightFile, boolean]> {
  if (input instanceof WeightFile) return [input, false];
  // Only what openWeights takes: it refuses the adapter's own options.
  const taken = pickOptions(options, OPEN_WEIGHTS_KEYS);
  if (isPath(input)) {
    const node = await nodeEntry();
    return [await node.openWeights(input, taken), true];
  }
  return [await openWeights(input, taken), true];
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
export async function modelBytes(model: ModelInput, options: HttpOptions = {}): Promise<Uint8Array> {
  if (model instanceof Uint8Array) return model;
  if (model instanceof ArrayBuffer) return new Uint8Array(model);
  if (isPath(model)) {
    const node = await nodeEntry();
    const source = node.fileSource(model);
    try {
      return source.read(0, source.size);
    } finally {
      source.close?.();
    }
  }
  const source = await urlSource(model, options);
  return source.read(0, source.size);
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
export async function inlineExternalData(message: ModelMessage, model: ModelInput, options: HttpOptions = {}): Promise<void> {
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
        const store = isPath(model) ? (await nodeEntry()).folderStore(String(model).replace(/[^/\\]*$/, '') || '.') : urlStore(String(model));
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
