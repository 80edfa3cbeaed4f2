/**
 * A `torch.save` file (the zip format PyTorch has written since 1.6): `<name>/data.pkl`, the
 * checkpoint's pickle, read with PyTorch's weights_only allowlist; `<name>/data/<key>`, each storage's
 * bytes, read by range when a tensor is asked for; `<name>/byteorder`. Tensors keep their storage
 * offset, shape and strides: a slice of a larger storage reads only the slice, a transposed view
 * is read as Fortran order, any other strided view is gathered into C order.
 */
import { NdArray } from '../array/ndarray.js';
import { copyReason as copyReasonAt } from '../array/layout.js';
import { bufferFor } from '../io/reader.js';
import type { TypedArray } from '../format/js-types.js';
import { NpyError, unknownKey, withWhere } from '../errors.js';
import { bad } from '../pickle/vm-values.js';
import type { DType } from '../format/dtype.js';
import type { NpyHeader } from '../format/header.js';
import { matchesDescr } from '../format/header.js';
import { checkedReads, type AsyncByteSource, type ByteSource } from '../io/byte-source.js';
import { npyReaderOf } from '../io/open.js';
import { getEvery } from '../io/settle.js';
import { arrayOfData, type DecodeOptions } from '../npy.js';
import type { NpzArchive } from '../npz/archive.js';
import { STORED, type ZipEntry } from '../npz/zip.js';
import { unpickleFirst, unpickleWith } from '../pickle/unpickler.js';
import { denseStrides, gather } from '../array/strides.js';
import type { GetAllReadOptions, TensorExtent, TensorFile, TensorInfo, TensorReadOptions } from '../weights/tensor-file.js';
import { StorageRef, TensorRef, TorchDType, UnreadTensor, elementBytes, torchDialect } from './pickle-dialect.js';
import { parseDescr } from '../format/dtype.js';
import { TORCH_PICKLE } from './layout.js';

/** Tensors read at once by getAll. */
const TENSORS_IN_FLIGHT = 4;

/** The record folder of a torch.save zip: the one folder whose `data.pkl` is the checkpoint. */
function recordPrefix(archive: NpzArchive): string {
  const pickles = archive.entries.filter((e) => TORCH_PICKLE.test(e.name));
  if (pickles.length !== 1) {
    throw new NpyError('ZIP_FORMAT', `a torch.save file has one <folder>/data.pkl; this zip has ${pickles.length}`);
  }
  return pickles[0]!.name.slice(0, -'data.pkl'.length);
}

/** What a checkpoint names as a tensor: one npyts reads, or one it lists and refuses to read. */
type Tensorish = TensorRef | UnreadTensor;

/** The element type of an untyped storage saved as a value: its bytes. */
const UINT8 = new TorchDType('uint8', parseDescr('|u1'));

/**
 * Every tensor of a checkpoint's value under its dotted path (`model.conv.weight`; list items by
 * index), and every other leaf (numbers, text, None) as metadata under its path. Iterative, so a
 * deeply nested checkpoint costs no stack.
 *
 * Each dict and list is walked once, at the first path that reaches it (depth first, in the
 * pickle's order, which is the order torch.load's dicts iterate in). A later path to the same
 * container (the pickle shares it by a memo reference, or it holds itself) names nothing new: it
 * is kept as an alias of the first path, through which `get` still reaches its tensors
 * (`b.w` reads what `a.w` names when `b` and `a` are one dict). A tensor itself (a leaf) is named at
 * every path, as tied weights are. So the names are at most the items the pickle holds, bounded by
 * its bytes, however its containers share one another: ten levels of ten references to the level
 * below name 100 items, not 10^10.
 */
