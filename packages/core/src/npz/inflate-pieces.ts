/**
 * Raw-deflate inflation fed piece by piece into a fixed buffer, with the work bounded by that
 * buffer: it stops as soon as more comes out than fits (a member inflating past its declared size)
 * or, for a prefix, as soon as the buffer is full. fflate's one-shot inflate into a fixed buffer
 * drops the excess but decodes all of it, so it cannot give this bound.
 */
import { Inflate } from 'fflate';

/** An inflater into a fixed buffer, fed a piece at a time. */
export interface PieceInflater {
  /** Inflate one piece (`final` for the last); true when no more should be fed (overflow, or full when stopping there). */
  push(piece: Uint8Array, final: boolean): boolean;
  readonly produced: number;
  /** More came out than `out` holds. */
  readonly overflow: boolean;
}

/** An inflater writing into `out`, stopping at overflow (and, with `stopWhenFull`, once `out` is full). */
export function inflaterInto(out: Uint8Array, stopWhenFull: boolean): PieceInflater {
  const state = { produced: 0, overflow: false };
  const inflater = new Inflate((chunk) => {
    const take = Math.min(chunk.length, out.length - state.produced);
    out.set(take === chunk.length ? chunk : chunk.subarray(0, take), state.produced);
    state.produced += take;
    if (take < chunk.length) state.overflow = true;
  });
  return {
    push(piece, final) {
      inflater.push(piece, final);
      return state.overflow || (stopWhenFull && state.produced === out.length);
    },
    get produced() {
      return state.produced;
    },
    get overflow() {
      return state.overflow;
    },
  };
}

/** Inflate the compressed `pieces` (the last one marked final) into `out`. */
export function inflateInto(
  pieces: Iterable<Uint8Array>,
  last: (piece: number) => boolean,
  out: Uint8Array,
  stopWhenFull: boolean,
): { produced: number; overflow: boolean } {
  const inflater = inflaterInto(out, stopWhenFull);
  let i = 0;
  for (const piece of pieces) if (inflater.push(piece, last(i++))) break;
  return { produced: inflater.produced, overflow: inflater.overflow };
}
