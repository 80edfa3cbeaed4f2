/**
 * Writing GGUF files (version 3, little-endian) as gguf-py's `GGUFWriter` lays them out: the
 * preamble, every key/value in the order given, every tensor's info in the order given, zeros to
 * the alignment, then each tensor's bytes followed by zeros to the alignment. Tensors are converted
 * or quantized as gguf-py's `gguf.quants.quantize` does (quantize.ts), one tensor at a time, when
 * its bytes are asked for: the header is made first, from shapes and types alone.
 */
import type { NdArray } from '../array/ndarray.js';
import type { DType } from '../format/dtype.js';
import { dataToBytes } from '../array/layout.js';
import { toOrder } from '../array/order.js';
import { checkWrittenName } from '../array/safe-object.js';
import { toFloat32 } from '../array/widen.js';
import { NpyError } from '../errors.js';
import { checkOptions, knownKeys, type KnownKeys } from '../options.js';
import { familyOf } from '../format/dtype-cases.js';
import { numberToFloat16 } from '../format/float-bits.js';
import type { TypedArray } from '../format/js-types.js';
import { toNdArray, type ArraySpec } from '../npy.js';
import { VT, type GgufValueType } from './header.js';
import { float32ToBf16, QUANTIZE } from './quantize.js';
import { GGML_TYPES, type GgmlType } from './types.js';

/** The tensor types npyts writes, named as gguf-py names them, lowercase. */
export type GgufWriteType = 'f32' | 'f16' | 'bf16' | 'q8_0' | 'q4_0' | 'q4_1' | 'q5_0' | 'q5_1' | 'tq1_0' | 'tq2_0';
/**
 * Every {@link GgufWriteType}, in the order the docs list them.
 * @example
 * GGUF_WRITE_TYPES.includes('q8_0');   // true
 */
export const GGUF_WRITE_TYPES: readonly GgufWriteType[] = ['f32', 'f16', 'bf16', 'q8_0', 'q4_0', 'q4_1', 'q5_0', 'q5_1', 'tq1_0', 'tq2_0'];

/**
 * llama.cpp's `general.file_type` of a file whose tensors are written as each type (gguf-py's
 * `LlamaFileType`: `ALL_F32`, `MOSTLY_F16`, `MOSTLY_Q8_0`, …): a file converted to another type says so.
 * @example
 * GGUF_FILE_TYPES.q8_0;   // 7
 */
export const GGUF_FILE_TYPES: Readonly<Record<GgufWriteType, number>> = {
  f32: 0,
  f16: 1,
  q4_0: 2,
  q4_1: 3,
  q8_0: 7,
  q5_0: 8,
  q5_1: 9,
  bf16: 32,
  tq1_0: 36,
  tq2_0: 37,
};

/** Tensors to write: by name, in an object or a Map, written in that order. */
export type GgufInput = Record<string, NdArray | ArraySpec> | Map<string, NdArray | ArraySpec>;

/** Key/values to write, in that order; each value as {@link GgufFile.metadata} gives it. */
export type GgufMetadataInput = Record<string, unknown> | Map<string, unknown>;

/** Options of {@link encodeGguf} and `saveGguf`. */
export interface GgufWriteOptions {
  /**
   * The header's key/values, in order. A value's GGUF type is `metadataTypes[key]` where given, else
   * taken from the value: a string STRING, a boolean BOOL, an integer number INT32 (INT64 past
   * int32), any other number FLOAT64 (exact; declare `'FLOAT32'` where a reader wants float32, as
   * llama.cpp does), a bigint INT64 (UINT64 past it), a typed array an ARRAY of its type
   * (`Float32Array` FLOAT32 … `BigUint64Array` UINT64), an array of strings, booleans or arrays an
   * ARRAY of those, an array of numbers an ARRAY typed as its items would be; an empty plain array
   * is an ARRAY of STRING.
   */
  metadata?: GgufMetadataInput;
  /** GGUF value types by key (as a `GgufFile`'s `metadataTypes` gives them): a file read is written back with its own types. */
  metadataTypes?: Readonly<Record<string, GgufValueType | string>>;
  /**
   * The tensor type: one for every float tensor, or a function choosing one per tensor (its choice
   * is taken as it is; `undefined` keeps the tensor's own type). With one type, tensors a type
   * cannot hold are written as llama.cpp's convert writes them: tensors of one axis (or none) F32,
   * and tensors whose rows (last axis) are not a whole number of the type's blocks F16. Integer
   * tensors are written as themselves (I8–I64) either way. Without a type each tensor keeps its
   * own: float32, float16, bfloat16 and float64 as F32, F16, BF16 and F64, float8 widened to F32.
   */
  type?: GgufWriteType | ((name: string, array: NdArray) => GgufWriteType | undefined);
  /** Where tensors start (a power of two): written as `general.alignment`. 32 when neither this nor the metadata says. */
  alignment?: number;
}

