/** `npyts show`: values as numpy prints them, or as JSON, read by region for large files. */
/**
 * The `npyts` command: argument parsing (util.parseArgs) and one function per subcommand (info, show,
 * convert, diff, csv). Long because it holds every subcommand's wiring; the work itself is in
 * format.ts, diff.ts, text-table.ts and json-stream.ts. Splitting the subcommands into modules of
 * their own is the next step.
 */
import type { NdArray, NpyHeader } from '@npyts/core';
import { putOwn, npyDocument, readExactItem } from '@npyts/core/plumbing';
import type { NpyFileHandleSync } from '@npyts/core/node';
import { formatArray, reprLikeNumpy, MAX_OBJECT_TEXT, type Printable } from '../format.js';
import { streamJsonDocument } from '../json-stream.js';
import { startProgress } from '../progress.js';
import { type Io, session, UsageError, FileError, withFile, printable } from '../session.js';
import { type Parsed, limitOf } from '../args.js';
import { target, isArchive, withArchive, loadOne, checkIsFile, openRegionsOrNull } from '../targets.js';
import { infoLine } from './info.js';
import { headerOf, isWeightFile, tensorLine, weightArrays } from '../weights.js';

/**
 * The elements a printout shows, read from the file as they are asked for: each row's shown runs
 * (all of a short row; its first and last three when summarised) in one region read each.
 */
export function shownElements(handle: NpyFileHandleSync): Printable {
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

export async function cmdShow(p: Parsed, io: Io): Promise<void> {
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
  if (withFile(t.label, () => isWeightFile(t))) {
    const arrays = await weightArrays(t);
    if (json) {
      const docs: Record<string, unknown> = {};
      for (const [name, array] of arrays)
        putOwn(
          docs,
          name,
          withFile(`${t.file}:${name}`, () => npyDocument(headerOf(array), array)),
        );
      io.stdout(`${JSON.stringify(t.member !== undefined ? docs[[...arrays.keys()][0]!] : { arrays: docs })}\n`);
    } else {
      for (const [name, array] of arrays) {
        const label = `${t.file}:${name}`;
        io.stdout(`# ${tensorLine(label, array.dtype, array.shape)}\n${withFile(label, () => formatArray(array))}\n`);
      }
    }
    return;
  }
  if (t.member === undefined && !isArchive(t.file)) {
    const limit = limitOf(p);
    // A file is read by regions: its JSON as it is written (constant memory), its printout only
    // where it shows elements. Object arrays (no regions) and standard input are decoded whole.
    const handle = t.file === '-' ? null : withFile(t.label, () => openRegionsOrNull(t.file));
    if (handle) {
      try {
        if (json) {
          const progress = startProgress(printable(t.label), session.quiet);
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
