/** .npz archives on disk, one module per job: the zlib codec, the archive file, direct member reads, saves, single members. */
export { zlibCodec } from './codec.js';
export { openNpz, openNpzSync, loadNpz, loadNpzSync, type NpzFileOptions, type NpzFileOptionsSync } from './file.js';
export { saveNpz, saveNpzSync, type SaveNpzOptions, type SaveNpzOptionsSync } from './save.js';
export { streamNpzMember, openNpzMember, openNpzMemberSync } from './members.js';
