/**
 * Reading ragged arrays, written once for every source: the reader is a generator of the steps it
 * needs (open a .npy by name, make region reads), and a driver performs them — blocking for files
 * (`openRaggedSync`), with promises for files and URLs (`openRagged`, `openRaggedUrl`). The reads of
 * one step are independent, so an async driver makes them together.
 *
 * A little over 400 lines: the reader and its two small drivers are kept beside each other.
 */
import type { DType } from '../format/dtype.js';
import { NdArray } from '../array/ndarray.js';
import { toOrder } from '../array/order.js';
import { NpyError } from '../errors.js';
import { settleAll } from '../io/settle.js';
import { drive, driveSync, perform, unknownStep, type OpenNpyStep, type Operation, type RaggedStep } from '../io/steps.js';
import {
  decodeUtf8,
  followHeap,
  indexWords,
  raggedInfo,
  referencedAxis,
  RAGGED_TAG,
  type RaggedElement,
  type RaggedInfo,
  type RaggedKind,
  type RaggedLayout,
} from './convention.js';

/** What the reader needs of an open .npy: its dtype, shape and order (reads go through the driver). */
export interface RaggedSource {
  readonly dtype: DType;
  readonly shape: number[];
  readonly order: 'C' | 'F';
}

/**
 * A reader: an operation (io/steps.ts) whose steps open .npy files by name and read regions of them;
 * `P` is what the driver opens (a file handle, a URL reader).
 */
export type Reading<P, T> = Operation<T, RaggedStep<P>>;

/** The .npy `name` opened by the driver (`heapOf`: the index naming it as its heap). */
function openingNpy<P>(name: string, heapOf?: string): Reading<P, P> {
  // The step holds no part: its type names what the driver answers with (see OpenNpyStep).
  return perform<OpenNpyStep<P>>(heapOf === undefined ? { op: 'openNpy', name } : { op: 'openNpy', name, heapOf });
}

/** An open ragged index with its heap (or, two levels, the inner index it ranges over). */
export interface RaggedLevel<P> {
  readonly name: string;
  readonly index: P;
  readonly info: RaggedInfo;
  readonly heapName: string;
  /** The heap, or for two levels the inner index's own level. */
  readonly heap: P;
  readonly inner: RaggedLevel<P> | null;
  /** The elements' grid: the index's shape (for offsets, the number of elements). */
  readonly shape: number[];
  readonly length: number;
}

const product = (xs: readonly number[]): number => xs.reduce((p, x) => p * x, 1);

/** Open an index and its heap (and an inner level): `heapOf` names the heap, confined by the caller's rules. */
export function* openingLevel<P extends RaggedSource>(
  name: string,
  heapOf: (index: string, heap: string) => string,
  opened?: P,
  chain: readonly string[] = [name],
): Reading<P, RaggedLevel<P>> {
  const index = opened ?? (yield* openingNpy<P>(name));
  const info = raggedInfo(index.dtype);
  if (!info) {
    const fields = index.dtype.fields?.some((f) => raggedInfo(f.dtype)) ? '; it has ragged fields: use openRaggedRecords' : '';
    throw new NpyError('NOT_RAGGED', `${name} is not a ragged index (its dtype has no ${RAGGED_TAG} title)${fields}`);
  }
  const heapName = heapOf(name, info.heap);
  const followed = followHeap(chain, heapName);
  const heap = yield* openingNpy<P>(heapName, name);
  const inner = raggedInfo(heap.dtype) ? yield* openingLevel(heapName, heapOf, heap, followed) : null;
  const bad = (why: string): never => {
    throw new NpyError('BAD_RAGGED', `the ragged index ${name} (${info.layout}, kind ${info.kind}): ${why}`);
  };
  if (inner && info.kind !== 'array') bad(`its heap ${heapName} is a ragged index, which only kind=array can range over`);
  if ((info.kind === 'utf8' || info.kind === 'utf8z') && (heap.shape.length !== 1 || heap.dtype.itemsize !== 1 || heap.dtype.form !== 'scalar')) {
    bad(`its text heap ${heapName} must be 1-d bytes, not ${heap.dtype.str} of shape (${heap.shape.join(', ')})`);
  }
  if ((info.kind === 'array' || info.kind === 'ref') && heap.shape.length === 0) bad(`its heap ${heapName} is 0-d`);
  let shape = index.shape;
  if (info.layout === 'offsets') {
    if (shape.length !== 1) bad(`an offsets index must be 1-d, not of shape (${shape.join(', ')})`);
    shape = [Math.max(0, shape[0]! - 1)];
  }
  return { name, index, info, heapName, heap, inner, shape, length: product(shape) };
}

