/**
 * @npyts/native in the Node entry: when the addon was built, large buffers get huge-page advice,
 * big-endian data is swapped by a C loop, large reads and C <-> Fortran copies run on every core,
 * and saveNpy reserves the file's extents first (as np.save does). Without it everything runs on the JavaScript paths with the same results.
 * NPYTS_NATIVE=0 in the environment turns it off.
 */
import { Buffer } from 'node:buffer';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { basename } from 'node:path';
import { swapBytesPortable, useHostKernels } from '../array/memory.js';
import { constants as osConstants } from 'node:os';
import * as workerThreads from 'node:worker_threads';
import { crc32 as zlibCrc32 } from 'node:zlib';

const EWOULDBLOCK = osConstants.errno.EWOULDBLOCK;

interface NativeAddon {
  adviseHugePages(bytes: Uint8Array): number;
  swapBytes(bytes: Uint8Array, unit: number): void;
  permutePlane(src: Uint8Array, dst: Uint8Array, nA: number, nB: number, srcStrideB: number, dstStrideA: number, itemBytes: number, threads: number): void;
  preallocate(fd: number, offset: number, length: number): number;
  preadParallel(fd: number, bytes: Uint8Array, position: number, threads: number): number;
  lockFile?(fd: number, lock: number): number;
  tryLockFile?(fd: number): number;
  mapFile?(fd: number, offset: number, length: number, mode: number): ArrayBuffer;
  gatherStrided?(fd: number, base: number, runLength: number, dims: Uint8Array, out: Uint8Array): number;
  unmapFile?(buffer: ArrayBuffer, sync: number, detach: number): number;
  /** libdeflate's whole-buffer inflate, when the addon was built with it: bytes written, -1 corrupt, -2 more than `dst`. */
  inflateRaw?(src: Uint8Array, dst: Uint8Array): number;
  inflateRawAsync?(src: Uint8Array, dst: Uint8Array): Promise<number>;
  /** libdeflate on the thread pool into the addon's memory: [written, crc, header, data] (data after a .npy header, no copy), or [written < 0]. */
  inflateNpyAsync?(src: Uint8Array, size: number): Promise<[number, number?, ArrayBuffer?, ArrayBuffer?]>;
  /** libdeflate's CRC-32 (carry-less multiplication), when the addon was built with it. */
  crc32?(bytes: Uint8Array, crc: number): number;
  /** Which file @npyts/native loaded, relative to it: `build/Release/npyts_native.node`. */
  binary?: string;
}

/** Threads for one large read or plane copy (the addon's work is split on 2 MiB / 64-row bounds). */
const threads = Math.max(1, Math.min(4, availableParallelism()));
/** Work smaller than this stays on one thread: starting threads would cost more than it saves. */
const PARALLEL_MIN = 16 << 20;

/** What {@link nativeStatus} reports: whether @npyts/native is in use, and whether memory maps can be made. */
export interface NativeStatus {
  /** True when @npyts/native is loaded and in use. */
  loaded: boolean;
  /** Why not, when it is not. */
  reason?: string;
  /** Whether memory maps (`loadNpy(p, { mmap })`) can be made, and why not. */
  mmap?: { available: boolean; reason?: string };
  /** Whether deflated archive members inflate with libdeflate (the addon was built with its headers) rather than zlib. */
  libdeflate?: boolean;
  /**
   * Which binary is in use: `@npyts/native-linux-x64-gnu/npyts_native.node` (prebuilt, the platform
   * package that @npyts/core's optional dependencies bring; no compiler, no install script) or
   * `build/Release/npyts_native.node` (in @npyts/native, built from source at its install).
   */
  binary?: string;
}

let addon: NativeAddon | null = null;
let status: NativeStatus = { loaded: false, reason: 'not loaded yet' };

/**
 * Node's own kernels, for when the addon is not in use: Buffer's swap16/32/64 are C++ loops, 2–5 ×
 * the speed of the portable DataView loop (256 MiB here: swap64 12 ms against 62 ms, swap32 38
 * against 77, swap16 11 against 150). A 16-byte unit (complex256, float128) keeps the portable loop.
 */
const NODE_SWAPS: Record<number, 'swap16' | 'swap32' | 'swap64'> = { 2: 'swap16', 4: 'swap32', 8: 'swap64' };
const nodeKernels = {
  swapBytes(bytes: Uint8Array, unit: number): void {
    const swap = NODE_SWAPS[unit];
    if (swap && bytes.length % unit === 0) Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)[swap]();
    else swapBytesPortable(bytes, unit);
  },
};

