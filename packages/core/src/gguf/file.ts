/**
 * A GGUF file (llama.cpp's format) over any byte source: its header read and checked when opened,
 * each tensor read when asked for, by range (a remote file moves the header and the tensors asked
 * for). Unquantized tensors are read as themselves; quantized ones are dequantized to float32 as
 * gguf-py's `gguf.quants.dequantize` does, bit for bit.
 */
import type { WeightFormatEntry } from '../weights/formats.js';
import type { GetAllReadOptions, TensorFile } from '../weights/tensor-file.js';
import type { Place } from '../weights/place.js';
import { NdArray } from '../array/ndarray.js';
import { copyReason } from '../array/layout.js';
import { allocateBuffer } from '../array/memory.js';
import { NpyError, unknownKey, withWhere } from '../errors.js';
import type { DescrInput } from '../format/descr-types.js';
import { parseDescr } from '../format/dtype.js';
import { matchesDescr, type NpyHeader } from '../format/header.js';
import { checkedReads, type AsyncByteSource, type ByteSource } from '../io/byte-source.js';
import { npyReaderOf } from '../io/open.js';
import { getEvery, mapInParallel } from '../io/settle.js';
import type { Expecting } from '../npy.js';
import type { TensorInfo, TensorReadOptions } from '../safetensors/file.js';
import type { TensorExtent } from '../weights/tensor-file.js';
import { type GgufTensor, type GgufValueType, isGguf, parseGgufHeader } from './header.js';
import { DEQUANTIZE_IQ } from './iq.js';
import { DEQUANTIZE, type Dequantize } from './quants.js';

/** Bytes read first: the preamble and, for most files without a vocabulary, the whole header. */
const FIRST_READ = 64 << 10;
/** Bytes of quantized blocks read (and dequantized) at a time, and how many such reads in flight. */
const CHUNK_BYTES = 4 << 20;
const CHUNKS_IN_FLIGHT = 4;
/** Chunk buffers an open file keeps for its next reads (one per chunk in flight of one tensor). */
const CHUNK_BUFFERS_KEPT = CHUNKS_IN_FLIGHT;
/** Tensors read at once by getAll. */
const TENSORS_IN_FLIGHT = 4;

const DEQUANTIZERS: Readonly<Record<string, Dequantize>> = { ...DEQUANTIZE, ...DEQUANTIZE_IQ };
const FLOAT32 = parseDescr('<f4');

/** What a GGUF file says of one tensor: the dtype `get` returns, the shape, and a quantized tensor's ggml type. */
export interface GgufTensorInfo extends TensorInfo {
  /** The ggml type of a quantized tensor (`'Q4_K'`, `'IQ2_XS'`), read as float32; absent for an unquantized one. */
  readonly quantization?: string;
}

/**
 * An open GGUF file: tensor `names` in file order, each tensor's `info`, the header's `metadata`,
 * and `get` (quantized tensors dequantized to float32). Shapes are numpy's C order (ggml's `ne`
 * reversed).
 * @example
 * const f = await openGguf('https://example.org/model-Q4_K_M.gguf');
 * f.metadata['general.architecture'];        // 'llama'
 * (await f.info('blk.0.attn_q.weight')).quantization;   // 'Q4_K'
 * const w = await f.get('blk.0.attn_q.weight');          // NdArray<'<f4'>
 */
export class GgufFile implements TensorFile, AsyncDisposable {
  readonly format = 'gguf' as const;
  /** Tensor names in the order the header lists them. */
  readonly names: readonly string[];
  /**
   * Every key/value of the header, in file order: integers up to 32 bits and floats as numbers,
   * uint64/int64 as numbers where they are safe integers and bigints beyond, strings, booleans,
   * numeric arrays as typed arrays (`BigUint64Array`/`BigInt64Array` for 64-bit integers), arrays of
   * strings, booleans or arrays as arrays.
   */
  readonly metadata: Readonly<Record<string, unknown>>;
  /**
   * Each key's GGUF value type, as gguf-py's `GGUFValueType` names it: what tells a float32 value
   * (`'FLOAT32'`) from a float64 one, both numbers in `metadata`. An array is `'ARRAY'`; its items'
   * type is its typed array's (`Float32Array` for FLOAT32).
   * @example
   * f.metadataTypes['llama.attention.layer_norm_rms_epsilon'];   // 'FLOAT32'
   */
  readonly metadataTypes: Readonly<Record<string, GgufValueType>>;
  /** The GGUF version (2 or 3). */
  readonly version: number;
  /** Whether the file is little-endian (GGUF's usual order) or big-endian (gguf-py writes those on request). */
  readonly littleEndian: boolean;
  private readonly byName: Map<string, GgufTensor>;
  /** Buffers that chunks of quantized blocks are read into, kept for the next reads (up to 16 MiB, dropped at close). */
  private chunkBuffers: Uint8Array[] = [];
  private closed = false;