/** How many rows elements are cut from: the inner level's elements, the referenced axis, or the heap's first axis. */
function heapRowCount<P extends RaggedSource>(lv: Pick<RaggedLevel<P>, 'info' | 'heap' | 'inner'>): number {
  if (lv.inner) return lv.inner.length;
  return referencedAxis(lv.heap.shape, lv.info.kind === 'ref' && lv.heap.order === 'F').rows;
}

/**
 * The boxes (start, count) that cover flat C-order positions [from, to) of `shape`, in order: at
 * most two per axis, so a read of an N-d index costs exactly the records asked for.
 */
export function flatBoxes(shape: readonly number[], from: number, to: number): { start: number[]; count: number[] }[] {
  if (from >= to) return [];
  if (shape.length <= 1) return [{ start: shape.length ? [from] : [], count: shape.length ? [to - from] : [] }];
  const rest = shape.slice(1);
  const per = product(rest);
  const within = (row: number, a: number, b: number): { start: number[]; count: number[] }[] =>
    flatBoxes(rest, a, b).map((x) => ({ start: [row, ...x.start], count: [1, ...x.count] }));
  const r0 = Math.floor(from / per);
  const r1 = Math.floor(to / per);
  if (r0 === r1) return within(r0, from - r0 * per, to - r0 * per);
  const head = from % per ? within(r0, from - r0 * per, per) : [];
  const first = from % per ? r0 + 1 : r0;
  const whole = r1 > first ? [{ start: [first, ...rest.map(() => 0)], count: [r1 - first, ...rest] }] : [];
  const tail = to % per ? within(r1, 0, to - r1 * per) : [];
  return [...head, ...whole, ...tail];
}

/** Index records [from, to) in flat C order, as one 1-d record array (an N-d index is read box by box). */
function* flatRecords<P extends RaggedSource>(part: P, from: number, to: number): Reading<P, NdArray> {
  const boxes = flatBoxes(part.shape, from, to);
  const got = yield* perform({ op: 'regions', reads: boxes.map((b) => ({ part, ...b })) });
  if (got.length === 1 && part.shape.length <= 1) return got[0]!;
  const bytes = new Uint8Array((to - from) * part.dtype.itemsize);
  let at = 0;
  for (const a of got) {
    const raw = toOrder(a, 'C').data as Uint8Array;
    bytes.set(raw, at);
    at += raw.length;
  }
  return new NdArray(part.dtype, [to - from], bytes);
}

/**
 * Where elements [from, to) live: (start, stop) pairs, checked against the heap. Zero-terminated
 * strings have no stop yet (NaN); a reference is (ref, ref + 1).
 */
function* locating<P extends RaggedSource>(lv: RaggedLevel<P>, from: number, to: number): Reading<P, Float64Array> {
  const offsets = lv.info.layout === 'offsets';
  return pairsOf(lv, indexWords(yield* flatRecords(lv.index, from, offsets ? to + 1 : to)), from, to - from);
}

/**
 * The (start, stop) pairs of `n` elements from the index words read for them (element `from` first),
 * checked against the heap: stops at or after starts, inside the heap's rows.
 */
