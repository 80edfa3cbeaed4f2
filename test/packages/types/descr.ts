// Compile-time types of descr literals, checked with the published .d.ts (npm test runs tsc on this file).
import { expectTypeOf } from 'expect-type';
import { createArray, parseDescr, type Complex, type Field, type NdArray, type RecordDType } from '@npyts/core';

const f4 = createArray('<f4', [2, 3]);
expectTypeOf(f4).toEqualTypeOf<NdArray<'<f4'>>();
expectTypeOf(f4.data).toEqualTypeOf<Float32Array>();
expectTypeOf(f4.get(0, 1)).toEqualTypeOf<number>();
const data: Float32Array = f4.data;
void data;

expectTypeOf(createArray('>i8', [2]).data).toEqualTypeOf<BigInt64Array>();
expectTypeOf(createArray('>i8', [2]).get(0)).toEqualTypeOf<bigint>();
expectTypeOf(createArray('<M8[ns]', [2]).data).toEqualTypeOf<BigInt64Array>();
expectTypeOf(createArray('<f2', [2]).data).toEqualTypeOf<Uint16Array>();
expectTypeOf(createArray('<U10', [2]).data).toEqualTypeOf<Uint32Array>();
expectTypeOf(createArray('<U10', [2]).get(0)).toEqualTypeOf<string>();
expectTypeOf(createArray('|S5', [2]).get(0)).toEqualTypeOf<Uint8Array>();
expectTypeOf(createArray('|b1', [2]).get(0)).toEqualTypeOf<boolean>();
expectTypeOf(createArray('<c8', [2]).get(0)).toEqualTypeOf<Complex>();
expectTypeOf(createArray('|O', [2]).data).toEqualTypeOf<unknown[]>();
expectTypeOf(createArray('|O', [2]).get(0)).toEqualTypeOf<unknown>();

const rec = createArray(
  [
    [
      'pos',
      [
        ['x', '<f8'],
        ['y', '<f8'],
      ],
    ],
    [['title', 'id'], '<u4'],
    ['m', '<f4', [2, 3]],
  ],
  [4],
);
expectTypeOf(rec.data).toEqualTypeOf<Uint8Array>();
expectTypeOf(rec.get(0)).toEqualTypeOf<{ pos: { x: number; y: number }; id: number; m: number[][] }>();
expectTypeOf(rec.get(0).pos.x).toEqualTypeOf<number>();

expectTypeOf(parseDescr('<f4')).toMatchTypeOf<{ itemsize: number }>();
// DType is a union of its three forms: `form` narrows, so fields and subarrays need no `!`.
const anyDescr = parseDescr(runtimeDescr());
if (anyDescr.form === 'record') expectTypeOf(anyDescr.fields).toEqualTypeOf<readonly Field[]>();
else if (anyDescr.form === 'subarray') expectTypeOf(anyDescr.subarray.shape).toEqualTypeOf<readonly number[]>();
else expectTypeOf(anyDescr.fields).toEqualTypeOf<null>();
if (anyDescr.fields) expectTypeOf(anyDescr).toEqualTypeOf<RecordDType<string>>();
// @ts-expect-error fields may be null until `form` (or a check of `fields`) says record
parseDescr('<f4').fields.length;
function runtimeDescr(): string {
  return '<f4';
}
// A descr known only at run time: honest wide types.
declare const runtime: string;
const wide = createArray(runtime, [1]);
expectTypeOf(wide.get(0)).toEqualTypeOf<unknown>();

// @ts-expect-error a Float32Array is not what a '<i4' array holds
const wrong: Float32Array = createArray('<i4', [1]).data;
void wrong;

