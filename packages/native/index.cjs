'use strict';
// The addon built from source at install (build/Release), as node-gyp-build finds it. When it does
// not load, requiring this throws an error that says why, and @npyts/core/node turns to the prebuilt
// binary of its platform package, else keeps to JavaScript (nativeStatus() reports the reason).
// `binary` says which file is in use.
const { readFileSync } = require('node:fs');
const { join, relative } = require('node:path');
const gypBuild = require('node-gyp-build');

let path;
try {
  path = gypBuild.path(__dirname);
} catch (e) {
  let why = null;
  try {
    why = readFileSync(join(__dirname, 'build', 'not-built.txt'), 'utf8').trim();
  } catch { /* no record: not installed through npm, or the binary was removed */ }
  throw new Error(`@npyts/native has no binary${why ? `: it was not built at install: ${why}` : ''} (${e.message.split('\n')[0]})`);
}
let addon;
try {
  addon = require(path);
} catch (e) {
  // A binary that is there but does not load (a prebuild for a newer glibc, a file damaged): say which, and the way out.
  throw new Error(
    `@npyts/native's binary ${relative(__dirname, path)} does not load here (${e.message.split('\n')[0]}); build it for this machine with \`npm rebuild @npyts/native\` (needs a C compiler), or run without it`,
  );
}
Object.defineProperty(addon, 'binary', { value: relative(__dirname, path), enumerable: false });
module.exports = addon;
