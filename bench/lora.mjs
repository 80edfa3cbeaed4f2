// `node bench/lora.mjs DIR [--quick]`: a LoRA adapter merged into a random GPT-2 of about 1 GiB
// (64 MiB with --quick) and written as .safetensors — mergeLora then saveSafetensors — against peft's
// from_pretrained, merge_and_unload() and save_pretrained, in interleaved rounds (bench/paired.mjs);
// PyTorch uses its default threads, Node merges on one. Prints JSON.
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mergeLora, saveSafetensors } from '@npyts/core/node';
import { paired, startNumpy } from './paired.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const [dir] = process.argv.slice(2);
if (!dir) throw new Error('usage: node bench/lora.mjs DIR [--quick]');
const quick = process.argv.includes('--quick');
const side = join(here, 'lora_side.py');
const made = JSON.parse(execFileSync('python3', [side, 'make', dir, String(quick ? 64 : 1024)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
const merge = async () => {
  const merged = await mergeLora(join(dir, 'base', 'model.safetensors'), join(dir, 'adapter'));
  try {
    await saveSafetensors(join(dir, 'npyts-merged.safetensors'), await merged.getAll(), { metadata: { format: 'pt' } });
  } finally {
    await merged.close();
  }
};
const python = startNumpy(side, dir);
let result;
try {
  result = await paired(python, 'merge', merge, { rounds: quick ? 3 : 5, repeats: 1 });
} finally {
  await python.close();
}
console.log(JSON.stringify({ bytes: made.bytes, ...result }));