/** The options {@link GgufWriteOptions} names (see `knownKeys`, options.ts). */
export const GGUF_WRITE_KEYS = { metadata: true, metadataTypes: true, type: true, alignment: true } as const satisfies KnownKeys<GgufWriteOptions>;
const GGUF_WRITE_KEY_SET = knownKeys<GgufWriteOptions>(GGUF_WRITE_KEYS);

/** A GGUF file to write as pieces: the header, then the bytes of each tensor (made when asked for). */
export interface GgufParts {
  /** The preamble, key/values and tensor infos, padded to the alignment. */
  readonly header: Uint8Array;
  /** Each tensor, in order: its name, the ggml type written and its bytes (padding included). */
  readonly tensors: readonly { readonly name: string; readonly type: string; readonly bytes: number }[];
  /** Every tensor's bytes, then zeros to the alignment, one tensor converted or quantized at a time. */
  bodies(): Generator<Uint8Array>;
  /** Bytes of the whole file. */
  readonly size: number;
}

const VT_BY_NAME: ReadonlyMap<string, VT> = new Map(
  Object.entries(VT)
    .filter((e): e is [string, VT] => typeof e[1] === 'number')
    .map(([k, v]) => [k, v]),
);
const DEFAULT_ALIGNMENT = 32;
const littleHost = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
/** Deepest nesting of arrays written (the reader's limit). */
const MAX_NESTING = 64;
const INTEGER_RANGE: Partial<Record<VT, readonly [bigint, bigint]>> = {
  [VT.UINT8]: [0n, 0xffn],
  [VT.INT8]: [-0x80n, 0x7fn],
  [VT.UINT16]: [0n, 0xffffn],
  [VT.INT16]: [-0x8000n, 0x7fffn],
  [VT.UINT32]: [0n, 0xffffffffn],
  [VT.INT32]: [-0x80000000n, 0x7fffffffn],
  [VT.UINT64]: [0n, 0xffffffffffffffffn],
  [VT.INT64]: [-0x8000000000000000n, 0x7fffffffffffffffn],
};
/** The item type of each typed array a value may be (Uint8ClampedArray is not a GGUF type). */
const TYPED_VT: readonly [abstract new (...args: never[]) => ArrayBufferView, VT][] = [
  [Uint8Array, VT.UINT8],
  [Int8Array, VT.INT8],
  [Uint16Array, VT.UINT16],
  [Int16Array, VT.INT16],
  [Uint32Array, VT.UINT32],
  [Int32Array, VT.INT32],
  [Float32Array, VT.FLOAT32],
  [Float64Array, VT.FLOAT64],
  [BigUint64Array, VT.UINT64],
  [BigInt64Array, VT.INT64],
];

const badValue = (key: string, message: string): NpyError => new NpyError('BAD_VALUE', `metadata '${key}': ${message}`);