// Arrays whose dtype is known only at run time: `expect` checks it once and types the result.
import { arrayFromValues, decodeNpy, decodeNpz, getField, isDType, openNpyUrl } from '@npyts/core';
import { loadNpy, loadNpySync, openNpyFile, openNpyFileSync, openNpz, openNpzSync, loadNpz, loadNpzSync } from '@npyts/core/node';
declare const bytes: Uint8Array;
expectTypeOf(decodeNpy(bytes)).toEqualTypeOf<NdArray>();
expectTypeOf(decodeNpy(bytes).get(0)).toEqualTypeOf<unknown>();
expectTypeOf(decodeNpy(bytes, { expect: '<f4' }).data).toEqualTypeOf<Float32Array>();
const loaded: Float32Array = loadNpySync('x.npy', { expect: '<f4' }).data;
void loaded;
expectTypeOf(openNpzSync('x.npz').getSync('w', { expect: '<f8' }).data).toEqualTypeOf<Float64Array>();
expectTypeOf(decodeNpz(bytes).getSync('w', { expect: '|b1' }).get(0)).toEqualTypeOf<boolean>();
expectTypeOf(openNpyFileSync('x.npy', { expect: '<i4' }).read([0], [2]).data).toEqualTypeOf<Int32Array>();
// The async names (the plain ones) return promises of the same types, and take a signal.
async function asyncApi(): Promise<void> {
  const w: Float32Array = (await loadNpy('x.npy', { expect: '<f4', signal: AbortSignal.timeout(1000) })).data;
  void w;
  await using z = await openNpz('x.npz');
  expectTypeOf((await z.get('w', { expect: '<f8' })).data).toEqualTypeOf<Float64Array>();
  await using h = await openNpyFile('x.npy', { expect: '<i4' });
  expectTypeOf((await h.read([0], [2])).data).toEqualTypeOf<Int32Array>();
  // @ts-expect-error an async handle's read is a promise, not an array
  const notYet: Int32Array = h.read([0], [2]).data;
  void notYet;
  // The archive's file handle and its read driver are internal: not in the published types.
  // @ts-expect-error fh is internal
  void z.fh;
  // @ts-expect-error run is internal
  void z.run;
}
void asyncApi;

// Sources in any runtime, memory maps, OPFS access handles and ragged readers keep the types too.
import { openNpy as openAnywhere, openNpyAccessHandle, type SyncAccessHandle } from '@npyts/core';
import {
  createNpy,
  createNpySync,
  openRagged,
  openRaggedSync,
  raggedToObjectArray,
  saveNpySync,
  saveRagged,
  saveRaggedSync,
  saveReferences,
  type MappedArray,
} from '@npyts/core/node';
import { stringDTypeCodec } from '@npyts/core/pickle';
import type { CrcOptions, NpzArchive, RaggedElement, RaggedLayout, SyncByteSource, AsyncByteSource, ByteSource, NpyReader } from '@npyts/core';
import { openNpz as openNpzAnywhere, urlSource, blobSource, bytesSource, readNpy as readNpyStream } from '@npyts/core';
async function moreApi(blob: Blob, access: SyncAccessHandle): Promise<void> {
  const fromBlob = await openAnywhere(blob, { expect: '<u2' });
  expectTypeOf((await fromBlob.read([0], [4], { signal: AbortSignal.timeout(100) })).data).toEqualTypeOf<Uint16Array>();
  // Every reader tells what it has read, whatever it was opened from (a URL, a Blob, bytes).
  expectTypeOf(fromBlob.stats.requests).toEqualTypeOf<number>();
  expectTypeOf((await openAnywhere('https://example.org/x.npy')).stats.cached).toEqualTypeOf<number>();
  using mapped = loadNpySync('x.npy', { mmap: 'r', expect: '<f8' });
  expectTypeOf(mapped).toEqualTypeOf<MappedArray<'<f8'>>();
  const column: Float64Array = mapped.data;
  void column;
  expectTypeOf(await loadNpy('x.npy', { mmap: 'c' })).toEqualTypeOf<MappedArray>();
  expectTypeOf(await createNpy('y.npy', { dtype: '<f4', shape: [2], mmap: true })).toEqualTypeOf<MappedArray>();
  createNpySync('z.npy', { dtype: '<f4', shape: [2] }).writeRegion([0], { data: new Float32Array(2) });
  const opfs = openNpyAccessHandle(access, { expect: '|b1' });
  expectTypeOf(opfs.read([0], [1]).get(0)).toEqualTypeOf<boolean>();
  await using words = await openRagged('words.npy');
  for await (const chunk of words.chunks(10)) expectTypeOf(chunk.length).toEqualTypeOf<number>();
  // @ts-expect-error an async ragged read is a promise
  const first: string = words.get(0);
  void first;
  // Layouts, N-d indexes and references: options and facts are typed, elements addressed by multi-index.
  await saveRagged('tags.npy', ['a', 'b'], { layout: 'zero-terminated' });
  // @ts-expect-error no such layout
  await saveRagged('tags.npy', ['a'], { layout: 'lengths' });
  saveRaggedSync('grid.npy', ['a', 'b', 'c', 'd'], { shape: [2, 2], layout: 'offsets' });
  await saveReferences('picks.npy', { data: new Int32Array([0, 1]), shape: [2] }, 'frames.npy', { signal: AbortSignal.timeout(100) });
  const grid = openRaggedSync('grid.npy');
  expectTypeOf(grid.layout).toEqualTypeOf<RaggedLayout>();
  expectTypeOf(grid.indexShape).toEqualTypeOf<number[]>();
  expectTypeOf(grid.get([1, 0])).toEqualTypeOf<RaggedElement>();
  expectTypeOf(await words.bounds([0])).toEqualTypeOf<[number, number]>();
  expectTypeOf(words.raggedShape).toEqualTypeOf<string>();
  // A ragged array of strings back to numpy 2's StringDType, through the codec slot every writer has.
  saveNpySync('strings.npy', raggedToObjectArray(grid), { pickle: stringDTypeCodec });
}
void moreApi;
expectTypeOf(openNpyUrl('http://h/x.npy', { expect: '<u2' })).resolves.toMatchTypeOf<{ read(s: number[], c: number[]): Promise<NdArray<'<u2'>> }>();

