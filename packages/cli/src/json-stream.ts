/**
 * `show --json` of a .npy file of any size: the document is written as region reads of at most
 * {@link BLOCK_ELEMENTS} elements come in, so memory stays the same whatever the file's size.
 */
import { arrayToJSON, createArray, type NdArray } from '@npyts/core';
import { npyDocument } from '@npyts/core/plumbing';
import type { NpyFileHandleSync } from '@npyts/core/node';

/** Elements read and turned into text at a time: small enough that the garbage of each block stays in V8's young generation (measured: 1 Mi elements let a 64 MiB file peak at 359 MB, 64 Ki at a constant ~70 MB). */
export const BLOCK_ELEMENTS = 1 << 16;

/**
 * Write the document of the open file `handle` to `write`, a piece at a time. With `limit`, `data` is the
 * first `limit` elements in row-major order as one flat list, and the document says `"limit"`.
 */
export async function streamJsonDocument(
  handle: NpyFileHandleSync,
  write: Writer,
  limit?: number,
  onProgress?: (done: number, total: number) => void,
): Promise<void> {
  // Pieces are queued and handed over a block at a time, waiting while the reader is behind.
  let queued: string[] = [];
  const out = (text: string): void => {
    queued.push(text);
  };
  let read = 0;
  const flush = async (): Promise<void> => {
    onProgress?.(read, handle.header.dataBytes);
    const text = queued.join('');
    queued = [];
    if (text) await write(text);
  };
  const { header } = handle;
  const shape = header.shape;
  // Everything but `data`, as the whole-array document has it (an empty array stands in for the data).
  const head = npyDocument(header, createArray(header.dtype, [0]));
  delete head.data;
  head.shape = shape;
  if (limit !== undefined) head.limit = limit;
  out(`${JSON.stringify(head).slice(0, -1)},"data":`);
  // Region reads, counted for the progress report.
  const counting: Handle = {
    read(start, count) {
      const a = handle.read(start, count) as NdArray;
      read += a.size * a.dtype.itemsize;
      return a;
    },
  };
  if (shape.length === 0) out(JSON.stringify(arrayToJSON(counting.read([], []))));
  else if (limit !== undefined) await writeFlat(counting, shape, limit, out, flush);
  else await writeNested(counting, shape, out, flush);
  out('}\n');
  await flush();
}

/** What the writers need of an open file: its region reads. */
interface Handle {
  read(start: readonly number[], count: readonly number[]): NdArray;
}

/** Where the text goes; resolves when the reader has room for more. */
export type Writer = (text: string) => Promise<void> | void;

/** Trailing axes from `axis` on, as one count of elements. */
const sizeFrom = (shape: readonly number[], axis: number): number => shape.slice(axis).reduce((a, b) => a * b, 1);

/**
 * The nested lists, block by block: the axis `k` whose trailing sub-arrays fit a block is read in
 * runs along it, every axis before `k` is walked one index at a time (brackets written around).
 */
async function writeNested(handle: Handle, shape: readonly number[], out: (text: string) => void, flush: () => Promise<void>): Promise<void> {
  const n = shape.length;
  let k = 0;
  while (k < n - 1 && sizeFrom(shape, k + 1) > BLOCK_ELEMENTS) k++;
  const inner = sizeFrom(shape, k + 1);
  const run = Math.max(1, Math.floor(BLOCK_ELEMENTS / Math.max(1, inner)));
  const walk = async (prefix: number[]): Promise<void> => {
    const axis = prefix.length;
    out('[');
    if (axis < k) {
      for (let i = 0; i < shape[axis]!; i++) {
        if (i) out(',');
        await walk([...prefix, i]);
      }
    } else {
      for (let i = 0; i < shape[k]!; i += run) {
        const count = Math.min(run, shape[k]! - i);
        const block = handle.read([...prefix, i, ...shape.slice(k + 1).map(() => 0)], [...prefix.map(() => 1), count, ...shape.slice(k + 1)]) as NdArray;
        // The block's lists along axis k, without the brackets of the axes before it.
        let values: unknown = arrayToJSON(block);
        for (let d = 0; d < k; d++) values = (values as unknown[])[0];
        const text = JSON.stringify(values);
        if (i) out(',');
        out(text.slice(1, -1));
        await flush();
      }
    }
    out(']');
  };
  await walk([]);
}

/** The first `limit` elements in row-major order, as one flat list, read a block of rows at a time. */
async function writeFlat(handle: Handle, shape: readonly number[], limit: number, out: (text: string) => void, flush: () => Promise<void>): Promise<void> {
  const n = shape.length;
  const total = sizeFrom(shape, 0);
  const want = Math.min(limit, total);
  out('[');
  let written = 0;
  // Element `e` in row-major order is read as part of the last axis' row that holds it.
  const row = shape[n - 1]!;
  while (written < want) {
    const index: number[] = [];
    let rest = written;
    for (let d = n - 1; d >= 0; d--) {
      index.unshift(rest % shape[d]!);
      rest = Math.floor(rest / shape[d]!);
    }
    const count = Math.min(want - written, row - index[n - 1]!, BLOCK_ELEMENTS);
    const block = handle.read(index, [...index.slice(0, -1).map(() => 1), count]) as NdArray;
    let values: unknown = arrayToJSON(block);
    for (let d = 0; d < n - 1; d++) values = (values as unknown[])[0];
    const text = JSON.stringify(values);
    if (written) out(',');
    out(text.slice(1, -1));
    written += count;
    await flush();
  }
  out(']');
}
