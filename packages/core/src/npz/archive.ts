/** .npz archives: numpy's key rules over the zip container, members decoded only when asked for. */
import type { DescrInput } from '../format/descr-types.js';
import {
  DECODE_KEYS,
  ENCODE_KEYS,
  arrayOfData,
  checkDataPresent,
  checkDataSize,
  decodeNpy,
  encodeNpyParts,
  hasObject,
  toNdArray,
  type Expecting,
  type ArraySpec,
  type DecodeOptions,
  type EncodeOptions,
} from '../npy.js';
import { NpyError, unknownKey, withWhere } from '../errors.js';
import { DECODE_RULES, checkNumbers, checkOptions, knownKeys, pickOptions, type KnownKeys } from '../options.js';
import { fflateCodec } from './fflate.js';
import { MAGIC, checkFormatVersion, readHeaderOf, type NpyHeader, type ReadHeaderOptions } from '../format/header.js';
import { FIRST_BLOCK, readingHeaderOf } from '../io/header-read.js';
import { SOURCE, drive, driveSync, viewBytes, type Operation, type PerformAsync, type ViewStep } from '../io/steps.js';
import {
  bytesSource,
  closeSourceNow,
  isPromise,
  passReadsOn,
  windowSource,
  type AsyncByteSource,
  type ByteSource,
  type SyncByteSource,
} from '../io/byte-source.js';
import { npyReaderOf, type NpyReader } from '../io/open.js';
import { mapInParallel } from '../io/settle.js';
import type { NdArray } from '../array/ndarray.js';
import { inflateAsync } from './stream-inflate.js';
import {
  MemorySink,
  STORED,
  ZipWriter,
  checkEntrySizes,
  checkZipCrc,
  checkZipWriteOptions,
  checksCrc,
  checkSupported,
  performOnBytes,
  readingDataOffset,
  readingZipEntries,
  readingZipEntry,
  readingZipEntryPrefix,
  readingZipEntryStored,
  type CrcOptions,
  type ZipCodec,
  type ZipEntry,
  type ZipSink,
  type ZipWriteOptions,
} from './zip.js';

/** Options of {@link decodeNpz}, `openNpz` and `loadNpz`: the codec, the CRC-32 check, and the decode options of every member. */
export interface NpzOptions extends DecodeOptions, CrcOptions {
  /** Inflate engine and CRC-32; fflate by default (`zlibCodec` from `@npyts/core/node` in Node). */
  codec?: ZipCodec;
}

/** The options {@link NpzOptions} names (see `knownKeys`, options.ts). */
export const NPZ_KEYS = { ...DECODE_KEYS, checkCrc: true, codec: true } as const satisfies KnownKeys<NpzOptions>;
const NPZ_KEY_SET: ReadonlySet<string> = knownKeys<NpzOptions>(NPZ_KEYS);

/** numpy's key for a member: one trailing `.npy` removed. */
function keyOf(memberName: string): string {
  return memberName.endsWith('.npy') ? memberName.slice(0, -4) : memberName;
}

function isNpy(bytes: Uint8Array): boolean {
  return bytes.length >= MAGIC.length && MAGIC.every((b, i) => bytes[i] === b);
}

/**
 * An archive's members by numpy's keys (`a.npy` is `a`): the one place the key rules live, shared by
 * archives in memory and archive files.
 */
export class NpzIndex {
  /** Keys as numpy's `NpzFile.files` lists them (`a.npy` → `a`). */
  readonly names: readonly string[];
  private readonly byName: Map<string, ZipEntry>;

  /** @param entries Zip members in archive order. */
  constructor(readonly entries: readonly ZipEntry[]) {
    this.byName = new Map(entries.map((e) => [e.name, e]));
    this.names = entries.map((e) => keyOf(e.name));
  }

  /** The zip entry a key names: the exact member name first, else the key plus `.npy` (as numpy). */
  entry(name: string): ZipEntry {
    const e = this.byName.get(name) ?? this.byName.get(`${name}.npy`);
    if (!e) {
      throw unknownKey(name, this.names, 'the archive');
    }
    return e;
  }

  has(name: string): boolean {
    return this.byName.has(name) || this.byName.has(`${name}.npy`);
  }
}

/** An error of a member's bytes, naming the member (errors that are not npyts' pass as they are). */
function namingMember(entry: ZipEntry, e: unknown): unknown {
  return withWhere(e, { member: entry.name });
}

/** `work`, its errors naming the member. */
function inMember<T>(entry: ZipEntry, work: () => T): T {
  try {
    return work();
  } catch (e) {
    throw namingMember(entry, e);
  }
}

function notNpy(entry: ZipEntry): NpyError {
  return new NpyError('BAD_MAGIC', `member is not .npy data; read its raw bytes with bytes('${keyOf(entry.name)}')`, { member: entry.name });
}

/**
 * Decode a member's uncompressed bytes (read and checked by the caller) as an array; errors name the member.
 * @example
 * const a = decodeMember(z.entry('w'), inflatedBytes);
 */
export function decodeMember(entry: ZipEntry, bytes: Uint8Array, options: DecodeOptions = {}): NdArray {
  if (!isNpy(bytes)) throw notNpy(entry);
  // An archive's options (its codec, HTTP options) travel with the decode ones: only those reach decodeNpy.
  return inMember(entry, () => decodeNpy(bytes, pickOptions(options, DECODE_KEYS)));
}

