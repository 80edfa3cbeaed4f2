// Asked by binding.gyp: whether to build with libdeflate, and how to link it. The static archive is
// preferred (asked of the compiler that builds, so a cross compiler finds its own architecture's),
// so that a binary runs on machines without libdeflate installed; the shared library otherwise.
'use strict';
const { spawnSync } = require('node:child_process');
const { existsSync } = require('node:fs');

const header = existsSync('/usr/include/libdeflate.h');
const cc = process.env.CC || 'cc';
const asked = spawnSync(cc, ['-print-file-name=libdeflate.a'], { encoding: 'utf8' });
const archive = asked.status === 0 ? asked.stdout.trim() : '';
const staticLib = archive.startsWith('/') && existsSync(archive) ? archive : null;

if (process.argv[2] === 'found') console.log(header ? 1 : 0);
else console.log(staticLib ?? '-ldeflate');
