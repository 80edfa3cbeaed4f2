/**
 * Zarr's metadata for an array whose chunks are byte ranges of a file: the `.zarray`/`.zattrs` of
 * Zarr v2 and the `zarr.json` of Zarr v3, the dtype's name in each, and the chunk keys. The one place
 * that knows what Zarr can express: everything it cannot is refused here, by name.
 */
import { NpyError } from '../errors.js';
import type { DType } from '../format/dtype.js';

export type ZarrFormat = 2 | 3;

/** Zarr v3's core data types, by numpy's kind and item size. */
const V3_TYPES: Readonly<Record<string, string>> = {
  b1: 'bool',
  i1: 'int8',
  i2: 'int16',
  i4: 'int32',
  i8: 'int64',
  u1: 'uint8',
  u2: 'uint16',
  u4: 'uint32',
  u8: 'uint64',
  f2: 'float16',
  f4: 'float32',
  f8: 'float64',
  c8: 'complex64',
  c16: 'complex128',
};

/** numpy kinds Zarr v2 takes as a typestr (`<f4`, `|S5`, `<U3`, `<M8[ns]`). */
const V2_KINDS = new Set(['b', 'i', 'u', 'f', 'c', 'S', 'U', 'M', 'm']);

/**
 * Why Zarr `format` cannot hold `dtype` exactly, or null where it can: records, objects, void and
 * the ML floats (bfloat16, float8: no Zarr reader has a data type for them) in both; in v3 also
 * strings, bytes, datetimes and long doubles, which its core types lack.
 */
export function zarrRefusal(dtype: DType, format: ZarrFormat): string | null {
  if (dtype.fields || dtype.subarray) return `${dtype.str} is a record or subarray dtype, which Zarr has no data type for`;
  if (dtype.mlFloat) return `${dtype.mlFloat} has no Zarr data type that zarr-python, zarrita or tensorstore read; convert it to float32 first`;
  if (format === 3) {
    return Object.hasOwn(V3_TYPES, `${dtype.kind}${dtype.itemsize}`)
      ? null
      : `${dtype.str} has no Zarr v3 core data type${V2_KINDS.has(dtype.kind) ? ' (Zarr v2 has one: --zarr-format 2)' : ''}`;
  }
  return V2_KINDS.has(dtype.kind) ? null : `${dtype.str} has no Zarr data type`;
}

/** What one array is to Zarr: dtype, shape, memory order, chunk shape, and the names of its axes. */
export interface ZarrArray {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly fortranOrder: boolean;
  /** The axes in the order their bytes lie, where neither C nor Fortran order (a permuted view): Zarr v3's transpose only. */
  readonly order?: readonly number[];
  /** The array's name, for messages. */
  readonly name?: string;
  readonly chunks: readonly number[];
  readonly dimensionNames: readonly string[];
  readonly attributes: Readonly<Record<string, unknown>>;
}

/** The metadata documents of one array, by key relative to the array's own path. */
export function arrayMetadata(a: ZarrArray, format: ZarrFormat): Record<string, string> {
  const refused = zarrRefusal(a.dtype, format);
  if (refused !== null) throw new NpyError('NO_COUNTERPART', refused);
  if (format === 2 && a.order) {
    throw new NpyError(
      'NO_COUNTERPART',
      `array '${a.name ?? 'the array'}' lies in the order of axes ${a.order.join(', ')} (a permuted view), which Zarr v2's C and F orders do not express: use Zarr v3 (its transpose codec), or save it with .contiguous()`,
    );
  }
  if (format === 2) {
    return {
      '.zarray': JSON.stringify({
        chunks: a.chunks,
        compressor: null,
        dimension_separator: '.',
        dtype: a.dtype.str,
        // null, not 0: xarray reads a fill value as _FillValue and would turn every 0 into NaN.
        fill_value: null,
        filters: null,
        order: a.fortranOrder ? 'F' : 'C',
        shape: a.shape,
        zarr_format: 2,
      }),
      '.zattrs': JSON.stringify({ ...a.attributes, _ARRAY_DIMENSIONS: a.dimensionNames }),
    };
  }
  const kind = a.dtype.kind;
  const codecs: unknown[] = [];
  // Fortran order is C order of the reversed axes: the transpose codec, never a copy of the data.
  if (a.order) codecs.push({ name: 'transpose', configuration: { order: a.order } });
  else if (a.fortranOrder && a.shape.length > 1) codecs.push({ name: 'transpose', configuration: { order: a.shape.map((_, i) => a.shape.length - 1 - i) } });
  const multiByte = a.dtype.itemsize > (kind === 'c' ? 2 : 1);
  codecs.push({ name: 'bytes', configuration: multiByte ? { endian: a.dtype.byteOrder === '>' ? 'big' : 'little' } : {} });
  return {
    'zarr.json': JSON.stringify({
      zarr_format: 3,
      node_type: 'array',
      shape: a.shape,
      data_type: V3_TYPES[`${kind}${a.dtype.itemsize}`],
      chunk_grid: { name: 'regular', configuration: { chunk_shape: a.chunks } },
      chunk_key_encoding: { name: 'default', configuration: { separator: '/' } },
      fill_value: kind === 'b' ? false : kind === 'c' ? [0, 0] : 0,
      codecs,
      dimension_names: a.dimensionNames,
      attributes: a.attributes,
    }),
  };
}

/** The metadata documents of a group, by key relative to the group's own path. */
export function groupMetadata(format: ZarrFormat, attributes: Readonly<Record<string, unknown>> = {}): Record<string, string> {
  return format === 2
    ? { '.zgroup': JSON.stringify({ zarr_format: 2 }), '.zattrs': JSON.stringify(attributes) }
    : { 'zarr.json': JSON.stringify({ zarr_format: 3, node_type: 'group', attributes }) };
}

/**
 * The key of the chunk at grid position `at`, relative to the array's path: Zarr v2's (`1.0`, `0` for
 * a 0-d array) or v3's default encoding (`c/1/0`), with the separator the metadata names.
 */
export function chunkKey(at: readonly number[], format: ZarrFormat, separator = format === 2 ? '.' : '/'): string {
  if (format === 2) return at.length ? at.join(separator) : '0';
  return ['c', ...at].join(separator);
}

/**
 * The numpy descr of a Zarr v3 core data type in the byte order of its `bytes` codec (`float32`,
 * `big` → `>f4`), or null for a type that is not one of them.
 */
export function descrOfV3(dataType: string, endian: 'little' | 'big'): string | null {
  const entry = Object.entries(V3_TYPES).find(([, name]) => name === dataType);
  if (!entry) return null;
  const [code] = entry;
  const single = code === 'b1' || code === 'i1' || code === 'u1';
  return `${single ? '|' : endian === 'big' ? '>' : '<'}${code}`;
}
