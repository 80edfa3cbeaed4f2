// At install: use the prebuilt binary when one fits this machine (it is loaded in a child process to
// be sure: a glibc older than it needs, say), else build the addon with node-gyp (bundled with npm).
// The addon is only a speed-up: when there is no compiler or no Node headers either, say so and
// leave @npyts/core on its portable JavaScript paths.
'use strict';
const { spawnSync } = require('node:child_process');
const { join } = require('node:path');

const { existsSync, mkdirSync, rmSync, writeFileSync } = require('node:fs');

const prebuiltLoads = () => {
  const probe = `const p = require('node-gyp-build').path(${JSON.stringify(__dirname)}); if (!p.includes('prebuilds')) process.exit(1); require(p);`;
  return spawnSync(process.execPath, ['-e', probe], { cwd: __dirname, stdio: 'ignore' }).status === 0;
};
// A from-source build left from an earlier install would shadow the prebuild: the check above
// looks past it by asking with build/ out of the way only when there is no build of our own yet.
if (!existsSync(join(__dirname, 'build', 'Release', 'npyts_native.node')) && process.env.NPYTS_NATIVE_BUILD !== '1' && prebuiltLoads()) {
  rmSync(join(__dirname, 'build', 'not-built.txt'), { force: true });
  process.exit(0);
}

// npm passes its own node-gyp to install scripts; run by hand, look beside this node's npm.
const bundled = join(process.execPath, '..', '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
const gyp = process.env.npm_config_node_gyp || (existsSync(bundled) ? bundled : null);
// Build against this node's own headers when they are installed beside it (no download).
const prefix = join(process.execPath, '..', '..');
const nodedir = !process.env.npm_config_nodedir && existsSync(join(prefix, 'include', 'node', 'node_api.h')) ? [`--nodedir=${prefix}`] : [];
const [cmd, args] = gyp ? [process.execPath, [gyp, 'rebuild', ...nodedir]] : ['node-gyp', ['rebuild', ...nodedir]];
const run = spawnSync(cmd, args, { cwd: __dirname, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', shell: !gyp });
// npm hides the output of a dependency's install script, so the reason is also kept in a file:
// index.cjs puts it in the error it throws, and @npyts/core's nativeStatus() reports it.
const say = (why) => {
  const line = `@npyts/native: no prebuilt binary for ${process.platform}-${process.arch} and not built (${why}); npyts runs without it, on its JavaScript paths.`;
  console.warn(line);
  try {
    mkdirSync(join(__dirname, 'build'), { recursive: true });
    writeFileSync(join(__dirname, 'build', 'not-built.txt'), why + '\n');
  } catch { /* a read-only install: the warning above is all there is */ }
};
if (run.status !== 0) {
  // node-gyp's own summary of the failure is its first "stack Error:" line.
  const lines = (run.stderr || '').trim().split('\n');
  const stack = lines.find((l) => /stack Error: /.test(l));
  say((run.error && run.error.message) || (stack ? stack.replace(/^.*stack Error: /, '') : lines.slice(-3).join(' | ')) || 'node-gyp failed');
} else if (!existsSync(join(__dirname, 'build', 'Release', 'npyts_native.node'))) {
  say('node-gyp reported success but left no binary');
}
