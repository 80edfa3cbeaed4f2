import type { NdArray } from '@npyts/core';
import type { NpyFileHandleSync } from '@npyts/core/node';
import { Comparison, type DiffResult, type Tolerance, diffArrays } from '../diff.js';
import { type Io, UsageError, withFile, printable } from '../session.js';
import { type Parsed, toleranceOf } from '../args.js';
import { type Target, target, checkIsFile, arraysOf, isArchive, openRegionsOrNull } from '../targets.js';
import { isWeightFile, weightArrays } from '../weights.js';

/** Elements compared per region read of each file. */
const BLOCK_ELEMENTS = 1 << 18;

/**
 * The hyperslabs that cover an array in C order, each of at most `block` elements (one element of
 * the axes before `axis`, a run along it, every element after it): a long row is split too, so that
 * memory never follows the shape.
 */
function* slabsOf(shape: readonly number[], block: number): Generator<{ start: number[]; count: number[] }> {
  if (shape.length === 0) {
    yield { start: [], count: [] };
    return;
  }
  // The outermost axis whose trailing axes fit in a block.
  let axis = shape.length - 1;
  let inner = 1;
  while (axis > 0 && inner * shape[axis]! <= block) inner *= shape[axis--]!;
  const step = Math.max(1, Math.floor(block / inner));
  const outer = shape.slice(0, axis);
  const index = outer.map(() => 0);
  for (;;) {
    for (let at = 0; at < shape[axis]!; at += step) {
      yield {
        start: [...index, at, ...shape.slice(axis + 1).map(() => 0)],
        count: [...outer.map(() => 1), Math.min(step, shape[axis]! - at), ...shape.slice(axis + 1)],
      };
    }
    let d = outer.length - 1;
    while (d >= 0 && ++index[d]! === outer[d]!) index[d--] = 0;
    if (d < 0) return;
  }
}

/**
 * Two .npy files compared a slab at a time by region reads: memory is two slabs of at most
 * BLOCK_ELEMENTS elements, whatever the files' shapes.
 */
function diffFiles(ha: NpyFileHandleSync, hb: NpyFileHandleSync, tol: Tolerance, labels: [string, string]): DiffResult {
  const c = new Comparison(ha.shape, ha.dtype, hb.dtype, hb.shape, tol);
  if (!c.comparable) return c.result();
  if (ha.shape.includes(0)) return c.result();
  for (const { start, count } of slabsOf(ha.shape, BLOCK_ELEMENTS)) {
    c.add(
      withFile(labels[0], () => ha.read(start, count)),
      withFile(labels[1], () => hb.read(start, count)),
    );
  }
  return c.result();
}

/** `diff A B`: exit 0 when every array matches within the tolerance, 1 when any differs. */
export async function cmdDiff(p: Parsed, io: Io): Promise<number> {
  if (p.positional.length !== 2) throw new UsageError('diff needs two FILEs');
  const tol = toleranceOf(p);
  const [ta, tb] = p.positional.map((arg) => target(arg, true)) as [Target, Target];
  checkIsFile(ta.file);
  checkIsFile(tb.file);
  const weights = (t: Target): boolean => withFile(t.label, () => isWeightFile(t));
  const single = (t: Target): boolean => t.file !== '-' && t.member === undefined && !isArchive(t.file) && !weights(t);
  if (single(ta) && single(tb)) {
    // Two .npy files: by regions, unless one holds objects (a pickle has no regions).
    const ha = withFile(ta.label, () => openRegionsOrNull(ta.file));
    let hb: NpyFileHandleSync | null = null;
    try {
      hb = ha && withFile(tb.label, () => openRegionsOrNull(tb.file));
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
  // A weight file's tensors (one, named FILE:NAME, compares as a lone array does).
  const arrays = async (t: Target): Promise<Map<string, NdArray>> => {
    if (!weights(t)) return arraysOf(t);
    const found = await weightArrays(t);
    return t.member === undefined ? found : new Map([['', [...found.values()][0]!]]);
  };
  const a = await arrays(ta);
  const b = await arrays(tb);
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