/** Bytes `[offset, offset + length)` of a member's uncompressed bytes (inflated from its start). */
function* memberBytesFrom(size: number, entry: ZipEntry, offset: number, length: number): Operation<Uint8Array, ViewStep> {
  return (yield* readingZipEntryPrefix(size, entry, offset + length)).subarray(offset);
}

/** `head` and `body` as one member's bytes again (a copy only when there is a head). */
function joined(head: Uint8Array, body: Uint8Array): Uint8Array {
  if (head.length === 0) return body;
  const whole = new Uint8Array(head.length + body.length);
  whole.set(head);
  whole.set(body, head.length);
  return whole;
}

/** Deflated members declaring at most this much are inflated whole, as they are: a bomb that small costs nothing. */
const PADDED_MIN = 1 << 20;
/** Bytes past a .npy's data that a member may carry and still be inflated whole (and CRC-checked). */
const TRAILING_SLACK = 64 << 10;

/**
 * A deflated .npy member whose declared size runs far past the data its header describes (a 2 MB
 * member that declares 1 GiB for ten float64s): its array from the bytes up to the data's end, as
 * numpy's reader stops there; null for every other member, which is read whole. Memory and work
 * follow the header's data, not the declared size. (Its CRC-32 covers the whole member, so it cannot
 * be checked here; numpy does not check it either.)
 */
export function* readingPaddedMember(size: number, entry: ZipEntry, options: DecodeOptions = {}): Operation<NdArray | null, ViewStep> {
  if (entry.method === STORED || entry.size <= PADDED_MIN) return null;
  checkEntrySizes(entry); // sizes that cannot be true are refused first, as by the whole read
  // Unchecked against the declared size: a member declaring less than its header needs is refused
  // by the whole read (ZIP_SIZE), as before.
  const header = yield* readingMemberHeader(size, entry, options, false);
  const end = header.dataOffset + header.dataBytes;
  if (hasObject(header.dtype) || entry.size - end <= TRAILING_SLACK) return null;
  return decodeMember(entry, yield* readingZipEntryPrefix(size, entry, end), options);
}

/**
 * The steps that read a member's .npy header from its first bytes (a large or object-array member
 * is not inflated whole), in an archive of `size` bytes; the data is checked to be the size the
 * header promises, by the member's declared size. Errors name the member.
 */
export function* readingMemberHeader(size: number, entry: ZipEntry, options: DecodeOptions = {}, checkSize = true): Operation<NpyHeader, ViewStep> {
  // The first block is inflated once, for the magic and the header; only a longer header inflates more.
  const first = yield* readingZipEntryPrefix(size, entry, FIRST_BLOCK);
  if (!isNpy(first)) throw notNpy(entry);
  function* read(offset: number, length: number): Operation<Uint8Array, ViewStep> {
    if (offset + length <= first.length || first.length === entry.size) return first.subarray(offset, offset + length);
    return yield* memberBytesFrom(size, entry, offset, length);
  }
  try {
    const header = yield* readingHeaderOf(read, options, FIRST_BLOCK);
    if (checkSize) checkDataSize(header, entry.size - header.dataOffset);
    return header;
  } catch (e) {
    throw namingMember(entry, e);
  }
}

/**
 * The steps that open a stored member for region reads: where its data starts in the archive, and
 * its header, read from the member's bytes only (with its local header, in one read of a window).
 */
export function* openingMember(size: number, entry: ZipEntry, options: ReadHeaderOptions): Operation<{ base: number; header: NpyHeader }, ViewStep> {
  const base = yield* readingDataOffset(size, entry);
  const header = yield* readingHeaderOf((offset, length) => viewBytes(SOURCE, base + offset, Math.max(0, Math.min(length, entry.size - offset))), options);
  checkDataPresent(header, entry.size - header.dataOffset);
  return { base, header };
}

/** Bytes of a local header read at once by a source's `readCopy`: its 30 fixed bytes, a name and an extra field of usual lengths. */
const LOCAL_HEADER_READ = 512;
/** Bytes read at least on a miss of an async source (a local header and a small member in one read). */
const MIN_WINDOW = 64 << 10;

/** Windows an archive keeps between its reads, and the largest window kept: small members and headers near each other share reads. */
const KEPT_WINDOWS = 4;
const KEPT_WINDOW_BYTES = 256 << 10;

/** The most bytes {@link NpzArchive.getAll} reads of a remote archive at once (one span of neighbouring members). */
const SPAN_BYTES = 32 << 20;

/**
 * Members in file order, grouped into spans of neighbours (each from a member's local header to
 * where the next begins) of at most {@link SPAN_BYTES}; a member larger than that is left out, to be
 * read on its own.
 */
function memberSpans(members: readonly (readonly [string, ZipEntry])[]): { at: number; length: number; names: string[] }[] {
  const sorted = [...members].sort((a, b) => a[1].localHeaderOffset - b[1].localHeaderOffset);
  const spans: { at: number; length: number; names: string[] }[] = [];
  let span: { at: number; length: number; names: string[] } | null = null;
  for (const [name, e] of sorted) {
    const end = e.dataLimit;
    if (end - e.localHeaderOffset > SPAN_BYTES) continue;
    if (span && span.at + span.length === e.localHeaderOffset && end - span.at <= SPAN_BYTES) {
      span.length = end - span.at;
      span.names.push(name);
    } else {
      span = { at: e.localHeaderOffset, length: end - e.localHeaderOffset, names: [name] };
      spans.push(span);
    }
  }
  return spans;
}

