/**
 * Hyperslabs of a .npy's data: which byte runs a region (a start and a count per axis) covers, in
 * file order, with adjacent runs joined. Shared by files, HTTP ranges and archive members.
 */
import { allocateBuffer } from '../array/memory.js';
import { shapeSize } from '../format/dtype.js';
import { NpyError } from '../errors.js';
import type { NpyHeader } from '../format/header.js';
import type { DType } from '../format/dtype.js';
import type { DescrInput } from '../format/descr-types.js';
import { NdArray } from '../array/ndarray.js';
import { bytesToData } from '../array/layout.js';
import { perform, type FileRef, type Operation, type PositionalRead, type StepOf } from './steps.js';

/** What an open .npy (a file, an archive member, a URL) tells before any data is read. */
export interface OpenNpy<S extends DescrInput = DescrInput> {
  readonly header: NpyHeader;
  readonly dtype: DType<S>;
  readonly shape: number[];
  readonly order: 'C' | 'F';
}

/** A run of bytes to move: `length` bytes at `fileOffset` in the file, `regionOffset` in the region. */
export interface ByteRun {
  fileOffset: number;
  regionOffset: number;
  length: number;
}

/** The byte runs a region covers, in file order, with the region's size and shape. */
export interface RegionPlan {
  /**
   * Runs in increasing file order; together they fill the region's bytes in memory order. Made on
   * demand each time it is iterated (a column of a large file is millions of runs: they are never
   * all held at once).
   */
  runs: Iterable<ByteRun>;
  /** Bytes the region holds. */
  bytes: number;
  shape: number[];
  /**
   * The same runs as a strided walk: one run of `runLength` bytes at `base` + Σ index × stride over
   * the outer axes (`counts`, slowest first), for code that copies a region without listing its
   * runs (the addon's gather). Adjacent runs are not joined here.
   */
  strided: { base: number; runLength: number; counts: number[]; strides: number[] };
}

/**
 * Check a region against a shape: integers, in bounds, one per axis.
 * @example
 * checkRegion([10, 10], [5, 5], [6, 1]);   // throws: rows 5..10 run past the axis
 */
export function checkRegion(shape: readonly number[], start: readonly number[], count: readonly number[]): void {
  if (start.length !== shape.length || count.length !== shape.length) {
    throw new NpyError('BAD_INDEX', `a region needs a start and a count for each of the ${shape.length} axes`);
  }
  for (let a = 0; a < shape.length; a++) {
    const s = start[a]!;
    const c = count[a]!;
    if (!Number.isInteger(s) || !Number.isInteger(c) || s < 0 || c < 0 || s + c > shape[a]!) {
      throw new NpyError('BAD_INDEX', `region start ${s} count ${c} is outside axis ${a} of length ${shape[a]}`);
    }
  }
}

/**
 * The byte runs of a region, in the file's memory order. A Fortran-order file is a C-order file of
 * the reversed shape, so both are planned the same way: the trailing axes the region covers whole
 * join into one run per index of the axes before them.
 * @example
 * const plan = planRegion(header, [0, 7], [header.shape[0]!, 1]);
 * plan.bytes;   // 4 bytes per row for a float32 column
 */
export function planRegion(
  header: Pick<NpyHeader, 'shape' | 'fortranOrder' | 'dtype' | 'dataOffset'>,
  start: readonly number[],
  count: readonly number[],
): RegionPlan {
  checkRegion(header.shape, start, count);
  const rev = <T>(xs: readonly T[]): T[] => (header.fortranOrder ? [...xs].reverse() : [...xs]);
  const shape = rev(header.shape);
  const s = rev(start);
  const c = rev(count);
  const item = header.dtype.itemsize;
  const n = shape.length;
  const regionBytes = c.reduce((p, x) => p * x, 1) * item;
  if (regionBytes === 0) return { runs: [], bytes: 0, shape: [...count], strided: { base: header.dataOffset, runLength: 0, counts: [0], strides: [0] } };
  // strides in bytes, C order over the memory-order axes
  const strides = new Array<number>(n);
  let acc = item;
  for (let a = n - 1; a >= 0; a--) {
    strides[a] = acc;
    acc *= shape[a]!;
  }
  // k: the outermost axis from which the run is contiguous (all later axes whole).
  let k = n;
  let runLength = item;
  while (k > 0) {
    const a = k - 1;
    runLength *= c[a]!;
    k--;
    if (c[a] !== shape[a]) break;
  }
  const base = header.dataOffset + s.reduce((p, x, a) => p + x * strides[a]!, 0);
  function* runs(): Generator<ByteRun> {
    const idx = new Array<number>(k).fill(0);
    let regionOffset = 0;
    let pending: ByteRun | null = null;
    for (;;) {
      let off = base;
      for (let a = 0; a < k; a++) off += idx[a]! * strides[a]!;
      if (pending && pending.fileOffset + pending.length === off) pending.length += runLength;
      else {
        if (pending) yield pending;
        pending = { fileOffset: off, regionOffset, length: runLength };
      }
      regionOffset += runLength;
      let a = k - 1;
      for (; a >= 0; a--) {
        if (++idx[a]! < c[a]!) break;
        idx[a] = 0;
      }
      if (a < 0) break;
    }
    if (pending) yield pending;
  }
  return {
    runs: { [Symbol.iterator]: runs },
    bytes: regionBytes,
    shape: [...count],
    strided: { base, runLength, counts: c.slice(0, k), strides: strides.slice(0, k) },
  };
}

