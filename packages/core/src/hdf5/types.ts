/**
 * HDF5 datatype and dataspace messages: the subset h5py writes for numbers and strings, each told
 * as the npyts dtype it reads as. Other classes are refused by name when their values are read.
 */
import { parseDescr, type DType } from '../format/dtype.js';
import { type Cursor, bad, type Sizes, unsupported } from './bytes.js';

/** Most dimensions an HDF5 dataspace has (the library's `H5S_MAX_RANK`). */
export const MAX_RANK = 32;

/** How a fixed-length string's unused bytes are filled: 0 null-terminated, 1 null-padded, 2 space-padded. */
export type StringPad = 0 | 1 | 2;

/** A datatype this reader reads, or the reason it does not. */
export type Hdf5Type =
  | { readonly kind: 'number'; readonly size: number; readonly descr: string }
  | { readonly kind: 'string'; readonly size: number; readonly pad: StringPad }
  | { readonly kind: 'vlen-string'; readonly size: number }
  | { readonly kind: 'unsupported'; readonly size: number; readonly what: string };

const CLASS_NAMES = ['fixed-point', 'floating-point', 'time', 'string', 'bitfield', 'opaque', 'compound', 'reference', 'enum', 'variable-length', 'array'];

/** The standard IEEE layouts h5py writes: [size, exponent location, exponent size, mantissa size, bias]. */
const IEEE: readonly (readonly number[])[] = [
  [2, 10, 5, 10, 15],
  [4, 23, 8, 23, 127],
  [8, 52, 11, 52, 1023],
];

/** Parse a datatype message (its cursor is left after the message's properties). */
export function parseDatatype(c: Cursor, sizes: Sizes): Hdf5Type {
  const classVersion = c.u8();
  const cls = classVersion & 0x0f;
  const b0 = c.u8();
  c.skip(2);
  const size = c.u32();
  if (size === 0) throw bad(`${c.what} at byte ${c.at} has a datatype of 0 bytes`);
  const name = CLASS_NAMES[cls] ?? `class ${cls}`;
  switch (cls) {
    case 0: {
      const order = b0 & 1 ? '>' : '<';
      const signed = (b0 & 8) !== 0;
      const offset = c.u16();
      const precision = c.u16();
      if (![1, 2, 4, 8].includes(size) || offset !== 0 || precision !== size * 8) {
        return { kind: 'unsupported', size, what: `a ${precision}-bit integer at bit ${offset} of ${size} bytes` };
      }
      return { kind: 'number', size, descr: `${size === 1 ? '|' : order}${signed ? 'i' : 'u'}${size}` };
    }
    case 1: {
      if (b0 & 0x40) return { kind: 'unsupported', size, what: 'a VAX-order float' };
      const order = b0 & 1 ? '>' : '<';
      c.u16(); // bit offset
      const precision = c.u16();
      const expAt = c.u8();
      const expBits = c.u8();
      const mantAt = c.u8();
      const mantBits = c.u8();
      const bias = c.u32();
      const ieee = IEEE.find(([s, ea, eb, mb, bi]) => s === size && ea === expAt && eb === expBits && mb === mantBits && bi === bias);
      if (!ieee || precision !== size * 8 || mantAt !== 0) {
        return { kind: 'unsupported', size, what: `a ${size}-byte float of ${expBits} exponent and ${mantBits} mantissa bits (not IEEE float16/32/64)` };
      }
      return { kind: 'number', size, descr: `${order}f${size}` };
    }
    case 3: {
      const pad = b0 & 0x0f;
      if (pad > 2) throw bad(`${c.what} at byte ${c.at} has a string padding type ${pad} (0, 1 or 2)`);
      return { kind: 'string', size, pad: pad as StringPad };
    }
    case 9: {
      const type = b0 & 0x0f;
      if (type !== 1) {
        // The base type follows; a sequence of it is read by no one here.
        return { kind: 'unsupported', size, what: 'a variable-length sequence' };
      }
      if (size !== 4 + sizes.offsets + 4) throw bad(`${c.what} at byte ${c.at} has a variable-length string of ${size} bytes, not ${8 + sizes.offsets}`);
      return { kind: 'vlen-string', size };
    }
    case 8:
      return { kind: 'unsupported', size, what: 'an enum (h5py writes numpy bool so: store it as uint8)' };
    default:
      return { kind: 'unsupported', size, what: `a ${name} datatype` };
  }
}

/** The npyts dtype a datatype reads as: numbers and fixed-length strings (`|S<n>`); others are refused by name. */
export function dtypeOf(t: Hdf5Type, where: string): DType {
  if (t.kind === 'number') return parseDescr(t.descr);
  if (t.kind === 'string') return parseDescr(`|S${t.size}`);
  if (t.kind === 'vlen-string') throw unsupported(`${where} holds variable-length strings, which npyts reads only as attributes`);
  throw unsupported(`${where} is ${t.what}, which npyts does not read (it reads integers, IEEE floats and strings)`);
}

/** A dataspace: its shape (`[]` for a scalar), or null for a null dataspace (no value). */
export function parseDataspace(c: Cursor, sizes: Sizes): number[] | null {
  const version = c.u8();
  const rank = c.u8();
  const flags = c.u8();
  let type = 1;
  if (version === 1) {
    c.skip(5);
    if (rank === 0) type = 0;
  } else if (version === 2) {
    type = c.u8();
  } else {
    throw bad(`${c.what} at byte ${c.at} has a dataspace of version ${version} (1 or 2)`);
  }
  if (rank > MAX_RANK) throw bad(`${c.what} at byte ${c.at} has a dataspace of ${rank} dimensions; HDF5 allows ${MAX_RANK}`);
  if (type === 2) return null;
  if (type !== 0 && type !== 1) throw bad(`${c.what} at byte ${c.at} has a dataspace of type ${type} (0, 1 or 2)`);
  const shape: number[] = [];
  for (let i = 0; i < rank; i++) {
    const d = c.uint(sizes.lengths);
    if (d < 0) throw bad(`${c.what} at byte ${c.at} has an undefined dimension`);
    shape.push(d);
  }
  if (flags & 1) c.skip(rank * sizes.lengths);
  return type === 0 ? [] : shape;
}

/** Elements of a shape, `BAD_HDF5` past 2^53. */
export function countOf(shape: readonly number[], where: string): number {
  let n = 1;
  for (const d of shape) n *= d;
  if (!Number.isSafeInteger(n)) throw bad(`${where} has a shape ${JSON.stringify(shape)} of more than 2^53 elements`);
  return n;
}

const utf8 = new TextDecoder('utf-8');

/**
 * A fixed-length string's text: cut at its first NUL (null-terminated or -padded) or its trailing
 * spaces, read as UTF-8 whatever the charset says (h5py stores numpy `S` strings as ASCII, and Keras
 * encodes names to UTF-8 into them).
 */
export function fixedString(bytes: Uint8Array, pad: StringPad): string {
  let end = bytes.length;
  if (pad === 2) {
    while (end > 0 && bytes[end - 1] === 0x20) end--;
  } else {
    const nul = bytes.indexOf(0);
    if (nul >= 0) end = nul;
  }
  return utf8.decode(bytes.subarray(0, end));
}

/** A variable-length string's bytes as text (UTF-8, as for fixed-length ones). */
export function vlenString(bytes: Uint8Array): string {
  return utf8.decode(bytes);
}
