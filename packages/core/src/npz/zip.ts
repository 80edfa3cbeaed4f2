/**
 * The zip container of .npz archives, read and written by npyts itself: zip64 (records, locator,
 * extras in central and local headers), data descriptors, UTF-8 and cp437 names, stored and
 * deflated members, CRC-32 and size checks on every member read. Compression is delegated to a
 * {@link ZipCodec}: node:zlib in Node, fflate elsewhere.
 *
 * Long on purpose: reading and writing share the record layouts (local and central headers, zip64
 * records and extras, data descriptors), which are written once here for both directions.
 */
import { inflaterInto } from './inflate-pieces.js';
import { LEVEL_RULES, checkNumbers } from '../options.js';
import { checkWrittenName } from '../array/safe-object.js';
import { NpyError } from '../errors.js';
import { SOURCE, driveSync, viewBytes, type FileRef, type Operation, type PerformSync, type StepOf, type ViewStep } from '../io/steps.js';
import { readSync, type ByteSource, type SyncByteSource } from '../io/byte-source.js';

/**
 * The blocking driver of the zip reads over a {@link SyncByteSource}: each `view` step is one read of
 * the source (a view, for bytes in memory). The reads are written once, as operations of `view`
 * steps over the archive of a known size; an async source drives the same operations with its own
 * reads (npz/archive.ts).
 */
export function performOnBytes(src: ByteSource): PerformSync<ViewStep> {
  return (step) => readSync(src, step.at, step.length);
}

/** Deflate/inflate engine and CRC-32. */
export interface ZipCodec {
  /** Inflate a whole raw-deflate member into exactly `size` bytes; more or less is an error. */
  inflate(data: Uint8Array, size: number, member: string): Uint8Array;
  /** {@link inflate} off the calling thread (node:zlib's thread pool, say); archives' async `get` uses it where present. */
  inflateAsync?(data: Uint8Array, size: number, member: string): Promise<Uint8Array>;
  /** A raw-deflate compressor fed in pieces; each call returns the compressed bytes so far. */
  deflater(level?: number): { push(chunk: Uint8Array, final: boolean): Uint8Array[] };
  crc32(bytes: Uint8Array, crc: number): number;
}

/**
 * Zip method of a stored (uncompressed) member.
 * @example
 * readZipEntries(src).every((e) => e.method === STORED);   // np.savez writes stored members
 */
export const STORED = 0;
/**
 * Zip method of a deflated member.
 * @example
 * entry.method === DEFLATED;   // np.savez_compressed writes deflated members
 */
export const DEFLATED = 8;
const SIG_LOCAL = 0x04034b50;
const SIG_CENTRAL = 0x02014b50;
const SIG_EOCD = 0x06054b50;
const SIG_ZIP64_EOCD = 0x06064b50;
const SIG_ZIP64_LOCATOR = 0x07064b50;
const FLAG_ENCRYPTED = 0x1;
const FLAG_DESCRIPTOR = 0x8;
const FLAG_UTF8 = 0x800;
const U32_MAX = 0xffffffff;
const U16_MAX = 0xffff;

/** One member of a zip archive, from its central directory. */
export interface ZipEntry {
  name: string;
  method: number;
  flags: number;
  crc32: number;
  compressedSize: number;
  size: number;
  localHeaderOffset: number;
  /** Where the next member's local header (or the central directory) starts: this member must end before it. */
  dataLimit: number;
  /** The name's bytes as stored, compared with the local header's. */
  rawName: Uint8Array;
}

function zipError(message: string, offset?: number, member?: string): never {
  const details: { offset?: number; member?: string } = {};
  if (offset !== undefined) details.offset = offset;
  if (member !== undefined) details.member = member;
  throw new NpyError('ZIP_FORMAT', message, details);
}

function u64(view: DataView, at: number): number {
  const v = view.getBigUint64(at, true);
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) zipError(`a zip64 size or offset (${v}) is beyond 2^53`, at);
  return Number(v);
}

const CP437_HIGH = 'ÇüéâäàåçêëèïîìÄÅÉæÆôöòûùÿÖÜ¢£¥₧ƒáíóúñÑªº¿⌐¬½¼¡«»░▒▓│┤╡╢╖╕╣║╗╝╜╛┐└┴┬├─┼╞╟╚╔╩╦╠═╬╧╨╤╥╙╘╒╓╫╪┘┌█▄▌▐▀αßΓπΣσµτΦΘΩδ∞φε∩≡±≥≤⌠⌡÷≈°∙·√ⁿ²■\u00a0';
const utf8 = new TextDecoder('utf-8', { fatal: true });

