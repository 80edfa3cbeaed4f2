/** `npyts convert`: between .npy, .npz, JSON, CSV/TSV, ragged and object arrays, and weight files to .safetensors or .gguf. */
/**
 * The `npyts` command: argument parsing (util.parseArgs) and one function per subcommand (info, show,
 * convert, diff, csv). Long because it holds every subcommand's wiring; the work itself is in
 * format.ts, diff.ts, text-table.ts and json-stream.ts. Splitting the subcommands into modules of
 * their own is the next step.
 */
import {
  GGUF_WRITE_TYPES,
  GGUF_FILE_TYPES,
  NpyError,
  encodeNpy,
  toOrder,
  withByteOrder,
  type GgufWriteType,
  type NdArray,
  type NpzArchive,
  type SyncByteSource,
  type TypedArray,
  type WeightFile,
} from '@npyts/core';
import { dataToBytes, encodeHeader } from '@npyts/core/plumbing';
import {
  openNpyFileSync,
  writeBeside,
  saveNpySync,
  saveNpz,
  saveSafetensors,
  saveGguf,
  saveGgufSync,
  openRaggedSync,
  type SaveGgufOptions,
  saveObjectArrayAsRaggedSync,
  raggedToObjectArray,
} from '@npyts/core/node';
import { pickleCodec, stringDTypeCodec } from '@npyts/core/pickle';
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { basename, extname } from 'node:path';
import { delimiterOf, rowsOfArray, tableBatches, tablePieces, tableToArray } from '../text-table.js';
import { startProgress } from '../progress.js';
import { type Io, session, UsageError, FileError, withFile, withFileAsync, printable } from '../session.js';
import type { Parsed } from '../args.js';
import { type Target, target, isArchive, withArchive, loadOne, checkIsFile } from '../targets.js';
import { isWeightFile, tensorNames, weightArrays, withWeights } from '../weights.js';

