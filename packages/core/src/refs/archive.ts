/**
 * A reference set opened as a .npz: the archive numpy's `np.savez` would write for the set's arrays
 * (stored members `<array>.npy`), laid out over the bytes the references name without copying them.
 * Its directory and each member's local and .npy headers are made in memory; a read of a member's
 * data reads the referenced ranges. So `openNpz` of a set made from a .npz gives back the archive's
 * members, with everything an archive does (`get`, `openMember` region reads, `header`).
 */
import type { AsyncByteSource, ByteSource } from '../io/byte-source.js';
import { NpyError } from '../errors.js';
import { encodeHeader } from '../format/header.js';
import { NpzArchive, type NpzOptions } from '../npz/archive.js';
import { STORED, centralDirectory, dosDateTime, localHeader, zipRecord, type ZipRecord } from '../npz/zip.js';
import type { Place } from '../weights/place.js';
import { isReferenceSet, ReferenceSetFile } from './reader.js';

/** One piece of the archive: bytes made here, or a range of a referenced file. */
type Part = { readonly at: number; readonly length: number } & (
  | { readonly bytes: Uint8Array; readonly read?: undefined }
  | {
      readonly bytes?: undefined;
      readonly read: (offset: number, length: number, signal?: AbortSignal) => Promise<Uint8Array> | Uint8Array;
      readonly offset: number;
    }
);

/**
 * The archive `open` opens over `source`; where the source is no zip but a reference set (told by its
 * first bytes, read only after the zip's directory was not found), the set as an archive, its files
 * found through `place`.
 * @example
 * await orReferenceSet(source, options, () => folderStore, () => NpzArchive.open(source, options));
 */
export async function orReferenceSet(
  source: ByteSource,
  options: NpzOptions & { signal?: AbortSignal | undefined },
  place: () => Place | null,
  open: () => Promise<NpzArchive>,
): Promise<NpzArchive> {
  try {
    return await open();
  } catch (e) {
    if (!(e instanceof NpyError && e.code === 'ZIP_FORMAT') || !isReferenceSet(await source.read(0, 64, { signal: options.signal }))) throw e;
  }
  const name = source.name ?? 'the reference set';
  const set = await ReferenceSetFile.open(source, place(), { signal: options.signal });
  try {
    return await referenceArchive(set, options, name);
  } catch (e) {
    await set.close();
    throw e;
  }
}

/** A fixed time for every member (a set has no modification times to carry): 1980-01-01 00:00. */
const [TIME, DATE] = dosDateTime(new Date(1980, 0, 1));

/**
 * The set's arrays as a stored archive. A set records no CRC-32 of its chunks (their sizes and
 * places are checked), so the archive's members carry none and none is checked: `checkCrc: true`
 * is refused. An array whose bytes lie in an order a .npy cannot describe (a Zarr v3 transpose
 * other than C or Fortran order) is refused by name: `openWeights` reads it.
 * @example
 * const z = await referenceArchive(await ReferenceSetFile.open(source, place, {}), {});
 */
export async function referenceArchive(set: ReferenceSetFile, options: NpzOptions & { signal?: AbortSignal | undefined }, name: string): Promise<NpzArchive> {
  if (options.checkCrc === true) {
    throw new NpyError(
      'BAD_OPTION',
      `openNpz: ${name} is a reference set, which records no CRC-32 of its chunks (their sizes and places are checked): leave out checkCrc`,
    );
  }
  const parts: Part[] = [];
  const records: ZipRecord[] = [];
  let at = 0;
  const push = (part: Part): void => {
    if (part.length > 0) parts.push(part);
    at += part.length;
  };
  for (const array of set.names) {
    options.signal?.throwIfAborted();
    const { array: a, bytes, pieces } = await set.pieces(array);
    if (a.permutation) {
      throw new NpyError(
        'NO_COUNTERPART',
        `array '${array}' of ${name} lies in the order of axes ${a.permutation.join(', ')}, which a .npy member cannot describe: read the set with openWeights`,
        { member: array },
      );
    }
    const head = encodeHeader(a.dtype, a.shape, a.fortranOrder);
    const record = zipRecord(`${array}.npy`, STORED, head.length + bytes, at);
    record.compressedSize = record.size;
    const local = localHeader(record, TIME, DATE, true);
    push({ at, length: local.length, bytes: local });
    push({ at, length: head.length, bytes: head });
    for (const p of pieces) {
      if (p.bytes) push({ at, length: p.length, bytes: p.bytes });
      else {
        const { source } = p;
        push({ at, length: p.length, offset: p.offset, read: (offset, length, signal) => source.read(offset, length, { signal }) });
      }
    }
    records.push(record);
  }
  for (const chunk of centralDirectory(records, at, TIME, DATE)) push({ at, length: chunk.length, bytes: chunk });
  const source: AsyncByteSource = {
    size: at,
    name,
    read: (offset, length, readOptions) => readParts(parts, at, offset, length, readOptions?.signal),
    close: () => set.close(),
  };
  return NpzArchive.open(source, { ...options, checkCrc: false });
}

/** `length` bytes at `offset` of the archive the parts lay out (fewer at its end). */
async function readParts(parts: readonly Part[], size: number, offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array> {
  const end = Math.min(size, offset + Math.max(0, length));
  if (end <= offset) return new Uint8Array(0);
  // The first part that reaches past `offset` (parts are in order and do not overlap).
  let lo = 0;
  let hi = parts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (parts[mid]!.at + parts[mid]!.length <= offset) lo = mid + 1;
    else hi = mid;
  }
  const out = new Uint8Array(end - offset);
  for (let i = lo; i < parts.length && parts[i]!.at < end; i++) {
    const p = parts[i]!;
    const from = Math.max(offset, p.at);
    const to = Math.min(end, p.at + p.length);
    const bytes = p.bytes ? p.bytes.subarray(from - p.at, to - p.at) : await p.read(p.offset + from - p.at, to - from, signal);
    if (bytes.length !== to - from) {
      throw new NpyError('DATA_TRUNCATED', `a referenced file ended early: ${bytes.length} of ${to - from} bytes read`);
    }
    out.set(bytes, from - offset);
  }
  return out;
}
