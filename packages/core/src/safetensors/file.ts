/**
 * A .safetensors file over any byte source: its header read and checked when opened, each tensor
 * read when asked for, by range (a remote file moves the header and the tensors asked for).
 */
import type { NdArray } from '../array/ndarray.js';
import { copyReason } from '../array/layout.js';
import { NpyError, unknownKey, withWhere } from '../errors.js';
import type { DescrInput } from '../format/descr-types.js';
import { matchesDescr, type NpyHeader } from '../format/header.js';
import { checkedReads, closeSourceNow, readSync, type ByteSource, type SyncByteSource } from '../io/byte-source.js';
import { npyReaderOf, type NpyReader } from '../io/open.js';
import { getEvery, getEverySync } from '../io/settle.js';
import { arrayOfData, type Expecting } from '../npy.js';
import type { GetAllReadOptions, TensorFile, TensorInfo, TensorReadOptions } from '../weights/tensor-file.js';
import { LENGTH_BYTES, headerLength, parseSafetensorsHeader, type SafetensorsEntry, type SafetensorsIndex } from './header.js';

/**
 * Tensors of at most this many bytes are read together by getAll, in reads of at most BATCH_BYTES
 * (a tensor kept alone keeps the rest of its batch's bytes alive: at most 4 MiB).
 */
const SMALL_TENSOR = 64 << 10;
const BATCH_BYTES = 4 << 20;

/** Neighbouring small tensors that getAll reads with one read: their bytes while any is still to be made. */
interface Batch {
  readonly begin: number;
  readonly end: number;
  left: number;
  bytes?: Promise<Uint8Array> | Uint8Array | undefined;
}

/**
 * Runs of neighbouring small tensors (in file order, each at most SMALL_TENSOR bytes, a run at most
 * BATCH_BYTES), by the name of each tensor in a run of two or more.
 */
function batchesOf(entries: readonly SafetensorsEntry[]): Map<string, Batch> {
  const out = new Map<string, Batch>();
  let run: SafetensorsEntry[] = [];
  const flush = (): void => {
    if (run.length > 1) {
      const first = run[0]!.header;
      const last = run.at(-1)!.header;
      const batch: Batch = { begin: first.dataOffset, end: last.dataOffset + last.dataBytes, left: run.length };
      for (const e of run) out.set(e.name, batch);
    }
    run = [];
  };
  for (const e of entries) {
    const { dataOffset, dataBytes } = e.header;
    if (e.unreadable !== undefined || dataBytes > SMALL_TENSOR) {
      flush();
      continue;
    }
    if (run.length && dataOffset + dataBytes - run[0]!.header.dataOffset > BATCH_BYTES) flush();
    run.push(e);
  }
  flush();
  return out;
}

/** Bytes read first: the length field and, for most files, the whole header. */
const FIRST_READ = 64 << 10;
/** Tensors read at once by getAll. */
const TENSORS_IN_FLIGHT = 4;

export type { TensorInfo, TensorReadOptions } from '../weights/tensor-file.js';

/**
 * An open .safetensors file: `names`, each tensor's `info`, `metadata`, and `get` (the blocking
 * `getSync` where the source is blocking). Tensors are C order, as the format stores them.
 * @example
 * const f = await openSafetensors('model.safetensors');
 * f.info('fc.weight');                      // { dtype: bfloat16, shape: [10, 84] }
 * const w = toFloat32(await f.get('fc.weight'));
 */
export class SafetensorsFile<Src extends ByteSource = ByteSource> implements TensorFile, AsyncDisposable, Disposable {
  /** The format's name, as `WeightFile.format` says it. */
  readonly format = 'safetensors';
  private readonly byName: Map<string, SafetensorsEntry>;
  private closed = false;

  /** Internal: use `SafetensorsFile.open` (any source) or `openSafetensorsSync`. */
  constructor(
    readonly source: Src,
    private readonly index: SafetensorsIndex,
  ) {
    this.byName = new Map(index.entries.map((e) => [e.name, e]));
  }

