/** Ragged arrays on disk (numpy#25374): one module per job, re-exported as @npyts/core/node's ragged API. */
export { heapPathOf } from './files.js';
export type { RaggedPathOptions } from '../../ragged/build.js';
export type { SaveRaggedOptions } from '../../ragged/build.js';
export { saveRagged, saveRaggedSync, saveReferences, saveReferencesSync, type SaveRaggedFileOptions } from './save.js';
export { openRagged, openRaggedSync, openRaggedRecordsSync, isRagged, isRaggedSync, type RaggedHandle, type RaggedRecordsHandle } from './read.js';
export { appendRagged, appendRaggedSync } from './append.js';
export { saveObjectArrayAsRagged, saveObjectArrayAsRaggedSync } from './convert.js';
export { raggedToObjectArray } from '../../ragged/objects.js';
