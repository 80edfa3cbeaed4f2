/**
 * The GGUF header (llama.cpp's format, versions 2 and 3): the magic `GGUF`, a version, the tensor
 * and key/value counts, every key/value, every tensor's name, `ne`, ggml type and offset, then the
 * data section at the next multiple of `general.alignment` (32 by default). Read as gguf-py's
 * `GGUFReader` reads it, and refused where it refuses (a duplicate key or tensor name, an unknown
 * type id, an alignment that is not a power of two, a row not a whole number of blocks); refused
 * too where llama.cpp refuses (tensor data not aligned). Every count and length is checked against
 * the bytes the file has left, and against the header cap safetensors sets on its own (100 MB,
 * weights/header-cap.ts), before anything is read or made for it; other versions are refused as
 * GGUF_UNSUPPORTED, as gguf-py refuses them.
 *
 * Values: integers up to 32 bits, float32 and float64 are numbers; uint64 and int64 are numbers
 * where they are safe integers and bigints beyond (as the pickle reader gives Python ints); bool a
 * boolean; string a string; an array of numbers a typed array (`Uint8Array` … `Float64Array`,
 * `BigUint64Array`/`BigInt64Array` for 64-bit integers); of bools a boolean[]; of strings a string[];
 * of arrays an array of those.
 */
import { putOwn } from '../array/safe-object.js';
import { NpyError } from '../errors.js';
import { checkHeaderBytes, MAX_WEIGHTS_HEADER_BYTES } from '../weights/header-cap.js';
import { GGML_TYPES, type GgmlType } from './types.js';

/** The magic `GGUF`, read as a little-endian uint32. */
const MAGIC = 0x46554747;
/** Alignment of the data section and of each tensor where `general.alignment` says nothing. */
const DEFAULT_ALIGNMENT = 32;
/** Deepest nesting of arrays read (gguf-py recurses; a hostile file would overflow its stack). */
const MAX_NESTING = 64;
/** Most axes a tensor may have (numpy's limit). */
const MAX_DIMS = 64;

/** GGUF value types (gguf-py's `GGUFValueType`): the reader's and the writer's. */
export enum VT {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
}
/** A GGUF value type's name, as gguf-py's `GGUFValueType` spells it. */
export type GgufValueType = keyof typeof VT;

/** The fewest bytes one value of each type takes (a string its length, an array its type and count). */
const MIN_BYTES = [1, 1, 2, 2, 4, 4, 4, 1, 8, 12, 8, 8, 8];
const TYPED: Partial<Record<VT, { new (buffer: ArrayBuffer): ArrayBufferView; BYTES_PER_ELEMENT: number }>> = {
  [VT.UINT8]: Uint8Array,
  [VT.INT8]: Int8Array,
  [VT.UINT16]: Uint16Array,
  [VT.INT16]: Int16Array,
  [VT.UINT32]: Uint32Array,
  [VT.INT32]: Int32Array,
  [VT.FLOAT32]: Float32Array,
  [VT.UINT64]: BigUint64Array,
  [VT.INT64]: BigInt64Array,
  [VT.FLOAT64]: Float64Array,
};
const littleHost = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** One tensor as the header describes it. */
export interface GgufTensor {
  readonly name: string;
  readonly type: GgmlType;
  /**
   * The dtype an unquantized tensor is read as, in the file's byte order (as gguf-py's GGUFReader
   * reads it: a big-endian file's F16–F64 and I16–I64 are big-endian; BF16 and quantized blocks are
   * the bytes GGUFWriter wrote, little-endian in either); absent for a quantized one.
   */
  readonly descr?: string;
  /** numpy's C-order shape: ggml's `ne` reversed. */
  readonly shape: number[];
  readonly size: number;
  /** Where its bytes start in the file, and how many. */
  readonly dataOffset: number;
  readonly dataBytes: number;
}

/** A parsed GGUF header. */
export interface GgufHeader {
  readonly version: number;
  /** Whether the file is little-endian (GGUF's usual order); gguf-py writes big-endian ones on request. */
  readonly littleEndian: boolean;
  readonly metadata: Readonly<Record<string, unknown>>;
  /** Each key's GGUF value type, as gguf-py's `GGUFValueType` names it (`'FLOAT32'`, `'ARRAY'`). */
  readonly metadataTypes: Readonly<Record<string, GgufValueType>>;
  readonly tensors: readonly GgufTensor[];
  readonly alignment: number;
  /** Where the data section starts (the end of the header, aligned). */
  readonly dataStart: number;
}

/** Thrown inside the parser when the bytes read so far end before what it needs: read to `upTo` (a file offset), go on. */
class NeedMore {
  constructor(readonly upTo: number) {}
}

