// Preloaded with `node -r` by tests that measure a command's memory: at exit, the process's peak
// resident size (VmHWM, bytes) goes to standard error as `peak-rss: N`.
'use strict';
const { readFileSync, writeSync } = require('node:fs');
process.on('exit', () => {
  const kb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]);
  writeSync(2, `peak-rss: ${kb * 1024}\n`);
});
