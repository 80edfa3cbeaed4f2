// Weights edited and loaded with progress (issues 68 and 70), as a strict TypeScript user writes
// them: GGUF written, a LoRA adapter merged and saved streamed and sharded, progress read. No casts.
import { expectTypeOf } from 'expect-type';
import { GGUF_FILE_TYPES, encodeGguf, type LoadProgress, type WeightFile } from '@npyts/core';
import { loadWeights, mergeLora, openWeights, saveGguf, saveSafetensors } from '@npyts/core/node';

const w = { data: new Float32Array(64), shape: [2, 32] };
expectTypeOf(encodeGguf({ w }, { type: 'q8_0', metadata: { 'general.name': 'x' }, metadataTypes: { 'general.name': 'STRING' } })).toEqualTypeOf<Uint8Array>();
await saveGguf('w.gguf', { w }, { type: (name) => (name.endsWith('.weight') ? 'q4_0' : undefined) });
expectTypeOf(GGUF_FILE_TYPES.q8_0).toEqualTypeOf<number>();
// @ts-expect-error: a type gguf-py does not name
encodeGguf({ w }, { type: 'q4_k' });

const merged = await mergeLora('base.safetensors', 'adapter/', { scale: 0.5 });
expectTypeOf(merged).toEqualTypeOf<WeightFile>();
// A weight file is saved a tensor at a time, sharded as huggingface_hub shards.
await saveSafetensors('out/', merged, { maxShardSize: '5GB', metadata: { format: 'pt' } });
await saveSafetensors('out/', await openWeights('model.pt'), { maxShardSize: 5_000_000 });

const seen: LoadProgress[] = [];
await loadWeights('model.safetensors', { onProgress: (p) => void seen.push(p) });
expectTypeOf(seen[0]?.bytes).toEqualTypeOf<number | undefined>();
