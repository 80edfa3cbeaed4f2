/**
 * The `npyts` command: argument parsing (util.parseArgs) and one function per subcommand (info, show,
 * convert, diff, csv). Long because it holds every subcommand's wiring; the work itself is in
 * format.ts, diff.ts, text-table.ts and json-stream.ts. Splitting the subcommands into modules of
 * their own is the next step.
 */
import {
  NpyError,
  decodeNpyWithHeader,
  decodeNpz,
  encodeNpy,
  raggedInfo,
  readHeader,
  shapeRepr,
  toOrder,
  withByteOrder,
  type NdArray,
  type NpyHeader,
  type NpzArchive,
  type TypedArray,
} from '@npyts/core';
import { checkDataSize, dataToBytes, encodeHeader, putOwn, npyDocument } from '@npyts/core/plumbing';
import {
  checkRegularFile,
  openNpzSync,
  openNpyFileSync,
  writeBeside,
  type NpyFileHandleSync,
  readNpyHeaderSync,
  saveNpySync,
  saveNpz,
  zlibCodec,
  openRaggedSync,
  saveObjectArrayAsRaggedSync,
  raggedToObjectArray,
  nativeStatus,
} from '@npyts/core/node';
import { pickleCodec, stringDTypeCodec } from '@npyts/core/pickle';
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync, writeSync } from 'node:fs';
import { basename, extname } from 'node:path';
import { parseArgs as parseArgsOfNode } from 'node:util';
import { formatArray, readExactItem, reprLikeNumpy, MAX_OBJECT_TEXT, type Printable } from './format.js';
import { streamJsonDocument } from './json-stream.js';
import { delimiterOf, rowsOfArray, tableBatches, tablePieces, tableToArray } from './text-table.js';
import { startProgress } from './progress.js';
import { DEFAULT_TOLERANCE, diffArrays, type Tolerance } from './diff.js';

export interface Io {
  stdout: (s: string) => void;
  /**
   * Text output that waits while the reader is behind (a pipe to a slow reader): for output that
   * grows with the file. Defaults to `stdout`.
   */
  stdoutPaced?: (s: string) => Promise<void> | void;
  stderr: (s: string) => void;
  /** Binary output for `convert IN -` (defaults to process.stdout). */
  stdoutBytes?: (b: Uint8Array) => void;
  /** Binary input for `-` (defaults to reading standard input). */
  stdin?: () => Uint8Array;
}

let currentIo: Io;

const USAGE = `usage: npyts <command> [options]

Commands:
  info FILE... [--json]        one line per array: dtype, shape, order, format version, data bytes
  show FILE [--json]           print the array as numpy's repr does, or its JSON document with --json
                               (a .npy file's document is written as it is read: any size)
      --limit N                with --json: data is the first N elements, row-major, as one flat list
  convert IN OUT [options]     re-encode; with no options numpy's own bytes come back
      --order C|F              memory order of the output
      --byteorder little|big|native
      --version 1|2|3          format version (default: numpy's automatic choice)
      --compress | --store     for .npz output: deflate members (np.savez_compressed) or store
                               them (np.savez); default: as the input archive, else store
      --ragged                 an object array of arrays or strings (or a StringDType array)
                               → a ragged index OUT with its heap OUT.heap / OUT.strings
      --layout L               with --ragged: ranges (default), offsets (compact, Arrow-style)
                               or zero-terminated (strings)
      --object                 a ragged index → numpy's object array (a pickle)
      --string-dtype           with --object: strings as numpy 2's StringDType array
      --dtype D                reading a .csv/.tsv: the dtype ('<f8' by default, as np.loadtxt;
                               a record descr takes one column per field, after a header line)
      OUT.csv / OUT.tsv        a 1-d or 2-d array, or a 1-d record array (columns under a header
                               line), as text: floats as np.savetxt(fmt='%.17g'), integers exactly

  diff A B [--rtol R --atol A]  compare two arrays (or archives, member by member) as numpy's
                               np.testing.assert_allclose does (rtol 1e-7, atol 0; NaN equals
                               NaN); prints the mismatches; exit 0 equal, 1 different

Object arrays (dtype |O) hold a Python pickle: show and convert read them only with
--allow-pickle, through npyts' own unpickler, which rebuilds plain data and never runs code.

FILE is a .npy, a .npz (every member), ARCHIVE.npz:NAME for one member, or - for standard
input (and OUT - for standard output). convert turns
.npz into .npz, a member into a .npy (IN.npz:NAME OUT.npy), and a .npy into an archive
(OUT.npz, or OUT.npz:NAME to name the member).

Options:
  -q, --quiet                  no progress bar (one is drawn on standard error, when it is a
                               terminal, for a convert to .npz or a show --json past a second)
  -h, --help                   show this help
  --version                    print the npyts version and whether @npyts/native is in use
                               (without a command; NPYTS_NATIVE=0 turns it off)

Exit status: 0 success, 1 bad input (one line on stderr) or, for diff, arrays that differ,
2 usage error.
Set NPYTS_DEBUG=1 to see stack traces.`;

