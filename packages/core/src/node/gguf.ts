/** GGUF files written on disk: beside the target, then renamed over it. */
import { GGUF_WRITE_KEYS, ggufParts, type GgufInput, type GgufWriteOptions } from '../gguf/encode.js';
import { checkOptions, knownKeys, pickOptions } from '../options.js';
import type { FileRef, FileStep, Operation } from '../io/steps.js';
import { REPLACE_KEYS, writingBeside, type ReplaceOptions } from './beside.js';
import { run, runSync } from './drive.js';
import type { AsyncOptions } from './fd.js';

/** Options of {@link saveGgufSync}: what to write, and how the file is replaced. */
export interface SaveGgufOptionsSync extends GgufWriteOptions, ReplaceOptions {}

/** Options of {@link saveGguf}. */
export interface SaveGgufOptions extends SaveGgufOptionsSync, AsyncOptions {}

const SAVE_SYNC_KEYS = knownKeys<SaveGgufOptionsSync>({ ...GGUF_WRITE_KEYS, ...REPLACE_KEYS });
const SAVE_KEYS = knownKeys<SaveGgufOptions>({ ...GGUF_WRITE_KEYS, ...REPLACE_KEYS, signal: true });

/**
 * Write tensors as a GGUF file that gguf-py and llama.cpp read, without blocking: checked before
 * anything is written, each tensor converted or quantized as it is written (one at a time), written
 * beside `path` and renamed over it when complete (an error, such as a NaN in a quantized tensor,
 * leaves the old file).
 * @example
 * await saveGguf('model-q8_0.gguf', tensors, { type: 'q8_0', metadata: { 'general.architecture': 'llama' } });
 */
export async function saveGguf(path: string, tensors: GgufInput, options: SaveGgufOptions = {}): Promise<void> {
  checkOptions('saveGguf', options, SAVE_KEYS);
  await run(savingGguf(path, tensors, options), options.signal, path);
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
    function* (file: FileRef) {
      yield { op: 'write', file, bytes: parts.header, at: null };
      for (const bytes of parts.bodies()) if (bytes.length) yield { op: 'write', file, bytes, at: null };
    },
    options,
  );
}