function decodeName(raw: Uint8Array, utf8Flag: boolean, at: number, lenient = false): string {
  if (utf8Flag) {
    try {
      return utf8.decode(raw);
    } catch {
      if (lenient) return new TextDecoder().decode(raw);
      zipError('a member name flagged UTF-8 is not valid UTF-8', at);
    }
  }
  let s = '';
  for (const b of raw) s += b < 0x80 ? String.fromCharCode(b) : CP437_HIGH[b - 0x80]!;
  return s;
}

function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function* readingExact(size: number, offset: number, length: number, what: string): Operation<Uint8Array, ViewStep> {
  if (offset < 0 || offset + length > size) {
    zipError(`truncated archive: ${what} at byte ${offset} needs ${length} bytes but the archive has ${size}`, offset);
  }
  const b = yield* viewBytes(SOURCE, offset, length);
  if (b.length !== length) zipError(`short read of ${what}`, offset);
  return b;
}

/** Find the end-of-central-directory record (searching past an archive comment). */
function* findingEocd(size: number): Operation<number, ViewStep> {
  if (size < 22) zipError(`not a zip archive: ${size} bytes is shorter than an end record`);
  const tailLen = Math.min(size, 22 + U16_MAX);
  const tailStart = size - tailLen;
  const tail = yield* readingExact(size, tailStart, tailLen, 'the archive tail');
  const v = view(tail);
  let loose = -1;
  for (let i = tailLen - 22; i >= 0; i--) {
    if (v.getUint32(i, true) !== SIG_EOCD) continue;
    const commentLen = v.getUint16(i + 20, true);
    if (i + 22 + commentLen === tailLen) return tailStart + i;
    if (loose < 0 && i + 22 + commentLen <= tailLen) loose = tailStart + i; // trailing bytes after the comment
  }
  if (loose >= 0) return loose;
  // A .npy given where an archive is expected is the common case: say so, and what reads it.
  const head = yield* viewBytes(SOURCE, 0, 6);
  if (head.length === 6 && head[0] === 0x93 && String.fromCharCode(...head.subarray(1)) === 'NUMPY') {
    return zipError('not a zip archive but a .npy file: read it with loadNpy (or openNpy / readNpy in a browser)');
  }
  return zipError('not a zip archive: no end-of-central-directory record');
}

/** The 8-byte values of the zip64 extra field (id 1) among a header's extra fields, checked to lie inside them. */
function zip64Values(extra: Uint8Array, at: number, member: string): number[] {
  const ev = view(extra);
  const values: number[] = [];
  for (let q = 0; q + 4 <= extra.length; ) {
    const id = ev.getUint16(q, true);
    const len = ev.getUint16(q + 2, true);
    if (q + 4 + len > extra.length) zipError(`an extra field of ${len} bytes runs past the header's ${extra.length} extra bytes`, at, member);
    if (id === 0x0001) for (let r = q + 4; r + 8 <= q + 4 + len; r += 8) values.push(u64(ev, r));
    q += 4 + len;
  }
  return values;
}

/**
 * Read the central directory: every member's name, method, sizes, CRC and where it starts.
 * @example
 * readZipEntries(bytesSource(bytes)).map((e) => e.name);   // ['a.npy', 'b.npy']
 */
export function readZipEntries(src: SyncByteSource): ZipEntry[] {
  return driveSync(readingZipEntries(src.size), performOnBytes(src));
}