export async function cmdConvert(p: Parsed, io: Io): Promise<void> {
  if (p.positional.length !== 2) throw new UsageError('convert needs IN and OUT');
  const order = p.flags.get('--order');
  if (order !== undefined && order !== 'C' && order !== 'F') throw new UsageError('--order must be C or F');
  const byteorder = p.flags.get('--byteorder');
  const orders: Record<string, '<' | '>' | '='> = { little: '<', big: '>', native: '=' };
  if (byteorder !== undefined && !(String(byteorder) in orders)) throw new UsageError('--byteorder must be little, big or native');
  const version = p.flags.get('--version');
  if (version !== undefined && !['1', '2', '3'].includes(String(version))) throw new UsageError('--version must be 1, 2 or 3');
  if (p.flags.has('--compress') && p.flags.has('--store')) throw new UsageError('--compress and --store exclude each other');
  // With no --version, each output keeps its input's format version (numpy's choice when that cannot hold the header).
  const encodeOptions = (inputVersion: 1 | 2 | 3 | undefined): { version?: 1 | 2 | 3; pickle?: typeof pickleCodec } => {
    const v = version ? (Number(version) as 1 | 2 | 3) : inputVersion;
    return { ...(v ? { version: v } : {}), ...(session.allowPickle ? { pickle: pickleCodec } : {}) };
  };
  const transform = (array: NdArray): NdArray => {
    let a = order ? toOrder(array, order) : array;
    if (byteorder) a = withByteOrder(a, orders[String(byteorder)]!);
    return a;
  };
  const input = target(p.positional[0]!, true);
  const output = target(p.positional[1]!, false);
  // The output's kind comes from its name; anything else would write .npy bytes into a file named .csv.
  const textOut = output.member === undefined ? delimiterOf(output.file) : null;
  const safetensorsOut = output.member === undefined && /\.safetensors$/i.test(output.file);
  const ggufOut = output.member === undefined && /\.gguf$/i.test(output.file);
  if (output.file !== '-' && output.member === undefined && !textOut && !safetensorsOut && !ggufOut && !/\.np[yz]$/i.test(output.file)) {
    const ext = extname(output.file);
    throw new UsageError(
      `cannot tell what to write from the name ${printable(output.file)} (${ext ? `extension '${printable(ext)}'` : 'no extension'}): name it .npy, .npz, .safetensors, .gguf, .csv or .tsv`,
    );
  }
  if (safetensorsOut || ggufOut) {
    // These formats fix their own layout (C order, little-endian) and have no archive or header version.
    const kind = ggufOut ? '.gguf' : '.safetensors';
    for (const flag of ['--order', '--byteorder', '--compress', '--store', '--version']) {
      if (p.flags.has(flag)) throw new UsageError(`${flag} is not for writing a ${kind} file (its layout is the format's own: C order, little-endian)`);
    }
  }
  const ggufType = p.flags.get('--type');
  if (ggufType !== undefined && !ggufOut) throw new UsageError('--type is for writing a .gguf');
  if (ggufType !== undefined && !GGUF_WRITE_TYPES.includes(String(ggufType) as GgufWriteType)) {
    throw new UsageError(`--type must be one of ${GGUF_WRITE_TYPES.join(', ')}`);
  }
  const textIn = input.member === undefined && input.file !== '-' ? delimiterOf(input.file) : null;
  if (p.flags.has('--dtype') && !textIn) throw new UsageError('--dtype is for reading a .csv or .tsv file');
  checkIsFile(input.file);
  const layout = p.flags.get('--layout');
  const layouts = ['ranges', 'offsets', 'zero-terminated'] as const;
  const chosen = layouts.find((l) => l === layout);
  if (layout !== undefined && (!p.flags.has('--ragged') || !chosen)) {
    throw new UsageError('--layout goes with --ragged and is ranges, offsets or zero-terminated');
  }
  if (p.flags.has('--string-dtype') && !p.flags.has('--object')) throw new UsageError('--string-dtype goes with --object');
  if (p.flags.has('--ragged') || p.flags.has('--object')) {
    if (input.file === '-' || output.file === '-' || input.member !== undefined) throw new UsageError('--ragged and --object convert between files');
    if (p.flags.has('--ragged')) {
      const { array } = loadOne(input);
      withFile(output.file, () => saveObjectArrayAsRaggedSync(output.file, array, chosen ? { layout: chosen } : {}));
    } else {
      const objects = withFile(input.label, () => {
        const r = openRaggedSync(input.file);
        try {
          return raggedToObjectArray(r);
        } finally {
          r.close();
        }
      });
      const codec = p.flags.has('--string-dtype') ? stringDTypeCodec : pickleCodec;
      withFile(output.file, () => saveNpySync(output.file, objects, { ...encodeOptions(undefined), pickle: codec }));
    }
    return;
  }
  // A torch.save file or .safetensors (or a sharded set's index): every tensor, or the one named.
  const weightsIn = !textIn && withFile(input.label, () => isWeightFile(input));
  const inArchive = !weightsIn && !textIn && input.member === undefined && isArchive(input.file);
  const outArchive = output.member !== undefined || /\.npz$/i.test(output.file);

  const maxShardSize = p.flags.get('--max-shard-size');
  if (maxShardSize !== undefined && !safetensorsOut) throw new UsageError('--max-shard-size is for writing OUT.safetensors');
  const shardSize = maxShardSize === undefined ? undefined : /^\d+$/.test(String(maxShardSize)) ? Number(maxShardSize) : String(maxShardSize);
  if (weightsIn && safetensorsOut) {
    // Streamed: each tensor read when its turn comes to be written (.safetensors is C order and
    // little-endian whatever --order and --byteorder say), so memory stays near the largest tensor.
    await withWeights(input, (file) => {
      const source = { names: tensorNames(input, file), info: file.info.bind(file), get: file.get.bind(file), tieOf: file.tieOf.bind(file) };
      return withFileAsync(output.file, () => saveSafetensors(output.file, source, shardSize === undefined ? {} : { maxShardSize: shardSize }));
    });
    return;
  }
  if (weightsIn && ggufOut) {
    // Streamed the same way: the header from each tensor's info, then each tensor read, converted or
    // quantized and written before the next is read.
    await withWeights(input, (file) => {
      const source = { names: tensorNames(input, file), info: file.info.bind(file), get: file.get.bind(file) };
      return withFileAsync(output.file, () =>
        saveGguf(output.file, source, ggufOptions(file, ggufType === undefined ? undefined : (String(ggufType) as GgufWriteType))),
      );
    });
    return;
  }
  // Gather the arrays to write, with their names for an archive and the format version they came in.
  type Named = [name: string, array: NdArray, version: 1 | 2 | 3];
  const named = (name: string, t: Target, archive?: NpzArchive<SyncByteSource>): Named => {
    const { header, array } = loadOne(t, archive);
    return [name, array, header.version[0]];
  };
  let arrays: Named[];
  let compressed = false;
  if (weightsIn) {
    arrays = [...(await weightArrays(input))].map(([name, array]): Named => [name, array, 1]);
  } else if (inArchive) {
    arrays = withArchive(input, (archive) => {
      compressed = archive.entries.some((e) => e.method !== 0);
      return archive.names.map((name) => named(name, { label: `${input.file}:${name}`, file: input.file, member: name }, archive));
    });
  } else if (input.member !== undefined) {
    arrays = [
      withArchive(input, (archive) => {
        compressed = archive.entry(input.member!).method !== 0;
        return named(input.member!, input, archive);
      }),
    ];
  } else if (textIn) {
    // np.loadtxt's default dtype is float64.
    const descr = String(p.flags.get('--dtype') ?? '<f8');
    if (!outArchive && !textOut && output.file !== '-' && !order) {
      // Straight to a .npy, a batch of rows at a time: memory is one batch, whatever the text's size.
      withFile(input.label, () => tableToNpyFile(input.file, output.file, textIn, descr, input.label, encodeOptions(undefined).version, transform));
      return;
    }
    const table = withFile(input.label, () => tableToArray(textPieces(input.file), textIn, descr, input.label));
    arrays = [[basename(input.file).replace(/\.(csv|tsv)$/i, ''), table, 1]];
  } else if (textOut && !order && !byteorder && input.file !== '-') {
    // A .npy to text, a step of rows at a time by region reads: memory is one step, whatever the file's size.
    const h = withFile(input.label, () => openNpyFileSync(input.file, session.allowPickle ? { pickle: pickleCodec } : {}));
    try {
      withFile(output.file, () =>
        writeBeside(output.file, (fd) => {
          const rest = h.shape.slice(1);
          const rowsOf = (from: number, count: number): NdArray => withFile(input.label, () => h.read([from, ...rest.map(() => 0)], [count, ...rest]));
          for (const piece of tablePieces(h.dtype, h.shape, rowsOf, textOut)) writeSync(fd, piece);
        }),
      );
    } finally {
      h.close();
    }
    return;
  } else {
    arrays = [named(basename(input.file).replace(/\.npy$/i, ''), input)];
  }
  arrays = arrays.map(([name, a, v]) => [name, withFile(input.label, () => transform(a)), v]);
  if (textOut) {
    if (arrays.length !== 1) throw new UsageError(`${input.label} holds ${arrays.length} arrays; name one as ${input.file}:NAME for a table`);
    const a = toOrder(arrays[0]![1], 'C');
    withFile(output.file, () =>
      writeBeside(output.file, (fd) => {
        for (const piece of tablePieces(a.dtype, a.shape, (from, count) => rowsOfArray(a, from, count), textOut)) writeSync(fd, piece);
      }),
    );
    return;
  }

  if (safetensorsOut) {
    const tensors = new Map(arrays.map(([name, a]) => [name, a]));
    await withFileAsync(output.file, () => saveSafetensors(output.file, tensors, shardSize === undefined ? {} : { maxShardSize: shardSize }));
  } else if (ggufOut) {
    withFile(output.file, () =>
      saveGgufSync(output.file, new Map(arrays.map(([name, a]) => [name, a])), ggufType === undefined ? {} : { type: String(ggufType) as GgufWriteType }),
    );
  } else if (outArchive) {
    if (output.member !== undefined) {
      if (arrays.length !== 1) throw new UsageError('OUT.npz:NAME takes a single array; give OUT.npz for a whole archive');
      arrays = [[output.member, arrays[0]![1], arrays[0]![2]]];
    }
    const compress = p.flags.has('--compress') || (!p.flags.has('--store') && compressed);
    // One version for the archive: the members' own when they agree.
    const versions = new Set(arrays.map(([, , v]) => v));
    const options = encodeOptions(versions.size === 1 ? [...versions][0] : undefined);
    const progress = startProgress(`${printable(output.file)}${compress ? ' (deflate)' : ''}`, session.quiet);
    try {
      await saveNpz(output.file, new Map(arrays.map(([name, a]) => [name, a])), { compress, ...options, onProgress: progress.update });
    } catch (e) {
      throw new FileError(output.file, e);
    } finally {
      progress.stop();
    }
  } else {
    if (arrays.length !== 1) throw new UsageError(`${input.label} holds ${arrays.length} arrays; name one as ${input.file}:NAME or write a .npz`);
    const [, array, inputVersion] = arrays[0]!;
    const options = encodeOptions(inputVersion);
    if (output.file === '-') {
      const bytes = withFile(input.label, () => encodeNpy(array, options));
      (io.stdoutBytes ?? ((b: Uint8Array) => process.stdout.write(b)))(bytes);
    } else {
      withFile(output.file, () => saveNpySync(output.file, array, options));
    }
  }
  void io;
}

