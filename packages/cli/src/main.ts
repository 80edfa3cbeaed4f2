/**
 * The `npyts` command: runs one subcommand (commands/) and turns every failure into one line on
 * standard error. Arguments are in args.ts, inputs in targets.ts, what a run shares in session.ts.
 */
import { NpyError, redactUrls } from '@npyts/core';
import { nativeStatus } from '@npyts/core/node';
import { type Io, session, UsageError, FileError, printable } from './session.js';
import { USAGE, checkOptionsOf, parseArgs } from './args.js';
import { cmdInfo } from './commands/info.js';
import { cmdShow } from './commands/show.js';
import { cmdDiff } from './commands/diff.js';
import { cmdConvert } from './commands/convert.js';
import { cmdRefs } from './commands/refs.js';
import { cmdMergeLora } from './commands/merge-lora.js';

/** Longest error message printed; the rest is counted, not shown (a 10 MB descr makes a 10 MB message). */
const MAX_MESSAGE = 300;

/** `message` as one printable line, its URLs without their credentials (a presigned URL's signature). */
function oneLine(message: string): string {
  const s = printable(redactUrls(message));
  return s.length > MAX_MESSAGE ? `${s.slice(0, MAX_MESSAGE)}… (${s.length - MAX_MESSAGE} more characters)` : s;
}

/** Run the command; returns the exit status. */
export async function main(args: string[], io: Io): Promise<number> {
  session.io = io;
  session.stdinBytes = undefined;
  try {
    if (args.length === 0 || args[0] === '--help' || args[0] === '-h' || args[0] === 'help') {
      (args.length === 0 ? io.stderr : io.stdout)(USAGE + '\n');
      return args.length === 0 ? 2 : 0;
    }
    if (args[0] === '--version') {
      const native = nativeStatus();
      // A platform package's binary (`@npyts/native-linux-x64-gnu/…`), or @npyts/native's own build.
      const prebuilt = /^@npyts\/native-([^/]+)\//.exec(native.binary ?? '');
      const which = prebuilt ? `prebuilt for ${prebuilt[1]}` : 'built at install';
      io.stdout(`npyts 0.1.0 (@npyts/native: ${native.loaded ? `in use, ${which}` : `not in use, ${native.reason}`})\n`);
      return 0;
    }
    const [command, ...rest] = args;
    const parsed = parseArgs(rest);
    session.allowPickle = parsed.flags.has('--allow-pickle');
    session.quiet = parsed.flags.has('--quiet');
    if (parsed.flags.has('--help')) {
      io.stdout(USAGE + '\n');
      return 0;
    }
    checkOptionsOf(command!, parsed);
    switch (command) {
      case 'info':
        await cmdInfo(parsed, io);
        break;
      case 'show':
        await cmdShow(parsed, io);
        break;
      case 'convert':
        await cmdConvert(parsed, io);
        break;
      case 'diff':
        return await cmdDiff(parsed, io);
      case 'refs':
        await cmdRefs(parsed, io);
        break;
      case 'merge-lora':
        await cmdMergeLora(parsed, io);
        break;
      default:
        throw new UsageError(`unknown command '${command}'`);
    }
    return 0;
  } catch (e) {
    if (process.env.NPYTS_DEBUG === '1')
      io.stderr(redactUrls(`${(e as Error)?.stack ?? e}\n${e instanceof FileError ? `caused by: ${(e.cause as Error)?.stack}\n` : ''}`));
    if (e instanceof UsageError) {
      io.stderr(`npyts: usage error: ${e.message}\nRun 'npyts --help' for usage.\n`);
      return 2;
    }
    if (e instanceof FileError) {
      io.stderr(`npyts: error: ${oneLine(`${e.file}: ${describe(e.cause)}`)}\n`);
      return 1;
    }
    io.stderr(`npyts: error: ${oneLine(describe(e))}\n`);
    return 1;
  }
}

function describe(e: unknown): string {
  // The line already starts with the file: an error that names it ("F: …", "F is …") says it once.
  if (e instanceof NpyError && e.file !== undefined) {
    if (e.message.startsWith(`${e.file}: `)) return e.message.slice(e.file.length + 2);
    if (e.message.startsWith(`${e.file} `)) return e.message.slice(e.file.length + 1);
  }
  if (e instanceof NpyError) return e.message;
  const err = e as NodeJS.ErrnoException;
  if (err?.code === 'ENOENT') return 'no such file';
  if (err?.code === 'EISDIR') return 'is a directory';
  if (err?.code === 'EACCES') return 'permission denied';
  return err?.message ?? String(e);
}
export type { Io } from './session.js';