/** {@link readZipEntries} as an operation over an archive of `size` bytes. */
export function* readingZipEntries(size: number): Operation<ZipEntry[], ViewStep> {
  const eocdAt = yield* findingEocd(size);
  const e = view(yield* readingExact(size, eocdAt, 22, 'the end record'));
  let disk = e.getUint16(4, true);
  let cdDisk = e.getUint16(6, true);
  let cdSize = e.getUint32(12, true);
  let cdOffset = e.getUint32(16, true);
  if (eocdAt >= 20) {
    const loc = view(yield* readingExact(size, eocdAt - 20, 20, 'the zip64 locator'));
    if (loc.getUint32(0, true) === SIG_ZIP64_LOCATOR) {
      const z64At = u64(loc, 8);
      const z = view(yield* readingExact(size, z64At, 56, 'the zip64 end record'));
      if (z.getUint32(0, true) !== SIG_ZIP64_EOCD) zipError('the zip64 locator does not point at a zip64 end record', z64At);
      disk = z.getUint32(16, true);
      cdDisk = z.getUint32(20, true);
      cdSize = u64(z, 40);
      cdOffset = u64(z, 48);
    }
  }
  if (disk !== 0 || cdDisk !== 0) throw new NpyError('ZIP_UNSUPPORTED', 'multi-disk (split) zip archives are not supported');
  if (cdOffset + cdSize > eocdAt)
    zipError(`the central directory (${cdSize} bytes at ${cdOffset}) overlaps the end record or the archive is truncated`, eocdAt);
  const cd = yield* readingExact(size, cdOffset, cdSize, 'the central directory');
  const v = view(cd);
  const entries: ZipEntry[] = [];
  let p = 0;
  // Entries are read until the directory's bytes end, as Python's zipfile (numpy's reader) does: the
  // count is not trusted, since writers without zip64 wrap it at 65 536 (70 000 members say 4 464).
  // Memory follows the directory's bytes, at least 46 a member.
  for (let i = 0; p < cd.length; i++) {
    if (p + 46 > cd.length || v.getUint32(p, true) !== SIG_CENTRAL) zipError(`central directory entry ${i} is malformed`, cdOffset + p);
    const flags = v.getUint16(p + 8, true);
    const method = v.getUint16(p + 10, true);
    const crc = v.getUint32(p + 16, true);
    let compressedSize = v.getUint32(p + 20, true);
    let size = v.getUint32(p + 24, true);
    const nameLen = v.getUint16(p + 28, true);
    const extraLen = v.getUint16(p + 30, true);
    const commentLen = v.getUint16(p + 32, true);
    const diskStart = v.getUint16(p + 34, true);
    let localHeaderOffset = v.getUint32(p + 42, true);
    if (p + 46 + nameLen + extraLen + commentLen > cd.length) zipError(`central directory entry ${i} runs past the directory`, cdOffset + p);
    const name = decodeName(cd.subarray(p + 46, p + 46 + nameLen), (flags & FLAG_UTF8) !== 0, cdOffset + p + 46);
    // zip64 extra: 8-byte values for exactly the fields that read 0xFFFFFFFF, in this order.
    const z64 = zip64Values(cd.subarray(p + 46 + nameLen, p + 46 + nameLen + extraLen), cdOffset + p, name);
    const next = (): number => z64.shift() ?? zipError('zip64 extra field is too short', cdOffset + p, name);
    if (size === U32_MAX) size = next();
    if (compressedSize === U32_MAX) compressedSize = next();
    if (localHeaderOffset === U32_MAX) localHeaderOffset = next();
    if (diskStart !== 0 && diskStart !== U16_MAX) throw new NpyError('ZIP_UNSUPPORTED', 'multi-disk zip archives are not supported', { member: name });
    const rawName = cd.slice(p + 46, p + 46 + nameLen);
    entries.push({ name, method, flags, crc32: crc, compressedSize, size, localHeaderOffset, dataLimit: cdOffset, rawName });
    p += 46 + nameLen + extraLen + commentLen;
  }
  limitEntries(entries, cdOffset);
  return entries;
}

/**
 * Each member must end before the next one starts (Python's zipfile refuses overlapping members
 * too, since CVE-2024-0450): members sharing bytes would let a small archive stand for many large
 * ones. Sets every entry's dataLimit; two entries at one offset are refused here.
 */
function limitEntries(entries: ZipEntry[], cdOffset: number): void {
  const byOffset = [...entries].sort((a, b) => a.localHeaderOffset - b.localHeaderOffset);
  for (let i = 0; i < byOffset.length; i++) {
    const e = byOffset[i]!;
    const next = byOffset[i + 1];
    if (e.localHeaderOffset >= cdOffset)
      zipError(`member starts at byte ${e.localHeaderOffset}, inside or after the central directory (byte ${cdOffset})`, e.localHeaderOffset, e.name);
    if (next && next.localHeaderOffset === e.localHeaderOffset) {
      zipError(`overlapping members: '${e.name}' and '${next.name}' start at the same byte`, e.localHeaderOffset, next.name);
    }
    e.dataLimit = next ? next.localHeaderOffset : cdOffset;
  }
}

/**
 * Where a member's stored bytes start (after its local header), with the local header checked.
 * @example
 * entryDataOffset(src, entry);   // where the member's stored bytes begin
 */
export function entryDataOffset(src: SyncByteSource, entry: ZipEntry): number {
  return driveSync(readingDataOffset(src.size, entry), performOnBytes(src));
}

