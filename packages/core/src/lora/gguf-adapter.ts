/**
 * llama.cpp's GGUF LoRA adapters: what its `convert_lora_to_gguf.py` writes and its
 * `src/llama-adapter.cpp` loads (and `llama-export-lora` merges). The header says `general.type`
 * 'adapter', `adapter.type` 'lora' and `adapter.lora.alpha` (float32; absent is 0); each adapted
 * base tensor `<name>` (GGUF's names: `blk.0.attn_q.weight`) has two factors, `<name>.lora_a` and
 * `<name>.lora_b`. In numpy's order (ggml's `ne` reversed) A is `(r, in)` and B `(out, r)`, PEFT's
 * own orientation, for a weight `(out, in)`; the token embedding `(vocab, dim)` is the exception
 * (the converter transposes its A): A `(vocab, r)`, B `(dim, r)`, its delta `A @ Bᵀ`. The rank is
 * B's last axis (`b->ne[0]`), and each delta is scaled by `alpha / rank` times the user's scale, or
 * by the user's scale alone where alpha is 0 (llama_adapter_lora_weight::get_scale).
 */
import { NdArray } from '../array/ndarray.js';
import { NpyError } from '../errors.js';
import type { DType } from '../format/dtype.js';
import { getEvery, settleAll } from '../io/settle.js';
import { WeightFile } from '../weights/open.js';
import type { TensorInfo, TensorReadOptions } from '../weights/tensor-file.js';
import type { LoraModule } from './merge.js';