const bad = (message: string, offset?: number): NpyError => new NpyError('BAD_GGUF', message, offset === undefined ? {} : { offset });

/** The file's first bytes start with the magic `GGUF` (whatever version follows). */
const hasMagic = (first: Uint8Array): boolean => first.length >= 4 && new DataView(first.buffer, first.byteOffset, 4).getUint32(0, true) === MAGIC;

/**
 * Whether `first` (the file's first bytes) starts a GGUF file: the magic and a version field. Any
 * version is GGUF's (the reader then refuses one it does not read, naming it), not another format's.
 */
export function isGguf(first: Uint8Array): boolean {
  return first.length >= 8 && hasMagic(first);
}

/**
 * The file's byte order from its version field read as little-endian: GGUF versions are small, so
 * a value whose low 16 bits are zero is a version written big-endian (gguf-py's own test).
 */
const littleEndianOf = (versionAsLittle: number): boolean => (versionAsLittle & 0xffff) !== 0;

/** A tensor as read from its info, its data offset still relative to the data section (made absolute at the end). */
type Draft = { -readonly [K in keyof GgufTensor]: GgufTensor[K] };

/** Key/values and tensors read so far, and where the next entry starts (a file offset): the parser resumes there. */
interface Progress {
  version: number;
  littleEndian: boolean;
  tensorCount: number;
  kvCount: number;
  at: number;
  kvDone: number;
  metadata: Record<string, unknown>;
  metadataTypes: Record<string, GgufValueType>;
  /** Known once every key/value is read. */
  alignment?: number;
  /** Tensors by name, in file order: a name written twice is refused when it is read. */
  tensors: Map<string, Draft>;
}

/** Bytes read past what an entry needs, so that the next few entries are read with it. */
const SLACK = 64 << 10;
/** The most bytes read at once once an entry is done: the header is read in windows, never held whole. */
const MAX_WINDOW = 16 << 20;

/**
 * Parse a GGUF header from a file of `fileSize` bytes whose first bytes are `first`, asking
 * `read(at, length)` for more whenever the bytes it has end too soon. The header is read in windows
 * that start at the entry being read (a key/value or a tensor info), so what is held is one window
 * (and what is parsed), never the whole header; an entry larger than its window (a tokenizer's
 * vocabulary) is read again in a window at least twice as long. Every length and count is checked
 * against the bytes the file has left, and the header against {@link MAX_WEIGHTS_HEADER_BYTES},
 * before anything is read or made for it.
 * @example
 * const h = await parseGgufHeader(first, source.size, (at, n) => source.read(at, n));
 */
export async function parseGgufHeader(
  first: Uint8Array,
  fileSize: number,
  read: (at: number, length: number) => Uint8Array | Promise<Uint8Array>,
): Promise<GgufHeader> {
  let bytes = first;
  let base = 0;
  let progress: Progress | null = null;
  const limit = Math.min(fileSize, MAX_WEIGHTS_HEADER_BYTES);
  for (;;) {
    try {
      const p: Progress = progress ?? preamble(bytes, fileSize);
      progress = p;
      return entries(bytes, base, fileSize, p);
    } catch (e) {
      if (!(e instanceof NeedMore)) throw e;
      const from = progress?.at ?? 0;
      const had = base + bytes.length;
      // No entry finished in this window: the one it is in is larger, so the next window at least doubles.
      const grow = from === base ? 2 * bytes.length : Math.min(2 * bytes.length, MAX_WINDOW);
      const upTo = Math.min(limit, Math.max(e.upTo + SLACK, from + grow));
      if (upTo <= had) throw bad(`the file ends at byte ${had}, inside the header`, had);
      const tail = await read(had, upTo - had);
      if (tail.length === 0) throw bad(`the file ends at byte ${had}, inside the header`, had);
      // The current entry's bytes already read are kept; the entries before it are done and dropped.
      const next = new Uint8Array(had + tail.length - from);
      next.set(bytes.subarray(from - base));
      next.set(tail, had - from);
      bytes = next;
      base = from;
    }
  }
}

