/** Writing a key of a store: the one way an entry writes through a store. */
import { NpyError } from '../errors.js';
import { checkKey } from './key.js';
import type { WriteStore } from './types.js';

/** Writes at positions of the file being made; each is done (its bytes consumed) when its promise settles. */
export type PositionalWrite = (bytes: Uint8Array, at: number) => Promise<void>;

/**
 * Write `key` of `store` through `fill`: the key is checked, a writer made, `fill` writes, and the
 * key is replaced only when it completes with the signal not fired; on any error or abort the
 * writer is aborted (the key keeps its old bytes) and the error thrown.
 * @example
 * await writeKey(store, 'w.npy', async (write) => { await write(header, 0); await write(body, header.length); });
 */
export async function writeKey(store: WriteStore, key: string, fill: (write: PositionalWrite) => Promise<void>, signal?: AbortSignal): Promise<void> {
  signal?.throwIfAborted();
  checkKey(store, key, `'${key}'`);
  const writer = await store.create(key);
  try {
    await fill(async (bytes, at) => {
      signal?.throwIfAborted();
      await writer.write(bytes, at);
    });
    signal?.throwIfAborted();
    await writer.commit();
  } catch (e) {
    try {
      await writer.abort();
    } catch {
      /* aborting after a failure: the first error is the one to report */
    }
    throw e;
  }
}

/**
 * Write `pieces` one after another from byte 0 (each consumed before the next is asked for: a
 * piece may reuse the last one's memory).
 * @example
 * await writeKey(store, key, (write) => writeInOrder(write, encodeNpyPieces(array)));
 */
export async function writeInOrder(write: PositionalWrite, pieces: Iterable<Uint8Array>): Promise<void> {
  let at = 0;
  for (const piece of pieces) {
    if (piece.length === 0) continue;
    await write(piece, at);
    at += piece.length;
  }
}

/**
 * The bytes a writer was given, joined at their positions into one file (a later write over an
 * earlier one wins): what a store that keeps whole files (memory, a Map) commits. Bounded by the
 * bytes written.
 * @example
 * const file = joinWrites([[header, 0], [body, header.length]]);
 */
export function joinWrites(writes: readonly (readonly [Uint8Array, number])[]): Uint8Array {
  let size = 0;
  for (const [bytes, at] of writes) size = Math.max(size, at + bytes.length);
  const out = new Uint8Array(size);
  for (const [bytes, at] of writes) out.set(bytes, at);
  return out;
}

/** The error of a key a store does not hold. */
export function missingKey(key: string, where: string): NpyError {
  return new NpyError('NOT_FOUND', `${where} holds no '${key}': check the key, or write it first`, { file: key });
}
