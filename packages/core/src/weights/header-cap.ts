/**
 * The one cap on a weight file's header: safetensors' own (its `MAX_HEADER_SIZE`, 100 MB), which
 * npyts applies to every format whose header it reads whole before any tensor (safetensors, GGUF).
 * A header past it is refused unread, whatever length or count the file declares.
 */
import { NpyError } from '../errors.js';

/** The most bytes a weight file's header may take (safetensors' `MAX_HEADER_SIZE`). */
export const MAX_WEIGHTS_HEADER_BYTES = 100_000_000;

/**
 * HEADER_TOO_LARGE where a header needs more than {@link MAX_WEIGHTS_HEADER_BYTES} bytes; `what`
 * says what needs them (`the header length says 2000000000 bytes`).
 * @example
 * checkHeaderBytes(BigInt(end), `GGUF's header runs to byte ${end}`, 16);   // throws past 100 MB
 */
export function checkHeaderBytes(bytes: number | bigint, what: string, offset: number): void {
  if (bytes <= MAX_WEIGHTS_HEADER_BYTES) return;
  throw new NpyError(
    'HEADER_TOO_LARGE',
    `${what}; safetensors refuses headers over ${MAX_WEIGHTS_HEADER_BYTES} bytes (100 MB) as too large, and npyts refuses any weight file's header past that, without reading it`,
    { offset },
  );
}