function flatten(root: unknown): { tensors: Map<string, Tensorish>; metadata: Record<string, unknown>; aliases: Map<string, string> } {
  const tensors = new Map<string, Tensorish>();
  const metadata: Record<string, unknown> = Object.create(null);
  const aliases = new Map<string, string>();
  const work: [string, unknown][] = [['', root]];
  const join = (path: string, key: unknown) => (path === '' ? String(key) : `${path}.${String(key)}`);
  const seen = new Set<string>();
  /** The containers walked, by the path that walked them. */
  const walked = new Map<object, string>();
  const claim = (path: string) => {
    if (seen.has(path))
      throw new NpyError('NAME_CLASH', `the checkpoint names '${path}' twice (a dotted key and a nested one); read it with { root } to pick one`);
    seen.add(path);
  };
  while (work.length) {
    const [path, v] = work.pop()!;
    const container =
      v instanceof Map ||
      (Array.isArray(v) &&
        v.some((x) => x instanceof TensorRef || x instanceof UnreadTensor || x instanceof StorageRef || x instanceof Map || Array.isArray(x)));
    if (container) {
      const first = walked.get(v as object);
      if (first !== undefined) {
        claim(path);
        aliases.set(path, first);
        continue;
      }
      walked.set(v as object, path);
    }
    if (v instanceof TensorRef || v instanceof UnreadTensor) {
      claim(path);
      tensors.set(path, v);
    } else if (v instanceof StorageRef) {
      // A storage saved as a value (not inside a tensor): torch.load gives the storage; npyts the
      // 1-d tensor of all its elements (bytes, for an untyped storage).
      claim(path);
      tensors.set(path, new TensorRef(v, v.element ?? UINT8, 0, [v.count], [1]));
    } else if (v instanceof Map) {
      for (const [k, x] of [...v.entries()].reverse()) work.push([join(path, k), x]);
    } else if (container) {
      const items = v as unknown[];
      for (let i = items.length - 1; i >= 0; i--) work.push([join(path, i), items[i]]);
    } else {
      claim(path);
      metadata[path] = v;
    }
  }
  return { tensors, metadata, aliases };
}

/**
 * The tensor path a name stands for when part of it is an alias (a later path to a shared
 * container, see {@link flatten}): the alias's first path put in its place, until none is left.
 * Each step shortens what is left to resolve, so this ends.
 */
function throughAliases(name: string, aliases: ReadonlyMap<string, string>, tensors: ReadonlyMap<string, unknown>): string {
  let path = name;
  for (let guard = 0; guard <= name.length && !tensors.has(path); guard++) {
    const parts = path.split('.');
    let k = parts.length;
    while (k >= 1 && !aliases.has(parts.slice(0, k).join('.'))) k--;
    if (k === 0) break;
    const first = aliases.get(parts.slice(0, k).join('.'))!;
    const tail = parts.slice(k).join('.');
    path = first === '' ? tail : tail === '' ? first : `${first}.${tail}`;
  }
  return path;
}

/** Whether `strides` lay `shape` out densely in that order (axes of length 1 may have any stride). */
function isDense(shape: readonly number[], strides: readonly number[], fortran: boolean): boolean {
  const want = denseStrides(shape, fortran);
  return shape.every((n, k) => n <= 1 || strides[k] === want[k]);
}

/**
 * The order of a view's axes in its storage, slowest first, where its strides lay it out densely in
 * some order of its axes (a `permute()` of a contiguous tensor); null where they do not.
 */
function permutationOf(shape: readonly number[], strides: readonly number[]): number[] | null {
  const order = shape.map((_, k) => k).sort((a, b) => strides[b]! - strides[a]! || a - b);
  return isDense(
    order.map((k) => shape[k]!),
    order.map((k) => strides[k]!),
    false,
  )
    ? order
    : null;
}

/**
 * An open torch.save checkpoint: tensor names (dotted paths), each tensor's dtype and shape, the
 * checkpoint's other values as metadata, and tensors read by range when asked for.
 * @example
 * await using w = await openWeights('model.pt');   // a TorchFile behind a WeightFile
 */
export class TorchFile implements TensorFile {
  /** The format's name, as `WeightFile.format` says it. */
  readonly format = 'torch';

  private constructor(
    private readonly storages: Storages,
    private readonly bigEndian: boolean,
    readonly tensors: ReadonlyMap<string, Tensorish>,
    readonly metadata: Readonly<Record<string, unknown>>,
    /** Later paths to a shared container, and the first path that names its contents (see flatten). */
    private readonly aliases: ReadonlyMap<string, string> = new Map(),
  ) {}

