/**
 * Reading an HDF5 file's metadata: a cursor over little-endian fields whose every read is checked
 * against the bytes it has, and the metadata reader (reads in cached blocks, each range checked
 * against the file's size before it is asked for).
 */
import { NpyError } from '../errors.js';
import { type ByteSource, withByteCache } from '../io/byte-source.js';

/** An address the file leaves undefined (all bits set). */
export const UNDEFINED = -1;

/** A malformed HDF5 file: `BAD_HDF5`. */
export function bad(message: string): NpyError {
  return new NpyError('BAD_HDF5', message);
}

/** An HDF5 feature npyts does not read: `HDF5_UNSUPPORTED`. */
export function unsupported(message: string): NpyError {
  return new NpyError('HDF5_UNSUPPORTED', message);
}

/** The sizes a file's superblock gives its addresses (offsets) and lengths, in bytes. */
export interface Sizes {
  readonly offsets: number;
  readonly lengths: number;
}

/** Little-endian fields of one structure, read in order; a read past its bytes is `BAD_HDF5`. */
export class Cursor {
  private readonly view: DataView;
  constructor(
    readonly bytes: Uint8Array,
    readonly at: number,
    readonly what: string,
    public pos = 0,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  get left(): number {
    return this.bytes.length - this.pos;
  }

  private need(n: number): number {
    if (n < 0 || this.pos + n > this.bytes.length) {
      throw bad(`${this.what} at byte ${this.at} ends at byte ${this.at + this.bytes.length}, inside a field at byte ${this.at + this.pos}`);
    }
    const p = this.pos;
    this.pos += n;
    return p;
  }

  skip(n: number): this {
    this.need(n);
    return this;
  }
  u8(): number {
    return this.view.getUint8(this.need(1));
  }
  u16(): number {
    return this.view.getUint16(this.need(2), true);
  }
  u32(): number {
    return this.view.getUint32(this.need(4), true);
  }
  /** An unsigned integer of `n` bytes (1, 2, 4 or 8) as a number; all bits set is {@link UNDEFINED}; past 2^53 is `BAD_HDF5`. */
  uint(n: number): number {
    const p = this.need(n);
    let all = true;
    let v = 0;
    for (let i = n - 1; i >= 0; i--) {
      const b = this.bytes[p + i]!;
      if (b !== 0xff) all = false;
      v = v * 256 + b;
    }
    if (all && n > 1) return UNDEFINED;
    if (!Number.isSafeInteger(v)) throw bad(`${this.what} at byte ${this.at} has a ${n}-byte field at byte ${this.at + p} past 2^53 (${v})`);
    return v;
  }
  take(n: number): Uint8Array {
    const p = this.need(n);
    return this.bytes.subarray(p, p + n);
  }
  /** A 4-byte signature, checked. */
  signature(expected: string): void {
    const got = String.fromCharCode(...this.take(4));
    if (got !== expected) throw bad(`${this.what} at byte ${this.at} does not start with '${expected}' (found ${JSON.stringify(got)})`);
  }
  /** Move to the next multiple of `n` from the structure's start. */
  align(n: number): void {
    const r = this.pos % n;
    if (r) this.skip(n - r);
  }
}

/** Bytes read at a time for metadata, and the most kept. */
const META_BLOCK = 4 << 10;
const META_CACHE = 8 << 20;

/**
 * The metadata of an HDF5 file over a source: every range is checked against the file's size before
 * it is read (an address past the end is `BAD_HDF5`, nothing is allocated for it), and reads are
 * made in small cached blocks (a header and its heap are often neighbours).
 */
export class MetaReader {
  private readonly cached: ByteSource;
  constructor(
    readonly source: ByteSource,
    /** The sizes of addresses and lengths: set from the superblock once it is read. */
    public sizes: Sizes = { offsets: 8, lengths: 8 },
  ) {
    this.cached = withByteCache(source, { blockBytes: META_BLOCK, maxBytes: META_CACHE });
  }

  get size(): number {
    return this.source.size;
  }

  /** The file's name, for messages. */
  get name(): string {
    return this.source.name ?? 'the HDF5 file';
  }

  /** Check that `length` bytes at `at` are in the file (`what` names them in the error). */
  check(at: number, length: number, what: string): void {
    if (at === UNDEFINED) throw bad(`${what} has an undefined address`);
    if (at < 0 || length < 0 || at + length > this.size) {
      throw bad(`${what} at byte ${at} needs ${length} bytes, past the end of the file (${this.size} bytes)`);
    }
  }

  /** A cursor over `length` bytes at `at`, checked against the file's size first. */
  async cursor(at: number, length: number, what: string, signal?: AbortSignal): Promise<Cursor> {
    this.check(at, length, what);
    const bytes = await this.cached.read(at, length, { signal });
    if (bytes.length < length) throw bad(`${what} at byte ${at} needs ${length} bytes; the file ends at byte ${at + bytes.length}`);
    return new Cursor(bytes, at, what);
  }

  /** A cursor over up to `length` bytes at `at` (fewer at the end of the file; at least `min`). */
  async cursorUpTo(at: number, length: number, min: number, what: string, signal?: AbortSignal): Promise<Cursor> {
    this.check(at, min, what);
    return this.cursor(at, Math.min(length, this.size - at), what, signal);
  }
}
