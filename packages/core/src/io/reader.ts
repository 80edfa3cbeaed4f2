/**
 * The one region reader of a .npy over any byte source (a file, a Blob, a URL, an archive member, a
 * tensor of a weight file): its header read already, regions read as batches of nearby runs.
 */
import { NdArray } from '../array/ndarray.js';
import { bytesToData } from '../array/layout.js';
import { shapeSize } from '../format/dtype.js';
import type { DescrInput } from '../format/descr-types.js';
import type { NpyHeader } from '../format/header.js';
import { groupRuns, placeGroup, planRegion, regionArray, type ByteRun, type OpenNpy, type RegionPlan, type RunGroup } from './region.js';
import { ByteBudget, inParallel } from './settle.js';
import { allocateBuffer } from '../array/memory.js';
import { NpyError } from '../errors.js';
import type { AsyncByteSource, ByteSource, ReadOptions } from './byte-source.js';

/** What a reader has read so far: requests (reads of its source, or HTTP requests), body bytes, and reads a cache served. */
export interface NpyReadStats {
  requests: number;
  bytes: number;
  cached: number;
}

/** Options of a region read: `signal`, and a buffer to read into (see `TensorReadOptions.into`). */
export interface RegionReadOptions {
  signal?: AbortSignal | undefined;
  /** Gives a buffer of at least the bytes asked for, which the array returned views (where the bytes are copied, not viewed). */
  into?: ((bytes: number) => ArrayBufferLike) | undefined;
}

/** An open .npy whose regions are read asynchronously, whatever holds its bytes. */
export interface NpyReader<S extends DescrInput = DescrInput> extends OpenNpy<S> {
  /** What this reader has read so far (the header included). */
  readonly stats: NpyReadStats;
  /** The hyperslab [start, start + count) of each axis, in native byte order and the file's memory order. */
  read(start: readonly number[], count: readonly number[], options?: RegionReadOptions): Promise<NdArray<S>>;
  close(): Promise<void>;
}

/** How a reader reads its source: which ranges it joins, how long one read is, and how many are in flight. */
export interface ReadTuning {
  /** Ranges of a region closer than this go in one read (remote sources favour fewer, larger reads). */
  maxGap: number;
  /** Bytes one read asks for at most (a run longer than this is split). */
  readBytes: number;
  /** Reads in flight at once. */
  concurrency: number;
  /** What the reads in flight may hold together. */
  budget: ByteBudget;
}

/** The tuning of a reader of any source: 64 KiB gaps joined, reads of up to 8 MiB, 6 in flight holding up to 16 MiB. */
function sourceTuning(): ReadTuning {
  return { maxGap: 64 << 10, readBytes: 8 << 20, concurrency: 6, budget: new ByteBudget(16 << 20) };
}

/** Options of {@link npyReaderOf}. */
export interface ReaderOptions {
  /** Where the reader's counts go (the header's reads, say, counted before). */
  stats?: NpyReadStats;
  /** Whether the reader counts its reads itself (default true; false where the source counts them into `stats`). */
  countReads?: boolean;
  tuning?: ReadTuning;
}

/**
 * The reader of a .npy in `source` whose header was read already (an archive member's, read with
 * its local header): a region is read as groups of nearby runs, several reads in flight at once (a
 * remote source answers them together), several groups in one read where the source takes ranges
 * together ({@link AsyncByteSource.readRanges}), and at most the tuning's budget held by reads in flight.
 */
