/**
 * Large buffers and in-place byte swapping. Both run in plain JavaScript everywhere; a host may plug
 * in faster kernels (the Node entry plugs in @npyts/native when it is built), which only change
 * speed, never results.
 */

export interface HostKernels {
  /** Ask the OS to back this fresh, not yet touched memory with huge pages (numpy does so for its arrays). */
  adviseHugePages(bytes: Uint8Array): number;
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
  if (host && nbytes >= LARGE_BUFFER) host.adviseHugePages(new Uint8Array(buffer));
  return buffer;
}

/** A copy of `bytes` in a buffer of its own (from allocateBuffer, so large copies get the host's advice). */
export function copyBytes(bytes: Uint8Array, shared = false): Uint8Array {
  const out = new Uint8Array(allocateBuffer(bytes.length, shared));
  out.set(bytes);
  return out;
}

/** Reverse the bytes of every `unit`-byte group in place (unit 2, 4, 8 or 16). */
export function swapBytes(bytes: Uint8Array, unit: number): void {
  if (unit <= 1) return;
  if (host && bytes.length >= HOST_SWAP_MIN) return host.swapBytes(bytes, unit);
  const n = bytes.length - (bytes.length % unit);
  if (unit === 4 && bytes.byteOffset % 4 === 0) {
    const w = new Uint32Array(bytes.buffer, bytes.byteOffset, n / 4);
    for (let i = 0; i < w.length; i++) {
      const x = w[i]!;
      w[i] = ((x & 0xff) << 24) | ((x & 0xff00) << 8) | ((x >>> 8) & 0xff00) | (x >>> 24);
    }
    return;
  }
  if (unit === 8 && bytes.byteOffset % 4 === 0) {
    const w = new Uint32Array(bytes.buffer, bytes.byteOffset, n / 4);
    for (let i = 0; i < w.length; i += 2) {
      const a = w[i]!;
      const b = w[i + 1]!;
      w[i] = ((b & 0xff) << 24) | ((b & 0xff00) << 8) | ((b >>> 8) & 0xff00) | (b >>> 24);
      w[i + 1] = ((a & 0xff) << 24) | ((a & 0xff00) << 8) | ((a >>> 8) & 0xff00) | (a >>> 24);
    }
    return;
  }
  for (let i = 0; i < n; i += unit) {
    for (let a = i, b = i + unit - 1; a < b; a++, b--) {
      const t = bytes[a]!;
      bytes[a] = bytes[b]!;
      bytes[b] = t;
    }
  }
}
