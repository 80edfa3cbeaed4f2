/**
 * ggml's tensor types as GGUF numbers them (gguf-py's `GGMLQuantizationType` and
 * `GGML_QUANT_SIZES`): each type's name, and how many values a block of how many bytes holds. The
 * unquantized ones say the dtype they are read as; the quantized ones are read as float32.
 */

/** One ggml tensor type: `block` values in `bytes` bytes; `descr` for a type read as itself. */
export interface GgmlType {
  readonly id: number;
  readonly name: string;
  readonly block: number;
  readonly bytes: number;
  /** The dtype an unquantized type is read as (little-endian); absent for a quantized one. */
  readonly descr?: string;
}

const QK_K = 256;

const TABLE: readonly (readonly [number, string, number, number, string?])[] = [
  [0, 'F32', 1, 4, '<f4'],
  [1, 'F16', 1, 2, '<f2'],
  [2, 'Q4_0', 32, 2 + 16],
  [3, 'Q4_1', 32, 2 + 2 + 16],
  [6, 'Q5_0', 32, 2 + 4 + 16],
  [7, 'Q5_1', 32, 2 + 2 + 4 + 16],
  [8, 'Q8_0', 32, 2 + 32],
  [9, 'Q8_1', 32, 4 + 4 + 32],
  [10, 'Q2_K', QK_K, 2 + 2 + QK_K / 16 + QK_K / 4],
  [11, 'Q3_K', QK_K, 2 + QK_K / 4 + QK_K / 8 + 12],
  [12, 'Q4_K', QK_K, 2 + 2 + QK_K / 2 + 12],
  [13, 'Q5_K', QK_K, 2 + 2 + QK_K / 2 + QK_K / 8 + 12],
  [14, 'Q6_K', QK_K, 2 + QK_K / 2 + QK_K / 4 + QK_K / 16],
  [15, 'Q8_K', QK_K, 4 + QK_K + QK_K / 8],
  [16, 'IQ2_XXS', QK_K, 2 + QK_K / 4],
  [17, 'IQ2_XS', QK_K, 2 + QK_K / 4 + QK_K / 32],
  [18, 'IQ3_XXS', QK_K, 2 + QK_K / 4 + QK_K / 8],
  [19, 'IQ1_S', QK_K, 2 + QK_K / 8 + QK_K / 16],
  [20, 'IQ4_NL', 32, 2 + 16],
  [21, 'IQ3_S', QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4],
  [22, 'IQ2_S', QK_K, 2 + QK_K / 4 + QK_K / 16],
  [23, 'IQ4_XS', QK_K, 2 + 2 + QK_K / 2 + QK_K / 64],
  [24, 'I8', 1, 1, '|i1'],
  [25, 'I16', 1, 2, '<i2'],
  [26, 'I32', 1, 4, '<i4'],
  [27, 'I64', 1, 8, '<i8'],
  [28, 'F64', 1, 8, '<f8'],
  [29, 'IQ1_M', QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32],
  [30, 'BF16', 1, 2, 'bfloat16'],
  [34, 'TQ1_0', QK_K, 2 + 4 * 13],
  [35, 'TQ2_0', QK_K, 2 + 64],
  [39, 'MXFP4', 32, 1 + 16],
  [40, 'NVFP4', 64, 4 + 32],
  [41, 'Q1_0', 128, 2 + 16],
];

/** Every type gguf-py names, by id. */
export const GGML_TYPES: ReadonlyMap<number, GgmlType> = new Map(
  TABLE.map(([id, name, block, bytes, descr]) => [id, descr === undefined ? { id, name, block, bytes } : { id, name, block, bytes, descr }]),
);
