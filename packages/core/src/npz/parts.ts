/**
 * A .npz of stored members written as the parts of one multipart upload, by many workers: a plan
 * says which rows of which member each part holds (a large member is split into parts of its own,
 * small ones share a part) and the zip directory goes in the last part. A zip member's local header
 * carries the CRC-32 of all its bytes, which no worker sees alone, so a part is made in two steps:
 * each worker encodes its part and reports the checksums of its pieces (JSON); the CRCs combined
 * from every report (zlib's crc32_combine) complete the headers and the directory.
 */
import { parseDescr } from '../format/dtype.js';
import type { DescrInput } from '../format/descr-types.js';
import type { NdArray } from '../array/ndarray.js';
import { NpyError, withWhere } from '../errors.js';
import { PART_LIMIT_RULES, PLAN_RULES, checkNumbers } from '../options.js';
import { hasObject, type ArraySpec } from '../npy.js';
import { S3, fromBase64, planParts, refuse, regionBytes, type ObjectPlan, type PartLimits, type PartPlan } from '../io/parts.js';
import { STORED, centralDirectory, dosDateTime, localHeader, localHeaderLength, zipRecord, type ZipRecord } from './zip.js';
import { crc32, crc32Combine } from './crc32.js';
import { namedObject } from '../array/safe-object.js';

/** One member of a planned archive. */
export interface NpzMemberSpec {
  /** Its key (`np.load(f)[key]`); the zip member is `key.npy`. */
  key: string;
  dtype: DescrInput;
  shape: readonly number[];
  /** Memory order of the member's file (default C). */
  order?: 'C' | 'F';
}

/** What to plan: the members, in archive order, and about how large a part is. */
export interface PlanNpzPartsOptions extends PartLimits {
  members: readonly NpzMemberSpec[];
  /** About how many bytes each part holds (whole rows or columns). Default: the smallest part the limits allow. */
  partSize?: number;
  /** The members' modification time (default: now). Every worker writes it, so it is in the plan. */
  date?: Date;
}

/** A planned member: its .npy (as a part plan has it) and where its records and bytes are in the archive. */
export interface NpzPlannedMember extends ObjectPlan {
  key: string;
  /** The zip member's name. */
  name: string;
  /** Where its local header starts in the archive. */
  offset: number;
  /** Where its .npy starts (after the local header). */
  npyOffset: number;
}

/** The bytes of one member a part holds: a region of the array, and where it lies in the member's .npy. */
export interface NpzPiece {
  key: string;
  start: number[];
  count: number[];
  /** Offset of these bytes in the member's .npy (0: the piece starts the member, with its headers). */
  at: number;
  /** Bytes of the member's .npy the piece holds (its .npy header included when it starts the member). */
  length: number;
}

/** One part of an archive plan: its number (from 1), its bytes in the archive, and the member pieces it holds. */
export interface NpzPlannedPart {
  number: number;
  offset: number;
  length: number;
  pieces: NpzPiece[];
  /** Whether the zip directory ends this part (the last one). */
  directory: boolean;
}

/** A multipart plan for a .npz: JSON, handed to every worker. */
export interface NpzPartPlan {
  /** The DOS time and date every record carries. */
  time: number;
  date: number;
  /** Bytes of the whole archive. */
  size: number;
  /** Where the central directory starts. */
  directoryOffset: number;
  members: NpzPlannedMember[];
  parts: NpzPlannedPart[];
}

/** The CRC-32 of a piece of one member, as a worker reports it. */
export interface MemberChecksum {
  key: string;
  at: number;
  length: number;
  crc: number;
}

/**
 * A plan for writing an archive of stored members as the parts of one multipart upload: each
 * member's rows are split into parts of about `partSize` (a member smaller than that shares a part
 * with its neighbours), every part but the last at least the store's smallest, and the zip
 * directory at the end of the last part. A layout that cannot meet the limits is refused before
 * anything is uploaded.
 * @example
 * const plan = planNpzParts({ members: [{ key: 'x', dtype: '<f4', shape: [65536, 1024] }, { key: 'y', dtype: '<i8', shape: [65536] }] });
 * plan.parts.map((p) => p.pieces.map((q) => q.key));   // [['x'], ['x'], …, ['x', 'y']]
 */
