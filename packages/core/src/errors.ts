import { redactUrls } from './io/redact.js';

/** Stable machine-readable reasons for an {@link NpyError}. */
export type NpyErrorCode =
  /** Input that does not start with the .npy magic (`\x93NUMPY`), or an archive member that is not .npy data. */
  | 'BAD_MAGIC'
  /** A .npy whose format version is not 1.0, 2.0 or 3.0. */
  | 'UNSUPPORTED_VERSION'
  /** A .npy or archive member that ends inside its preamble or header, or before the bytes its zip records promise. */
  | 'TRUNCATED'
  /** A header that is not a Python literal numpy writes (a syntax error, an unknown token). */
  | 'HEADER_SYNTAX'
  /** A header literal that is not a dict. */
  | 'HEADER_NOT_DICT'
  /** A header dict without exactly the keys `descr`, `fortran_order` and `shape`. */
  | 'HEADER_KEYS'
  /** A `shape` that is not a tuple of non-negative integers (or has more axes than numpy allows). */
  | 'BAD_SHAPE'
  /** A `fortran_order` that is not `True` or `False`. */
  | 'BAD_FORTRAN_ORDER'
  /** A `descr` (or a dtype given in code) that numpy would not accept: an unknown type, a bad record, an overlap. */
  | 'BAD_DESCR'
  /** Array data shorter than the header's shape and dtype need. */
  | 'DATA_TRUNCATED'
  /** A shape whose size in bytes no buffer can hold (past 2^53, or past the platform's largest buffer). */
  | 'SIZE_OVERFLOW'
  /** Object data (a pickle) where no unpickler was given: the message says how to opt in. */
  | 'PICKLE_UNSUPPORTED'
  /** A pickle that names a global outside the unpickler's allowlist (code, not data): refused, nothing run. */
  | 'PICKLE_FORBIDDEN'
  /** A header longer than allowed: a .npy's over `maxHeaderBytes` (numpy's 10 000 by default, the message names the option), a .safetensors' or a GGUF's over the reference's 100 MB (one cap, `weights/header-cap.ts`). */
  | 'HEADER_TOO_LARGE'
  /** A zip container that is malformed (no end record, a bad local header, a corrupt deflate stream). */
  | 'ZIP_FORMAT'
  /** A zip feature npyts does not read (encryption, a compression other than stored and deflate, split archives), or a region read of a deflated member. */
  | 'ZIP_UNSUPPORTED'
  /** A member whose CRC-32 does not match its directory entry. */
  | 'ZIP_CRC'
  /** A member whose sizes disagree (inflated more or less than declared, sizes that cannot be true). */
  | 'ZIP_SIZE'
  /** A key that names no member of the archive (or tensor of a weight file): the message lists the keys it has. */
  | 'NPZ_KEY'
  /** A member larger than one buffer can hold (the message names streamNpzMember), or past 4 GiB compressed without zip64 room. */
  | 'TOO_LARGE'
  /** A file another writer holds locked (an append or a header rewrite in progress elsewhere). */
  | 'LOCKED'
  /** A file whose dtype is not the one the reader expects (`expect`). */
  | 'UNEXPECTED_DTYPE'
  /** A file named by another (a ragged index's heap, a sharded set's shard) outside that file's folder: an absolute path, `..` (or `%2e%2e`), a scheme or another origin, or an answer redirected there (for heaps the message names `allowHeapOutside`). */
  | 'UNSAFE_PATH'
  /** An object dtype where data is written in place (its data is a pickle, not fixed-size slots). */
  | 'OBJECT_IN_PLACE'
  /** A path that is not a regular file (a FIFO, a device, a directory) where a file is read or written. */
  | 'NOT_A_FILE'
  /** A key a store does not hold (`openNpy(key, { store })`, a shard of a set in a store). */
  | 'NOT_FOUND'
  /** A request failed (no answer, a reset connection, a redirect loop) or a URL is not one. */
  | 'NETWORK'
  /** A server answered with an HTTP error status (404, 403, 416, 500, …): the message gives it. */
  | 'HTTP_STATUS'
  /** A server that ignores `Range` sent a whole file larger than `wholeBodyBytes`: the message names the option and the whole-response reader of the format. */
  | 'NO_RANGES'
  /** A file that changed while it was read: a remote file whose answer has another ETag, Last-Modified or size than its first (or HTTP 412), or a local sibling (a shard) whose size or modification time differs from when its set was opened: reopen it. */
  | 'SOURCE_CHANGED'
  /** A server's answer is not what was asked (another range, more bytes than asked, a broken multipart body). */
  | 'BAD_RESPONSE'
  /** A blocking method called on an archive or reader whose source reads asynchronously (a URL, a Blob). */
  | 'ASYNC_SOURCE'
  /** A ragged index names a heap that is not there. */
  | 'NO_HEAP'
  /** A model document (model.json) that is not what tfjs reads: not UTF-8 or JSON, fields of the wrong type, nested too deep. */
  | 'BAD_MODEL'
  /** A value that the requested form cannot hold exactly (a long double past float64, shown or compared). */
  | 'NOT_REPRESENTABLE'
  /** Model weights and an archive disagree (names, shapes, dtypes): every mismatch is listed. */
  | 'WEIGHT_MISMATCH'
  /** A tfjs layer whose configuration cannot compute what the PyTorch module it is given computes (an epsilon, an activation, a GRU, a grouped convolution). */
  | 'LAYER_CONFIG'
  /** A Keras model with layers, activations or options tfjs cannot build: every one is listed with its class and place. */
  | 'UNSUPPORTED_LAYER'
  /** A model's predictions differ from the reference outputs an archive carries (check/output.npy) by more than the tolerance. */
  | 'CHECK_FAILED'
  /** A handle or archive used after close(). */
  | 'CLOSED'
  /** A write through a handle opened for reading only. */
  | 'READ_ONLY'
  /** An index, region or element range outside the array, or with the wrong number of axes. */
  | 'BAD_INDEX'
  /** Shapes that do not agree: data that does not fill a shape, an append along axes that differ, ragged elements with other trailing shapes. */
  | 'SHAPE_MISMATCH'
  /** Data of one dtype where another is needed (or an array of a kind this function does not take: the message names the one that does). */
  | 'DTYPE_MISMATCH'
  /** A record field that is not there. */
  | 'NO_FIELD'
  /** A dtype the target (stdlib, tfjs, a text table) has no form for. */
  | 'NO_COUNTERPART'
  /** A text table (CSV/TSV) whose cells or columns are not the array asked for. */
  | 'BAD_TABLE'
  /** An option, or an argument, outside what the function takes. */
  | 'BAD_OPTION'
  /** A value given to be written that its dtype or format cannot take (a mixed list, a cycle, an element without an axis). */
  | 'BAD_VALUE'
  /** Array data that no value has (a code point past U+10FFFF in a str array). */
  | 'BAD_DATA'
  /** An array read as a ragged index that is not one (its dtype has no `npyts.ragged` title, or no ragged fields). */
  | 'NOT_RAGGED'
  /** A ragged index and its heaps that do not agree (bounds past the heap, cycles, strings without their end). */
  | 'BAD_RAGGED'
  /** A header rewritten in place that has no room for the new shape (the fix: rewrite the file). */
  | 'HEADER_ROOM'
  /** A header the requested format version cannot hold (too long for 1.0, not latin-1 before 3.0). */
  | 'HEADER_VERSION'
  /** A file that cannot be memory-mapped (object dtype, deflated, not aligned). */
  | 'NOT_MAPPABLE'
  /** A feature that needs the optional native addon (@npyts/native), which is not loaded. */
  | 'NO_ADDON'
  /** Two things given one name (an array and a file of an archive, two weights, a heap and its index). */
  | 'NAME_CLASH'
  /** A write that stored nothing (a full storage quota). */
  | 'WRITE_FAILED'
  /** A save target (or weight) that cannot take what is saved there: a function where a path is needed, no file system, no page. */
  | 'BAD_TARGET'
  /** A .safetensors file whose header is not what the format allows (a length past the end, bad JSON, a key twice, an unknown dtype, ranges that do not tile the data). */
  | 'BAD_SAFETENSORS'
  /** A GGUF header that is malformed: a count, length or dimension the file cannot hold, an unknown value or tensor type, a duplicate key or tensor name, misaligned tensor data, a file that ends inside it. */
  | 'BAD_GGUF'
  /** A GGUF file npyts does not read: a version other than 2 and 3 (0, 1, 4: gguf-py refuses them too), a big-endian file's quantized or BF16 tensors, or a tensor type gguf-py does not dequantize (Q8_1, Q8_K, Q1_0; `getAll` reads the others, then names each such tensor in one error of this code). */
  | 'GGUF_UNSUPPORTED'
  /** An HDF5 file that is malformed: an address or length past the end of the file, a cycle of groups or B-tree nodes, a bad signature, heap or count, a dataset claiming more bytes than it stores. */
  | 'BAD_HDF5'
  /** An HDF5 feature npyts does not read or write (the writer writes little-endian integers and IEEE floats only; the reader refuses chunked or filtered datasets, dense link or attribute storage, soft and external links, datatypes other than integers, IEEE floats and strings). */
  | 'HDF5_UNSUPPORTED'
  /** A `.keras` file that is malformed: no `model.weights.h5` beside its `config.json`, a `config.json` or `metadata.json` that is not a JSON object. */
  | 'BAD_KERAS'
  /** A `.keras` file whose weights npyts does not read: `model.weights.npz` (pickled Variables, which Keras cannot load either) or sharded weights. */
  | 'KERAS_UNSUPPORTED'
  /** A reference set (kerchunk JSON) that is malformed: not JSON, no `refs`, a version other than 1, Zarr metadata that is not an object or names an unknown order or separator, a chunk without a reference, a reference that is neither text nor `[url, offset, length]`. */
  | 'BAD_REFERENCES'
  /** A Python pickle that is malformed or breaks a limit of the unpickler. */
  | 'BAD_PICKLE'
  /** A LoRA adapter that is malformed: an `adapter_config.json` that is not a JSON object, an `r` or `lora_alpha` that is not a positive number; a GGUF that is not a LoRA adapter (`general.type`), or one with a tensor that is no `.lora_a`/`.lora_b` factor. */
  | 'BAD_ADAPTER'
  /** A LoRA adapter `mergeLora` does not merge: another tuner (`peft_type`), DoRA, a LoRA bias or another PEFT feature, quantized base weights, or a GGUF adapter's layer norms saved whole, activated LoRA or stacked experts; every one is listed. */
  | 'LORA_UNSUPPORTED'
  /** A plan that its own result contradicts (a part of another length than planned): a bug in npyts, please report it. */
  | 'INTERNAL';

