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
import { List, Tuple, bad, settle } from '../pickle/vm-values.js';

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

/** `_rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata])` and v3's `dtype` after hooks. */
function rebuildTensor(args: unknown[], dtypeArg?: unknown): TensorRef {
  const storage = settle(args[0]);
  if (!(storage instanceof StorageRef)) bad('a tensor is rebuilt from a storage the pickle does not name');
  const dtype = dtypeArg instanceof TorchDType ? dtypeArg : storage.element;
  if (!dtype) bad('a tensor of an untyped storage without a dtype');
  const shape = counts(args[2], 'a tensor size');
  const strides = counts(args[3], 'a tensor stride');
  if (strides.length !== shape.length) bad('a tensor whose stride and size differ in length');
  return new TensorRef(storage, dtype, count(settle(args[1]), 'a storage offset'), shape, strides);
}

/** The tensor a `_rebuild_parameter` or `_rebuild_from_type_v2` wraps: a Parameter is its data. */
function tensorArgument(v: unknown): TensorRef {
  const t = settle(v);
  if (!(t instanceof TensorRef)) bad('a parameter that does not hold a tensor');
  return t;
}

/** Tensor kinds PyTorch allows that npyts does not rebuild: refused with what they are. */
const UNREAD: Record<string, string> = {
  _rebuild_qtensor: 'a quantized tensor',
  _rebuild_sparse_tensor: 'a sparse tensor',
  _rebuild_meta_tensor_no_storage: 'a meta tensor (no data)',
  _rebuild_nested_tensor: 'a nested tensor',
  _rebuild_wrapper_subclass: 'a tensor subclass',
  _rebuild_device_tensor_from_cpu_tensor: 'a device tensor',
  _rebuild_device_tensor_from_numpy: 'a device tensor',
};

const unread =
  (what: string): Constructor =>
  () => {
    throw new NpyError('NO_COUNTERPART', `the checkpoint holds ${what}, which npyts does not read; save plain dense tensors (state_dict()) instead`);
  };

const TORCH_ALLOWED: Record<string, Constructor> = {
  'torch._utils _rebuild_tensor': (args) => rebuildTensor(args),
  'torch._utils _rebuild_tensor_v2': (args) => rebuildTensor(args),
  'torch._utils _rebuild_tensor_v3': (args) => rebuildTensor(args, standsFor(args[6])),
  'torch._utils _rebuild_parameter': (args) => tensorArgument(args[0]),
  'torch._utils _rebuild_parameter_with_state': (args) => tensorArgument(args[0]),
  'torch._tensor _rebuild_from_type_v2': (args) => {
    const fn = args[0];
    const inner = settle(args[2]);
    if (!(fn instanceof Global) || typeof fn.target !== 'function' || !(inner instanceof Tuple || Array.isArray(inner)))
      bad('_rebuild_from_type_v2 of something that is not a tensor');
    return tensorArgument((fn.target as Constructor)(inner instanceof Tuple ? inner.items : (inner as unknown[])));
  },
  'torch Size': (args) => {
    const v = settle(args[0]);
    return v instanceof Tuple ? v.items : v instanceof List ? v.array() : v;
  },
  'torch device': (args) => String(settle(args[0])) + (args.length > 1 && args[1] !== null ? `:${String(settle(args[1]))}` : ''),
  'collections Counter': builtinConstructor('collections OrderedDict')!,
  ...Object.fromEntries(Object.entries(UNREAD).map(([k, what]) => [`torch._utils ${k}`, unread(what)])),
};

/** Globals that are classes, named but never called (a Parameter's type in `_rebuild_from_type_v2`). */
const TORCH_CLASSES = new Set(['torch Tensor', 'torch.nn.parameter Parameter', 'torch.serialization _get_layout']);

/**
 * The global a checkpoint names, if PyTorch's weights_only loader allows it: refused otherwise
 * (PICKLE_FORBIDDEN), saying what the file is and how to save one npyts reads.
 */
function resolveTorchGlobal(module: string, name: string, offset: number): Global {
  const key = `${module} ${name}`;
  if (Object.hasOwn(TORCH_ALLOWED, key)) return new Global(key, TORCH_ALLOWED[key]!);
  if (module === 'torch' && Object.hasOwn(STORAGE_CLASSES, name)) {
    const storage = new StorageClass(torchDType(STORAGE_CLASSES[name]!));
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
  const [, named, key, , n] = items;
  const cls = named instanceof Global ? named.value : named;
  if (!(cls instanceof StorageClass) && !(cls instanceof TorchDType)) bad('a storage of an unknown class', offset);
  if (typeof key !== 'string' || !/^[A-Za-z0-9_.-]+$/.test(key)) bad('a storage key that is not a plain name', offset);
  return new StorageRef(key, cls instanceof StorageClass ? cls.element : cls, count(n, 'a storage size'));
}

/**
 * PyTorch's dialect of pickle: its allowlist, storages as persistent ids, dicts as Maps in the
 * order their keys were set, a state_dict's `_metadata` attribute ignored.
 */
export const TORCH_DIALECT: PickleDialect = {
  resolveGlobal: resolveTorchGlobal,
  persistentLoad: loadStorage,
  dictStateIsAttributes: true,
  dictsAsMaps: true,
};
