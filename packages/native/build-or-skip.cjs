// At install: build the addon from source with node-gyp (bundled with npm). This package is the
// opt-in from-source build: @npyts/core brings a prebuilt binary through its optional platform
// packages (@npyts/native-linux-x64-gnu, …) with no install script. The addon is only a speed-up:
// when there is no compiler or no Node headers, say so and leave @npyts/core on its prebuilt
// binary where there is one, else on its portable JavaScript paths.
'use strict';
const { spawnSync } = require('node:child_process');
const { join } = require('node:path');

const { existsSync, mkdirSync, writeFileSync } = require('node:fs');

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
  const line = `@npyts/native: not built from source (${why}); npyts runs without it, on its prebuilt binary where @npyts/core brought one, else on its JavaScript paths.`;
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