class UsageError extends Error {}

/** A failure tied to one input file, printed as `npyts: error: FILE: message`. */
class FileError extends Error {
  constructor(
    readonly file: string,
    override readonly cause: unknown,
  ) {
    super(cause instanceof Error ? cause.message : String(cause));
  }
}

interface Parsed {
  positional: string[];
  flags: Map<string, string | true>;
}

/** Every option, for node:util's parseArgs (strict: an unknown option is a usage error). */
const OPTIONS = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  compress: { type: 'boolean' },
  store: { type: 'boolean' },
  'allow-pickle': { type: 'boolean' },
  quiet: { type: 'boolean', short: 'q' },
  ragged: { type: 'boolean' },
  object: { type: 'boolean' },
  'string-dtype': { type: 'boolean' },
  layout: { type: 'string' },
  order: { type: 'string' },
  byteorder: { type: 'string' },
  version: { type: 'string' },
  limit: { type: 'string' },
  rtol: { type: 'string' },
  atol: { type: 'string' },
  dtype: { type: 'string' },
} as const;

function parseArgs(args: string[]): Parsed {
  let parsed: ReturnType<typeof parseArgsStrict>;
  try {
    parsed = parseArgsStrict(args);
  } catch (e) {
    throw new UsageError((e as Error).message.replace(/\. To specify a positional argument.*$/s, ''));
  }
  const flags = new Map<string, string | true>();
  for (const [name, value] of Object.entries(parsed.values)) if (value !== undefined && value !== false) flags.set(`--${name}`, value);
  return { positional: parsed.positionals, flags };
}

function parseArgsStrict(args: string[]) {
  return parseArgsOfNode({ args, options: OPTIONS, allowPositionals: true, strict: true });
}

function withFile<T>(file: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw e instanceof FileError ? e : new FileError(file, e);
  }
}

/**
 * Text from a file (names, messages) made safe for a terminal: control characters, and characters
 * that reorder or hide text, are shown as escapes instead of acting on the terminal.
 */
export function printable(s: string): string {
  // eslint-disable-next-line no-control-regex
  return s.replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]/g, (c) => {
    const cp = c.charCodeAt(0);
    return cp <= 0xff ? `\\x${cp.toString(16).padStart(2, '0')}` : `\\u${cp.toString(16).padStart(4, '0')}`;
  });
}

/** Longest error message printed; the rest is counted, not shown (a 10 MB descr makes a 10 MB message). */
const MAX_MESSAGE = 300;

function oneLine(message: string): string {
  const s = printable(message);
  return s.length > MAX_MESSAGE ? `${s.slice(0, MAX_MESSAGE)}… (${s.length - MAX_MESSAGE} more characters)` : s;
}

function orderName(h: NpyHeader): string {
  return h.fortranOrder ? 'Fortran (F) order' : 'C order';
}

function infoLine(file: string, h: NpyHeader): string {
  return `${printable(file)}: ${printable(h.dtype.descrLiteral)} (${h.dtype.name}, ${h.dtype.description}), shape ${shapeRepr(h.shape)}, ${orderName(h)}, format ${h.version[0]}.${h.version[1]}, ${h.dataBytes} data bytes`;
}

function infoJSON(file: string, h: NpyHeader): Record<string, unknown> {
  return {
    file,
    version: h.version,
    descr: h.dtype.descr,
    dtype: h.dtype.name,
    description: h.dtype.description,
    shape: h.shape,
    fortran_order: h.fortranOrder,
    size: h.size,
    data_offset: h.dataOffset,
    data_bytes: h.dataBytes,
  };
}