/** Bytes appended little-endian into a buffer that grows as needed. */
class ByteWriter {
  private buf = new Uint8Array(1024);
  private view = new DataView(this.buf.buffer);
  length = 0;
  private room(n: number): number {
    if (this.length + n > this.buf.length) {
      const next = new Uint8Array(Math.max(2 * this.buf.length, this.length + n));
      next.set(this.buf.subarray(0, this.length));
      this.buf = next;
      this.view = new DataView(next.buffer);
    }
    const at = this.length;
    this.length += n;
    return at;
  }
  // Each write makes room first: room() may replace the buffer and its view.
  u8(v: number): void {
    const at = this.room(1);
    this.buf[at] = v;
  }
  u32(v: number): void {
    const at = this.room(4);
    this.view.setUint32(at, v, true);
  }
  u64(v: number | bigint): void {
    const at = this.room(8);
    this.view.setBigUint64(at, BigInt(v), true);
  }
  bytes(b: Uint8Array): void {
    const at = this.room(b.length);
    this.buf.set(b, at);
  }
  string(s: string): void {
    const b = new TextEncoder().encode(s);
    this.u64(b.length);
    this.bytes(b);
  }
  zeros(n: number): void {
    this.room(n);
  }
  /** One value of `type`, already checked. */
  scalar(type: VT, v: unknown): void {
    switch (type) {
      case VT.UINT8:
      case VT.INT8:
      case VT.BOOL:
        this.u8(type === VT.BOOL ? (v ? 1 : 0) : Number(v) & 0xff);
        return;
      case VT.UINT16:
      case VT.INT16: {
        const at = this.room(2);
        this.view.setUint16(at, Number(v) & 0xffff, true);
        return;
      }
      case VT.UINT32:
      case VT.INT32:
        this.u32(Number(v) >>> 0);
        return;
      case VT.UINT64:
      case VT.INT64:
        this.u64(BigInt.asUintN(64, BigInt(v as number | bigint)));
        return;
      case VT.FLOAT32: {
        const at = this.room(4);
        this.view.setFloat32(at, v as number, true);
        return;
      }
      case VT.FLOAT64: {
        const at = this.room(8);
        this.view.setFloat64(at, v as number, true);
        return;
      }
      case VT.STRING:
        this.string(v as string);
        return;
    }
  }
  result(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }
}

/** The GGUF type a value takes where none is declared (see {@link GgufWriteOptions.metadata}). */
function inferType(key: string, v: unknown): VT {
  if (typeof v === 'string') return VT.STRING;
  if (typeof v === 'boolean') return VT.BOOL;
  if (typeof v === 'number') {
    // -0 keeps its sign as a float.
    if (!Number.isInteger(v) || Object.is(v, -0)) return VT.FLOAT64;
    return v >= -0x80000000 && v <= 0x7fffffff ? VT.INT32 : Number.isSafeInteger(v) ? VT.INT64 : VT.FLOAT64;
  }
  if (typeof v === 'bigint') return v <= 0x7fffffffffffffffn ? VT.INT64 : VT.UINT64;
  if (Array.isArray(v) || ArrayBuffer.isView(v)) return VT.ARRAY;
  throw badValue(key, `a ${v === null ? 'null' : typeof v} is not a GGUF value (strings, numbers, bigints, booleans, typed arrays and arrays of those are)`);
}

/** The item type of an array value: its typed array's, or what its items share. */
function itemType(key: string, v: unknown): VT {
  if (ArrayBuffer.isView(v)) {
    const hit = TYPED_VT.find(([ctor]) => v instanceof ctor);
    if (!hit) throw badValue(key, `a ${v.constructor.name} is not a GGUF array type (typed arrays of 8 to 64-bit integers, float32 and float64 are)`);
    return hit[1];
  }
  const items = v as readonly unknown[];
  if (items.length === 0) return VT.STRING;
  if (items.every((x) => typeof x === 'number')) {
    // Numbers share the widest type any of them needs: all int32, else all int64, else float64.
    const types = new Set(items.map((x) => inferType(key, x)));
    return types.has(VT.FLOAT64) ? VT.FLOAT64 : types.has(VT.INT64) ? VT.INT64 : VT.INT32;
  }
  const first = inferType(key, items[0]);
  for (const x of items) {
    const t = inferType(key, x);
    if (t !== first && !(first === VT.ARRAY && t === VT.ARRAY)) {
      throw badValue(key, `an array's items share one GGUF type, but it holds ${VT[first]} and ${VT[t]} (${typeof items[0]} and ${typeof x})`);
    }
  }
  return first;
}