function preamble(bytes: Uint8Array, fileSize: number): Progress {
  if (bytes.length < 24 && fileSize > bytes.length) throw new NeedMore(24);
  if (!hasMagic(bytes)) throw new NpyError('BAD_MAGIC', 'not a GGUF file: it does not start with the magic "GGUF"', { offset: 0 });
  if (bytes.length < 8) throw bad(`the file ends at byte ${bytes.length}, inside the header's version`);
  const littleEndian = littleEndianOf(new DataView(bytes.buffer, bytes.byteOffset, 8).getUint32(4, true));
  const c = new Cursor(bytes, 0, fileSize, 4, littleEndian);
  const version = c.u32();
  if (version !== 2 && version !== 3) {
    // gguf-py's GGUFReader refuses every other version ("file appears to be version N which we cannot handle").
    throw new NpyError(
      'GGUF_UNSUPPORTED',
      `unsupported GGUF version ${version}: npyts reads GGUF versions 2 and 3, as gguf-py's reader does; convert the file with a current llama.cpp (its convert scripts write version 3)`,
      { offset: 4 },
    );
  }
  if (bytes.length < 24) throw bad(`the file ends at byte ${bytes.length}, inside the header's counts`);
  const tensorCount = c.u64();
  const kvCount = c.u64();
  const left = fileSize - 24;
  // Each key/value takes at least 13 bytes, each tensor info 24: a count the file (or the header's
  // cap) cannot hold is refused before anything is read or made for it.
  if (kvCount > left / 13) throw bad(`the header declares ${c.u64Text(16)} key/values, more than the ${left} bytes after it can hold`, 16);
  if (tensorCount > (left - kvCount * 13) / 24) throw bad(`the header declares ${c.u64Text(8)} tensors, more than the ${left} bytes after it can hold`, 8);
  checkHeaderBytes(
    24 + kvCount * 13 + tensorCount * 24,
    `the header declares ${c.u64Text(16)} key/values and ${c.u64Text(8)} tensors, which take at least ${24 + kvCount * 13 + tensorCount * 24} bytes`,
    8,
  );
  return {
    version,
    littleEndian,
    tensorCount,
    kvCount,
    at: 24,
    kvDone: 0,
    metadata: Object.create(null) as Record<string, unknown>,
    metadataTypes: Object.create(null) as Record<string, GgufValueType>,
    tensors: new Map(),
  };
}

function entries(bytes: Uint8Array, base: number, fileSize: number, p: Progress): GgufHeader {
  const c = new Cursor(bytes, base, fileSize, p.at, p.littleEndian);
  const seen = p.metadata;
  while (p.kvDone < p.kvCount) {
    const at = c.at;
    const key = c.string('a key');
    const type = c.u32();
    const value = c.value(type, 0, key);
    if (Object.hasOwn(seen, key)) throw bad(`the key '${key}' is written twice`, at);
    if (key === 'general.alignment' && type !== VT.UINT32) throw bad(`general.alignment is not a uint32 (gguf-py refuses it)`, at);
    putOwn(seen, key, value);
    // The value read, so its type is one of VT's.
    putOwn(p.metadataTypes, key, VT[type] as GgufValueType);
    p.kvDone++;
    p.at = c.at;
  }
  p.alignment ??= alignmentOf(p.metadata);
  while (p.tensors.size < p.tensorCount) {
    const at = c.at;
    const name = c.string('a tensor name');
    const nDims = c.u32();
    if (nDims > MAX_DIMS) throw bad(`tensor '${name}' has ${nDims} dimensions; numpy allows at most ${MAX_DIMS}`, c.at - 4);
    c.need(nDims * 8 + 12);
    const ne: number[] = [];
    for (let i = 0; i < nDims; i++) ne.push(c.u64());
    const typeId = c.u32();
    const offset = c.u64();
    // Checked as it is read: a file of many tensors is refused at its first bad one.
    if (p.tensors.has(name)) throw bad(`the tensor name '${name}' is written twice`, at);
    p.tensors.set(name, draft(name, ne, typeId, offset, at, p));
    p.at = c.at;
  }
  return finish(p, fileSize);
}

function alignmentOf(metadata: Record<string, unknown>): number {
  if (!Object.hasOwn(metadata, 'general.alignment')) return DEFAULT_ALIGNMENT;
  const a = metadata['general.alignment'];
  if (typeof a !== 'number' || a === 0 || (a & (a - 1)) !== 0) throw bad(`general.alignment is ${String(a)}, not a power of two`);
  return a;
}

