// `node bench/weights.mjs DIR [--quick]`: weight files as users hold them. loadWeights of a
// state_dict as .safetensors and as torch.save's .pt, against Python's safetensors.numpy.load_file
// and torch.load(weights_only=True), in interleaved rounds (bench/paired.mjs); and the bytes one
// tensor of a remote file moves over HTTP (nginx), against the tensor's own size. Prints JSON.
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSafetensors, openWeights } from '@npyts/core';
import { loadWeights } from '@npyts/core/node';
import { startNginx } from '../test/helpers/nginx.mjs';
import { paired, startNumpy, verdict } from './paired.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const [dir] = process.argv.slice(2);
if (!dir) throw new Error('usage: node bench/weights.mjs DIR [--quick]');
const quick = process.argv.includes('--quick');
const made = JSON.parse(execFileSync('python3', [join(here, 'weights_side.py'), 'make', dir, quick ? '32' : '500'], { encoding: 'utf8' }));
const python = startNumpy(join(here, 'weights_side.py'), dir);
const rows = [];
try {
  for (const [op, name, path] of [
    ['loadWeights .safetensors', 'safetensors', join(dir, 'state.safetensors')],
    ['loadWeights .pt (torch.save)', 'torch', join(dir, 'state.pt')],
    [`loadWeights .safetensors of ${made.many} small tensors`, 'many', join(dir, 'many.safetensors')],
  ]) {
    const p = await paired(python, name, () => loadWeights(path), { rounds: quick ? 3 : 5, repeats: quick ? 1 : 3 });
    rows.push({ op, baseline_case: name, ...p, target: 1.0, verdict: verdict(p, 1.0) });
  }
} finally {
  await python.close();
}

// One tensor of a remote file: the bytes moved, beside the tensor's own bytes.
const server = await startNginx(dir);
const remote = [];
try {
  const st = await openSafetensors(`${server.base}/state.safetensors`);
  const name = st.names[Math.floor(st.names.length / 2)];
  const before = st.source.stats.bytes;
  const a = await st.get(name);
  remote.push({
    file: 'state.safetensors',
    tensor: name,
    tensor_bytes: a.data.byteLength,
    header_bytes: st.header(st.names[0]).dataOffset,
    opened_bytes: before,
    moved_bytes: st.source.stats.bytes,
  });
  await st.close();
  // A .pt through openWeights: the directory (the archive's tail), the pickle, then the tensor.
  let moved = 0;
  const counting = (await import('@npyts/core')).urlSource;
  const source = await counting(`${server.base}/state.pt`);
  const w = await openWeights(source);
  const t = await w.get(name);
  moved = source.stats.bytes;
  remote.push({ file: 'state.pt', tensor: name, tensor_bytes: t.data.byteLength, moved_bytes: moved });
  await w.close();
} finally {
  server.stop();
}
console.log(JSON.stringify({ made, rows, remote }));
