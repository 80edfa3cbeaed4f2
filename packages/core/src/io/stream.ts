/** .npy over streams (NEP 1's file-like objects): a fetch body, a zip entry, stdin, a socket. */
import { allocateBuffer } from '../array/memory.js';
import {
  DECODE_KEY_SET,
  ENCODE_KEY_SET,
  decodeNpy,
  encodeNpyParts,
  hasObject,
  type ArraySpec,
  type DecodeOptions,
  type EncodeOptions,
  type Expecting,
} from '../npy.js';
import { checkOptions } from '../options.js';
import type { DescrInput } from '../format/descr-types.js';
import { NpyError } from '../errors.js';
import { headerBytesNeeded, readHeaderOf } from '../format/header.js';
import { checkHeaderLength } from './header-read.js';
import { NdArray } from '../array/ndarray.js';
import { bytesToData } from '../array/layout.js';

/** What a whole .npy can be read from as it arrives: Web or Node streams, a fetch `Response`, a `Blob`. */
export type ChunkSource = ReadableStream<Uint8Array> | AsyncIterable<Uint8Array> | Response | Blob;

/** The first buffer a stream's data gets before it has shown it is as large as its header says. */
const FIRST_BUFFER = 64 << 20;

async function* chunksOf(input: ChunkSource): AsyncGenerator<Uint8Array> {
  let source: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;
  if (typeof Response !== 'undefined' && input instanceof Response) {
    if (!input.ok) throw new NpyError('HTTP_STATUS', `HTTP ${input.status} for ${input.url || 'the response'}`);
    if (!input.body) return;
    source = input.body;
  } else if (typeof Blob !== 'undefined' && input instanceof Blob) source = input.stream() as ReadableStream<Uint8Array>;
  else source = input as ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;
  if (typeof (source as ReadableStream<Uint8Array>).getReader === 'function') {
    const reader = (source as ReadableStream<Uint8Array>).getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        yield value;
      }
    } finally {
      reader.releaseLock();
    }
  } else {
    for await (const chunk of source as AsyncIterable<Uint8Array>) yield chunk instanceof Uint8Array ? chunk : new Uint8Array(chunk as ArrayBuffer);
  }
}

/**
 * Read a .npy from a stream (a Web or Node stream, a fetch `Response`, a `Blob`): the header is
 * parsed as soon as it has arrived, then every chunk is copied once, straight into the array's own
 * buffer. Bytes after the array are left unread.
 * @example
 * const a = await readNpy(await fetch(url));
 * const b = await readNpy(createReadStream('x.npy'));   // Node streams too
 */
export async function readNpy<const S extends DescrInput>(source: ChunkSource, options: DecodeOptions & Expecting<S>): Promise<NdArray<S>>;
export async function readNpy(source: ChunkSource, options?: DecodeOptions): Promise<NdArray>;
export async function readNpy(source: ChunkSource, options: DecodeOptions = {}): Promise<NdArray> {
  checkOptions('readNpy', options, DECODE_KEY_SET);
  const chunks = chunksOf(source);
  // Gather the preamble and header: chunks are kept as they come and joined when enough are there
  // (joining at every chunk would be quadratic for a stream of tiny chunks), and a header longer
  // than maxHeaderBytes is refused as soon as its length field has arrived.
  const pending: Uint8Array[] = [];
  let gathered = 0;
  const joinPending = (): Uint8Array => {
    const joined = new Uint8Array(gathered);
    let o = 0;
    for (const c of pending) {
      joined.set(c, o);
      o += c.length;
    }
    pending.splice(0, pending.length, joined);
    return joined;
  };
  let prefix: Uint8Array = new Uint8Array(0);
  let need = 12;
  for (;;) {
    while (gathered < need) {
      const { done, value } = await chunks.next();
      if (done) {
        // Let readHeader explain what is missing.
        readHeaderOf(joinPending(), options);
        throw new NpyError('TRUNCATED', `stream ended after ${gathered} bytes, inside the header`);
      }
      pending.push(value);
      gathered += value.length;
    }
    prefix = joinPending();
    const full = headerBytesNeeded(prefix);
    if (full <= need) break;
    checkHeaderLength(prefix, options);
    need = full;
  }
  const header = readHeaderOf(prefix, options);
  if (hasObject(header.dtype)) {
    // A pickle has no size up front: gather the rest, then hand it to the codec (or refuse).
    const parts = [prefix];
    for await (const c of { [Symbol.asyncIterator]: () => chunks }) parts.push(c);
    const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let o = 0;
    for (const p of parts) {
      all.set(p, o);
      o += p.length;
    }
    return decodeNpy(all, options);
  }
  // The header's size is a claim: the buffer grows with the bytes that actually arrive (doubling, up
  // to the claimed size), so a stream that promises terabytes and sends a few bytes costs a few bytes.
  let target = new Uint8Array(allocateBuffer(Math.min(header.dataBytes, FIRST_BUFFER), options.shared));
  const place = (bytes: Uint8Array, at: number): void => {
    if (at + bytes.length > target.length) {
      const grown = new Uint8Array(allocateBuffer(Math.min(header.dataBytes, Math.max(2 * target.length, at + bytes.length)), options.shared));
      grown.set(target.subarray(0, at));
      target = grown;
    }
    target.set(bytes, at);
  };
  let filled = Math.min(header.dataBytes, Math.max(0, prefix.length - header.dataOffset));
  place(prefix.subarray(header.dataOffset, header.dataOffset + filled), 0);
  while (filled < header.dataBytes) {
    const { done, value } = await chunks.next();
    if (done) {
      throw new NpyError('DATA_TRUNCATED', `stream ended after ${filled} of ${header.dataBytes} data bytes`, { offset: header.dataOffset + filled });
    }
    const take = Math.min(value.length, header.dataBytes - filled);
    place(value.subarray(0, take), filled);
    filled += take;
  }
  await chunks.return(undefined);
  const data = bytesToData(header.dtype, target.buffer, 0, header.size, { ...options, owned: true, copy: false });
  return new NdArray(header.dtype, header.shape, data, header.fortranOrder ? 'F' : 'C');
}

/** A web WritableStream, or anything with Node's write(chunk) → boolean and 'drain'. */
export type ChunkSink = WritableStream<Uint8Array> | { write(chunk: Uint8Array): boolean; once(event: 'drain', listener: () => void): unknown };

const PIECE = 16 << 20;

/**
 * Write an array as .npy to a stream, honouring backpressure; large data goes in pieces, uncopied.
 * @example
 * await writeNpy(writable, { data: new Float64Array(8) });
 */
export async function writeNpy(sink: ChunkSink, array: NdArray | ArraySpec, options: EncodeOptions = {}): Promise<void> {
  checkOptions('writeNpy', options, ENCODE_KEY_SET);
  const { header, body } = encodeNpyParts(array, options);
  const pieces = [header];
  for (let i = 0; i < body.length; i += PIECE) pieces.push(body.subarray(i, i + PIECE));
  if (typeof (sink as WritableStream<Uint8Array>).getWriter === 'function') {
    const writer = (sink as WritableStream<Uint8Array>).getWriter();
    try {
      for (const p of pieces) await writer.write(p);
    } finally {
      writer.releaseLock();
    }
    return;
  }
  const node = sink as { write(chunk: Uint8Array): boolean; once(event: 'drain', listener: () => void): unknown };
  for (const p of pieces) {
    if (!node.write(p)) await new Promise<void>((resolve) => node.once('drain', resolve));
  }
}