/** One tensor info, checked: a known type, dimensions whose product is exact, whole blocks per row, aligned data. */
function draft(name: string, ne: number[], typeId: number, offset: number, at: number, p: Progress): Draft {
  const where = `tensor '${name}'`;
  const type = GGML_TYPES.get(typeId);
  if (!type) throw bad(`${where} has ggml type ${typeId}, which GGUF does not define`, at);
  let size = 1;
  for (const n of ne) size *= n;
  if (!ne.every(Number.isSafeInteger) || !Number.isSafeInteger(size)) {
    throw bad(`${where} has dimensions [${ne.join(', ')}] whose product overflows 2^53 elements`, at);
  }
  const row = ne[0] ?? 1;
  if (row % type.block !== 0) throw bad(`${where} is ${type.name}, whose rows are blocks of ${type.block} values, but its rows have ${row}`, at);
  const alignment = p.alignment ?? DEFAULT_ALIGNMENT;
  if (offset % alignment !== 0) throw bad(`${where} starts at data offset ${offset}, not a multiple of the alignment ${alignment}`, at);
  const dataBytes = (size / type.block) * type.bytes;
  const shape = ne.reverse();
  if (type.descr === undefined) return { name, type, shape, size, dataOffset: offset, dataBytes };
  const descr = p.littleEndian || !type.descr.startsWith('<') ? type.descr : `>${type.descr.slice(1)}`;
  return { name, type, descr, shape, size, dataOffset: offset, dataBytes };
}

