/** GGUF files written on disk: beside the target, then renamed over it. */
import type { NdArray } from '../array/ndarray.js';
import { GGUF_WRITE_KEYS, ggufPlan, ggufParts, type GgufInput, type GgufPlan, type GgufTensorEntry, type GgufWriteOptions } from '../gguf/encode.js';
import { isTensorSource, type TensorFile } from '../weights/tensor-file.js';
import { checkOptions, knownKeys, pickOptions } from '../options.js';
import { perform, type AwaitStep, type FileRef, type FileStep, type Operation } from '../io/steps.js';
import { REPLACE_KEYS, writingBeside, type ReplaceOptions } from './beside.js';
import { run, runSync } from './drive.js';
import type { AsyncOptions } from './fd.js';

/** Options of {@link saveGgufSync}: what to write, and how the file is replaced. */
export interface SaveGgufOptionsSync extends GgufWriteOptions, ReplaceOptions {}

/**
 * Tensors read one at a time: a weight file from `openWeights` (any format), or anything with its
 * `names`, `info` and `get`. Only one tensor's data is held at a time while it is written.
 */
export type GgufSource = Pick<TensorFile, 'names' | 'info' | 'get'>;

/** Options of {@link saveGguf}. */
export interface SaveGgufOptions extends SaveGgufOptionsSync, AsyncOptions {}

const SAVE_SYNC_KEYS = knownKeys<SaveGgufOptionsSync>({ ...GGUF_WRITE_KEYS, ...REPLACE_KEYS });
const SAVE_KEYS = knownKeys<SaveGgufOptions>({ ...GGUF_WRITE_KEYS, ...REPLACE_KEYS, signal: true });

/**
 * Write tensors as a GGUF file that gguf-py and llama.cpp read, without blocking: checked before
 * anything is written, each tensor converted or quantized as it is written (one at a time), written
 * beside `path` and renamed over it when complete (an error, such as a NaN in a quantized tensor,
 * leaves the old file). `tensors` may be a weight file (`openWeights`): the header is made from each
 * tensor's info, and each tensor is read when its turn comes, so memory stays near the largest
 * tensor (its type is then one for all: `type` a string, not a function).
 * @example
 * await saveGguf('model-q8_0.gguf', tensors, { type: 'q8_0', metadata: { 'general.architecture': 'llama' } });
 * await using w = await openWeights('model.safetensors');
 * await saveGguf('model-q8_0.gguf', w, { type: 'q8_0' });
 */
export async function saveGguf(path: string, tensors: GgufInput | GgufSource, options: SaveGgufOptions = {}): Promise<void> {
  checkOptions('saveGguf', options, SAVE_KEYS);
  if (!isTensorSource(tensors)) {
    await run(savingGguf(path, tensors, options), options.signal, path);
    return;
  }
  options.signal?.throwIfAborted();
  const entries: GgufTensorEntry[] = [];
  for (const name of tensors.names) {
    const info = await tensors.info(name, { signal: options.signal });
    entries.push({ name, dtype: info.dtype, shape: info.shape });
  }
  // Checked before the file beside is made; the plan takes only the write options.
  const plan = ggufPlan(entries, pickOptions(options, GGUF_WRITE_KEYS));
  await run(
    writingPlan(path, plan, (name, signal) => tensors.get(name, { signal }), options),
    options.signal,
    path,
  );
}

/**
 * {@link saveGguf}, blocking.
 * @example
 * saveGgufSync('model.gguf', { 'output.weight': w }, { type: 'f16' });
 */
export function saveGgufSync(path: string, tensors: GgufInput, options: SaveGgufOptionsSync = {}): void {
  checkOptions('saveGgufSync', options, SAVE_SYNC_KEYS);
  runSync(savingGguf(path, tensors, options), path);
}

function* savingGguf(path: string, tensors: GgufInput, options: SaveGgufOptionsSync): Operation<void, FileStep> {
  // Checked before the file beside is made; ggufParts takes only the write options.
  const parts = ggufParts(tensors, pickOptions(options, GGUF_WRITE_KEYS));
  yield* writingBeside(
    path,
    function* (file: FileRef): Operation<void, FileStep> {
      yield { op: 'write', file, bytes: parts.header, at: null };
      for (const bytes of parts.bodies()) if (bytes.length) yield { op: 'write', file, bytes, at: null };
    },
    options,
  );
}

/** A planned file written beside `path`: the header, then each tensor read (`get`), converted and written before the next is read. */
function* writingPlan(
  path: string,
  plan: GgufPlan,
  get: (name: string, signal: AbortSignal | undefined) => Promise<NdArray>,
  options: SaveGgufOptionsSync,
): Operation<void, FileStep | AwaitStep> {
  yield* writingBeside(
    path,
    function* (file: FileRef): Operation<void, FileStep | AwaitStep> {
      yield { op: 'write', file, bytes: plan.header, at: null };
      for (const [i, t] of plan.tensors.entries()) {
        const array = yield* perform<AwaitStep<NdArray>>({ op: 'await', value: (signal) => get(t.name, signal) });
        for (const bytes of plan.body(i, array)) if (bytes.length) yield { op: 'write', file, bytes, at: null };
      }
    },
    options,
  );
}