/**
 * The options of a GGUF written from a weight file: a GGUF read keeps its key/values (with their
 * types), and one requantized says its new type where it said its old one (llama.cpp reads
 * general.file_type).
 */
function ggufOptions(file: WeightFile, type: GgufWriteType | undefined): SaveGgufOptions {
  const kept: { metadata?: Record<string, unknown>; metadataTypes?: Readonly<Record<string, string>> } =
    file.format === 'gguf' ? { metadata: file.metadata, ...(file.metadataTypes ? { metadataTypes: file.metadataTypes } : {}) } : {};
  if (type !== undefined && kept.metadata !== undefined && Object.hasOwn(kept.metadata, 'general.file_type')) {
    kept.metadata = { ...kept.metadata, 'general.file_type': GGUF_FILE_TYPES[type] };
  }
  return { ...kept, ...(type === undefined ? {} : { type }) };
}

/** Text pieces of a file, decoded as UTF-8 a MiB at a time (a character split across pieces is kept whole). */
export function* textPieces(file: string): Generator<string> {
  const fd = openSync(file, 'r');
  try {
    const decoder = new TextDecoder('utf-8');
    const buffer = new Uint8Array(1 << 20);
    for (let n = readSync(fd, buffer); n > 0; n = readSync(fd, buffer)) yield decoder.decode(buffer.subarray(0, n), { stream: true });
    const last = decoder.decode();
    if (last) yield last;
  } finally {
    closeSync(fd);
  }
}

