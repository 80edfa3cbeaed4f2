/**
 * Memory-mapped .npy files (numpy's `np.load(mmap_mode=…)` and `open_memmap`), through @npyts/native:
 * an array whose `data` is a typed array over a map of the file's data. Several processes can map one
 * file `'r+'` and fill their parts; a `'r'` map of a huge file costs the pages touched.
 */
import { closeSync, fstatSync } from 'node:fs';
import { checkDataPresent, type DecodeOptions } from '../npy.js';
import type { DescrInput } from '../format/descr-types.js';
import type { NpyHeader } from '../format/header.js';
import { byteSwapUnit, bytesToData, storageOf } from '../array/layout.js';
import type { TypedArray } from '../format/js-types.js';
import { NdArray } from '../array/ndarray.js';
import { NpyError } from '../errors.js';
import type { StorageOf } from '../format/descr-types.js';
import { mapFile, mapUnavailable, unmapFile } from './native.js';
import { openFileSync, readHeaderFromFd } from './fd.js';

/** numpy's mmap modes: read, read and write the file, copy-on-write (writes stay in this process). */
export type MapMode = 'r' | 'r+' | 'c';

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
