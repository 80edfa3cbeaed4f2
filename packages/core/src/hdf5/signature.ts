/** The HDF5 signature, told apart from the first bytes of a file (without loading the reader). */

const SIGNATURE = [0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a];

/**
 * Whether bytes start with the HDF5 signature (`\x89HDF\r\n\x1a\n`).
 * @example
 * isHdf5(firstBytes);   // true for a .h5
 */
export function isHdf5(first: Uint8Array): boolean {
  return SIGNATURE.every((b, i) => first[i] === b);
}
