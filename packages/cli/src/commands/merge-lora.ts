/** `npyts merge-lora`: a PEFT (or llama.cpp GGUF) LoRA adapter merged into its base, written as a .safetensors file. */
import { mergeLora, saveSafetensors } from '@npyts/core/node';
import { type Io, UsageError, withFileAsync } from '../session.js';
import type { Parsed } from '../args.js';

export async function cmdMergeLora(p: Parsed, _io: Io): Promise<void> {
  const [base, adapter, ...extra] = p.positional;
  if (base === undefined || adapter === undefined || extra.length) throw new UsageError('merge-lora takes BASE ADAPTER -o OUT.safetensors');
  const out = p.flags.get('--output');
  if (typeof out !== 'string' || !/\.safetensors$/i.test(out)) throw new UsageError('merge-lora writes a .safetensors file: -o OUT.safetensors');
  const given = p.flags.get('--scale');
  const scale = given === undefined ? 1 : Number(given);
  if (!Number.isFinite(scale) || given === '') throw new UsageError('--scale must be a number (0: the base unchanged, 1: the whole adapter)');
  const merged = await withFileAsync(adapter, () => mergeLora(base, adapter, { scale }));
  try {
    // Streamed: each tensor merged when its turn comes to be written, one in memory at a time;
    // transformers' own mark, so that from_pretrained loads the file as PyTorch weights.
    await withFileAsync(out, () => saveSafetensors(out, merged, { metadata: { format: 'pt' } }));
  } finally {
    await merged.close();
  }
}
