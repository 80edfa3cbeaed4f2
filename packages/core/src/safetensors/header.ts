/**
 * The safetensors header: an 8-byte little-endian length, then that many bytes of JSON naming each
 * tensor's dtype, shape and byte range in the data that follows. Validated as the reference library
 * (huggingface/safetensors) validates it, and more strictly where it would be ambiguous: a key
 * written twice is refused (the reference keeps the last one).
 */
import { NpyError } from '../errors.js';
import { type DType, parseDescr, shapeRepr } from '../format/dtype.js';
import type { NpyHeader } from '../format/header.js';
import { checkNoDuplicateKeys } from './strict-json.js';
import { checkHeaderBytes } from '../weights/header-cap.js';

/** Bytes of the length field before the JSON. */
export const LENGTH_BYTES = 8;

/**
 * safetensors' dtype names (every one the reference defines) and the descr each is read as
 * (little-endian, as the format stores). F4 and F6 are packed: several elements share a byte, so
 * their tensors' bytes are `elements × bits / 8` (`packed`), unpacked to ml_dtypes' one per byte.
 */
const DTYPES: Record<string, { readonly descr: string; readonly packed?: 4 | 6 }> = {
  BOOL: { descr: '|b1' },
  F4: { descr: 'float4_e2m1fn', packed: 4 },
  F6_E2M3: { descr: 'float6_e2m3fn', packed: 6 },
  F6_E3M2: { descr: 'float6_e3m2fn', packed: 6 },
  U8: { descr: '|u1' },
  I8: { descr: '|i1' },
  F8_E5M2: { descr: 'float8_e5m2' },
  F8_E4M3: { descr: 'float8_e4m3fn' },
  F8_E8M0: { descr: 'float8_e8m0fnu' },
  F8_E4M3FNUZ: { descr: 'float8_e4m3fnuz' },
  F8_E5M2FNUZ: { descr: 'float8_e5m2fnuz' },
  I16: { descr: '<i2' },
  U16: { descr: '<u2' },
  F16: { descr: '<f2' },
  BF16: { descr: 'bfloat16' },
  I32: { descr: '<i4' },
  U32: { descr: '<u4' },
  F32: { descr: '<f4' },
  C64: { descr: '<c8' },
  F64: { descr: '<f8' },
  I64: { descr: '<i8' },
  U64: { descr: '<u8' },
};

/**
 * Why a tensor of a dtype the format defines cannot be read, by dtype name: listed (names, info)
 * and refused by `get`. F6 packs four 6-bit elements into three bytes in a bit order that neither
 * safetensors nor ml_dtypes nor PyTorch defines (F4's order is PyTorch's `float4_e2m1fn_x2`: the
 * first element in the low four bits).
 */
const UNREADABLE: Record<string, string> = {
  F6_E2M3: 'safetensors packs four 6-bit elements into three bytes in an order that neither it, ml_dtypes nor PyTorch defines',
  F6_E3M2: 'safetensors packs four 6-bit elements into three bytes in an order that neither it, ml_dtypes nor PyTorch defines',
};

/**
 * The safetensors name of a dtype, or null where the format has none.
 * @example
 * safetensorsDTypeName(parseDescr('<f4'));   // 'F32'
 */
export function safetensorsDTypeName(dtype: DType): string | null {
  for (const [name, { descr, packed }] of Object.entries(DTYPES)) {
    if (packed === undefined && parseDescr(descr).equals(dtype.withByteOrder('<'))) return name;
  }
  return null;
}

/** One tensor of a safetensors file: its dtype and shape, and where its bytes are in the file. */
export interface SafetensorsEntry {
  readonly name: string;
  /** The dtype name as the file writes it (`F32`, `BF16`). */
  readonly stored: string;
  /** As a {@link NpyHeader} (data offset in the file), so every .npy region reader reads it. */
  readonly header: NpyHeader;
  /** Bits per element of a packed dtype (F4, F6): `header.dataBytes` is the packed bytes. */
  readonly packed?: 4 | 6;
  /** Why `get` refuses this tensor (a dtype the format defines and npyts cannot read); absent when it reads. */
  readonly unreadable?: string;
}

/** A safetensors file's header: its tensors in file order, its `__metadata__`, and where its data starts. */
export interface SafetensorsIndex {
  readonly entries: readonly SafetensorsEntry[];
  readonly metadata: Readonly<Record<string, string>>;
  /** Byte offset in the file where tensor data starts (8 + the header's length). */
  readonly dataStart: number;
}

function bad(message: string, offset?: number): never {
  throw new NpyError('BAD_SAFETENSORS', message, offset === undefined ? {} : { offset });
}

/**
 * The header's length from the file's first 8 bytes, checked against the file's size.
 * @example
 * headerLength(first8, file.size);   // bytes of JSON after the length field
 */