export function pairsOf<P extends RaggedSource>(
  lv: Pick<RaggedLevel<P>, 'info' | 'heap' | 'inner' | 'name'>,
  words: Float64Array,
  from: number,
  n: number,
): Float64Array {
  const { layout } = lv.info;
  let pairs: Float64Array;
  if (layout === 'ranges') pairs = words;
  else {
    pairs = new Float64Array(2 * n);
    for (let i = 0; i < n; i++) {
      pairs[2 * i] = words[i]!;
      pairs[2 * i + 1] = layout === 'offsets' ? words[i + 1]! : layout === 'references' ? words[i]! + 1 : NaN;
    }
  }
  const rows = heapRowCount(lv);
  for (let i = 0; i < n; i++) {
    const s = pairs[2 * i]!;
    const e = pairs[2 * i + 1]!;
    if (layout === 'zero-terminated' ? s >= rows : e < s || e > rows) {
      const what = layout === 'references' ? `refers to ${s}` : layout === 'zero-terminated' ? `starts at byte ${s}` : `has bounds [${s}, ${e})`;
      throw new NpyError(
        'BAD_RAGGED',
        `ragged element ${from + i} of ${lv.name} ${what}, outside its heap's ${rows} ${lv.info.kind === 'utf8z' ? 'bytes' : 'rows'}`,
      );
    }
  }
  return pairs;
}

/** Elements near each other in the heap are read together when the gap between them is this small. */
const GAP_BYTES = 1 << 16;

/** Elements given by their (start, stop) rows, read from the heap with as few reads as is cheap. */
function* readingRanges<P extends RaggedSource>(lv: Pick<RaggedLevel<P>, 'info' | 'heap' | 'name'>, pairs: Float64Array): Reading<P, RaggedElement[]> {
  const heap = lv.heap;
  const n = pairs.length / 2;
  const tail = heap.shape.slice(1);
  const rowBytes = heap.dtype.itemsize * product(tail);
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => pairs[2 * a]! - pairs[2 * b]!);
  // Clusters of elements whose rows lie close together (a Fortran-ordered heap: one read each).
  const clusters: { start: number; stop: number; members: number[] }[] = [];
  for (const i of order) {
    const s = pairs[2 * i]!;
    const e = pairs[2 * i + 1]!;
    const last = clusters[clusters.length - 1];
    if (last && (heap.order === 'C' || tail.length === 0) && (s - last.stop) * rowBytes <= GAP_BYTES) {
      last.stop = Math.max(last.stop, e);
      last.members.push(i);
    } else clusters.push({ start: s, stop: e, members: [i] });
  }
  const blocks = yield* perform({
    op: 'regions',
    reads: clusters.map((c) => ({ part: heap, start: [c.start, ...tail.map(() => 0)], count: [c.stop - c.start, ...tail] })),
  });
  const out = new Array<RaggedElement>(n);
  const perRow = product(tail);
  clusters.forEach((c, k) => {
    const block = blocks[k]!;
    if (c.members.length === 1 && pairs[2 * c.members[0]!] === c.start && pairs[2 * c.members[0]! + 1] === c.stop) {
      out[c.members[0]!] = lv.info.kind === 'utf8' ? decodeUtf8(block.data as Uint8Array) : block;
      return;
    }
    const units = block.size ? block.data.length / block.size : 1; // typed-array units per item
    for (const i of c.members) {
      const s = pairs[2 * i]! - c.start;
      const e = pairs[2 * i + 1]! - c.start;
      const data = (block.data as Uint8Array).subarray(s * perRow * units, e * perRow * units); // a heap holds no objects
      out[i] = lv.info.kind === 'utf8' ? decodeUtf8(data as Uint8Array) : new NdArray(block.dtype, [e - s, ...tail], data, 'C');
    }
  });
  return out;
}

/**
 * Zero-terminated strings by their starts: nearby ones read together, each read grown until its NUL.
 * Each string's stop (its NUL's position) is filled into `pairs`.
 */