/** A path on the command line: a file, or `ARCHIVE.npz:NAME` for one member. */
interface Target {
  label: string;
  file: string;
  member: string | undefined;
}

function target(arg: string, mustExist: boolean): Target {
  if (arg === '-') return { label: mustExist ? '<stdin>' : '<stdout>', file: '-', member: undefined };
  if (existsSync(arg) || !mustExist) {
    const colon = arg.lastIndexOf(':');
    if (!mustExist && colon > 0 && /\.npz$/i.test(arg.slice(0, colon))) return { label: arg, file: arg.slice(0, colon), member: arg.slice(colon + 1) };
    return { label: arg, file: arg, member: undefined };
  }
  const colon = arg.lastIndexOf(':');
  if (colon > 0 && existsSync(arg.slice(0, colon))) return { label: arg, file: arg.slice(0, colon), member: arg.slice(colon + 1) };
  return { label: arg, file: arg, member: undefined };
}

let stdinBytes: Uint8Array | undefined;

/** Standard input, read once, whole. */
function stdin(): Uint8Array {
  stdinBytes ??= currentIo.stdin ? currentIo.stdin() : new Uint8Array(readFileSync(0));
  return stdinBytes;
}

/** Zip archives start with a local header, or with the end record when empty. */
function isArchive(file: string): boolean {
  if (file === '-') {
    const b = stdin();
    return b[0] === 0x50 && b[1] === 0x4b;
  }
  const head = new Uint8Array(4);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, head, 0, 4, 0);
  } finally {
    closeSync(fd);
  }
  return head[0] === 0x50 && head[1] === 0x4b && (head[2] === 3 || head[2] === 5) && (head[3] === 4 || head[3] === 6);
}

function withArchive<T>(t: Target, fn: (archive: NpzArchive) => T): T {
  const archive = withFile(t.label, () => (t.file === '-' ? decodeNpz(stdin(), { codec: zlibCodec }) : openNpzSync(t.file)));
  try {
    return withFile(t.label, () => fn(archive));
  } finally {
    archive.close();
  }
}

/** Whether --allow-pickle was given: decoding object arrays is opt-in. */
let allowPickle = false;
/** Whether --quiet was given: no progress bars. */
let quiet = false;

/** Header and array of one .npy, or of one archive member. */
function loadOne(t: Target, archive?: NpzArchive): { header: NpyHeader; array: NdArray } {
  const bytes =
    archive && t.member !== undefined
      ? withFile(t.label, () => archive.bytesSync(t.member!))
      : t.file === '-'
        ? stdin()
        : withFile(t.file, () => readFileSync(t.file));
  const options = allowPickle ? { pickle: pickleCodec } : {};
  return withFile(t.label, () => decodeNpyWithHeader(bytes, options));
}

function checkIsFile(file: string): void {
  if (file === '-') return;
  withFile(file, () => checkRegularFile(file));
}