export function npyReaderOf(source: ByteSource, header: NpyHeader, name: string, options: ReaderOptions = {}): NpyReader {
  const stats = options.stats ?? { requests: 0, bytes: 0, cached: 0 };
  const counting = options.countReads !== false;
  const tuning = options.tuning ?? sourceTuning();
  const count = (bodies: readonly Uint8Array[]): void => {
    if (!counting) return;
    stats.requests++;
    for (const b of bodies) stats.bytes += b.length;
  };
  const readInto = source.readInto?.bind(source) as ((target: Uint8Array, offset: number, options?: ReadOptions) => number | Promise<number>) | undefined;
  const readRanges = 'readRanges' in source && source.readRanges ? source.readRanges.bind(source) : null;
  const truncated = (g: { offset: number; length: number }, got: number): never => {
    throw new NpyError('DATA_TRUNCATED', `${name} ends at byte ${g.offset + got}, the region needs byte ${g.offset + g.length}`);
  };
  return {
    stats,
    header,
    dtype: header.dtype,
    shape: [...header.shape],
    order: header.fortranOrder ? 'F' : 'C',
    async read(start, count_, readOptions = {}) {
      const { signal } = readOptions;
      signal?.throwIfAborted();
      // The whole array is one run, known without planning it (a weight file's every get asks for it).
      const whole = start.length === header.shape.length && start.every((s, k) => s === 0 && count_[k] === header.shape[k]);
      const plan = whole && source.views ? null : planRegion(header, start, count_);
      if (source.views && header.dtype.itemsize > 0) {
        // A source whose reads are views of a map: a region that is one run of the file is an array
        // over those bytes (a copy only where bytesToData must: a byte swap, an unaligned offset).
        const run = plan ? oneRun(plan) : { fileOffset: header.dataOffset, length: header.dataBytes };
        if (run) {
          const shape = plan ? plan.shape : [...header.shape];
          const body = await source.read(run.fileOffset, run.length, { signal });
          count([body]);
          if (body.length < run.length) truncated({ offset: run.fileOffset, length: run.length }, body.length);
          const data = bytesToData(header.dtype, body.buffer, body.byteOffset, shapeSize(shape));
          return new NdArray(header.dtype, shape, data, header.fortranOrder ? 'F' : 'C');
        }
      }
      const region = plan ?? planRegion(header, start, count_);
      const out = bufferFor(region.bytes, readOptions.into);
      // One generator shared by the workers: each takes the next batch of groups as it is free.
      const groups = groupRuns(region.runs, tuning.maxGap, { maxBytes: tuning.readBytes, splitRuns: true });
      let held: RunGroup | null = null; // a group that did not fit the last batch
      const nextBatch = (): RunGroup[] => {
        const batch: RunGroup[] = [];
        const limit = readRanges ? Math.max(1, (source as AsyncByteSource).rangesPerRead ?? 1) : 1;
        let bytes = 0;
        while (batch.length < limit) {
          const g = held ?? groups.next().value;
          held = null;
          if (!g) break;
          if (batch.length && bytes + g.length > tuning.readBytes) {
            held = g;
            break;
          }
          batch.push(g);
          bytes += g.length;
        }
        return batch;
      };
      await inParallel(tuning.concurrency, async (stopped) => {
        for (let batch = nextBatch(); batch.length && !stopped(); batch = nextBatch()) {
          const group = batch[0]!;
          const only = batch.length === 1 && group.runs.length === 1 ? group.runs[0]! : null;
          if (readInto && only && only.length === group.length) {
            // One run, read straight into its place in the region: no buffer of its own, no copy.
            signal?.throwIfAborted();
            const target = out.subarray(only.regionOffset, only.regionOffset + only.length);
            const got = await readInto(target, only.fileOffset, { signal });
            count([target.subarray(0, got)]);
            if (got < only.length) truncated(group, got);
            continue;
          }
          const length = batch.reduce((n, g) => n + g.length, 0);
          const bodies = await tuning.budget.holding(length, async () =>
            batch.length > 1 && readRanges ? readRanges(batch, { signal }) : [await source.read(group.offset, group.length, { signal })],
          );
          count(bodies);
          batch.forEach((g, i) => {
            const body = bodies[i]!;
            if (body.length < g.length) truncated(g, body.length);
            placeGroup(out, g, body);
          });
        }
      });
      return regionArray(header, region, out);
    },
    close: async () => {
      await source.close?.();
    },
  };
}

/**
 * `bytes` bytes to read into: of the buffer `into` gives (one reused for tensor after tensor), or
 * allocated (also where `into` gives one too small).
 */
export function bufferFor(bytes: number, into?: (bytes: number) => ArrayBufferLike): Uint8Array {
  const given = into?.(bytes);
  return given !== undefined && given.byteLength >= bytes ? new Uint8Array(given, 0, bytes) : new Uint8Array(allocateBuffer(bytes));
}

/** The one run of a region that is one stretch of the file (all of its bytes), or null. */
function oneRun(plan: RegionPlan): ByteRun | null {
  let only: ByteRun | null = null;
  for (const r of plan.runs) {
    if (only) return null;
    only = r;
  }
  return only && only.length === plan.bytes ? only : null;
}
