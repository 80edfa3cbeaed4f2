/**
 * Memory-mapped .npy files (numpy's `np.load(mmap_mode=…)` and `open_memmap`), through @npyts/native:
 * an array whose `data` is a typed array over a map of the file's data. Several processes can map one
 * file `'r+'` and fill their parts; a `'r'` map of a huge file costs the pages touched.
 */
import { closeSync, fstatSync } from 'node:fs';
import { DECODE_KEY_SET, checkDataPresent, type DecodeOptions } from '../npy.js';
import type { DescrInput } from '../format/descr-types.js';
import type { NpyHeader } from '../format/header.js';
import { byteSwapUnit, bytesToData, storageOf } from '../array/layout.js';
import type { TypedArray } from '../format/js-types.js';
import { NdArray } from '../array/ndarray.js';
import { NpyError } from '../errors.js';
import type { StorageOf } from '../format/descr-types.js';
import { checkMapMode, checkOptions, warnNoMap, type MapMode } from '../options.js';
import type { SyncByteSource } from '../io/byte-source.js';
import { mapFile, mapUnavailable, unmapFile } from './native.js';
import { openFileSync, readFully, readHeaderFromFd } from './fd.js';

export type { MapMode };

/**
 * An array over a memory map of its file. `close()` (or `using`) ends access at once (with `'r+'`,
 * after writing the changed pages back); otherwise the map is removed when the array is collected.
 * With `'r'`, writes to `data` are not an error as in numpy, but they stay in this process.
 * @example
 * using m = loadNpySync('big.npy', { mmap: 'r+' });
 * m.data[0] = 1;   // written to the file when closed (or when the system writes pages back)
 */
export class MappedArray<S extends DescrInput = DescrInput> extends NdArray<S> implements Disposable {
  constructor(
    readonly path: string,
    readonly mode: MapMode,
    header: NpyHeader,
    data: StorageOf<S>,
  ) {
    super(header.dtype as NdArray<S>['dtype'], header.shape, data, header.fortranOrder ? 'F' : 'C');
  }

  /** Write changed pages back to the file now (`'r+'`); a no-op for the private modes. */
  flush(): void {
    if (this.mode === 'r+') unmapFile(this.buffer, true, false);
  }

  /** End access: `'r+'` pages are written back first; `data` becomes empty (nothing can touch the map again). */
  close(): void {
    unmapFile(this.buffer, this.mode === 'r+', true);
  }

  [Symbol.dispose](): void {
    this.close();
  }

  private get buffer(): ArrayBuffer {
    return (this.data as TypedArray).buffer as ArrayBuffer;
  }
}

const MODE_NUMBER: Record<MapMode, number> = { r: 0, 'r+': 1, c: 2 };

function refuse(path: string, why: string): never {
  throw new NpyError(
    'NOT_MAPPABLE',
    `${path} cannot be memory-mapped: ${why}; read it with openNpyFile(path).read(start, count) (region reads) or loadNpy instead`,
  );
}

/**
 * Map the data of the .npy at `path`. The data must be in native byte order and aligned for its
 * element type, and hold no Python objects; otherwise a clear NpyError names region reads instead.
 * @example
 * const m = mapNpy('big.npy', 'r');
 * m.get(0, 7);
 * m.close();
 */
export function mapNpy(path: string, mode: MapMode, options: DecodeOptions = {}): MappedArray {
  checkOptions('mapNpy', options, DECODE_KEY_SET);
  checkMapMode(mode);
  const unavailable = mapUnavailable();
  if (unavailable) {
    throw new NpyError('NO_ADDON', `memory maps need @npyts/native (${unavailable}); read regions with openNpyFile(path).read(start, count) instead`);
  }
  const fd = openFileSync(path, mode === 'r+' ? 'r+' : 'r');
  try {
    const header = readHeaderFromFd(fd, options);
    checkDataPresent(header, fstatSync(fd).size - header.dataOffset);
    const { ctor } = storageOf(header.dtype);
    if (byteSwapUnit(header.dtype)) refuse(path, `its data is ${header.dtype.byteOrder === '>' ? 'big' : 'little'}-endian, not this machine's byte order`);
    if (header.dataOffset % ctor.BYTES_PER_ELEMENT !== 0) refuse(path, `its data starts at byte ${header.dataOffset}, not aligned for ${ctor.name}`);
    // The map outlives the descriptor: closing the file does not unmap it.
    const buffer = mapFile(fd, header.dataOffset, header.dataBytes, MODE_NUMBER[mode]);
    const data = bytesToData(header.dtype, buffer, 0, header.size, { copy: false });
    return new MappedArray(path, mode, header, data as StorageOf<DescrInput>);
  } finally {
    closeSync(fd);
  }
}

/**
 * A whole file as a source whose reads are views of one shared map of it (`mode` as numpy's
 * `mmap_mode`), for `openWeights(path, { mmap })`: each tensor whose bytes have its layout is an
 * array over the map. The map lives while the source or any view of it does; `close()` drops the
 * source's hold (after writing `'r+'` pages back), and the map is removed when the last view is
 * collected. Null, after one warning (`NPYTS_NO_MMAP`, once a process), where maps cannot be
 * made here (no @npyts/native): the caller then reads the file as without `mmap`.
 * @example
 * const source = mappedFileSource('model.safetensors', 'r');   // null without the addon
 */
export function mappedFileSource(path: string, mode: MapMode): SyncByteSource | null {
  checkMapMode(mode);
  const unavailable = mapUnavailable();
  if (unavailable) {
    warnNoMap(`memory maps need @npyts/native (${unavailable})`);
    return null;
  }
  let fd: number | null = openFileSync(path, mode === 'r+' ? 'r+' : 'r');
  try {
    const size = fstatSync(fd).size;
    // The map outlives the descriptor: closing the file does not unmap it. An empty file has no map.
    // Views are made of the buffer itself: one Uint8Array of a map over 4 GiB is more than V8 allows.
    let buffer: ArrayBuffer | null = size === 0 ? new ArrayBuffer(0) : mapFile(fd, 0, size, MODE_NUMBER[mode]);
    const closed = () => new NpyError('CLOSED', `${path} is closed`);
    const view = (offset: number, length: number): Uint8Array => {
      if (!buffer) throw closed();
      const from = Math.min(size, offset);
      return new Uint8Array(buffer, from, Math.max(0, Math.min(size, offset + length) - from));
    };
    // The descriptor is kept for readCopy (the same file as the map, even after a rename over its path).
    const kept = fd;
    fd = null;
    return {
      size,
      name: path,
      views: true,
      read: view,
      readInto: (target, offset) => {
        const got = view(offset, target.length);
        target.set(got);
        return got.length;
      },
      readCopy: (offset, length) => {
        if (!buffer) throw closed();
        const from = Math.min(size, offset);
        const out = new Uint8Array(Math.max(0, Math.min(size, offset + length) - from));
        return out.subarray(0, readFully(kept, out, from));
      },
      close: () => {
        if (!buffer) return;
        try {
          if (mode === 'r+' && size > 0) unmapFile(buffer, true, false);
        } finally {
          buffer = null;
          closeSync(kept);
        }
      },
    };
  } finally {
    if (fd !== null) closeSync(fd);
  }
}