  /**
   * The checkpoint in an open zip: its pickle read (bounded by the unpickler's limits) and checked
   * to name only storages the zip holds; no tensor data is read yet.
   */
  static async fromArchive(archive: NpzArchive, options: DecodeOptions & { signal?: AbortSignal | undefined } = {}): Promise<TorchFile> {
    const prefix = recordPrefix(archive);
    if (archive.has(`${prefix}constants.pkl`) || archive.entries.some((e) => e.name.startsWith(`${prefix}code/`))) {
      throw new NpyError(
        'NO_COUNTERPART',
        `this is a TorchScript archive (torch.jit.save: ${prefix}code/ and ${prefix}constants.pkl beside ${prefix}data.pkl), a program with its weights, which npyts does not run; in Python, torch.save(torch.jit.load(path).state_dict(), 'weights.pt') gives a file npyts reads`,
      );
    }
    // The pickle first: the byte order, written just after it, then comes from the same read.
    const pickle = await memberBytes(archive, `${prefix}data.pkl`, options.signal);
    const order = archive.has(`${prefix}byteorder`)
      ? new TextDecoder().decode(await memberBytes(archive, `${prefix}byteorder`, options.signal)).trim()
      : 'little';
    if (order !== 'little' && order !== 'big') throw new NpyError('ZIP_FORMAT', `${prefix}byteorder says '${order.slice(0, 20)}', not little or big`);
    const { tensors, metadata, aliases } = flatten(unpickleWith(pickle, options, torchDialect()));
    for (const [name, t] of tensors) {
      if (t instanceof TensorRef && !archive.has(`${prefix}data/${t.storage.key}`)) {
        throw new NpyError('ZIP_FORMAT', `tensor '${name}' is in storage ${t.storage.key}, which the file does not hold (${prefix}data/${t.storage.key})`);
      }
    }
    return new TorchFile(new ZipStorages(archive, prefix), order === 'big', tensors, metadata, aliases);
  }

  /**
   * A checkpoint in PyTorch's legacy format (before 1.6, or `_use_new_zipfile_serialization=False`),
   * as torch.load reads it: pickles one after another (the magic number, the format's version, the
   * writer's byte order and type sizes, the checkpoint, its storage keys), then each storage's bytes
   * in the keys' order, each after its element count (8 bytes). The checkpoint's pickle is read with
   * the same allowlist as a zip's; no tensor data is read yet.
   */
  static async fromLegacy(source: ByteSource, options: DecodeOptions & { signal?: AbortSignal | undefined } = {}): Promise<TorchFile> {
    const name = source.name ?? 'the checkpoint';
    // The pickles come first and their length is not recorded: read a prefix of the file, longer
    // until the pickles end in it (each read bounded by the file).
    let length = Math.min(source.size, 1 << 16);
    for (;;) {
      const head = await source.read(0, length, { signal: options.signal });
      try {
        return TorchFile.fromLegacyHead(source, head, options);
      } catch (e) {
        const short = e instanceof NpyError && e.code === 'BAD_PICKLE' && /truncated/.test(e.message);
        if (!short || length >= source.size) {
          await source.close?.();
          throw withWhere(e, { file: name });
        }
        length = Math.min(source.size, length * 4);
      }
    }
  }

