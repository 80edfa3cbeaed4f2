/**
 * @npyts/native in the Node entry: when the addon was built, large buffers get huge-page advice,
 * big-endian data is swapped by a C loop, and saveNpy reserves the file's extents first (as
 * np.save does). Without it everything runs on the JavaScript paths with the same results.
 * NPYTS_NATIVE=0 in the environment turns it off.
 */
import { createRequire } from 'node:module';
import { useHostKernels, type HostKernels } from './memory.js';

interface NativeAddon extends HostKernels {
  preallocate(fd: number, offset: number, length: number): number;
}

export interface NativeStatus {
  /** True when @npyts/native is loaded and in use. */
  loaded: boolean;
  /** Why not, when it is not. */
  reason?: string;
}

let addon: NativeAddon | null = null;
let status: NativeStatus = { loaded: false, reason: 'not loaded yet' };

function load(): void {
  if (process.env.NPYTS_NATIVE === '0') {
    status = { loaded: false, reason: 'turned off by NPYTS_NATIVE=0' };
    return;
  }
  try {
    addon = createRequire(import.meta.url)('@npyts/native') as NativeAddon;
    useHostKernels(addon);
    status = { loaded: true };
  } catch (e) {
    status = { loaded: false, reason: (e as Error).message.split('\n')[0] };
  }
}
load();

/** Whether the native speed-ups are in use in this process, and why not. */
export function nativeStatus(): NativeStatus {
  return { ...status };
}

/** Reserve `length` bytes of extents at `offset` without changing the file's size; a no-op without the addon. */
export function preallocate(fd: number, offset: number, length: number): void {
  // Only a hint: a filesystem without fallocate (or a full disk, which the write will report) is fine.
  if (addon && length >= 1 << 20) addon.preallocate(fd, offset, length);
}