/** {@link entryDataOffset} as an operation over an archive of `size` bytes. */
export function* readingDataOffset(size: number, entry: ZipEntry): Operation<number, ViewStep> {
  const at = entry.localHeaderOffset;
  const h = view(yield* readingExact(size, at, 30, `the local header of '${entry.name}'`));
  if (h.getUint32(0, true) !== SIG_LOCAL) zipError('no local header where the central directory points', at, entry.name);
  const nameLen = h.getUint16(26, true);
  const extraLen = h.getUint16(28, true);
  const start = at + 30 + nameLen + extraLen;
  if (start + entry.compressedSize > size) {
    zipError(`truncated archive: member data ends at byte ${start + entry.compressedSize} but the archive has ${size}`, start, entry.name);
  }
  if (start + entry.compressedSize > entry.dataLimit) {
    zipError(
      `overlapping members: the data of '${entry.name}' runs to byte ${start + entry.compressedSize}, past the start of the next member or the directory at byte ${entry.dataLimit}`,
      start,
      entry.name,
    );
  }
  checkLocalHeader(h, yield* readingExact(size, at + 30, nameLen + extraLen, `the local header of '${entry.name}'`), entry);
  return start;
}

/** The local header must describe the same member as the central directory: name, method, sizes. */
function checkLocalHeader(h: DataView, rest: Uint8Array, entry: ZipEntry): void {
  const at = entry.localHeaderOffset;
  const nameLen = h.getUint16(26, true);
  const name = rest.subarray(0, nameLen);
  if (name.length !== entry.rawName.length || name.some((b, i) => b !== entry.rawName[i])) {
    zipError(`the local header names '${decodeName(name, true, at + 30, true)}', the central directory '${entry.name}'`, at, entry.name);
  }
  const method = h.getUint16(8, true);
  if (method !== entry.method) zipError(`the local header says compression method ${method}, the central directory ${entry.method}`, at, entry.name);
  // With a data descriptor (flag 8) the local sizes may be 0: they follow the data instead.
  const descriptor = (h.getUint16(6, true) & FLAG_DESCRIPTOR) !== 0;
  let compressed = h.getUint32(18, true);
  let size = h.getUint32(22, true);
  if (compressed === U32_MAX || size === U32_MAX) {
    // A local zip64 extra has the uncompressed size, then the compressed size (either may be absent).
    const z64 = zip64Values(rest.subarray(nameLen), at, entry.name);
    if (size === U32_MAX) size = z64.shift() ?? U32_MAX;
    if (compressed === U32_MAX) compressed = z64.shift() ?? U32_MAX;
  }
  const differs = (local: number, central: number): boolean => !(descriptor && local === 0) && local !== U32_MAX && local !== central;
  if (differs(size, entry.size) || differs(compressed, entry.compressedSize)) {
    throw new NpyError(
      'ZIP_SIZE',
      `the local header says ${compressed} bytes stored for ${size}, the central directory ${entry.compressedSize} for ${entry.size}`,
      { offset: at, member: entry.name },
    );
  }
}

export function checkSupported(entry: ZipEntry): void {
  if (entry.flags & FLAG_ENCRYPTED) throw new NpyError('ZIP_UNSUPPORTED', 'encrypted members are not supported', { member: entry.name });
  if (entry.method !== STORED && entry.method !== DEFLATED) {
    throw new NpyError('ZIP_UNSUPPORTED', `compression method ${entry.method} is not supported (only stored and deflated)`, { member: entry.name });
  }
}

/** The largest member read whole: one typed array holds at most 2^32 bytes in Node 20 (less in some browsers). */
export const MAX_MEMBER_BYTES = 2 ** 32;

/** The most a deflate stream can expand: one 258-byte copy per 2 bits. */
const MAX_DEFLATE_RATIO = 1032;

/**
 * A member's uncompressed bytes, with its size and CRC-32 verified.
 * @example
 * const raw = readZipEntry(src, entry, fflateCodec);   // inflated, size and CRC-32 checked
 */
export function readZipEntry(src: SyncByteSource, entry: ZipEntry, codec: ZipCodec, options: CrcOptions = {}): Uint8Array {
  return driveSync(readingZipEntry(src.size, entry, codec, options), performOnBytes(src));
}

/** {@link readZipEntry} as an operation over an archive of `size` bytes (the codec inflates on this thread). */
export function* readingZipEntry(size: number, entry: ZipEntry, codec: ZipCodec, options: CrcOptions = {}): Operation<Uint8Array, ViewStep> {
  const raw = yield* readingZipEntryStored(size, entry);
  const data = entry.method === STORED ? raw : codec.inflate(raw, entry.size, entry.name);
  checkZipCrc(entry, checksCrc(options) ? codec.crc32(data, 0) : null);
  return data;
}

/**
 * A member's bytes as stored (deflated or not), after every check that its declared sizes can be
 * true: a member larger than a buffer, stored sizes that disagree, or a declared size its deflated
 * bytes cannot hold is refused before anything of the declared size is allocated.
 * @example
 * const raw = readZipEntryStored(src, entry);   // inflate it with any engine, then checkZipCrc
 */