function* readingZeroTerminated<P extends RaggedSource>(lv: Pick<RaggedLevel<P>, 'info' | 'heap' | 'name'>, pairs: Float64Array): Reading<P, RaggedElement[]> {
  const heap = lv.heap;
  const size = heap.shape[0]!;
  const n = pairs.length / 2;
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => pairs[2 * a]! - pairs[2 * b]!);
  const clusters: { start: number; last: number; bytes: Uint8Array; members: number[] }[] = [];
  for (const i of order) {
    const s = pairs[2 * i]!;
    const c = clusters[clusters.length - 1];
    if (c && s - c.last <= 4096) {
      c.last = s;
      c.members.push(i);
    } else clusters.push({ start: s, last: s, bytes: new Uint8Array(0), members: [i] });
  }
  const out = new Array<RaggedElement>(n);
  let open = clusters;
  for (let more = 256; open.length; more *= 2) {
    const reads = open.map((c) => {
      const from = c.start + c.bytes.length;
      const to = Math.min(size, Math.max(from, c.last + 1) + more);
      return { part: heap, start: [from], count: [to - from] };
    });
    const got = yield* perform({ op: 'regions', reads });
    open = open.filter((c, k) => {
      const add = got[k]!.data as Uint8Array;
      const joined = new Uint8Array(c.bytes.length + add.length);
      joined.set(c.bytes);
      joined.set(add, c.bytes.length);
      c.bytes = joined;
      let pending = false;
      for (const i of c.members) {
        if (out[i] !== undefined) continue;
        const at = pairs[2 * i]! - c.start;
        const nul = c.bytes.indexOf(0, at);
        if (nul >= 0) {
          out[i] = decodeUtf8(c.bytes.subarray(at, nul));
          pairs[2 * i + 1] = c.start + nul;
        } else if (c.start + c.bytes.length >= size)
          throw new NpyError('BAD_RAGGED', `zero-terminated string ${i} of ${lv.name} (byte ${pairs[2 * i]}) has no NUL before the heap's end`);
        else pending = true;
      }
      return pending;
    });
  }
  return out;
}

/** References: one slice of the heap each (`heap[ref]`, or `heap[..., ref]` when the heap is Fortran-ordered). */
function* readingReferences<P extends RaggedSource>(lv: Pick<RaggedLevel<P>, 'info' | 'heap' | 'name'>, pairs: Float64Array): Reading<P, RaggedElement[]> {
  const heap = lv.heap;
  const fortran = heap.order === 'F';
  const rest = referencedAxis(heap.shape, fortran).slice;
  const reads = Array.from({ length: pairs.length / 2 }, (_, i) => {
    const r = pairs[2 * i]!;
    return fortran
      ? { part: heap, start: [...rest.map(() => 0), r], count: [...rest, 1] }
      : { part: heap, start: [r, ...rest.map(() => 0)], count: [1, ...rest] };
  });
  const got = yield* perform({ op: 'regions', reads });
  return got.map((a) => new NdArray(a.dtype, rest, a.data, fortran ? 'F' : 'C'));
}

/** Elements [from, to) (flat C order over the index's shape) of a level. */
export function* readingElements<P extends RaggedSource>(lv: RaggedLevel<P>, from: number, to: number): Reading<P, RaggedElement[]> {
  if (from === to) return [];
  return yield* readingPairs(lv, yield* locating(lv, from, to));
}

/** The elements at (start, stop) pairs of a level's heap (from {@link pairsOf}). */
export function* readingPairs<P extends RaggedSource>(
  lv: Pick<RaggedLevel<P>, 'info' | 'heap' | 'inner' | 'name'>,
  pairs: Float64Array,
): Reading<P, RaggedElement[]> {
  if (lv.inner) {
    const out: RaggedElement[] = [];
    for (let i = 0; i < pairs.length; i += 2) out.push(yield* readingElements(lv.inner, pairs[i]!, pairs[i + 1]!));
    return out;
  }
  switch (lv.info.kind) {
    case 'ref':
      return yield* readingReferences(lv, pairs);
    case 'utf8z':
      return yield* readingZeroTerminated(lv, pairs);
    default:
      return yield* readingRanges(lv, pairs);
  }
}

/** The [start, stop) of element i in its heap (a zero-terminated string's stop excludes its NUL). */
export function* readingBounds<P extends RaggedSource>(lv: RaggedLevel<P>, i: number): Reading<P, [number, number]> {
  const pairs = yield* locating(lv, i, i + 1);
  if (lv.info.kind === 'utf8z') yield* readingZeroTerminated(lv, pairs); // finds the stop
  return [pairs[0]!, pairs[1]!];
}