export function headerLength(first: Uint8Array, fileSize: number): number {
  if (first.length < LENGTH_BYTES || fileSize < LENGTH_BYTES) bad(`a safetensors file starts with an 8-byte header length; this one has ${fileSize} bytes`);
  const n = new DataView(first.buffer, first.byteOffset, LENGTH_BYTES).getBigUint64(0, true);
  checkHeaderBytes(n, `the header length says ${n} bytes`, 0);
  if (n > BigInt(fileSize - LENGTH_BYTES)) bad(`the header length (${n} bytes) runs past the end of the file (${fileSize} bytes)`, 0);
  return Number(n);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/**
 * Parse and check a header's JSON (`json`: the bytes after the length field) for a file of
 * `fileSize` bytes: every tensor's dtype known, its shape's byte size its range's, the ranges in
 * order from 0 without gaps or overlaps, covering the data to the file's end; `__metadata__` a map
 * of strings. Bounded by the header's bytes: no declared size allocates anything.
 * @example
 * const index = parseSafetensorsHeader(jsonBytes, file.size);
 */
export function parseSafetensorsHeader(json: Uint8Array, fileSize: number): SafetensorsIndex {
  let text: string;
  try {
    text = utf8.decode(json);
  } catch {
    bad('the header is not UTF-8', LENGTH_BYTES);
  }
  checkNoDuplicateKeys(text, LENGTH_BYTES);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    bad(`the header is not JSON (${(e as Error).message})`, LENGTH_BYTES);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) bad('the header is not a JSON object', LENGTH_BYTES);
  const dataStart = LENGTH_BYTES + json.length;
  const dataBytes = fileSize - dataStart;
  let metadata: Record<string, string> = {};
  const raw: { name: string; stored: string; dtype: DType; packed: 4 | 6 | undefined; shape: number[]; begin: number; end: number }[] = [];
  const described = parsed as Record<string, unknown>;
  // Keys then lookups: Object.entries of 100 000 keys builds 100 000 pairs for nothing.
  for (const name of Object.keys(described)) {
    const value = described[name];
    if (name === '__metadata__') {
      metadata = checkMetadata(value);
      continue;
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) bad(`tensor '${name}' is not described by an object`);
    const { dtype, shape, data_offsets: offsets } = value as Record<string, unknown>;
    if (typeof dtype !== 'string') bad(`tensor '${name}' has no dtype name`);
    const known = Object.hasOwn(DTYPES, dtype) ? DTYPES[dtype] : undefined;
    // As the reference: a name it does not define fails the whole header.
    if (known === undefined) bad(`tensor '${name}' has dtype '${dtype}', which safetensors does not define (${Object.keys(DTYPES).join(', ')})`);
    if (!Array.isArray(shape) || !shape.every(isCount)) bad(`tensor '${name}' has a shape that is not a list of non-negative integers`);
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isCount)) {
      bad(`tensor '${name}' has data_offsets that are not [begin, end] byte offsets`);
    }
    const [begin, end] = offsets as [number, number];
    raw.push({ name, stored: dtype, dtype: parseDescr(known.descr), packed: known.packed, shape: shape as number[], begin, end });
  }
  // As the reference: in order of their ranges, each starting where the one before ended.
  raw.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let at = 0;
  const entries = raw.map((t): SafetensorsEntry => {
    if (t.begin !== at || t.end < t.begin) {
      bad(`tensor '${t.name}' has data_offsets [${t.begin}, ${t.end}]; the tensors' ranges must follow one another from 0 (the one before ends at ${at})`);
    }
    let size = 1;
    for (const d of t.shape) size *= d;
    // Packed elements (F4, F6) end on a byte boundary, as the reference requires.
    const bits = size * (t.packed ?? t.dtype.itemsize * 8);
    if (Number.isSafeInteger(bits) && bits % 8 !== 0) {
      bad(`tensor '${t.name}': ${size} elements of ${t.stored} are ${bits} bits, which do not end on a byte boundary`);
    }
    const bytes = bits / 8;
    if (!Number.isSafeInteger(bits) || bytes !== t.end - t.begin) {
      bad(
        `tensor '${t.name}': shape ${shapeRepr(t.shape)} of ${t.stored} is ${Number.isSafeInteger(bytes) ? bytes : 'more than 2^53'} bytes, its data_offsets hold ${t.end - t.begin}`,
      );
    }
    at = t.end;
    return {
      name: t.name,
      stored: t.stored,
      header: { version: [1, 0], dtype: t.dtype, shape: t.shape, fortranOrder: false, dataOffset: dataStart + t.begin, size, dataBytes: bytes },
      ...(t.packed === undefined ? {} : { packed: t.packed }),
      ...(Object.hasOwn(UNREADABLE, t.stored) ? { unreadable: UNREADABLE[t.stored]! } : {}),
    };
  });
  if (at !== dataBytes) {
    throw new NpyError(
      at > dataBytes ? 'DATA_TRUNCATED' : 'BAD_SAFETENSORS',
      `the tensors' data is ${at} bytes, the file has ${dataBytes} after its header${at > dataBytes ? ' (the file is cut short)' : ''}`,
    );
  }
  return { entries, metadata, dataStart };
}

function checkMetadata(value: unknown): Record<string, string> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) bad('__metadata__ is not an object of strings');
  const out: Record<string, string> = Object.create(null);
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (typeof v !== 'string') bad(`__metadata__ '${k}' is not a string`);
    out[k] = v;
  }
  return out;
}
