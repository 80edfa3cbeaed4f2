/**
 * Reading a reference set (kerchunk's JSON, version 1, with Zarr v2 or v3 metadata) as one weight
 * file: each Zarr array is a tensor whose chunks are read from the byte ranges (or inline text) its
 * references name. The files referenced are found through the set's place, by the sibling rule of
 * sharded sets: a relative name, or an absolute path or URL under the set's folder; anything else is
 * refused (`UNSAFE_PATH`) before a request is made. Uncompressed chunks only (C or Fortran order, or
 * v3's transpose of any permutation), cut along one axis (the slowest: what `referencesOf` writes);
 * a set that is not that is refused by name.
 */
import type { NdArray } from '../array/ndarray.js';
import { allocateBuffer } from '../array/memory.js';
import { NpyError, unknownKey, withWhere } from '../errors.js';
import { type DType, parseDescr } from '../format/dtype.js';
import { matchesDescr, type NpyHeader } from '../format/header.js';
import { isPromise, type ByteSource } from '../io/byte-source.js';
import { fromBase64 } from '../io/parts.js';
import { getEvery } from '../io/settle.js';
import { arrayOfData } from '../npy.js';
import { denseStrides, gather } from '../array/strides.js';
import { checkHeaderBytes } from '../weights/header-cap.js';
import type { Place } from '../weights/place.js';
import { checkKey, hasScheme, openKey } from '../store/key.js';
import type { FormatOptions, TensorFile, TensorInfo, TensorReadOptions } from '../weights/tensor-file.js';
import { chunkKey, descrOfV3, zarrRefusal, type ZarrFormat } from './zarr.js';

/** Tensors read at once by getAll. */
const TENSORS_IN_FLIGHT = 4;

/** A reference: inline text (`base64:` for bytes), or `[url]` (the whole file) or `[url, offset, length]`. */
type Ref = string | readonly unknown[];

/** One Zarr array of the set: where each chunk along its slowest axis is. */
export interface RefArray {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly fortranOrder: boolean;
  /** The axes in the order the bytes lie (slowest first), where neither C nor Fortran order: read, then gathered into C order. */
  readonly permutation: readonly number[] | null;
  /** The axis its chunks cut (0, the last in Fortran order, or the permutation's first), and rows of it a chunk holds. */
  readonly axis: number;
  readonly rows: number;
  /** The references of its chunks, in order along the axis. */
  readonly chunks: readonly Ref[];
}

const bad = (message: string): NpyError => new NpyError('BAD_REFERENCES', message);

