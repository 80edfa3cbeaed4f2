// Weight files and narrow floats (issue 41), as a strict TypeScript user writes them: no casts.
import { expectTypeOf } from 'expect-type';
import {
  decodeNpy,
  encodeSafetensors,
  ggufFormat,
  hdf5Format,
  openGguf,
  openHdf5,
  encodeHdf5,
  type Hdf5GroupInput,
  KerasFile,
  openSafetensors,
  openWeights as openWeightsAnywhere,
  toFloat32,
  type GgufFile,
  type GgufTensorInfo,
  type Hdf5AttributeValue,
  type Hdf5Dataset,
  type Hdf5File,
  type Hdf5Group,
  type KerasMetadata,
  type NdArray,
  type SafetensorsFile,
  type SyncByteSource,
  type TensorInfo,
  type WeightFile,
} from '@npyts/core';
import {
  loadWeights,
  openHdf5 as openHdf5Path,
  openSafetensorsSync,
  openWeights,
  saveNpySync,
  saveNpz,
  saveRagged,
  saveReferencesSync,
  saveSafetensors,
  saveSafetensorsSync,
  writeBeside,
  type ReplaceOptions,
  type SaveRaggedFileOptions,
} from '@npyts/core/node';
import { assignWeights, loadTensors } from '@npyts/tfjs';

const bytes = new Uint8Array(0);
// bfloat16 is a descr of its own: its data is the exact bits, its elements numbers.
const bf = decodeNpy(bytes, { voidAs: 'bfloat16', expect: 'bfloat16' });
expectTypeOf(bf).toEqualTypeOf<NdArray<'bfloat16'>>();
expectTypeOf(bf.data).toEqualTypeOf<Uint16Array>();
expectTypeOf(bf.get(0)).toEqualTypeOf<number>();
expectTypeOf(decodeNpy(bytes, { expect: 'float8_e4m3fn' }).data).toEqualTypeOf<Uint8Array>();
expectTypeOf(toFloat32(bf).data).toEqualTypeOf<Float32Array>();
expectTypeOf(bf.is('mlfloat')).toEqualTypeOf<boolean>();
// @ts-expect-error: voidAs names a narrow float
void decodeNpy(bytes, { voidAs: 'float64' });

// One entry for every weight file.
const w = await openWeights('model.safetensors.index.json', { root: 'model' });
expectTypeOf(w).toEqualTypeOf<WeightFile>();
expectTypeOf(w.names).toEqualTypeOf<readonly string[]>();
expectTypeOf(await w.info('fc.weight')).toEqualTypeOf<TensorInfo>();
// The shard of a sharded set that holds a tensor (absent for a single file).
expectTypeOf((await w.info('fc.weight')).shard).toEqualTypeOf<string | undefined>();
expectTypeOf(w.get('fc.weight', { expect: '<f4' })).toEqualTypeOf<Promise<NdArray<'<f4'>>>();
expectTypeOf(await loadWeights('model.pt')).toEqualTypeOf<Map<string, NdArray>>();
// Memory-mapped weight files: numpy's modes, and why a tensor is copied.
expectTypeOf(await loadWeights('model.pt', { mmap: 'r' })).toEqualTypeOf<Map<string, NdArray>>();
expectTypeOf((await (await openWeights('model.safetensors', { mmap: 'c' })).info('w')).copied).toEqualTypeOf<string | undefined>();
// @ts-expect-error: mmap is one of numpy's modes
await loadWeights('model.pt', { mmap: 'w' });
expectTypeOf(openWeightsAnywhere(new Blob([]))).toEqualTypeOf<Promise<WeightFile>>();

