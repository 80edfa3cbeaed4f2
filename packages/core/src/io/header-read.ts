/**
 * The one header-read step every source shares (files, archive members, HTTP): read a first block,
 * then, when the header is longer, the rest of it — but only after its claimed length has passed
 * the maxHeaderBytes check, so a length field of 4 GiB is refused before anything is allocated.
 */
import { DEFAULT_MAX_HEADER_BYTES, headerBytesNeeded, readHeaderOf, type NpyHeader, type ReadHeaderOptions } from '../format/header.js';
import { DECODE_RULES, checkNumbers } from '../options.js';
import { readBytes, type FileRef, type Operation, type ReadStep, type Step } from './steps.js';

/** Bytes read first: every header numpy writes for ordinary dtypes fits. */
export const FIRST_BLOCK = 4096;

/**
 * How many leading bytes to read after `prefix` (0: the header is all there, or the source ended).
 * A header longer than the limit is refused here with HEADER_TOO_LARGE.
 */
function moreNeeded(prefix: Uint8Array, sourceEnded: boolean, options: ReadHeaderOptions): number {
  const need = headerBytesNeeded(prefix);
  if (need <= prefix.length || sourceEnded) return 0;
  checkHeaderLength(prefix, options);
  return need;
}

/** Refuse (HEADER_TOO_LARGE) a header whose length field, present in `prefix`, exceeds maxHeaderBytes. */
export function checkHeaderLength(prefix: Uint8Array, options: ReadHeaderOptions): void {
  if (headerBytesNeeded(prefix) - 12 > (options.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES)) readHeaderOf(prefix, options); // throws
}

/**
 * The steps that read a header with `read(offset, length)` (fewer bytes at the source's end): a
 * first block, then, only when the header is longer and its length has passed the maxHeaderBytes
 * check, the rest of it. Every source reads its header this way: files, archive members, OPFS,
 * Blobs and URLs (whose first request may be larger, `first`).
 */
export function* readingHeaderOf<S extends Step>(
  read: (offset: number, length: number) => Operation<Uint8Array, S>,
  options: ReadHeaderOptions = {},
  first = FIRST_BLOCK,
): Operation<NpyHeader, S> {
  // Checked before the first read: a limit of NaN would switch the length check below off.
  checkNumbers(options, DECODE_RULES);
  let prefix = yield* read(0, first);
  const need = moreNeeded(prefix, prefix.length < first, options);
  if (need) {
    const more = yield* read(prefix.length, need - prefix.length);
    const joined = new Uint8Array(prefix.length + more.length);
    joined.set(prefix);
    joined.set(more, prefix.length);
    prefix = joined;
  }
  return readHeaderOf(prefix, options);
}

/** The steps that read the header of an open file (a few hundred bytes in the common case). */
export function readingHeader(file: FileRef, options: ReadHeaderOptions = {}, first = FIRST_BLOCK): Operation<NpyHeader, ReadStep> {
  return readingHeaderOf((offset, length) => readBytes(file, offset, length), options, first);
}
