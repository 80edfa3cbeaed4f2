/** The .npy preamble: magic, version, header length and the header dict, read and written as numpy does. */
import { type DType, dtypeFromHeaderValue, parseDescr, shapeRepr, voidAsMlFloat } from './dtype.js';
import type { MlFloatName } from './ml-floats.js';
import { NpyError } from '../errors.js';
import { DECODE_RULES, checkNumbers, checkOptions, knownKeys, pickOptions } from '../options.js';
import { PyTuple, parsePyLiteral, reprPy, type PyValue } from './literal.js';
import type { DescrInput } from './descr-types.js';

/**
 * The six bytes every .npy file starts with: `\x93NUMPY`.
 * @example
 * MAGIC.every((b, i) => bytes[i] === b);   // a .npy file starts with \x93NUMPY
 */
export const MAGIC: Uint8Array = new Uint8Array([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]); // \x93NUMPY
export const ARRAY_ALIGN = 64;
/** numpy ≥ 1.24 leaves room for the growth axis to reach this many digits. */
export const GROWTH_AXIS_MAX_DIGITS = 21;
/**
 * Refuse headers longer than this unless told otherwise (numpy's own default is 10 000 bytes).
 * Parsing is linear, but a record dtype costs about 25 bytes of memory per header byte (every field
 * becomes objects), so the default stays at 1 MiB (about 25 MiB to decode); larger headers need
 * the maxHeaderBytes option.
 * @example
 * readHeader(bytes, { maxHeaderBytes: DEFAULT_MAX_HEADER_BYTES * 4 });   // allow larger headers
 */
export const DEFAULT_MAX_HEADER_BYTES = 1 << 20;

/** The .npy format version of a header: 1.0, 2.0 or 3.0. */
export type FormatVersion = [1 | 2 | 3, 0];

/** A parsed .npy header: version, dtype, shape, order, where the data starts and how many bytes it takes. */
export interface NpyHeader {
  version: FormatVersion;
  dtype: DType;
  shape: number[];
  fortranOrder: boolean;
  /** Byte offset where the array data starts. */
  dataOffset: number;
  /** Number of elements (exact). */
  size: number;
  /** Bytes of array data the header promises. */
  dataBytes: number;
  /** The header's dict text as written (its `descr` is not normalised: `'<d'` stays `'<d'`). */
  text?: string;
  /** The header's `descr` value as written, parsed once with the header. */
  descrWritten?: PyValue;
}

/** Options of {@link readHeader}: limits, and the dtype to `expect`. */
export interface ReadHeaderOptions {
  /** Refuse headers longer than this (default {@link DEFAULT_MAX_HEADER_BYTES}). */
  maxHeaderBytes?: number;
  /**
   * The dtype the caller expects: checked once, when the header is read, and an NpyError naming
   * both dtypes otherwise; the result is then typed for it (`NdArray<'<f4'>`). Byte order is free
   * (a `'>f4'` file matches `'<f4'`; its data is native-endian in memory either way) unless
   * `exactByteOrder` is set.
   */
  expect?: DescrInput;
  /** With `expect`: the byte order must match too. */
  exactByteOrder?: boolean;
  /**
   * Read a plain void dtype as the narrow float it holds: ml_dtypes writes `bfloat16` as `<V2` and
   * `float8_e4m3fn` as `<V1`, which numpy and npyts otherwise read as raw bytes. A dtype that is not
   * a void of that size is refused (`DTYPE_MISMATCH`). `<f1` is read as `float8_e5m2` without it.
   */
  voidAs?: MlFloatName;
}

/** The options {@link ReadHeaderOptions} names: callers with wider options pick these (`pickOptions`). */
export const READ_HEADER_KEYS: ReadonlySet<string> = knownKeys<ReadHeaderOptions>({ maxHeaderBytes: true, expect: true, exactByteOrder: true, voidAs: true });

/**
 * {@link readHeader} for a caller with wider options (a decoder's, an archive's, a reader's): their
 * numbers checked (a NaN limit is a mistake whatever reads it), the header's own picked.
 * @internal
 */