export function readZipEntryStored(src: SyncByteSource, entry: ZipEntry): Uint8Array {
  return driveSync(readingZipEntryStored(src.size, entry), performOnBytes(src));
}

/** {@link readZipEntryStored} as an operation over an archive of `size` bytes. */
export function* readingZipEntryStored(size: number, entry: ZipEntry): Operation<Uint8Array, ViewStep> {
  checkEntrySizes(entry);
  return yield* viewBytes(SOURCE, yield* readingDataOffset(size, entry), entry.compressedSize);
}

/**
 * Refuse a member whose declared sizes cannot be true (or are too large for one buffer), before
 * anything of the declared size is allocated: every whole-member reader checks this first.
 * @example
 * checkEntrySizes(entry);   // then allocate entry.size bytes
 */
export function checkEntrySizes(entry: ZipEntry): void {
  checkSupported(entry);
  if (entry.size > MAX_MEMBER_BYTES || entry.compressedSize > MAX_MEMBER_BYTES) {
    throw new NpyError(
      'TOO_LARGE',
      `member of ${entry.size} bytes is larger than one buffer can hold (${MAX_MEMBER_BYTES}); in Node read it in pieces with streamNpzMember()`,
      { member: entry.name },
    );
  }
  if (entry.method === STORED && entry.compressedSize !== entry.size) {
    throw new NpyError('ZIP_SIZE', `stored member sizes disagree: ${entry.compressedSize} stored, ${entry.size} declared`, { member: entry.name });
  }
  // Deflate expands at most 1032-fold (258-byte copies in 2 bits): a larger declared size is a lie,
  // refused before the codec allocates a buffer of that size.
  if (entry.method === DEFLATED && entry.size > MAX_DEFLATE_RATIO * entry.compressedSize + 64) {
    throw new NpyError('ZIP_SIZE', `member declares ${entry.size} bytes, more than its ${entry.compressedSize} deflated bytes can hold`, {
      member: entry.name,
    });
  }
}

/** Whether members' CRC-32 is checked as an archive is read. */
export interface CrcOptions {
  /**
   * Check each member's CRC-32 against the archive's directory (default `true`, as numpy and every
   * zip reader do). `false` skips the check, and computing the CRC-32 where that runs in JavaScript:
   * in browsers about half the time of reading a stored archive (Node computes it natively, at a
   * small cost). Sizes and the .npy structure are still checked, but a corrupted byte in the data
   * then goes unnoticed: opt out only where the bytes' integrity is already assured (a hash of the
   * file you check, or a transport that checks it).
   */
  checkCrc?: boolean;
}

/** Whether reads with these options take and check members' CRC-32 (the caller may opt out). */
export function checksCrc(options: CrcOptions): boolean {
  return options.checkCrc !== false;
}

/**
 * Refuse a member whose uncompressed bytes have another CRC-32 than its directory entry says, unless
 * the read's options opted out (`crc` null: not taken, for that reason or as checked already). Where
 * computing the CRC-32 costs (JavaScript), callers skip it with {@link checksCrc} and pass null.
 * @example
 * checkZipCrc(entry, crc32(bytes), options);
 */
export function checkZipCrc(entry: ZipEntry, crc: number | null, options: CrcOptions = {}): void {
  if (crc !== null && checksCrc(options) && crc >>> 0 !== entry.crc32 >>> 0) {
    throw new NpyError('ZIP_CRC', `CRC-32 mismatch: computed ${hex(crc >>> 0)}, the archive says ${hex(entry.crc32 >>> 0)}`, { member: entry.name });
  }
}

/**
 * The first `want` bytes of a member (all of it when shorter), reading and inflating only as much
 * as that takes: enough for a .npy header without inflating a large member whole. Unchecked (the
 * CRC covers the whole member); read the member with readZipEntry for its checked bytes.
 */
export function readZipEntryPrefix(src: SyncByteSource, entry: ZipEntry, want: number): Uint8Array {
  return driveSync(readingZipEntryPrefix(src.size, entry, want), performOnBytes(src));
}

/** {@link readZipEntryPrefix} as an operation over an archive of `size` bytes. */
export function* readingZipEntryPrefix(size: number, entry: ZipEntry, want: number): Operation<Uint8Array, ViewStep> {
  checkSupported(entry);
  const start = yield* readingDataOffset(size, entry);
  const limit = Math.min(want, entry.size);
  if (entry.method === STORED) return yield* viewBytes(SOURCE, start, limit);
  const out = new Uint8Array(limit);
  const inflater = inflaterInto(out, true);
  // Compressed bytes are read 4 KiB at a time, only until the prefix is full.
  const PIECE = 4096;
  const count = Math.max(1, Math.ceil(entry.compressedSize / PIECE));
  for (let k = 0; k < count; k++) {
    const piece = yield* viewBytes(SOURCE, start + k * PIECE, Math.min(PIECE, entry.compressedSize - k * PIECE));
    let done: boolean;
    try {
      done = inflater.push(piece, k === count - 1);
    } catch (e) {
      throw new NpyError('ZIP_FORMAT', `corrupt deflate stream: ${(e as Error).message}`, { member: entry.name });
    }
    if (done) break;
  }
  return out.subarray(0, inflater.produced);
}