  /**
   * Open a .safetensors file over any source: its header is read and checked now (one read for a
   * header up to 64 KiB, two for a longer one).
   * @example
   * const f = await SafetensorsFile.open(blobSource(file));
   */
  static async open<S extends ByteSource>(source: S, options: { signal?: AbortSignal | undefined } = {}): Promise<SafetensorsFile<S>> {
    try {
      const first = await source.read(0, Math.min(FIRST_READ, source.size), { signal: options.signal });
      const n = headerLength(first, source.size);
      const json = LENGTH_BYTES + n <= first.length ? first.subarray(LENGTH_BYTES, LENGTH_BYTES + n) : await readFully(source, LENGTH_BYTES, n, options.signal);
      return new SafetensorsFile(source, parseSafetensorsHeader(json, source.size));
    } catch (e) {
      throw withWhere(e, { file: source.name ?? 'the safetensors file' });
    }
  }

  /**
   * Open a .safetensors file over a blocking source (bytes, a file opened blocking).
   * @example
   * const f = SafetensorsFile.openSync(bytesSource(bytes));
   */
  static openSync<S extends SyncByteSource>(source: S): SafetensorsFile<S> {
    try {
      const first = readSync(source, 0, Math.min(FIRST_READ, source.size));
      const n = headerLength(first, source.size);
      const json = LENGTH_BYTES + n <= first.length ? first.subarray(LENGTH_BYTES, LENGTH_BYTES + n) : readSync(source, LENGTH_BYTES, n);
      if (json.length < n) throw new NpyError('TRUNCATED', `the header ends at byte ${LENGTH_BYTES + json.length}, its length says ${LENGTH_BYTES + n}`);
      return new SafetensorsFile(source, parseSafetensorsHeader(json, source.size));
    } catch (e) {
      throw withWhere(e, { file: source.name ?? 'the safetensors file' });
    }
  }

  /** Tensor names in the order of their data in the file. */
  get names(): string[] {
    return this.index.entries.map((e) => e.name);
  }