/** Refuse a value its type cannot hold exactly (integers out of range or not whole, a value of another kind). */
function checkScalar(key: string, type: VT, v: unknown): void {
  const range = INTEGER_RANGE[type];
  if (range) {
    const ok = (typeof v === 'number' && Number.isInteger(v)) || typeof v === 'bigint';
    const n = ok ? BigInt(v as number | bigint) : 0n;
    if (!ok || n < range[0] || n > range[1]) throw badValue(key, `${String(v)} is not a ${VT[type]} (integers ${range[0]} to ${range[1]})`);
    return;
  }
  const want = type === VT.BOOL ? 'boolean' : type === VT.STRING ? 'string' : 'number';
  if (typeof v !== want) throw badValue(key, `${VT[type]} holds a ${want}, not a ${typeof v}`);
  if (type === VT.STRING) checkWrittenName(v as string, `metadata '${key}' string`);
}

/** Write a key's value of `type` (ARRAY: its items' type, then count, then items), checked as it goes. */
function writeValue(w: ByteWriter, key: string, type: VT, v: unknown, depth: number): void {
  if (type !== VT.ARRAY) {
    checkScalar(key, type, v);
    w.scalar(type, v);
    return;
  }
  if (!Array.isArray(v) && !ArrayBuffer.isView(v)) throw badValue(key, `ARRAY holds an array or a typed array, not a ${typeof v}`);
  if (depth >= MAX_NESTING) throw badValue(key, `arrays nest more than ${MAX_NESTING} deep (a cycle?)`);
  const items = itemType(key, v);
  w.u32(items);
  if (ArrayBuffer.isView(v)) {
    const t = v as TypedArray;
    w.u64(t.length);
    const bytes = new Uint8Array(t.buffer, t.byteOffset, t.byteLength).slice();
    if (!littleHost) for (let i = 0; i < bytes.length; i += t.BYTES_PER_ELEMENT) bytes.subarray(i, i + t.BYTES_PER_ELEMENT).reverse();
    w.bytes(bytes);
    return;
  }
  const list = v as readonly unknown[];
  w.u64(list.length);
  for (const x of list) writeValue(w, key, items, x, depth + 1);
}

/** A float tensor's target type under a single `type` option, by llama.cpp's convert's rule. */
function fallback(type: GgmlType, shape: readonly number[]): GgmlType {
  if (type.name === 'F32') return type;
  if (shape.length <= 1) return GGML_TYPES.get(0)!;
  if (type.block > 1 && shape[shape.length - 1]! % type.block !== 0) return GGML_TYPES.get(1)!;
  return type;
}

const ggmlTypeOf = (name: string): GgmlType => [...GGML_TYPES.values()].find((t) => t.name === name.toUpperCase())!;

function checkWriteType(t: unknown, what: string): GgufWriteType {
  if (typeof t === 'string' && (GGUF_WRITE_TYPES as readonly string[]).includes(t)) return t as GgufWriteType;
  throw new NpyError('BAD_OPTION', `${what} is ${JSON.stringify(t)}; npyts writes ${GGUF_WRITE_TYPES.join(', ')}`);
}

/**
 * The type a tensor is written as: the option's (with the fallback), or its own. A type chosen by a
 * function is asked with the array, so only a tensor held in memory (`array`) can have one.
 */