  /** {@link fromLegacy} from the file's first bytes, `head`: refused as truncated where its pickles run past them. */
  private static fromLegacyHead(source: ByteSource, head: Uint8Array, options: DecodeOptions): TorchFile {
    let at = 0;
    const next = (dialect = torchDialect()): unknown => {
      const { value, end } = unpickleFirst(head.subarray(at), options, dialect);
      at += end;
      return value;
    };
    const magic = next();
    if (magic !== LEGACY_MAGIC) throw new NpyError('BAD_MAGIC', "not a legacy torch.save file: its first pickle is not PyTorch's magic number");
    const version = next();
    if (version !== 1001)
      throw new NpyError('UNSUPPORTED_VERSION', `a legacy torch.save file of version ${String(version)}; PyTorch (and npyts) read version 1001`);
    const info = next();
    const little = !(info instanceof Map) || info.get('little_endian') !== false;
    const storages = new Map<string, StorageRef>();
    const { tensors, metadata, aliases } = flatten(next(torchDialect(storages)));
    const keys = next();
    if (!Array.isArray(keys) || !keys.every((k) => typeof k === 'string')) bad("the legacy file's storage keys are not a list of names");
    // Each storage's bytes follow, in the keys' order, each after its element count (8 bytes).
    const runs = new Map<string, StorageRun>();
    let pos = at;
    for (const key of keys as string[]) {
      const ref = storages.get(key);
      const itemsize = ref ? elementBytes(ref.element) : null;
      if (!ref || itemsize === null || runs.has(key)) bad(`the legacy file lists storage ${key.slice(0, 40)}, which its checkpoint does not name once`);
      const bytes = ref.count * itemsize;
      runs.set(key, { at: pos, count: ref.count, bytes });
      pos += 8 + bytes;
      if (pos > source.size) {
        throw new NpyError('DATA_TRUNCATED', `the file ends (at byte ${source.size}) before storage ${key} does (byte ${pos})`);
      }
    }
    for (const [name, t] of tensors) {
      if (t instanceof TensorRef && !runs.has(t.storage.key))
        bad(`tensor '${name}' is in storage ${t.storage.key}, which the file's list of storages does not name`);
    }
    return new TorchFile(new LegacyStorages(source, runs, !little), !little, tensors, metadata, aliases);
  }

  get names(): string[] {
    return [...this.tensors.keys()];
  }

  private ref(name: string): TensorRef {
    const t = this.tensors.get(name) ?? (this.aliases.size ? this.tensors.get(throughAliases(name, this.aliases, this.tensors)) : undefined);
    if (!t) throw unknownKey(name, this.names, 'the checkpoint');
    if (t instanceof UnreadTensor) {
      throw new NpyError('NO_COUNTERPART', `tensor '${name}' is ${t.what}, which npyts does not read; save it as a dense tensor (${t.fix}) to read it`);
    }
    return t;
  }

  private dtypeOf(name: string, t: TensorRef): DType {
    if (!t.dtype.dtype) throw new NpyError('NO_COUNTERPART', `tensor '${name}' is torch.${t.dtype.name}, which npyts does not read`);
    return this.bigEndian ? t.dtype.dtype.withByteOrder('>') : t.dtype.dtype;
  }

  /**
   * What a tensor shares with the other names that are the same whole storage seen whole, in the
   * same dtype and shape (tied weights: `lm_head.weight` and `wte.weight`): equal for those names
   * (`save_torch_state_dict` saves them once), undefined for a tensor that is a part of its storage.
   */
  tieOf(name: string): unknown {
    const t = this.tensors.get(name);
    if (!(t instanceof TensorRef) || t.offset !== 0 || t.conj || t.neg || !t.dtype.dtype || !isDense(t.shape, t.strides, false)) return undefined;
    const bytes = t.shape.reduce((a, b) => a * b, t.dtype.dtype.itemsize);
    if (bytes === 0 || this.storages.size(t.storage.key) !== bytes) return undefined;
    return `${t.storage.key}\0${t.dtype.name}\0${t.shape.join(',')}`;
  }

  /**
   * A tensor's dtype and shape, from the pickle; over a map, also whether get() copies it, for which
   * its storage's local header is read (once) where it is a stored zip member.
   */
  async info(name: string, options: { signal?: AbortSignal | undefined } = {}): Promise<TensorInfo> {
    const t = this.ref(name);
    const dtype = this.dtypeOf(name, t);
    let copied: string | null = null;
    try {
      copied = this.storages.views ? await this.copyReason(t, dtype, options.signal) : null;
    } catch (e) {
      throw withWhere(e, { member: name });
    }
    return copied === null ? { dtype, shape: t.shape } : { dtype, shape: t.shape, copied };
  }