function hex(x: number): string {
  return '0x' + x.toString(16).padStart(8, '0');
}

/** The check every inflate engine applies: exactly the declared size came out. */
export function checkInflatedSize(produced: number, size: number, member: string): void {
  if (produced > size) throw new NpyError('ZIP_SIZE', `member inflates beyond its declared size of ${size} bytes`, { member });
  if (produced < size) throw new NpyError('ZIP_SIZE', `member inflates to ${produced} bytes, ${size} declared`, { member });
}

// ---------------------------------------------------------------------------------------------
// Writing

/** Where a {@link ZipWriter} puts bytes: appended in order, with earlier bytes patched in place. */
export interface ZipSink {
  write(chunk: Uint8Array): void;
  patch(position: number, bytes: Uint8Array): void;
}

/** Options of {@link ZipWriter}: member dates and the deflate level. */
export interface ZipWriteOptions {
  /** Modification time written for every member (default: now). */
  date?: Date;
  /** zlib level for deflated members (default 6, as Python's zipfile). */
  level?: number;
}

/**
 * Refuse zip write options that would write a member wrongly or not at all (a level zlib has not, a
 * date that is not one); writers call it before they touch a file.
 */
export function checkZipWriteOptions(options: ZipWriteOptions): void {
  const { date } = options;
  checkNumbers(options, LEVEL_RULES);
  if (date !== undefined && !(date instanceof Date && Number.isFinite(date.getTime()))) {
    throw new NpyError('BAD_OPTION', `date must be a valid Date, got ${String(date)}`);
  }
}

/** What the zip records say of one written member: the central directory is made from these. */
export interface ZipRecord {
  nameBytes: Uint8Array;
  utf8: boolean;
  method: number;
  crc: number;
  compressedSize: number;
  size: number;
  /** Where its local header starts in the archive. */
  offset: number;
  /** Whether its local header carries zip64 sizes (a member of nearly 4 GiB or more). */
  zip64Local: boolean;
}

/**
 * The DOS time and date words zip records carry for `d` (local time, two-second steps, from 1980).
 * @example
 * const [time, date] = dosDateTime(new Date(2026, 10, 27));
 */
export function dosDateTime(d: Date): [number, number] {
  const year = Math.max(1980, d.getFullYear());
  const date = ((year - 1980) << 9) | ((d.getMonth() + 1) << 5) | d.getDate();
  const time = (d.getHours() << 11) | (d.getMinutes() << 5) | (d.getSeconds() >> 1);
  return [time, date];
}

/** Sizes at or above this get zip64 fields in the local header (deflate may expand slightly). */
const ZIP64_LOCAL_THRESHOLD = 0xffff0000 - 0x1000000;

/**
 * A member's name and method as a record to be written (its CRC, sizes and offset filled in later).
 * @example
 * const record = zipRecord('w.npy', STORED, 1024, 0);
 */
export function zipRecord(name: string, method: number, size: number, offset: number): ZipRecord {
  checkWrittenName(name, 'member name');
  const nameBytes = new TextEncoder().encode(name);
  if (nameBytes.length > U16_MAX) throw new NpyError('ZIP_UNSUPPORTED', `member name of ${nameBytes.length} bytes is too long for zip`);
  return { nameBytes, utf8: /[^\x00-\x7f]/.test(name), method, crc: 0, compressedSize: 0, size, offset, zip64Local: size >= ZIP64_LOCAL_THRESHOLD };
}

/** Bytes of a member's local header. */
export function localHeaderLength(record: ZipRecord): number {
  return 30 + record.nameBytes.length + (record.zip64Local ? 20 : 0);
}

/**
 * A member's local header: with its CRC and sizes where `filled` (else zeros, to be patched).
 * @example
 * sink.write(localHeader(record, time, date, true));
 */
