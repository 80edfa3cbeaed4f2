/** Opening a GGUF file from wherever it is: a URL, a `Blob`, bytes, or any byte source. */
import { openingOver, sourceOf, type NpySource } from '../io/open.js';
import { HTTP_KEY_SET, type HttpOptions } from '../io/url.js';
import { checkOptions } from '../options.js';
import { GgufFile } from './file.js';

/**
 * Open a GGUF file (llama.cpp's format, versions 2 and 3) from a URL, a `Blob`/`File`, bytes or any
 * {@link ByteSource}: its header is read and checked now, each tensor when asked for (by range: one
 * tensor of a remote model moves the header and that tensor). `@npyts/core/node` adds paths.
 * @example
 * const f = await openGguf('https://example.org/model-Q4_K_M.gguf');
 * const w = await f.get('output.weight');   // dequantized to float32
 */
export async function openGguf(input: NpySource, options: HttpOptions = {}): Promise<GgufFile> {
  checkOptions('openGguf', options, HTTP_KEY_SET);
  options.signal?.throwIfAborted();
  // The first request of a URL learns the size with one byte; the header is read from the start.
  const source = await sourceOf(input, { ...options, tailBytes: 1 });
  return openingOver(source, input, () => GgufFile.open(source, options));
}
