/** .safetensors files on disk: opened by position, written beside the target and renamed over it. */
import type { SyncByteSource } from '../io/byte-source.js';
import { openingOver, type NpySource } from '../io/open.js';
import type { FileRef, Operation } from '../io/steps.js';
import type { HttpOptions } from '../io/url.js';
import { SafetensorsFile } from '../safetensors/file.js';
import { safetensorsParts, type SafetensorsInput, type SafetensorsWriteOptions } from '../safetensors/encode.js';
import { writingBeside, type ReplaceOptions } from './beside.js';
import { run, runSync } from './drive.js';
import type { AsyncOptions } from './fd.js';
import { fileSource, nodeSourceOf } from './sources.js';
import { checkOptions, knownKeys } from '../options.js';
import { refuseBesideStore, saveSafetensors as saveSafetensorsIn } from '../store/entries.js';
import type { WriteStore } from '../store/types.js';

/**
 * Open a .safetensors file without blocking: a path or `file:` URL (positional reads), an `http(s)`
 * URL (range requests), a `Blob`, bytes or a byte source. The header is read and checked now, each
 * tensor when asked for. Close it, or `await using` it.
 * @example
 * await using f = await openSafetensors('model.safetensors');
 * f.names;                                // tensor names, in file order
 * const w = await f.get('fc.weight');
 */
export async function openSafetensors(input: string | NpySource, options: HttpOptions = {}): Promise<SafetensorsFile> {
  const source = await nodeSourceOf(input, { ...options, tailBytes: 1 });
  return openingOver(source, input, () => SafetensorsFile.open(source, options));
}

/**
 * {@link openSafetensors} of a path, blocking: `getSync` reads tensors.
 * @example
 * using f = openSafetensorsSync('model.safetensors');
 * const w = f.getSync('fc.weight');
 */
export function openSafetensorsSync(path: string): SafetensorsFile<SyncByteSource> {
  const source = fileSource(path);
  try {
    return SafetensorsFile.openSync(source);
  } catch (e) {
    source.close?.();
    throw e;
  }
}

/** Options of {@link saveSafetensorsSync}: the file's metadata, and how the file is replaced. */
export interface SaveSafetensorsOptionsSync extends SafetensorsWriteOptions, ReplaceOptions {}

/** Options of {@link saveSafetensors}. */
export interface SaveSafetensorsOptions extends SaveSafetensorsOptionsSync, AsyncOptions {
  /** The store to write the key into (`saveSafetensors('m.safetensors', tensors, { store })`): written there, not to disk. */
  store?: WriteStore | undefined;
}

const SAVE_SYNC_KEYS = knownKeys<SaveSafetensorsOptionsSync>({ metadata: true, durable: true });
const SAVE_KEYS = knownKeys<SaveSafetensorsOptions>({ metadata: true, durable: true, signal: true, store: true });

/**
 * Write tensors as a .safetensors file that Python's `safetensors` loads, without blocking: checked
 * before anything is written, written beside `path` and renamed over it when complete.
 * @example
 * await saveSafetensors('model.safetensors', { 'fc.weight': w, 'fc.bias': b }, { metadata: { format: 'pt' } });
 */
export async function saveSafetensors(path: string, tensors: SafetensorsInput, options: SaveSafetensorsOptions = {}): Promise<void> {
  checkOptions('saveSafetensors', options, SAVE_KEYS);
  if (options.store !== undefined) {
    refuseBesideStore('saveSafetensors', options, ['durable']);
    return saveSafetensorsIn(path, tensors, { ...options, store: options.store });
  }
  await run(savingSafetensors(path, tensors, options), options.signal, path);
}

/**
 * {@link saveSafetensors}, blocking.
 * @example
 * saveSafetensorsSync('model.safetensors', { w });
 */
export function saveSafetensorsSync(path: string, tensors: SafetensorsInput, options: SaveSafetensorsOptionsSync = {}): void {
  checkOptions('saveSafetensorsSync', options, SAVE_SYNC_KEYS);
  runSync(savingSafetensors(path, tensors, options), path);
}

function* savingSafetensors(path: string, tensors: SafetensorsInput, options: SaveSafetensorsOptionsSync): Operation<void> {
  const { header, bodies } = safetensorsParts(tensors, options); // checked before the file beside is made
  yield* writingBeside(
    path,
    function* (file: FileRef) {
      yield { op: 'write', file, bytes: header, at: null };
      for (const bytes of bodies) if (bytes.length) yield { op: 'write', file, bytes, at: null };
    },
    options,
  );
}
