/**
 * Writing .safetensors: the header as the reference library writes it (tensors ordered by dtype, the
 * widest first, then by name; JSON padded with spaces to a multiple of 8 bytes), then each tensor's
 * bytes in C order, little-endian.
 */
import type { NdArray } from '../array/ndarray.js';
import { dataToBytes } from '../array/layout.js';
import { toOrder } from '../array/order.js';
import { NpyError } from '../errors.js';
import { checkWrittenName, namedObject } from '../array/safe-object.js';
import type { TypedArray } from '../format/js-types.js';
import type { DType } from '../format/dtype.js';
import { toNdArray, type ArraySpec } from '../npy.js';
import { LENGTH_BYTES, safetensorsDTypeName } from './header.js';

/** The reference's dtype order (its enum); tensors are written from the last of these to the first. */
const DTYPE_ORDER = [
  'BOOL',
  'F4',
  'F6_E2M3',
  'F6_E3M2',
  'U8',
  'I8',
  'F8_E5M2',
  'F8_E4M3',
  'F8_E8M0',
  'I16',
  'U16',
  'F16',
  'BF16',
  'I32',
  'U32',
  'F32',
  'C64',
  'F64',
  'I64',
  'U64',
];

/** Tensors to write: by name, in an object or a Map. */
export type SafetensorsInput = Record<string, NdArray | ArraySpec> | Map<string, NdArray | ArraySpec>;

/** Options of {@link encodeSafetensors} and `saveSafetensors`. */
export interface SafetensorsWriteOptions {
  /** The header's `__metadata__`: strings only (`{ format: 'pt' }` is what transformers writes). */
  metadata?: Record<string, string>;
}

/** A file to write as pieces: the length field and header, then each tensor's bytes in order. */
export interface SafetensorsParts {
  readonly header: Uint8Array;
  readonly bodies: readonly Uint8Array[];
  /** Bytes of the whole file. */
  readonly size: number;
}

/** One tensor of a header: its name, dtype and shape (C order), its data not needed yet. */
export interface SafetensorsEntry {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
}

/** A tensor's name, refused where it is the header's own key (`__metadata__`): the one check of every save. */
export function checkTensorName(name: string): void {
  if (name === '__metadata__') throw new NpyError('BAD_OPTION', "'__metadata__' is the header's metadata, not a tensor name; pass metadata in the options");
}

/** A file's header and where each tensor's bytes go, in the order they are written. */
export interface SafetensorsLayout {
  readonly header: Uint8Array;
  /** Tensors in the order their bytes follow the header, with their byte range in the data. */
  readonly order: readonly { readonly name: string; readonly begin: number; readonly end: number }[];
  /** Bytes of the whole file. */
  readonly size: number;
}

function checkMetadata(metadata: Record<string, string> | undefined): void {
  if (metadata === undefined) return;
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata)) throw new NpyError('BAD_OPTION', 'metadata must be an object of strings');
  for (const [k, v] of Object.entries(metadata)) {
    if (typeof v !== 'string') throw new NpyError('BAD_OPTION', `metadata '${k}' must be a string, not ${typeof v}`);
    checkWrittenName(k, 'metadata key');
    checkWrittenName(v, `metadata '${k}'`);
  }
}

/**
 * The header of a .safetensors file from its tensors' names, dtypes and shapes alone, checked:
 * names once each and not `__metadata__`, dtypes the format has, metadata of strings. What a
 * streamed write needs before it reads any tensor's data.
 * @example
 * const { header, order } = safetensorsLayout([{ name: 'w', dtype: dtype('<f4'), shape: [2, 3] }]);
 */