/** One read that covers several runs: `length` bytes at `offset`, of which the runs are kept. */
export interface RunGroup {
  offset: number;
  length: number;
  runs: ByteRun[];
}

/** Bounds on one group: the bytes it spans (gaps included) and the runs it lists. */
export interface GroupLimits {
  /** Most bytes one group spans; a single run longer than this is its own group. Default 16 MiB. */
  maxBytes?: number;
  /** Most runs one group lists. Default 65 536. */
  maxRuns?: number;
  /** Cut a run longer than `maxBytes` into pieces of `maxBytes` (for reads that must stay that small, as HTTP requests). */
  splitRuns?: boolean;
}

export const DEFAULT_GROUP_BYTES = 16 << 20;
const DEFAULT_GROUP_RUNS = 1 << 16;

/**
 * Group runs into reads: runs closer than `maxGap` bytes share one read (the gap is read and
 * dropped), so that many small runs cost few requests. Groups are made one at a time and bounded
 * (see {@link GroupLimits}), so memory stays the region plus one group whatever its shape.
 * @example
 * for (const g of groupRuns(plan.runs, 4096)) console.log(g.offset, g.length, g.runs.length);
 */
export function* groupRuns(runs: Iterable<ByteRun>, maxGap: number, limits: GroupLimits = {}): Generator<RunGroup> {
  const maxBytes = limits.maxBytes ?? DEFAULT_GROUP_BYTES;
  const maxRuns = limits.maxRuns ?? DEFAULT_GROUP_RUNS;
  let g: RunGroup | null = null;
  for (const r of limits.splitRuns ? cutRuns(runs, maxBytes) : runs) {
    if (g && r.fileOffset - (g.offset + g.length) <= maxGap && r.fileOffset + r.length - g.offset <= maxBytes && g.runs.length < maxRuns) {
      g.length = r.fileOffset + r.length - g.offset;
      g.runs.push(r);
    } else {
      if (g) yield g;
      g = { offset: r.fileOffset, length: r.length, runs: [r] };
    }
  }
  if (g) yield g;
}

/** Runs no longer than `most` bytes: a longer one is cut into consecutive pieces. */
function* cutRuns(runs: Iterable<ByteRun>, most: number): Generator<ByteRun> {
  for (const r of runs) {
    if (r.length <= most) yield r;
    else
      for (let at = 0; at < r.length; at += most)
        yield { fileOffset: r.fileOffset + at, regionOffset: r.regionOffset + at, length: Math.min(most, r.length - at) };
  }
}

/**
 * Copy a group's runs from the bytes read for it (`body`, starting at the group's offset) into the region.
 * @example
 * placeGroup(out, group, await read(group.offset, group.length));
 */
export function placeGroup(out: Uint8Array, g: RunGroup, body: Uint8Array): void {
  for (const r of g.runs) {
    const from = r.fileOffset - g.offset;
    // A short run (a column's one value per row) is copied by a loop: a view and a set per run cost ~7× as much.
    if (r.length <= SHORT_RUN) for (let i = 0; i < r.length; i++) out[r.regionOffset + i] = body[from + i]!;
    else out.set(body.subarray(from, from + r.length), r.regionOffset);
  }
}

/** Runs of at most this many bytes are copied byte by byte (see {@link placeGroup}). */
const SHORT_RUN = 32;

/**
 * The region's array from its bytes gathered in memory order (`plan.bytes` of them, owned by the caller).
 * @example
 * const a = regionArray(header, plan, gathered);   // the region's NdArray
 */
