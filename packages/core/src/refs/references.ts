/**
 * Reference sets: where every array's bytes are in the files npyts reads, as the kerchunk format
 * that fsspec's `ReferenceFileSystem` (and so zarr-python, xarray and dask) and zarrita's reference
 * store read: `{ version: 1, refs: { key: text | [url, offset, length] } }`, with Zarr metadata, so
 * that each file is a Zarr group read in place, chunk by chunk, without a copy.
 */
import { NpyError, withWhere } from '../errors.js';
import type { DType } from '../format/dtype.js';
import type { ByteSource } from '../io/byte-source.js';
import { carriesCredentials, redactUrls } from '../io/redact.js';
import { openNpySource, resolveUrl, sourceOf, type NpySource } from '../io/open.js';
import { headerBytesNeeded, readHeader } from '../format/header.js';
import { HTTP_KEYS, type HttpOptions } from '../io/url.js';
import { mapInParallel } from '../io/settle.js';
import { checkNumbers, checkOptions, knownKeys, REFERENCE_RULES } from '../options.js';
import { NpzArchive } from '../npz/archive.js';
import { SafetensorsFile } from '../safetensors/file.js';
import { GgufFile } from '../gguf/file.js';
import { formatOf, SNIFF_BYTES } from '../weights/formats.js';
import { isTorchArchive } from '../torch/layout.js';
import { parseShardIndex } from '../weights/sharded.js';
import { placeOf, type OpenWeightsOptions } from '../weights/open.js';
import type { TensorExtent } from '../weights/tensor-file.js';
import type { Place } from '../weights/place.js';
import { checkKey, openKey } from '../store/key.js';
import { arrayMetadata, chunkKey, groupMetadata, zarrRefusal, type ZarrFormat } from './zarr.js';

/** One reference: a metadata document's text, or `[url, offset, length]` of a chunk's bytes. */
export type Reference = string | [url: string, offset: number, length: number];

/** A kerchunk reference set (version 1). */
export interface ReferenceSet {
  version: 1;
  refs: Record<string, Reference>;
}

/** Options of `referencesOf`. */
export interface ReferenceOptions {
  /** Zarr's format for the metadata: 3 (`zarr.json`, the current spec; the default) or 2 (`.zarray`, `.zattrs`). */
  zarrFormat?: ZarrFormat;
  /**
   * About how many bytes a chunk holds (default 64 MiB): an array is cut along its slowest axis
   * (axis 0, or the last one for Fortran order) into chunks of whole rows, as many as divide that
   * axis evenly (Zarr readers want every chunk full), so a chunk may be smaller than this, never larger
   * unless one row is.
   */
  chunkBytes?: number;
  /**
   * The URL (or path) the references point at, for each input: by default its own path or URL. A
   * template with `{name}` stands for each input's file name (`s3://bucket/run/{name}`). Needed for
   * bytes, a `Blob` or a source, which have no place of their own.
   */
  url?: string;
  /**
   * Join the inputs (.npy files of one dtype, order and trailing shape) into one array along this
   * axis (only 0: the files' rows follow each other). Without it, several inputs are refused.
   */
  concat?: 0;
  /** The array's name for a .npy (and for inputs joined): by default the first input's file name without `.npy`. */
  name?: string;
  signal?: AbortSignal | undefined;
}

/** What `referencesOf` takes: its own options, the HTTP ones, and where a sharded set's shards are. */
export type ReferencesOfOptions = ReferenceOptions & HttpOptions & Pick<OpenWeightsOptions, 'resolve' | 'place'>;
/** The options {@link ReferencesOfOptions} names (both `referencesOf` entries check against it). */
export const REFERENCES_OF_KEYS: ReadonlySet<string> = knownKeys<ReferencesOfOptions>({
  ...HTTP_KEYS,
  zarrFormat: true,
  chunkBytes: true,
  url: true,
  concat: true,
  name: true,
  resolve: true,
  place: true,
});