  /** The header's `__metadata__` (string to string; empty when the file has none). */
  get metadata(): Readonly<Record<string, string>> {
    return this.index.metadata;
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** A tensor's dtype and shape, from the header (nothing is read). */
  info(name: string): TensorInfo {
    const { header, unreadable, packed, stored } = this.entry(name);
    if (unreadable !== undefined) return { dtype: header.dtype, shape: header.shape, unreadable };
    // Over a map, why get() copies: the rule of bytesToData, or unpacking.
    const copied = !this.source.views
      ? null
      : packed
        ? `${stored} packs ${8 / packed} elements to a byte; they are unpacked`
        : copyReason(header.dtype, header.dataOffset);
    return copied === null ? { dtype: header.dtype, shape: header.shape } : { dtype: header.dtype, shape: header.shape, copied };
  }

  /** A tensor's dtype name as the file writes it (`BF16`, `F32`). */
  storedDType(name: string): string {
    return this.entry(name).stored;
  }

  /** A tensor as a .npy header would describe it: dtype, shape, and its data's offset in the file. */
  header(name: string): NpyHeader {
    return this.entry(name).header;
  }

  private entry(name: string): SafetensorsEntry {
    const e = this.byName.get(name);
    if (!e) throw withWhere(unknownKey(name, this.names, 'the safetensors file'), { file: this.fileName });
    return e;
  }

  private get fileName(): string {
    return this.source.name ?? 'the safetensors file';
  }

  private checkOpen(): void {
    if (this.closed) throw new NpyError('CLOSED', `${this.fileName} is closed`);
  }

  private checked(name: string, expect: DescrInput | undefined): NpyHeader {
    this.checkOpen();
    const { header, stored, unreadable } = this.entry(name);
    if (unreadable !== undefined) {
      throw withWhere(
        new NpyError('NO_COUNTERPART', `tensor '${name}' is ${stored} (${header.dtype.name}), which npyts lists and does not read: ${unreadable}`),
        {
          file: this.fileName,
        },
      );
    }
    if (expect !== undefined && !matchesDescr(header.dtype, expect)) {
      throw withWhere(new NpyError('UNEXPECTED_DTYPE', `tensor '${name}' is ${header.dtype.name}, not ${String(expect)}`), { file: this.fileName });
    }
    return header;
  }

  /**
   * One tensor, read by range: only its bytes move (in reads of at most 8 MiB, several at once).
   * @example
   * const w = await f.get('fc.weight', { expect: '<f4' });   // NdArray<'<f4'>
   */
  async get<const S extends DescrInput>(name: string, options: TensorReadOptions & Expecting<S>): Promise<NdArray<S>>;
  async get(name: string, options?: TensorReadOptions): Promise<NdArray>;
  async get(name: string, options: TensorReadOptions = {}): Promise<NdArray> {
    const header = this.checked(name, options.expect);
    try {
      if (this.entry(name).packed) return unpacked(header, await readFully(this.source, header.dataOffset, header.dataBytes, options.signal, 'tensor'));
      return await this.reader(name, header).read(
        header.shape.map(() => 0),
        header.shape,
        { signal: options.signal, into: options.into },
      );
    } catch (e) {
      throw withWhere(e, { file: this.fileName, member: name });
    }
  }

  /** One tensor, read blocking (a blocking source only). */
  getSync<const S extends DescrInput>(
    this: SafetensorsFile<SyncByteSource>,
    name: string,
    options: Omit<TensorReadOptions, 'signal'> & Expecting<S>,
  ): NdArray<S>;
  getSync(this: SafetensorsFile<SyncByteSource>, name: string, options?: Omit<TensorReadOptions, 'signal'>): NdArray;
  getSync(this: SafetensorsFile<SyncByteSource>, name: string, options: Omit<TensorReadOptions, 'signal'> = {}): NdArray {
    const header = this.checked(name, options.expect);
    try {
      const bytes = readSync(this.source, header.dataOffset, header.dataBytes);
      if (bytes.length < header.dataBytes) {
        throw new NpyError(
          'DATA_TRUNCATED',
          `the file ends at byte ${header.dataOffset + bytes.length}, the tensor needs byte ${header.dataOffset + header.dataBytes}`,
        );
      }
      if (this.entry(name).packed) return unpacked(header, bytes);
      return arrayOfData(header, bytes.buffer, bytes.byteOffset);
    } catch (e) {
      throw withWhere(e, { file: this.fileName, member: name });
    }
  }

  /**
   * Region reads of one tensor: only the bytes of each region asked for move.
   * @example
   * const rows = await (f.openTensor('embed.weight')).read([1000, 0], [10, 4096]);
   */
  openTensor(name: string): NpyReader {
    const header = this.checked(name, undefined);
    const { packed, stored } = this.entry(name);
    if (packed) {
      throw withWhere(
        new NpyError('NO_COUNTERPART', `tensor '${name}' is ${stored}, packed ${8 / packed} elements to a byte: region reads do not unpack it; get() it whole`),
        {
          file: this.fileName,
        },
      );
    }
    return this.reader(name, header);
  }

  private reader(name: string, header: NpyHeader): NpyReader {
    // Reads go through the file, so that a tensor read after close() fails with CLOSED.
    return npyReaderOf(
      checkedReads(this.source, () => this.checkOpen()),
      header,
      name,
    );
  }

  /**
   * Every tensor, by name in file order, a few read at once. Small tensors next to one another are
   * read together (in runs of at most 4 MiB): a file of 100 000 small tensors costs a few reads, not one each.
   */
  async getAll(options: GetAllReadOptions = {}): Promise<Map<string, NdArray>> {
    const batchOf = batchesOf(this.index.entries);
    return getEvery(
      this.names,
      TENSORS_IN_FLIGHT,
      async (name) => {
        const batch = batchOf.get(name);
        if (!batch) return this.get(name, { signal: options.signal });
        this.checked(name, undefined);
        batch.bytes ??= readFully(this.source, batch.begin, batch.end - batch.begin, options.signal, 'tensor');
        try {
          return this.fromBatch(name, batch, await batch.bytes);
        } catch (e) {
          throw withWhere(e, { file: this.fileName, member: name });
        }
      },
      options.onTensor,
    );
  }

  /** Every tensor, blocking (a blocking source only), small neighbours read together as by getAll. */
  getAllSync(this: SafetensorsFile<SyncByteSource>): Map<string, NdArray> {
    const batchOf = batchesOf(this.index.entries);
    return getEverySync(this.names, (name) => {
      const batch = batchOf.get(name);
      if (!batch) return this.getSync(name);
      this.checked(name, undefined);
      try {
        if (!batch.bytes) {
          const bytes = readSync(this.source, batch.begin, batch.end - batch.begin);
          if (bytes.length < batch.end - batch.begin) {
            throw new NpyError('DATA_TRUNCATED', `the file ends at byte ${batch.begin + bytes.length}, the tensors need byte ${batch.end}`);
          }
          batch.bytes = bytes;
        }
        return this.fromBatch(name, batch, batch.bytes as Uint8Array);
      } catch (e) {
        throw withWhere(e, { file: this.fileName, member: name });
      }
    });
  }

  /**
   * One tensor of a batch's bytes: a view of them where its layout allows, as `get` gives a view of
   * its own read (a buffer per tensor would cost more than the read); the batch lets its bytes go
   * after its last tensor.
   */
  private fromBatch(name: string, batch: Batch, bytes: Uint8Array): NdArray {
    const { header, packed } = this.entry(name);
    const at = bytes.byteOffset + header.dataOffset - batch.begin;
    if (--batch.left === 0) batch.bytes = undefined;
    if (packed) return unpacked(header, new Uint8Array(bytes.buffer, at, header.dataBytes));
    return arrayOfData(header, bytes.buffer, at);
  }

  /** Release the source; later reads fail with CLOSED. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.source.close?.();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** `using f = …`: closes a blocking source at once; an async one's close is started, its failure ignored. */
  [Symbol.dispose](): void {
    if (this.closed) return;
    this.closed = true;
    closeSourceNow(this.source);
  }
}

/** `length` bytes at `offset`, or TRUNCATED (DATA_TRUNCATED for a tensor) where the source has fewer. */
async function readFully(source: ByteSource, offset: number, length: number, signal?: AbortSignal, what: 'header' | 'tensor' = 'header'): Promise<Uint8Array> {
  const got = await source.read(offset, length, { signal });
  if (got.length < length) {
    if (what === 'tensor') throw new NpyError('DATA_TRUNCATED', `the file ends at byte ${offset + got.length}, the tensor needs byte ${offset + length}`);
    throw new NpyError('TRUNCATED', `the header ends at byte ${offset + got.length}, its length says ${offset + length}`);
  }
  return got;
}

/**
 * A packed F4 tensor's bytes as ml_dtypes' float4_e2m1fn, one element per byte: the first of each
 * byte's two elements in its low four bits, as PyTorch's `float4_e2m1fn_x2` (which safetensors
 * stores as F4) lays them out.
 */
function unpacked(header: NpyHeader, bytes: Uint8Array): NdArray {
  const out = new Uint8Array(header.size);
  for (let i = 0; i < header.size; i++) out[i] = (bytes[i >> 1]! >> ((i & 1) << 2)) & 0xf;
  return arrayOfData({ ...header, dataBytes: header.size }, out.buffer, 0);
}
