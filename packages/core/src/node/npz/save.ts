/** Saving .npz files: members written a piece at a time beside the target, renamed over it when complete. */
import type { NpzInput, NpzWriteOptions } from '../../npz/archive.js';
import { NPZ_WRITE_KEYS, checkNpzWriteOptions, npzWriting } from '../../npz/archive.js';
import { checkOptions, knownKeys } from '../../options.js';
import { saveNpz as saveNpzIn } from '../../store/entries.js';
import { refuseBesideStore } from '../../store/key.js';
import type { WriteStore } from '../../store/types.js';
import { QueuedSink } from '../../npz/zip.js';
import type { FileStep, Operation } from '../../io/steps.js';
import type { AsyncOptions } from '../fd.js';
import { run, runSync } from '../drive.js';
import { writingBeside, type ReplaceOptions } from '../beside.js';
import { zlibCodec } from './codec.js';
import { saveCodec, type PickleOptions } from '../../pickle/options.js';

/** Options of {@link saveNpzSync}: the archive's, and how the file is replaced; object arrays are written as pickles, as by `np.savez` and `saveNpy`. */
export interface SaveNpzOptionsSync extends NpzWriteOptions, PickleOptions, ReplaceOptions {}

/** Options of {@link saveNpz}. */
export interface SaveNpzOptions extends SaveNpzOptionsSync, AsyncOptions {
  /** The store to write the key into (`saveNpz('w.npz', arrays, { store })`): written there, not to disk. */
  store?: WriteStore | undefined;
}

const SAVE_NPZ_SYNC_KEYS = knownKeys<SaveNpzOptionsSync>({ ...NPZ_WRITE_KEYS, allowPickle: true, durable: true });
const SAVE_NPZ_KEYS = knownKeys<SaveNpzOptions>({ ...NPZ_WRITE_KEYS, allowPickle: true, durable: true, signal: true, store: true });

/**
 * Write arrays as a .npz file without blocking the event loop, member by member straight to disk
 * (the archive is never built in memory). The file appears under its name only when complete: it
 * is written beside it and renamed; an aborted or failed save leaves the old file.
 * @example
 * await saveNpz('out.npz', { a: { data: new Int32Array([1, 2]) } }, { compress: true });
 */
export async function saveNpz(path: string, arrays: NpzInput, options: SaveNpzOptions = {}): Promise<void> {
  checkOptions('saveNpz', options, SAVE_NPZ_KEYS);
  if (options.store !== undefined) {
    refuseBesideStore('saveNpz', options, ['durable']);
    const { allowPickle: _, store, ...rest } = options;
    return saveNpzIn(path, arrays, { codec: zlibCodec, ...rest, store, pickle: saveCodec(options) });
  }
  await run(savingNpz(path, arrays, options), options.signal, path);
}

/**
 * {@link saveNpz}, blocking.
 * @example
 * saveNpzSync('out.npz', { a: { data: new Int32Array([1, 2]) } });
 */
export function saveNpzSync(path: string, arrays: NpzInput, options: SaveNpzOptionsSync = {}): void {
  checkOptions('saveNpzSync', options, SAVE_NPZ_SYNC_KEYS);
  runSync(savingNpz(path, arrays, options), path);
}

/** The steps of a save: members written a piece (≤ 16 MiB) at a time into a file beside `path`, renamed over it when complete. */
function* savingNpz(path: string, arrays: NpzInput, options: SaveNpzOptionsSync): Operation<void, FileStep> {
  checkNpzWriteOptions(options); // before the file beside is made
  yield* writingBeside(
    path,
    function* (file) {
      const sink = new QueuedSink();
      for (const _ of npzWriting(sink, arrays, { codec: zlibCodec, ...options, pickle: saveCodec(options) })) yield* sink.flushing(file);
      yield* sink.flushing(file);
    },
    options,
  );
}
