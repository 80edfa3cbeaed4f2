/** Keys held in memory: a store for tests, for bytes made in a page, and the model of every other store. */
import { bytesSource } from '../io/byte-source.js';
import type { Store } from './types.js';
import { joinWrites, missingKey } from './write.js';

/**
 * A store in memory: each key's bytes in a `Map` (`files`), replaced whole at commit.
 * @example
 * const store = memoryStore();
 * await saveNpy('w.npy', { data: new Float32Array([1, 2]) }, { store });
 * store.files.get('w.npy');   // the bytes np.save writes
 */
export function memoryStore(files: Map<string, Uint8Array> = new Map()): Store & { readonly files: Map<string, Uint8Array> } {
  const where = 'the memory store';
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
    remove: (key) => void files.delete(key),
    list: () => [...files.keys()],
  };
}