function cmdInfo(p: Parsed, io: Io): void {
  if (p.positional.length === 0) throw new UsageError('info needs at least one FILE');
  const json = p.flags.has('--json');
  const docs: Record<string, unknown>[] = [];
  for (const arg of p.positional) {
    const t = target(arg, true);
    checkIsFile(t.file);
    if (t.member === undefined && !isArchive(t.file)) {
      const h = withFile(t.label, () => {
        const header = t.file === '-' ? readHeader(stdin()) : readNpyHeaderSync(t.file);
        // np.load fails on a file whose data is cut short; so does info.
        checkDataSize(header, (t.file === '-' ? stdin().length : statSync(t.file).size) - header.dataOffset);
        return header;
      });
      const ragged = t.file !== '-' ? withFile(t.label, () => raggedInfo(h.dtype)) : null;
      const raggedText = ragged
        ? withFile(t.label, () => {
            const r = openRaggedSync(t.file);
            try {
              const text = r.kind === 'utf8' || r.kind === 'utf8z';
              const what = text
                ? 'UTF-8 strings'
                : r.kind === 'ref'
                  ? `references to slices of ${r.heapDtype.descrLiteral}`
                  : `arrays (k${r.tail.map((d) => `, ${d}`).join('')}) of ${r.heapDtype.descrLiteral}`;
              return {
                text: `ragged: ${r.length} ${what}, shape ${r.raggedShape}, ${r.layout}, in heap ${ragged.heap} (${r.heapLength} ${text ? 'bytes' : 'rows'})`,
                json: { elements: r.length, kind: r.kind, layout: r.layout, shape: r.raggedShape, heap: ragged.heap, heap_rows: r.heapLength },
              };
            } finally {
              r.close();
            }
          })
        : null;
      if (json) docs.push({ ...infoJSON(t.label, h), ...(raggedText ? { ragged: raggedText.json } : {}) });
      else io.stdout(`${infoLine(t.label, h)}${raggedText ? `; ${raggedText.text}` : ''}\n`);
      continue;
    }
    withArchive(t, (archive) => {
      const names = t.member !== undefined ? [t.member] : archive.names;
      for (const name of names) {
        const entry = archive.entry(name);
        // The header alone, from the member's first bytes: no member is inflated whole, no pickle decoded.
        const header = withFile(`${t.file}:${name}`, () => archive.headerSync(name));
        const stored = entry.method === 0 ? 'stored' : `deflated ${entry.compressedSize} bytes`;
        if (json)
          docs.push({
            ...infoJSON(`${t.file}:${name}`, header),
            member: entry.name,
            compression: entry.method === 0 ? 'stored' : 'deflate',
            compressed_size: entry.compressedSize,
          });
        else io.stdout(`${infoLine(`${t.file}:${name}`, header)}, ${stored}\n`);
      }
      if (names.length === 0 && !json) io.stdout(`${printable(t.file)}: empty archive\n`);
    });
  }
  if (json) io.stdout(JSON.stringify(docs.length === 1 && p.positional.length === 1 ? docs[0] : docs) + '\n');
}

/** The file opened for region reads, or null for an object array (a pickle has no regions). */
function openRegionsOrNull(file: string): NpyFileHandleSync | null {
  try {
    return openNpyFileSync(file);
  } catch (e) {
    if (e instanceof NpyError && e.code === 'PICKLE_UNSUPPORTED') return null;
    throw e;
  }
}

/**
 * The elements a printout shows, read from the file as they are asked for: each row's shown runs
 * (all of a short row; its first and last three when summarised) in one region read each.
 */
function shownElements(handle: NpyFileHandleSync): Printable {
  const { dtype, shape } = handle.header;
  const size = shape.reduce((a, b) => a * b, 1);
  if (size <= 1000) {
    const whole = handle.read(
      shape.map(() => 0),
      shape,
    );
    const strides = whole.strides;
    return {
      dtype,
      shape,
      get: (index) =>
        readExactItem(
          dtype,
          whole.data,
          index.reduce((pos, i, d) => pos + i * strides[d]!, 0),
        ),
    };
  }
  const last = shape.length - 1;
  const n = shape[last]!;
  const runs: [number, number][] =
    n > 6
      ? [
          [0, 3],
          [n - 3, 3],
        ]
      : [[0, n]];
  const rows = new Map<string, Map<number, unknown>>();
  return {
    dtype,
    shape,
    get(index) {
      const key = index.slice(0, last).join(',');
      let row = rows.get(key);
      if (!row) {
        row = new Map();
        for (const [start, count] of runs) {
          const part = handle.read([...index.slice(0, last), start], [...index.slice(0, last).map(() => 1), count]);
          for (let k = 0; k < count; k++) row.set(start + k, readExactItem(dtype, part.data, k));
        }
        rows.set(key, row);
      }
      return row.get(index[last]!);
    },
  };
}

/** `--limit N`: a count of elements, or undefined. */
function limitOf(p: Parsed): number | undefined {
  const v = p.flags.get('--limit');
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(String(v))) throw new UsageError('--limit must be a count of elements');
  if (!p.flags.has('--json')) throw new UsageError('--limit goes with --json');
  return Number(v);
}

