/** The HDF5 signature, told apart from the first bytes of a file (without loading the reader), and found after a user block. */

const SIGNATURE = [0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a];

/** Where a user block may end and the superblock start: 512 bytes, then each power of two (the HDF5 spec's search). */
const FIRST_USER_BLOCK = 512;

/**
 * Whether bytes start with the HDF5 signature (`\x89HDF\r\n\x1a\n`).
 * @example
 * isHdf5(firstBytes);   // true for a .h5
 */
export function isHdf5(first: Uint8Array): boolean {
  return SIGNATURE.every((b, i) => first[i] === b);
}

/**
 * Where an HDF5 file's superblock is: byte 0, or past a user block at byte 512, 1024, 2048, … (the
 * places the HDF5 library looks, as h5py's `userblock_size=` writes them); null where none of them
 * has the signature. One read of 8 bytes at each place, at most 2 + log2(size) of them.
 * @example
 * await hdf5Start((at, n) => source.read(at, n), source.size);   // 512 for h5py.File(p, 'w', userblock_size=512)
 */
export async function hdf5Start(read: (at: number, length: number) => Uint8Array | Promise<Uint8Array>, size: number): Promise<number | null> {
  for (let at = 0; at + SIGNATURE.length <= size; at = at === 0 ? FIRST_USER_BLOCK : at * 2) {
    if (isHdf5(await read(at, SIGNATURE.length))) return at;
  }
  return null;
}