export function localHeader(m: ZipRecord, time: number, date: number, filled: boolean): Uint8Array {
  const header = new Uint8Array(localHeaderLength(m));
  const h = view(header);
  h.setUint32(0, SIG_LOCAL, true);
  h.setUint16(4, m.zip64Local ? 45 : 20, true);
  h.setUint16(6, m.utf8 ? FLAG_UTF8 : 0, true);
  h.setUint16(8, m.method, true);
  h.setUint16(10, time, true);
  h.setUint16(12, date, true);
  h.setUint16(26, m.nameBytes.length, true);
  h.setUint16(28, m.zip64Local ? 20 : 0, true);
  header.set(m.nameBytes, 30);
  if (filled) {
    h.setUint32(14, m.crc, true);
    h.setUint32(18, m.zip64Local ? U32_MAX : m.compressedSize, true);
    h.setUint32(22, m.zip64Local ? U32_MAX : m.size, true);
  }
  if (m.zip64Local) {
    const q = 30 + m.nameBytes.length;
    h.setUint16(q, 0x0001, true);
    h.setUint16(q + 2, 16, true);
    if (filled) {
      h.setBigUint64(q + 4, BigInt(m.size), true);
      h.setBigUint64(q + 12, BigInt(m.compressedSize), true);
    }
  }
  return header;
}

/**
 * The central directory and end records of members written from `cdStart` on (zip64 records exactly
 * when needed), as the chunks to write.
 * @example
 * for (const chunk of centralDirectory(records, at, time, date)) sink.write(chunk);
 */
export function centralDirectory(members: readonly ZipRecord[], cdStart: number, time: number, date: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  let position = cdStart;
  for (const m of members) {
    const needSize = m.size >= U32_MAX || m.compressedSize >= U32_MAX || m.zip64Local;
    const needOffset = m.offset >= U32_MAX;
    const extraLen = needSize || needOffset ? 4 + (needSize ? 16 : 0) + (needOffset ? 8 : 0) : 0;
    const e = new Uint8Array(46 + m.nameBytes.length + extraLen);
    const v = view(e);
    v.setUint32(0, SIG_CENTRAL, true);
    v.setUint16(4, (3 << 8) | 45, true); // made by: Unix, zip 4.5
    v.setUint16(6, extraLen ? 45 : 20, true);
    v.setUint16(8, m.utf8 ? FLAG_UTF8 : 0, true);
    v.setUint16(10, m.method, true);
    v.setUint16(12, time, true);
    v.setUint16(14, date, true);
    v.setUint32(16, m.crc, true);
    v.setUint32(20, needSize ? U32_MAX : m.compressedSize, true);
    v.setUint32(24, needSize ? U32_MAX : m.size, true);
    v.setUint16(28, m.nameBytes.length, true);
    v.setUint16(30, extraLen, true);
    v.setUint32(38, (0o100644 << 16) >>> 0, true); // a regular file, rw-r--r--
    v.setUint32(42, needOffset ? U32_MAX : m.offset, true);
    e.set(m.nameBytes, 46);
    if (extraLen) {
      let q = 46 + m.nameBytes.length;
      v.setUint16(q, 0x0001, true);
      v.setUint16(q + 2, extraLen - 4, true);
      q += 4;
      if (needSize) {
        v.setBigUint64(q, BigInt(m.size), true);
        v.setBigUint64(q + 8, BigInt(m.compressedSize), true);
        q += 16;
      }
      if (needOffset) v.setBigUint64(q, BigInt(m.offset), true);
    }
    out.push(e);
    position += e.length;
  }
  const cdSize = position - cdStart;
  const count = members.length;
  const need64 = count > U16_MAX - 1 || cdStart >= U32_MAX || cdSize >= U32_MAX;
  if (need64) {
    const z = new Uint8Array(56 + 20);
    const v = view(z);
    v.setUint32(0, SIG_ZIP64_EOCD, true);
    v.setBigUint64(4, 44n, true);
    v.setUint16(12, (3 << 8) | 45, true);
    v.setUint16(14, 45, true);
    v.setBigUint64(24, BigInt(count), true);
    v.setBigUint64(32, BigInt(count), true);
    v.setBigUint64(40, BigInt(cdSize), true);
    v.setBigUint64(48, BigInt(cdStart), true);
    v.setUint32(56, SIG_ZIP64_LOCATOR, true);
    v.setBigUint64(64, BigInt(position), true);
    v.setUint32(72, 1, true);
    out.push(z);
  }
  const end = new Uint8Array(22);
  const v = view(end);
  v.setUint32(0, SIG_EOCD, true);
  v.setUint16(8, need64 ? U16_MAX : count, true);
  v.setUint16(10, need64 ? U16_MAX : count, true);
  v.setUint32(12, need64 ? U32_MAX : cdSize, true);
  v.setUint32(16, need64 ? U32_MAX : cdStart, true);
  out.push(end);
  return out;
}