/** An input of `referencesOf`: a source, with the place its references point at and its file name. */
export interface ReferenceInput {
  /** The input's bytes, opened when its headers are read (a few at a time) and closed then. */
  readonly open: () => Promise<{ source: ByteSource; close: () => Promise<void> }>;
  /** Where the references point (a path or URL), or null for an input with no place of its own. */
  readonly url: string | null;
  /** Where the input's siblings are (a sharded set's shards), or null. */
  readonly place: Place | null;
  /** The input in words, for messages. */
  readonly label: string;
}

/** How many inputs have their headers read at once: latency overlaps, and open files stay few. */
const INPUTS_IN_FLIGHT = 16;

/** The arrays of one input: opened, its headers read, closed (named with the input on failure). */
async function extentsOfInput(input: ReferenceInput, fallbackName: string, signal: AbortSignal | undefined): Promise<Extent[]> {
  signal?.throwIfAborted();
  const { source, close } = await input.open();
  try {
    return await withFile(source.name ?? input.label, () => extentsOf(source, fallbackName, input.place, signal));
  } finally {
    await close();
  }
}

/** One array found in a file: dtype, shape, order, and where its bytes start. */
export interface Extent extends TensorExtent {
  readonly name: string;
  /** The file that holds the bytes where it is not the input itself (a sharded set's shard): its path or URL. */
  readonly location?: string;
}

export const DEFAULT_CHUNK_BYTES = 64 * 2 ** 20;
/** The first read of each input: its sniff, and a .npy's whole header where it is under this. */
const FIRST_READ = 4096;

/**
 * Every array of one file, where its bytes are: a .npy's one array, a stored .npz's members, a .safetensors file's tensors.
 * Also what @npyts/onnxruntime slices a Blob's tensors by (through `@npyts/core/plumbing`).
 * @example
 * for (const e of await extentsOf(blobSource(file), file.name, null, undefined)) console.log(e.name, e.offset);
 */
export async function extentsOf(source: ByteSource, fallbackName: string, place: Place | null, signal: AbortSignal | undefined): Promise<Extent[]> {
  // One read that holds most .npy headers whole (numpy pads them to 64 bytes; a few records' more):
  // the sniff and the header from the same bytes, one request a file where there are thousands.
  const first = await source.read(0, Math.min(FIRST_READ, source.size), { signal });
  const kind = formatOf(first, source.size)?.name ?? null;
  if (kind === 'npy') {
    const h = first.length >= headerBytesNeeded(first) ? readHeader(first) : (await openNpySource(source, { signal })).header;
    // A reference past the end would give a reader short chunks: the file must hold what the header promises.
    if (h.dataOffset + h.dataBytes > source.size) {
      throw new NpyError(
        'DATA_TRUNCATED',
        `the header promises ${h.dataBytes} data bytes from byte ${h.dataOffset}; the file has ${source.size - h.dataOffset}`,
      );
    }
    return [{ name: fallbackName, dtype: h.dtype, shape: h.shape, fortranOrder: h.fortranOrder, offset: h.dataOffset }];
  }
  if (kind === 'zip') {
    const archive = await NpzArchive.open(source, { signal });
    if (isTorchArchive(archive)) {
      // Each tensor where its storage member's bytes lie in the zip (TorchFile.extent refuses views that are not the array as it lies).
      // Loaded when a checkpoint is met: code that never reads one carries no unpickler.
      const { TorchFile } = await import('../torch/file.js');
      const file = await TorchFile.fromArchive(archive, { signal });
      const out: Extent[] = [];
      for (const name of file.names) out.push({ name, ...(await file.extent(name, { signal })) });
      return out;
    }
    const out: Extent[] = [];
    for (const [i, entry] of archive.entries.entries()) {
      const name = archive.names[i]!;
      if (entry.method !== 0) {
        throw new NpyError(
          'ZIP_UNSUPPORTED',
          `member '${entry.name}' is deflated, and a reference can only point at stored bytes: write the archive with np.savez, not np.savez_compressed (or npyts convert IN OUT.npz --store)`,
          { member: entry.name },
        );
      }
      const h = await archive.header(name, { signal });
      out.push({ name, dtype: h.dtype, shape: h.shape, fortranOrder: h.fortranOrder, offset: (await archive.dataOffset(name, { signal })) + h.dataOffset });
    }
    return out;
  }
  if (kind === 'safetensors') {
    const file = await SafetensorsFile.open(source, { signal });
    return file.names.map((name) => {
      const h = file.header(name);
      return { name, dtype: h.dtype, shape: h.shape, fortranOrder: false, offset: h.dataOffset };
    });
  }
  if (kind === 'index') return shardExtents(source, place, signal);
  if (kind === 'gguf') {
    const file = await GgufFile.open(source, { signal });
    const quantized = file.names.filter((n) => file.extent(n) === null);
    if (quantized.length) {
      throw new NpyError(
        'NO_COUNTERPART',
        `${quantized.length} tensor(s) are quantized (${quantized.slice(0, 5).join(', ')}${quantized.length > 5 ? ', …' : ''}): their bytes are ggml blocks, not arrays, so no Zarr reader reads them in place; write the model's unquantized tensors (F32, F16) to a GGUF of their own, or convert them`,
      );
    }
    return file.names.map((n) => ({ name: n, ...file.extent(n)! }));
  }
  throw new NpyError(
    'BAD_MAGIC',
    `reference sets are made of .npy files, stored .npz archives, .safetensors files and sets, unquantized GGUF files and torch.save zips; this is ${kind === null ? 'none of them' : `a ${kind} file, which they are not made of yet`}`,
  );
}

