import { diffArrays } from '../diff.js';
import { type Io, UsageError, withFile, printable } from '../session.js';
import { type Parsed, toleranceOf } from '../args.js';
import { type Target, target, checkIsFile, arraysOf } from '../targets.js';

/** `diff A B`: exit 0 when every array matches within the tolerance, 1 when any differs. */
export function cmdDiff(p: Parsed, io: Io): number {
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