  /** Over a map, why get() copies a tensor instead of viewing its storage's bytes; null where it views them. */
  private async copyReason(t: TensorRef, dtype: DType, signal?: AbortSignal): Promise<string | null> {
    const size = t.shape.reduce((a, b) => a * b, 1);
    if (size === 0) return null;
    const start = await this.storages.start(t.storage.key, signal);
    if (start === null) return `its storage (${t.storage.key}) is a deflated zip member, inflated`;
    if (!isDense(t.shape, t.strides, false) && !isDense(t.shape, t.strides, true)) return 'it is a strided view of its storage, gathered into C order';
    if (t.conj || t.neg) return `its ${t.conj ? 'conj' : 'neg'} flag is applied to a copy`;
    return copyReasonAt(dtype, start + t.offset * dtype.itemsize);
  }

  /**
   * Where a tensor's bytes lie in the file as they are (dtype, shape, memory order, the offset of its
   * first element: its storage's data offset plus its storage offset): what a reference set points
   * at. A C-ordered view of a stored storage has one, a transposed one in Fortran order, another
   * permutation of a contiguous tensor's axes with its `order`; a view that is none of them (a strided
   * slice, an expand()), a conj or neg flag, or a deflated storage is refused by name, with the fix
   * (`.contiguous()`).
   * @example
   * await torchFile.extent('fc.weight');   // { dtype: <f4, shape: [10, 4], fortranOrder: false, offset: 1472 }
   */
  async extent(name: string, options: { signal?: AbortSignal | undefined } = {}): Promise<TensorExtent> {
    try {
      const t = this.ref(name);
      const dtype = this.dtypeOf(name, t);
      this.checkHeld(name, t, dtype.itemsize);
      const refuse = (why: string) =>
        new NpyError('NO_COUNTERPART', `tensor '${name}' ${why}, so its bytes are not the array as they lie: save it with .contiguous()`);
      const size = t.shape.reduce((a, b) => a * b, 1);
      const fortran = !isDense(t.shape, t.strides, false) && isDense(t.shape, t.strides, true);
      // Another permutation of the axes of a contiguous tensor: its axes' order in the storage.
      const order = size > 0 && !fortran && !isDense(t.shape, t.strides, false) ? permutationOf(t.shape, t.strides) : undefined;
      if (order === null) {
        // A slice with steps, an expand() (stride 0): not the array's bytes in any order of its axes.
        throw refuse(`is a strided view of its storage (strides ${t.strides.join(', ')} for shape ${t.shape.join(', ')})`);
      }
      if (t.conj || t.neg) throw refuse(`has its ${t.conj ? 'conj' : 'neg'} flag set, applied only when it is read`);
      const start = await this.storages.start(t.storage.key, options.signal);
      if (start === null) throw refuse(`is in storage ${t.storage.key}, a deflated zip member`);
      return { dtype, shape: t.shape, fortranOrder: fortran, ...(order ? { order } : {}), offset: start + t.offset * dtype.itemsize };
    } catch (e) {
      throw withWhere(e, { member: name });
    }
  }

  /** The elements of its storage a view reaches (from its offset to its last element), checked to be held there. */
  private checkHeld(name: string, t: TensorRef, itemsize: number): number {
    const size = t.shape.reduce((a, b) => a * b, 1);
    const span = size === 0 ? 0 : 1 + t.shape.reduce((sum, n, k) => sum + (n - 1) * t.strides[k]!, 0);
    const key = t.storage.key;
    const held = this.storages.size(key);
    const need = (t.offset + span) * itemsize;
    if (!Number.isSafeInteger(need) || held === null || need > held) {
      throw new NpyError('DATA_TRUNCATED', `storage ${key} holds ${held ?? 0} bytes; tensor '${name}' needs ${need}`);
    }
    return span;
  }

