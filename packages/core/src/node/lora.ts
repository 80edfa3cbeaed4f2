/** LoRA adapters merged in Node: the base and the adapter's folder by path as well as by URL. */
import { join } from 'node:path';
import type { NpySource } from '../io/open.js';
import { mergeLoraWith, urlInFolder, type LoraAdapterParts, type MergeLoraOptions } from '../lora/merge.js';
import type { WeightFile } from '../weights/open.js';
import { sourceOf } from '../io/open.js';
import { pathOf } from './sources.js';
import { openWeights } from './weights.js';

/**
 * A weight file of `base`'s tensors with a PEFT LoRA adapter merged into them, as PEFT's
 * `merge_and_unload()` merges it (see `mergeLora` of `@npyts/core`): `base` a path, URL, bytes or
 * an open weight file; `adapter` the folder (a path or URL) `save_pretrained` wrote, holding
 * `adapter_config.json` and `adapter_model.safetensors`, or `{ config, weights }`, or a llama.cpp
 * GGUF LoRA adapter (a `.gguf` path or URL, or the file open). Each tensor is merged when it is asked for.
 * @example
 * await using merged = await mergeLora('gpt2/model.safetensors', 'my-adapter');
 * await saveSafetensors('merged.safetensors', await merged.getAll(), { metadata: { format: 'pt' } });
 */
export async function mergeLora(
  base: string | NpySource | WeightFile,
  adapter: string | URL | LoraAdapterParts | WeightFile,
  options: MergeLoraOptions = {},
): Promise<WeightFile> {
  return mergeLoraWith(
    {
      openWeights: (input, o) => openWeights(input, o),
      source: (input, o) => sourceOf(input, o, 'mergeLora'),
      inFolder: (folder, file) => {
        const path = pathOf(folder);
        return path === null ? urlInFolder(folder, file) : join(path, file);
      },
    },
    base,
    adapter,
    options,
  );
}
