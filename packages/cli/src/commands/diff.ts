import type { NpyFileHandleSync } from '@npyts/core/node';
import { Comparison, type DiffResult, type Tolerance, diffArrays } from '../diff.js';
import { type Io, UsageError, withFile, printable } from '../session.js';
import { type Parsed, toleranceOf } from '../args.js';
import { type Target, target, checkIsFile, arraysOf, isArchive, openRegionsOrNull } from '../targets.js';

/** Elements compared per region read of each file. */
const BLOCK_ELEMENTS = 1 << 18;

/**
 * Two .npy files compared a block of rows at a time by region reads: memory is two blocks, whatever
 * the files' sizes (a row larger than a block is read whole).
 */
function diffFiles(ha: NpyFileHandleSync, hb: NpyFileHandleSync, tol: Tolerance, labels: [string, string]): DiffResult {
  const c = new Comparison(
    ha.shape,
    ha.shape.reduce((x, y) => x * y, 1),
    ha.dtype,
    hb.dtype,
    hb.shape,
    tol,
  );
  if (!c.comparable) return c.result();
  if (ha.shape.length === 0) {
    c.add(
      withFile(labels[0], () => ha.read([], [])),
      withFile(labels[1], () => hb.read([], [])),
    );
    return c.result();
  }
  const [rows, ...rest] = ha.shape as [number, ...number[]];
  const perRow = rest.reduce((x, y) => x * y, 1);
  const step = Math.max(1, Math.floor(BLOCK_ELEMENTS / Math.max(1, perRow)));
  for (let r = 0; r < rows; r += step) {
    const count = [Math.min(step, rows - r), ...rest];
    const start = [r, ...rest.map(() => 0)];
    c.add(
      withFile(labels[0], () => ha.read(start, count)),
      withFile(labels[1], () => hb.read(start, count)),
    );
  }
  return c.result();
}

/** `diff A B`: exit 0 when every array matches within the tolerance, 1 when any differs. */
export function cmdDiff(p: Parsed, io: Io): number {
  if (p.positional.length !== 2) throw new UsageError('diff needs two FILEs');
  const tol = toleranceOf(p);
  const [ta, tb] = p.positional.map((arg) => target(arg, true)) as [Target, Target];
  checkIsFile(ta.file);
  checkIsFile(tb.file);
  const single = (t: Target): boolean => t.file !== '-' && t.member === undefined && !isArchive(t.file);
  if (single(ta) && single(tb)) {
    // Two .npy files: by regions, unless one holds objects (a pickle has no regions).
    const ha = withFile(ta.label, () => openRegionsOrNull(ta.file));
    const hb = ha && withFile(tb.label, () => openRegionsOrNull(tb.file));
    try {
      if (ha && hb) {
        const r = diffFiles(ha, hb, tol, [ta.label, tb.label]);
        if (!r.equal) io.stdout(`${r.lines.join('\n')}\n`);
        return r.equal ? 0 : 1;
      }
    } finally {
      ha?.close();
      hb?.close();
    }
  }
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
