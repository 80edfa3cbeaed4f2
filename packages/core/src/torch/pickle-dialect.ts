/**
 * PyTorch's checkpoint pickle (`data.pkl` of a `torch.save` zip), read with the globals PyTorch's
 * own `weights_only` loader allows and nothing more: tensors are rebuilt as references to storages
 * (offset, shape, strides, dtype), storages as references to the zip members that hold them. Nothing
 * is read or run here; any other global (a pickled module, a function) is refused by name.
 */
import { NpyError } from '../errors.js';
import { type DType, parseDescr } from '../format/dtype.js';
import { Global, builtinConstructor, type Constructor } from '../pickle/allowlist.js';
import type { PickleDialect } from '../pickle/unpickler.js';
import { Dict, List, Pending, Tuple, bad, settle } from '../pickle/vm-values.js';

/**
 * torch dtypes by their names in `torch.<name>` and in typed storages' class names. Not here, so
 * listed and refused when read (`NO_COUNTERPART`): `complex32` (two float16s; numpy has no such
 * complex, and widening it to complex64 would not be what the file holds) and `float4_e2m1fn_x2`
 * (two float4s a byte: its shape counts bytes, not elements).
 */
const TORCH_DTYPES: Record<string, string> = {
  float32: '<f4',
  float64: '<f8',
  float16: '<f2',
  bfloat16: 'bfloat16',
  float8_e4m3fn: 'float8_e4m3fn',
  float8_e5m2: 'float8_e5m2',
  float8_e4m3fnuz: 'float8_e4m3fnuz',
  float8_e5m2fnuz: 'float8_e5m2fnuz',
  float8_e8m0fnu: 'float8_e8m0fnu',
  int64: '<i8',
  int32: '<i4',
  int16: '<i2',
  int8: '|i1',
  uint8: '|u1',
  uint16: '<u2',
  uint32: '<u4',
  uint64: '<u8',
  bool: '|b1',
  complex64: '<c8',
  complex128: '<c16',
};

/** The typed storage classes (`torch.FloatStorage`) and the dtype each holds. */
const STORAGE_CLASSES: Record<string, string> = {
  FloatStorage: 'float32',
  DoubleStorage: 'float64',
  HalfStorage: 'float16',
  BFloat16Storage: 'bfloat16',
  LongStorage: 'int64',
  IntStorage: 'int32',
  ShortStorage: 'int16',
  CharStorage: 'int8',
  ByteStorage: 'uint8',
  BoolStorage: 'bool',
  ComplexFloatStorage: 'complex64',
  ComplexDoubleStorage: 'complex128',
};

/** The storage classes of quantized tensors, and their torch dtypes (which npyts does not read). */
const QUANTIZED_STORAGES: Record<string, string> = {
  QUInt8Storage: 'quint8',
  QInt8Storage: 'qint8',
  QInt32Storage: 'qint32',
  QUInt4x2Storage: 'quint4x2',
  QUInt2x4Storage: 'quint2x4',
};

/** The bytes of one element of a storage of `element` (null: an untyped storage, bytes); null where npyts does not know it. */
export function elementBytes(element: TorchDType | null): number | null {
  if (element === null) return 1;
  if (element.dtype) return element.dtype.itemsize;
  return element.name === 'qint32' ? 4 : Object.values(QUANTIZED_STORAGES).includes(element.name) ? 1 : null;
}

/** A torch dtype, as the pickle names it (`torch.float32`); `dtype` null where npyts has no counterpart. */
export class TorchDType {
  constructor(
    readonly name: string,
    readonly dtype: DType | null,
  ) {}
}

/** A storage class (`torch.FloatStorage`, `torch.storage.UntypedStorage`) as a persistent id names it. */
class StorageClass {
  /** @param element The dtype of a typed storage; null for an untyped one (bytes). */
  constructor(readonly element: TorchDType | null) {}
}

/** A storage: the zip member `data/<key>` that holds its bytes, and how many elements it has. */
export class StorageRef {
  constructor(
    readonly key: string,
    /** The element dtype of a typed storage; null for an untyped one (its tensor names the dtype). */
    readonly element: TorchDType | null,
    /** Elements (bytes, for an untyped storage) the pickle says the storage has. */
    readonly count: number,
  ) {}
}