/** Whether an adapter given by path or URL names a GGUF file (by its `.gguf` name; a folder is PEFT's). */
export function isGgufAdapterName(input: string | URL): boolean {
  const path = input instanceof URL ? input.pathname : input.replace(/[?#].*$/s, '');
  return /\.gguf$/i.test(path);
}

const shapeText = (shape: readonly number[]): string => `(${shape.join(', ')})`;

/** What a GGUF LoRA adapter merges: each adapted base tensor's factors, and the factors to read them from. */
export interface GgufLoraPlan {
  readonly loras: readonly LoraModule[];
  /** The adapter's tensors as the merge reads them: the token embedding's A transposed to `(r, vocab)`. */
  readonly factors: WeightFile;
}

/**
 * The adapted base tensors of a GGUF LoRA adapter, checked as llama.cpp checks them (its header, the
 * pairs, each pair's shapes against the base's tensor), every refusal listed in one error:
 * `BAD_ADAPTER` (not a LoRA adapter, a tensor of no known part), `LORA_UNSUPPORTED` (what npyts does
 * not merge), `WEIGHT_MISMATCH` (the adapter does not fit the base). `mergeable` says which base and
 * factor dtypes a delta is made of and added to (merge.ts's rule).
 * @internal
 */
export async function planGgufLora(
  base: WeightFile,
  adapter: WeightFile,
  signal: AbortSignal | undefined,
  mergeable: (dtype: DType) => boolean,
): Promise<GgufLoraPlan> {
  const meta = adapter.metadata;
  const types = adapter.metadataTypes ?? {};
  const value = (key: string): unknown => (Object.hasOwn(meta, key) ? meta[key] : undefined);
  const generalType = value('general.type');
  if (generalType !== 'adapter') {
    throw new NpyError(
      'BAD_ADAPTER',
      `the GGUF adapter's general.type is ${JSON.stringify(generalType ?? null)}, not 'adapter' (llama.cpp refuses it too): give a LoRA adapter written by llama.cpp's convert_lora_to_gguf.py`,
    );
  }
  const adapterType = value('adapter.type');
  if (adapterType !== 'lora') {
    throw new NpyError('LORA_UNSUPPORTED', `the GGUF adapter's adapter.type is ${JSON.stringify(adapterType ?? null)}; npyts merges 'lora' adapters only`);
  }
  // llama.cpp reads the alpha as a float32 (an absent one as 0) and aborts on any other type.
  const rawAlpha = value('adapter.lora.alpha');
  const alphaType = Object.hasOwn(types, 'adapter.lora.alpha') ? types['adapter.lora.alpha'] : undefined;
  if (rawAlpha !== undefined && (alphaType !== 'FLOAT32' || typeof rawAlpha !== 'number' || !Number.isFinite(rawAlpha))) {
    throw new NpyError(
      'BAD_ADAPTER',
      `the GGUF adapter's adapter.lora.alpha is ${String(rawAlpha)} (${alphaType ?? 'of no type'}), not the finite FLOAT32 llama.cpp reads`,
    );
  }
  const alpha = rawAlpha ?? 0;

  const refused: string[] = [];
  const mismatches: string[] = [];
  if (value('adapter.alora.invocation_tokens') !== undefined) refused.push('activated LoRA (adapter.alora.invocation_tokens)');
  // A GGUF base's architecture is the adapter's, as llama.cpp requires; a base of another format says none.
  const baseArch = base.format === 'gguf' && Object.hasOwn(base.metadata, 'general.architecture') ? base.metadata['general.architecture'] : undefined;
  const arch = value('general.architecture');
  if (typeof baseArch === 'string' && arch !== baseArch) {
    mismatches.push(
      `the adapter is for the architecture ${JSON.stringify(arch ?? null)}, the base is ${JSON.stringify(baseArch)} (llama.cpp refuses the pair)`,
    );
  }

  // The pairs by base tensor name; a layer norm kept whole (mergekit-extract-lora's) is refused.
  const pairs = new Map<string, { a?: string; b?: string }>();
  const norms: string[] = [];
  const unknown: string[] = [];
  for (const name of adapter.names) {
    const m = /^(.+)\.lora_([ab])$/s.exec(name);
    if (m) {
      const pair = pairs.get(m[1]!) ?? {};
      if (m[2] === 'a') pair.a = name;
      else pair.b = name;
      pairs.set(m[1]!, pair);
    } else if (name.endsWith('_norm.weight')) norms.push(`'${name}'`);
    else unknown.push(`'${name}'`);
  }
  if (unknown.length) {
    throw new NpyError(
      'BAD_ADAPTER',
      `the GGUF adapter has tensors that are neither '.lora_a' nor '.lora_b' factors (llama.cpp refuses them as an unexpected suffix): ${unknown.join(', ')}`,
    );
  }
  if (norms.length) {
    refused.push(
      `layer norms saved whole (${norms.join(', ')}: llama.cpp skips them, and npyts neither applies nor drops them unasked; remove them from the adapter to merge as llama.cpp does)`,
    );
  }

  const baseNames = new Set(base.names);
  const quantized: string[] = [];
  const loras: LoraModule[] = [];
  const transposeA = new Set<string>();
  for (const [weight, pair] of pairs) {
    if (pair.a === undefined || pair.b === undefined) {
      mismatches.push(`'${weight}' has only ${pair.a === undefined ? 'lora_b' : 'lora_a'} of its two factors`);
      continue;
    }
    if (!baseNames.has(weight)) {
      mismatches.push(`the base has no '${weight}' for the adapter's '${pair.a}'`);
      continue;
    }
    const [w, a, b] = await settleAll([base.info(weight, { signal }), adapter.info(pair.a, { signal }), adapter.info(pair.b, { signal })]);
    if (w.quantization !== undefined || !mergeable(w.dtype)) {
      quantized.push(`'${weight}' (${w.quantization ?? w.dtype.name})`);
      continue;
    }
    if (a.shape.length !== 2 || b.shape.length !== 2 || w.shape.length !== 2) {
      refused.push(
        `'${weight}' ${shapeText(w.shape)}, whose factors are ${shapeText(a.shape)} and ${shapeText(b.shape)}: npyts merges LoRA factors of two axes only`,
      );
      continue;
    }
    // llama-adapter.cpp's checks of the shapes, in numpy's order (`ne` reversed).
    const embedding = weight.endsWith('token_embd.weight');
    const why = embedding ? embeddingMismatch(w, a, b) : matrixMismatch(w, a, b);
    if (why !== null) {
      mismatches.push(`'${weight}' ${shapeText(w.shape)}: ${why}`);
      continue;
    }
    if (!mergeable(a.dtype) || !mergeable(b.dtype)) {
      mismatches.push(`'${weight}': its factors are ${a.dtype.name} and ${b.dtype.name}, not floats`);
      continue;
    }
    const rank = b.shape[1]!;
    if (embedding) transposeA.add(pair.a);
    loras.push({
      module: weight,
      weight,
      a: pair.a,
      b: pair.b,
      // Not PEFT's Embedding (whose delta is rounded to the weight's dtype first): llama.cpp adds a
      // float32 delta; transposed, since A is stored `(vocab, r)` and read here as `(r, vocab)`.
      embedding: false,
      transpose: embedding,
      scaling: alpha === 0 ? 1 : alpha / rank,
    });
  }
  if (quantized.length) {
    refused.push(
      `quantized base weights (npyts adds a delta to float16, bfloat16, float32 and float64 weights only; merge into the unquantized base): ${quantized.join(', ')}`,
    );
  }
  if (refused.length) throw new NpyError('LORA_UNSUPPORTED', `the GGUF adapter needs what npyts does not merge: ${refused.join('; ')}`);
  if (mismatches.length) throw new NpyError('WEIGHT_MISMATCH', `the GGUF adapter does not fit the base: ${mismatches.join('; ')}`);
  return { loras, factors: transposedFactors(adapter, transposeA) };
}

/** Why a weight `(out, in)` does not take A `(r, in)` and B `(out, r)`; null when it does. */
function matrixMismatch(w: TensorInfo, a: TensorInfo, b: TensorInfo): string | null {
  if (a.shape[1] !== w.shape[1] || b.shape[0] !== w.shape[0])
    return `lora_a ${shapeText(a.shape)} and lora_b ${shapeText(b.shape)} are not (r, ${w.shape[1]}) and (${w.shape[0]}, r)`;
  if (a.shape[0] !== b.shape[1])
    return `lora_a ${shapeText(a.shape)} and lora_b ${shapeText(b.shape)} are not of one rank (llama.cpp: lora_a is not transposed, as the old 'finetune' example wrote it)`;
  return null;
}

/** Why a token embedding `(vocab, dim)` does not take A `(vocab, r)` and B `(dim, r)`; null when it does. */
function embeddingMismatch(w: TensorInfo, a: TensorInfo, b: TensorInfo): string | null {
  if (a.shape[0] !== w.shape[0] || b.shape[0] !== w.shape[1] || a.shape[1] !== b.shape[1])
    return `the token embedding's lora_a ${shapeText(a.shape)} and lora_b ${shapeText(b.shape)} are not (${w.shape[0]}, r) and (${w.shape[1]}, r)`;
  return null;
}

/** The adapter's factors with each named A given transposed (a Fortran-order view of its data: nothing copied here). */
function transposedFactors(adapter: WeightFile, transposed: ReadonlySet<string>): WeightFile {
  const turn = (a: NdArray): NdArray => new NdArray(a.dtype, [...a.shape].reverse(), a.data, a.order === 'F' ? 'C' : 'F');
  const get = async (name: string, options: TensorReadOptions = {}): Promise<NdArray> => {
    const a = await adapter.get(name, options);
    return transposed.has(name) ? turn(a) : a;
  };
  return new WeightFile({
    format: adapter.format,
    names: adapter.names,
    metadata: adapter.metadata,
    metadataTypes: adapter.metadataTypes,
    keyOf: (name: string) => adapter.keyOf(name),
    info: async (name: string, options: { signal?: AbortSignal | undefined } = {}) => {
      const info = await adapter.info(name, options);
      return transposed.has(name) ? { ...info, shape: [...info.shape].reverse() } : info;
    },
    get,
    getAll: ({ signal }: { signal?: AbortSignal | undefined } = {}) => getEvery(adapter.names, 2, (name) => get(name, { signal })),
    // The adapter is closed by whoever opened it.
    close: async () => {},
  });
}