export function readHeaderOf(input: Uint8Array | ArrayBuffer, options: object): NpyHeader {
  checkNumbers(options, DECODE_RULES);
  return readHeader(input, pickOptions(options as ReadHeaderOptions, READ_HEADER_KEYS));
}

const latin1 = new TextDecoder('latin1');
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The header's `descr` exactly as written, parsed from its text (not normalised: `'<d'` stays `'<d'`). */
export function descrAsWritten(header: Pick<NpyHeader, 'descrWritten'>): PyValue | undefined {
  return header.descrWritten;
}

/** How many bytes the preamble (magic, version, length field) takes for a version. */
function lengthFieldSize(major: number): number {
  return major === 1 ? 2 : 4;
}

/**
 * How many leading bytes are needed before {@link readHeader} can succeed: 12 to learn the
 * header length, then the returned total. Lets callers read only what they must.
 * @example
 * headerBytesNeeded(bytes.subarray(0, 12));   // preamble + header length, e.g. 128
 */
export function headerBytesNeeded(prefix: Uint8Array): number {
  return dataStartOf(prefix) ?? 12;
}

/**
 * Where a .npy file's data starts (its preamble and header end), from the version and the header's
 * length in its first bytes; null while fewer than 10 (version 1) or 12 (later versions) are there.
 * Nothing else is checked ({@link readHeader} does that). Self-contained: the browser's inflate
 * workers run it from its source text.
 * @example
 * dataStartOf(bytes.subarray(0, 12));   // e.g. 128
 */
export function dataStartOf(prefix: Uint8Array): number | null {
  if (prefix.length < 10) return null;
  if (prefix[6] === 1) return 10 + (prefix[8]! | (prefix[9]! << 8));
  if (prefix.length < 12) return null;
  return 12 + (prefix[8]! | (prefix[9]! << 8) | (prefix[10]! << 16)) + prefix[11]! * 0x1000000;
}

function checkMagic(bytes: Uint8Array): void {
  const n = Math.min(bytes.length, MAGIC.length);
  for (let i = 0; i < n; i++) {
    if (bytes[i] !== MAGIC[i]) {
      // A zip's local header signature: an .npz given where a .npy is read.
      const zip = bytes[0] === 0x50 && bytes[1] === 0x4b && (bytes.length < 3 || bytes[2] === 0x03);
      const hint = zip
        ? ' but a zip archive (.npz): read it with loadNpz or openNpz (decodeNpz in a browser)'
        : ': it does not start with the magic string \\x93NUMPY';
      throw new NpyError('BAD_MAGIC', `not a .npy file${hint}`, { offset: i });
    }
  }
  if (bytes.length < MAGIC.length + 2) {
    throw new NpyError('TRUNCATED', `truncated .npy preamble: ${bytes.length} bytes, at least ${MAGIC.length + 4} needed`, { offset: bytes.length });
  }
}

/**
 * Read and validate the preamble and header dict. Only the header's bytes need to be present.
 * @example
 * const h = readHeader(bytes);   // { version, dtype, shape, fortranOrder, dataOffset, size, dataBytes }
 */