  private constructor(
    readonly source: ByteSource,
    header: Awaited<ReturnType<typeof parseGgufHeader>>,
  ) {
    this.names = header.tensors.map((t) => t.name);
    this.metadata = header.metadata;
    this.metadataTypes = header.metadataTypes;
    this.version = header.version;
    this.littleEndian = header.littleEndian;
    this.byName = new Map(header.tensors.map((t) => [t.name, t]));
  }

  /**
   * Open a GGUF file over any source: the header is read and checked now (one read for a header up
   * to 64 KiB; a longer one, a tokenizer's vocabulary or many tensors, in windows of up to 16 MiB
   * that start at the entry being read; a header over 100 MB is refused, as safetensors refuses its own).
   * @example
   * const f = await GgufFile.open(blobSource(file));
   */
  static async open(source: ByteSource, options: { signal?: AbortSignal | undefined } = {}): Promise<GgufFile> {
    const { signal } = options;
    try {
      const first = await source.read(0, Math.min(FIRST_READ, source.size), { signal });
      const header = await parseGgufHeader(first, source.size, (at, length) => source.read(at, length, { signal }));
      return new GgufFile(source, header);
    } catch (e) {
      throw withWhere(e, { file: source.name ?? 'the GGUF file' });
    }
  }

  /** Whether the file has a tensor of this name. */
  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** A tensor's dtype (float32 for a quantized one), shape and ggml type, from the header (nothing is read). */
  async info(name: string, _options: { signal?: AbortSignal | undefined } = {}): Promise<GgufTensorInfo> {
    const t = this.entry(name);
    const dtype = t.descr === undefined ? FLOAT32 : parseDescr(t.descr);
    if (t.descr === undefined) {
      return this.source.views
        ? { dtype, shape: t.shape, quantization: t.type.name, copied: `it is quantized (${t.type.name}) and dequantized` }
        : { dtype, shape: t.shape, quantization: t.type.name };
    }
    // Over a map, why get() copies it (the rule of bytesToData).
    const copied = this.source.views ? copyReason(dtype, t.dataOffset) : null;
    return copied === null ? { dtype, shape: t.shape } : { dtype, shape: t.shape, copied };
  }

  /**
   * Where an unquantized tensor's bytes are in the file (dtype, shape in numpy's order, offset), or
   * null for a quantized one, whose bytes are blocks rather than the array.
   * @example
   * f.extent('output_norm.weight');   // { dtype: <f4, shape: [4096], fortranOrder: false, offset: 7340064 }
   */
  extent(name: string): TensorExtent | null {
    const t = this.entry(name);
    return t.descr === undefined ? null : { dtype: parseDescr(t.descr), shape: t.shape, fortranOrder: false, offset: t.dataOffset };
  }

  /**
   * One tensor, read by range (only its bytes move): an unquantized one as itself (F32, F16, BF16,
   * F64, I8–I64), a quantized one dequantized to float32.
   * @example
   * const w = await f.get('token_embd.weight', { expect: '<f4' });   // NdArray<'<f4'>
   */
  async get<const S extends DescrInput>(name: string, options: TensorReadOptions & Expecting<S>): Promise<NdArray<S>>;
  async get(name: string, options?: TensorReadOptions): Promise<NdArray>;
  async get(name: string, options: TensorReadOptions = {}): Promise<NdArray> {
    this.checkOpen();
    const t = this.entry(name);
    const { signal } = options;
    const dtype = t.descr === undefined ? FLOAT32 : parseDescr(t.descr);
    if (options.expect !== undefined && !matchesDescr(dtype, options.expect)) {
      throw withWhere(new NpyError('UNEXPECTED_DTYPE', `tensor '${name}' is ${t.type.name} (read as ${dtype.name}), not ${String(options.expect)}`), {
        file: this.fileName,
      });
    }
    if (!this.littleEndian && (t.descr === undefined || t.type.name === 'BF16')) {
      // gguf-py's GGUFWriter leaves these bytes as it is given them (little-endian inside each block),
      // while its gguf_convert_endian swaps the blocks' scales: the file does not say which it holds.
      throw withWhere(
        new NpyError(
          'GGUF_UNSUPPORTED',
          `tensor '${name}' is ${t.type.name} in a big-endian GGUF file, whose byte order inside each block the file does not record (gguf-py's writer and its gguf_convert_endian differ); read it from the little-endian file it was made from`,
        ),
        { file: this.fileName, member: name },
      );
    }
    try {
      if (t.descr !== undefined) {
        const header: NpyHeader = {
          version: [1, 0],
          dtype,
          shape: t.shape,
          fortranOrder: false,
          dataOffset: t.dataOffset,
          size: t.size,
          dataBytes: t.dataBytes,
        };
        return await npyReaderOf(this.checkedSource(), header, name).read(
          t.shape.map(() => 0),
          t.shape,
          { signal },
        );
      }
      return new NdArray(FLOAT32, t.shape, await this.dequantized(t, signal));
    } catch (e) {
      throw withWhere(e, { file: this.fileName, member: name });
    }
  }