// Guards narrow without casts.
const anyArray = decodeNpy(bytes);
if (isDType(anyArray, '<f8')) expectTypeOf(anyArray.data).toEqualTypeOf<Float64Array>();
if (anyArray.is('float')) expectTypeOf(anyArray.get(0)).toEqualTypeOf<number>();
if (anyArray.is('int')) expectTypeOf(anyArray.get(0)).toEqualTypeOf<number | bigint>();
if (anyArray.is('str')) expectTypeOf(anyArray.get(0)).toEqualTypeOf<string>();
if (anyArray.is('complex')) expectTypeOf(anyArray.get(0)).toEqualTypeOf<Complex>();

// Record fields by dotted path, checked against the record type.
expectTypeOf(getField(rec, 'pos.x').data).toEqualTypeOf<Float64Array>();
expectTypeOf(getField(rec, 'id').data).toEqualTypeOf<Uint32Array>();
expectTypeOf(getField(rec, 'm').get(0, 1, 2)).toEqualTypeOf<number>();
// @ts-expect-error no field 'pos.z'
getField(rec, 'pos.z');
// @ts-expect-error no field 'nope'
getField(rec, 'nope');
// A record known only at run time takes any path (checked when it runs).
expectTypeOf(getField(anyArray, 'a.b')).toEqualTypeOf<NdArray>();
// Field names with dots: the longest name that matches is taken first, as getField does when it runs.
const dotted = createArray(
  [
    ['a', [['b', '<i4']]],
    ['a.b', '<f8'],
    ['x.y', [['z', '<i2']]],
  ],
  [1],
);
expectTypeOf(getField(dotted, 'a.b').data).toEqualTypeOf<Float64Array>();
expectTypeOf(getField(dotted, 'x.y.z').data).toEqualTypeOf<Int16Array>();
expectTypeOf(getField(dotted, 'a').get(0)).toEqualTypeOf<{ b: number }>();

