/** Keys held in memory: a store for tests, for bytes made in a page, and the model of every other store. */
import { bytesSource } from '../io/byte-source.js';
import { keyLocks } from './append.js';
import type { EditStore, Store, StoreEditor } from './types.js';
import { joinWrites, missingKey } from './write.js';

/**
 * A store in memory: each key's bytes in a `Map` (`files`), replaced whole at commit. An append edits
 * a key in place, as a file is: rows past the end go into room beyond the bytes the `Map` holds and
 * appear there at `flush` (the `Map` then holds a longer view); the header is rewritten in the bytes.
 * @example
 * const store = memoryStore();
 * await saveNpy('w.npy', { data: new Float32Array([1, 2]) }, { store });
 * store.files.get('w.npy');   // the bytes np.save writes
 */
export function memoryStore(files: Map<string, Uint8Array> = new Map()): Store & EditStore & { readonly files: Map<string, Uint8Array> } {
  const where = 'the memory store';
  // The whole buffer (with room to grow) behind each view this store put in `files`.
  const room = new WeakMap<Uint8Array, Uint8Array>();
  const locks = keyLocks();
  return {
    where,
    files,
    open(key) {
      const bytes = files.get(key);
      if (bytes === undefined) throw missingKey(key, where);
      return bytesSource(bytes, key);
    },
    create(key) {
      const writes: [Uint8Array, number][] = [];
      return {
        write: (bytes, at) => void writes.push([bytes.slice(), at]),
        commit: () => void files.set(key, joinWrites(writes)),
        abort: () => void (writes.length = 0),
      };
    },
    edit(key): StoreEditor {
      const held = files.get(key);
      if (held === undefined) throw missingKey(key, where);
      let buffer = room.get(held) ?? held;
      let length = held.length;
      const publish = (): void => {
        const view = buffer.subarray(0, length);
        room.set(view, buffer);
        files.set(key, view);
      };
      return {
        size: () => length,
        read: (at, n) => buffer.slice(Math.min(at, length), Math.min(at + n, length)),
        write(bytes, at) {
          const end = at + bytes.length;
          if (end > buffer.length) {
            // Grown by doubling (bounded by the bytes written), the old bytes copied once.
            const grown = new Uint8Array(Math.max(end, buffer.length * 2));
            grown.set(buffer.subarray(0, length));
            buffer = grown;
          }
          buffer.set(bytes, at);
          length = Math.max(length, end);
        },
        flush: publish,
        close: publish,
      };
    },
    lock: (key, options) => locks.lock(key, options),
    remove: (key) => void files.delete(key),
    list: () => [...files.keys()],
  };
}
