/** Where archives come from: bytes, a Blob or File, a URL (relative to the page in a browser), a path in Node. */
import { NpyError, decodeNpz, resolveUrl, type NdArray, type NpzArchive, type NpzOptions } from '@npyts/core';
import type { NpzFile } from '@npyts/core/node';

/** An archive in memory (sync) or a file read asynchronously: `await` serves both. */
export type AnyArchive = NpzArchive | NpzFile;

/** Where a .npz is read from: bytes, a `Blob`/`File`, a URL, or (in Node) a file path; or an opened archive. */
export type NpzSource = Uint8Array | ArrayBuffer | Blob | string | URL | AnyArchive;

/** Options for reading a source: the archive's, and the `fetch` and `signal` of URL reads. */
export interface SourceOptions extends NpzOptions {
  /** fetch to use for URLs (default: globalThis.fetch). */
  fetch?: typeof fetch;
  /** Aborts a URL read or a file read. */
  signal?: AbortSignal;
}

/**
 * One member of either kind of archive, as an array: a file reads it asynchronously; an archive in
 * memory inflates it off the main thread where the platform allows ({@link NpzArchive.read}).
 */
export function readMember(archive: AnyArchive, member: string): Promise<NdArray> {
  return 'read' in archive ? archive.read(member) : archive.get(member);
}

/** True in Node (and runtimes that pose as it): a string without a scheme is a file path there. */
export function inNode(): boolean {
  const p = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return typeof p?.versions?.node === 'string';
}

/** `http:`, `https:`, `blob:`, `data:`, `file:`…: a string that names its scheme (a drive letter is not one). */
const SCHEME = /^[a-z][a-z0-9+.-]+:/i;

/** True for an opened archive handed in by the caller (it is theirs to close). */
export function isArchive(source: unknown): source is AnyArchive {
  return typeof source === 'object' && source !== null && 'names' in source && 'get' in source && 'entry' in source;
}

/**
 * Open a source as an archive. The second value says whether this call opened it (and so must close it).
 * A string with a scheme, or any string outside Node, is a URL: relative ones resolve against the page.
 */
export async function openArchive(source: NpzSource, options: SourceOptions = {}): Promise<[AnyArchive, boolean]> {
  if (isArchive(source)) return [source, false];
  if (source instanceof Uint8Array || source instanceof ArrayBuffer) return [decodeNpz(source, options), true];
  if (typeof Blob !== 'undefined' && source instanceof Blob) return [decodeNpz(new Uint8Array(await source.arrayBuffer()), options), true];
  const text = String(source);
  if (source instanceof URL || SCHEME.test(text) || !inNode()) {
    const url = resolveUrl(text);
    const res = await (options.fetch ?? fetch)(url, options.signal ? { signal: options.signal } : {});
    if (!res.ok) throw new NpyError('TRUNCATED', `fetching ${url} failed: HTTP ${res.status}`);
    return [decodeNpz(new Uint8Array(await res.arrayBuffer()), options), true];
  }
  return [await (await nodeEntry()).loadNpz(text, options), true];
}

/**
 * `@npyts/core/node`, loaded only when a path is used. The specifier is a variable so that browser
 * bundlers do not pull Node's file system into the page.
 */
export async function nodeEntry(): Promise<typeof import('@npyts/core/node')> {
  const specifier = '@npyts/core/node';
  return (await import(/* @vite-ignore */ specifier)) as typeof import('@npyts/core/node');
}