/** A tensor: a view of a storage, as `_rebuild_tensor_v2` describes it. */
export class TensorRef {
  constructor(
    readonly storage: StorageRef,
    readonly dtype: TorchDType,
    /** In elements. */
    readonly offset: number,
    readonly shape: readonly number[],
    /** In elements, per axis. */
    readonly strides: readonly number[],
    /**
     * The view's lazy flags (`_rebuild_tensor_v2`'s metadata): `conj` a conjugated view (`x.conj()`:
     * the imaginary parts negated), `neg` a negated one (`torch._neg_view`: every value negated).
     * The storage holds the values before either; a read applies them, as torch.load does.
     */
    readonly conj = false,
    readonly neg = false,
  ) {}
}

/**
 * A tensor torch.load rebuilds that npyts does not read (a sparse, quantized, meta or nested tensor):
 * listed under its name like any tensor, refused when read, saying what it is and how to save one
 * npyts reads.
 */
export class UnreadTensor {
  constructor(
    /** What it is: `a sparse tensor (torch.sparse_coo)`. */
    readonly what: string,
    /** How to save it as data npyts reads: `.to_dense()`. */
    readonly fix: string,
  ) {}
}

/** A global named as a value (a storage class, a dtype) as what it stands for. */
function standsFor(v: unknown): unknown {
  const x = settle(v);
  return x instanceof Global ? x.value : x;
}

function count(v: unknown, what: string): number {
  const n = typeof v === 'bigint' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) bad(`${what} is not a non-negative integer`);
  return n;
}

function counts(v: unknown, what: string): number[] {
  const items = v instanceof Tuple ? v.items : Array.isArray(settle(v)) ? (settle(v) as unknown[]) : bad(`${what} is not a tuple`);
  if (items.length > 64) bad(`${what} has ${items.length} axes`);
  return items.map((x) => count(settle(x), what));
}

function torchDType(name: string): TorchDType {
  const descr = Object.hasOwn(TORCH_DTYPES, name) ? TORCH_DTYPES[name] : undefined;
  return new TorchDType(name, descr === undefined ? null : parseDescr(descr));
}

/** A view's flags from `_rebuild_tensor_v2`'s metadata dict (`{'conj': True}`, `{'neg': True}`); none for any other value. */
function viewFlags(v: unknown): { conj: boolean; neg: boolean } {
  const x = settle(v);
  const m = x instanceof Dict ? x.toMap() : x instanceof Map ? x : null;
  const flag = (key: string) => m !== null && settle(m.get(key)) === true;
  return { conj: flag('conj'), neg: flag('neg') };
}

/**
 * `_rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata])`, v3's
 * `dtype` after hooks (and its metadata after that), and the old `_rebuild_tensor(storage, offset, size, stride)`.
 */
function rebuildTensor(args: unknown[], dtypeArg?: unknown, metadata?: unknown): TensorRef {
  const storage = settle(args[0]);
  if (!(storage instanceof StorageRef)) bad('a tensor is rebuilt from a storage the pickle does not name');
  const dtype = dtypeArg instanceof TorchDType ? dtypeArg : storage.element;
  if (!dtype) bad('a tensor of an untyped storage without a dtype');
  const shape = counts(args[2], 'a tensor size');
  const strides = counts(args[3], 'a tensor stride');
  if (strides.length !== shape.length) bad('a tensor whose stride and size differ in length');
  const { conj, neg } = viewFlags(metadata);
  return new TensorRef(storage, dtype, count(settle(args[1]), 'a storage offset'), shape, strides, conj, neg);
}

/**
 * `torch.Tensor()` called with nothing, then completed by BUILD with `(storage, offset, size,
 * stride)`: how tensors were pickled before `_rebuild_tensor` (PyTorch's `OldTensorV1` case).
 */
class PendingTensor extends Pending {
  build(state: unknown): void {
    const s = state instanceof Tuple ? state.items : Array.isArray(state) ? state : bad('a tensor state that is not a tuple');
    if (s.length !== 4) bad('a tensor state that is not (storage, offset, size, stride)');
    this.resolved = rebuildTensor(s);
  }
}

/** The tensor a `_rebuild_parameter` or `_rebuild_from_type_v2` wraps: a Parameter is its data. */
function tensorArgument(v: unknown): TensorRef | UnreadTensor {
  const t = settle(v);
  if (!(t instanceof TensorRef) && !(t instanceof UnreadTensor)) bad('a parameter that does not hold a tensor');
  return t;
}

/** A layout as `torch.serialization._get_layout('torch.sparse_coo')` names it. */
class TorchLayout {
  constructor(readonly name: string) {}
}

