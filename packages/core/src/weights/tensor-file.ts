/**
 * What every weight format's reader is: a {@link TensorFile}. A `.npz`, a `torch.save` file, a
 * `.safetensors` file and a sharded set each implement it directly, and `openWeights` hands it out
 * behind a `WeightFile`; a new format implements it too (see docs/architecture.md, "Adding a weight format").
 */
import type { NdArray } from '../array/ndarray.js';
import type { DescrInput } from '../format/descr-types.js';
import type { DType } from '../format/dtype.js';
import { HTTP_KEYS, type HttpOptions } from '../io/url.js';
import { NPZ_KEYS, type NpzOptions } from '../npz/archive.js';
import type { KnownKeys, MapMode } from '../options.js';

/** Options of a tensor read: the dtype expected (checked before any data is read), and `signal`. */
export interface TensorReadOptions {
  signal?: AbortSignal | undefined;
  /** The dtype the caller expects (byte order free): `UNEXPECTED_DTYPE` otherwise, before the data is read. */
  expect?: DescrInput;
  /**
   * Where a tensor whose bytes are read into memory of their own (not a view of a map) is read:
   * called with the bytes it needs once they are known to be in the file, it gives a buffer of at
   * least that many, which the array returned then views, so the array is valid only until that
   * buffer is given out again. For a caller that reads tensors one at a time and lets each go (a
   * streamed save reads every tensor into one buffer); a format that makes its arrays otherwise
   * (a view of a map, a deflated member) does not call it.
   */
  into?: ((bytes: number) => ArrayBufferLike) | undefined;
}

/** Options of a {@link TensorFile}'s `getAll`. */
export interface GetAllReadOptions {
  signal?: AbortSignal | undefined;
  /** Told each tensor's name as soon as it has been read (what `WeightFile.getAll` counts progress by). */
  onTensor?: ((name: string) => void) | undefined;
}

/** What a weight file says of one tensor without reading it. */
export interface TensorInfo {
  readonly dtype: DType;
  readonly shape: readonly number[];
  /**
   * Why `get` refuses this tensor, where the file holds a dtype npyts lists and cannot read (a
   * safetensors F6, packed in an order nothing defines); absent for every tensor that reads.
   */
  readonly unreadable?: string;
  /**
   * The quantized type a tensor is stored as, where `get` dequantizes it to `dtype` (a GGUF `'Q4_K'`);
   * absent for a tensor stored as its dtype.
   */
  readonly quantization?: string;
  /**
   * Where the file is memory-mapped (`openWeights(path, { mmap })`), why `get` gives this tensor as
   * a copy and not as a view of the map: its data is byte-swapped, starts at an offset not aligned
   * to its element size, is deflated, quantized, unpacked or gathered from a strided view. Absent
   * for a tensor `get` gives as a view, and for every tensor of a file that is not mapped.
   */
  readonly copied?: string;
  /**
   * For a tensor of a sharded set, the shard that holds it: the file name its index gives (a file
   * beside the index, checked as every shard's name is). Absent for a tensor of a single file.
   */
  readonly shard?: string;
}

/**
 * Where a tensor's bytes lie in its file as they are: its dtype, shape, memory order and the byte
 * offset of its first element. What a reference set points at; a tensor stored otherwise (quantized
 * blocks, deflated, gathered from a strided view) has none.
 */
export interface TensorExtent {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly fortranOrder: boolean;
  /**
   * Where the bytes are neither C nor Fortran order, but C order of a permutation of the axes (a
   * torch `permute()` view): the axes in the order they lie, slowest first (Zarr v3's `transpose`).
   */
  readonly order?: readonly number[];
  readonly offset: number;
}

/**
 * An open file of named tensors, whatever its format: what a format's `open` returns.
 * @example
 * const file: TensorFile = await openWeights('model.safetensors');
 * for (const name of file.names) console.log(name, (await file.info(name)).shape);
 */
export interface TensorFile {
  /** The format's name (`'npz'`, `'safetensors'`, `'torch'`, …): what `WeightFile.format` says. */
  readonly format: string;
  /** Tensor names, in the file's order. */
  readonly names: readonly string[];
  /** What the file says besides its tensors (safetensors' `__metadata__`, a checkpoint's other values, an index's `metadata`). */
  readonly metadata: Readonly<Record<string, unknown>>;
  /** Each metadata key's value type, where the format records one that the value does not show (GGUF's: `'FLOAT32'` or `'FLOAT64'` for a number). */
  readonly metadataTypes?: Readonly<Record<string, string>> | undefined;
  /** The tensor name a key names (a .npz member's `w.npy` is `w`), or null for none; where absent, a name of `names`. */
  keyOf?(name: string): string | null;
  /**
   * An identity that the names holding the same data share (a torch storage saved under two names:
   * tied weights), for writers that save such data once; undefined where the tensor shares none or
   * the format does not tell. Absent: the format does not tell.
   */
  tieOf?(name: string): unknown;
  /**
   * Told that `get` will be asked for each of these tensors next (a model's load), so that the format
   * may read neighbours together (a Keras file does); absent: each `get` reads its own.
   */
  readAhead?(names: Iterable<string>): void;
  /** A tensor's dtype and shape, without reading its data (a sharded set may read its shard's header). */
  info(name: string, options?: { signal?: AbortSignal | undefined }): TensorInfo | Promise<TensorInfo>;
  /** One tensor: only its bytes are read. */
  get(name: string, options?: TensorReadOptions): Promise<NdArray>;
  /** Every tensor by name, in the file's order; `onTensor` is told each tensor's name once it is read (progress). */
  getAll(options?: GetAllReadOptions): Promise<Map<string, NdArray>>;
  /** Release what the file holds open; later reads fail with CLOSED. */
  close(): Promise<void>;
}

/**
 * Whether tensors to write are a source read one at a time (a weight file: `names` and a `get`
 * function), not a record or Map of arrays (whose values are arrays or specs, never functions).
 * @internal
 */
export function isTensorSource<T extends object, S extends Pick<TensorFile, 'names' | 'get'>>(x: T | S): x is S {
  return !(x instanceof Map) && typeof (x as { get?: unknown }).get === 'function' && Array.isArray((x as { names?: unknown }).names);
}

/** What a format's `open` is given besides the source: the archive options (for zips) and the HTTP options of the file (for its siblings). */
export interface FormatOptions extends NpzOptions, HttpOptions {
  /** The map mode `openWeights` was given (`{ mmap }`): a format whose file a write through a view would damage refuses `'r+'`. */
  mmap?: MapMode | undefined;
}

/** The options {@link FormatOptions} names (see `knownKeys`, options.ts). */
export const FORMAT_KEYS = { ...NPZ_KEYS, ...HTTP_KEYS, mmap: true } as const satisfies KnownKeys<FormatOptions>;
