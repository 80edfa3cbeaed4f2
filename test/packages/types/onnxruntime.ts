// The ONNX Runtime bridge as a strict TypeScript user writes it, with onnxruntime-node's own types: no casts.
import { expectTypeOf } from 'expect-type';
import * as ort from 'onnxruntime-node';
import {
  toOrtTensor,
  fromOrtTensor,
  withWeights,
  ortTypeOf,
  checkSession,
  DEFAULT_RTOL,
  type OrtType,
  type WithWeightsResult,
  type CheckSessionReport,
} from '@npyts/onnxruntime';
import { arrayFromValues, parseDescr, type NdArray } from '@npyts/core';

declare const bytes: Uint8Array;

export async function typed(): Promise<void> {
  const a = arrayFromValues([1, 2, 3], '<f4');
  const t = toOrtTensor(a);
  // onnxruntime-common's Tensor is what onnxruntime-node's session takes and gives.
  const session = await ort.InferenceSession.create(bytes);
  const out = await session.run({ x: t, y: toOrtTensor(a, { as: 'float16' }) });
  const back = fromOrtTensor(out.y!);
  expectTypeOf(back).toEqualTypeOf<NdArray>();
  expectTypeOf(ortTypeOf(parseDescr('<i8'))).toEqualTypeOf<OrtType>();
  const r = await withWeights(bytes, 'w.safetensors', {
    signal: AbortSignal.timeout(1000),
    onProgress: ({ bytes, total, tensor }) => void [bytes / total, tensor],
  });
  expectTypeOf(r).toEqualTypeOf<WithWeightsResult>();
  const session2 = await ort.InferenceSession.create(r.model, r.sessionOptions);
  const web: { path: string; data: string | Uint8Array | Blob }[] = r.externalData;
  const inMemory: { path: string; data: Uint8Array }[] | undefined = r.sessionOptions.externalData;
  // A sharded set's index: the same result, each initializer pointing into its shard.
  expectTypeOf(await withWeights(bytes, 'model.safetensors.index.json')).toEqualTypeOf<WithWeightsResult>();
  const why: string | undefined = r.copied['fc.weight'];
  void [session2, web, inMemory, why, withWeights(bytes, 'w.npz', { inline: true })];
  // @ts-expect-error: the `as` option is a float type name
  toOrtTensor(a, { as: 'int8' });
  // onnxruntime-node's class, for instanceof in an ES module; still an ort.Tensor to its session.
  const own = toOrtTensor(a, { Tensor: ort.Tensor });
  expectTypeOf(own).toEqualTypeOf<ort.Tensor>();
  // @ts-expect-error: Tensor is a tensor class
  toOrtTensor(a, { Tensor: Float32Array });
  // onnxruntime-node's session is what checkSession takes; the copy's session maker too.
  const report = await checkSession(session, 'check.npz', {
    model: bytes,
    rtol: 10 * DEFAULT_RTOL,
    signal: AbortSignal.timeout(1000),
    createSession: (m) => ort.InferenceSession.create(m, { executionProviders: ['cpu'] }),
  });
  expectTypeOf(report).toEqualTypeOf<CheckSessionReport>();
  expectTypeOf(report.maxAbsDiff).toEqualTypeOf<number>();
  // @ts-expect-error: model is a path, URL or bytes
  await checkSession(session, 'check.npz', { model: 3 });
}
