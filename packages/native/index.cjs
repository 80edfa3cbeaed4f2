'use strict';
// The compiled addon. When it was not built (see build-or-skip.cjs), requiring this throws an error
// that says why, and @npyts/core/node keeps to JavaScript (nativeStatus() reports the reason).
const { readFileSync } = require('node:fs');
const { join } = require('node:path');

try {
  module.exports = require('./build/Release/npyts_native.node');
} catch (e) {
  let why = null;
  try {
    why = readFileSync(join(__dirname, 'build', 'not-built.txt'), 'utf8').trim();
  } catch { /* no record: not installed through npm, or the binary was removed */ }
  if (why === null) throw e;
  throw new Error(`@npyts/native was not built at install: ${why}`);
}
