/** The .safetensors entry of the weight format list. */
import type { WeightFormatEntry } from '../weights/formats.js';
import { SafetensorsFile } from './file.js';

/**
 * A .safetensors file: an 8-byte little-endian header length (below 2^56, so its last byte is 0,
 * which JSON text cannot hold), then the JSON header. A pickle at protocol 2 or 4 (first byte 0x80)
 * can also have a 0 eighth byte: such a file is a .safetensors only if its header begins with `{`,
 * as the safetensors library requires. (Other files go to the reader, which refuses what the library
 * refuses, in its order: a header length over 100 MB first.)
 * @example
 * safetensorsFormat.sniff(firstBytes, size);   // true for a .safetensors file
 */
export const safetensorsFormat: WeightFormatEntry<'safetensors'> = {
  name: 'safetensors',
  sniff: (b, size) => size >= 8 && b.length >= 8 && b[7] === 0 && (b[0] !== 0x80 || b[8] === 0x7b),
  open: (source, _place, options) => SafetensorsFile.open(source, options),
};