// Values of the wrong type are compile errors.
expectTypeOf(
  arrayFromValues(
    [
      [1, 2],
      [3, 4],
    ],
    '<f4',
  ),
).toEqualTypeOf<NdArray<'<f4'>>();
arrayFromValues([1n, 2], '<i8');
arrayFromValues(['a', 'b'], '<U3');
arrayFromValues(
  [
    {
      pos: { x: 1, y: 2 },
      id: 3,
      m: [
        [1, 2, 3],
        [4, 5, 6],
      ],
    },
  ],
  [
    [
      'pos',
      [
        ['x', '<f8'],
        ['y', '<f8'],
      ],
    ],
    [['title', 'id'], '<u4'],
    ['m', '<f4', [2, 3]],
  ],
);
// @ts-expect-error strings are not float32 values
arrayFromValues(['a'], '<f4');
const posAndId = [
  [
    'pos',
    [
      ['x', '<f8'],
      ['y', '<f8'],
    ],
  ],
  ['id', '<u4'],
] as const;
// @ts-expect-error a record needs every field (one line: TypeScript 5 and 7 place the error differently)
arrayFromValues([{ pos: { x: 1, y: 2 } }], posAndId);

// The adapters carry the types on.
import { fromStdlib, toStdlib, toStdlibField, toStdlibFields, type StdlibFieldMark } from '@npyts/stdlib';
import { toTensor } from '@npyts/tfjs';
import type { float32ndarray, genericndarray, boolndarray, complex128ndarray, int16ndarray } from '@stdlib/types/ndarray';
expectTypeOf(toStdlib(createArray('<f4', [2]))).toEqualTypeOf<float32ndarray>();
expectTypeOf(toStdlib(createArray('|b1', [2]))).toEqualTypeOf<boolndarray>();
expectTypeOf(toStdlib(createArray('<c16', [2]))).toEqualTypeOf<complex128ndarray>();
expectTypeOf(toStdlib(createArray('>i2', [2]))).toEqualTypeOf<int16ndarray>();
expectTypeOf(toStdlib(createArray('<i8', [2]), { int64: 'generic' })).toEqualTypeOf<genericndarray<bigint>>();
// Refused without an int64 option: not an ndarray, so using it as one is a compile error (it was `never`, which compiled).
const takesFloat64 = (x: import('@stdlib/types/ndarray').float64ndarray): number => x.length;
// @ts-expect-error an int64 array needs { int64 } to be an ndarray
takesFloat64(toStdlib(createArray('<i8', [2])));
// @ts-expect-error a long double needs { longDouble: 'float64' }
toStdlib(createArray('<f16', [2])).get(0);
expectTypeOf(toStdlib(createArray('<i8', [2]), { int64: 'float64' })).toEqualTypeOf<import('@stdlib/types/ndarray').float64ndarray>();
expectTypeOf(toStdlib(createArray('<M8[s]', [2]), { int64: 'float64', nat: 'NaN' })).toEqualTypeOf<import('@stdlib/types/ndarray').float64ndarray>();
expectTypeOf(toStdlib(createArray('<f2', [2]), { float16: 'float32' })).toEqualTypeOf<float32ndarray>();
expectTypeOf(toStdlib(createArray('<f2', [2]))).toEqualTypeOf<import('@stdlib/types/ndarray').float16ndarray>();
// Fields say whether they are views.
expectTypeOf(toStdlibFields(rec).pos.x).toEqualTypeOf<import('@stdlib/types/ndarray').float64ndarray & StdlibFieldMark>();
expectTypeOf(toStdlibFields(rec, { view: true }).pos.x.isView).toEqualTypeOf<boolean>();
// fromStdlib takes a descr, checked as descrs are.
expectTypeOf(fromStdlib(toStdlib(createArray('<f8', [2])), { dtype: '<f4', round: true }).shape).toEqualTypeOf<number[]>();
// One path syntax: toStdlibField takes getField's dotted path and types what it names.
expectTypeOf(fromStdlib(toStdlib(createArray('<f8', [2]))).shape).toEqualTypeOf<number[]>(); // a stdlib ndarray goes back without a cast
expectTypeOf(toStdlibField(rec, 'pos.x')).toEqualTypeOf<import('@stdlib/types/ndarray').float64ndarray & StdlibFieldMark>();
expectTypeOf(toStdlibField(rec, 'pos').y).toEqualTypeOf<import('@stdlib/types/ndarray').float64ndarray & StdlibFieldMark>();
// @ts-expect-error: no field 'pos.z'
toStdlibField(rec, 'pos.z');
expectTypeOf(toTensor(createArray('<f8', [2])).dtype).toEqualTypeOf<'float32'>();
expectTypeOf(toTensor(createArray('<u2', [2])).dtype).toEqualTypeOf<'int32'>();
expectTypeOf(toTensor(createArray('<U3', [2])).dtype).toEqualTypeOf<'string'>();
expectTypeOf(toTensor(rec)).toEqualTypeOf<never>();