/**
 * Tensor kinds PyTorch allows that npyts does not rebuild: what each is (from its arguments), and
 * how to save it as a dense tensor. Each becomes an {@link UnreadTensor}, refused when read.
 */
const UNREAD: Record<string, (args: unknown[]) => UnreadTensor> = {
  _rebuild_qtensor: (args) => {
    const scheme = settle(args[4]);
    const named = scheme instanceof Tuple ? standsFor(scheme.items[0]) : null;
    return new UnreadTensor(`a quantized tensor${named instanceof QScheme ? ` (torch.${named.name})` : ''}`, '.dequantize()');
  },
  _rebuild_sparse_tensor: (args) => {
    const layout = settle(args[0]);
    return new UnreadTensor(`a sparse tensor${layout instanceof TorchLayout ? ` (${layout.name})` : ''}`, '.to_dense()');
  },
  _rebuild_meta_tensor_no_storage: () =>
    new UnreadTensor('a meta tensor, which has a shape and no data (torch.device("meta"))', 'the real tensor (.to("cpu") of one that has data)'),
  _rebuild_nested_tensor: () => new UnreadTensor('a nested tensor', '.to_padded_tensor(0) or its .unbind() parts'),
  _rebuild_wrapper_subclass: () => new UnreadTensor('a tensor subclass without a storage', 'a plain tensor'),
  _rebuild_device_tensor_from_cpu_tensor: () => new UnreadTensor('a device tensor', '.cpu()'),
  _rebuild_device_tensor_from_numpy: () => new UnreadTensor('a device tensor', '.cpu()'),
};

/** A quantization scheme (`torch.per_tensor_affine`), named in a quantized tensor's parameters. */
class QScheme {
  constructor(readonly name: string) {}
}

const TORCH_ALLOWED: Record<string, Constructor> = {
  'torch._utils _rebuild_tensor': (args) => rebuildTensor(args),
  'torch._utils _rebuild_tensor_v3': (args) => rebuildTensor(args, standsFor(args[6]), args[7]),
  'torch._utils _rebuild_tensor_v2': (args) => rebuildTensor(args, undefined, args[6]),
  'torch._utils _rebuild_parameter': (args) => tensorArgument(args[0]),
  'torch._utils _rebuild_parameter_with_state': (args) => tensorArgument(args[0]),
  'torch._tensor _rebuild_from_type_v2': (args) => {
    const fn = args[0];
    const inner = settle(args[2]);
    if (!(fn instanceof Global) || typeof fn.target !== 'function' || !(inner instanceof Tuple || Array.isArray(inner)))
      bad('_rebuild_from_type_v2 of something that is not a tensor');
    return tensorArgument((fn.target as Constructor)(inner instanceof Tuple ? inner.items : (inner as unknown[])));
  },
  'torch Tensor': (args) =>
    args.length === 0 ? new PendingTensor() : bad('torch.Tensor(...) of values: only its empty form, completed by its state, is a saved tensor'),
  'torch.serialization _get_layout': (args) => {
    const name = settle(args[0]);
    return new TorchLayout(typeof name === 'string' ? name : 'an unnamed layout');
  },
  'torch Size': (args) => {
    const v = settle(args[0]);
    return v instanceof Tuple ? v.items : v instanceof List ? v.array() : v;
  },
  'torch device': (args) => String(settle(args[0])) + (args.length > 1 && args[1] !== null ? `:${String(settle(args[1]))}` : ''),
  'collections Counter': builtinConstructor('collections OrderedDict')!,
  ...Object.fromEntries(Object.entries(UNREAD).map(([k, make]) => [`torch._utils ${k}`, make])),
};

/** Globals that are classes, named but never called (a Parameter's type in `_rebuild_from_type_v2`). */
const TORCH_CLASSES = new Set(['torch.nn.parameter Parameter']);

/** The quantization schemes torch's weights_only loader allows (`torch.per_tensor_affine`). */
const QSCHEMES = new Set(['per_tensor_affine', 'per_channel_affine', 'per_tensor_symmetric', 'per_channel_symmetric', 'per_channel_affine_float_qparams']);

/**
 * The global a checkpoint names, if PyTorch's weights_only loader allows it: refused otherwise
 * (PICKLE_FORBIDDEN), saying what the file is and how to save one npyts reads.
 */