export function planNpzParts(options: PlanNpzPartsOptions): NpzPartPlan {
  checkNumbers(options, PART_LIMIT_RULES, PLAN_RULES);
  const limits = { ...S3, ...options };
  const target = options.partSize ?? limits.minPartBytes;
  if (!(target >= limits.minPartBytes)) refuse(`partSize must be at least the store's smallest part (${limits.minPartBytes} bytes), not ${options.partSize}`);
  if (options.members.length === 0) refuse('an archive plan needs at least one member');
  const [time, date] = dosDateTime(options.date ?? new Date());
  const keys = new Set<string>();
  const members: NpzPlannedMember[] = [];
  const records: ZipRecord[] = [];
  /** The pieces in archive order, each with the bytes before it in the archive (its headers). */
  const units: { piece: NpzPiece; offset: number; length: number }[] = [];
  let fullParts = 0;
  let offset = 0;
  for (const spec of options.members) {
    if (keys.has(spec.key)) refuse(`the member '${spec.key}' is named twice`);
    keys.add(spec.key);
    const dtype = parseDescr(spec.dtype);
    if (hasObject(dtype)) refuse(`member '${spec.key}' is an object array: pickles are not fixed-size rows and cannot be written in parts`);
    const name = `${spec.key}.npy`;
    // A member's first piece carries its local header: pieces leave room for the largest it can be.
    const pieceMax = limits.maxPartBytes - localHeaderLength({ ...zipRecord(name, STORED, 0, 0), zip64Local: true });
    // The member's own row split, as a .npy of its own would have it (no smallest part: small tails are merged below).
    let own: PartPlan;
    try {
      own = planParts({
        dtype: spec.dtype,
        shape: spec.shape,
        order: spec.order ?? 'C',
        partSize: target,
        minPartBytes: 0,
        maxPartBytes: pieceMax,
        maxObjectBytes: limits.maxObjectBytes,
        // A member that alone needs more parts than the store allows is refused before they are made.
        maxParts: limits.maxParts,
      });
    } catch (e) {
      throw withWhere(e, { member: `${spec.key}.npy` });
    }
    const record = zipRecord(name, STORED, own.size, offset);
    records.push(record);
    const npyOffset = offset + localHeaderLength(record);
    members.push({ ...withoutParts(own), key: spec.key, name, offset, npyOffset });
    const split = own.parts.map((p) => ({ key: spec.key, start: p.start, count: p.count, at: p.offset, length: p.length }));
    // A short last piece joins the one before it (a member's parts are then all about partSize).
    const last = split.at(-1)!;
    const before = split.at(-2);
    if (before && last.length < target && before.length + last.length <= pieceMax) {
      const axis = own.fortranOrder ? own.shape.length - 1 : 0;
      before.count[axis]! += last.count[axis]!;
      before.length += last.length;
      split.pop();
    }
    for (const piece of split) {
      const first = piece.at === 0;
      units.push({ piece, offset: first ? offset : npyOffset + piece.at, length: piece.length + (first ? npyOffset - offset : 0) });
      // Each piece of partSize or more closes a part of its own: counted as they come, so that many
      // large members are refused before all their pieces are planned.
      if (piece.length >= target && ++fullParts > limits.maxParts)
        refuse(`more than ${limits.maxParts} parts; the store takes at most ${limits.maxParts}: ask for larger parts (partSize)`);
    }
    offset = npyOffset + own.size;
  }
  const directoryOffset = offset;
  const directoryBytes = centralDirectory(records, directoryOffset, time, date).reduce((n, c) => n + c.length, 0);
  const size = directoryOffset + directoryBytes;
  if (size > limits.maxObjectBytes) refuse(`the archive is ${size} bytes; the store takes objects up to ${limits.maxObjectBytes}`);
  // Pieces in order, a part closed once it holds partSize.
  const parts: NpzPlannedPart[] = [];
  let open: NpzPlannedPart | null = null;
  for (const unit of units) {
    if (open && open.length + unit.length > limits.maxPartBytes) {
      if (open.length < limits.minPartBytes) {
        refuse(
          `part ${open.number} would hold ${open.length} bytes and the next piece ${unit.length}: no split meets both the store's smallest (${limits.minPartBytes}) and largest (${limits.maxPartBytes}) parts`,
        );
      }
      open = null;
    }
    if (!open) {
      open = { number: parts.length + 1, offset: unit.offset, length: 0, pieces: [], directory: false };
      parts.push(open);
    }
    open.pieces.push(unit.piece);
    open.length += unit.length;
    if (open.length >= target) open = null;
  }
  const end = parts.at(-1)!;
  end.length += directoryBytes;
  end.directory = true;
  if (end.length > limits.maxPartBytes)
    refuse(`the last part would hold ${end.length} bytes; the store takes parts up to ${limits.maxPartBytes}: ask for smaller parts (partSize)`);
  if (parts.length > limits.maxParts) refuse(`${parts.length} parts; the store takes at most ${limits.maxParts}: ask for larger parts (partSize)`);
  return { time, date, size, directoryOffset, members, parts };
}

