/**
 * Large buffers and in-place byte swapping. Both run in plain JavaScript everywhere; a host may plug
 * in faster kernels (the Node entry plugs in @npyts/native when it is built, else Node's own
 * Buffer swaps), which only change speed, never results.
 */

export interface HostKernels {
  /** Ask the OS to back this fresh, not yet touched memory with huge pages (numpy does so for its arrays). */
  adviseHugePages?(bytes: Uint8Array): number;
  /** Reverse every `unit`-byte group (2, 4, 8 or 16) in place. */
  swapBytes(bytes: Uint8Array, unit: number): void;
  /**
   * Move item (i, j) of an nA × nB plane from `src[i*itemBytes + j*srcStrideB]` to
   * `dst[i*dstStrideA + j*itemBytes]` (byte offsets): the core of a C ↔ Fortran order change.
   */
  permutePlane?(src: Uint8Array, dst: Uint8Array, nA: number, nB: number, srcStrideB: number, dstStrideA: number, itemBytes: number): void;
}

let host: HostKernels | null = null;

/** Install (or, with null, remove) the host's kernels. */
export function useHostKernels(kernels: HostKernels | null): void {
  host = kernels;
}

/** The installed host kernels, if any. */
export function hostKernels(): HostKernels | null {
  return host;
}

/** Buffers from this size up get the host's huge-page advice (numpy's threshold is 4 MiB too). */
const LARGE_BUFFER = 4 << 20;
/** Below this, a call into the host costs more than the JavaScript loop. */
const HOST_SWAP_MIN = 64 << 10;

/** A zero-filled buffer for array data, shared between workers when asked. */
export function allocateBuffer(nbytes: number, shared = false): ArrayBuffer | SharedArrayBuffer {
  const buffer = shared ? new SharedArrayBuffer(nbytes) : new ArrayBuffer(nbytes);
  // Advice must come before the first touch: V8 hands out large buffers as fresh, untouched mappings.
  if (host?.adviseHugePages && nbytes >= LARGE_BUFFER) host.adviseHugePages(new Uint8Array(buffer));
  return buffer;
}

/** A copy of `bytes` in a buffer of its own (from allocateBuffer, so large copies get the host's advice). */
export function copyBytes(bytes: Uint8Array, shared = false): Uint8Array {
  const out = new Uint8Array(allocateBuffer(bytes.length, shared));
  out.set(bytes);
  return out;
}

/**
 * Write `src` into `dst` (the same length) with the bytes of every `unit`-byte group reversed
 * (unit 2, 4, 8 or 16); `src` and `dst` may be the same bytes. DataView's byte-order reads and
 * writes compile to single byte-swap instructions in V8: twice the speed of shifts and masks on
 * words, at any alignment. Only integer words move, so NaN payloads are kept on every engine.
 */
function swapInto(src: Uint8Array, dst: Uint8Array, unit: number): void {
  const n = src.length - (src.length % unit);
  const from = new DataView(src.buffer, src.byteOffset, src.length);
  const to = new DataView(dst.buffer, dst.byteOffset, dst.length);
  if (unit === 2) {
    for (let p = 0; p < n; p += 2) to.setUint16(p, from.getUint16(p, true), false);
  } else if (unit === 4) {
    for (let p = 0; p < n; p += 4) to.setUint32(p, from.getUint32(p, true), false);
  } else if (unit === 8) {
    for (let p = 0; p < n; p += 8) {
      const lo = from.getUint32(p, true);
      const hi = from.getUint32(p + 4, true);
      to.setUint32(p, hi, false);
      to.setUint32(p + 4, lo, false);
    }
  } else if (unit === 16) {
    for (let p = 0; p < n; p += 16) {
      const w0 = from.getUint32(p, true);
      const w1 = from.getUint32(p + 4, true);
      const w2 = from.getUint32(p + 8, true);
      const w3 = from.getUint32(p + 12, true);
      to.setUint32(p, w3, false);
      to.setUint32(p + 4, w2, false);
      to.setUint32(p + 8, w1, false);
      to.setUint32(p + 12, w0, false);
    }
  } else {
    for (let i = 0; i < n; i += unit) {
      for (let a = i, b = i + unit - 1; a <= b; a++, b--) {
        const t = src[a]!;
        dst[a] = src[b]!;
        dst[b] = t;
      }
    }
  }
}

/** {@link swapBytes} in plain JavaScript, never through the host: what a host's kernel falls back to for a unit it lacks. */
export function swapBytesPortable(bytes: Uint8Array, unit: number): void {
  if (unit > 1) swapInto(bytes, bytes, unit);
}

/** Reverse the bytes of every `unit`-byte group in place (unit 2, 4, 8 or 16). */
export function swapBytes(bytes: Uint8Array, unit: number): void {
  if (unit <= 1) return;
  if (host && bytes.length >= HOST_SWAP_MIN) host.swapBytes(bytes, unit);
  else swapInto(bytes, bytes, unit);
}

/** Write `src` into `dst` (the same length, another buffer) with every `unit`-byte group reversed, in one pass. */
export function swapBytesInto(src: Uint8Array, dst: Uint8Array, unit: number): void {
  if (host && src.length >= HOST_SWAP_MIN) {
    dst.set(src);
    host.swapBytes(dst, unit);
  } else swapInto(src, dst, unit);
}

/**
 * A copy of `bytes` (in a buffer from allocateBuffer) with every `unit`-byte group reversed: one
 * pass that reads the source and writes swapped, instead of a copy and then a swap.
 */
export function copySwapped(bytes: Uint8Array, unit: number, shared = false): Uint8Array {
  if (host && bytes.length >= HOST_SWAP_MIN) {
    const out = copyBytes(bytes, shared);
    host.swapBytes(out, unit);
    return out;
  }
  const out = new Uint8Array(allocateBuffer(bytes.length, shared));
  swapInto(bytes, out, unit);
  return out;
}
