// Build the addon with node-gyp (bundled with npm). The addon is only a speed-up: when there is no
// compiler or no Node headers, say so and leave @npyts/core on its portable JavaScript paths.
'use strict';
const { spawnSync } = require('node:child_process');
const { join } = require('node:path');

const { existsSync } = require('node:fs');

// npm passes its own node-gyp to install scripts; run by hand, look beside this node's npm.
const bundled = join(process.execPath, '..', '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
const gyp = process.env.npm_config_node_gyp || (existsSync(bundled) ? bundled : null);
// Build against this node's own headers when they are installed beside it (no download).
const prefix = join(process.execPath, '..', '..');
const nodedir = !process.env.npm_config_nodedir && existsSync(join(prefix, 'include', 'node', 'node_api.h')) ? [`--nodedir=${prefix}`] : [];
const [cmd, args] = gyp ? [process.execPath, [gyp, 'rebuild', ...nodedir]] : ['node-gyp', ['rebuild', ...nodedir]];
const run = spawnSync(cmd, args, { cwd: __dirname, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', shell: !gyp });
if (run.status !== 0) {
  const why = (run.error && run.error.message) || (run.stderr || '').trim().split('\n').slice(-3).join(' | ');
  console.warn(`@npyts/native: not built (${why || 'node-gyp failed'}); npyts runs without it, on its JavaScript paths.`);
} else if (!existsSync(join(__dirname, 'build', 'Release', 'npyts_native.node'))) {
  console.warn('@npyts/native: node-gyp reported success but left no binary; npyts runs without it.');
}