async function cmdShow(p: Parsed, io: Io): Promise<void> {
  if (p.positional.length !== 1) throw new UsageError('show needs exactly one FILE');
  const t = target(p.positional[0]!, true);
  checkIsFile(t.file);
  const json = p.flags.has('--json');
  const print = (label: string, header: NpyHeader, array: NdArray): void => {
    const report = { cut: false };
    const text = withFile(label, () => (json ? JSON.stringify(npyDocument(header, array)) : `# ${infoLine(label, header)}\n${formatArray(array, report)}`));
    io.stdout(`${text}\n`);
    if (report.cut)
      io.stderr(
        `npyts: note: ${printable(label)}: object values were cut short (shown as ...): they nest too deep or repeat shared values beyond ${MAX_OBJECT_TEXT} characters\n`,
      );
  };
  if (t.member === undefined && !isArchive(t.file)) {
    const limit = limitOf(p);
    // A file is read by regions: its JSON as it is written (constant memory), its printout only
    // where it shows elements. Object arrays (no regions) and standard input are decoded whole.
    const handle = t.file === '-' ? null : withFile(t.label, () => openRegionsOrNull(t.file));
    if (handle) {
      try {
        if (json) {
          const progress = startProgress(printable(t.label), quiet);
          try {
            await streamJsonDocument(handle, io.stdoutPaced ?? io.stdout, limit, progress.update);
          } finally {
            progress.stop();
          }
        } else io.stdout(`# ${infoLine(t.label, handle.header)}\n${reprLikeNumpy(shownElements(handle))}\n`);
      } catch (e) {
        throw e instanceof FileError ? e : new FileError(t.label, e);
      } finally {
        handle.close();
      }
      return;
    }
    if (limit !== undefined) throw new UsageError("--limit streams a .npy file's --json document; not for object arrays or standard input");
    const { header, array } = loadOne(t);
    print(t.label, header, array);
    return;
  }
  withArchive(t, (archive) => {
    if (t.member !== undefined) {
      const { header, array } = loadOne(t, archive);
      print(t.label, header, array);
      return;
    }
    if (json) {
      const arrays: Record<string, unknown> = {};
      for (const name of archive.names) {
        const label = `${t.file}:${name}`;
        const { header, array } = loadOne({ label, file: t.file, member: name }, archive);
        putOwn(
          arrays,
          name,
          withFile(label, () => npyDocument(header, array)),
        );
      }
      io.stdout(JSON.stringify({ arrays }) + '\n');
    } else {
      for (const name of archive.names) {
        const { header, array } = loadOne({ label: `${t.file}:${name}`, file: t.file, member: name }, archive);
        print(`${t.file}:${name}`, header, array);
      }
    }
  });
}

/** Every array of a FILE argument by name: a .npy (its own name), each member of an archive, or one member. */
function arraysOf(t: Target): Map<string, NdArray> {
  if (t.member === undefined && !isArchive(t.file)) return new Map([['', loadOne(t).array]]);
  return withArchive(t, (archive) => {
    const names = t.member !== undefined ? [t.member] : archive.names;
    return new Map(
      names.map((name) => [t.member !== undefined ? '' : name, loadOne({ label: `${t.file}:${name}`, file: t.file, member: name }, archive).array]),
    );
  });
}

function toleranceOf(p: Parsed): Tolerance {
  const value = (flag: string, fallback: number): number => {
    const v = p.flags.get(flag);
    if (v === undefined) return fallback;
    const x = Number(v);
    if (!Number.isFinite(x) || x < 0) throw new UsageError(`${flag} must be a number ≥ 0`);
    return x;
  };
  return { rtol: value('--rtol', DEFAULT_TOLERANCE.rtol), atol: value('--atol', DEFAULT_TOLERANCE.atol) };
}

/** `diff A B`: exit 0 when every array matches within the tolerance, 1 when any differs. */
function cmdDiff(p: Parsed, io: Io): number {
  if (p.positional.length !== 2) throw new UsageError('diff needs two FILEs');
  const tol = toleranceOf(p);
  const [ta, tb] = p.positional.map((arg) => target(arg, true)) as [Target, Target];
  checkIsFile(ta.file);
  checkIsFile(tb.file);
  const a = arraysOf(ta);
  const b = arraysOf(tb);
  let differ = false;
  const report = (name: string, lines: string[]): void => {
    differ = true;
    io.stdout(`${name ? `${printable(name)}: ` : ''}${lines.join('\n')}\n`);
  };
  for (const name of a.keys()) if (!b.has(name)) report(name, [`only in ${printable(ta.label)}`]);
  for (const name of b.keys()) if (!a.has(name)) report(name, [`only in ${printable(tb.label)}`]);
  for (const [name, x] of a) {
    const y = b.get(name);
    if (!y) continue;
    const r = withFile(name ? `${ta.label}:${name}` : ta.label, () => diffArrays(x, y, tol));
    if (!r.equal) report(name, r.lines);
  }
  return differ ? 1 : 0;
}