/** Where an error was found: the file, byte offset, field or archive member, when known. */
export interface NpyErrorDetails {
  /** Byte offset in the input where the problem was found. */
  offset?: number;
  /** Path of the record field involved, e.g. `b.c`. */
  field?: string;
  /** Archive member involved. */
  member?: string;
  /** The file (path or URL) involved; the message then starts with it. */
  file?: string;
}

/**
 * The mark every NpyError carries, shared by every copy of npyts in a process (the ESM and the
 * CommonJS build, two bundles): `instanceof NpyError` is true for an NpyError of any of them.
 */
const BRAND = Symbol.for('npyts.NpyError');

/** Each error's message as its thrower wrote it, before the file and the where were added. */
const written = new WeakMap<NpyError, string>();

/**
 * The one error type npyts throws for malformed input or unrepresentable arrays.
 * @example
 * try { decodeNpy(bytes); } catch (e) { if (e instanceof NpyError && e.code === 'DATA_TRUNCATED') console.log(e.offset); }
 */
export class NpyError extends Error {
  /** An NpyError of any build of npyts (ESM, CommonJS, a bundle) is an instance; subclasses keep the ordinary check. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (this !== NpyError) return Function.prototype[Symbol.hasInstance].call(this, value);
    return typeof value === 'object' && value !== null && (value as { [BRAND]?: unknown })[BRAND] === true;
  }

  readonly code: NpyErrorCode;
  readonly offset: number | undefined;
  readonly field: string | undefined;
  /** The archive member involved, when known. */
  readonly member: string | undefined;
  /** The file (path or URL) involved, when known; the message starts with it. A URL's credentials are redacted, as in the message. */
  readonly file: string | undefined;