/**
 * A table read into a .npy as it streams: the header is written for 0 rows (numpy's growth padding
 * leaves room for any row count), each batch of rows is written after it, and the header is written
 * again with the count at the end, all beside the target and renamed over it when complete.
 */
export function tableToNpyFile(
  from: string,
  to: string,
  delimiter: ',' | '\t',
  descr: string,
  source: string,
  version: 1 | 2 | 3 | undefined,
  transform: (a: NdArray) => NdArray,
): void {
  writeBeside(to, (fd) => {
    let header: Uint8Array | null = null;
    let rows = 0;
    let last: NdArray | null = null;
    for (const batch of tableBatches(textPieces(from), delimiter, descr, source)) {
      const a = transform(batch);
      if (!header) {
        header = encodeHeader(a.dtype, [0, ...a.shape.slice(1)], false, version);
        writeAll(fd, header);
      }
      writeAll(fd, dataToBytes(a.dtype, a.data as TypedArray));
      rows += a.shape[0]!;
      last = a;
    }
    const final = encodeHeader(last!.dtype, [rows, ...last!.shape.slice(1)], false, version);
    if (final.length !== header!.length) throw new NpyError('HEADER_ROOM', `${rows} rows do not fit the header's room`);
    writeAll(fd, final, 0);
  });
}

/** Write all of `bytes` (at `position`, or at the file position), however the kernel splits it. */
export function writeAll(fd: number, bytes: Uint8Array, position?: number): void {
  for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done, position === undefined ? null : position + done);
}