function load(): void {
  useHostKernels(nodeKernels);
  if (process.env.NPYTS_NATIVE === '0') {
    status = { loaded: false, reason: 'turned off by NPYTS_NATIVE=0' };
    return;
  }
  const require = createRequire(import.meta.url);
  // @npyts/native, built from source at its install, where the user asked for it; else the prebuilt
  // binary that @npyts/core's optional dependencies brought for this platform.
  let fromSource: string | null = null;
  try {
    const native = require('@npyts/native') as NativeAddon;
    use(native, native.binary);
    return;
  } catch (e) {
    // Not installed is the usual case, and no reason of its own; a failed build or load is.
    if ((e as { code?: string }).code !== 'MODULE_NOT_FOUND' || !/'@npyts\/native'/.test((e as Error).message))
      fromSource = (e as Error).message.split('\n', 1)[0] ?? '';
  }
  const reasons: string[] = [];
  for (const name of platformPackages()) {
    let path: string;
    try {
      path = require.resolve(name);
    } catch {
      continue;
    }
    try {
      use(require(path) as NativeAddon, `${name}/${basename(path)}`);
      return;
    } catch (e) {
      // A binary that is there but does not load (a glibc older than it needs, a damaged file).
      reasons.push(`${name}/${basename(path)} does not load here (${(e as Error).message.split('\n')[0]})`);
    }
  }
  if (!reasons.length)
    reasons.push(
      `no prebuilt binary is installed for ${process.platform}-${process.arch} (${platformPackages().join(' or ')}: npm installs it with @npyts/core where one is published, unless optional dependencies are omitted)`,
    );
  status = {
    loaded: false,
    reason: `${fromSource ? `${fromSource}; ` : ''}${reasons.join('; ')}; \`npm install @npyts/native\` builds the addon from source (needs a C compiler and Python)`,
  };
}

/** The platform packages that may hold this machine's prebuilt binary: linux's name its C library, glibc's first. */
function platformPackages(): string[] {
  const key = `${process.platform}-${process.arch}`;
  return process.platform === 'linux' ? [`@npyts/native-${key}-gnu`, `@npyts/native-${key}-musl`] : [`@npyts/native-${key}`];
}

function use(native: NativeAddon, binary: string | undefined): void {
  addon = native;
  useHostKernels({
    adviseHugePages: native.adviseHugePages,
    swapBytes: native.swapBytes,
    permutePlane: (src, dst, nA, nB, sB, dA, item) => native.permutePlane(src, dst, nA, nB, sB, dA, item, nA * nB * item >= PARALLEL_MIN ? threads : 1),
  });
  status = { loaded: true, ...(binary ? { binary } : {}) };
}
load();

/**
 * Whether the native speed-ups are in use in this process, and why not.
 * @example
 * nativeStatus();   // { loaded: true, mmap: { available: true } }
 */
export function nativeStatus(): NativeStatus {
  const why = mapUnavailable();
  return { ...status, mmap: why === null ? { available: true } : { available: false, reason: why }, ...(status.loaded ? { libdeflate: nativeInflate() } : {}) };
}

/** Reserve `length` bytes of extents at `offset` without changing the file's size; a no-op without the addon. */
export function preallocate(fd: number, offset: number, length: number): void {
  // Only a hint: a filesystem without fallocate (or a full disk, which the write will report) is fine.
  if (addon && length >= 1 << 20) addon.preallocate(fd, offset, length);
}

/**
 * Fill `target` from `fd` at `position` on several threads; the bytes read (fewer at end of file),
 * or null when the addon is not in use, the read is small, or it failed (the caller then reads
 * itself and reports the error as Node does).
 */
export function readInParallel(fd: number, target: Uint8Array, position: number): number | null {
  if (!addon || threads < 2 || target.length < PARALLEL_MIN) return null;
  const got = addon.preadParallel(fd, target, position, threads);
  return got >= 0 ? got : null;
}

/**
 * Whether whole deflated members inflate with libdeflate through the addon (1.25–1.8 × zlib's speed
 * here); NPYTS_LIBDEFLATE=0 keeps zlib. Read at each call, so the environment can change it.
 */
export function nativeInflate(): boolean {
  return process.env.NPYTS_LIBDEFLATE !== '0' && typeof addon?.inflateRaw === 'function' && typeof addon.inflateRawAsync === 'function';
}

/** libdeflate's inflate of `src` into `dst` (its exact size): the bytes written, -1 corrupt, -2 more than `dst` holds. */
export function inflateRawNative(src: Uint8Array, dst: Uint8Array): number {
  return addon!.inflateRaw!(src, dst);
}

/** {@link inflateRawNative} on libuv's thread pool. */
export function inflateRawNativeAsync(src: Uint8Array, dst: Uint8Array): Promise<number> {
  return addon!.inflateRawAsync!(src, dst);
}

/**
 * The zip CRC-32 of `bytes`, continuing from `crc`: libdeflate's through the addon where it was built
 * with it (14 GB/s here, against node:zlib's 4.8 GB/s), else node:zlib's. Every CRC-32 the Node
 * entry takes goes through here.
 */
export function crc32(bytes: Uint8Array, crc = 0): number {
  return addon?.crc32 ? addon.crc32(bytes, crc) : zlibCrc32(bytes, crc);
}

/** Whether {@link inflateNpyNative} can run (libdeflate is in use, and the addon has it). */
export function nativeNpyInflate(): boolean {
  return nativeInflate() && typeof addon?.inflateNpyAsync === 'function';
}