export function safetensorsLayout(tensors: readonly SafetensorsEntry[], options: SafetensorsWriteOptions = {}): SafetensorsLayout {
  const metadata = options.metadata;
  checkMetadata(metadata);
  const stored = tensors.map((t) => {
    checkTensorName(t.name);
    checkWrittenName(t.name, 'tensor name');
    const name = safetensorsDTypeName(t.dtype);
    if (name === null) {
      throw new NpyError(
        'NO_COUNTERPART',
        `'${t.name}' is ${t.dtype.name}, which safetensors cannot hold (it holds bool, integers, float16/32/64, bfloat16, float8 and complex64)`,
      );
    }
    return { entry: t, stored: name };
  });
  stored.sort(
    (a, b) => DTYPE_ORDER.indexOf(b.stored) - DTYPE_ORDER.indexOf(a.stored) || (a.entry.name < b.entry.name ? -1 : a.entry.name > b.entry.name ? 1 : 0),
  );
  // No prototype: a tensor named '__proto__' is a name like any other (on `{}` it would set the
  // prototype and vanish from the header, its bytes written all the same).
  const entries = namedObject<unknown>();
  if (metadata !== undefined) entries.__metadata__ = metadata;
  const order: { name: string; begin: number; end: number }[] = [];
  let at = 0;
  for (const { entry, stored: dtype } of stored) {
    if (Object.hasOwn(entries, entry.name)) throw new NpyError('NAME_CLASH', `the tensor name '${entry.name}' is given twice`);
    const bytes = entry.shape.reduce((n, d) => n * d, entry.dtype.itemsize);
    entries[entry.name] = { dtype, shape: [...entry.shape], data_offsets: [at, at + bytes] };
    order.push({ name: entry.name, begin: at, end: at + bytes });
    at += bytes;
  }
  const jsonBytes = new TextEncoder().encode(JSON.stringify(entries));
  const padded = Math.ceil(jsonBytes.length / 8) * 8;
  const header = new Uint8Array(LENGTH_BYTES + padded);
  new DataView(header.buffer).setBigUint64(0, BigInt(padded), true);
  header.set(jsonBytes, LENGTH_BYTES);
  header.fill(0x20, LENGTH_BYTES + jsonBytes.length);
  return { header, order, size: header.length + at };
}

/** A tensor's bytes as a .safetensors file stores them: C order, little-endian (a view where the data is so already). */
export function safetensorsBytes(array: NdArray): Uint8Array {
  const c = toOrder(array, 'C');
  return dataToBytes(c.dtype.withByteOrder('<'), c.data as TypedArray);
}

/**
 * A tensor's bytes, checked against what its header says (`entry`: the dtype and shape a source's
 * `info` gave) and the range its header gives: a source whose `get` gives other data than its `info`
 * promised is refused, not written under the wrong header.
 */
export function checkedBytes(
  given: NdArray,
  at: { readonly name: string; readonly begin: number; readonly end: number },
  entry?: SafetensorsEntry,
): Uint8Array {
  const array = toNdArray(given);
  if (entry !== undefined) {
    if (safetensorsDTypeName(array.dtype) !== safetensorsDTypeName(entry.dtype)) {
      throw new NpyError('UNEXPECTED_DTYPE', `tensor '${at.name}' read as ${array.dtype.name} where its info gave ${entry.dtype.name}`);
    }
    if (array.shape.length !== entry.shape.length || array.shape.some((d, i) => d !== entry.shape[i])) {
      throw new NpyError('SHAPE_MISMATCH', `tensor '${at.name}' read with shape (${array.shape.join(', ')}) where its info gave (${entry.shape.join(', ')})`);
    }
  }
  const bytes = safetensorsBytes(array);
  if (bytes.length !== at.end - at.begin) {
    throw new NpyError('SHAPE_MISMATCH', `tensor '${at.name}' has ${bytes.length} bytes where its header gives ${at.end - at.begin}`);
  }
  return bytes;
}

/**
 * The pieces of a .safetensors file, checked before any is made: names once each and not
 * `__metadata__`, dtypes the format has (bool, integers, float16/32/64, bfloat16, float8, complex64),
 * metadata of strings. Fortran-order arrays are written in C order, as the format requires.
 * @example
 * const { header, bodies } = safetensorsParts({ w: array });
 */
export function safetensorsParts(input: SafetensorsInput, options: SafetensorsWriteOptions = {}): SafetensorsParts {
  const named = input instanceof Map ? [...input.entries()] : Object.entries(input);
  const arrays = new Map<string, NdArray>();
  const entries = named.map(([name, value]): SafetensorsEntry => {
    checkTensorName(name);
    const array = toNdArray(value);
    arrays.set(name, array);
    return { name, dtype: array.dtype, shape: array.shape };
  });
  const { header, order, size } = safetensorsLayout(entries, options);
  const bodies = order.map((t) => checkedBytes(arrays.get(t.name)!, t));
  return { header, bodies, size };
}

/**
 * A .safetensors file in memory, loadable by Python's `safetensors` (and by `SafetensorsFile`).
 * @example
 * const bytes = encodeSafetensors({ 'fc.weight': w }, { metadata: { format: 'pt' } });
 */
export function encodeSafetensors(input: SafetensorsInput, options: SafetensorsWriteOptions = {}): Uint8Array {
  const { header, bodies, size } = safetensorsParts(input, options);
  const out = new Uint8Array(size);
  out.set(header, 0);
  let at = header.length;
  for (const b of bodies) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}