function withoutParts(plan: ObjectPlan & { parts: unknown }): ObjectPlan {
  const { parts: _, ...rest } = plan;
  return rest;
}

/** A part encoded by a worker: the checksums to report, and its bytes once every member's CRC is known. */
export interface EncodedNpzPart {
  number: number;
  /** The CRC-32 of each member piece in the part: report these, to be combined with every other part's. */
  checksums: MemberChecksum[];
  /**
   * The part's bytes, its local headers (and, in the last part, the directory) written with the
   * members' CRCs. A part of one member's rows alone is a view of the array given (no copy): keep
   * that array unchanged until the part is uploaded.
   */
  bytes(crcs: Readonly<Record<string, number>>): Uint8Array;
}

/** The zip record of a planned member with its CRC. */
function recordOf(member: NpzPlannedMember, crc: number): ZipRecord {
  const record = zipRecord(member.name, STORED, member.size, member.offset);
  record.crc = crc;
  record.compressedSize = member.size;
  return record;
}

function crcOf(crcs: Readonly<Record<string, number>>, key: string, number: number): number {
  // Own properties only: a key such as 'constructor' or '__proto__' must not read the prototype's.
  const crc = Object.hasOwn(crcs, key) ? crcs[key] : undefined;
  if (!Number.isInteger(crc) || crc! < 0 || crc! > 0xffffffff) {
    throw new NpyError('BAD_OPTION', `part ${number} needs the CRC-32 of member '${key}' (combine every part's checksums with combineNpzChecksums)`);
  }
  return crc!;
}

/**
 * Encode one part from the arrays of exactly its pieces' regions (by key): the checksums to report
 * now, and the bytes to upload once the CRCs are combined from every part's checksums.
 * @example
 * const part = encodeNpzPart(plan, 2, { x: rows });
 * report(part.checksums);
 * await upload(2, part.bytes(await crcsFromCoordinator()));
 */