export function readHeader(input: Uint8Array | ArrayBuffer, options: ReadHeaderOptions = {}): NpyHeader {
  checkOptions('readHeader', options, READ_HEADER_KEYS);
  checkNumbers(options, DECODE_RULES);
  const bytes = input instanceof Uint8Array ? input : new Uint8Array(input);
  checkMagic(bytes);
  const major = bytes[6]!;
  const minor = bytes[7]!;
  if ((major !== 1 && major !== 2 && major !== 3) || minor !== 0) {
    throw new NpyError('UNSUPPORTED_VERSION', `unsupported .npy format version ${major}.${minor} (npyts reads 1.0, 2.0 and 3.0)`, { offset: 6 });
  }
  const lenSize = lengthFieldSize(major);
  const start = 8 + lenSize;
  if (bytes.length < start) {
    throw new NpyError('TRUNCATED', `truncated .npy preamble: the header length field ends at byte ${start} but the input has ${bytes.length} bytes`, {
      offset: bytes.length,
    });
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLen = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const max = options.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES;
  if (headerLen > max) {
    throw new NpyError(
      'HEADER_TOO_LARGE',
      `header of ${headerLen} bytes exceeds the limit of ${max} bytes; raise it with the maxHeaderBytes option (decoding takes about 25 bytes of memory per header byte)`,
      { offset: 8 },
    );
  }
  const end = start + headerLen;
  if (end > bytes.length) {
    throw new NpyError('TRUNCATED', `header claims ${headerLen} bytes but only ${bytes.length - start} follow the preamble`, { offset: start });
  }
  const raw = bytes.subarray(start, end);
  let text: string;
  if (major === 3) {
    try {
      text = utf8.decode(raw);
    } catch {
      throw new NpyError('HEADER_SYNTAX', 'format 3.0 header is not valid UTF-8', { offset: start });
    }
  } else {
    text = latin1.decode(raw);
  }
  const parsed = parsePyLiteral(text, { allowLongSuffix: major < 3, baseOffset: start });
  const h = interpretHeaderDict(parsed, start);
  const size = exactSize(h.shape, start);
  const dataBytes = size * h.dtype.itemsize;
  if (!Number.isSafeInteger(dataBytes)) {
    throw new NpyError('SIZE_OVERFLOW', `array of shape ${shapeRepr(h.shape)} and item size ${h.dtype.itemsize} is larger than 2^53 bytes`, { offset: start });
  }
  const dtype = options.voidAs === undefined ? h.dtype : voidAsMlFloat(h.dtype, options.voidAs);
  if (options.expect !== undefined) checkExpected(dtype, options.expect, options.exactByteOrder ?? false, start);
  return {
    version: [major, 0],
    dtype,
    shape: h.shape,
    fortranOrder: h.fortranOrder,
    dataOffset: end,
    size,
    dataBytes,
    text,
    descrWritten: h.descrWritten,
  };
}

/**
 * Whether `dtype` is the descr `expected` (byte order free unless `exact`).
 * @example
 * matchesDescr(parseDescr('>f4'), '<f4');         // true: byte order free
 * matchesDescr(parseDescr('>f4'), '<f4', true);   // false
 */
export function matchesDescr(dtype: DType, expected: DescrInput | DType, exact = false): boolean {
  const want = parseDescr(expected as DescrInput);
  return exact ? dtype.equals(want) : dtype.withByteOrder('<').equals(want.withByteOrder('<'));
}

function checkExpected(dtype: DType, expected: DescrInput, exact: boolean, offset: number): void {
  if (!matchesDescr(dtype, expected, exact)) {
    const want = parseDescr(expected);
    throw new NpyError('UNEXPECTED_DTYPE', `expected dtype ${want.descrLiteral}${exact ? '' : ' (any byte order)'}, the header says ${dtype.descrLiteral}`, {
      offset,
    });
  }
}

function exactSize(shape: number[], offset: number): number {
  if (shape.includes(0)) return 0;
  let n = 1;
  for (const d of shape) {
    n *= d;
    if (!Number.isSafeInteger(n)) {
      throw new NpyError('SIZE_OVERFLOW', `shape ${shapeRepr(shape)} has more than 2^53 elements`, { offset });
    }
  }
  return n;
}

function interpretHeaderDict(v: PyValue, offset: number): { dtype: DType; shape: number[]; fortranOrder: boolean; descrWritten: PyValue } {
  if (!(v instanceof Map)) {
    throw new NpyError('HEADER_NOT_DICT', 'header is not a Python dict literal', { offset });
  }
  const expected = ['descr', 'fortran_order', 'shape'];
  const keys = [...v.keys()];
  const missing = expected.filter((k) => !v.has(k));
  const extra = keys.filter((k) => typeof k !== 'string' || !expected.includes(k));
  if (missing.length || extra.length) {
    const parts = [];
    if (missing.length) parts.push(`missing ${missing.map((k) => `'${k}'`).join(', ')}`);
    if (extra.length) parts.push(`unexpected ${extra.map((k) => JSON.stringify(k)).join(', ')}`);
    throw new NpyError('HEADER_KEYS', `header must have exactly the keys 'descr', 'fortran_order', 'shape': ${parts.join('; ')}`, { offset });
  }
  const shapeV = v.get('shape')!;
  if (!(shapeV instanceof PyTuple)) {
    throw new NpyError('BAD_SHAPE', 'shape must be a tuple of integers', { offset });
  }
  const shape = shapeV.items.map((d) => {
    if (typeof d === 'bigint') {
      throw new NpyError('SIZE_OVERFLOW', `shape dimension ${d} is larger than 2^53`, { offset });
    }
    if (typeof d !== 'number' || !Number.isInteger(d) || d < 0) {
      throw new NpyError('BAD_SHAPE', `shape must hold non-negative integers, found ${reprPy(d)}`, { offset });
    }
    return d;
  });
  const fo = v.get('fortran_order');
  if (typeof fo !== 'boolean') {
    throw new NpyError('BAD_FORTRAN_ORDER', 'fortran_order must be True or False', { offset });
  }
  let dtype: DType;
  try {
    dtype = dtypeFromHeaderValue(v.get('descr')!);
  } catch (e) {
    if (e instanceof NpyError && e.offset === undefined) {
      throw new NpyError(e.code, e.message, { offset });
    }
    throw e;
  }
  // numpy folds a top-level subarray dtype into the array's shape.
  if (dtype.subarray) {
    if (fo && dtype.subarray.shape.length && shape.length > 1) {
      throw new NpyError('BAD_DESCR', 'a subarray descr with fortran_order=True has no defined layout', { offset });
    }
    shape.push(...dtype.subarray.shape);
    dtype = dtype.subarray.base;
  }
  checkDimensions(shape.length, offset);
  return { dtype, shape, fortranOrder: fo, descrWritten: v.get('descr')! };
}

/**
 * numpy's NPY_MAXDIMS: it neither reads nor writes arrays of more dimensions.
 * @example
 * createArray('<f4', new Array(MAX_DIMS + 1).fill(1));   // throws, as numpy does
 */
export const MAX_DIMS = 64;

export function checkDimensions(ndim: number, offset?: number): void {
  if (ndim > MAX_DIMS) {
    throw new NpyError('BAD_SHAPE', `${ndim} dimensions: numpy supports at most ${MAX_DIMS}`, offset === undefined ? {} : { offset });
  }
}

/**
 * Refuse a shape no reader could take: dimensions that are not non-negative integers, more than
 * {@link MAX_DIMS} of them, or data past 2^53 bytes (the same limits the reader applies), so a
 * writer never puts a header on disk that numpy or npyts would refuse.
 */
export function checkShapeToWrite(dtype: DType, shape: readonly number[]): void {
  checkDimensions(shape.length);
  for (const d of shape) {
    if (!Number.isSafeInteger(d) || d < 0)
      throw new NpyError('BAD_SHAPE', `shape ${shapeRepr(shape)}: dimensions must be non-negative integers, not ${String(d)}`);
  }
  if (!Number.isSafeInteger(exactSize([...shape], 0) * dtype.itemsize)) {
    throw new NpyError('SIZE_OVERFLOW', `an array of shape ${shapeRepr(shape)} and item size ${dtype.itemsize} is larger than 2^53 bytes`);
  }
}

/** numpy's header dict text: sorted keys, the repr of each value, a trailing ', '. */
function dictText(dtype: DType, shape: readonly number[], fortranOrder: boolean): string {
  return `{'descr': ${dtype.descrLiteral}, 'fortran_order': ${fortranOrder ? 'True' : 'False'}, 'shape': ${shapeRepr(shape)}, }`;
}

function pythonHeaderText(dtype: DType, shape: readonly number[], fortranOrder: boolean): string {
  let text = dictText(dtype, shape, fortranOrder);
  if (shape.length > 0) {
    const growth = String(shape[fortranOrder ? shape.length - 1 : 0]);
    text += ' '.repeat(Math.max(0, GROWTH_AXIS_MAX_DIGITS - growth.length));
  }
  return text;
}

function isLatin1(s: string): boolean {
  // eslint-disable-next-line no-control-regex
  return /^[\u0000-\u00ff]*$/.test(s);
}

function encodeLatin1(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/**
 * The header text (dict, spaces, newline) in exactly `length` bytes, for rewriting the shape in place;
 * null when it does not fit (or a 1.0/2.0 header would need characters beyond latin-1).
 */
export function headerTextOfLength(dtype: DType, shape: readonly number[], fortranOrder: boolean, length: number, major: 1 | 2 | 3): Uint8Array | null {
  const text = dictText(dtype, shape, fortranOrder);
  if (major < 3 && !isLatin1(text)) return null;
  const body = major === 3 ? new TextEncoder().encode(text) : encodeLatin1(text);
  if (body.length + 1 > length) return null;
  const out = new Uint8Array(length).fill(0x20);
  out.set(body, 0);
  out[length - 1] = 0x0a;
  return out;
}

/** Wrap header text into magic + version + length + text + padding + '\n', aligned to 64 bytes. */
function wrapHeader(text: Uint8Array, major: 1 | 2 | 3): Uint8Array | null {
  const prefix = 8 + lengthFieldSize(major);
  const hlen = text.length + 1;
  const pad = ARRAY_ALIGN - ((prefix + hlen) % ARRAY_ALIGN);
  const total = prefix + hlen + pad;
  if (major === 1 && hlen + pad > 0xffff) return null;
  if (hlen + pad > 0xffffffff) return null;
  const out = new Uint8Array(total);
  out.set(MAGIC, 0);
  out[6] = major;
  out[7] = 0;
  const view = new DataView(out.buffer);
  if (major === 1) view.setUint16(8, hlen + pad, true);
  else view.setUint32(8, hlen + pad, true);
  out.set(text, prefix);
  out.fill(0x20, prefix + text.length, total - 1);
  out[total - 1] = 0x0a;
  return out;
}

/**
 * Refuse a format version to write other than 1, 2 or 3 (or none: numpy's choice). Writers call it
 * before they touch a file, so a refused option never replaces a good file.
 * @example
 * checkFormatVersion(4);   // throws NpyError BAD_OPTION
 */
export function checkFormatVersion(version: unknown): asserts version is 1 | 2 | 3 | undefined {
  if (version !== undefined && version !== 1 && version !== 2 && version !== 3) {
    throw new NpyError(
      'BAD_OPTION',
      `version must be 1, 2 or 3 (numpy's format versions 1.0, 2.0, 3.0), or left out for numpy's choice; got ${String(version)}`,
    );
  }
}

/**
 * The header bytes numpy 2.x's `np.save` writes for this dtype, shape and order: sorted keys,
 * growth padding, 64-byte alignment; version 1.0, else 2.0 when too long, else 3.0 when not latin-1.
 * @example
 * encodeHeader(parseDescr('<f4'), [2, 3], false).length;   // 128: data starts 64-byte aligned
 */
export function encodeHeader(dtype: DType, shape: readonly number[], fortranOrder: boolean, version?: 1 | 2 | 3): Uint8Array {
  checkFormatVersion(version);
  checkShapeToWrite(dtype, shape);
  const text = pythonHeaderText(dtype, shape, fortranOrder);
  const latin = isLatin1(text);
  const tryVersions: (1 | 2 | 3)[] = version ? [version] : latin ? [1, 2] : [3];
  for (const v of tryVersions) {
    if (v < 3 && !latin) {
      throw new NpyError('HEADER_VERSION', `format ${v}.0 stores the header as latin-1, but this header has other characters (use version 3)`);
    }
    const wrapped = wrapHeader(v === 3 ? new TextEncoder().encode(text) : encodeLatin1(text), v);
    if (wrapped) return wrapped;
  }
  throw new NpyError('HEADER_VERSION', `header of ${text.length} characters does not fit format ${version ?? 2}.0`);
}
