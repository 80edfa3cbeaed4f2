/**
 * An HDF5 file over any byte source, as h5py and Keras write it: groups, datasets and their
 * attributes, each read when asked for, by range (a remote file moves the metadata walked and the
 * datasets read). The subset read: superblocks 0 to 3 (at byte 0 or past a user block), object
 * headers 1 and 2, old-style groups (symbol tables) and compact new-style ones (link messages),
 * contiguous and compact datasets of integers, IEEE floats and fixed-length strings, datasets with
 * no value (h5py's `Empty`), attributes of those and of variable-length strings. The rest (chunked,
 * filtered or external datasets, dense storage, soft and external links, other datatypes) is refused
 * by name: `HDF5_UNSUPPORTED`.
 */
import type { NdArray } from '../array/ndarray.js';
import { NpyError, unknownKey, withWhere } from '../errors.js';
import { parseDescr, type DType } from '../format/dtype.js';
import type { NpyHeader } from '../format/header.js';
import { type AsyncByteSource, type ByteSource, bytesSource, checkedReads, windowSource } from '../io/byte-source.js';
import { npyReaderOf } from '../io/open.js';
import { Cursor, MetaReader, UNDEFINED, bad, unsupported } from './bytes.js';
import {
  type DatasetHeader,
  GlobalHeaps,
  type Link,
  type ObjectHeader,
  type RawAttribute,
  attributesOf,
  datasetOf,
  isGroup,
  linksOf,
  readObjectHeader,
  readSuperblock,
  refuseExternal,
} from './objects.js';
import { hdf5Start } from './signature.js';
import { countOf, dtypeOf, fixedString, vlenString } from './types.js';

/**
 * An attribute's value as h5py reads it: a string (fixed or variable length), a number (float16 to
 * float64, integers; a bigint for a 64-bit integer past 2^53), an array of strings, or an `NdArray`
 * of numbers (and a 0-d one for a scalar of opaque bytes); null for an attribute with no value (a
 * null dataspace: h5py's `h5py.Empty`).
 */
export type Hdf5AttributeValue = string | number | bigint | string[] | NdArray | null;

/** Options of one read: `signal` cancels it. */
export interface Hdf5ReadOptions {
  signal?: AbortSignal | undefined;
}

/** What the file's objects share: the metadata reader, the global heaps, the data source. */
interface Context {
  readonly meta: MetaReader;
  readonly heaps: GlobalHeaps;
  /** The source, read through a check that the file is open. */
  readonly data: AsyncByteSource;
  /** The root group's object header. */
  readonly root: number;
  /** Where the HDF5 data starts in the source (after a user block; 0 without one): addresses count from here. */
  readonly base: number;
}

/** Most groups a path may cross: deeper paths are refused (h5py's own limit is memory). */
const MAX_DEPTH = 1024;

/** The parts of an object shared by groups and datasets: where it is, and its attributes. */
abstract class Hdf5Object {
  constructor(
    protected readonly ctx: Context,
    protected readonly header: ObjectHeader,
    /** The object's path from the root (`'/'`, `'/model_weights/dense'`). */
    readonly path: string,
  ) {}

  /** The last part of the path (`'dense'`; `''` for the root). */
  get name(): string {
    return this.path.slice(this.path.lastIndexOf('/') + 1);
  }

  /** The object header's byte in the file (objects linked twice have one). */
  get address(): number {
    return this.header.address;
  }

  /**
   * Every attribute, in h5py's order (by name, or by creation order where the object tracks it:
   * `track_order=True`): strings, numbers, arrays (see {@link Hdf5AttributeValue}); a datatype npyts
   * does not read is refused naming the attribute. The object has no prototype: every name the file
   * has is an own property (`__proto__` and `constructor` too), and no other name is there.
   * @example
   * (await group.attrs()).name;   // 'dense'
   */
  async attrs(options: Hdf5ReadOptions = {}): Promise<Record<string, Hdf5AttributeValue>> {
    // No prototype: a name from the file is only ever an own property (an attribute named `__proto__` is kept, not a prototype).
    const out: Record<string, Hdf5AttributeValue> = Object.create(null);
    for (const a of attributesOf(this.header, this.ctx.meta.sizes, this.path)) {
      try {
        out[a.name] = await attributeValue(this.ctx, a, `attribute '${a.name}' of ${this.path}`, options.signal);
      } catch (e) {
        throw withWhere(e, { file: this.ctx.meta.name, member: `${this.path} @${a.name}` });
      }
    }
    return out;
  }
}