  /**
   * One tensor with the values PyTorch gives: the bytes of its view of the storage and no more.
   * @example
   * const w = await torchFile.get('conv.weight');
   */
  async get(name: string, options: TensorReadOptions = {}): Promise<NdArray> {
    const t = this.ref(name);
    const dtype = this.dtypeOf(name, t);
    if (options.expect !== undefined && !matchesDescr(dtype, options.expect)) {
      throw new NpyError('UNEXPECTED_DTYPE', `tensor '${name}' is ${dtype.name}, not ${String(options.expect)}`);
    }
    try {
      return await this.read(name, t, dtype, options.signal, options.into);
    } catch (e) {
      throw withWhere(e, { member: name });
    }
  }

  private async read(name: string, t: TensorRef, dtype: DType, signal?: AbortSignal, into?: (bytes: number) => ArrayBufferLike): Promise<NdArray> {
    let a = await this.view(name, t, dtype, signal, into);
    if (t.conj || t.neg) {
      // A view of a map is never written: the flags are applied to a copy.
      if (this.storages.views) a = new NdArray(a.dtype, a.shape, (a.data as TypedArray).slice(), a.order);
      applyFlags(name, a, t);
    }
    return a;
  }

  /** The elements of a tensor's view of its storage, before its conj and neg flags. */
  private async view(name: string, t: TensorRef, dtype: DType, signal?: AbortSignal, into?: (bytes: number) => ArrayBufferLike): Promise<NdArray> {
    const size = t.shape.reduce((a, b) => a * b, 1);
    const itemsize = dtype.itemsize;
    // The elements of the storage the view reaches: from its offset to its last element.
    const extent = size === 0 ? 0 : 1 + t.shape.reduce((sum, n, k) => sum + (n - 1) * t.strides[k]!, 0);
    if (size > extent && size * itemsize > MAX_BROADCAST_BYTES) {
      // A view that repeats elements (expand(), a stride 0) is copied out, as .contiguous() would:
      // its size is what it declares, not what the file holds, so only up to a bound.
      throw new NpyError(
        'TOO_LARGE',
        `tensor '${name}' repeats its ${extent} stored elements as ${size} (a view such as expand(), with stride 0): a copy of ${size * itemsize} bytes, more than npyts makes of repeated elements (${MAX_BROADCAST_BYTES}); save what you need of it with .contiguous()`,
      );
    }
    this.checkHeld(name, t, itemsize);
    const key = t.storage.key;
    const fortran = !isDense(t.shape, t.strides, false) && isDense(t.shape, t.strides, true);
    const dense = fortran || isDense(t.shape, t.strides, false);
    const at = dense && size > 0 ? await this.storages.where(key, signal) : null;
    if (at !== null) {
      // Read straight from the storage's bytes in the file, by range, in the view's own order (over a
      // map: an array over those bytes, npyReaderOf's whole-array run).
      const header: NpyHeader = {
        version: [1, 0],
        dtype,
        shape: [...t.shape],
        fortranOrder: fortran,
        dataOffset: at.start + t.offset * itemsize,
        size,
        dataBytes: size * itemsize,
      };
      return npyReaderOf(at.source, header, name).read(
        t.shape.map(() => 0),
        t.shape,
        { signal, into },
      );
    }
    const span = await this.storages.bytes(key, t.offset * itemsize, extent * itemsize, signal);
    const out = bufferFor(size * itemsize, into);
    gather(span, out, t.shape, t.strides, itemsize);
    const header: NpyHeader = { version: [1, 0], dtype, shape: [...t.shape], fortranOrder: false, dataOffset: 0, size, dataBytes: size * itemsize };
    return arrayOfData(header, out.buffer, out.byteOffset, { owned: true });
  }

  /** Every tensor by name, a few read at once. */
  async getAll(options: GetAllReadOptions = {}): Promise<Map<string, NdArray>> {
    // Each tensor by get, so that one npyts cannot read does not hide the others (getEvery).
    return getEvery(this.names, TENSORS_IN_FLIGHT, (name) => this.get(name, { signal: options.signal }), options.onTensor);
  }

  close(): Promise<void> {
    return this.storages.close();
  }
}