// Masked arrays from pickles: data and mask are arrays, no cast.
import type { PyMaskedArray } from '@npyts/core/pickle';
declare const masked: PyMaskedArray;
expectTypeOf(masked.data).toEqualTypeOf<NdArray>();
expectTypeOf(masked.mask.toList()).toEqualTypeOf<import('@npyts/core').Nested<unknown>>();

// transpose keeps the descr type; npz writes take other files and a progress callback.
import { transpose, encodeNpz } from '@npyts/core';
expectTypeOf(transpose(createArray('<f4', [2, 3]))).toEqualTypeOf<NdArray<'<f4'>>();
expectTypeOf(transpose(createArray('>i8', [2, 3, 4]), [2, 0, 1]).data).toEqualTypeOf<BigInt64Array>();
expectTypeOf(
  encodeNpz({ w: f4 }, { files: { 'model.json': '{}', 'raw.bin': new Uint8Array(1) }, onProgress: (done: number, total: number) => void [done, total] }),
).toEqualTypeOf<Uint8Array>();
// @ts-expect-error: a file's content is text or bytes
encodeNpz({ w: f4 }, { files: { 'n.json': 3 } });

// Every archive has the same async get: the expected descr types the member; getAll maps keys to arrays.
expectTypeOf(decodeNpz(bytes).get('w', { expect: '<f4', signal: AbortSignal.timeout(1000) })).toEqualTypeOf<Promise<NdArray<'<f4'>>>();
expectTypeOf(decodeNpz(bytes).getSync('w', { expect: '<f4' })).toEqualTypeOf<NdArray<'<f4'>>();
expectTypeOf(decodeNpz(bytes).getAll()).toEqualTypeOf<Promise<Map<string, NdArray>>>();
expectTypeOf(loadNpzSync('x.npz')).toEqualTypeOf<Map<string, NdArray>>();
// Object arrays: the same opt-in as loadNpy.
expectTypeOf(loadNpzSync('x.npz', { allowPickle: true })).toEqualTypeOf<Map<string, NdArray>>();
expectTypeOf(openNpzSync('x.npz', { allowPickle: true }).getSync('o')).toEqualTypeOf<NdArray>();
expectTypeOf(loadNpz('x.npz')).toEqualTypeOf<Promise<Map<string, NdArray>>>();
// @ts-expect-error: get takes a member name
void decodeNpz(bytes).get(3);
// The CRC-32 opt-out is an archive option of every opener (a boolean), not a per-read one.
expectTypeOf(loadNpz('x.npz', { checkCrc: false })).toEqualTypeOf<Promise<Map<string, NdArray>>>();
expectTypeOf(decodeNpz(bytes, { checkCrc: false }).checksCrc).toEqualTypeOf<boolean>();
// The option has a name of its own, for code that passes it along.
const crcOff: CrcOptions = { checkCrc: false };
expectTypeOf(openNpzSync('x.npz', crcOff)).toEqualTypeOf<NpzArchive<SyncByteSource>>();
// One archive over any source: the async methods everywhere, the blocking ones only where reads block.
expectTypeOf(openNpzAnywhere('https://example.org/x.npz')).toEqualTypeOf<Promise<NpzArchive>>();
// readNpy of a response, typed by the dtype it expects (checked when the header arrives).
const streamed = await readNpyStream(new Response(new Uint8Array(0)), { expect: '<f4' });
expectTypeOf(streamed).toEqualTypeOf<NdArray<'<f4'>>();
expectTypeOf(streamed.get(0)).toEqualTypeOf<number>();
const remote = await openNpzAnywhere(new Blob([]));
expectTypeOf(remote.get('w', { expect: '<f4' })).toEqualTypeOf<Promise<NdArray<'<f4'>>>();
expectTypeOf(remote.openMember('w', { expect: '<i8' })).toEqualTypeOf<Promise<NpyReader<'<i8'>>>();
// @ts-expect-error: an archive whose source may read asynchronously has no blocking reads
void remote.getSync('w');
expectTypeOf(decodeNpz(bytes).getSync('w')).toEqualTypeOf<NdArray>();
// Bytes (a blocking source) give an archive with the blocking methods, without a cast.
const inMemory = await openNpzAnywhere(new Uint8Array(0));
expectTypeOf(inMemory.getSync('w', { expect: '<f8' })).toEqualTypeOf<NdArray<'<f8'>>();
expectTypeOf(inMemory).toEqualTypeOf<NpzArchive<SyncByteSource>>();
expectTypeOf(bytesSource(bytes)).toMatchTypeOf<SyncByteSource>();
expectTypeOf(blobSource(new Blob([]))).toMatchTypeOf<AsyncByteSource>();
expectTypeOf(urlSource('https://example.org/x.npz')).toMatchTypeOf<Promise<ByteSource>>();
// @ts-expect-error: checkCrc is a boolean
void openNpzSync('x.npz', { checkCrc: 'no' });

