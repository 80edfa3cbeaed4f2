/**
 * Weight files on the command line: torch.save checkpoints, .safetensors files and sharded sets'
 * index files, told apart by their bytes (a .npy or .npz goes the other ways), read through core's
 * `openWeights`.
 */
import { NpyError, formatOf, shapeRepr, type DType, type NdArray, type NpyHeader, type TensorInfo, type WeightFile } from '@npyts/core';
import { openNpzSync, openWeights } from '@npyts/core/node';
import { printable, withFile, withFileAsync } from './session.js';
import { ggufValueJSON, ggufValueText } from './format.js';
import { firstBytes, type Target } from './targets.js';

/**
 * Whether a file is a weight file other than a .npz (a torch.save zip, a .safetensors file, a
 * sharded index, or any other format of core's list that holds tensors), as core's `formatOf` and
 * the format's `tensors` say; standard input never is.
 */
export function isWeightFile(t: Target): boolean {
  if (t.file === '-') return false;
  const { first, size } = firstBytes(t.file);
  const format = formatOf(first, size);
  if (format === null || format.tensors === false) return false;
  if (format.tensors === undefined) return true;
  // A container (a zip) whose members tell: a torch.save file or a .keras model, or a .npz (read the other ways).
  const zip = withFile(t.label, () => openNpzSync(t.file));
  try {
    return format.tensors(zip.entries.map((e) => e.name));
  } finally {
    zip.closeSync();
  }
}

/** A weight file opened for a command: errors name the file. */
export async function withWeights<T>(t: Target, work: (file: WeightFile) => Promise<T>): Promise<T> {
  const file = await withFileAsync(t.label, () => openWeights(t.file));
  try {
    return await withFileAsync(t.label, () => work(file));
  } finally {
    await file.close();
  }
}

/** The tensors a target names: one (`FILE:NAME`) or all of them. */
export function tensorNames(t: Target, file: WeightFile): readonly string[] {
  if (t.member === undefined) return file.names;
  if (!file.has(t.member)) return withFile(t.label, () => [file.keyOf(t.member!) ?? t.member!]);
  return [t.member];
}

/** The line `info` prints for one tensor: its descr, dtype, shape and bytes. */
export function tensorLine(
  label: string,
  dtype: DType,
  shape: readonly number[],
  stored: { quantization?: string | undefined; unreadable?: string | undefined } = {},
): string {
  const bytes = shape.reduce((a, b) => a * b, 1) * dtype.itemsize;
  const how = stored.quantization !== undefined ? `, stored as ${printable(stored.quantization)} (dequantized when read)` : '';
  const refused = stored.unreadable !== undefined ? `, not read: ${printable(stored.unreadable)}` : '';
  return `${printable(label)}: ${printable(dtype.descrLiteral)} (${dtype.name}, ${dtype.description}), shape ${shapeRepr(shape)}, ${bytes} data bytes${how}${refused}`;
}

/** The .npy header an array would be saved with (format 1.0): for JSON documents of tensors. */
export function headerOf(array: NdArray): NpyHeader {
  const size = array.size;
  return {
    version: [1, 0],
    dtype: array.dtype,
    shape: array.shape,
    fortranOrder: array.order === 'F',
    dataOffset: 0,
    size,
    dataBytes: size * array.dtype.itemsize,
  };
}

/** A tensor's info, or why npyts cannot read it (`NO_COUNTERPART`: a dtype or layout it has no counterpart for). */
async function unreadOrInfo(file: WeightFile, name: string): Promise<TensorInfo | string> {
  try {
    return await file.info(name);
  } catch (e) {
    if (e instanceof NpyError && e.code === 'NO_COUNTERPART') return e.message;
    throw e;
  }
}

/** `npyts info` of a weight file: a line per tensor (dtype, shape, bytes), then its metadata. */
export async function weightsInfo(t: Target, json: boolean, out: (text: string) => void, docs: Record<string, unknown>[]): Promise<void> {
  await withWeights(t, async (file) => {
    const tensors: Record<string, unknown>[] = [];
    for (const name of tensorNames(t, file)) {
      const info = await unreadOrInfo(file, name);
      if (typeof info === 'string') {
        // Listed, as the file lists it; only reading it is refused (a sparse or complex32 tensor).
        if (json) tensors.push({ name, unreadable: info });
        else out(`${printable(`${t.file}:${name}`)}: not read: ${printable(info)}\n`);
        continue;
      }
      const { dtype, shape } = info;
      const bytes = shape.reduce((a, b) => a * b, 1) * dtype.itemsize;
      if (json) {
        tensors.push({
          name,
          descr: dtype.descr,
          dtype: dtype.name,
          description: dtype.description,
          shape,
          data_bytes: bytes,
          ...(info.quantization !== undefined ? { quantization: info.quantization } : {}),
          ...(info.unreadable !== undefined ? { unreadable: info.unreadable } : {}),
        });
      } else out(`${tensorLine(`${t.file}:${name}`, dtype, shape, info)}\n`);
    }
    const metadata = Object.entries(file.metadata);
    const types = file.metadataTypes;
    // A GGUF's values by their GGUF types (arrays as lists, float32 with its own digits); other formats' as JSON has them.
    const gguf = file.format === 'gguf';
    if (json) {
      const values = gguf ? metadata.map(([k, v]): [string, unknown] => [k, ggufValueJSON(v)]) : metadata;
      docs.push({ file: t.label, format: file.format, tensors, metadata: Object.fromEntries(values) });
    } else if (t.member === undefined) {
      out(`${printable(t.file)}: ${file.format}, ${file.names.length} tensor${file.names.length === 1 ? '' : 's'}`);
      if (metadata.length)
        out(
          `; metadata: ${metadata
            .map(([k, v]) => {
              const text = gguf ? printable(ggufValueText(v, types?.[k])) : printable(JSON.stringify(v) ?? String(v)).slice(0, 200);
              return `${printable(k)}=${text}`;
            })
            .join(', ')}`,
        );
      out('\n');
    }
  });
}

/** Every tensor a target names, by name, read in order. */
export async function weightArrays(t: Target): Promise<Map<string, NdArray>> {
  return withWeights(t, async (file) => {
    const out = new Map<string, NdArray>();
    for (const name of tensorNames(t, file)) out.set(name, await file.get(name));
    return out;
  });
}