/** Recent reads of an archive's async source, newest first: private copies, never handed out. */
type Windows = { at: number; bytes: Uint8Array }[];

/**
 * The async driver of zip reads over any source: each `view` step is one read of at least 64 KiB,
 * kept for the rest of the operation. Of an async source (a file, a URL) the latest small windows are
 * also kept across operations, in `kept`, so that a member's local header, its data and its
 * neighbours' headers come in one read. Those are copies, and what comes from them is copied again:
 * an array decoded from a view (zero-copy) never shares bytes that a later read is served from, so
 * writing into it cannot change what the archive reads next. A blocking source (bytes in memory) is
 * read directly each time: its reads cost nothing and are views of the caller's own bytes.
 */
export function performViewsAsync(source: ByteSource, kept: Windows = []): PerformAsync<ViewStep> {
  let last: Windows[number] | null = null; // this operation's latest read, whatever its size
  return async (step, signal) => {
    const end = Math.min(source.size, step.at + step.length);
    if (end <= step.at) return new Uint8Array(0);
    if (last && last.at <= step.at && last.at + last.bytes.length >= end) return last.bytes.subarray(step.at - last.at, end - last.at);
    const hit = kept.find((w) => w.at <= step.at && w.at + w.bytes.length >= end);
    if (hit) return hit.bytes.slice(step.at - hit.at, end - hit.at);
    // One request at most, for the bytes no kept window holds: windows holding the start give the
    // first bytes, and one holding the rest (or the bytes that a window read past `end` would read
    // again) ends the request early. A member's data read after its header then moves only what
    // the header's window did not, and a header read before the directory's tail stops at it.
    // Joining pieces copies them into one array: only for reads small enough to be kept, so that a
    // large member's read never holds its bytes twice.
    const joinable = end - step.at <= KEPT_WINDOW_BYTES;
    const pieces: Windows = [];
    let from = step.at;
    const holding = (at: number) => (joinable ? kept.find((k) => k.at <= at && at < k.at + k.bytes.length) : undefined);
    for (let w = holding(from); w && from < end; w = holding(from)) {
      pieces.push({ at: from, bytes: w.bytes.subarray(from - w.at) });
      from = w.at + w.bytes.length;
    }
    let to = from < end ? Math.min(source.size, Math.max(end, step.at + MIN_WINDOW)) : from;
    let tail: Windows[number] | undefined;
    for (const w of kept) {
      if (w.at <= from || w.at >= to || (w.at < end && (!joinable || w.at + w.bytes.length < end))) continue;
      to = w.at;
      tail = w.at < end ? w : undefined;
    }
    const pending = from < to ? source.read(from, to - from, { signal }) : new Uint8Array(0);
    const read = isPromise(pending) ? await pending : pending;
    let bytes = read;
    if (pieces.length > 0 || tail) {
      if (read.length === to - from && tail) pieces.push({ at: from, bytes: read }, { at: to, bytes: tail.bytes.subarray(0, end - tail.at) });
      else pieces.push({ at: from, bytes: read });
      const final = pieces[pieces.length - 1]!;
      bytes = new Uint8Array(final.at + final.bytes.length - step.at);
      for (const piece of pieces) bytes.set(piece.bytes, piece.at - step.at);
    }
    last = { at: step.at, bytes };
    if (isPromise(pending) && bytes.length <= KEPT_WINDOW_BYTES) {
      kept.unshift({ at: step.at, bytes: bytes.slice() });
      kept.length = Math.min(kept.length, KEPT_WINDOWS);
    }
    return bytes.subarray(0, Math.min(step.length, bytes.length));
  };
}

/** Options of the async methods of {@link NpzArchive}. */
export interface NpzReadOptions extends DecodeOptions {
  signal?: AbortSignal | undefined;
}

/** Options of {@link NpzArchive.bytes}. */
export interface MemberBytesOptions {
  signal?: AbortSignal | undefined;
  /**
   * Read a member whose recorded CRC-32 is 0 unchecked, as PyTorch does (it writes 0 for "not
   * recorded" under `compute_crc32 = False`). Off by default: a .npz's CRC of 0 is checked.
   */
  zeroCrcUnrecorded?: boolean | undefined;
}

/**
 * An opened .npz over any {@link ByteSource}: bytes in memory, a file, a `Blob`, a URL read by
 * range, object storage. The directory is read once, from the archive's tail; each member is read,
 * checked and decoded when asked for, and only its bytes are read. The plain methods work over every
 * source; the blocking `…Sync` methods need a blocking one (bytes, a file opened blocking).
 * @example
 * const z = await openNpz('https://example.org/model.npz');
 * const w = await z.get('w', { expect: '<f4' });
 */