function finish(p: Progress, fileSize: number): GgufHeader {
  const alignment = p.alignment ?? DEFAULT_ALIGNMENT;
  const dataStart = Math.ceil(p.at / alignment) * alignment;
  const tensors: GgufTensor[] = [];
  for (const t of p.tensors.values()) {
    const dataOffset = dataStart + t.dataOffset;
    if (!(dataOffset + t.dataBytes <= fileSize)) {
      throw new NpyError(
        'DATA_TRUNCATED',
        `tensor '${t.name}' needs bytes ${dataOffset} to ${dataOffset + t.dataBytes}, but the file ends at byte ${fileSize}`,
      );
    }
    t.dataOffset = dataOffset;
    tensors.push(t);
  }
  return { version: p.version, littleEndian: p.littleEndian, metadata: p.metadata, metadataTypes: p.metadataTypes, tensors, alignment, dataStart };
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * A position in the header (a file offset), over a window of its bytes (`bytes` is the file from
 * `base`): each read checks the file has the bytes and the header's cap allows them, and asks for
 * more where they are not read yet.
 */
class Cursor {
  private readonly view: DataView;
  constructor(
    private readonly bytes: Uint8Array,
    private readonly base: number,
    private readonly fileSize: number,
    public at: number,
    /** The file's byte order, for every number of the header. */
    private readonly le: boolean,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  }

  /** `n` more bytes, or BAD_GGUF where the file ends first, HEADER_TOO_LARGE past the cap, or NeedMore where they are not read yet. */
  need(n: number, what = 'the header'): void {
    if (this.at + n <= this.base + this.bytes.length) return;
    if (this.at + n > this.fileSize) throw bad(`${what} needs ${n} bytes at byte ${this.at}, but the file ends at byte ${this.fileSize}`, this.at);
    checkHeaderBytes(this.at + n, `${what} needs ${n} bytes at byte ${this.at}, so GGUF's header runs past byte ${MAX_WEIGHTS_HEADER_BYTES}`, this.at);
    throw new NeedMore(this.at + n);
  }

  /** The window's index of the file offset `at`. */
  private i(at: number): number {
    return at - this.base;
  }

  u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.i(this.at), this.le);
    this.at += 4;
    return v;
  }

  /** A uint64 as a number: exact up to 2^53, and past it a number larger than any file (for counts and lengths). */
  u64(): number {
    this.need(8);
    const at = this.i(this.at);
    const [low, high] = this.le ? [at, at + 4] : [at + 4, at];
    const v = this.view.getUint32(low, this.le) + this.view.getUint32(high, this.le) * 2 ** 32;
    this.at += 8;
    return v;
  }

  /** The uint64 at file offset `at` (in the window), exact, as text (for messages). */
  u64Text(at: number): string {
    return this.view.getBigUint64(this.i(at), this.le).toString();
  }

  /** A string: a uint64 length, then UTF-8 (refused where it is not, as gguf-py refuses it). */
  string(what: string): string {
    const n = this.u64();
    const start = this.at;
    if (n > this.fileSize - start)
      throw bad(`${what} is ${this.u64Text(start - 8)} bytes long, but the file has ${this.fileSize - start} bytes left`, start - 8);
    this.need(n, what);
    this.at += n;
    return utf8(this.bytes, this.i(start), this.i(start + n), what, start);
  }

  value(type: number, depth: number, key: string): unknown {
    switch (type) {
      case VT.UINT8:
      case VT.BOOL: {
        this.need(1);
        const b = this.bytes[this.i(this.at++)]!;
        return type === VT.BOOL ? b !== 0 : b;
      }
      case VT.INT8:
        this.need(1);
        return this.view.getInt8(this.i(this.at++));
      case VT.UINT16:
        this.need(2);
        this.at += 2;
        return this.view.getUint16(this.i(this.at - 2), this.le);
      case VT.INT16:
        this.need(2);
        this.at += 2;
        return this.view.getInt16(this.i(this.at - 2), this.le);
      case VT.UINT32:
        this.need(4);
        this.at += 4;
        return this.view.getUint32(this.i(this.at - 4), this.le);
      case VT.INT32:
        this.need(4);
        this.at += 4;
        return this.view.getInt32(this.i(this.at - 4), this.le);
      case VT.FLOAT32:
        this.need(4);
        this.at += 4;
        return this.view.getFloat32(this.i(this.at - 4), this.le);
      case VT.FLOAT64:
        this.need(8);
        this.at += 8;
        return this.view.getFloat64(this.i(this.at - 8), this.le);
      case VT.UINT64:
      case VT.INT64: {
        this.need(8);
        this.at += 8;
        const at = this.i(this.at - 8);
        const big = type === VT.UINT64 ? this.view.getBigUint64(at, this.le) : this.view.getBigInt64(at, this.le);
        const n = Number(big);
        return Number.isSafeInteger(n) ? n : big;
      }
      case VT.STRING:
        return this.string(`the value of '${key}'`);
      case VT.ARRAY:
        return this.array(depth, key);
      default:
        throw bad(`the value of '${key}' has type ${type}, which GGUF does not define`, this.at - 4);
    }
  }

  private array(depth: number, key: string): unknown {
    if (depth >= MAX_NESTING) throw bad(`the value of '${key}' nests arrays more than ${MAX_NESTING} deep`, this.at);
    const type = this.u32();
    const n = this.u64();
    const min = MIN_BYTES[type];
    if (min === undefined) throw bad(`the value of '${key}' is an array of type ${type}, which GGUF does not define`, this.at - 12);
    const left = this.fileSize - this.at;
    if (n > left / min)
      throw bad(`the value of '${key}' is an array of ${this.u64Text(this.at - 8)} items, more than the ${left} bytes left can hold`, this.at - 8);
    checkHeaderBytes(
      this.at + n * min,
      `the value of '${key}' is an array of ${this.u64Text(this.at - 8)} items, at least ${n * min} bytes from byte ${this.at}`,
      this.at - 8,
    );
    const typed = TYPED[type as VT];
    if (typed) {
      const nbytes = n * typed.BYTES_PER_ELEMENT;
      this.need(nbytes, `the value of '${key}'`);
      const start = this.bytes.byteOffset + this.i(this.at);
      this.at += nbytes;
      const copy = this.bytes.buffer.slice(start, start + nbytes) as ArrayBuffer;
      if (littleHost !== this.le) {
        const w = typed.BYTES_PER_ELEMENT;
        const b = new Uint8Array(copy);
        for (let i = 0; i < nbytes; i += w) b.subarray(i, i + w).reverse();
      }
      return new typed(copy);
    }
    // Filled by push: V8 holds a `new Array(n)` of more than about 100 000 as a dictionary (slow).
    const out: unknown[] = [];
    const start = this.at;
    try {
      if (type === VT.STRING) {
        const what = `a string of '${key}'`;
        for (let i = 0; i < n; i++) out.push(this.string(what));
      } else {
        for (let i = 0; i < n; i++) out.push(this.value(type, depth + 1, key));
      }
    } catch (e) {
      // Ask at once for what the rest of the array will likely take, at the items' pace so far (the
      // parser reads no further than the file and the header's cap allow).
      if (e instanceof NeedMore && out.length > 0) throw new NeedMore(Math.max(e.upTo, start + Math.ceil(((this.at - start) / out.length) * n * 1.05)));
      throw e;
    }
    return out;
  }
}

/** Bytes `[start, end)` as UTF-8: short ASCII (most tokens) without the decoder's call cost. */
function utf8(bytes: Uint8Array, start: number, end: number, what: string, offset: number): string {
  if (end - start <= 24) {
    let s = '';
    for (let i = start; i < end; i++) {
      const b = bytes[i]!;
      if (b >= 0x80) return decode(bytes, start, end, what, offset);
      s += String.fromCharCode(b);
    }
    return s;
  }
  return decode(bytes, start, end, what, offset);
}

/** Bytes `[start, end)` of the window (at file offset `offset`) as UTF-8, or BAD_GGUF. */
function decode(bytes: Uint8Array, start: number, end: number, what: string, offset: number): string {
  try {
    return decoder.decode(bytes.subarray(start, end));
  } catch {
    throw bad(`${what} is not UTF-8`, offset);
  }
}
