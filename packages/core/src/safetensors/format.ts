/** The .safetensors entry of the weight format list. */
import type { WeightFormatEntry } from '../weights/formats.js';
import { SafetensorsFile } from './file.js';

/**
 * A .safetensors file: an 8-byte little-endian header length (below 2^56, so its last byte is 0,
 * which JSON text cannot hold), then the JSON header, which must begin with `{` (the safetensors
 * library refuses any other start). Both tests count: a pickle at protocol 2 or 4 also has a 0 eighth byte.
 * @example
 * safetensorsFormat.sniff(firstBytes, size);   // true for a .safetensors file
 */
export const safetensorsFormat: WeightFormatEntry = {
  name: 'safetensors',
  sniff: (b, size) => size >= 9 && b.length >= 9 && b[7] === 0 && b[8] === 0x7b,
  open: (source, _place, options) => SafetensorsFile.open(source, options),
};