/**
 * A group: its members by name (`children`), one by path (`get`), its attributes.
 * @example
 * const g = await file.root.get('model_weights/dense');
 * if (g.kind === 'group') console.log(await g.children());
 */
export class Hdf5Group extends Hdf5Object {
  readonly kind = 'group' as const;
  private links: Promise<Map<string, Link>> | null = null;

  /** The names of the group's members, as h5py lists them (by name, or by creation order where the group tracks it). */
  async children(options: Hdf5ReadOptions = {}): Promise<string[]> {
    return [...(await this.linkMap(options.signal)).keys()];
  }

  /**
   * The member at `path` below this group (`'a/b/c'`; a leading `/` starts at the root), a group or
   * a dataset; `NPZ_KEY` for a name the group lacks, listing those it has.
   * @example
   * const w = await file.root.get('layers/dense/vars/0');
   * if (w.kind === 'dataset') await w.read();
   */
  async get(path: string, options: Hdf5ReadOptions = {}): Promise<Hdf5Group | Hdf5Dataset> {
    const parts = path.split('/').filter((p) => p !== '' && p !== '.');
    if (parts.length > MAX_DEPTH) throw new NpyError('BAD_OPTION', `the path '${path}' has ${parts.length} parts; ${MAX_DEPTH} at most`);
    let here: Hdf5Group | Hdf5Dataset = path.startsWith('/') ? await this.rootOf(options.signal) : this;
    for (const part of parts) {
      if (here.kind !== 'group') throw new NpyError('NPZ_KEY', `${here.path} is a dataset, not a group: it has no member '${part}' (${path})`);
      here = await here.child(part, options.signal);
    }
    return here;
  }

  /** The member `name` of this group, opened. */
  private async child(name: string, signal?: AbortSignal): Promise<Hdf5Group | Hdf5Dataset> {
    const links = await this.linkMap(signal);
    const link = links.get(name);
    const path = `${this.path === '/' ? '' : this.path}/${name}`;
    if (!link) throw withWhere(unknownKey(name, [...links.keys()], `group ${this.path}`), { file: this.ctx.meta.name });
    if (link.kind !== 'hard') throw withWhere(unsupported(`${path} is ${link.what}, which npyts does not follow`), { file: this.ctx.meta.name });
    return openObject(this.ctx, link.address, path, signal);
  }

  private async rootOf(signal?: AbortSignal): Promise<Hdf5Group> {
    return this.path === '/' ? this : (openObject(this.ctx, this.ctx.root, '/', signal) as Promise<Hdf5Group>);
  }

  private linkMap(signal?: AbortSignal): Promise<Map<string, Link>> {
    if (!this.links) {
      this.links = linksOf(this.ctx.meta, this.header, this.path, signal).catch((e: unknown) => {
        this.links = null;
        throw withWhere(e, { file: this.ctx.meta.name });
      });
    }
    return this.links;
  }
}

/**
 * A dataset: its `shape` and `dtype` (read from its header when it was opened) and `read`, which
 * moves its bytes (only them) and returns the npyts array. A dataset with no value (a null
 * dataspace: h5py's `h5py.Empty`, whose `shape` is None) has `shape` null and reads as null.
 * @example
 * const d = await file.root.get('a');
 * if (d.kind === 'dataset') { d.shape; d.dtype.str; const a = await d.read(); }
 */
export class Hdf5Dataset extends Hdf5Object {
  readonly kind = 'dataset' as const;
  /** The dataset's shape (`[]` for a scalar); null for a dataset with no value (h5py's `Empty`). */
  readonly shape: readonly number[] | null;
  /** The npyts dtype its values read as (`<f4`, `>i8`, `|S5`). */
  readonly dtype: DType;
  private readonly stored: DatasetHeader;

  /** @internal */
  constructor(ctx: Context, header: ObjectHeader, path: string) {
    super(ctx, header, path);
    this.stored = datasetOf(header, ctx.meta.sizes, path);
    this.shape = this.stored.shape;
    this.dtype = dtypeOf(this.stored.type, path);
  }

  /** The bytes the dataset's values take (0 for one with no value). */
  get byteLength(): number {
    return this.shape === null ? 0 : countOf(this.shape, this.path) * this.dtype.itemsize;
  }