// NdArray.set takes the descr's input type.
const settable = createArray('<f4', [2]);
settable.set([0], 1.5);
// @ts-expect-error: a float32 element is set from a number
settable.set([0], 'x');

// A .npz in parts: the plan is plain data, the checksums JSON, the CRCs a record by key; no casts.
import { combineNpzChecksums, encodeNpzPart, planNpzParts, type MemberChecksum, type NpzPartPlan } from '@npyts/core';
import { crc32Combine } from '@npyts/core/plumbing';
const npzPlan = planNpzParts({ members: [{ key: 'x', dtype: '<f4', shape: [4, 2] }] });
expectTypeOf(npzPlan).toEqualTypeOf<NpzPartPlan>();
const encodedPart = encodeNpzPart(npzPlan, 1, { x: createArray('<f4', [4, 2]) });
const reported: MemberChecksum[] = JSON.parse(JSON.stringify(encodedPart.checksums));
const memberCrcs = combineNpzChecksums(npzPlan, reported);
expectTypeOf(memberCrcs).toEqualTypeOf<Record<string, number>>();
expectTypeOf(encodedPart.bytes(memberCrcs)).toEqualTypeOf<Uint8Array>();
expectTypeOf(crc32Combine(1, 2, 3)).toEqualTypeOf<number>();
// @ts-expect-error: a member needs its shape
void planNpzParts({ members: [{ key: 'x', dtype: '<f4' }] });

// Long doubles exactly (plumbing): text to a value, a value to text, and an element read exactly; no casts.
import {
  longDoubleOfDecimal,
  numpyScalarText,
  readExactItem,
  withinToleranceComplex,
  complexDistances,
  type ExactFloat,
  type ExactComplex,
} from '@npyts/core/plumbing';
const ld = longDoubleOfDecimal('1e400');
expectTypeOf(ld).toEqualTypeOf<number | ExactFloat>();
if (typeof ld !== 'number') expectTypeOf(ld.mant).toEqualTypeOf<bigint>();
expectTypeOf(numpyScalarText(ld, 16)).toEqualTypeOf<string>();
const ldArray = createArray('<f16', [2]);
const exactElement = readExactItem(ldArray.dtype, ldArray.data, 0);
void exactElement;
const z: ExactComplex = { re: ld, im: 0 };
expectTypeOf(withinToleranceComplex(z, z, 1e-7, 0)).toEqualTypeOf<boolean>();
expectTypeOf(complexDistances(z, { re: 1, im: 2 }).abs).toEqualTypeOf<number | ExactFloat>();