async function cmdConvert(p: Parsed, io: Io): Promise<void> {
  if (p.positional.length !== 2) throw new UsageError('convert needs IN and OUT');
  const order = p.flags.get('--order');
  if (order !== undefined && order !== 'C' && order !== 'F') throw new UsageError('--order must be C or F');
  const byteorder = p.flags.get('--byteorder');
  const orders: Record<string, '<' | '>' | '='> = { little: '<', big: '>', native: '=' };
  if (byteorder !== undefined && !(String(byteorder) in orders)) throw new UsageError('--byteorder must be little, big or native');
  const version = p.flags.get('--version');
  if (version !== undefined && !['1', '2', '3'].includes(String(version))) throw new UsageError('--version must be 1, 2 or 3');
  if (p.flags.has('--compress') && p.flags.has('--store')) throw new UsageError('--compress and --store exclude each other');
  // With no --version, each output keeps its input's format version (numpy's choice when that cannot hold the header).
  const encodeOptions = (inputVersion: 1 | 2 | 3 | undefined): { version?: 1 | 2 | 3; pickle?: typeof pickleCodec } => {
    const v = version ? (Number(version) as 1 | 2 | 3) : inputVersion;
    return { ...(v ? { version: v } : {}), ...(allowPickle ? { pickle: pickleCodec } : {}) };
  };
  const transform = (array: NdArray): NdArray => {
    let a = order ? toOrder(array, order) : array;
    if (byteorder) a = withByteOrder(a, orders[String(byteorder)]!);
    return a;
  };
  const input = target(p.positional[0]!, true);
  const output = target(p.positional[1]!, false);
  // The output's kind comes from its name; anything else would write .npy bytes into a file named .csv.
  const textOut = output.member === undefined ? delimiterOf(output.file) : null;
  if (output.file !== '-' && output.member === undefined && !textOut && !/\.np[yz]$/i.test(output.file)) {
    const ext = extname(output.file);
    throw new UsageError(
      `cannot tell what to write from the name ${printable(output.file)} (${ext ? `extension '${printable(ext)}'` : 'no extension'}): name it .npy, .npz, .csv or .tsv`,
    );
  }
  const textIn = input.member === undefined && input.file !== '-' ? delimiterOf(input.file) : null;
  if (p.flags.has('--dtype') && !textIn) throw new UsageError('--dtype is for reading a .csv or .tsv file');
  checkIsFile(input.file);
  const layout = p.flags.get('--layout');
  const layouts = ['ranges', 'offsets', 'zero-terminated'] as const;
  const chosen = layouts.find((l) => l === layout);
  if (layout !== undefined && (!p.flags.has('--ragged') || !chosen)) {
    throw new UsageError('--layout goes with --ragged and is ranges, offsets or zero-terminated');
  }
  if (p.flags.has('--string-dtype') && !p.flags.has('--object')) throw new UsageError('--string-dtype goes with --object');
  if (p.flags.has('--ragged') || p.flags.has('--object')) {
    if (input.file === '-' || output.file === '-' || input.member !== undefined) throw new UsageError('--ragged and --object convert between files');
    if (p.flags.has('--ragged')) {
      const { array } = loadOne(input);
      withFile(output.file, () => saveObjectArrayAsRaggedSync(output.file, array, chosen ? { layout: chosen } : {}));
    } else {
      const objects = withFile(input.label, () => {
        const r = openRaggedSync(input.file);
        try {
          return raggedToObjectArray(r);
        } finally {
          r.close();
        }
      });
      const codec = p.flags.has('--string-dtype') ? stringDTypeCodec : pickleCodec;
      withFile(output.file, () => saveNpySync(output.file, objects, { ...encodeOptions(undefined), pickle: codec }));
    }
    return;
  }
  const inArchive = !textIn && input.member === undefined && isArchive(input.file);
  const outArchive = output.member !== undefined || /\.npz$/i.test(output.file);

  // Gather the arrays to write, with their names for an archive and the format version they came in.
  type Named = [name: string, array: NdArray, version: 1 | 2 | 3];
  const named = (name: string, t: Target, archive?: NpzArchive): Named => {
    const { header, array } = loadOne(t, archive);
    return [name, array, header.version[0]];
  };
  let arrays: Named[];
  let compressed = false;
  if (inArchive) {
    arrays = withArchive(input, (archive) => {
      compressed = archive.entries.some((e) => e.method !== 0);
      return archive.names.map((name) => named(name, { label: `${input.file}:${name}`, file: input.file, member: name }, archive));
    });
  } else if (input.member !== undefined) {
    arrays = [
      withArchive(input, (archive) => {
        compressed = archive.entry(input.member!).method !== 0;
        return named(input.member!, input, archive);
      }),
    ];
  } else if (textIn) {
    // np.loadtxt's default dtype is float64.
    const descr = String(p.flags.get('--dtype') ?? '<f8');
    if (!outArchive && !textOut && output.file !== '-' && !order) {
      // Straight to a .npy, a batch of rows at a time: memory is one batch, whatever the text's size.
      withFile(input.label, () => tableToNpyFile(input.file, output.file, textIn, descr, input.label, encodeOptions(undefined).version, transform));
      return;
    }
    const table = withFile(input.label, () => tableToArray(textPieces(input.file), textIn, descr, input.label));
    arrays = [[basename(input.file).replace(/\.(csv|tsv)$/i, ''), table, 1]];
  } else if (textOut && !order && !byteorder && input.file !== '-') {
    // A .npy to text, a step of rows at a time by region reads: memory is one step, whatever the file's size.
    const h = withFile(input.label, () => openNpyFileSync(input.file, allowPickle ? { pickle: pickleCodec } : {}));
    try {
      withFile(output.file, () =>
        writeBeside(output.file, (fd) => {
          const rest = h.shape.slice(1);
          const rowsOf = (from: number, count: number): NdArray => withFile(input.label, () => h.read([from, ...rest.map(() => 0)], [count, ...rest]));
          for (const piece of tablePieces(h.dtype, h.shape, rowsOf, textOut)) writeSync(fd, piece);
        }),
      );
    } finally {
      h.close();
    }
    return;
  } else {
    arrays = [named(basename(input.file).replace(/\.npy$/i, ''), input)];
  }
  arrays = arrays.map(([name, a, v]) => [name, withFile(input.label, () => transform(a)), v]);
  if (textOut) {
    if (arrays.length !== 1) throw new UsageError(`${input.label} holds ${arrays.length} arrays; name one as ${input.file}:NAME for a table`);
    const a = toOrder(arrays[0]![1], 'C');
    withFile(output.file, () =>
      writeBeside(output.file, (fd) => {
        for (const piece of tablePieces(a.dtype, a.shape, (from, count) => rowsOfArray(a, from, count), textOut)) writeSync(fd, piece);
      }),
    );
    return;
  }

  if (outArchive) {
    if (output.member !== undefined) {
      if (arrays.length !== 1) throw new UsageError('OUT.npz:NAME takes a single array; give OUT.npz for a whole archive');
      arrays = [[output.member, arrays[0]![1], arrays[0]![2]]];
    }
    const compress = p.flags.has('--compress') || (!p.flags.has('--store') && compressed);
    // One version for the archive: the members' own when they agree.
    const versions = new Set(arrays.map(([, , v]) => v));
    const options = encodeOptions(versions.size === 1 ? [...versions][0] : undefined);
    const progress = startProgress(`${printable(output.file)}${compress ? ' (deflate)' : ''}`, quiet);
    try {
      await saveNpz(output.file, new Map(arrays.map(([name, a]) => [name, a])), { compress, ...options, onProgress: progress.update });
    } catch (e) {
      throw new FileError(output.file, e);
    } finally {
      progress.stop();
    }
  } else {
    if (arrays.length !== 1) throw new UsageError(`${input.label} holds ${arrays.length} arrays; name one as ${input.file}:NAME or write a .npz`);
    const [, array, inputVersion] = arrays[0]!;
    const options = encodeOptions(inputVersion);
    if (output.file === '-') {
      const bytes = withFile(input.label, () => encodeNpy(array, options));
      (io.stdoutBytes ?? ((b: Uint8Array) => process.stdout.write(b)))(bytes);
    } else {
      withFile(output.file, () => saveNpySync(output.file, array, options));
    }
  }
  void io;
}

