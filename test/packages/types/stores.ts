// Stores (issue 67), as a strict TypeScript user writes them: a store of their own, the entries'
// `{ store }`, and what the compiler refuses. No casts.
import { expectTypeOf } from 'expect-type';
import {
  appendNpy,
  appendRagged,
  bytesSource,
  loadNpy,
  memoryStore,
  openNpy,
  openRagged,
  openWeights,
  saveNpy,
  saveRagged,
  type EditStore,
  type NdArray,
  type RaggedElement,
  type ReadStore,
  type Store,
} from '@npyts/core';
import { appendNpy as appendNpyFile, folderStore, saveNpy as saveNpyFile } from '@npyts/core/node';

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

// Appends edit a key in place under the store's lock: memoryStore, folderStore and opfsStore have both.
const editable: Store & EditStore = memoryStore();
await appendNpy('w.npy', { data: new Float32Array(2), shape: [1, 2] }, { store: editable });
await appendNpy('w.npy', { data: new Float32Array(2), shape: [1, 2] }, { store: folderStore('/tmp') });
await appendNpyFile('w.npy', { data: new Float32Array(2), shape: [1, 2] }, { store: editable });
await saveRagged('words.npy', ['a', 'bc'], { store: editable, layout: 'offsets' });
await appendRagged('words.npy', ['def'], { store: editable });
const words = await openRagged('words.npy', { store: readOnly });
expectTypeOf(await words.get(0)).toEqualTypeOf<RaggedElement>();
// @ts-expect-error: a store typed without lock and edit (a Store) cannot be appended to
await appendNpy('w.npy', { data: new Float32Array(2) }, { store });
// @ts-expect-error: nor through the path entry
await appendNpyFile('w.npy', { data: new Float32Array(2) }, { store });
// @ts-expect-error: a read store cannot be appended to
await appendNpy('w.npy', { data: new Float32Array(2) }, { store: readOnly });
// @ts-expect-error: a ragged append needs lock and edit too
await appendRagged('words.npy', ['def'], { store });
// A store of one's own has them when it says so: lock without edit is not enough.
const lockOnly: Store & Pick<EditStore, 'lock'> = { ...memoryStore(), lock: async () => ({ release() {} }) };
// @ts-expect-error: no edit
await appendNpy('w.npy', { data: new Float32Array(2) }, { store: lockOnly });
