/**
 * Where bytes live, as one idea: a store maps keys (relative names: `model.safetensors`,
 * `shards/w-00001.bin`) to files. A {@link ReadStore} hands out a key's bytes as a `ByteSource`; a
 * {@link WriteStore} writes a key beside it and then replaces it. Every entry that takes
 * `{ store }` (`saveNpy(key, array, { store })`, `openWeights(key, { store })`) and every sibling a
 * file names (a sharded set's shards) goes through these, and every key is checked by the one rule
 * in store/key.ts before a store is asked for it. Stores: `memoryStore`, `urlStore`, `hookStore`,
 * `opfsStore`, and `folderStore` in `@npyts/core/node`; docs/architecture.md, "Adding a place".
 */
import type { ByteSource } from '../io/byte-source.js';
import type { HttpOptions } from '../io/url.js';

/**
 * Options of opening a key: `signal`, and the HTTP options of the file that names it (a store over
 * HTTP sends its `headers` only to that file's origin); other stores ignore them.
 */
export type StoreOpenOptions = HttpOptions;

/**
 * Keys' bytes, read by position.
 * @example
 * const store: ReadStore = { open: (key) => bytesSource(files.get(key)!) };
 * const z = await openNpz('weights.npz', { store });
 */
export interface ReadStore {
  /** The store in words, for messages (a folder, a URL's folder, "the resolve hook"). */
  readonly where?: string;
  /**
   * The bytes of `key` as a source, the caller's to close; a key the store does not hold is refused
   * (an `NpyError`, or the platform's own error). Asked only for keys that passed the key rule.
   */
  open(key: string, options?: StoreOpenOptions): ByteSource | Promise<ByteSource>;
  /**
   * A check of the store's own, beside the key rule every key passes (a folder's: no symbolic link
   * that leads out of it), made for every key a file names before any is opened.
   */
  check?(key: string, what: string): void;
  /** The keys held, where the store can list them. */
  list?(): readonly string[] | Promise<readonly string[]>;
  /**
   * The key of `target`, an absolute path or URL (a reference set's), where it lies under the store's
   * folder; null where it does not (or the store has no folder: a hook). The key is then checked as
   * every key is.
   */
  inside?(target: string): string | null;
}

/**
 * A key being written: the bytes go beside the key (a temporary file, a buffer) and replace it only
 * at `commit`, so that a reader sees the old bytes or all of the new ones.
 */
export interface StoreWriter {
  /** Write all of `bytes` at byte `at` of the new file. `bytes` may be reused once this returns or its promise settles: copy what is kept. */
  write(bytes: Uint8Array, at: number): void | Promise<void>;
  /** Replace the key with what was written. */
  commit(): void | Promise<void>;
  /** Drop what was written; the key keeps its old bytes (or stays absent). */
  abort(): void | Promise<void>;
}

/** Options of taking a key's lock: `signal` stops the wait. */
export interface LockOptions {
  signal?: AbortSignal | undefined;
}

/** A held lock of a key (see {@link WriteStore.lock}). */
export interface StoreLock {
  release(): void | Promise<void>;
}

/**
 * Keys written beside and then replaced, removed and listed.
 * @example
 * await saveNpy('w.npy', array, { store: memoryStore() });
 */
export interface WriteStore {
  /** The store in words, for messages. */
  readonly where?: string;
  /** Start writing `key` (see {@link StoreWriter}); the key passed the key rule first. */
  create(key: string): StoreWriter | Promise<StoreWriter>;
  /** Remove `key` where it is held (a missing key is no error). */
  remove(key: string): void | Promise<void>;
  /** The keys held. */
  list(): readonly string[] | Promise<readonly string[]>;
  /**
   * Hold `key` for one writer at a time, where the store can (an append takes it). A `signal` fired
   * while waiting rejects with its reason, the lock not taken.
   */
  lock?(key: string, options?: LockOptions): Promise<StoreLock>;
}

/** A store read and written (a folder, the browser's own disk, memory). */
export type Store = ReadStore & WriteStore;

/**
 * A key edited in place (see {@link EditStore.edit}): what an append reads and writes. Writes may be
 * seen by readers at once; `flush` makes them durable before anything written after it.
 */
export interface StoreEditor {
  /** The key's size in bytes now. */
  size(): number | Promise<number>;
  /** `length` bytes at `at` (fewer at the end of the key). */
  read(at: number, length: number): Uint8Array | Promise<Uint8Array>;
  /** Write all of `bytes` at byte `at` (past the end grows the key). `bytes` may be reused once this returns or its promise settles. */
  write(bytes: Uint8Array, at: number): void | Promise<void>;
  /** Make what was written durable (an fsync, an OPFS flush), before anything written after it. */
  flush(): void | Promise<void>;
  /** Release the key (what was written stays). */
  close(): void | Promise<void>;
}

/**
 * A store whose keys can be edited in place, one writer at a time: what `appendNpy(key, x, { store })`
 * and `appendRagged(key, x, { store })` need (an append writes its rows after the data, flushes
 * them, then rewrites the header's shape). `memoryStore`, `opfsStore` and `folderStore` are.
 */
export interface EditStore extends WriteStore {
  /** Open `key`, which must be held, for edits in place (the key passed the key rule first). */
  edit(key: string): StoreEditor | Promise<StoreEditor>;
  /**
   * Hold `key` for one writer at a time: a second waits until the first releases it (or is refused).
   * A `signal` fired while waiting rejects with its reason, the lock not taken.
   */
  lock(key: string, options?: LockOptions): Promise<StoreLock>;
}