export function encodeNpzPart(plan: NpzPartPlan, number: number, arrays: Readonly<Record<string, NdArray | ArraySpec>>): EncodedNpzPart {
  const part = plan.parts.find((p) => p.number === number);
  if (!part) refuse(`the plan has parts 1 to ${plan.parts.length}, not ${number}`);
  for (const key of Object.keys(arrays)) {
    if (!part.pieces.some((p) => p.key === key)) refuse(`part ${number} holds ${part.pieces.map((p) => `'${p.key}'`).join(', ')}, not '${key}'`);
  }
  const checksums: MemberChecksum[] = [];
  const headers: { at: number; member: NpzPlannedMember }[] = [];
  /** What the part is made of, in order: each piece's headers (at its start) and its region's bytes. */
  const segments: { at: number; bytes: Uint8Array }[] = [];
  let at = 0;
  for (const piece of part.pieces) {
    const member = plan.members.find((m) => m.key === piece.key)!;
    const input = Object.hasOwn(arrays, piece.key) ? arrays[piece.key] : undefined;
    if (input === undefined) refuse(`part ${number} holds rows of '${piece.key}': pass them as { '${piece.key}': array }`);
    const data = regionBytes(member, piece, input, `part ${number}'s piece of '${piece.key}'`);
    let crc = 0;
    if (piece.at === 0) {
      headers.push({ at, member });
      at += member.npyOffset - member.offset; // the local header, written once the CRC is known
      const npyHeader = fromBase64(member.header);
      segments.push({ at, bytes: npyHeader });
      at += npyHeader.length;
      crc = crc32(npyHeader);
    }
    segments.push({ at, bytes: data });
    at += data.length;
    checksums.push({ key: piece.key, at: piece.at, length: piece.length, crc: crc32(data, crc) });
  }
  const directoryAt = at;
  if (directoryAt + (part.directory ? plan.size - plan.directoryOffset : 0) !== part.length) {
    throw new NpyError('INTERNAL', `part ${number} came to ${directoryAt} bytes before its directory, the plan says ${part.length}`);
  }
  // A part that is rows of one member alone (the middle of a large member) is those rows' bytes as
  // they are: no copy where they need no swap (the array must then stay as it is until the upload).
  // Others are assembled now, their headers filled in when the CRCs are known.
  if (segments.length === 1 && headers.length === 0 && !part.directory) {
    const alone = segments[0]!.bytes;
    return { number, checksums, bytes: () => alone };
  }
  const out = new Uint8Array(part.length);
  for (const segment of segments) out.set(segment.bytes, segment.at);
  return {
    number,
    checksums,
    bytes(crcs) {
      for (const { at: h, member } of headers) out.set(localHeader(recordOf(member, crcOf(crcs, member.key, number)), plan.time, plan.date, true), h);
      if (part.directory) {
        const records = plan.members.map((m) => recordOf(m, crcOf(crcs, m.key, number)));
        let d = directoryAt;
        for (const chunk of centralDirectory(records, plan.directoryOffset, plan.time, plan.date)) {
          out.set(chunk, d);
          d += chunk.length;
        }
      }
      return out;
    },
  };
}

/**
 * Every member's CRC-32 from the checksums every part reported (in any order): each member's pieces
 * must cover its bytes exactly once.
 * @example
 * const crcs = combineNpzChecksums(plan, reports.flat());   // { x: 0x…, y: 0x… }: hand to every worker
 */
export function combineNpzChecksums(plan: NpzPartPlan, checksums: readonly MemberChecksum[]): Record<string, number> {
  const byMember = new Map<string, MemberChecksum[]>(plan.members.map((m) => [m.key, []]));
  for (const c of checksums) {
    // Reports arrive as JSON from workers: a field that is not what a worker computes is refused, never combined.
    const whole = (v: unknown, most: number): boolean => Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) <= most;
    if (!whole(c.at, Number.MAX_SAFE_INTEGER) || !whole(c.length, Number.MAX_SAFE_INTEGER) || !whole(c.crc, 0xffffffff)) {
      throw new NpyError('BAD_OPTION', `a checksum of member '${String(c.key)}' is not one encodeNpzPart reports: ${JSON.stringify(c)}`);
    }
    const list = byMember.get(c.key);
    // A checksum of no member of this plan is another plan's (or archive's): refused, not ignored.
    if (!list)
      throw new NpyError('BAD_OPTION', `a checksum names member '${String(c.key)}', which the plan does not have: combine the checksums of this plan's parts`);
    list.push(c);
  }
  // No prototype: a member keyed '__proto__' (np.savez writes one) is a key like any other.
  const crcs = namedObject<number>();
  for (const member of plan.members) {
    const pieces = byMember.get(member.key)!.sort((a, b) => a.at - b.at);
    let crc = 0;
    let covered = 0;
    for (const piece of pieces) {
      if (piece.at !== covered) {
        throw new NpyError(
          'BAD_OPTION',
          `the checksums of member '${member.key}' ${piece.at > covered ? `miss its bytes ${covered} to ${piece.at}` : `cover its bytes from ${piece.at} twice`}: combine the checksums of every part, each once`,
        );
      }
      crc = crc32Combine(crc, piece.crc, piece.length);
      covered += piece.length;
    }
    if (covered !== member.size) {
      throw new NpyError(
        'BAD_OPTION',
        `the checksums of member '${member.key}' cover ${covered} of its ${member.size} bytes: combine the checksums of every part`,
      );
    }
    crcs[member.key] = crc;
  }
  return crcs;
}