/**
 * Every tensor of a sharded `.safetensors` set, in its shard: the index read, each shard's name checked
 * by the place's one rule before anything is requested, then each shard's header.
 */
async function shardExtents(source: ByteSource, place: Place | null, signal: AbortSignal | undefined): Promise<Extent[]> {
  const name = source.name ?? 'the index';
  if (!place) throw new NpyError('BAD_OPTION', `${name} is the index of a sharded set, whose shards are found beside it: give it by its path or URL`);
  const index = parseShardIndex(await source.read(0, source.size, { signal }), name);
  const byShard = new Map<string, string[]>();
  for (const [tensor, file] of index.weightMap) {
    checkKey(place, file, `the shard of '${tensor}'`, true);
    byShard.set(file, [...(byShard.get(file) ?? []), tensor]);
  }
  const out: Extent[] = [];
  for (const [file, tensors] of byShard) {
    const shardSource = await openKey(place, file, { signal }, `'${file}'`, true);
    try {
      const first = await shardSource.read(0, Math.min(SNIFF_BYTES, shardSource.size), { signal });
      if (formatOf(first, shardSource.size)?.name !== 'safetensors') {
        throw new NpyError('BAD_OPTION', `shard ${file} is not a .safetensors file: reference sets of other shards are not made yet`);
      }
      const shard = await SafetensorsFile.open(shardSource, { signal });
      for (const tensor of tensors) {
        if (!shard.has(tensor)) throw new NpyError('BAD_SAFETENSORS', `the index puts '${tensor}' in ${file}, which does not hold it`);
        const h = shard.header(tensor);
        out.push({ name: tensor, dtype: h.dtype, shape: h.shape, fortranOrder: false, offset: h.dataOffset, location: shardSource.name ?? file });
      }
    } catch (e) {
      throw withWhere(e, { file: shardSource.name ?? file });
    } finally {
      await shardSource.close?.();
    }
  }
  return out;
}

/** The largest divisor of `n` that is at most `most` (at least 1). */
function largestDivisorAtMost(n: number, most: number): number {
  if (n <= most) return Math.max(n, 1);
  // Divisors come in pairs (d, n / d): look at each d ≤ √n once.
  let best = 1;
  for (let d = 1; d * d <= n; d++) {
    if (n % d !== 0) continue;
    if (d <= most && d > best) best = d;
    const e = n / d;
    if (e <= most && e > best) best = e;
  }
  return best;
}