/** Run the command; returns the exit status. */
export async function main(args: string[], io: Io): Promise<number> {
  currentIo = io;
  stdinBytes = undefined;
  try {
    if (args.length === 0 || args[0] === '--help' || args[0] === '-h' || args[0] === 'help') {
      (args.length === 0 ? io.stderr : io.stdout)(USAGE + '\n');
      return args.length === 0 ? 2 : 0;
    }
    if (args[0] === '--version') {
      const native = nativeStatus();
      io.stdout(`npyts 0.1.0 (@npyts/native: ${native.loaded ? 'in use' : `not in use, ${native.reason}`})\n`);
      return 0;
    }
    const [command, ...rest] = args;
    const parsed = parseArgs(rest);
    allowPickle = parsed.flags.has('--allow-pickle');
    quiet = parsed.flags.has('--quiet');
    if (parsed.flags.has('--help')) {
      io.stdout(USAGE + '\n');
      return 0;
    }
    switch (command) {
      case 'info':
        cmdInfo(parsed, io);
        break;
      case 'show':
        await cmdShow(parsed, io);
        break;
      case 'convert':
        await cmdConvert(parsed, io);
        break;
      case 'diff':
        return cmdDiff(parsed, io);
      default:
        throw new UsageError(`unknown command '${command}'`);
    }
    return 0;
  } catch (e) {
    if (process.env.NPYTS_DEBUG === '1') io.stderr(`${(e as Error)?.stack ?? e}\n${e instanceof FileError ? `caused by: ${(e.cause as Error)?.stack}\n` : ''}`);
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
  if (e instanceof NpyError) return e.message;
  const err = e as NodeJS.ErrnoException;
  if (err?.code === 'ENOENT') return 'no such file';
  if (err?.code === 'EISDIR') return 'is a directory';
  if (err?.code === 'EACCES') return 'permission denied';
  return err?.message ?? String(e);
}

/** Text pieces of a file, decoded as UTF-8 a MiB at a time (a character split across pieces is kept whole). */
function* textPieces(file: string): Generator<string> {
  const fd = openSync(file, 'r');
  try {
    const decoder = new TextDecoder('utf-8');
    const buffer = new Uint8Array(1 << 20);
    for (let n = readSync(fd, buffer); n > 0; n = readSync(fd, buffer)) yield decoder.decode(buffer.subarray(0, n), { stream: true });
    const last = decoder.decode();
    if (last) yield last;
  } finally {
    closeSync(fd);
  }
}

/**
 * A table read into a .npy as it streams: the header is written for 0 rows (numpy's growth padding
 * leaves room for any row count), each batch of rows is written after it, and the header is written
 * again with the count at the end, all beside the target and renamed over it when complete.
 */
function tableToNpyFile(
  from: string,
  to: string,
  delimiter: ',' | '\t',
  descr: string,
  source: string,
  version: 1 | 2 | 3 | undefined,
  transform: (a: NdArray) => NdArray,
): void {
  writeBeside(to, (fd) => {
    let header: Uint8Array | null = null;
    let rows = 0;
    let last: NdArray | null = null;
    for (const batch of tableBatches(textPieces(from), delimiter, descr, source)) {
      const a = transform(batch);
      if (!header) {
        header = encodeHeader(a.dtype, [0, ...a.shape.slice(1)], false, version);
        writeAll(fd, header);
      }
      writeAll(fd, dataToBytes(a.dtype, a.data as TypedArray));
      rows += a.shape[0]!;
      last = a;
    }
    const final = encodeHeader(last!.dtype, [rows, ...last!.shape.slice(1)], false, version);
    if (final.length !== header!.length) throw new NpyError('HEADER_ROOM', `${rows} rows do not fit the header's room`);
    writeAll(fd, final, 0);
  });
}

/** Write all of `bytes` (at `position`, or at the file position), however the kernel splits it. */
function writeAll(fd: number, bytes: Uint8Array, position?: number): void {
  for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done, position === undefined ? null : position + done);
}