function resolveTorchGlobal(moduleName: string, name: string, offset: number): Global {
  // Protocol 2 spells builtins as Python 2 did; torch's loader maps them back, and so do we.
  const module = moduleName === '__builtin__' ? 'builtins' : moduleName;
  const key = `${module} ${name}`;
  if (Object.hasOwn(TORCH_ALLOWED, key)) return new Global(key, TORCH_ALLOWED[key]!);
  if (module === 'torch' && Object.hasOwn(STORAGE_CLASSES, name)) {
    const storage = new StorageClass(torchDType(STORAGE_CLASSES[name]!));
    return new Global(key, () => storage, storage);
  }
  if (module === 'torch' && Object.hasOwn(QUANTIZED_STORAGES, name)) {
    // A quantized tensor's storage: its elements have no npyts dtype (the tensor is refused when read).
    const storage = new StorageClass(new TorchDType(QUANTIZED_STORAGES[name]!, null));
    return new Global(key, () => storage, storage);
  }
  if (key === 'torch.storage UntypedStorage') {
    const storage = new StorageClass(null);
    return new Global(key, () => storage, storage);
  }
  if (
    module === 'torch' &&
    /^[a-z][a-z0-9_]*$/.test(name) &&
    (Object.hasOwn(TORCH_DTYPES, name) || /^(float|int|uint|complex|qu?int|bits)\d/.test(name) || name === 'bool')
  ) {
    const dtype = torchDType(name);
    return new Global(key, () => dtype, dtype);
  }
  if (module === 'torch' && QSCHEMES.has(name)) {
    const scheme = new QScheme(name);
    return new Global(key, () => scheme, scheme);
  }
  if (TORCH_CLASSES.has(key)) return new Global(key, () => bad(`${module}.${name} is a class, not data`));
  const builtin = builtinConstructor(key);
  if (
    builtin &&
    ['builtins set', 'builtins frozenset', 'builtins complex', 'builtins bytearray', 'builtins slice', 'collections OrderedDict', '_codecs encode'].includes(
      key,
    )
  ) {
    return new Global(key, builtin);
  }
  throw new NpyError(
    'PICKLE_FORBIDDEN',
    `the checkpoint names ${module}.${name}, which PyTorch's weights_only loader does not allow and npyts never runs: it holds Python objects (a whole model saved with torch.save(model)?); save model.state_dict() instead`,
    { offset },
  );
}

/** A persistent id `('storage', storage class, key, location, count)` as the storage it names. */
function loadStorage(pid: unknown, offset: number): StorageRef {
  const items = pid instanceof Tuple ? pid.items.map(settle) : Array.isArray(pid) ? pid.map(settle) : null;
  if (items?.[0] !== 'storage' || items.length < 5) {
    throw new NpyError('BAD_PICKLE', 'pickle: a persistent id that is not a storage', { offset });
  }
  const [, named, key, , n, view] = items;
  if (view !== undefined && view !== null) {
    // The legacy format's storage views (PyTorch before 0.4): one storage's bytes seen as another's.
    throw new NpyError(
      'NO_COUNTERPART',
      `the checkpoint holds a view of storage ${String(key)} as another storage (PyTorch before 0.4), which npyts does not read; save it again with a newer PyTorch`,
      { offset },
    );
  }
  const cls = named instanceof Global ? named.value : named;
  if (!(cls instanceof StorageClass) && !(cls instanceof TorchDType)) bad('a storage of an unknown class', offset);
  if (typeof key !== 'string' || !/^[A-Za-z0-9_.-]+$/.test(key)) bad('a storage key that is not a plain name', offset);
  return new StorageRef(key, cls instanceof StorageClass ? cls.element : cls, count(n, 'a storage size'));
}

/**
 * PyTorch's dialect of pickle, for one load: its allowlist, storages as persistent ids, dicts as
 * Maps in the order their keys were set, a state_dict's `_metadata` attribute ignored.
 *
 * A storage key named again is the storage first named, as torch.load caches it: its element type
 * is the first persistent id's (two tensors over one key, one through `FloatStorage` and one through
 * `IntStorage`, are both float32 in torch, and so here). `storages` collects them by key.
 */
export function torchDialect(storages: Map<string, StorageRef> = new Map()): PickleDialect {
  return {
    resolveGlobal: resolveTorchGlobal,
    persistentLoad(pid, offset) {
      const storage = loadStorage(pid, offset);
      const first = storages.get(storage.key);
      if (first) return first;
      storages.set(storage.key, storage);
      return storage;
    },
    dictStateIsAttributes: true,
    dictsAsMaps: true,
  };
}
