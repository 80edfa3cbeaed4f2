/** Opening a .safetensors file from wherever it is: a URL, a `Blob`, bytes, or any byte source. */
import type { SyncByteSource } from '../io/byte-source.js';
import { openingOver, sourceOf, type NpySource } from '../io/open.js';
import { HTTP_KEY_SET, type HttpOptions } from '../io/url.js';
import { checkOptions } from '../options.js';
import { SafetensorsFile } from './file.js';

/**
 * Open a .safetensors file from a URL, a `Blob`/`File`, bytes or any {@link ByteSource}: its header
 * is read and checked now, each tensor when asked for (by range: a remote file moves the header and
 * the tensors asked for). `@npyts/core/node` adds paths.
 * @example
 * const f = await openSafetensors('https://example.org/model.safetensors');
 * const w = await f.get('lm_head.weight');
 */
export async function openSafetensors(input: ArrayBuffer | ArrayBufferView | SyncByteSource, options?: HttpOptions): Promise<SafetensorsFile<SyncByteSource>>;
export async function openSafetensors(input: NpySource, options?: HttpOptions): Promise<SafetensorsFile>;
export async function openSafetensors(input: NpySource, options: HttpOptions = {}): Promise<SafetensorsFile> {
  checkOptions('openSafetensors', options, HTTP_KEY_SET);
  options.signal?.throwIfAborted();
  // The first request of a URL learns the size with one byte; the header is read from the start.
  const source = await sourceOf(input, { ...options, tailBytes: 1 });
  return openingOver(source, input, () => SafetensorsFile.open(source, options));
}