// safetensors: blocking reads where the source blocks, and only there.
const inMemory = await openSafetensors(bytes);
expectTypeOf(inMemory).toEqualTypeOf<SafetensorsFile<SyncByteSource>>();
expectTypeOf(inMemory.getSync('w', { expect: '<f8' })).toEqualTypeOf<NdArray<'<f8'>>();
expectTypeOf(openSafetensorsSync('m.safetensors').getSync('w')).toEqualTypeOf<NdArray>();
const remote = await openSafetensors('https://example.org/m.safetensors');
// @ts-expect-error: a file read asynchronously has no blocking reads
void remote.getSync('w');
expectTypeOf(encodeSafetensors({ w: bf }, { metadata: { format: 'pt' } })).toEqualTypeOf<Uint8Array>();
// @ts-expect-error: metadata is strings only
void saveSafetensors('m.safetensors', { w: bf }, { metadata: { step: 1 } });
// Every save that replaces a file can be made durable (fsync), blocking or not.
saveSafetensorsSync('m.safetensors', { w: bf }, { durable: true, metadata: { format: 'pt' } });
void saveNpz('m.npz', { w: bf }, { durable: true, signal: AbortSignal.timeout(100) });
saveNpySync('m.npy', bf, { durable: true });
// @ts-expect-error: durable is a boolean
saveNpySync('m.npy', bf, { durable: 'yes' });
void saveRagged('words.npy', ['a', 'bc'], { layout: 'offsets', durable: true });
saveReferencesSync('picks.npy', { data: new Int32Array([0]) }, 'words.npy', { durable: true });
// @ts-expect-error: durable is a boolean on references too
saveReferencesSync('picks.npy', { data: new Int32Array([0]) }, 'words.npy', { durable: 1 });
writeBeside('out.bin', (fd: number) => void fd, { durable: true });
const replace: ReplaceOptions & SaveRaggedFileOptions = { durable: true, layout: 'ranges' };
void replace;

// The tfjs adapter takes any weight file, and a separate check file.
expectTypeOf(loadTensors('model.pt')).toMatchTypeOf<Promise<object>>();
expectTypeOf(assignWeights([], w, { layout: 'tfjs', check: 'check.npz' })).toEqualTypeOf<Promise<void>>();

// Multipart plans: JSON for workers, parts from typed regions.
import {
  createArray,
  encodeAppendPart,
  encodePart,
  isTorchArchive,
  planAppendParts,
  planParts,
  readHeader,
  weightFileKind,
  type AppendPartPlan,
  type PartPlan,
  type WeightFileKind,
} from '@npyts/core';
const plan = planParts({ dtype: '<f4', shape: [65536, 1024], parts: 4 });
expectTypeOf(plan).toEqualTypeOf<PartPlan>();
expectTypeOf(plan.parts[0]?.count).toEqualTypeOf<number[] | undefined>();
expectTypeOf(encodePart(plan, 1, createArray('<f4', [16384, 1024]))).toEqualTypeOf<Uint8Array>();
// @ts-expect-error: a plan needs a dtype
void planParts({ shape: [2] });
// Appends: a header read by range, a plan of copy and upload parts, upload parts from bytes and rows.
const appendPlan = planAppendParts(readHeader(bytes), { rows: 10 });
expectTypeOf(appendPlan).toEqualTypeOf<AppendPartPlan>();
expectTypeOf(appendPlan.parts[0]?.kind).toEqualTypeOf<'copy' | 'upload' | undefined>();
expectTypeOf(encodeAppendPart(appendPlan, 1, { old: bytes, rows: createArray('<f4', [10, 4]) })).toEqualTypeOf<Uint8Array>();
// @ts-expect-error: an append plan needs the number of rows
void planAppendParts(readHeader(bytes), {});
expectTypeOf(weightFileKind(bytes, 0)).toEqualTypeOf<WeightFileKind>();
// Every format of the list is a kind (derived from the list, not written out beside it).
expectTypeOf<WeightFileKind>().toEqualTypeOf<'zip' | 'npy' | 'gguf' | 'hdf5' | 'torch-legacy' | 'safetensors' | 'references' | 'index' | 'pickle' | null>();
expectTypeOf(isTorchArchive(await openSafetensors(bytes).then(() => ({ entries: [] })))).toEqualTypeOf<boolean>();

