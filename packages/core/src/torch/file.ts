/**
 * A `torch.save` file (the zip format PyTorch has written since 1.6): `<name>/data.pkl`, the
 * checkpoint's pickle, read with PyTorch's weights_only allowlist; `<name>/data/<key>`, each storage's
 * bytes, read by range when a tensor is asked for; `<name>/byteorder`. Tensors keep their storage
 * offset, shape and strides: a slice of a larger storage reads only the slice, a transposed view
 * is read as Fortran order, any other strided view is gathered into C order.
 */
import type { NdArray } from '../array/ndarray.js';
import { allocateBuffer } from '../array/memory.js';
import { NpyError, unknownKey, withWhere } from '../errors.js';
import type { DType } from '../format/dtype.js';
import type { NpyHeader } from '../format/header.js';
import { matchesDescr } from '../format/header.js';
import { npyReaderOf } from '../io/open.js';
import { mapInParallel } from '../io/settle.js';
import { arrayOfData, type DecodeOptions } from '../npy.js';
import type { NpzArchive } from '../npz/archive.js';
import { STORED, type ZipEntry } from '../npz/zip.js';
import { unpickleWith } from '../pickle/unpickler.js';
import type { TensorFile, TensorInfo, TensorReadOptions } from '../weights/tensor-file.js';
import { TORCH_DIALECT, TensorRef } from './pickle-dialect.js';
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

/**
 * Every tensor of a checkpoint's value under its dotted path (`model.conv.weight`; list items by
 * index), and every other leaf (numbers, text, None) as metadata under its path. Iterative, so a
 * deeply nested checkpoint costs no stack.
 */
function flatten(root: unknown): { tensors: Map<string, TensorRef>; metadata: Record<string, unknown> } {
  const tensors = new Map<string, TensorRef>();
  const metadata: Record<string, unknown> = Object.create(null);
  const work: [string, unknown][] = [['', root]];
  const join = (path: string, key: unknown) => (path === '' ? String(key) : `${path}.${String(key)}`);
  const seen = new Set<string>();
  const claim = (path: string) => {
    if (seen.has(path))
      throw new NpyError('NAME_CLASH', `the checkpoint names '${path}' twice (a dotted key and a nested one); read it with { root } to pick one`);
    seen.add(path);
  };
  while (work.length) {
    const [path, v] = work.pop()!;
    if (v instanceof TensorRef) {
      claim(path);
      tensors.set(path, v);
    } else if (v instanceof Map) {
      for (const [k, x] of [...v.entries()].reverse()) work.push([join(path, k), x]);
    } else if (Array.isArray(v) && v.some((x) => x instanceof TensorRef || x instanceof Map || Array.isArray(x))) {
      for (let i = v.length - 1; i >= 0; i--) work.push([join(path, i), v[i]]);
    } else {
      claim(path);
      metadata[path] = v;
    }
  }
  return { tensors, metadata };
}

/** C-order (or, with `fortran`, F-order) element strides of a shape. */
function denseStrides(shape: readonly number[], fortran: boolean): number[] {
  const out = new Array<number>(shape.length);
  let step = 1;
  for (let k = 0; k < shape.length; k++) {
    const axis = fortran ? k : shape.length - 1 - k;
    out[axis] = step;
    step *= shape[axis]!;
  }
  return out;
}

