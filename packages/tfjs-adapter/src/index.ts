/**
 * `@npyts/tfjs` — NumPy arrays and archives as tfjs tensors, and back. `@tensorflow/tfjs-core` is a
 * peer dependency; any backend works.
 * @module @npyts/tfjs
 */
import * as tf from '@tensorflow/tfjs-core';
import {
  NdArray, NpyError, arrayFromValues, decodeNpz, encodeNpz, float16ToNumber, matchDType, parseDescr, readItem, toOrder,
  type NpzArchive, type NpzOptions, type NpzWriteOptions, type TypedArray, type DescrInput, type FamilyOf, type KindFamily,
} from '@npyts/core';

/** Options of {@link toTensor}: how 64-bit integers and other dtypes without a tfjs counterpart convert. */
export interface ToTensorOptions {
  /** float64 (and complex128, long double): 'float32' converts (the default, as tfjs users expect for weights); 'refuse' throws. */
  float64?: 'float32' | 'refuse';
  /**
   * uint32, int64 and uint64 become int32: 'check' (default) refuses the first value that does not
   * fit, 'wrap' keeps the low 32 bits, 'clamp' saturates.
   */
  int64?: 'check' | 'wrap' | 'clamp';
}

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

function toInt32(array: NdArray, mode: 'check' | 'wrap' | 'clamp'): Int32Array {
  const src = array.data as TypedArray;
  const out = new Int32Array(src.length);
  const big = typeof src[0] === 'bigint';
  for (let i = 0; i < src.length; i++) {
    const v = src[i]!;
    const n = big ? Number(v as bigint) : (v as number);
    if (n >= INT32_MIN && n <= INT32_MAX) {
      out[i] = n;
      continue;
    }
    if (mode === 'check') {
      throw new NpyError('BAD_ARRAY', `${array.dtype.name} value ${v} at flat index ${i} does not fit int32; pass { int64: 'wrap' } or { int64: 'clamp' } to convert anyway`);
    }
    out[i] = mode === 'wrap' ? (big ? Number(BigInt.asIntN(32, v as bigint)) : n | 0) : n < 0 ? INT32_MIN : INT32_MAX;
  }
  return out;
}

function floatsOf(array: NdArray, options: ToTensorOptions): Float32Array {
  const dt = array.dtype;
  if (dt.itemsize === 4 || (dt.kind === 'c' && dt.itemsize === 8)) return array.data as Float32Array;
  if (dt.itemsize === 2) return Float32Array.from(array.data as Uint16Array, float16ToNumber); // exact
  if (options.float64 === 'refuse') {
    throw new NpyError('BAD_ARRAY', `${dt.name} would be rounded to float32 for tfjs; refused by { float64: 'refuse' }`);
  }
  if (dt.itemsize === 8 || (dt.kind === 'c' && dt.itemsize === 16)) return Float32Array.from(array.data as Float64Array);
  // x86 long double, held as raw bytes: read each value, then round to float32.
  const n = dt.kind === 'c' ? array.size * 2 : array.size;
  const out = new Float32Array(n);
  for (let i = 0; i < array.size; i++) {
    const v = readItem(dt, array.data, i);
    if (dt.kind === 'c') {
      out[2 * i] = (v as { re: number }).re;
      out[2 * i + 1] = (v as { im: number }).im;
    } else out[i] = v as number;
  }
  return out;
}

/** The tfjs dtype of a descr's tensor: float32 for every float, int32 for integers, bool, complex64, string; never for what has none. */
export type TensorDTypeOf<S> =
  FamilyOf<S> extends 'float' ? 'float32'
  : FamilyOf<S> extends 'int' | 'uint' ? 'int32'
  : FamilyOf<S> extends 'bool' ? 'bool'
  : FamilyOf<S> extends 'complex' ? 'complex64'
  : FamilyOf<S> extends 'str' | 'bytes' ? 'string'
  : KindFamily extends FamilyOf<S> ? tf.DataType
  : never;

/** A tfjs tensor whose `dtype` is known from the descr. */
export type TensorOf<S> = [TensorDTypeOf<S>] extends [never] ? never : tf.Tensor & { readonly dtype: TensorDTypeOf<S> };

/**
 * A tensor with the array's values, row-major (Fortran order is reordered with npyts' blocked copy,
 * never tf.transpose). float32 and int32 data is handed to tfjs without another copy (tfjs copies
 * bool input itself).
 * @example
 * const t = toTensor(await loadNpy('w.npy', { expect: '<f4' }));   // t.dtype: 'float32'
 */
