/** The .safetensors entry of the weight format list. */
import type { WeightFormatEntry } from '../weights/formats.js';
import { SafetensorsFile } from './file.js';

/**
 * A .safetensors file: an 8-byte little-endian header length (below 2^56, so its last byte is 0,
 * which JSON text cannot hold), then the JSON header.
 * @example
 * safetensorsFormat.sniff(firstBytes, size);   // true for a .safetensors file
 */
export const safetensorsFormat: WeightFormatEntry = {
  name: 'safetensors',
  sniff: (b, size) => size >= 8 && b.length >= 8 && b[7] === 0,
  open: (source, _place, options) => SafetensorsFile.open(source, options),
};