/** What {@link inflateNpyNative} gives: the bytes written (< 0 as for inflateRawNative), and for a success the CRC-32, the bytes before a .npy's data and the data. */
export interface InflatedNpy {
  written: number;
  crc: number;
  head: Uint8Array;
  data: ArrayBuffer;
}

/**
 * A deflated member inflated by libdeflate on the thread pool into memory of the addon's, its CRC-32
 * computed there too, and split after a .npy header: the data is an ArrayBuffer of its own at no
 * copy (what tfjs needs). Only where {@link nativeNpyInflate} said so (the caller decides once, so
 * that NPYTS_LIBDEFLATE changing meanwhile cannot leave a read half on each engine).
 */
export function inflateNpyNative(src: Uint8Array, size: number): Promise<InflatedNpy> {
  const inflate = addon?.inflateNpyAsync;
  if (!inflate) return Promise.reject(new Error('inflateNpyNative: @npyts/native has no libdeflate (ask nativeNpyInflate() first)'));
  return inflate(src, size).then(([written, crc = 0, head = new ArrayBuffer(0), data = new ArrayBuffer(0)]) => ({
    written,
    crc,
    head: new Uint8Array(head),
    data,
  }));
}

/**
 * flock(LOCK_EX) on `fd`, waiting for other holders (true), or null when the addon is not in use
 * (or predates locking) and the caller must lock some other way.
 */
export function lockExclusive(fd: number): boolean | null {
  if (!addon?.lockFile) return null;
  const rc = addon.lockFile(fd, 1);
  if (rc !== 0) throw Object.assign(new Error(`flock failed (errno ${rc})`), { errno: rc });
  return true;
}

/**
 * flock(LOCK_EX | LOCK_NB) on `fd`: true when taken, false while another holder has it, null when
 * the addon is not in use (the caller must lock some other way).
 */
export function tryLockExclusive(fd: number): boolean | null {
  // An addon built before tryLockFile existed gives null: the caller uses a lock file instead.
  if (!addon?.tryLockFile) return null;
  const rc = addon.tryLockFile(fd);
  if (rc === 0) return true;
  if (rc === EWOULDBLOCK) return false;
  throw Object.assign(new Error(`flock failed (errno ${rc})`), { errno: rc });
}

/** Release a lock taken with {@link lockExclusive}. */
export function unlock(fd: number): void {
  addon?.lockFile?.(fd, 0);
}

/** Why memory maps cannot be made here (no addon, an addon built before maps, a runtime without external buffers), or null. */
export function mapUnavailable(): string | null {
  if (!addon) return status.reason ?? 'the addon is not loaded';
  if (!addon.mapFile || !addon.unmapFile) return 'the addon was built before memory maps; rebuild it';
  return mapRefusal;
}

let mapRefusal: string | null = null;

/** An ArrayBuffer over a map of `length` bytes of `fd` at `offset` (mode 0 'r', 1 'r+', 2 'c'). */
export function mapFile(fd: number, offset: number, length: number, mode: number): ArrayBuffer {
  try {
    const buffer = addon!.mapFile!(fd, offset, length, mode);
    // The map is removed when this ArrayBuffer object is collected: moved to a worker, its bytes
    // would outlive it there. A transfer list that names it does not move it (Node copies it, or refuses).
    (workerThreads as { markAsUntransferable?: (o: object) => void }).markAsUntransferable?.(buffer);
    return buffer;
  } catch (e) {
    if ((e as { code?: string }).code === 'ERR_EXTERNAL_BUFFERS') mapRefusal = (e as Error).message;
    throw e;
  }
}

/** Write a mapped buffer's pages back (`sync`) and, when `detach`, end all access to it. */
export function unmapFile(buffer: ArrayBuffer, sync: boolean, detach: boolean): void {
  if (buffer.byteLength === 0) return; // closed already
  const rc = addon!.unmapFile!(buffer, sync ? 1 : 0, detach ? 1 : 0);
  if (rc !== 0) throw Object.assign(new Error(`msync failed (errno ${rc})`), { errno: rc });
}

/** Regions with fewer runs than this are read with positional reads (a map costs more than a few reads). */
const GATHER_MIN_RUNS = 64;
/** Runs at least this long are read with positional reads: they are reads of their own anyway. */
const GATHER_MAX_RUN = 64 << 10;

/**
 * Copy a region of `fd` into `out` in C from a read-only map of the span it covers (one call for
 * millions of runs); false when the addon is not in use or the region is better read by positional
 * reads (few or long runs), or the gather failed (the caller then reads itself and reports errors).
 */
export function gatherRegion(
  fd: number,
  strided: { readonly base: number; readonly runLength: number; readonly counts: readonly number[]; readonly strides: readonly number[] },
  out: Uint8Array,
): boolean {
  if (!addon?.gatherStrided) return false;
  const runs = strided.counts.reduce((p, c) => p * c, 1);
  if (runs < GATHER_MIN_RUNS || strided.runLength >= GATHER_MAX_RUN || runs * strided.runLength !== out.length) return false;
  const dims = new Float64Array([...strided.counts, ...strided.strides]);
  return addon.gatherStrided(fd, strided.base, strided.runLength, new Uint8Array(dims.buffer), out) === out.length;
}