export function toTensor<S extends DescrInput>(array: NdArray<S>, options?: ToTensorOptions): TensorOf<S>;
export function toTensor(array: NdArray, options: ToTensorOptions = {}): tf.Tensor {
  const dt = array.dtype;
  const none = (what: string) => (): never => {
    throw new NpyError('BAD_ARRAY', what);
  };
  const noTensor = none(`${dt.name} arrays have no tfjs dtype`);
  const a = (): NdArray => toOrder(array, 'C');
  const integer = (): tf.Tensor => {
    const c = a();
    if (dt.kind === 'i' && dt.itemsize === 4) return tf.tensor(c.data as Int32Array, c.shape, 'int32');
    if (dt.itemsize <= 2) return tf.tensor(Int32Array.from(c.data as ArrayLike<number>), c.shape, 'int32');
    return tf.tensor(toInt32(c, options.int64 ?? 'check'), c.shape, 'int32');
  };
  return matchDType<tf.Tensor>(dt, {
    record: none('record arrays have no tfjs dtype; convert one field (getField) at a time'),
    subarray: none('record arrays have no tfjs dtype; convert one field (getField) at a time'),
    object: noTensor,
    datetime: noTensor,
    timedelta: noTensor,
    void: noTensor,
    bool: () => { const c = a(); return tf.tensor(c.data as Uint8Array, c.shape, 'bool'); },
    float: () => { const c = a(); return tf.tensor(floatsOf(c, options), c.shape, 'float32'); },
    complex: () => {
      const c = a();
      const inter = floatsOf(c, options);
      const re = new Float32Array(c.size);
      const im = new Float32Array(c.size);
      for (let i = 0; i < c.size; i++) { re[i] = inter[2 * i]!; im[i] = inter[2 * i + 1]!; }
      return tf.complex(tf.tensor(re, c.shape, 'float32'), tf.tensor(im, c.shape, 'float32'));
    },
    int: integer,
    uint: integer,
    str: () => {
      const c = a();
      return tf.tensor(Array.from({ length: c.size }, (_, i) => readItem(dt, c.data, i) as string), c.shape, 'string');
    },
    bytes: () => {
      const c = a();
      const values = Array.from({ length: c.size }, (_, i) => readItem(dt, c.data, i) as Uint8Array);
      return tf.tensor(values as unknown as string[], c.shape, 'string');
    },
  });
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The tensor's values as an NdArray of the matching numpy dtype (float32 → <f4, int32 → <i4, bool → |b1, complex64 → <c8, string → <U or |S).
 * @example
 * const a = await fromTensor(tf.ones([2, 2]));   // NdArray of '<f4'
 */
export async function fromTensor(t: tf.Tensor): Promise<NdArray> {
  const shape = [...t.shape];
  switch (t.dtype) {
    case 'float32': return new NdArray(parseDescr('<f4'), shape, Float32Array.from(await t.data() as Float32Array), 'C');
    case 'int32': return new NdArray(parseDescr('<i4'), shape, Int32Array.from(await t.data() as Int32Array), 'C');
    case 'bool': return new NdArray(parseDescr('|b1'), shape, Uint8Array.from(await t.data() as Uint8Array), 'C');
    case 'complex64': return new NdArray(parseDescr('<c8'), shape, Float32Array.from(await t.data() as Float32Array), 'C');
    case 'string': {
      const raw = (await t.bytes()) as Uint8Array[];
      try {
        const strings = raw.map((b) => utf8.decode(b));
        const width = Math.max(1, ...strings.map((s) => Array.from(s).length));
        return arrayFromValues(strings, `<U${width}`, { shape });
      } catch {
        const width = Math.max(1, ...raw.map((b) => b.length));
        return arrayFromValues(raw, `|S${width}`, { shape });
      }
    }
  }
  throw new NpyError('BAD_ARRAY', `tensor dtype ${t.dtype} has no numpy counterpart here`);
}

/** Tensors by name, as tfjs names them. */
export type NamedTensorMap = Record<string, tf.Tensor>;

/** Options of {@link loadTensors}: the archive's, the conversion's and a `fetch` for URLs. */
export interface LoadTensorsOptions extends NpzOptions, ToTensorOptions {
  /** fetch to use for URLs (default: globalThis.fetch). */
  fetch?: typeof fetch;
}

/** An archive in memory (sync) or a file read asynchronously: `await` serves both. */
type AnyArchive = NpzArchive | import('@npyts/core/node').NpzFile;

async function archiveFrom(source: Uint8Array | ArrayBuffer | string | URL, options: LoadTensorsOptions): Promise<AnyArchive> {
  if (source instanceof Uint8Array || source instanceof ArrayBuffer) return decodeNpz(source, options);
  const text = String(source);
  if (source instanceof URL || /^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    const res = await (options.fetch ?? fetch)(text);
    if (!res.ok) throw new NpyError('TRUNCATED', `fetching ${text} failed: HTTP ${res.status}`);
    return decodeNpz(new Uint8Array(await res.arrayBuffer()), options);
  }
  // A file path: Node only, through the positional-read loader with native zlib. The specifier is
  // a variable so that browser bundlers do not pull Node's file system into the page.
  const nodeEntry = '@npyts/core/node';
  const node = (await import(/* @vite-ignore */ nodeEntry)) as typeof import('@npyts/core/node');
  return node.loadNpz(text, options);
}

/**
 * Every array of a .npz (bytes, a URL, or a path in Node) as a tensor, by name.
 * @example
 * const tensors = await loadTensors('weights.npz');
 */
export async function loadTensors(source: Uint8Array | ArrayBuffer | string | URL, options: LoadTensorsOptions = {}): Promise<NamedTensorMap> {
  const archive = await archiveFrom(source, options);
  try {
    const out: NamedTensorMap = {};
    for (const name of archive.names) out[name] = toTensor(await archive.get(name), options);
    return out;
  } finally {
    await archive.close();
  }
}

/**
 * Tensors as .npz bytes that numpy loads with the same names, shapes and values.
 * @example
 * const bytes = await saveTensors({ w: tf.ones([2]) });
 */
export async function saveTensors(tensors: NamedTensorMap, options: NpzWriteOptions = {}): Promise<Uint8Array> {
  const arrays = new Map<string, NdArray>();
  for (const [name, t] of Object.entries(tensors)) arrays.set(name, await fromTensor(t));
  return encodeNpz(arrays, options);
}

/** What a weight must offer: tf.Variable (assign) and tfjs-layers' LayerVariable (write) both do. */
export interface WeightLike {
  readonly name: string;
  readonly shape: number[];
  readonly dtype: string;
  assign?(value: tf.Tensor): void;
  write?(value: tf.Tensor): unknown;
}

/** Options of {@link assignWeights}: name mapping and unused arrays. */
export interface AssignWeightsOptions extends ToTensorOptions {
  /** Map a weight's name to its key in the archive: a table, or a function. Default: the name, then the name without a `:0` suffix. */
  names?: Record<string, string> | ((weightName: string) => string);
  /** Accept archive arrays that no weight uses (default: refuse, they usually mean a naming mistake). */
  ignoreUnused?: boolean;
}

/**
 * Assign a .npz's arrays to model weights by name, checking the shape and dtype of every one;
 * all mismatches are reported together and nothing is assigned unless every weight matches.
 * @example
 * await assignWeights(model.weights, 'weights.npz');
 */
export async function assignWeights(
  weights: WeightLike[] | Record<string, WeightLike>,
  source: Uint8Array | ArrayBuffer | string | URL | AnyArchive,
  options: AssignWeightsOptions & LoadTensorsOptions = {},
): Promise<void> {
  const list = Array.isArray(weights) ? weights : Object.values(weights);
  const given = typeof source === 'object' && 'names' in source && 'get' in source ? source : null;
  const archive = given ?? (await archiveFrom(source as Uint8Array | ArrayBuffer | string | URL, options));
  try {
    await assignFrom(list, archive, options);
  } finally {
    if (!given) await archive.close(); // an archive this call opened (a file handle in Node)
  }
}

async function assignFrom(list: WeightLike[], archive: AnyArchive, options: AssignWeightsOptions & LoadTensorsOptions): Promise<void> {
  const keyFor = (w: WeightLike): string | null => {
    const { names } = options;
    const candidates = typeof names === 'function' ? [names(w.name)] : names && w.name in names ? [names[w.name]!] : [w.name, w.name.replace(/:\d+$/, '')];
    return candidates.find((k) => archive.has(k)) ?? null;
  };
  const problems: string[] = [];
  const planned: [WeightLike, tf.Tensor][] = [];
  const used = new Set<string>();
  for (const w of list) {
    const key = keyFor(w);
    if (key === null) { problems.push(`${w.name}: no array for it in the archive`); continue; }
    used.add(archive.entry(key).name);
    let t: tf.Tensor;
    try {
      t = toTensor(await archive.get(key), options);
    } catch (e) {
      problems.push(`${w.name}: ${(e as Error).message}`);
      continue;
    }
    if (t.shape.join(',') !== w.shape.join(',')) problems.push(`${w.name}: shape [${t.shape}] in the archive, [${w.shape}] in the model`);
    else if (t.dtype !== w.dtype) problems.push(`${w.name}: dtype ${t.dtype} in the archive, ${w.dtype} in the model`);
    else { planned.push([w, t]); continue; }
    t.dispose();
  }
  if (!options.ignoreUnused) {
    for (const e of archive.entries) if (!used.has(e.name)) problems.push(`${e.name.replace(/\.npy$/, '')}: in the archive but no weight uses it (pass { ignoreUnused: true } to allow)`);
  }
  if (problems.length) {
    for (const [, t] of planned) t.dispose();
    throw new NpyError('BAD_ARRAY', `${problems.length} weight mismatch${problems.length === 1 ? '' : 'es'}:\n  ${problems.join('\n  ')}`);
  }
  for (const [w, t] of planned) {
    if (w.assign) w.assign(t);
    else if (w.write) w.write(t);
    else throw new NpyError('BAD_ARRAY', `${w.name} has neither assign() nor write()`);
    t.dispose();
  }
}
