#!/usr/bin/env node
// Thin launcher: the command lives in dist/main.js (built by `npm ci` through the prepare script).
import { main } from '../dist/main.js';

process.exitCode = await main(process.argv.slice(2), {
  stdout: (s) => process.stdout.write(s),
  stderr: (s) => process.stderr.write(s),
});