function targetOf(name: string, tensor: GgufTensorEntry, option: GgufWriteOptions['type']): GgmlType {
  const dt = tensor.dtype;
  const array = tensor.array;
  if (typeof option === 'function' && array === undefined) {
    throw new NpyError(
      'BAD_OPTION',
      `'${name}' is read when its turn comes to be written, after the header that names its type: a type chosen by a function needs the tensors in memory; give one type (a string) instead`,
    );
  }
  const family = familyOf(dt);
  const where = `'${name}' is ${dt.name}`;
  if (family === 'int') {
    const t = GGML_TYPES.get({ 1: 24, 2: 25, 4: 26, 8: 27 }[dt.itemsize]!);
    if (t) {
      // An integer tensor is written as itself: a type chosen for it by name must say so.
      const r = typeof option === 'function' ? option(name, array!) : undefined;
      if (r !== undefined) {
        throw new NpyError(
          'BAD_OPTION',
          `${where}, an integer tensor, which is written as itself; the type chosen for it (${String(r)}) is for floats: answer undefined for it`,
        );
      }
      return t;
    }
  }
  const float = (family === 'float' && dt.realBytes <= 8) || family === 'mlfloat';
  if (!float) {
    throw new NpyError('NO_COUNTERPART', `${where}, which GGUF cannot hold (it holds floats and signed integers of 8 to 64 bits); convert it first`);
  }
  let chosen: GgufWriteType | undefined;
  if (typeof option === 'function') {
    const r = option(name, array!);
    chosen = r === undefined ? undefined : checkWriteType(r, `the type chosen for '${name}'`);
  } else if (option !== undefined) {
    chosen = option;
  }
  if (chosen === undefined) {
    const own = dt.mlFloat === 'bfloat16' ? 'BF16' : dt.kind === 'f' && dt.realBytes === 8 ? 'F64' : dt.kind === 'f' && dt.realBytes === 2 ? 'F16' : 'F32';
    return ggmlTypeOf(own);
  }
  const t = ggmlTypeOf(chosen);
  if (typeof option !== 'function') return fallback(t, tensor.shape);
  const row = tensor.shape.length === 0 ? 1 : tensor.shape[tensor.shape.length - 1]!;
  if (row % t.block !== 0) {
    throw new NpyError(
      'BAD_OPTION',
      `'${name}' has rows of ${row} values, not a whole number of ${chosen}'s blocks of ${t.block}: choose f32, f16 or bf16 for it`,
    );
  }
  return t;
}

/** A tensor's bytes in the type it is written as. */
function tensorBytes(name: string, array: NdArray, type: GgmlType): Uint8Array {
  const c = toOrder(array, 'C');
  const dt = c.dtype;
  if (type.descr !== undefined && type.name !== 'F32' && type.name !== 'F16') {
    // I8–I64, F64 and BF16 are the tensor's own type: its bytes, little-endian.
    if (type.name !== 'BF16' || dt.mlFloat === 'bfloat16') return dataToBytes(dt.withByteOrder('<'), c.data as TypedArray);
  }
  const where = `tensor '${name}'`;
  if (type.name === 'F16') {
    if (dt.kind === 'f' && dt.realBytes === 2) return dataToBytes(dt.withByteOrder('<'), c.data as TypedArray);
    // numpy's astype(float16): one rounding from the tensor's own values.
    const out = new Uint16Array(c.size);
    const data = familyOf(dt) === 'mlfloat' ? toFloat32(c).data : (c.data as Float32Array | Float64Array);
    for (let i = 0; i < out.length; i++) out[i] = numberToFloat16(data[i]!);
    return littleEndianBytes(out);
  }
  const f32 = asFloat32(c);
  if (type.name === 'F32') return littleEndianBytes(f32);
  if (type.name === 'BF16') {
    const out = new Uint16Array(f32.length);
    float32ToBf16(f32, out);
    return littleEndianBytes(out);
  }
  const quantize = QUANTIZE.get(type.name)!;
  const out = new Uint8Array((f32.length / type.block) * type.bytes);
  quantize(f32, out, where);
  return out;
}

/** The values as float32 (gguf-py's `astype(np.float32)`: float64 rounded, narrow floats widened exactly). */
function asFloat32(c: NdArray): Float32Array {
  const dt = c.dtype;
  if (dt.kind === 'f' && dt.realBytes === 8) return Float32Array.from(c.data as Float64Array);
  return toFloat32(c).data as Float32Array;
}

/** The values' bytes, little-endian: a view on a little-endian host, a swapped copy on another (never the caller's data swapped). */
function littleEndianBytes(a: Float32Array | Uint16Array): Uint8Array {
  const bytes = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  if (littleHost) return bytes;
  const copy = bytes.slice();
  for (let i = 0; i < copy.length; i += a.BYTES_PER_ELEMENT) copy.subarray(i, i + a.BYTES_PER_ELEMENT).reverse();
  return copy;
}