/**
 * Writes a zip archive member by member to a sink; members can be streamed in pieces.
 * @example
 * const sink = new MemorySink();
 * const w = new ZipWriter(sink, fflateCodec);
 * w.add('notes.txt', [text], text.length, false);
 * w.finish();
 */
export class ZipWriter {
  private position = 0;
  private readonly members: ZipRecord[] = [];
  private readonly time: number;
  private readonly date: number;

  constructor(
    private readonly sink: ZipSink,
    private readonly codec: ZipCodec,
    private readonly options: ZipWriteOptions = {},
  ) {
    checkZipWriteOptions(options);
    [this.time, this.date] = dosDateTime(options.date ?? new Date());
  }

  private emit(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.sink.write(chunk);
    this.position += chunk.length;
  }

  /** Add one member made of `pieces` (e.g. a .npy header and its data) totalling `size` bytes. */
  add(name: string, pieces: Iterable<Uint8Array>, size: number, compress: boolean): void {
    for (const _ of this.adding(name, pieces, size, compress));
  }

  /** {@link add} as steps: it pauses after each piece, for an async writer to flush its sink. */
  *adding(name: string, pieces: Iterable<Uint8Array>, size: number, compress: boolean): Generator<void> {
    const record = zipRecord(name, compress ? DEFLATED : STORED, size, this.position);
    this.emit(localHeader(record, this.time, this.date, false));
    let crc = 0;
    let written = 0;
    let compressed = 0;
    const deflater = compress ? this.codec.deflater(this.options.level) : null;
    const list = [...pieces];
    for (const [i, piece] of list.entries()) {
      crc = this.codec.crc32(piece, crc);
      written += piece.length;
      if (deflater) {
        for (const out of deflater.push(piece, i === list.length - 1)) {
          this.emit(out);
          compressed += out.length;
        }
      } else {
        this.emit(piece);
        compressed += piece.length;
      }
      yield;
    }
    if (deflater && list.length === 0)
      for (const out of deflater.push(new Uint8Array(0), true)) {
        this.emit(out);
        compressed += out.length;
      }
    if (written !== size) throw new NpyError('ZIP_SIZE', `member '${name}' has ${written} bytes, ${size} announced`);
    if (!record.zip64Local && compressed >= U32_MAX) throw new NpyError('TOO_LARGE', `member '${name}' compressed beyond 4 GiB without zip64 room`);
    // Now that CRC and sizes are known, the local header is written again with them.
    record.crc = crc;
    record.compressedSize = compressed;
    this.sink.patch(record.offset, localHeader(record, this.time, this.date, true));
    this.members.push(record);
  }

  /** Write the central directory and end records (zip64 ones exactly when needed). */
  finish(): void {
    for (const chunk of centralDirectory(this.members, this.position, this.time, this.date)) this.emit(chunk);
  }
}

/**
 * A sink that queues positional writes; a save flushes them as write steps between pieces (into a
 * file, whatever performs the steps).
 * @example
 * const sink = new QueuedSink();
 * yield* sink.flushing(file);
 */
export class QueuedSink implements ZipSink {
  private position = 0;
  private queue: [Uint8Array, number][] = [];
  write(chunk: Uint8Array): void {
    this.queue.push([chunk, this.position]);
    this.position += chunk.length;
  }
  patch(position: number, bytes: Uint8Array): void {
    this.queue.push([bytes.slice(), position]);
  }
  *flushing(file: FileRef): Operation<void, StepOf<'write'>> {
    const pending = this.queue;
    this.queue = [];
    for (const [bytes, at] of pending) yield { op: 'write', file, bytes, at };
  }
}

/**
 * A sink that keeps the archive in memory.
 * @example
 * const sink = new MemorySink();
 * writeNpz(sink, [a]);
 * const bytes = sink.bytes();
 */
export class MemorySink implements ZipSink {
  private readonly chunks: Uint8Array[] = [];
  private readonly starts: number[] = [];
  private length = 0;

  write(chunk: Uint8Array): void {
    this.starts.push(this.length);
    this.chunks.push(chunk);
    this.length += chunk.length;
  }

  patch(position: number, bytes: Uint8Array): void {
    // Patches land inside one header chunk written by this writer.
    let i = this.starts.length - 1;
    while (i > 0 && this.starts[i]! > position) i--;
    const chunk = this.chunks[i]!;
    const at = position - this.starts[i]!;
    if (at + bytes.length > chunk.length) throw new Error('internal: a zip patch must fall inside one written header');
    chunk.set(bytes, at);
  }

  bytes(): Uint8Array {
    const out = new Uint8Array(this.length);
    this.chunks.forEach((c, i) => out.set(c, this.starts[i]!));
    return out;
  }
}
