/** One member of an archive file: streamed in chunks, or (stored) opened for region reads like a .npy file. */
import { createInflateRaw } from 'node:zlib';
import type { Expecting } from '../../npy.js';
import type { ReadHeaderOptions } from '../../format/header.js';
import type { DescrInput } from '../../format/descr-types.js';
import { driveSync } from '../../io/steps.js';
import { NpyError } from '../../errors.js';
import { openingMember, type NpzArchive } from '../../npz/archive.js';
import { windowSource, type SyncByteSource } from '../../io/byte-source.js';
import { STORED, checkInflatedSize, checkSupported, checkZipCrc, performOnBytes, type ZipEntry } from '../../npz/zip.js';
import type { AsyncOptions } from '../fd.js';
import { crc32 } from '../native.js';
import { openHandle, openHandleSync, type NpyFileHandle, type NpyFileHandleSync } from '../../io/handles.js';
import { checkOptions, knownKeys } from '../../options.js';

const MEMBER_SYNC_KEYS = knownKeys<ReadHeaderOptions>({ maxHeaderBytes: true, expect: true, exactByteOrder: true, voidAs: true });
const MEMBER_KEYS = knownKeys<ReadHeaderOptions & AsyncOptions>({ maxHeaderBytes: true, expect: true, exactByteOrder: true, voidAs: true, signal: true });

/**
 * A member's uncompressed bytes as a stream of chunks, for members too large for one buffer.
 * Size and CRC-32 (unless the archive was opened with `{ checkCrc: false }`) are checked at the end:
 * the last step throws if they do not match.
 * @example
 * for await (const chunk of streamNpzMember(z, 'huge')) hash.update(chunk);
 */
export async function* streamNpzMember(archive: NpzArchive, name: string, chunkSize = 16 << 20): AsyncGenerator<Uint8Array> {
  const entry = archive.entry(name);
  checkSupported(entry);
  const start = await archive.dataOffset(name);
  const read = (offset: number, length: number): Promise<Uint8Array> => archive.readRange(offset, length);
  let crc = 0;
  let produced = 0;
  const account = (chunk: Uint8Array): Uint8Array => {
    crc = crc32(chunk, crc);
    produced += chunk.length;
    if (produced > entry.size) checkInflatedSize(produced, entry.size, entry.name);
    return chunk;
  };
  if (entry.method === STORED) {
    for (let at = 0; at < entry.compressedSize; at += chunkSize) {
      yield account(await read(start + at, Math.min(chunkSize, entry.compressedSize - at)));
    }
  } else {
    const inflater = createInflateRaw();
    const feed = (async () => {
      for (let at = 0; at < entry.compressedSize; at += chunkSize) {
        const piece = await read(start + at, Math.min(chunkSize, entry.compressedSize - at));
        if (!inflater.write(piece)) await new Promise((r) => inflater.once('drain', r));
      }
      inflater.end();
    })();
    try {
      for await (const chunk of inflater) yield account(new Uint8Array((chunk as Buffer).buffer, (chunk as Buffer).byteOffset, (chunk as Buffer).length));
    } catch (e) {
      throw new NpyError('ZIP_FORMAT', `corrupt deflate stream: ${(e as Error).message}`, { member: entry.name });
    }
    await feed;
  }
  checkInflatedSize(produced, entry.size, entry.name);
  checkZipCrc(entry, crc, { checkCrc: archive.checksCrc });
}

/** The stored member a region read needs (deflated members have no random access). */
function storedEntry(archive: NpzArchive, name: string): ZipEntry {
  const entry = archive.entry(name);
  checkSupported(entry);
  if (entry.method !== STORED) {
    throw new NpyError('ZIP_UNSUPPORTED', 'region reads need a stored member; this one is deflated (read it whole, or stream it)', { member: entry.name });
  }
  return entry;
}

/**
 * Region reads of one stored (uncompressed) member of an archive, which is a plain .npy at an
 * offset. Deflated members have no random access: read them whole or with streamNpzMember().
 * @example
 * await using z = await openNpz('big.npz');
 * await using m = await openNpzMember(z, 'x');
 * const rows = await m.read([0, 0], [10, m.shape[1]!]);
 */
export async function openNpzMember<const S extends DescrInput>(
  archive: NpzArchive,
  name: string,
  options: ReadHeaderOptions & AsyncOptions & Expecting<S>,
): Promise<NpyFileHandle<S>>;
export async function openNpzMember(archive: NpzArchive, name: string, options?: ReadHeaderOptions & AsyncOptions): Promise<NpyFileHandle>;
export async function openNpzMember(archive: NpzArchive, name: string, options: ReadHeaderOptions & AsyncOptions = {}): Promise<NpyFileHandle> {
  checkOptions('openNpzMember', options, MEMBER_KEYS);
  const entry = storedEntry(archive, name);
  const { base, header } = await archive.runAsync(openingMember(archive.source.size, entry, options), options.signal);
  // The member as a source of its own, read through the archive (its cache, its counted requests).
  return openHandle(entry.name, windowSource(archive.sourceThrough(), base, entry.size, entry.name), header);
}

/**
 * {@link openNpzMember}, blocking, for an archive from `openNpzSync`.
 * @example
 * const m = openNpzMemberSync(openNpzSync('big.npz'), 'x');
 */
export function openNpzMemberSync<const S extends DescrInput>(
  archive: NpzArchive<SyncByteSource>,
  name: string,
  options: ReadHeaderOptions & Expecting<S>,
): NpyFileHandleSync<S>;
export function openNpzMemberSync(archive: NpzArchive<SyncByteSource>, name: string, options?: ReadHeaderOptions): NpyFileHandleSync;
export function openNpzMemberSync(archive: NpzArchive<SyncByteSource>, name: string, options: ReadHeaderOptions = {}): NpyFileHandleSync {
  checkOptions('openNpzMemberSync', options, MEMBER_SYNC_KEYS);
  const entry = storedEntry(archive, name);
  const src = archive.source;
  const { base, header } = driveSync(openingMember(src.size, entry, options), performOnBytes(src));
  return openHandleSync(entry.name, windowSource(src, base, entry.size, entry.name), header);
}