// Formats and places (issue 55): one TensorFile shape, one format entry shape, the resolve hook.
import { formatOf, weightFormats, type ResolveHook, type TensorFile, type WeightFormatEntry } from '@npyts/core';
const anyFile: TensorFile = await openWeightsAnywhere(bytes);
expectTypeOf(anyFile.names).toEqualTypeOf<readonly string[]>();
expectTypeOf(await anyFile.info('w')).toEqualTypeOf<TensorInfo>();
const safetensorsAsTensors: TensorFile = await openSafetensors(bytes);
expectTypeOf(safetensorsAsTensors.format).toEqualTypeOf<string>();
expectTypeOf(formatOf(bytes, 0)?.name).toEqualTypeOf<Exclude<WeightFileKind, null> | undefined>();
const listed: readonly WeightFormatEntry[] = weightFormats;
expectTypeOf(listed.length).toEqualTypeOf<number>();
const entry: WeightFormatEntry = {
  name: 'mine',
  sniff: (first) => first[0] === 0x4d,
  open: async (source) => ({
    format: 'mine',
    names: [],
    metadata: {},
    info: () => ({ dtype: bf.dtype, shape: [] }),
    get: async () => bf,
    getAll: async () => new Map(),
    close: async () => source.close?.(),
  }),
};
expectTypeOf(entry.name).toEqualTypeOf<string>();
// Whether a format holds tensors: absent (it does), false (.npy, plain pickles), or a test of a container's members (a zip).
expectTypeOf(entry.tensors).toEqualTypeOf<false | ((members: readonly string[]) => boolean) | undefined>();
// The hook answers a URL, a promise of one, a Blob or a source; paths too in Node.
const presign: ResolveHook = async (name) => `https://bucket.example/models/${name}?X-Amz-Signature=…`;
await openWeightsAnywhere('https://bucket.example/models/model.safetensors.index.json', { resolve: presign });
await openWeightsAnywhere(bytes, { place: 'https://bucket.example/models/' });
await openWeights(bytes, { resolve: (name) => `/models/${name}`, place: '/models/' });
// @ts-expect-error: the hook answers a place, not a number
await openWeightsAnywhere(bytes, { resolve: () => 7 });
// GGUF: quantized tensors read as float32, the ggml type in info; metadata values of many types.
const g = await openGguf('https://example.org/model-Q4_K_M.gguf');
expectTypeOf(g).toEqualTypeOf<GgufFile>();
expectTypeOf(g.format).toEqualTypeOf<'gguf'>();
expectTypeOf(await g.info('w')).toEqualTypeOf<GgufTensorInfo>();
expectTypeOf((await g.info('w')).quantization).toEqualTypeOf<string | undefined>();
expectTypeOf(g.get('w', { expect: '<f4' })).toEqualTypeOf<Promise<NdArray<'<f4'>>>();
expectTypeOf(g.metadata['general.architecture']).toEqualTypeOf<unknown>();
expectTypeOf(ggufFormat.sniff(bytes, 0)).toEqualTypeOf<boolean>();
expectTypeOf(ggufFormat.open(inMemory.source, null, {})).toEqualTypeOf<Promise<GgufFile>>();
const ggufEntry: WeightFormatEntry = ggufFormat;
expectTypeOf(ggufEntry.name).toEqualTypeOf<string>();
// HDF5 and Keras: a member is a group or a dataset, told by `kind`; a Keras file's metadata is typed.
const h5 = await openHdf5('https://example.org/model.weights.h5');
const member = await h5.get('layers/dense/vars/0');
expectTypeOf(member).toEqualTypeOf<Hdf5Group | Hdf5Dataset>();
if (member.kind === 'dataset') {
  // null for a dataset with no value (h5py.Empty): no shape, and read() gives null.
  expectTypeOf(member.shape).toEqualTypeOf<readonly number[] | null>();
  expectTypeOf(member.read()).toEqualTypeOf<Promise<NdArray | null>>();
} else {
  expectTypeOf(member.children()).toEqualTypeOf<Promise<string[]>>();
}
expectTypeOf(await h5.root.attrs()).toEqualTypeOf<Record<string, Hdf5AttributeValue>>();
// In Node, a path (or anything core's openHdf5 takes).
expectTypeOf(openHdf5Path('model.weights.h5')).toEqualTypeOf<Promise<Hdf5File>>();
const keras = await KerasFile.fromHdf5(h5);
expectTypeOf(keras.metadata).toEqualTypeOf<KerasMetadata>();
expectTypeOf(keras.metadata.layers['layers/dense/vars']).toEqualTypeOf<string | undefined>();
expectTypeOf(keras.config).toEqualTypeOf<Record<string, unknown> | null>();
expectTypeOf(keras.get('layers/dense/vars/0', { expect: '<f4' })).toEqualTypeOf<Promise<NdArray<'<f4'>>>();
// Writing HDF5: a tree of groups and datasets (bytes of a little-endian dtype), attributes strings or numbers.
const tree: Hdf5GroupInput = {
  attrs: { name: 'model', version: 3 },
  members: { vars: { members: { '0': { descr: '<f4', shape: [2], bytes: new Uint8Array(8) } } } },
};
expectTypeOf(encodeHdf5(tree)).toEqualTypeOf<Uint8Array>();
// @ts-expect-error: an attribute is a string or a number
encodeHdf5({ members: {}, attrs: { flag: true } });
const hdf5Entry: WeightFormatEntry = hdf5Format;
expectTypeOf(hdf5Entry.name).toEqualTypeOf<string>();