export class NpzArchive<Src extends ByteSource = ByteSource>
  implements Iterable<[string, NdArray]>, AsyncIterable<[string, NdArray]>, AsyncDisposable, Disposable
{
  private readonly index: NpzIndex;
  /** The latest reads of the source (see performViewsAsync). */
  private readonly windows: Windows = [];
  /** Whether close() was called: reads then fail with CLOSED. */
  protected closed = false;

  /**
   * An archive over a blocking source, its directory read now. For any source, `NpzArchive.open`
   * (or `openNpz`).
   * @param index The directory, read already (by {@link NpzArchive.open}).
   */
  constructor(
    readonly source: Src,
    protected readonly options: NpzOptions = {},
    index?: NpzIndex,
  ) {
    checkNumbers(options, DECODE_RULES);
    this.index = index ?? this.named(() => new NpzIndex(this.run(readingZipEntries(source.size))));
  }

  /**
   * Open an archive over any source, its directory read from the tail by range (a remote archive
   * moves its directory and nothing else).
   * @example
   * const z = await NpzArchive.open(blobSource(file));
   */
  static async open<S extends ByteSource>(source: S, options: NpzOptions & { signal?: AbortSignal | undefined } = {}): Promise<NpzArchive<S>> {
    const { signal, ...rest } = options;
    checkNumbers(rest, DECODE_RULES);
    // The tail read for the directory is kept: members near the archive's end need no other read.
    const windows: Windows = [];
    const archive = new NpzArchive(source, rest, await NpzArchive.readIndex(source, signal, windows));
    archive.windows.push(...windows);
    return archive;
  }

  /** The directory of the archive in `source`, read from its tail (the reads kept in `windows`, see performViewsAsync). */
  protected static async readIndex(source: ByteSource, signal?: AbortSignal, windows: Windows = []): Promise<NpzIndex> {
    try {
      return new NpzIndex(await drive(readingZipEntries(source.size), performViewsAsync(source, windows), signal));
    } catch (e) {
      throw source.name === undefined ? e : withWhere(e, { file: source.name });
    }
  }

  /** An operation of zip reads, performed blocking on this archive's source (refused where reads are async). */
  private run<T>(operation: Operation<T, ViewStep>): T {
    if (this.closed) throw this.closedError();
    return driveSync(operation, performOnBytes(this.source));
  }

  /**
   * An operation of zip reads, performed with this archive's source's reads, whatever they are.
   * @internal
   */
  runAsync<T>(operation: Operation<T, ViewStep>, signal?: AbortSignal): Promise<T> {
    if (this.closed) return Promise.reject(this.closedError());
    return drive(operation, performViewsAsync(this.source, this.windows), signal);
  }

  /**
   * `length` bytes at `offset` of the archive (fewer at its end), read from its source; CLOSED after close().
   * @internal
   */
  async readRange(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array> {
    if (this.closed) throw this.closedError();
    return this.source.read(offset, length, { signal });
  }

  /**
   * The archive's source, each read made through the archive (CLOSED after close()): what a
   * member's window reads, with the source's ways of reading (into a target, several ranges at once).
   * @internal
   */
  sourceThrough(): AsyncByteSource {
    const { source } = this;
    const through: AsyncByteSource = { size: source.size, name: source.name, read: (at, length, o) => this.readRange(at, length, o?.signal) };
    passReadsOn(
      through,
      source,
      (offset, length) => ({ offset, length }),
      () => {
        if (this.closed) throw this.closedError();
      },
    );
    return through;
  }

  private closedError(): NpyError {
    return new NpyError('CLOSED', `${this.source.name ?? 'the archive'} is closed`);
  }

  /** An error named with the source's file, where it has one (a path, a URL). */
  protected where(e: unknown): unknown {
    return this.source.name === undefined ? e : withWhere(e, { file: this.source.name });
  }

  /** `work`, its errors named with the source's file. */
  private named<T>(work: () => T): T {
    try {
      return work();
    } catch (e) {
      throw this.where(e);
    }
  }

  /** `work`, its rejections named with the source's file. */
  protected async namedAsync<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (e) {
      throw this.where(e);
    }
  }

  /** Zip members in archive order. */
  get entries(): readonly ZipEntry[] {
    return this.index.entries;
  }

  /** Keys as numpy's `NpzFile.files` lists them (`a.npy` → `a`). */
  get names(): readonly string[] {
    return this.index.names;
  }

  get codec(): ZipCodec {
    return this.options.codec ?? fflateCodec;
  }

  /** Whether members' CRC-32 is checked as they are read (unless opened with `{ checkCrc: false }`). */
  get checksCrc(): boolean {
    return checksCrc(this.options);
  }

  /** The zip entry a key names: the exact member name first, else the key plus `.npy` (as numpy). */
  entry(name: string): ZipEntry {
    return this.named(() => this.index.entry(name));
  }

  has(name: string): boolean {
    return this.index.has(name);
  }

  /** A member's uncompressed bytes (CRC and size verified), blocking: the way to members that are not .npy. */
  bytesSync(this: NpzArchive<SyncByteSource>, name: string): Uint8Array {
    return this.named(() => this.run(readingZipEntry(this.source.size, this.entry(name), this.codec, this.options)));
  }

  /** A member's uncompressed bytes (CRC and size verified), inflating off the calling thread where the platform allows (as {@link get}). */
  async bytes(name: string, options: MemberBytesOptions = {}): Promise<Uint8Array> {
    return this.namedAsync(async () => {
      options.signal?.throwIfAborted();
      const entry = this.index.entry(name);
      if (options.zeroCrcUnrecorded && entry.crc32 === 0 && entry.size > 0) {
        return this.runAsync(readingZipEntry(this.source.size, entry, this.codec, { ...this.options, checkCrc: false }), options.signal);
      }
      return this.memberBytes(entry, options.signal);
    });
  }

  /**
   * A member's first `end` bytes (fewer where it holds fewer), inflating a deflated member only as far
   * as `end`: a view at the start of a large deflated member costs the view, not the member. The
   * CRC covers the whole member, so these bytes are not checked against it.
   * @example
   * const head = await archive.bytesPrefix('archive/data/0', 16);
   */
  async bytesPrefix(name: string, end: number, options: { signal?: AbortSignal | undefined } = {}): Promise<Uint8Array> {
    return this.namedAsync(async () => {
      const entry = this.index.entry(name);
      checkSupported(entry);
      if (entry.method === STORED) return (await this.storedMember(name, options)).read(0, Math.min(end, entry.size), options);
      return this.runAsync(readingZipEntryPrefix(this.source.size, entry, end), options.signal);
    });
  }

  /** {@link bytes} of an entry, before its errors are named with the file. */
  protected async memberBytes(entry: ZipEntry, signal?: AbortSignal): Promise<Uint8Array> {
    if (entry.method === STORED || !this.inflatesAsync) return this.runAsync(readingZipEntry(this.source.size, entry, this.codec, this.options), signal);
    const raw = await this.runAsync(readingZipEntryStored(this.source.size, entry), signal);
    if (this.options.codec) return this.inflateByCodec(entry, raw, signal);
    const { body, crc } = await inflateAsync(raw, entry, { signal, withCrc: this.checksCrc });
    checkZipCrc(entry, crc);
    return body;
  }

  /**
   * A member's .npy header, inflating only its first bytes (a large or object-array member is not
   * read whole). The data is checked to be the size the header promises, by the member's declared size.
   */
  headerSync(this: NpzArchive<SyncByteSource>, name: string): NpyHeader {
    return this.named(() => this.run(readingMemberHeader(this.source.size, this.entry(name), this.options)));
  }

  /** {@link headerSync} over any source: only the member's first bytes are read and inflated. */
  async header(name: string, options: { signal?: AbortSignal | undefined } = {}): Promise<NpyHeader> {
    return this.namedAsync(async () => this.runAsync(readingMemberHeader(this.source.size, this.index.entry(name), this.options), options.signal));
  }

  /** Where a member's data starts in the archive (after its local header, read once and checked). */
  async dataOffset(name: string, options: { signal?: AbortSignal | undefined } = {}): Promise<number> {
    return this.namedAsync(async () => this.dataStart(this.index.entry(name), options.signal));
  }

  /**
   * Where a member's data starts, its local header read once: by a copying read where the source
   * has one (a map's `readCopy`: no page of the map is faulted in for the header), else as every
   * other read of the archive.
   */
  private async dataStart(entry: ZipEntry, signal?: AbortSignal): Promise<number> {
    let start = this.dataStarts.get(entry.name);
    if (start !== undefined) return start;
    const { readCopy } = this.source as Partial<SyncByteSource>;
    if (readCopy) {
      if (this.closed) throw this.closedError();
      signal?.throwIfAborted();
      // One read for the fixed part, the name and the extra field (together under LOCAL_HEADER_READ).
      const source = this.source;
      let last: Uint8Array = new Uint8Array(0);
      let lastAt = 0;
      const read = (at: number, length: number): Uint8Array => {
        if (at < lastAt || at + length > lastAt + last.length) {
          last = readCopy.call(source, at, Math.max(length, LOCAL_HEADER_READ));
          lastAt = at;
        }
        return last.subarray(at - lastAt, at - lastAt + length);
      };
      start = driveSync(readingDataOffset(source.size, entry), performOnBytes({ size: source.size, read }));
    } else {
      start = await this.runAsync(readingDataOffset(this.source.size, entry), signal);
    }
    this.dataStarts.set(entry.name, start);
    return start;
  }

  /**
   * A stored member's raw bytes as a byte source, read by range through the archive (CLOSED after
   * close()): the way a reader of a zip-based format (torch.save's storages) reads parts of a member.
   * Its local header is read once per member; a deflated member is refused (ZIP_UNSUPPORTED).
   * @example
   * const storage = await archive.storedMember('archive/data/0');
   * const bytes = await storage.read(4096, 16);
   */
  async storedMember(name: string, options: { signal?: AbortSignal | undefined } = {}): Promise<AsyncByteSource> {
    return this.namedAsync(async () => {
      const entry = this.index.entry(name);
      checkSupported(entry);
      if (entry.method !== STORED) {
        throw new NpyError('ZIP_UNSUPPORTED', 'range reads need a stored member; this one is deflated (read it whole with bytes())', { member: entry.name });
      }
      return windowSource(this.sourceThrough(), await this.dataStart(entry, options.signal), entry.compressedSize, entry.name);
    });
  }

  /** Where each member's bytes start, once read (see {@link dataStart}). */
  private readonly dataStarts = new Map<string, number>();

  /** Decode one member as an array, blocking (in browsers {@link get} is faster: it inflates in workers). */
  getSync<const S extends DescrInput>(this: NpzArchive<SyncByteSource>, name: string, options: DecodeOptions & Expecting<S>): NdArray<S>;
  getSync(this: NpzArchive<SyncByteSource>, name: string, options?: DecodeOptions): NdArray;
  getSync(this: NpzArchive<SyncByteSource>, name: string, options: DecodeOptions = {}): NdArray {
    const entry = this.entry(name);
    return this.named(
      () =>
        this.run(readingPaddedMember(this.source.size, entry, { ...this.options, ...options })) ??
        this.decodeMember(entry, this.run(readingZipEntry(this.source.size, entry, this.codec, this.options)), options),
    );
  }

  /** Whether deflated members inflate off the calling thread: the default engine does, and a codec with `inflateAsync`. */
  private get inflatesAsync(): boolean {
    return !this.options.codec || this.options.codec.inflateAsync !== undefined;
  }

  /**
   * A deflated member inflated off the calling thread by the codec's `inflateAsync`, CRC-checked.
   * (The default engine instead splits header from data as it inflates: see inflateAsync.)
   */
  private async inflateByCodec(entry: ZipEntry, raw: Uint8Array, signal?: AbortSignal): Promise<Uint8Array> {
    const bytes = await this.codec.inflateAsync!(raw, entry.size, entry.name);
    signal?.throwIfAborted();
    checkZipCrc(entry, this.checksCrc ? this.codec.crc32(bytes, 0) : null);
    return bytes;
  }

  /**
   * Decode one member as an array, over any source, inflating it off the calling thread where the
   * platform allows: in browsers the platform's `DecompressionStream` runs in a small pool of Web
   * Workers, so members read together inflate in parallel (`await z.getAll()`, or `Promise.all` over
   * `get`); in Node, `zlibCodec` inflates on libuv's threads. Size and CRC-32 are checked as by
   * {@link getSync}. A codec without `inflateAsync` inflates on this thread.
   * @example
   * const z = await openNpz('weights.npz');
   * const w = await z.get('w', { signal });
   */
  async get<const S extends DescrInput>(name: string, options: NpzReadOptions & Expecting<S>): Promise<NdArray<S>>;
  async get(name: string, options?: NpzReadOptions): Promise<NdArray>;
  async get(name: string, options: NpzReadOptions = {}): Promise<NdArray> {
    return this.namedAsync(() => this.member(name, options));
  }

  /** {@link get}, before its errors are named with the file. */
  protected async member(name: string, options: NpzReadOptions): Promise<NdArray> {
    const { signal, ...decode } = options;
    signal?.throwIfAborted();
    const entry = this.index.entry(name);
    // A member padded far past its data is read to the data's end (its header's first block decides).
    const padded = await this.runAsync(readingPaddedMember(this.source.size, entry, { ...this.options, ...decode }), signal);
    if (padded) return padded;
    // Stored members, and any a codec inflates on this thread, are read and decoded as getSync() does.
    if (entry.method === STORED || !this.inflatesAsync) {
      return this.decodeMember(entry, await this.runAsync(readingZipEntry(this.source.size, entry, this.codec, this.options), signal), decode);
    }
    const raw = await this.runAsync(readingZipEntryStored(this.source.size, entry), signal);
    if (this.options.codec) return this.decodeMember(entry, await this.inflateByCodec(entry, raw, signal), decode);
    // The data inflates into a buffer of its own, split from the .npy header where the inflater's
    // first bytes say the header ends (the array then owns its buffer whole: no copy for tfjs or a
    // worker). An object array, or a member that is not a plain .npy, is joined again and decoded as
    // getSync() would.
    const { head, body, crc } = await inflateAsync(raw, entry, { split: 'npy', signal, withCrc: this.checksCrc });
    checkZipCrc(entry, crc);
    let header: NpyHeader | null = null;
    try {
      if (head.length) header = readHeaderOf(head, { ...this.options, ...decode });
    } catch {
      // Reported by the whole decode below.
    }
    if (header === null || hasObject(header.dtype) || header.dataOffset !== head.length) return this.decodeMember(entry, joined(head, body), decode);
    const known = header;
    return inMember(entry, () => {
      checkDataSize(known, body.length);
      return arrayOfData(known, body.buffer, body.byteOffset, { ...decode, owned: true });
    });
  }

  /**
   * Region reads of one stored (uncompressed) member, which is a plain .npy inside the archive: its
   * header is read now, each region when asked for, and only its bytes move (over a URL, range
   * requests of the member's bytes). Deflated members have no random access: read them whole.
   * @example
   * const z = await openNpz('https://example.org/big.npz');
   * const m = await z.openMember('x');
   * const rows = await m.read([1000, 0], [10, m.shape[1]!]);
   */
  async openMember<const S extends DescrInput>(
    name: string,
    options: DecodeOptions & Expecting<S> & { signal?: AbortSignal | undefined },
  ): Promise<NpyReader<S>>;
  async openMember(name: string, options?: DecodeOptions & { signal?: AbortSignal | undefined }): Promise<NpyReader>;
  async openMember(name: string, options: DecodeOptions & { signal?: AbortSignal | undefined } = {}): Promise<NpyReader> {
    return this.namedAsync(async () => {
      const entry = this.index.entry(name);
      checkSupported(entry);
      if (entry.method !== STORED) {
        throw new NpyError('ZIP_UNSUPPORTED', 'region reads need a stored member; this one is deflated (read it whole with get())', { member: entry.name });
      }
      const { base, header } = await this.runAsync(openingMember(this.source.size, entry, { ...this.options, ...options }), options.signal);
      // Reads go through the archive, so that a member read after close() fails with CLOSED.
      return npyReaderOf(windowSource(this.sourceThrough(), base, entry.compressedSize, entry.name), header, entry.name);
    });
  }

  /**
   * Every member decoded, by key in archive order, the deflated ones inflating in parallel (see {@link get}).
   * @example
   * const arrays = await (await openNpz(bytes)).getAll();   // Map { 'w' => NdArray, … }
   */
  async getAll(options: NpzReadOptions = {}): Promise<Map<string, NdArray>> {
    return this.getEach(this.names, options);
  }

  /**
   * The members `names` decoded, by key in the order given ({@link getAll} of some of them).
   * @internal
   */
  async getEach(names: readonly string[], options: NpzReadOptions = {}, onTensor?: (name: string) => void): Promise<Map<string, NdArray>> {
    const getOne = async (name: string): Promise<NdArray> => {
      const array = await this.get(name, options);
      onTensor?.(name);
      return array;
    };
    const got = new Map<string, NdArray>();
    // Of a remote source (a URL, a Blob), neighbouring members are read together in spans of up to
    // 32 MiB, each span one read (which a URL source makes as a few large requests at once), and
    // decoded from it: every member is wanted, so no byte is read for nothing. A file reads each
    // member straight into its buffer instead, and bytes in memory are views already.
    if (!this.source.readInto) {
      for (const span of memberSpans(names.map((name) => [name, this.index.entry(name)] as const))) {
        const pending = this.source.read(span.at, span.length, { signal: options.signal });
        if (!isPromise(pending)) break; // a blocking source: its reads cost nothing
        const window = { at: span.at, bytes: await pending };
        this.windows.unshift(window);
        try {
          const arrays = await mapInParallel(span.names, MEMBERS_IN_FLIGHT, getOne);
          span.names.forEach((name, i) => got.set(name, arrays[i]!));
        } finally {
          const at = this.windows.indexOf(window);
          if (at >= 0) this.windows.splice(at, 1);
        }
      }
    }
    // A few members at a time: 20 000 small members do not each hold a read window at once.
    const rest = names.filter((name) => !got.has(name));
    const arrays = await mapInParallel(rest, MEMBERS_IN_FLIGHT, getOne);
    rest.forEach((name, i) => got.set(name, arrays[i]!));
    return new Map(names.map((name) => [name, got.get(name)!]));
  }

  /** Every member decoded, blocking, by key in archive order. */
  getAllSync(this: NpzArchive<SyncByteSource>, options: DecodeOptions = {}): Map<string, NdArray> {
    return new Map(this.names.map((name) => [name, this.getSync(name, options)]));
  }

  /**
   * Decode a member's uncompressed bytes (read and checked by the caller) as an array, with this
   * archive's decode options; errors name the member.
   * @example
   * const a = z.decodeMember(z.entry('w'), inflatedBytes);
   */
  decodeMember(entry: ZipEntry, bytes: Uint8Array, options: DecodeOptions = {}): NdArray {
    return this.named(() => decodeMember(entry, bytes, { ...this.options, ...options }));
  }

  /** Every member, blocking, in archive order (a blocking source only). */
  *[Symbol.iterator](): Iterator<[string, NdArray]> {
    const blocking = this as NpzArchive<SyncByteSource>;
    for (const name of this.names) yield [name, blocking.getSync(name)];
  }

  async *[Symbol.asyncIterator](): AsyncIterator<[string, NdArray]> {
    for (const name of this.names) yield [name, await this.get(name)];
  }

  /** Release the source (a file it holds open); later reads fail with CLOSED. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.source.close?.();
  }

  /** {@link close}, blocking, for a blocking source. */
  closeSync(this: NpzArchive<SyncByteSource>): void {
    if (this.closed) return;
    this.closed = true;
    this.source.close?.();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** `using z = …`: closes a blocking source at once; an async one's close is started, its failure ignored (use `await using`). */
  [Symbol.dispose](): void {
    if (this.closed) return;
    this.closed = true;
    closeSourceNow(this.source);
  }
}

/**
 * Open an archive held in memory. Nothing is inflated until a member is asked for.
 * @example
 * const z = decodeNpz(bytes);
 * const w = await z.get('w', { expect: '<f4' });
 */
export function decodeNpz(input: Uint8Array | ArrayBuffer, options: NpzOptions = {}): NpzArchive<SyncByteSource> {
  checkOptions('decodeNpz', options, NPZ_KEY_SET);
  return new NpzArchive(bytesSource(input), options);
}

/** Arrays to write into a .npz: by name (an object or a Map), or a list (named `arr_0`, `arr_1`, …). */
export type NpzInput = Record<string, NdArray | ArraySpec> | Map<string, NdArray | ArraySpec> | (NdArray | ArraySpec)[];

/** Options of {@link encodeNpz} and `saveNpz`: compression, level, date and format version. */
export interface NpzWriteOptions extends ZipWriteOptions, EncodeOptions {
  /** Deflate the members, like `np.savez_compressed` (default: store them, like `np.savez`). */
  compress?: boolean;
  codec?: ZipCodec;
  /**
   * Other members written as given after the arrays, always stored (a text is written as UTF-8):
   * metadata such as a model's `model.json`. numpy lists them in `files` and returns their bytes.
   */
  files?: Record<string, Uint8Array | string>;
  /**
   * Called as the write goes on, after each piece of at most 16 MiB, with the bytes of arrays written
   * so far and their total (uncompressed: what the work is proportional to).
   */
  onProgress?: (done: number, total: number) => void;
}

/**
 * The options {@link NpzWriteOptions} names.
 * @example
 * await saveNpz(path, arrays, pickOptions(adapterOptions, NPZ_WRITE_KEYS, { durable: true, signal: true }));
 */
export const NPZ_WRITE_KEYS = {
  ...ENCODE_KEYS,
  date: true,
  level: true,
  compress: true,
  codec: true,
  files: true,
  onProgress: true,
} as const satisfies KnownKeys<NpzWriteOptions>;

const NPZ_WRITE_KEY_SET: ReadonlySet<string> = knownKeys<NpzWriteOptions>(NPZ_WRITE_KEYS);

/**
 * Members read at once by `getAll`: enough to keep the thread pool's inflaters busy, few enough that
 * an archive of 20 000 small members holds a handful of read windows, not 20 000.
 */
export const MEMBERS_IN_FLIGHT = 8;

/**
 * Refuse write options that are not what the archive writer takes, before any file is touched: the
 * format version, zlib's level, the date, and `compress` as a boolean.
 */
export function checkNpzWriteOptions(options: NpzWriteOptions): void {
  checkFormatVersion(options.version);
  checkZipWriteOptions(options);
  if (options.compress !== undefined && typeof options.compress !== 'boolean') {
    throw new NpyError('BAD_OPTION', `compress must be true or false, got ${String(options.compress)}`);
  }
}

/**
 * Members in order with numpy's names: keys as given, a list as `arr_0`, `arr_1`, …
 * @example
 * npzMembers([a, b]).map(([name]) => name);   // ['arr_0', 'arr_1']
 */
export function npzMembers(arrays: NpzInput): [string, NdArray | ArraySpec][] {
  if (Array.isArray(arrays)) return arrays.map((a, i) => [`arr_${i}`, a]);
  return arrays instanceof Map ? [...arrays] : Object.entries(arrays);
}

/** Largest piece handed to the deflater at once: bounds the memory of a streaming write and spaces progress reports. */
const PIECE = 16 << 20;

function* pieces(parts: Uint8Array[]): Generator<Uint8Array> {
  for (const p of parts) for (let i = 0; i < p.length; i += PIECE) yield p.subarray(i, i + PIECE);
}

/**
 * Write every array as `name.npy` into a zip sink.
 * @example
 * const sink = new MemorySink();
 * writeNpz(sink, { w: a });
 * sink.bytes();   // the archive
 */
export function writeNpz(sink: ZipSink, arrays: NpzInput, options: NpzWriteOptions = {}): void {
  for (const _ of npzWriting(sink, arrays, options));
}

/**
 * {@link writeNpz} as steps: it pauses after each piece of at most 16 MiB written to the sink, so an
 * async writer can flush the sink to disk (and notice an abort) between pieces.
 */
export function* npzWriting(sink: ZipSink, arrays: NpzInput, options: NpzWriteOptions = {}): Generator<void> {
  checkNpzWriteOptions(options);
  const writer = new ZipWriter(sink, options.codec ?? fflateCodec, options);
  const members = npzMembers(arrays).map(([name, a]) => [name, toNdArray(a)] as const);
  // Keys of a Map or object are unique, so array members are too; other files must not take their names.
  const taken = new Set(members.map(([name]) => `${name}.npy`));
  const files = Object.entries(options.files ?? {});
  for (const [name] of files) {
    if (taken.has(name)) throw new NpyError('NAME_CLASH', `member '${name}' is both an array and a file`);
  }
  // Progress counts array data (object arrays' pickles are not known before they are made).
  const dataBytes = (a: NdArray): number => (hasObject(a.dtype) ? 0 : a.size * a.dtype.itemsize);
  const total = members.reduce((n, [, a]) => n + dataBytes(a), 0);
  let done = 0;
  const report = options.onProgress;
  report?.(0, total);
  for (const [name, array] of members) {
    const { header, body } = encodeNpyParts(array, options);
    // The writer pauses after each piece: the header, then the data PIECE bytes at a time.
    let step = 0;
    for (const _ of writer.adding(`${name}.npy`, pieces([header, body]), header.length + body.length, options.compress ?? false)) {
      report?.(done + Math.min(dataBytes(array), step++ * PIECE), total);
      yield;
    }
    done += dataBytes(array);
  }
  for (const [name, content] of files) {
    const bytes = typeof content === 'string' ? new TextEncoder().encode(content) : content;
    yield* writer.adding(name, pieces([bytes]), bytes.length, false);
  }
  writer.finish();
}

/**
 * Encode arrays as a .npz archive in memory (`np.savez`, or `np.savez_compressed` with `compress`).
 * @example
 * const bytes = encodeNpz({ w: { data: new Float32Array(4) } }, { compress: true });
 */
export function encodeNpz(arrays: NpzInput, options: NpzWriteOptions = {}): Uint8Array {
  checkOptions('encodeNpz', options, NPZ_WRITE_KEY_SET);
  const sink = new MemorySink();
  writeNpz(sink, arrays, options);
  return sink.bytes();
}