/** The ragged shape of a level's elements, as numpy would write it with `*` for ragged axes: `(120, *, 20, 30)`. */
export function raggedShapeOf<P extends RaggedSource>(lv: RaggedLevel<P>): string {
  const element = (l: RaggedLevel<P>): (number | string)[] => {
    if (l.inner) return ['*', ...element(l.inner)];
    if (l.info.kind === 'ref') return referencedAxis(l.heap.shape, l.heap.order === 'F').slice;
    return ['*', ...l.heap.shape.slice(1)];
  };
  return `(${[...lv.shape, ...element(lv)].join(', ')})`;
}

/** What every reader offers about a level, and the flat position of an element given by index or by multi-index. */
export function levelFacts<P extends RaggedSource>(
  lv: RaggedLevel<P>,
): {
  length: number;
  kind: RaggedKind;
  layout: RaggedLayout;
  indexShape: number[];
  raggedShape: string;
  heapDtype: DType;
  heapLength: number;
  flat(i: number | readonly number[]): number;
  check(from: number, to: number): void;
  checkChunk(size: number): void;
} {
  let innermost = lv;
  while (innermost.inner) innermost = innermost.inner;
  const check = (from: number, to: number): void => {
    if (!Number.isInteger(from) || !Number.isInteger(to) || from < 0 || to > lv.length || from > to)
      throw new NpyError('BAD_INDEX', `elements [${from}, ${to}) are outside 0…${lv.length}`);
  };
  return {
    length: lv.length,
    kind: lv.info.kind,
    layout: lv.info.layout,
    indexShape: [...lv.shape],
    raggedShape: raggedShapeOf(lv),
    heapDtype: innermost.heap.dtype,
    heapLength: heapRowCount(lv),
    flat(i) {
      if (typeof i === 'number') return i;
      if (i.length !== lv.shape.length || i.some((x, a) => !Number.isInteger(x) || x < 0 || x >= lv.shape[a]!)) {
        throw new NpyError('BAD_INDEX', `element (${i.join(', ')}) is outside the index's shape (${lv.shape.join(', ')})`);
      }
      return i.reduce((p, x, a) => p * lv.shape[a]! + x, 0);
    },
    check,
    checkChunk(size) {
      if (!Number.isSafeInteger(size) || size < 1) throw new NpyError('BAD_OPTION', `chunks of ${String(size)} elements: the size must be a positive integer`);
    },
  };
}

/** A heap that is not there, named with the index that names it (an index is blamed for nothing else of it). */
function missingHeap(e: unknown, step: { name: string; heapOf?: string | undefined }): unknown {
  if (step.heapOf === undefined || (e as { code?: string })?.code !== 'ENOENT') return e;
  return new NpyError(
    'NO_HEAP',
    `the ragged index ${step.heapOf} names the heap ${step.name}, which does not exist (was it moved, or not copied with the index?)`,
  );
}

/** Perform a reader's steps, blocking: `open` and `read` are a blocking source's; opened parts are recorded. */
export function runReadingSync<P, T>(
  reading: Reading<P, T>,
  io: { open(name: string): P; read(part: P, start: number[], count: number[]): NdArray },
  opened: P[] = [],
): T {
  return driveSync(reading, (step) => {
    switch (step.op) {
      case 'openNpy': {
        let part: P;
        try {
          part = io.open(step.name);
        } catch (e) {
          throw missingHeap(e, step);
        }
        opened.push(part);
        return part;
      }
      case 'regions':
        return step.reads.map((r) => io.read(r.part, r.start, r.count));
      default:
        throw unknownStep(step);
    }
  });
}

/** Perform a reader's steps with promises; the reads of one step run together. */
export function runReading<P, T>(
  reading: Reading<P, T>,
  io: { open(name: string): Promise<P>; read(part: P, start: number[], count: number[]): Promise<NdArray> },
  opened: P[] = [],
): Promise<T> {
  return drive(reading, async (step) => {
    switch (step.op) {
      case 'openNpy': {
        const part = await io.open(step.name).catch((e: unknown) => {
          throw missingHeap(e, step);
        });
        opened.push(part);
        return part;
      }
      case 'regions':
        return settleAll(step.reads.map((r) => io.read(r.part, r.start, r.count)));
      default:
        throw unknownStep(step);
    }
  });
}