/** Where a checkpoint's storages are: a zip's members, or byte runs of a legacy file. */
interface Storages {
  /** Whether the file's reads are views of a map (see `ByteSource.views`). */
  readonly views: boolean;
  /** Where a storage's bytes start in the file, where they lie there as they are; null where they are deflated. */
  start(key: string, signal?: AbortSignal): Promise<number | null>;
  /** The bytes a storage holds; null where the file has no storage by that key. */
  size(key: string): number | null;
  /**
   * Where a storage's bytes lie as they are: a source (read so that a read after close() is CLOSED)
   * and where in it they start; null where they are deflated.
   */
  where(key: string, signal?: AbortSignal): Promise<{ source: ByteSource; start: number } | null>;
  /** `length` bytes at `at` of a storage. */
  bytes(key: string, at: number, length: number, signal?: AbortSignal): Promise<Uint8Array>;
  close(): Promise<void>;
}

/** PyTorch's legacy magic number, the first pickle of a legacy file. */
const LEGACY_MAGIC = 0x1950a86a20f9469cfc6cn;

/** Where a legacy file holds one storage: its element count (8 bytes) at `at`, then its `bytes`. */
interface StorageRun {
  at: number;
  count: number;
  bytes: number;
}

/** The storages of a legacy torch.save file: byte runs after its pickles. */
class LegacyStorages implements Storages {
  private closed = false;
  /** Storages whose element count was read and found to be the pickle's. */
  private readonly checked = new Set<string>();
  private readonly through: AsyncByteSource;

  constructor(
    private readonly file: ByteSource,
    private readonly runs: ReadonlyMap<string, StorageRun>,
    private readonly bigEndian: boolean,
  ) {
    this.through = checkedReads(file, () => {
      if (this.closed) throw new NpyError('CLOSED', `${file.name ?? 'the checkpoint'} is closed`);
    });
  }

  size(key: string): number | null {
    return this.runs.get(key)?.bytes ?? null;
  }

  get views(): boolean {
    return this.file.views === true;
  }

  async start(key: string): Promise<number | null> {
    const run = this.runs.get(key);
    return run ? run.at + 8 : null;
  }

  async where(key: string, signal?: AbortSignal): Promise<{ source: ByteSource; start: number }> {
    return { source: this.through, start: await this.checkedStart(key, signal) };
  }

  private async checkedStart(key: string, signal?: AbortSignal): Promise<number> {
    const run = this.runs.get(key)!;
    if (!this.checked.has(key)) {
      // The count written before the bytes is the one the pickle gave (as torch.load checks).
      const head = await this.through.read(run.at, 8, { signal });
      const written = head.length === 8 ? new DataView(head.buffer, head.byteOffset, 8).getBigUint64(0, !this.bigEndian) : -1n;
      if (written !== BigInt(run.count)) {
        throw new NpyError(
          'DATA_TRUNCATED',
          `storage ${key} should hold ${run.count} elements from byte ${run.at}; the file says ${written < 0n ? 'nothing (it ends)' : String(written)}`,
        );
      }
      this.checked.add(key);
    }
    return run.at + 8;
  }

  async bytes(key: string, at: number, length: number, signal?: AbortSignal): Promise<Uint8Array> {
    const start = await this.checkedStart(key, signal);
    const got = await this.through.read(start + at, length, { signal });
    if (got.length < length) throw new NpyError('DATA_TRUNCATED', `storage ${key} ends before the tensor's last element`);
    return got;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.file.close?.();
  }
}

/** The storages of a torch.save zip: its members `<prefix>data/<key>`, read through the archive's public reads. */
class ZipStorages implements Storages {
  constructor(
    private readonly archive: NpzArchive,
    private readonly prefix: string,
  ) {}

  get views(): boolean {
    return this.archive.source.views === true;
  }

  /** Where a stored storage starts: its local header read when first asked for (by info() or get()), never all at open. */
  async start(key: string, signal?: AbortSignal): Promise<number | null> {
    const entry = this.entry(key);
    return entry.method === STORED ? this.archive.dataOffset(entry.name, { signal }) : null;
  }

