// Stores (issue 67), as a strict TypeScript user writes them: a store of their own, the entries'
// `{ store }`, and what the compiler refuses. No casts.
import { expectTypeOf } from 'expect-type';
import { bytesSource, loadNpy, memoryStore, openNpy, openWeights, saveNpy, type NdArray, type ReadStore, type Store } from '@npyts/core';
import { folderStore, saveNpy as saveNpyFile } from '@npyts/core/node';

const files = new Map<string, Uint8Array>();
// A read store is one method; the key rule is npyts's, not the store's.
const readOnly: ReadStore = {
  open(key) {
    const bytes = files.get(key);
    if (bytes === undefined) throw new Error(`no ${key}`);
    return bytesSource(bytes, key);
  },
};
const store: Store = memoryStore();
await saveNpy('w.npy', { data: new Float32Array(4), shape: [2, 2] }, { store });
expectTypeOf(await loadNpy('w.npy', { store, expect: '<f4' })).toEqualTypeOf<NdArray<'<f4'>>();
await openNpy('w.npy', { store: readOnly });
await openWeights('model.safetensors.index.json', { store: readOnly });
await saveNpyFile('w.npy', { data: new Float32Array(4) }, { store: folderStore('/tmp') });

// @ts-expect-error: the main entry's saveNpy writes into a store, which it needs
await saveNpy('w.npy', { data: new Float32Array(4) }, {});
// @ts-expect-error: a read store cannot be written
await saveNpy('w.npy', { data: new Float32Array(4) }, { store: readOnly });
