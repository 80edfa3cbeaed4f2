/**
 * The operations on one open .npy that every platform shares, written once as steps: reading its
 * header with a check that its data is there, laying out a new file, appending rows in place, and
 * dropping rows. Node's files (node/regions.ts) and OPFS access handles (io/access-handle.ts) drive
 * the same steps; what differs is only around them (a path opened, a temporary file renamed, a lock).
 */
import { checkDataPresent, type ArraySpec, type DecodeOptions } from '../npy.js';
import { headerTextOfLength, type NpyHeader } from '../format/header.js';
import type { NdArray } from '../array/ndarray.js';
import { NpyError } from '../errors.js';
import { readingHeader } from './header-read.js';
import { newFileLayout, planningAppend, type AppendPlan, type CreateOptions } from './handles.js';
import { perform, type FileRef, type Operation, type PositionalStep } from './steps.js';

/** The header of an open .npy, checked to have all the data it declares. */
export function* readingOpenNpy(file: FileRef, options: DecodeOptions = {}): Operation<NpyHeader, PositionalStep> {
  const header = yield* readingHeader(file, options);
  checkDataPresent(header, (yield* perform({ op: 'size', file })) - header.dataOffset);
  return header;
}

/**
 * A new .npy written into an open, empty file: numpy's header, and the file sized to hold the data
 * (sparse where the storage allows), ready for disjoint regions to be filled. Checked before
 * anything is written.
 */
export function* writingNewNpy(file: FileRef, options: CreateOptions): Operation<NpyHeader, PositionalStep> {
  const { headerBytes, fileSize } = newFileLayout(options);
  yield { op: 'truncate', file, size: 0 };
  yield { op: 'write', file, bytes: headerBytes, at: 0 };
  yield { op: 'truncate', file, size: fileSize };
  return yield* readingHeader(file);
}

/**
 * Append along axis 0 (the last axis of a Fortran-order file) of the open .npy `file`: the new rows
 * are written after the data and made durable first; only then is the shape rewritten, within the
 * header's padding. A crash between the two leaves the old array (readers ignore trailing bytes).
 * Where the header has no room, `whenNoRoom` says what happens: `'refuse'` refuses before anything is
 * written (HEADER_ROOM); `'return'` writes and syncs the rows and returns the plan, for the caller
 * to rewrite the file beside itself. Returns null once appended in place.
 */
export function* appendingRows(
  file: FileRef,
  name: string,
  input: NdArray | ArraySpec,
  whenNoRoom: 'refuse' | 'return',
): Operation<AppendPlan | null, PositionalStep> {
  const plan = yield* planningAppend(name, yield* readingHeader(file), input, yield* perform({ op: 'size', file }));
  if (!plan.inPlace && whenNoRoom === 'refuse') {
    throw new NpyError(
      'HEADER_ROOM',
      `${name}: the header has no room for the grown shape (written by numpy before 1.24?); rewrite the file with its new shape instead`,
    );
  }
  yield { op: 'write', file, bytes: plan.bytes, at: plan.end };
  yield { op: 'sync', file };
  if (!plan.inPlace) return plan;
  yield { op: 'committed' };
  yield { op: 'write', file, bytes: plan.inPlace, at: plan.textStart };
  yield { op: 'sync', file };
  return null;
}

/**
 * Shorten a C-order .npy to its first `rows` rows: the header is rewritten in place (made durable),
 * then the file is cut to the data it declares. Rows past the header's shape are what an interrupted
 * writer left; only a file's owner may drop them.
 */
export function* droppingRowsOf(file: FileRef, name: string, rows: number): Operation<void, PositionalStep> {
  const header = yield* readingHeader(file);
  if (header.fortranOrder || header.shape.length === 0 || rows > header.shape[0]!)
    throw new NpyError('SHAPE_MISMATCH', `${name}: cannot shorten shape (${header.shape.join(', ')}) to ${rows} rows`);
  const shape = [rows, ...header.shape.slice(1)];
  const textStart = 8 + (header.version[0] === 1 ? 2 : 4);
  const text = headerTextOfLength(header.dtype, shape, false, header.dataOffset - textStart, header.version[0]);
  if (!text) throw new NpyError('HEADER_ROOM', `${name}: the header cannot be rewritten in place`);
  yield { op: 'committed' }; // a repair of what an interrupted writer left: done whole
  yield { op: 'write', file, bytes: text, at: textStart };
  yield { op: 'sync', file };
  yield { op: 'truncate', file, size: header.dataOffset + (header.dataBytes / (header.shape[0] || 1)) * rows };
  yield { op: 'sync', file };
}