  constructor(code: NpyErrorCode, text: string, given: NpyErrorDetails = {}) {
    // Every URL in a message or a file name is shown without its query's secrets (a presigned URL is a credential).
    const message = redactUrls(text);
    const details = given.file === undefined ? given : { ...given, file: redactUrls(given.file) };
    const where: string[] = [];
    if (details.offset !== undefined) where.push(`at byte ${details.offset}`);
    if (details.field !== undefined) where.push(`in field '${details.field}'`);
    if (details.member !== undefined) where.push(`in member '${details.member}'`);
    const full = where.length ? `${message} (${where.join(', ')})` : message;
    // A message that begins with the file ("x.npy is closed", "x.npy: …") names it already.
    const named = details.file !== undefined && (full.startsWith(`${details.file} `) || full.startsWith(`${details.file}:`));
    super(details.file !== undefined && !named ? `${details.file}: ${full}` : full);
    this.name = 'NpyError';
    Object.defineProperty(this, BRAND, { value: true });
    this.code = code;
    this.offset = details.offset;
    this.field = details.field;
    this.member = details.member;
    this.file = details.file;
    written.set(this, message);
  }
}

/**
 * `e` with more of where it happened (a file, an archive member), what it already says kept; other
 * errors, and a detail `e` already has, are left as they are.
 * @internal
 */
export function withWhere(e: unknown, more: Pick<NpyErrorDetails, 'file' | 'member'>): unknown {
  if (!(e instanceof NpyError)) return e;
  const details: NpyErrorDetails = { ...more };
  for (const key of ['offset', 'field', 'member', 'file'] as const) if (e[key] !== undefined) details[key] = e[key] as never;
  if (details.file === e.file && details.member === e.member) return e;
  const named = new NpyError(e.code, written.get(e) ?? e.message, details);
  if (e.stack) named.stack = e.stack.replace(e.message, named.message);
  return named;
}

/**
 * The error of a key that names nothing (`NPZ_KEY`): the one message for archives and weight files,
 * listing the keys there are (the first 20, then how many more).
 * @example
 * throw unknownKey('w', ['a', 'b'], 'the archive');
 */
export function unknownKey(name: string, names: readonly string[], where: string): NpyError {
  const shown = names.slice(0, 20).map((n) => `'${n}'`);
  if (names.length > 20) shown.push(`and ${names.length - 20} more`);
  return new NpyError('NPZ_KEY', `no array '${name}' in ${where}; it has ${names.length ? shown.join(', ') : 'none'}`);
}
