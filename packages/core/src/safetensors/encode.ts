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

/**
 * The pieces of a .safetensors file, checked before any is made: names once each and not
 * `__metadata__`, dtypes the format has (bool, integers, float16/32/64, bfloat16, float8, complex64),
 * metadata of strings. Fortran-order arrays are written in C order, as the format requires.
 * @example
 * const { header, bodies } = safetensorsParts({ w: array });
 */
export function safetensorsParts(input: SafetensorsInput, options: SafetensorsWriteOptions = {}): SafetensorsParts {
  const metadata = options.metadata;
  if (metadata !== undefined) {
    if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata)) throw new NpyError('BAD_OPTION', 'metadata must be an object of strings');
    for (const [k, v] of Object.entries(metadata)) {
      if (typeof v !== 'string') throw new NpyError('BAD_OPTION', `metadata '${k}' must be a string, not ${typeof v}`);
      checkWrittenName(k, 'metadata key');
      checkWrittenName(v, `metadata '${k}'`);
    }
  }
  const named = input instanceof Map ? [...input.entries()] : Object.entries(input);
  const tensors = named.map(([name, value]) => {
    if (name === '__metadata__') throw new NpyError('BAD_OPTION', "'__metadata__' is the header's metadata, not a tensor name; pass metadata in the options");
    checkWrittenName(name, 'tensor name');
    const array = toNdArray(value);
    const stored = safetensorsDTypeName(array.dtype);
    if (stored === null) {
      throw new NpyError(
        'NO_COUNTERPART',
        `'${name}' is ${array.dtype.name}, which safetensors cannot hold (it holds bool, integers, float16/32/64, bfloat16, float8 and complex64)`,
      );
    }
    return { name, stored, array };
  });
  tensors.sort((a, b) => DTYPE_ORDER.indexOf(b.stored) - DTYPE_ORDER.indexOf(a.stored) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  // No prototype: a tensor named '__proto__' is a name like any other (on `{}` it would set the
  // prototype and vanish from the header, its bytes written all the same).
  const entries = namedObject<unknown>();
  if (metadata !== undefined) entries.__metadata__ = metadata;
  const bodies: Uint8Array[] = [];
  let at = 0;
  for (const t of tensors) {
    const c = toOrder(t.array, 'C');
    // Little-endian, as the format stores: a view where the data is native already.
    const body = dataToBytes(c.dtype.withByteOrder('<'), c.data as TypedArray);
    entries[t.name] = { dtype: t.stored, shape: c.shape, data_offsets: [at, at + body.length] };
    at += body.length;
    bodies.push(body);
  }
  const json = JSON.stringify(entries);
  const jsonBytes = new TextEncoder().encode(json);
  const padded = Math.ceil(jsonBytes.length / 8) * 8;
  const header = new Uint8Array(LENGTH_BYTES + padded);
  new DataView(header.buffer).setBigUint64(0, BigInt(padded), true);
  header.set(jsonBytes, LENGTH_BYTES);
  header.fill(0x20, LENGTH_BYTES + jsonBytes.length);
  return { header, bodies, size: header.length + at };
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