  private entry(key: string): ZipEntry {
    return this.archive.entry(`${this.prefix}data/${key}`);
  }

  size(key: string): number | null {
    return this.archive.has(`${this.prefix}data/${key}`) ? this.entry(key).size : null;
  }

  async where(key: string, signal?: AbortSignal): Promise<{ source: ByteSource; start: number } | null> {
    const entry = this.entry(key);
    // A stored member is a window of the file (its local header read once, exactly: a remote
    // checkpoint moves a few bytes more than the tensor).
    return entry.method === STORED ? { source: await this.archive.storedMember(entry.name, { signal }), start: 0 } : null;
  }

  /**
   * `length` bytes at `at` of a storage member: by range when stored; when deflated, inflated from
   * its start only up to the end of what is asked (the whole member, CRC-checked, when that is all of it).
   */
  async bytes(key: string, at: number, length: number, signal?: AbortSignal): Promise<Uint8Array> {
    const entry = this.entry(key);
    const end = at + length;
    if (entry.method === STORED) {
      const got = await (await this.archive.storedMember(entry.name, { signal })).read(at, length, { signal });
      if (got.length < length) throw new NpyError('DATA_TRUNCATED', `storage ${entry.name} ends before the tensor's last element`);
      return got;
    }
    const bytes = end === entry.size ? await memberBytes(this.archive, entry.name, signal) : await this.archive.bytesPrefix(entry.name, end, { signal });
    if (bytes.length < end)
      throw new NpyError('DATA_TRUNCATED', `storage ${entry.name} inflates to ${bytes.length} bytes, before the tensor's last element (byte ${end})`);
    return bytes.subarray(at, end);
  }

  close(): Promise<void> {
    return this.archive.close();
  }
}

/** The most bytes a view that repeats its elements (expand()) is copied into: 1 GiB. */
const MAX_BROADCAST_BYTES = 2 ** 30;

/**
 * A member's bytes, as PyTorch's reader takes them: CRC-checked, except where the CRC is 0, which
 * PyTorch writes for "not recorded" (`torch.utils.serialization.config.save.compute_crc32 = False`)
 * and then does not check. Such members are read unchecked, as torch.load reads them.
 */
function memberBytes(archive: NpzArchive, name: string, signal?: AbortSignal): Promise<Uint8Array> {
  return archive.bytes(name, { signal, zeroCrcUnrecorded: true });
}

/**
 * A view's lazy flags applied to its elements, in place (the array was just read into a buffer of
 * its own): `neg` negates every value, `conj` every imaginary part. Floats (narrow ones too) change
 * their sign bit, integers wrap as torch's do; a flag on any other dtype is refused.
 */
function applyFlags(name: string, a: NdArray, t: TensorRef): void {
  const kind = a.dtype.kind;
  const data = a.data as unknown as ArrayLike<number | bigint> & { [i: number]: number | bigint; length: number };
  const every = (step: number, from: number) => {
    if (a.dtype.mlFloat || (kind === 'f' && a.dtype.itemsize === 2)) {
      // Narrow floats are held as their bits: the sign is the top bit.
      const bits = a.dtype.itemsize === 2 ? 0x8000 : 0x80;
      for (let i = from; i < data.length; i += step) data[i] = (data[i] as number) ^ bits;
    } else if (typeof data[0] === 'bigint') {
      for (let i = from; i < data.length; i += step) data[i] = -(data[i] as bigint);
    } else {
      for (let i = from; i < data.length; i += step) data[i] = -(data[i] as number);
    }
  };
  const numeric = kind === 'f' || kind === 'c' || kind === 'i' || kind === 'u' || a.dtype.mlFloat;
  if (!numeric || (kind === 'c' && a.dtype.itemsize > 16)) {
    throw new NpyError(
      'NO_COUNTERPART',
      `tensor '${name}' is a ${t.neg ? 'negated' : 'conjugated'} view of ${a.dtype.name}, which npyts does not apply; save it with .resolve_neg().resolve_conj()`,
    );
  }
  if (t.neg) every(1, 0);
  if (t.conj && kind === 'c') every(2, 1);
}