  /**
   * The byte of the file where the dataset's bytes are (past a user block where the file has one);
   * null for a compact dataset, whose bytes are in its header; negative where no storage is allocated.
   */
  get dataOffset(): number | null {
    const layout = this.stored.layout;
    if (layout.kind !== 'contiguous') return null;
    return layout.address === UNDEFINED ? UNDEFINED : this.ctx.base + layout.address;
  }

  /**
   * The dataset's values, read by range (only its bytes move); null for a dataset with no value
   * (`shape` null: h5py reads it as `h5py.Empty`). `as` reads the same bytes as another dtype of the
   * same item size (Keras stores bfloat16 as uint16: `{ as: 'bfloat16' }`).
   * @example
   * const kernel = await d.read();   // NdArray<'<f4'>
   */
  async read(
    options: Hdf5ReadOptions & { as?: DType | string } = {},
    /** @internal Its bytes, already read (KerasFile's neighbours read together). */ held?: Uint8Array,
  ): Promise<NdArray | null> {
    const { signal } = options;
    const dtype = options.as === undefined ? this.dtype : parseDescr(options.as);
    if (dtype.itemsize !== this.dtype.itemsize) {
      throw new NpyError('BAD_OPTION', `${this.path} holds ${this.dtype.itemsize}-byte values (${this.dtype.name}); it cannot be read as ${dtype.name}`);
    }
    if (this.shape === null) return null;
    try {
      const size = countOf(this.shape, this.path);
      const bytes = size * dtype.itemsize;
      const layout = this.stored.layout;
      let source: ByteSource;
      let offset = 0;
      if (layout.kind === 'compact') {
        if (layout.data.length < bytes) throw bad(`${this.path} is compact with ${layout.data.length} bytes; its shape and dtype need ${bytes}`);
        source = bytesSource(layout.data, this.path);
      } else {
        if (layout.size >= 0 && layout.size < bytes) throw bad(`${this.path} stores ${layout.size} bytes; its shape and dtype need ${bytes}`);
        if (layout.address === UNDEFINED && bytes > 0) {
          throw unsupported(
            `${this.path} has no storage allocated (it was created without data and never written): its values are the fill value, which npyts does not read`,
          );
        }
        if (bytes > 0) this.ctx.meta.check(layout.address, bytes, `the data of ${this.path}`);
        if (held !== undefined && held.length === bytes) {
          // Bytes read once for this array and its neighbours, never reused: the array is a view of them where aligned.
          source = { ...bytesSource(held, this.path), views: true };
        } else {
          source = this.ctx.data;
          offset = Math.max(0, layout.address);
        }
      }
      return await readArray(source, offset, dtype, this.shape, this.path, signal);
    } catch (e) {
      throw withWhere(e, { file: this.ctx.meta.name, member: this.path });
    }
  }
}

/** The C-order array of `shape` at `offset` of `source` (checked to be there by the caller). */
function readArray(source: ByteSource, offset: number, dtype: DType, shape: readonly number[], name: string, signal?: AbortSignal): Promise<NdArray> {
  const size = countOf(shape, name);
  const header: NpyHeader = { version: [1, 0], dtype, shape: [...shape], fortranOrder: false, dataOffset: offset, size, dataBytes: size * dtype.itemsize };
  return npyReaderOf(source, header, name).read(
    shape.map(() => 0),
    [...shape],
    { signal },
  );
}

/** Open the object at `address` as a group or a dataset. */
async function openObject(ctx: Context, address: number, path: string, signal?: AbortSignal): Promise<Hdf5Group | Hdf5Dataset> {
  try {
    ctx.meta.check(address, 16, `the object header of ${path}`);
    const header = await readObjectHeader(ctx.meta, address, signal);
    if (isGroup(header)) return new Hdf5Group(ctx, header, path);
    await refuseExternal(ctx.meta, header, path, signal);
    return new Hdf5Dataset(ctx, header, path);
  } catch (e) {
    throw withWhere(e, { file: ctx.meta.name, member: path });
  }
}