/**
 * Rows per chunk along an axis of `length` rows of `rowBytes` each: the most that fit `chunkBytes` and
 * divide the axis. Rows of no bytes are one chunk whatever the length claims: the divisor search costs
 * √length, and only an axis the file's bytes back (its data checked against the file's size) may set it.
 */
function rowsPerChunk(length: number, rowBytes: number, chunkBytes: number): number {
  if (rowBytes === 0) return Math.max(length, 1);
  return largestDivisorAtMost(length, Math.max(1, Math.floor(chunkBytes / rowBytes)));
}

/** The file name at the end of a path or URL (`a/b/c.npy` → `c.npy`). */
function baseName(where: string): string {
  const path = where.replace(/[?#].*$/, '');
  return decodeURIComponent(path.slice(path.lastIndexOf('/') + 1));
}

/** A name that Zarr keys can hold as one path component, or refused by name. */
function checkArrayName(name: string): void {
  const parts = name.split('/');
  if (name === '' || parts.some((p) => p === '' || p === '.' || p === '..' || p.startsWith('.z') || p === 'zarr.json' || p.startsWith('__'))) {
    throw new NpyError('NAME_CLASH', `the array name '${name}' cannot be a Zarr key (an empty part, '.', '..', '.z…', 'zarr.json' or '__…'): rename it`);
  }
}

/**
 * The reference set of `inputs` (each opened as a source, with the place its references point at).
 * The public entries (`referencesOf` in `@npyts/core` and `@npyts/core/node`) make the inputs.
 */
export async function referencesOfSources(inputs: readonly ReferenceInput[], options: ReferenceOptions = {}): Promise<ReferenceSet> {
  const format = options.zarrFormat ?? 3;
  if (format !== 2 && format !== 3) throw new NpyError('BAD_OPTION', `zarrFormat must be 2 or 3, not ${String(format)}`);
  checkNumbers(options, REFERENCE_RULES);
  const chunkBytes = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
  if (options.concat !== undefined && options.concat !== 0)
    throw new NpyError('BAD_OPTION', `concat joins files along axis 0 only, not ${String(options.concat)}`);
  if (inputs.length === 0) throw new NpyError('BAD_OPTION', 'no input to make references of');
  if (inputs.length > 1 && options.concat === undefined) {
    throw new NpyError('BAD_OPTION', `${inputs.length} inputs make one set only when joined: pass concat: 0 (--concat 0), or make a set of each`);
  }
  const template = options.url;
  if (template !== undefined && inputs.length > 1 && !template.includes('{name}')) {
    throw new NpyError('BAD_OPTION', `url '${template}' would point every input at one file: give a template with {name}`);
  }
  // A signed URL's signature would be kept in the set's file, for anyone who reads it: the set names
  // the unsigned places (url, --url), and each reader signs its own requests.
  const unsigned = (url: string, label: string): string => {
    if (carriesCredentials(url)) {
      throw new NpyError(
        'BAD_OPTION',
        `${redactUrls(label)} is a URL that carries credentials (a signature), which a reference set would keep in its file: pass url (--url) with the unsigned URL, or a template with {name}`,
      );
    }
    return url;
  };
  const locate = (extent: Extent, fallback: string): string => {
    if (extent.location === undefined) return fallback;
    return template === undefined ? unsigned(extent.location, extent.location) : template.replaceAll('{name}', baseName(extent.location));
  };
  const urlOf = (input: ReferenceInput): string => {
    if (template !== undefined) return input.url === null ? template : template.replaceAll('{name}', baseName(input.url));
    if (input.url === null) {
      throw new NpyError('BAD_OPTION', `${input.label} has no path or URL of its own: pass url (--url) to say where the references point`);
    }
    return unsigned(input.url, input.label);
  };
  const firstName = inputs[0]!.url === null ? 'array' : baseName(inputs[0]!.url).replace(/\.npy$/, '') || 'array';
  const name = options.name ?? firstName;

  const refs: Record<string, Reference> = {};
  const put = (prefix: string, docs: Record<string, string>): void => {
    for (const [k, v] of Object.entries(docs)) refs[prefix ? `${prefix}/${k}` : k] = v;
  };
  put('', groupMetadata(format));

  if (options.concat === 0) {
    const parts = await mapInParallel(inputs, INPUTS_IN_FLIGHT, async (input) => {
      const file = input.url ?? input.label;
      const url = urlOf(input);
      const extents = await extentsOfInput(input, name, options.signal);
      if (extents.length !== 1) throw withWhere(new NpyError('BAD_OPTION', 'concat joins .npy files, one array each; this file holds several'), { file });
      return { extent: extents[0]!, url, file };
    });
    const head = parts[0]!.extent;
    for (const { extent: e, file } of parts) {
      if (e.shape.length === 0) throw withWhere(new NpyError('SHAPE_MISMATCH', 'a 0-d array has no axis 0 to join along'), { file });
      if (e.fortranOrder) {
        throw withWhere(new NpyError('SHAPE_MISMATCH', "a Fortran-ordered file's rows are not contiguous, so it cannot be joined along axis 0 in place"), {
          file,
        });
      }
      if (e.dtype.str !== head.dtype.str)
        throw withWhere(new NpyError('DTYPE_MISMATCH', `dtype ${e.dtype.str}, the first file's is ${head.dtype.str}`), { file });
      if (e.shape.slice(1).join(',') !== head.shape.slice(1).join(',')) {
        throw withWhere(
          new NpyError('SHAPE_MISMATCH', `trailing shape (${e.shape.slice(1).join(', ')}), the first file's is (${head.shape.slice(1).join(', ')})`),
          { file },
        );
      }
    }
    const lengths = parts.map((p) => p.extent.shape[0]!);
    const shape = [lengths.reduce((a, b) => a + b, 0), ...head.shape.slice(1)];
    const rowBytes = head.dtype.itemsize * head.shape.slice(1).reduce((a, b) => a * b, 1);
    // Rows per chunk divide every file's length, so no chunk straddles two files or runs short.
    const common = lengths.reduce(gcd);
    const rows = rowsPerChunk(common, rowBytes, chunkBytes);
    put(name, arrayMetadata(zarrArray(name, head.dtype, shape, false, [rows || 1, ...shape.slice(1).map((d) => Math.max(d, 1))]), format));
    if (rowBytes === 0 || common === 0) return { version: 1, refs };
    let at = 0;
    for (const { extent, url } of parts) {
      for (let r = 0; r < extent.shape[0]!; r += rows) {
        refs[`${name}/${chunkKey([at++, ...shape.slice(1).map(() => 0)], format)}`] = [url, extent.offset + r * rowBytes, rows * rowBytes];
      }
    }
    return { version: 1, refs };
  }

  const input = inputs[0]!;
  const file = input.url ?? input.label;
  const url = urlOf(input);
  const extents = await extentsOfInput(input, name, options.signal);
  if (template !== undefined && !template.includes('{name}') && extents.some((e) => e.location !== undefined)) {
    throw new NpyError('BAD_OPTION', `url '${template}' would point every shard at one file: give a template with {name}`);
  }
  const seen = new Set<string>();
  for (const e of extents) {
    options.signal?.throwIfAborted();
    withFileSync(file, () => {
      checkArrayName(e.name);
      const refused = zarrRefusal(e.dtype, format);
      if (refused !== null) throw new NpyError('NO_COUNTERPART', `array '${e.name}': ${refused}`, { member: e.name });
    });
    // Groups on the way to a name with slashes (`a/b` is array b of group a).
    const parts = e.name.split('/');
    for (let i = 1; i < parts.length; i++) {
      const group = parts.slice(0, i).join('/');
      if (!seen.has(group)) put(group, groupMetadata(format));
      seen.add(group);
    }
    const n = e.shape.length;
    // The slowest axis: axis 0 in C order, the last in Fortran order, the first of a permuted view's order; rows along it are contiguous.
    const axis = e.order ? e.order[0]! : e.fortranOrder ? n - 1 : 0;
    const others = e.shape.filter((_, i) => i !== axis).reduce((a, b) => a * b, 1);
    const rowBytes = e.dtype.itemsize * others;
    const length = n === 0 ? 1 : e.shape[axis]!;
    const rows = n === 0 ? 1 : rowsPerChunk(length, rowBytes, chunkBytes);
    const chunks = e.shape.map((d, i) => (i === axis ? Math.max(rows, 1) : Math.max(d, 1)));
    put(
      e.name,
      withFileSync(file, () => arrayMetadata(zarrArray(e.name, e.dtype, e.shape, e.fortranOrder, chunks, e.order), format)),
    );
    if (rowBytes === 0 || length === 0) continue; // an empty array: no chunk, Zarr gives the fill value for none
    for (let r = 0, k = 0; r < length; r += rows, k++) {
      const at = e.shape.map((_, i) => (i === axis ? k : 0));
      refs[`${e.name}/${chunkKey(at, format)}`] = [locate(e, url), e.offset + r * rowBytes, rows * rowBytes];
    }
  }
  return { version: 1, refs };
}

function zarrArray(name: string, dtype: DType, shape: readonly number[], fortranOrder: boolean, chunks: readonly number[], order?: readonly number[]) {
  // Each array names its own axes: xarray refuses one name shared by axes of different lengths.
  const base = name.slice(name.lastIndexOf('/') + 1);
  return { name, dtype, shape, fortranOrder, ...(order ? { order } : {}), chunks, dimensionNames: shape.map((_, i) => `${base}_dim_${i}`), attributes: {} };
}

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

async function withFile<T>(file: string, f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    throw withWhere(e, { file });
  }
}

function withFileSync<T>(file: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw withWhere(e, { file });
  }
}

