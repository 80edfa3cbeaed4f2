/** Inputs named on the command line: a .npy, a member of a .npz (`file.npz:member`), or standard input. */
/**
 * The `npyts` command: argument parsing (util.parseArgs) and one function per subcommand (info, show,
 * convert, diff, csv). Long because it holds every subcommand's wiring; the work itself is in
 * format.ts, diff.ts, text-table.ts and json-stream.ts. Splitting the subcommands into modules of
 * their own is the next step.
 */
import {
  NpyError,
  SNIFF_BYTES,
  formatOf,
  decodeNpyWithHeader,
  decodeNpz,
  type NdArray,
  type NpyHeader,
  type NpzArchive,
  type SyncByteSource,
} from '@npyts/core';
import { checkRegularFile, openNpzSync, openNpyFileSync, type NpyFileHandleSync, zlibCodec } from '@npyts/core/node';
import { pickleCodec } from '@npyts/core/pickle';
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { session, withFile, stdin } from './session.js';

/** A path on the command line: a file, or `ARCHIVE.npz:NAME` for one member. */
export interface Target {
  label: string;
  file: string;
  member: string | undefined;
}

export function target(arg: string, mustExist: boolean): Target {
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

/**
 * The first bytes of a file (or of standard input) and its size: what core's format list
 * (`formatOf`) tells a file's kind from, the one place those rules live.
 */
export function firstBytes(file: string): { first: Uint8Array; size: number } {
  if (file === '-') {
    const b = stdin();
    return { first: b.subarray(0, SNIFF_BYTES), size: b.length };
  }
  const head = new Uint8Array(SNIFF_BYTES);
  const fd = openSync(file, 'r');
  try {
    const got = readSync(fd, head, 0, head.length, 0);
    return { first: head.subarray(0, got), size: fstatSync(fd).size };
  } finally {
    closeSync(fd);
  }
}

/** Whether a file is a zip (a .npz, or a torch.save file), as core's format list tells it. */
export function isArchive(file: string): boolean {
  const { first, size } = firstBytes(file);
  return formatOf(first, size)?.name === 'zip';
}

export function withArchive<T>(t: Target, fn: (archive: NpzArchive<SyncByteSource>) => T): T {
  const archive = withFile(t.label, () => (t.file === '-' ? decodeNpz(stdin(), { codec: zlibCodec }) : openNpzSync(t.file)));
  try {
    return withFile(t.label, () => fn(archive));
  } finally {
    archive.closeSync();
  }
}

/** Header and array of one .npy, or of one archive member. */
export function loadOne(t: Target, archive?: NpzArchive<SyncByteSource>): { header: NpyHeader; array: NdArray } {
  const bytes =
    archive && t.member !== undefined
      ? withFile(t.label, () => archive.bytesSync(t.member!))
      : t.file === '-'
        ? stdin()
        : withFile(t.file, () => readFileSync(t.file));
  const options = session.allowPickle ? { pickle: pickleCodec } : {};
  return withFile(t.label, () => decodeNpyWithHeader(bytes, options));
}

export function checkIsFile(file: string): void {
  if (file === '-') return;
  withFile(file, () => checkRegularFile(file));
}

/** Every array of a FILE argument by name: a .npy (its own name), each member of an archive, or one member. */
export function arraysOf(t: Target): Map<string, NdArray> {
  if (t.member === undefined && !isArchive(t.file)) return new Map([['', loadOne(t).array]]);
  return withArchive(t, (archive) => {
    const names = t.member !== undefined ? [t.member] : archive.names;
    return new Map(
      names.map((name) => [t.member !== undefined ? '' : name, loadOne({ label: `${t.file}:${name}`, file: t.file, member: name }, archive).array]),
    );
  });
}

/** The file opened for region reads, or null for an object array (a pickle has no regions). */
export function openRegionsOrNull(file: string): NpyFileHandleSync | null {
  try {
    return openNpyFileSync(file);
  } catch (e) {
    if (e instanceof NpyError && e.code === 'PICKLE_UNSUPPORTED') return null;
    throw e;
  }
}
