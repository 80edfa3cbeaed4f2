/**
 * .npy files in the browser's Origin Private File System, through the synchronous access handles
 * dedicated workers get (`FileSystemSyncAccessHandle`: `read`/`write` at a position): region reads,
 * region writes, new files sized for parallel filling, and appends, as `@npyts/core/node` does on
 * disk. Several workers can fill disjoint regions of one file when each opens its handle with
 * `{ mode: 'readwrite-unsafe' }` (Chromium); appends take the handle's exclusive default mode.
 */
import { DECODE_KEYS, type ArraySpec, type DecodeOptions, type Expecting } from '../npy.js';
import { checkOptions, knownKeys } from '../options.js';
import type { NdArray } from '../array/ndarray.js';
import type { DescrInput } from '../format/descr-types.js';
import { NpyError } from '../errors.js';
import { CREATE_KEYS, openHandleSync, performOnSource, type CreateOptions, type NpyFileHandleSync } from './handles.js';
import type { WritableByteSource } from './byte-source.js';
import { appendingRows, readingOpenNpy, writingNewNpy } from './npy-ops.js';
import { SOURCE, driveSync, type Operation, type SourceStep } from './steps.js';

const OPEN_KEYS = knownKeys<DecodeOptions & { name?: string }>({ ...DECODE_KEYS, name: true });
const CREATE_HANDLE_KEYS = knownKeys<CreateOptions & { name?: string }>({ ...CREATE_KEYS, name: true });
const APPEND_KEYS = knownKeys<{ name?: string }>({ name: true });

/** What a `FileSystemSyncAccessHandle` offers (any object with these methods will do). */
export interface SyncAccessHandle {
  read(buffer: Uint8Array, options: { at: number }): number;
  write(buffer: Uint8Array, options: { at: number }): number;
  getSize(): number;
  truncate(size: number): void;
  flush(): void;
}

/** Name used in errors when none is given. */
const UNNAMED = 'the OPFS file';

/** An access handle as a writable byte source (the caller keeps the handle: nothing here closes it); opfsStore's edits go through it too. */
export function accessSource(file: SyncAccessHandle, name: string): WritableByteSource {
  const readInto = (target: Uint8Array, position: number): number => {
    let done = 0;
    while (done < target.length) {
      const n = file.read(target.subarray(done), { at: position + done });
      if (n <= 0) break;
      done += n;
    }
    return done;
  };
  return {
    name,
    get size() {
      return file.getSize();
    },
    read(offset, length) {
      const out = new Uint8Array(Math.max(0, Math.min(length, file.getSize() - offset)));
      return out.subarray(0, readInto(out, offset));
    },
    readInto,
    write(bytes, position) {
      for (let done = 0; done < bytes.length; ) {
        const n = file.write(bytes.subarray(done), { at: position + done });
        if (n <= 0) throw new NpyError('WRITE_FAILED', `a write at byte ${position + done} wrote nothing (is the storage quota full?)`);
        done += n;
      }
    },
    truncate: (size) => file.truncate(size),
    sync: () => file.flush(),
  };
}

/** An operation of io/npy-ops.ts run on an access handle: the same steps as on Node's files. */
function runOn<T>(source: WritableByteSource, name: string, operation: Operation<T, SourceStep>): T {
  return driveSync(operation, performOnSource(source, name));
}

/**
 * Open a .npy held by an OPFS sync access handle for region reads and writes (in a worker).
 * @example
 * const access = await fileHandle.createSyncAccessHandle({ mode: 'readwrite-unsafe' });
 * const h = openNpyAccessHandle(access, { expect: '<f4' });
 * h.writeRegion([100, 0], { data: rows, shape: [100, 512] });
 * h.close();   // flushes; access.close() releases the file
 */
export function openNpyAccessHandle<const S extends DescrInput>(
  file: SyncAccessHandle,
  options: DecodeOptions & Expecting<S> & { name?: string },
): NpyFileHandleSync<S>;
export function openNpyAccessHandle(file: SyncAccessHandle, options?: DecodeOptions & { name?: string }): NpyFileHandleSync;
export function openNpyAccessHandle(file: SyncAccessHandle, options: DecodeOptions & { name?: string } = {}): NpyFileHandleSync {
  checkOptions('openNpyAccessHandle', options, OPEN_KEYS);
  const name = options.name ?? UNNAMED;
  const source = accessSource(file, name);
  return openHandleSync(name, source, runOn(source, name, readingOpenNpy(SOURCE, options)));
}

/**
 * Write numpy's header for a new array into an OPFS file and size the file for its data, ready for
 * workers to fill disjoint regions; returns an open handle.
 * @example
 * const h = createNpyAccessHandle(access, { dtype: '<f8', shape: [1000, 1000] });
 */
export function createNpyAccessHandle(file: SyncAccessHandle, options: CreateOptions & { name?: string }): NpyFileHandleSync {
  checkOptions('createNpyAccessHandle', options, CREATE_HANDLE_KEYS);
  const name = options.name ?? UNNAMED;
  const source = accessSource(file, name);
  const header = runOn(source, name, writingNewNpy(SOURCE, options));
  file.flush();
  return openHandleSync(name, source, header);
}

/**
 * Append along axis 0 (the last axis of a Fortran-order file) of a .npy in an OPFS file: the data
 * is written after the existing data and flushed before the header's shape is rewritten in place.
 * The header must have room to grow (numpy ≥ 1.24 and npyts leave it); otherwise an NpyError says so.
 * @example
 * appendNpyAccessHandle(access, { data: new Float32Array(512), shape: [1, 512] });
 */
export function appendNpyAccessHandle(file: SyncAccessHandle, input: NdArray | ArraySpec, options: { name?: string } = {}): void {
  checkOptions('appendNpyAccessHandle', options, APPEND_KEYS);
  const name = options.name ?? UNNAMED;
  runOn(accessSource(file, name), name, appendingRows(SOURCE, name, input, 'refuse'));
}