  private async dequantized(t: GgufTensor, signal: AbortSignal | undefined): Promise<Float32Array> {
    const dequantize = DEQUANTIZERS[t.type.name];
    if (!dequantize) {
      throw new NpyError(
        'GGUF_UNSUPPORTED',
        `tensor '${t.name}' is ${t.type.name}, which gguf-py does not dequantize either; npyts dequantizes what gguf.quants.dequantize does`,
      );
    }
    let out: Float32Array;
    try {
      // From allocateBuffer: a large output gets the host's huge-page advice (fewer page faults).
      out = new Float32Array(allocateBuffer(t.size * 4));
    } catch {
      throw new NpyError('SIZE_OVERFLOW', `tensor '${t.name}' has ${t.size} values, more float32 than one buffer can hold here`);
    }
    const blocks = t.dataBytes / t.type.bytes;
    const perRead = Math.max(1, Math.floor(CHUNK_BYTES / t.type.bytes));
    const starts: number[] = [];
    for (let b = 0; b < blocks; b += perRead) starts.push(b);
    // A source that reads into memory it is given (a file) reads each chunk into one of the file's
    // chunk buffers, used again chunk after chunk and tensor after tensor. A fresh buffer per chunk
    // (4 MiB less a few bytes: too small for huge-page advice) cost 1024 page faults each time: on
    // the 2-core VM, reading a 240 MB tensor's 33 MB of blocks took 110 ms of CPU that way, 10 ms
    // into buffers used again. A source whose reads are views (a map) is read as it is.
    const into = this.source.views ? undefined : this.source.readInto?.bind(this.source);
    await mapInParallel(starts, CHUNKS_IN_FLIGHT, async (first) => {
      const n = Math.min(perRead, blocks - first);
      const want = n * t.type.bytes;
      const at = t.dataOffset + first * t.type.bytes;
      this.checkOpen();
      let buffer: Uint8Array | null = null;
      let bytes: Uint8Array;
      if (into) {
        buffer = this.chunkBuffers.pop() ?? new Uint8Array(allocateBuffer(CHUNK_BYTES));
        bytes = buffer.subarray(0, await into(buffer.subarray(0, want), at, { signal }));
      } else {
        bytes = await this.source.read(at, want, { signal });
      }
      if (bytes.length < want) {
        throw new NpyError('DATA_TRUNCATED', `the file ends at byte ${at + bytes.length}, tensor '${t.name}' needs byte ${at + want}`);
      }
      signal?.throwIfAborted();
      dequantize(bytes, out.subarray(first * t.type.block, (first + n) * t.type.block), n);
      // Back only now, its blocks dequantized: after a failed or aborted read, one still under way
      // might yet write into it, so such a buffer is dropped.
      if (buffer && this.chunkBuffers.length < CHUNK_BUFFERS_KEPT) this.chunkBuffers.push(buffer);
    });
    return out;
  }

  /** Every tensor, by name in file order, a few read at once. */
  async getAll({ signal, onTensor }: GetAllReadOptions = {}): Promise<Map<string, NdArray>> {
    // Each tensor by get, so that one npyts cannot read (a Q8_1) does not hide the others (getEvery).
    return getEvery(this.names, TENSORS_IN_FLIGHT, (name) => this.get(name, { signal }), onTensor);
  }

  /** Release the source; later reads fail with CLOSED. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.chunkBuffers = [];
    await this.source.close?.();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  private entry(name: string): GgufTensor {
    const t = this.byName.get(name);
    if (!t) throw withWhere(unknownKey(name, this.names, 'the GGUF file'), { file: this.fileName });
    return t;
  }

  private get fileName(): string {
    return this.source.name ?? 'the GGUF file';
  }

  private checkOpen(): void {
    if (this.closed) throw new NpyError('CLOSED', `${this.fileName} is closed`);
  }

  /** The source, read through the file, so that a read after close() fails with CLOSED. */
  private checkedSource(): AsyncByteSource {
    return checkedReads(this.source, () => this.checkOpen());
  }
}

/**
 * GGUF as one of the weight formats: told by its first bytes (the magic `GGUF` and a version this
 * reader reads), opened over any source.
 * @example
 * if (ggufFormat.sniff(first, source.size)) {
 *   const f = await ggufFormat.open(source, null, { signal });
 * }
 */
// Its type written out (JSR's rule: every exported symbol has an explicit type), `open` giving a GgufFile.
export const ggufFormat: {
  readonly name: 'gguf';
  sniff(first: Uint8Array, _size: number): boolean;
  open(source: ByteSource, _place?: Place | null, options?: { signal?: AbortSignal | undefined }): Promise<GgufFile>;
} = {
  name: 'gguf',
  /** Whether the file's first bytes are a GGUF header this reader reads (version 2 or 3, either byte order). */
  sniff(first: Uint8Array, _size: number): boolean {
    return isGguf(first);
  },
  /** Open a GGUF file over a source: its header is read now (a GGUF file has no siblings: `place` is unused). */
  open(source: ByteSource, _place?: Place | null, options: { signal?: AbortSignal | undefined } = {}): Promise<GgufFile> {
    return GgufFile.open(source, options);
  },
} as const satisfies WeightFormatEntry;
