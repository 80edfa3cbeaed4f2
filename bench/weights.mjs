// `node bench/weights.mjs DIR [--quick]`: weight files as users hold them. loadWeights of a
// state_dict as .safetensors and as torch.save's .pt, against Python's safetensors.numpy.load_file
// and torch.load(weights_only=True), in interleaved rounds (bench/paired.mjs); and the bytes one
// tensor of a remote file moves over HTTP (nginx), against the tensor's own size. With the addon, the
// mapped rows ({ mmap: 'r' }): every tensor of the state_dict as views, against load_file and
// torch.load(mmap=True); and one 4 MiB tensor of a big file (NPYTS_BENCH_BIG_MB, default 5000 MB;
// 64 with --quick) opened with a map each time, against safe_open and torch.load(mmap=True). Prints JSON.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSafetensors, openWeights } from '@npyts/core';
import { loadWeights, nativeStatus, openWeights as openWeightsFile } from '@npyts/core/node';
import { startNginx } from '../test/helpers/nginx.mjs';
import { paired, startNumpy, verdict } from './paired.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const [dir] = process.argv.slice(2);
if (!dir) throw new Error('usage: node bench/weights.mjs DIR [--quick]');
const quick = process.argv.includes('--quick');
const made = JSON.parse(execFileSync('python3', [join(here, 'weights_side.py'), 'make', dir, quick ? '32' : '500'], { encoding: 'utf8' }));
const mapping = nativeStatus().mmap?.available === true;
const bigMb = quick ? 64 : Number(process.env.NPYTS_BENCH_BIG_MB ?? 5000);
const big = mapping ? JSON.parse(execFileSync('python3', [join(here, 'weights_side.py'), 'big', dir, String(bigMb)], { encoding: 'utf8' })) : null;
if (big) writeFileSync(join(dir, 'big.json'), JSON.stringify(big));
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
  if (big) {
    // Mapped loads: views of one map of the file; a tensor's pages are touched as Python's are.
    const oneOf = async (path) => {
      const w = await openWeightsFile(path, { mmap: 'r' });
      const t = await w.get(big.one);
      const v = Number(t.data[0]) + Number(t.data[t.data.length - 1]);
      await w.close();
      return v;
    };
    for (const [op, name, fn, target] of [
      ['loadWeights .safetensors { mmap }: every tensor as views', 'safetensors', () => loadWeights(join(dir, 'state.safetensors'), { mmap: 'r' }), 0.2],
      ['loadWeights .pt { mmap } vs torch.load(mmap=True)', 'torch_mmap', () => loadWeights(join(dir, 'state.pt'), { mmap: 'r' }), 1.0],
      [
        `open a ${(big.bytes / 1e9).toFixed(1)} GB .safetensors { mmap }, one 4 MiB tensor, vs safe_open`,
        'safetensors_one',
        () => oneOf(join(dir, 'big.safetensors')),
        1.0,
      ],
      [
        `open a ${(big.bytes / 1e9).toFixed(1)} GB .pt { mmap }, one 4 MiB tensor, vs torch.load(mmap=True)`,
        'torch_one',
        () => oneOf(join(dir, 'big.pt')),
        1.0,
      ],
    ]) {
      const p = await paired(python, name, fn, { rounds: quick ? 3 : 5, repeats: quick ? 1 : 3 });
      rows.push({ op, baseline_case: name, ...p, target, verdict: verdict(p, target) });
    }
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
console.log(JSON.stringify({ made, big, rows, remote }));
