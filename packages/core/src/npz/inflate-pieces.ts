/**
 * Raw-deflate inflation fed piece by piece into a fixed buffer, with the work bounded by that
 * buffer: it stops as soon as more comes out than fits (a member inflating past its declared size)
 * or, for a prefix, as soon as the buffer is full. fflate's one-shot inflate into a fixed buffer
 * drops the excess but decodes all of it, so it cannot give this bound.
 */
import { Inflate } from 'fflate';

/** Inflate the compressed `pieces` (the last one marked final) into `out`. */
export function inflateInto(
  pieces: Iterable<Uint8Array>,
  last: (piece: number) => boolean,
  out: Uint8Array,
  stopWhenFull: boolean,
): { produced: number; overflow: boolean } {
  let produced = 0;
  let overflow = false;
  const inflater = new Inflate((chunk) => {
    const take = Math.min(chunk.length, out.length - produced);
    out.set(take === chunk.length ? chunk : chunk.subarray(0, take), produced);
    produced += take;
    if (take < chunk.length) overflow = true;
  });
  let i = 0;
  for (const piece of pieces) {
    inflater.push(piece, last(i++));
    if (overflow || (stopWhenFull && produced === out.length)) break;
  }
  return { produced, overflow };
}