/**
 * The reference set of a file (or of files joined with `concat: 0`): a Zarr group, one array per
 * array or tensor, whose chunks are byte ranges of the file where it lies, for fsspec's
 * `reference://` filesystem (xarray, dask, zarr-python) and zarrita's reference store. Reads only
 * headers: one or two range requests for a URL. A `.npy`, a stored `.npz`, a `.safetensors` file or
 * sharded set, an unquantized GGUF file and a `torch.save` zip are read; a URL's references point at
 * it, bytes and Blobs need `{ url }`. In Node, paths too (`@npyts/core/node`). `openWeights` reads a
 * set back as one weights object. See docs/larger-than-memory.md, "Read in place with xarray, dask and zarr".
 * @example
 * const set = await referencesOf('https://example.org/data.npy', { zarrFormat: 2 });
 * // xarray.open_dataset('reference://', engine='zarr', backend_kwargs={'storage_options': {'fo': set}, 'consolidated': False})
 */
export async function referencesOf(input: NpySource | readonly NpySource[], options: ReferencesOfOptions = {}): Promise<ReferenceSet> {
  checkOptions('referencesOf', options, REFERENCES_OF_KEYS);
  const list = Array.isArray(input) ? (input as readonly NpySource[]) : [input as NpySource];
  const inputs = list.map((one) => {
    const url = typeof one === 'string' || one instanceof URL ? resolveUrl(one) : null;
    return referenceInput(one, url, placeOf(url, options), () => sourceOf(one, { ...options, tailBytes: 1 }));
  });
  return referencesOfSources(inputs, options);
}

/** An input of {@link referencesOfSources}: `given` (a source the caller gave is theirs to close), where its references point, and its place. */
export function referenceInput(given: unknown, url: string | null, place: Place | null, open: () => Promise<ByteSource>): ReferenceInput {
  return {
    url,
    place,
    label: url ?? 'the input',
    open: async () => {
      const source = await open();
      return { source, close: async () => (source === given ? undefined : source.close?.()) };
    },
  };
}