/**
 * The pieces of a GGUF file, checked before any is made: names once each (well-formed Unicode),
 * dtypes GGUF holds, types npyts writes, metadata values their types hold, an alignment that is a
 * power of two. Tensors are converted or quantized when {@link GgufParts.bodies} reaches them; a
 * NaN or an infinity in a tensor quantized to a block type is refused there (NOT_REPRESENTABLE).
 * @example
 * const { header, bodies } = ggufParts(tensors, { type: 'q8_0', metadata: { 'general.architecture': 'llama' } });
 */
export function ggufParts(input: GgufInput, options: GgufWriteOptions = {}): GgufParts {
  checkOptions('ggufParts', options, GGUF_WRITE_KEY_SET);
  const named = input instanceof Map ? [...input.entries()] : Object.entries(input);
  const arrays = named.map(([name, value]): [string, NdArray] => [name, toNdArray(value)]);
  const plan = ggufPlan(
    arrays.map(([name, array]) => ({ name, dtype: array.dtype, shape: array.shape, array })),
    options,
  );
  return {
    header: plan.header,
    tensors: plan.tensors,
    size: plan.size,
    *bodies() {
      for (const [i, [, array]] of arrays.entries()) yield* plan.body(i, array);
    },
  };
}

/** One tensor to write: its name, dtype and shape, and its data where it is held (else given to {@link GgufPlan.body} when its turn comes). */
export interface GgufTensorEntry {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly array?: NdArray | undefined;
}

/**
 * A GGUF file planned from its tensors' names, dtypes and shapes (the header needs no more): its
 * header, and each tensor's bytes made from its data when its turn comes.
 * @internal
 */
export interface GgufPlan {
  readonly header: Uint8Array;
  readonly tensors: GgufParts['tensors'];
  readonly size: number;
  /** Tensor `i`'s bytes from its data (checked against the dtype and shape planned), then its padding. */
  body(i: number, array: NdArray): Generator<Uint8Array>;
}

/**
 * {@link ggufParts} from tensors given by name, dtype and shape: the header is made now, each
 * tensor's bytes when {@link GgufPlan.body} is given its data (a file read one tensor at a time).
 * @internal
 */