/** A reference set's first bytes: a JSON object whose first key is `version` or `refs`. */
export function isReferenceSet(first: Uint8Array): boolean {
  return /^\s*\{\s*"(?:version|refs)"\s*:/.test(new TextDecoder('latin1').decode(first));
}

/** A metadata document of the set (inline JSON text), parsed; `what` names it. */
function metadataOf(ref: Ref | undefined, what: string): Record<string, unknown> {
  if (typeof ref !== 'string') throw bad(`${what} is not inline JSON text`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(ref.startsWith('base64:') ? new TextDecoder().decode(fromBase64(ref.slice(7))) : ref);
  } catch {
    throw bad(`${what} is not JSON`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw bad(`${what} is not a JSON object`);
  return parsed as Record<string, unknown>;
}

const isCount = (v: unknown, least: number): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= least;

/** A shape or chunk shape of the metadata, checked: non-negative (chunks: positive) safe integers. */
function axesOf(v: unknown, least: number, what: string): number[] {
  if (!Array.isArray(v) || !v.every((d) => isCount(d, least))) throw bad(`${what} is not a list of integers of at least ${least}`);
  return v as number[];
}

/**
 * An array's dtype, shape, order, chunk shape and chunk-key encoding from its metadata: Zarr v2's
 * `.zarray` (no compressor, no filters) or v3's `zarr.json` (codecs: an optional transpose, C or
 * Fortran order, then `bytes`).
 */
function parseArray(meta: Record<string, unknown>, format: ZarrFormat, name: string) {
  const shape = axesOf(meta.shape, 0, `the shape of '${name}'`);
  let dtype: DType;
  let fortranOrder = false;
  /** The axes in the order the bytes lie, where neither C nor Fortran order. */
  let permutation: number[] | null = null;
  let chunks: number[];
  let key: (at: readonly number[]) => string;
  if (format === 2) {
    if (meta.compressor !== null && meta.compressor !== undefined)
      throw new NpyError(
        'NO_COUNTERPART',
        `array '${name}' is compressed (${JSON.stringify(meta.compressor).slice(0, 80)}): npyts reads sets of uncompressed chunks`,
      );
    if (Array.isArray(meta.filters) ? meta.filters.length > 0 : meta.filters !== null && meta.filters !== undefined)
      throw new NpyError('NO_COUNTERPART', `array '${name}' has filters: npyts reads sets of unfiltered chunks`);
    if (typeof meta.dtype !== 'string') throw new NpyError('NO_COUNTERPART', `array '${name}' has a record dtype, which Zarr references do not carry exactly`);
    dtype = parseDescr(meta.dtype);
    if (meta.order !== 'C' && meta.order !== 'F') throw bad(`array '${name}' has order ${JSON.stringify(meta.order)}, not C or F`);
    fortranOrder = meta.order === 'F';
    chunks = axesOf(meta.chunks, 1, `the chunks of '${name}'`);
    const separator = meta.dimension_separator ?? '.';
    if (separator !== '.' && separator !== '/') throw bad(`array '${name}' has dimension_separator ${JSON.stringify(separator)}`);
    key = (at) => chunkKey(at, 2, separator);
  } else {
    const grid = meta.chunk_grid as { name?: unknown; configuration?: { chunk_shape?: unknown } } | undefined;
    if (grid?.name !== 'regular') throw new NpyError('NO_COUNTERPART', `array '${name}' has a chunk grid other than 'regular'`);
    chunks = axesOf(grid.configuration?.chunk_shape, 1, `the chunk shape of '${name}'`);
    const encoding = meta.chunk_key_encoding as { name?: unknown; configuration?: { separator?: unknown } } | undefined;
    const separator = encoding?.configuration?.separator ?? (encoding?.name === 'v2' ? '.' : '/');
    if ((encoding?.name !== 'default' && encoding?.name !== 'v2') || (separator !== '.' && separator !== '/'))
      throw bad(`array '${name}' has a chunk key encoding npyts does not know`);
    key = (at) => chunkKey(at, encoding.name === 'v2' ? 2 : 3, separator);
    const codecs = Array.isArray(meta.codecs) ? (meta.codecs as { name?: unknown; configuration?: Record<string, unknown> }[]) : [];
    let at = 0;
    if (codecs[0]?.name === 'transpose') {
      const given = codecs[0].configuration?.order;
      const reversed = shape.map((_, i) => shape.length - 1 - i);
      const order = given === 'F' ? reversed : given === 'C' ? shape.map((_, i) => i) : given;
      if (!Array.isArray(order) || order.length !== shape.length || !shape.every((_, i) => order.includes(i)))
        throw bad(`array '${name}' has a transpose codec whose order ${JSON.stringify(given)} is not a permutation of its ${shape.length} axes`);
      if (shape.length > 1 && order.every((o, i) => o === reversed[i])) fortranOrder = true;
      else if (!order.every((o, i) => o === i)) permutation = order as number[];
      at = 1;
    }
    if (codecs.length !== at + 1 || codecs[at]?.name !== 'bytes') {
      throw new NpyError(
        'NO_COUNTERPART',
        `array '${name}' has codecs ${codecs.map((c) => String(c?.name)).join(', ')}: npyts reads sets of uncompressed chunks (transpose, then bytes)`,
      );
    }
    const endian = codecs[at]!.configuration?.endian ?? 'little';
    if (endian !== 'little' && endian !== 'big') throw bad(`array '${name}' has endian ${JSON.stringify(endian)}`);
    const descr = typeof meta.data_type === 'string' ? descrOfV3(meta.data_type, endian) : null;
    if (descr === null)
      throw new NpyError('NO_COUNTERPART', `array '${name}' has data type ${JSON.stringify(meta.data_type)}, not a Zarr v3 core type npyts reads`);
    dtype = parseDescr(descr);
  }
  const refused = zarrRefusal(dtype, 2);
  if (refused !== null) throw new NpyError('NO_COUNTERPART', `array '${name}': ${refused}`);
  if (chunks.length !== shape.length) throw new NpyError('BAD_SHAPE', `array '${name}' has ${shape.length} axes and chunks of ${chunks.length}`);
  return { dtype, shape, fortranOrder, permutation, chunks, key };
}

/**
 * A reference set opened as a weight file: its arrays by path (`group/array`), each read from its
 * chunks' references when asked for.
 */
export class ReferenceSetFile implements TensorFile {
  readonly format = 'references';
  readonly metadata: Readonly<Record<string, unknown>> = {};
  private readonly opened = new Map<string, Promise<ByteSource>>();

  private constructor(
    private readonly arrays: ReadonlyMap<string, RefArray>,
    private readonly place: Place | null,
    private readonly setName: string,
    private readonly options: FormatOptions,
  ) {}

  get names(): string[] {
    return [...this.arrays.keys()];
  }

  /** The set in `source` (read whole: a set is its metadata and references), every array's metadata and chunk references checked. */
  static async open(source: ByteSource, place: Place | null, options: FormatOptions): Promise<ReferenceSetFile> {
    const setName = source.name ?? 'the reference set';
    checkHeaderBytes(source.size, `the reference set is ${source.size} bytes`, 0);
    let parsed: unknown;
    try {
      parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(await source.read(0, source.size, { signal: options.signal })));
    } catch (e) {
      if (e instanceof NpyError) throw e;
      throw bad('the reference set is not UTF-8 JSON');
    }
    await source.close?.();
    const doc = parsed as { version?: unknown; refs?: unknown; templates?: unknown; gen?: unknown };
    if (doc.version !== 1) throw bad(`the reference set has version ${JSON.stringify(doc.version)}: npyts reads kerchunk's version 1`);
    if ((doc.templates && Object.keys(doc.templates).length) || (Array.isArray(doc.gen) && doc.gen.length))
      throw new NpyError('NO_COUNTERPART', "the reference set has templates or generated references ('templates', 'gen'), which npyts does not expand");
    if (doc.refs === null || typeof doc.refs !== 'object' || Array.isArray(doc.refs)) throw bad("the reference set has no 'refs' object");
    // A Map of the file's keys: no look-up of a key reaches an inherited property.
    const refs = new Map<string, Ref>(Object.entries(doc.refs as Record<string, Ref>));
    const arrays = new Map<string, RefArray>();
    for (const [k, v] of refs) {
      const v2 = k === '.zarray' || k.endsWith('/.zarray');
      const v3 = (k === 'zarr.json' || k.endsWith('/zarr.json')) && metadataOf(v, k).node_type === 'array';
      if (!v2 && !v3) continue;
      const name = k.slice(0, Math.max(0, k.lastIndexOf('/')));
      try {
        if (name === '') throw new NpyError('NO_COUNTERPART', "the set's root is an array: npyts reads a set whose root is a group of arrays");
        const a = parseArray(metadataOf(v, k), v2 ? 2 : 3, name);
        arrays.set(name, chunksOf(name, a, refs));
      } catch (e) {
        throw withWhere(e, { member: name });
      }
    }
    const file = new ReferenceSetFile(arrays, place, setName, options);
    // Every file the set names is checked by the place's rule now, before any request.
    for (const [name, a] of arrays) for (const ref of a.chunks) if (typeof ref !== 'string') file.siblingOf(ref[0] as string, name);
    return file;
  }

  /** The name of a referenced file in the set's place, checked (`UNSAFE_PATH` outside it). */
  private siblingOf(target: string, array: string): string {
    const what = `a chunk of '${array}'`;
    if (!this.place) {
      throw new NpyError(
        'BAD_OPTION',
        `${this.setName} is a reference set whose chunks are in other files: open it by its path or URL, or pass { place } or { resolve }`,
      );
    }
    const absolute = hasScheme(target) || target.startsWith('/');
    const name = absolute ? (this.place.inside?.(target) ?? null) : target;
    if (name === null)
      throw new NpyError(
        'UNSAFE_PATH',
        `${this.setName} names ${what} in ${target.slice(0, 200)}, outside the set's place (${this.place.where}): npyts reads the files beside a set: make the set beside its files, or with names relative to it (referencesOf's { url: '{name}' }, npyts refs --url '{name}')`,
      );
    checkKey(this.place, name, what);
    return name;
  }

  private array(name: string): RefArray {
    const a = this.arrays.get(name);
    if (!a) throw unknownKey(name, this.names, 'the reference set');
    return a;
  }

  async info(name: string): Promise<TensorInfo> {
    const a = this.array(name);
    return { dtype: a.dtype, shape: a.shape };
  }

  /** A referenced file, opened once. */
  private source(name: string): Promise<ByteSource> {
    let s = this.opened.get(name);
    if (!s) {
      s = openKey(this.place!, name, { ...this.options });
      this.opened.set(name, s);
    }
    return s;
  }

  /**
   * Where an array's bytes are, in order: each chunk's bytes (inline) or byte range of a file, checked
   * to be the chunk's size and to lie in its file, the last cut to the rows in the array. Chunks that
   * share bytes of a file are refused, so that what is allocated for them is what the files hold.
   * @internal
   */
  async pieces(name: string): Promise<{ readonly array: RefArray; readonly bytes: number; readonly pieces: readonly RefPiece[] }> {
    const a = this.array(name);
    const size = a.shape.reduce((x, y) => x * y, 1);
    const rowBytes = a.dtype.itemsize * a.shape.reduce((x, d, i) => (i === a.axis ? x : x * d), 1);
    const chunkBytes = rowBytes * a.rows;
    const bytes = size * a.dtype.itemsize;
    const pieces: RefPiece[] = [];
    const spansByFile = new Map<string, [number, number][]>();
    let at = 0;
    for (const ref of a.chunks) {
      // The last chunk of an axis that its chunks do not divide holds rows past the end: only those in the array are kept.
      const n = Math.min(chunkBytes, bytes - at);
      at += n;
      if (typeof ref === 'string') {
        const inline = ref.startsWith('base64:') ? fromBase64(ref.slice(7)) : new TextEncoder().encode(ref);
        if (inline.length !== chunkBytes) throw sizeMismatch(name, inline.length, chunkBytes, 'inline');
        pieces.push({ bytes: inline.subarray(0, n), source: null, file: null, offset: 0, length: n });
        continue;
      }
      const file = this.siblingOf(ref[0] as string, name);
      const source = await this.source(file);
      const offset = ref.length === 1 ? 0 : (ref[1] as number);
      const length = ref.length === 1 ? source.size : (ref[2] as number);
      if (length !== chunkBytes) throw sizeMismatch(name, length, chunkBytes, file);
      if (offset + length > source.size) {
        throw withWhere(new NpyError('DATA_TRUNCATED', `a chunk of '${name}' is bytes ${offset} to ${offset + length} of ${file}, which has ${source.size}`), {
          file,
        });
      }
      pieces.push({ bytes: null, source, file, offset, length: n });
      let spans = spansByFile.get(file);
      if (!spans) spansByFile.set(file, (spans = []));
      spans.push([offset, offset + length]);
    }
    // Chunks that share bytes of a file would make the array larger than the files hold (the same
    // kilobyte named a million times): refused, so that what is allocated is bounded by the bytes.
    for (const [file, spans] of spansByFile) {
      spans.sort((x, y) => x[0] - y[0]);
      for (let i = 1; i < spans.length; i++) {
        if (spans[i]![0] < spans[i - 1]![1]) {
          throw withWhere(
            bad(`two chunks of '${name}' share bytes of ${file} (bytes ${spans[i]![0]} to ${spans[i - 1]![1]}): each chunk has bytes of its own`),
            { file },
          );
        }
      }
    }
    return { array: a, bytes, pieces };
  }

  /**
   * One array. Where its chunks are one run of one file's bytes (a set made by `referencesOf` with
   * one chunk, or adjacent chunks), it is one read of that run: over a memory map, a view of the
   * map, as the file itself would give; otherwise its chunks are read one after another and joined.
   */
  async get(name: string, options: TensorReadOptions = {}): Promise<NdArray> {
    const a = this.array(name);
    if (options.expect !== undefined && !matchesDescr(a.dtype, options.expect)) {
      throw new NpyError('UNEXPECTED_DTYPE', `array '${name}' is ${a.dtype.name}, not ${String(options.expect)}`);
    }
    try {
      // The ranges first, each checked against its file's size: what is allocated is what the files hold.
      const { bytes, pieces } = await this.pieces(name);
      const header = npyHeaderOf(a);
      const run = oneRun(pieces);
      if (run && !a.permutation) {
        const reading = run.source.read(run.offset, bytes, { signal: options.signal });
        const got = await reading;
        // A map's view is kept as it is; an async read's buffer is this array's own; bytes a source holds in memory are copied.
        const viewed = run.source.views === true;
        return arrayOfData(header, got.buffer, got.byteOffset, { owned: !viewed && isPromise(reading), copy: !viewed && !isPromise(reading) });
      }
      const out = new Uint8Array(allocateBuffer(bytes));
      let at = 0;
      for (const r of pieces) {
        out.set(r.bytes ?? (await r.source.read(r.offset, r.length, { signal: options.signal })), at);
        at += r.length;
      }
      let data = out;
      if (a.permutation) {
        // The bytes are C order of the axes in the permutation's order: each axis's stride is its place's there.
        const p = a.permutation;
        const stored = denseStrides(
          p.map((k) => a.shape[k]!),
          false,
        );
        const strides = a.shape.map((_, k) => stored[p.indexOf(k)]!);
        data = new Uint8Array(allocateBuffer(out.length));
        gather(out, data, a.shape, strides, a.dtype.itemsize);
      }
      return arrayOfData(header, data.buffer, 0, { owned: true });
    } catch (e) {
      throw withWhere(e, { member: name });
    }
  }

  getAll(options: { signal?: AbortSignal | undefined } = {}): Promise<Map<string, NdArray>> {
    return getEvery(this.names, TENSORS_IN_FLIGHT, (name) => this.get(name, options));
  }

  async close(): Promise<void> {
    const opened = [...this.opened.values()];
    this.opened.clear();
    for (const s of opened) await (await s.catch(() => null))?.close?.();
  }
}

/** A piece of an array's bytes: inline bytes, or `length` bytes at `offset` of a referenced file. */
export type RefPiece =
  | { readonly bytes: Uint8Array; readonly source: null; readonly file: null; readonly offset: number; readonly length: number }
  | { readonly bytes: null; readonly source: ByteSource; readonly file: string; readonly offset: number; readonly length: number };

/** The one range of one file that `pieces` are, in order and adjacent; null where they are not (or are inline). */
function oneRun(pieces: readonly RefPiece[]): { source: ByteSource; offset: number } | null {
  const first = pieces[0];
  if (!first || first.bytes !== null) return null;
  let end = first.offset;
  for (const p of pieces) {
    if (p.bytes !== null || p.source !== first.source || p.offset !== end) return null;
    end += p.length;
  }
  return { source: first.source, offset: first.offset };
}

/** An array of the set as a .npy header describes it (its data at offset 0: the bytes its pieces join to). */
export function npyHeaderOf(a: RefArray): NpyHeader {
  const size = a.shape.reduce((x, y) => x * y, 1);
  return { version: [1, 0], dtype: a.dtype, shape: [...a.shape], fortranOrder: a.fortranOrder, dataOffset: 0, size, dataBytes: size * a.dtype.itemsize };
}

function sizeMismatch(name: string, length: number, chunkBytes: number, where: string): NpyError {
  return new NpyError(
    'BAD_SHAPE',
    `a chunk of '${name}' (${where}) is ${length} bytes; its chunk shape and dtype make ${chunkBytes}: the set's chunk grid does not match its references`,
  );
}

/**
 * The chunk references of an array, in order along the one axis its chunks cut: every other axis is
 * one chunk of its full length, every chunk of the grid has a reference (a missing chunk would be
 * the fill value, which a set of files does not mean), and each reference is text or `[url]` /
 * `[url, offset, length]`. The grid is counted only after it is known that the set holds that many keys.
 */
function chunksOf(name: string, a: ReturnType<typeof parseArray>, refs: ReadonlyMap<string, Ref>): RefArray {
  const n = a.shape.length;
  const axis = a.permutation ? a.permutation[0]! : a.fortranOrder ? n - 1 : 0;
  for (let i = 0; i < n; i++) {
    if (i !== axis && a.shape[i]! > 0 && a.chunks[i] !== a.shape[i]) {
      throw new NpyError(
        'NO_COUNTERPART',
        `array '${name}' is cut into chunks along axis ${i} too (chunks ${a.chunks.join(', ')} of shape ${a.shape.join(', ')}): npyts reads sets chunked along the slowest axis only`,
      );
    }
  }
  const rows = n === 0 ? 1 : a.chunks[axis]!;
  const empty = a.shape.some((d) => d === 0);
  const count = empty ? 0 : n === 0 ? 1 : Math.ceil(a.shape[axis]! / rows);
  if (count > refs.size)
    throw bad(
      `array '${name}' has a grid of ${count} chunks (shape ${a.shape.join(', ')}, chunks ${a.chunks.join(', ')}); the set holds ${refs.size} references in all`,
    );
  const chunks: Ref[] = [];
  for (let k = 0; k < count; k++) {
    const key = `${name}/${a.key(a.shape.map((_, i) => (i === axis ? k : 0)))}`;
    const ref = refs.get(key);
    if (ref === undefined) throw bad(`array '${name}' has no reference for its chunk ${key}: npyts reads sets whose every chunk is referenced`);
    if (
      typeof ref !== 'string' &&
      !(Array.isArray(ref) && typeof ref[0] === 'string' && (ref.length === 1 || (ref.length === 3 && isCount(ref[1], 0) && isCount(ref[2], 0))))
    )
      throw bad(`the reference of ${key} is neither text nor [url, offset, length]`);
    chunks.push(ref);
  }
  return { dtype: a.dtype, shape: a.shape, fortranOrder: a.fortranOrder, permutation: a.permutation, axis, rows, chunks };
}
