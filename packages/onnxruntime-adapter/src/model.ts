/** What this package's functions share: ONNX's ModelProto through protobufjs, and the inputs they open. */
import protobuf from 'protobufjs/light.js';
import { NpyError, WeightFile, openWeights, urlSource, type HttpOptions } from '@npyts/core';
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

/** A path when running in Node and the string names no URL scheme. */
const isPath = (input: unknown): input is string => typeof input === 'string' && inNode() && !/^[a-z][a-z0-9+.-]+:/i.test(input);

/** The input opened as a weight file, and whether it was opened here (to be closed here). @internal */
export async function openInput(input: WeightInput, options: HttpOptions): Promise<[WeightFile, boolean]> {
  if (input instanceof WeightFile) return [input, false];
  if (isPath(input)) {
    const node = await import('@npyts/core/node');
    return [await node.openWeights(input, options), true];
  }
  return [await openWeights(input, options), true];
}

/** A model's bytes: read from a path (Node) or URL, or the bytes given. @internal */
export async function modelBytes(model: ModelInput, options: HttpOptions = {}): Promise<Uint8Array> {
  if (model instanceof Uint8Array) return model;
  if (model instanceof ArrayBuffer) return new Uint8Array(model);
  if (isPath(model)) {
    const node = await import('@npyts/core/node');
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