export function ggufPlan(given: readonly GgufTensorEntry[], options: GgufWriteOptions = {}): GgufPlan {
  checkOptions('ggufPlan', options, GGUF_WRITE_KEY_SET);
  if (options.type !== undefined && typeof options.type !== 'function') checkWriteType(options.type, 'type');
  const metadata = options.metadata ?? {};
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata))
    throw new NpyError('BAD_OPTION', 'metadata must be an object or a Map of key/values');
  const entries: [string, unknown][] = metadata instanceof Map ? [...metadata.entries()] : Object.entries(metadata);
  const declared = options.metadataTypes ?? {};
  // A type declared for a key the metadata does not have is a misspelt key, not a type to drop.
  const keys = new Set(entries.map(([k]) => k));
  const stray = Object.keys(declared).filter((k) => !keys.has(k));
  if (stray.length) {
    throw new NpyError('BAD_OPTION', `metadataTypes names ${stray.map((k) => `'${k}'`).join(', ')}, which the metadata does not have: check the spelling`);
  }
  const typeOfKey = (key: string, v: unknown): VT => {
    if (!Object.hasOwn(declared, key)) return inferType(key, v);
    const t = VT_BY_NAME.get(String(declared[key]));
    if (t === undefined)
      throw new NpyError(
        'BAD_OPTION',
        `metadataTypes '${key}' is ${JSON.stringify(declared[key])}, not a GGUF value type (${[...VT_BY_NAME.keys()].join(', ')})`,
      );
    return t;
  };
  // general.alignment: a uint32 power of two, from the metadata or the option (which must agree).
  let alignment = DEFAULT_ALIGNMENT;
  const fromMetadata = entries.find(([k]) => k === 'general.alignment');
  const checkAlignment = (a: unknown, what: string): number => {
    if (typeof a !== 'number' || !Number.isInteger(a) || a <= 0 || a > 2 ** 31 || (a & (a - 1)) !== 0) {
      throw new NpyError('BAD_OPTION', `${what} is ${String(a)}; it must be a power of two (a uint32)`);
    }
    return a;
  };
  if (fromMetadata) {
    if (typeOfKey('general.alignment', fromMetadata[1]) !== VT.UINT32 && Object.hasOwn(declared, 'general.alignment')) {
      throw new NpyError('BAD_OPTION', `general.alignment is a UINT32 (gguf-py refuses any other type), not ${declared['general.alignment']}`);
    }
    alignment = checkAlignment(fromMetadata[1], 'metadata general.alignment');
    if (options.alignment !== undefined && options.alignment !== alignment) {
      throw new NpyError('BAD_OPTION', `alignment ${options.alignment} and metadata general.alignment ${alignment} disagree: give one`);
    }
  } else if (options.alignment !== undefined) {
    alignment = checkAlignment(options.alignment, 'alignment');
    entries.push(['general.alignment', alignment]);
  }

  const tensors = given.map((e) => {
    checkWrittenName(e.name, 'tensor name');
    return { name: e.name, dtype: e.dtype, shape: e.shape, type: targetOf(e.name, e, options.type) };
  });

  const w = new ByteWriter();
  w.u32(0x46554747); // 'GGUF'
  w.u32(3);
  w.u64(tensors.length);
  w.u64(entries.length);
  for (const [key, value] of entries) {
    if (typeof key !== 'string') throw new NpyError('BAD_OPTION', `metadata keys are strings, not ${typeof key}`);
    checkWrittenName(key, 'metadata key');
    const type = key === 'general.alignment' ? VT.UINT32 : typeOfKey(key, value);
    w.string(key);
    w.u32(type);
    writeValue(w, key, type, value, 0);
  }
  const pad = (n: number) => Math.ceil(n / alignment) * alignment;
  let offset = 0;
  const layout = tensors.map((t) => {
    const size = t.shape.reduce((a, b) => a * b, 1);
    const bytes = (size / t.type.block) * t.type.bytes;
    w.string(t.name);
    w.u32(t.shape.length);
    for (let i = t.shape.length - 1; i >= 0; i--) w.u64(t.shape[i]!);
    w.u32(t.type.id);
    w.u64(offset);
    offset += pad(bytes);
    return { name: t.name, type: t.type.name, bytes, padded: pad(bytes) };
  });
  w.zeros(pad(w.length) - w.length);
  const header = w.result();
  return {
    header,
    tensors: layout.map((l) => ({ name: l.name, type: l.type, bytes: l.padded })),
    size: header.length + offset,
    *body(i: number, given: NdArray) {
      const t = tensors[i]!;
      const array = toNdArray(given);
      // A file read a tensor at a time must give what its info said: the header already says it.
      if (array.dtype.name !== t.dtype.name) {
        throw new NpyError('UNEXPECTED_DTYPE', `tensor '${t.name}' read as ${array.dtype.name} where its info gave ${t.dtype.name}`);
      }
      if (array.shape.length !== t.shape.length || array.shape.some((d, k) => d !== t.shape[k])) {
        throw new NpyError('SHAPE_MISMATCH', `tensor '${t.name}' read with shape (${array.shape.join(', ')}) where its info gave (${t.shape.join(', ')})`);
      }
      const bytes = tensorBytes(t.name, array, t.type);
      yield bytes;
      const rest = layout[i]!.padded - bytes.length;
      if (rest > 0) yield new Uint8Array(rest);
    },
  };
}

/**
 * A GGUF file in memory, read by gguf-py's `GGUFReader` and llama.cpp (and `GgufFile`): tensors in
 * the order given, converted or quantized as `gguf.quants.quantize` does, byte for byte.
 * @example
 * const bytes = encodeGguf({ 'token_embd.weight': w }, { type: 'q8_0', metadata: { 'general.architecture': 'llama' } });
 */
export function encodeGguf(input: GgufInput, options: GgufWriteOptions = {}): Uint8Array {
  checkOptions('encodeGguf', options, GGUF_WRITE_KEY_SET);
  const parts = ggufParts(input, options);
  const out = new Uint8Array(parts.size);
  out.set(parts.header, 0);
  let at = parts.header.length;
  for (const b of parts.bodies()) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}
