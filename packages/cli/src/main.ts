/** The `npyts` command: info, show and convert for .npy files. */
import {
  NpyError, decodeNpy, encodeNpy, npyDocument, readHeader, shapeRepr, toOrder, withByteOrder,
  type NdArray, type NpyHeader,
} from '@npyts/core';
import { readNpyHeader } from '@npyts/core/node';
import { readFileSync, writeFileSync } from 'node:fs';
import { formatArray } from './format.js';

export interface Io {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
}

const USAGE = `usage: npyts <command> [options]

Commands:
  info FILE... [--json]        one line per .npy: dtype, shape, order, format version, data bytes
  show FILE [--json]           print the array (numpy-like), or its JSON document with --json
  convert IN OUT [options]     re-encode a .npy; with no options numpy's own bytes come back
      --order C|F              memory order of the output
      --byteorder little|big|native
      --version 1|2|3          format version (default: numpy's automatic choice)

Options:
  -h, --help                   show this help
  --version                    print the npyts version (without a command)

Exit status: 0 success, 1 bad input (one line on stderr), 2 usage error.
Set NPYTS_DEBUG=1 to see stack traces.`;

class UsageError extends Error {}

/** A failure tied to one input file, printed as `npyts: error: FILE: message`. */
class FileError extends Error {
  constructor(readonly file: string, override readonly cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause));
  }
}

interface Parsed {
  positional: string[];
  flags: Map<string, string | true>;
}

const VALUE_FLAGS = new Set(['--order', '--byteorder', '--version']);
const BOOL_FLAGS = new Set(['--json', '--help', '-h']);

function parseArgs(args: string[]): Parsed {
  const positional: string[] = [];
  const flags = new Map<string, string | true>();
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') { positional.push(...args.slice(i + 1)); break; }
    if (a.startsWith('-') && a !== '-') {
      const [name, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
      if (VALUE_FLAGS.has(name)) {
        const v = inline ?? args[++i];
        if (v === undefined) throw new UsageError(`${name} needs a value`);
        flags.set(name, v);
      } else if (BOOL_FLAGS.has(name)) flags.set(name, true);
      else throw new UsageError(`unknown option ${a}`);
    } else positional.push(a);
  }
  return { positional, flags };
}

function withFile<T>(file: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw new FileError(file, e);
  }
}

function readFile(file: string): Uint8Array {
  return withFile(file, () => readFileSync(file));
}

function orderName(h: NpyHeader): string {
  return h.fortranOrder ? 'Fortran (F) order' : 'C order';
}

function infoLine(file: string, h: NpyHeader): string {
  return `${file}: ${h.dtype.descrLiteral} (${h.dtype.name}, ${h.dtype.description}), shape ${shapeRepr(h.shape)}, ${orderName(h)}, format ${h.version[0]}.${h.version[1]}, ${h.dataBytes} data bytes`;
}

function infoJSON(file: string, h: NpyHeader): Record<string, unknown> {
  return {
    file, version: h.version, descr: h.dtype.descr, dtype: h.dtype.name, description: h.dtype.description,
    shape: h.shape, fortran_order: h.fortranOrder, size: h.size, data_offset: h.dataOffset, data_bytes: h.dataBytes,
  };
}

function cmdInfo(p: Parsed, io: Io): void {
  if (p.positional.length === 0) throw new UsageError('info needs at least one FILE');
  const json = p.flags.has('--json');
  const docs: Record<string, unknown>[] = [];
  for (const file of p.positional) {
    const h = withFile(file, () => readNpyHeader(file));
    if (json) docs.push(infoJSON(file, h));
    else io.stdout(infoLine(file, h) + '\n');
  }
  if (json) io.stdout(JSON.stringify(docs.length === 1 && p.positional.length === 1 ? docs[0] : docs) + '\n');
}

function load(file: string): { header: NpyHeader; array: NdArray } {
  const bytes = readFile(file);
  return withFile(file, () => ({ header: readHeader(bytes), array: decodeNpy(bytes) }));
}

function cmdShow(p: Parsed, io: Io): void {
  if (p.positional.length !== 1) throw new UsageError('show needs exactly one FILE');
  const file = p.positional[0]!;
  const { header, array } = load(file);
  if (p.flags.has('--json')) {
    io.stdout(JSON.stringify(npyDocument(header, array)) + '\n');
  } else {
    io.stdout(`# ${infoLine(file, header)}\n${formatArray(array)}\n`);
  }
}

function cmdConvert(p: Parsed, io: Io): void {
  if (p.positional.length !== 2) throw new UsageError('convert needs IN and OUT');
  const [input, output] = p.positional as [string, string];
  const order = p.flags.get('--order');
  if (order !== undefined && order !== 'C' && order !== 'F') throw new UsageError('--order must be C or F');
  const byteorder = p.flags.get('--byteorder');
  const orders: Record<string, '<' | '>' | '='> = { little: '<', big: '>', native: '=' };
  if (byteorder !== undefined && !(String(byteorder) in orders)) throw new UsageError('--byteorder must be little, big or native');
  const version = p.flags.get('--version');
  if (version !== undefined && !['1', '2', '3'].includes(String(version))) throw new UsageError('--version must be 1, 2 or 3');
  let { array } = load(input);
  if (order) array = toOrder(array, order);
  if (byteorder) array = withByteOrder(array, orders[String(byteorder)]!);
  const bytes = withFile(input, () => encodeNpy(array, version ? { version: Number(version) as 1 | 2 | 3 } : {}));
  withFile(output, () => writeFileSync(output, bytes));
  void io;
}

/** Run the command; returns the exit status. */
export async function main(args: string[], io: Io): Promise<number> {
  try {
    if (args.length === 0 || args[0] === '--help' || args[0] === '-h' || args[0] === 'help') {
      (args.length === 0 ? io.stderr : io.stdout)(USAGE + '\n');
      return args.length === 0 ? 2 : 0;
    }
    if (args[0] === '--version') {
      io.stdout('npyts 0.1.0\n');
      return 0;
    }
    const [command, ...rest] = args;
    const parsed = parseArgs(rest);
    if (parsed.flags.has('--help') || parsed.flags.has('-h')) {
      io.stdout(USAGE + '\n');
      return 0;
    }
    switch (command) {
      case 'info': cmdInfo(parsed, io); break;
      case 'show': cmdShow(parsed, io); break;
      case 'convert': cmdConvert(parsed, io); break;
      default: throw new UsageError(`unknown command '${command}'`);
    }
    return 0;
  } catch (e) {
    if (process.env.NPYTS_DEBUG === '1') io.stderr(`${(e as Error)?.stack ?? e}\n${e instanceof FileError ? `caused by: ${(e.cause as Error)?.stack}\n` : ''}`);
    if (e instanceof UsageError) {
      io.stderr(`npyts: usage error: ${e.message}\nRun 'npyts --help' for usage.\n`);
      return 2;
    }
    if (e instanceof FileError) {
      io.stderr(`npyts: error: ${e.file}: ${describe(e.cause)}\n`);
      return 1;
    }
    io.stderr(`npyts: error: ${describe(e)}\n`);
    return 1;
  }
}

function describe(e: unknown): string {
  if (e instanceof NpyError) return e.message;
  const err = e as NodeJS.ErrnoException;
  if (err?.code === 'ENOENT') return 'no such file';
  if (err?.code === 'EISDIR') return 'is a directory';
  if (err?.code === 'EACCES') return 'permission denied';
  return err?.message ?? String(e);
}