/** Whether `strides` lay `shape` out densely in that order (axes of length 1 may have any stride). */
function isDense(shape: readonly number[], strides: readonly number[], fortran: boolean): boolean {
  const want = denseStrides(shape, fortran);
  return shape.every((n, k) => n <= 1 || strides[k] === want[k]);
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
    private readonly archive: NpzArchive,
    private readonly prefix: string,
    private readonly bigEndian: boolean,
    readonly tensors: ReadonlyMap<string, TensorRef>,
    readonly metadata: Readonly<Record<string, unknown>>,
  ) {}

  /**
   * The checkpoint in an open zip: its pickle read (bounded by the unpickler's limits) and checked
   * to name only storages the zip holds; no tensor data is read yet.
   */
  static async fromArchive(archive: NpzArchive, options: DecodeOptions & { signal?: AbortSignal | undefined } = {}): Promise<TorchFile> {
    const prefix = recordPrefix(archive);
    // The pickle first: the byte order, written just after it, then comes from the same read.
    const pickle = await archive.bytes(`${prefix}data.pkl`, options);
    const order = archive.has(`${prefix}byteorder`) ? new TextDecoder().decode(await archive.bytes(`${prefix}byteorder`, options)).trim() : 'little';
    if (order !== 'little' && order !== 'big') throw new NpyError('ZIP_FORMAT', `${prefix}byteorder says '${order.slice(0, 20)}', not little or big`);
    const { tensors, metadata } = flatten(unpickleWith(pickle, options, TORCH_DIALECT));
    for (const [name, t] of tensors) {
      if (!archive.has(`${prefix}data/${t.storage.key}`)) {
        throw new NpyError('ZIP_FORMAT', `tensor '${name}' is in storage ${t.storage.key}, which the file does not hold (${prefix}data/${t.storage.key})`);
      }
    }
    return new TorchFile(archive, prefix, order === 'big', tensors, metadata);
  }

  get names(): string[] {
    return [...this.tensors.keys()];
  }

  private ref(name: string): TensorRef {
    const t = this.tensors.get(name);
    if (!t) throw unknownKey(name, this.names, 'the checkpoint');
    return t;
  }

  private dtypeOf(name: string, t: TensorRef): DType {
    if (!t.dtype.dtype) throw new NpyError('NO_COUNTERPART', `tensor '${name}' is torch.${t.dtype.name}, which npyts does not read`);
    return this.bigEndian ? t.dtype.dtype.withByteOrder('>') : t.dtype.dtype;
  }

  /** A tensor's dtype and shape, from the pickle (nothing is read). */
  info(name: string): TensorInfo {
    const t = this.ref(name);
    return { dtype: this.dtypeOf(name, t), shape: t.shape };
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
      return await this.read(name, t, dtype, options.signal);
    } catch (e) {
      throw withWhere(e, { member: name });
    }
  }

  private async read(name: string, t: TensorRef, dtype: DType, signal?: AbortSignal): Promise<NdArray> {
    const size = t.shape.reduce((a, b) => a * b, 1);
    const itemsize = dtype.itemsize;
    // The elements of the storage the view reaches: from its offset to its last element.
    const extent = size === 0 ? 0 : 1 + t.shape.reduce((sum, n, k) => sum + (n - 1) * t.strides[k]!, 0);
    if (size > extent) {
      throw new NpyError(
        'NO_COUNTERPART',
        `tensor '${name}' has more elements (${size}) than it reaches in its storage (${extent}): a view that repeats elements, such as expand(); npyts makes arrays no larger than the bytes they come from: save it as .contiguous()`,
      );
    }
    const entry = this.archive.entry(`${this.prefix}data/${t.storage.key}`);
    const need = (t.offset + extent) * itemsize;
    if (!Number.isSafeInteger(need) || need > entry.size) {
      throw new NpyError('DATA_TRUNCATED', `storage ${t.storage.key} holds ${entry.size} bytes; tensor '${name}' needs ${need}`);
    }
    const fortran = !isDense(t.shape, t.strides, false) && isDense(t.shape, t.strides, true);
    const dense = fortran || isDense(t.shape, t.strides, false);
    if (dense && entry.method === STORED && size > 0) {
      // Read straight from the storage member, by range, in the view's own order.
      const header: NpyHeader = {
        version: [1, 0],
        dtype,
        shape: [...t.shape],
        fortranOrder: fortran,
        dataOffset: t.offset * itemsize,
        size,
        dataBytes: size * itemsize,
      };
      const member = await this.archive.storedMember(entry.name, { signal });
      return npyReaderOf(member, header, name).read(
        t.shape.map(() => 0),
        t.shape,
        { signal },
      );
    }
    const span = await this.storageBytes(entry, t.offset * itemsize, extent * itemsize, signal);
    const out = new Uint8Array(allocateBuffer(size * itemsize));
    gather(span, out, t.shape, t.strides, itemsize);
    const header: NpyHeader = { version: [1, 0], dtype, shape: [...t.shape], fortranOrder: false, dataOffset: 0, size, dataBytes: size * itemsize };
    return arrayOfData(header, out.buffer, 0, { owned: true });
  }

  /** `length` bytes at `at` of a storage member: by range when stored, from the inflated member otherwise. */
  private async storageBytes(entry: ZipEntry, at: number, length: number, signal?: AbortSignal): Promise<Uint8Array> {
    if (entry.method !== STORED) return (await this.archive.bytes(entry.name, { signal })).subarray(at, at + length);
    const member = await this.archive.storedMember(entry.name, { signal });
    const got = await member.read(at, length, { signal });
    if (got.length < length) throw new NpyError('DATA_TRUNCATED', `storage ${entry.name} ends before the tensor's last element`);
    return got;
  }

  /** Every tensor by name, a few read at once. */
  async getAll(options: { signal?: AbortSignal | undefined } = {}): Promise<Map<string, NdArray>> {
    const names = this.names;
    const arrays = await mapInParallel(names, TENSORS_IN_FLIGHT, (name) => this.get(name, options));
    return new Map(names.map((n, i) => [n, arrays[i]!]));
  }

  close(): Promise<void> {
    return this.archive.close();
  }
}

/**
 * The elements of a strided view, from the bytes of its extent (`span` starts at its first
 * element), into `out` in C order: an odometer over the axes, one element's bytes at a time.
 */
function gather(span: Uint8Array, out: Uint8Array, shape: readonly number[], strides: readonly number[], itemsize: number): void {
  const size = shape.reduce((a, b) => a * b, 1);
  if (size === 0) return;
  const ndim = shape.length;
  const index = new Array<number>(ndim).fill(0);
  let from = 0;
  for (let i = 0; i < size; i++) {
    out.set(span.subarray(from * itemsize, (from + 1) * itemsize), i * itemsize);
    for (let k = ndim - 1; k >= 0; k--) {
      if (++index[k]! < shape[k]!) {
        from += strides[k]!;
        break;
      }
      from -= (shape[k]! - 1) * strides[k]!;
      index[k] = 0;
    }
  }
}
