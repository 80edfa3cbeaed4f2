/** Arrays as ONNX Runtime tensors and back: the dtype rules between numpy and ORT. */
import { Tensor } from 'onnxruntime-common';
import { unicodeWidth } from '@npyts/core/plumbing';
import { NdArray, NpyError, arrayFromValues, matchDType, numberToFloat16, parseDescr, readItem, toFloat32, toOrder, type DType } from '@npyts/core';

/** The ORT element types an npyts array can become (ORT's 4-bit types have no numpy counterpart). */
export type OrtType = Exclude<Tensor.Type, 'int4' | 'uint4'>;

/** Options of {@link toOrtTensor}. */
export interface ToOrtTensorOptions {
  /**
   * bfloat16 and float8 have no ORT JavaScript type: convert them to `'float32'` (exact) or
   * `'float16'` (float8 exactly; bfloat16 rounded to float16's precision, and refused where a value
   * does not fit). Without it such an array is refused. Other dtypes ignore it.
   */
  as?: 'float32' | 'float16';
  /**
   * The `Tensor` class to build (default: onnxruntime-common's, as this package imports it). Pass your
   * runtime's, `ort.Tensor`, for `instanceof ort.Tensor` to hold in an ES module using onnxruntime-node:
   * onnxruntime-node is CommonJS, so its `Tensor` is onnxruntime-common's CommonJS copy while an ES
   * module importing onnxruntime-common gets the ES copy (two classes; ORT itself takes either, as it
   * reads a tensor's fields). onnxruntime-web and CommonJS programs have one copy and need not pass it.
   */
  Tensor?: typeof Tensor;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The ORT type of an array's dtype, or an error saying why it has none: the one table of this
 * package's dtype rules. ORT names its numeric types as numpy does (`float32`, `int64`, `bool`),
 * so booleans, integers and IEEE floats map by the dtype's own name; text and bytes are `string`.
 * @example
 * ortTypeOf(parseDescr('<i8'));   // 'int64'
 */
export function ortTypeOf(dt: DType, options: ToOrtTensorOptions = {}): OrtType {
  const none = (what: string) => (): never => {
    throw new NpyError('NO_COUNTERPART', what);
  };
  const noType = none(`${dt.name} arrays have no ONNX Runtime tensor type`);
  const records = none('record arrays have no ONNX Runtime tensor type; convert one field (getField) at a time');
  const named = (d: DType): OrtType => d.name as OrtType;
  return matchDType<OrtType>(dt, {
    record: records,
    subarray: records,
    object: noType,
    datetime: noType,
    timedelta: noType,
    void: noType,
    complex: none(`${dt.name} arrays have no ONNX Runtime JavaScript tensor type; pass real and imaginary parts separately`),
    bool: named,
    int: named,
    uint: named,
    float: (d) => (d.realBytes > 8 ? noType() : named(d)),
    mlfloat: (d) => {
      if (options.as) return options.as;
      throw new NpyError(
        'NO_COUNTERPART',
        `${d.name} has no ONNX Runtime JavaScript tensor type; pass { as: 'float32' } (exact) or { as: 'float16' } to convert`,
      );
    },
    str: () => 'string',
    bytes: () => 'string',
  });
}

function toFloat16Bits(array: NdArray): Uint16Array {
  const wide = toFloat32(array).data;
  const out = new Uint16Array(wide.length);
  for (let i = 0; i < wide.length; i++) {
    const bits = numberToFloat16(wide[i]!);
    // 0x7c00 / 0xfc00: ±infinity. A finite value that became infinite does not fit float16.
    if ((bits & 0x7fff) === 0x7c00 && Number.isFinite(wide[i]!)) {
      throw new NpyError('NOT_REPRESENTABLE', `${array.dtype.name} value ${wide[i]} at flat index ${i} does not fit float16; pass { as: 'float32' }`);
    }
    out[i] = bits;
  }
  return out;
}

function stringsOf(array: NdArray): string[] {
  const text = array.dtype.kind === 'U';
  return Array.from({ length: array.size }, (_, i) => {
    const v = readItem(array.dtype, array.data, i);
    if (text) return v as string;
    try {
      return utf8.decode(v as Uint8Array);
    } catch {
      throw new NpyError('NOT_REPRESENTABLE', `${array.dtype.str} element at flat index ${i} is not UTF-8; ONNX Runtime strings are text`);
    }
  });
}

/**
 * An `ort.Tensor` (onnxruntime-common's, so it serves onnxruntime-node and onnxruntime-web alike;
 * `{ Tensor: ort.Tensor }` builds your runtime's own class) with the array's values and shape. It shares the array's memory wherever the dtype maps:
 * float16/32/64, int8–64, uint8–64 and bool (float16 as ORT takes it, raw bits in a Uint16Array).
 * It copies where it must: a Fortran-ordered array is copied to C order (ORT is row-major), text
 * and bytes become a `string[]`, and bfloat16 or float8 are converted only under `{ as }`.
 * (npyts arrays are always contiguous and in the machine's byte order, so big-endian files are
 * already swapped when read.)
 * @example
 * const t = toOrtTensor(await loadNpy('x.npy'));        // t.type: 'float32', t.dims: [1, 3, 224, 224]
 * const w = toOrtTensor(bf16, { as: 'float32' });        // bfloat16 widened exactly
 * const n = toOrtTensor(x, { Tensor: ort.Tensor });       // n instanceof ort.Tensor, also in an ES module with onnxruntime-node
 */
export function toOrtTensor(array: NdArray, options: ToOrtTensorOptions = {}): Tensor {
  const type = ortTypeOf(array.dtype, options);
  const c = toOrder(array, 'C');
  const dims = [...c.shape];
  const Made = options.Tensor ?? Tensor;
  if (type === 'string') return new Made('string', stringsOf(c), dims);
  if (c.dtype.mlFloat) {
    return type === 'float16' ? new Made('float16', toFloat16Bits(c), dims) : new Made('float32', toFloat32(c).data, dims);
  }
  return new Made(type, c.data as Tensor.DataTypeMap[Exclude<OrtType, 'string'>], dims);
}

/** The numpy dtype of an ORT type: ORT names its types as numpy does, so the core parses the name. */
function dtypeOf(type: string): DType {
  const refuse = (): never => {
    throw new NpyError('NO_COUNTERPART', `ONNX Runtime tensor type ${type} has no numpy counterpart here`);
  };
  let dt: DType;
  try {
    dt = parseDescr(type);
  } catch {
    return refuse();
  }
  return ortTypeOf(dt) === type ? dt : refuse();
}

/** What {@link fromOrtTensor} reads: any ORT tensor on the CPU (onnxruntime-node's, -web's or common's). */
export interface OrtTensorLike {
  /** ORT's element type name (`'float32'`, `'int64'`, `'string'`...). */
  readonly type: string;
  /** The shape. */
  readonly dims: readonly number[];
  /** Where the data is (`'cpu'` unless a GPU execution provider kept it). */
  readonly location?: string;
  /** The values: a typed array, or `string[]` for strings. */
  readonly data: unknown;
}

/**
 * An npyts array with the tensor's values (C order), sharing the tensor's memory for every numeric
 * type and bool (float16 tensors become `<f2` arrays over the same raw bits). String tensors become
 * `<U` arrays (a copy). A tensor on a GPU must be downloaded first (`await t.getData()`, then
 * `new ort.Tensor(t.type, data, t.dims)`); 4-bit types have no numpy counterpart and are refused.
 * @example
 * const out = fromOrtTensor((await session.run(feeds)).logits);   // NdArray of '<f4'
 */
export function fromOrtTensor(tensor: OrtTensorLike): NdArray {
  if (tensor.location !== undefined && tensor.location !== 'cpu' && tensor.location !== 'cpu-pinned') {
    throw new NpyError(
      'NO_COUNTERPART',
      `tensor is on '${tensor.location}', not the CPU; download it first (await tensor.getData()) and wrap the data in a new ort.Tensor`,
    );
  }
  const shape = [...tensor.dims];
  if (tensor.type === 'string') {
    const strings = tensor.data as string[];
    return arrayFromValues(strings, `<U${unicodeWidth(strings)}`, { shape });
  }
  const dt = dtypeOf(tensor.type);
  let data = tensor.data as NdArray['data'];
  // ORT may hand float16 back as a Float16Array where the platform has one: keep the raw bits.
  if (dt.kind === 'f' && dt.itemsize === 2 && !(data instanceof Uint16Array)) {
    const d = data as unknown as { buffer: ArrayBufferLike; byteOffset: number; length: number };
    data = new Uint16Array(d.buffer, d.byteOffset, d.length);
  }
  return new NdArray(dt, shape, data, 'C');
}