export function regionArray(header: Pick<NpyHeader, 'dtype' | 'fortranOrder'>, plan: RegionPlan, bytes: Uint8Array): NdArray {
  const data =
    header.dtype.itemsize === 0 ? new Uint8Array(0) : bytesToData(header.dtype, bytes.buffer, bytes.byteOffset, shapeSize(plan.shape), { owned: true });
  return new NdArray(header.dtype, plan.shape, data, header.fortranOrder ? 'F' : 'C');
}

/**
 * A region of a whole .npy held in memory (for example a file a page was given).
 * @example
 * const rows = readRegionFromBytes(bytes, readHeader(bytes), [10, 0], [5, 3]);
 */
export function readRegionFromBytes(bytes: Uint8Array, header: NpyHeader, start: readonly number[], count: readonly number[]): NdArray {
  const plan = planRegion(header, start, count);
  const out = new Uint8Array(allocateBuffer(plan.bytes));
  for (const r of plan.runs) out.set(bytes.subarray(r.fileOffset, r.fileOffset + r.length), r.regionOffset);
  return regionArray(header, plan, out);
}

/** Runs closer than this are read in one positional read (the gap is read and dropped). */
const POSITIONAL_MAX_GAP = 4096;
/**
 * The most one positional read of a group takes: small enough that the scratches of the reads in
 * flight stay in the CPU's cache while their runs are copied out (a column of a 1 GiB file on the
 * 2-core VM, blocking: 16 MiB groups 74 ms, 4 MiB 50 ms; async with 4 reads in flight, 4 MiB groups
 * 115 ms, 1 MiB 90 ms, and 134–162 ms one read at a time), large enough that the system calls are few.
 */
const POSITIONAL_GROUP_BYTES = 1 << 20;

/**
 * Bytes read by region reads of this process, for tests and benchmarks.
 * @example
 * const before = regionStats.bytes;
 * h.read([0, 0], [10, 10]);
 * regionStats.bytes - before;   // bytes this read took from the file
 */
export const regionStats = { reads: 0, bytes: 0 };

/**
 * The steps of one region read from an open .npy: a strided copy where the driver can make one in a
 * step (Node's addon, from a map of the file), else positional reads of the runs, joined in groups.
 * Memory is the region plus one group of runs (≤ 16 MiB). `name` is the file named in errors.
 */
export function* readingRegion(
  name: string,
  file: FileRef,
  header: NpyHeader,
  start: readonly number[],
  count: readonly number[],
): Operation<NdArray, StepOf<'gather' | 'reads'>> {
  const plan = planRegion(header, start, count);
  const out = new Uint8Array(allocateBuffer(plan.bytes));
  if (plan.bytes > 0 && (yield* perform({ op: 'gather', file, strided: plan.strided, out }))) {
    regionStats.reads++;
    regionStats.bytes += plan.bytes;
    return regionArray(header, plan, out);
  }
  // Groups are read as the driver takes them (async: several in flight on the thread pool); a group
  // of one run is read straight into the region, others into a scratch of their own, placed and
  // freed as each read completes, so scratch memory is the reads in flight times one group.
  const free: Uint8Array[] = [];
  const groupOf = new Map<PositionalRead, RunGroup>();
  function* reads(): Generator<PositionalRead> {
    for (const g of groupRuns(plan.runs, POSITIONAL_MAX_GAP, { maxBytes: POSITIONAL_GROUP_BYTES })) {
      let into: Uint8Array;
      if (g.runs.length === 1) into = out.subarray(g.runs[0]!.regionOffset, g.runs[0]!.regionOffset + g.length);
      else into = (free.pop() ?? new Uint8Array(POSITIONAL_GROUP_BYTES)).subarray(0, g.length); // a group of several runs spans at most that
      const read = { into, at: g.offset };
      groupOf.set(read, g);
      yield read;
    }
  }
  const onRead = (read: PositionalRead, got: number): void => {
    const g = groupOf.get(read)!;
    groupOf.delete(read);
    regionStats.reads++;
    regionStats.bytes += got;
    if (got < g.length) throw new NpyError('DATA_TRUNCATED', `${name} ends at byte ${g.offset + got}, the region needs byte ${g.offset + g.length}`);
    if (g.runs.length > 1) {
      placeGroup(out, g, read.into);
      free.push(new Uint8Array(read.into.buffer));
    }
  };
  yield { op: 'reads', file, reads: reads(), onRead };
  return regionArray(header, plan, out);
}
