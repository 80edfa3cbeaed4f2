#!/usr/bin/env node
// Thin launcher: the command lives in dist/main.js (built by `npm ci` through the prepare script).
import { main } from '../dist/main.js';

// A reader that stops early (`npyts show --json big.npy | head -c 10`) closes the pipe: end quietly,
// as Unix tools do, instead of with an EPIPE stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
}

process.exitCode = await main(process.argv.slice(2), {
  stdout: (s) => process.stdout.write(s),
  // Output that grows with the file waits for a slow reader instead of queueing in memory.
  stdoutPaced: (s) => (process.stdout.write(s) ? undefined : new Promise((resolve) => process.stdout.once('drain', resolve))),
  stderr: (s) => process.stderr.write(s),
});
