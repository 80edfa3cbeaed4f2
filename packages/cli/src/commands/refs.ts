/** `npyts refs`: a reference set (kerchunk's JSON) that lets xarray, dask, zarr and zarrita read the files in place. */
import { writeSync } from 'node:fs';
import { referencesOf, writeBeside } from '@npyts/core/node';
import { type Io, UsageError, withFileAsync, withFile } from '../session.js';
import type { Parsed } from '../args.js';

/** A whole number ≥ `least` given to `flag`, or undefined. */
function countOf(p: Parsed, flag: string, least: number): number | undefined {
  const v = p.flags.get(flag);
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(String(v)) || Number(v) < least || !Number.isSafeInteger(Number(v))) throw new UsageError(`${flag} must be a whole number ≥ ${least}`);
  return Number(v);
}

export async function cmdRefs(p: Parsed, io: Io): Promise<void> {
  const files = p.positional;
  if (files.length === 0) throw new UsageError('refs needs at least one FILE');
  const zarr = p.flags.get('--zarr-format');
  if (zarr !== undefined && zarr !== '2' && zarr !== '3') throw new UsageError('--zarr-format must be 2 or 3');
  const concat = p.flags.get('--concat');
  if (concat !== undefined && concat !== '0') throw new UsageError('--concat joins files along axis 0 only: --concat 0');
  if (files.length > 1 && concat === undefined) throw new UsageError(`${files.length} files make one set only when joined: --concat 0`);
  const url = p.flags.get('--url');
  const chunkBytes = countOf(p, '--chunk-bytes', 1);
  const out = p.flags.get('--output');
  const set = await withFileAsync(files.length === 1 ? files[0]! : files.join(', '), () =>
    referencesOf(files, {
      zarrFormat: zarr === '2' ? 2 : 3,
      ...(concat === undefined ? {} : { concat: 0 }),
      ...(typeof url === 'string' ? { url } : {}),
      ...(chunkBytes === undefined ? {} : { chunkBytes }),
    }),
  );
  const text = `${JSON.stringify(set)}\n`;
  if (typeof out === 'string' && out !== '-') withFile(out, () => writeBeside(out, (fd) => writeSync(fd, text)));
  else io.stdout(text);
}