/** One attribute's value, decoded. */
async function attributeValue(ctx: Context, a: RawAttribute, where: string, signal?: AbortSignal): Promise<Hdf5AttributeValue> {
  if (a.shape === null) return null;
  const count = countOf(a.shape, where);
  const t = a.type;
  if (count * t.size > a.data.length) throw bad(`${where} claims ${count} values of ${t.size} bytes; its message holds ${a.data.length}`);
  const scalar = a.shape.length === 0;
  if (t.kind === 'string' || t.kind === 'vlen-string') {
    const strings: string[] = [];
    for (let i = 0; i < count; i++) {
      const item = a.data.subarray(i * t.size, (i + 1) * t.size);
      if (t.kind === 'string') {
        strings.push(fixedString(item, t.pad));
      } else {
        const c = new Cursor(item, a.at + i * t.size, where);
        const length = c.u32();
        const collection = c.uint(ctx.meta.sizes.offsets);
        const index = c.u32();
        if (length === 0) {
          strings.push('');
          continue;
        }
        const object = await ctx.heaps.object(collection, index, signal);
        if (length > object.length) throw bad(`${where} claims a string of ${length} bytes in a heap object of ${object.length}`);
        strings.push(vlenString(object.subarray(0, length)));
      }
    }
    return scalar ? strings[0]! : strings;
  }
  const dtype = dtypeOf(t, where);
  const array = await readArray(bytesSource(a.data.slice(0, count * t.size), where), 0, dtype, a.shape, where, signal);
  // A scalar number is decoded as an array's element is (float16 from its bits, either byte order); opaque bytes stay a 0-d array.
  if (!scalar || dtype.kind === 'V') return array;
  const v = array.get();
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  throw unsupported(`${where} is a scalar of ${dtype.name}, which npyts does not read as an attribute`);
}

/**
 * An open HDF5 file: its `root` group, from which every group and dataset is reached by path.
 * @example
 * const f = await openHdf5('model.weights.h5');
 * const d = await f.get('layers/dense/vars/0');
 * if (d.kind === 'dataset') console.log(d.shape, await d.read());
 */
export class Hdf5File implements AsyncDisposable {
  /** The root group (`'/'`). */
  readonly root: Hdf5Group;
  /** The superblock's version (h5py writes 0; 2 or 3 with `libver='latest'`). */
  readonly superblockVersion: number;
  private closed = false;

  private constructor(
    readonly source: ByteSource,
    root: Hdf5Group,
    version: number,
  ) {
    this.root = root;
    this.superblockVersion = version;
  }

  /**
   * Open an HDF5 file over any source: the superblock and the root group's header are read now;
   * groups, attributes and datasets when asked for.
   * @example
   * const f = await Hdf5File.open(blobSource(file));
   */
  static async open(source: ByteSource, options: Hdf5ReadOptions = {}): Promise<Hdf5File> {
    const { signal } = options;
    try {
      // `file` exists once the root is open: every later read checks it was not closed.
      let file: Hdf5File | null = null;
      const whole = checkedReads(source, () => file?.checkOpen());
      let meta = new MetaReader(whole);
      const base = await hdf5Start(async (at, n) => (await meta.cursor(at, n, 'the HDF5 signature', signal)).bytes, meta.size);
      if (base === null) {
        throw bad(
          `${meta.name} is not an HDF5 file: it has no HDF5 signature (\\x89HDF\\r\\n\\x1a\\n) at byte 0, nor after a user block at byte 512, 1024, 2048, …`,
        );
      }
      // After a user block, the file's addresses count from its superblock: the rest is read through a window.
      const data = base === 0 ? whole : windowSource(whole, base, whole.size - base);
      if (base !== 0) meta = new MetaReader(data);
      const sb = await readSuperblock(meta, signal);
      meta.sizes = sb.sizes;
      const ctx: Context = { meta, heaps: new GlobalHeaps(meta), data, root: sb.root, base };
      const root = await openObject(ctx, sb.root, '/', signal);
      if (root.kind !== 'group') throw bad(`the root object of ${meta.name} (at byte ${sb.root}) is not a group`);
      file = new Hdf5File(source, root, sb.version);
      return file;
    } catch (e) {
      throw withWhere(e, { file: source.name ?? 'the HDF5 file' });
    }
  }

  /** The group or dataset at `path` from the root (`'model_weights/dense/dense/kernel:0'`). */
  get(path: string, options: Hdf5ReadOptions = {}): Promise<Hdf5Group | Hdf5Dataset> {
    this.checkOpen();
    return this.root.get(path, options);
  }

  /** Release the source; later reads of data fail with CLOSED. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.source.close?.();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** @internal */
  checkOpen(): void {
    if (this.closed) throw new NpyError('CLOSED', `${this.source.name ?? 'the HDF5 file'} is closed`);
  }
}
