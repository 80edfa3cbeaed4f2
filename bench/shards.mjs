// `node bench/shards.mjs DIR [--quick]`: `npyts convert model.pt OUT/model.safetensors --max-shard-size`
// of a ~1 GiB torch.save state_dict (64 MiB with --quick) into Hugging Face's sharded layout, against
// huggingface_hub's save_torch_state_dict of the torch.load'ed weights (what a Python user runs).
// Each run is a fresh process; its peak resident size is its VmHWM (/proc/self/status) at exit.
// The target: npyts's peak RSS under its largest tensor + 100 MiB (a streamed write holds one
// tensor). Interleaved rounds, the side that goes first alternating; medians and spreads. Prints JSON.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { middleOf } from './timing.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const [dir] = process.argv.slice(2);
if (!dir) throw new Error('usage: node bench/shards.mjs DIR [--quick]');
const quick = process.argv.includes('--quick');
const MIB = 1 << 20;
mkdirSync(dir, { recursive: true });
const pt = join(dir, 'model.pt');
// A GPT-like set: an embedding 1/8 of the total, the rest in layers of 1/32 each, float32.
const total = quick ? 64 * MIB : 1024 * MIB;
const made = JSON.parse(
  execFileSync(
    'python3',
    [
      '-W',
      'ignore',
      '-c',
      `
import torch, json
total = ${total}
sd = {'wte.weight': torch.randn(total // 8 // 4 // 1024, 1024)}
for i in range(28):
    sd[f'h.{i}.weight'] = torch.randn(total // 32 // 4 // 1024, 1024)
torch.save(sd, ${JSON.stringify(pt)})
print(json.dumps({'bytes': sum(t.numel() * 4 for t in sd.values()), 'largest': max(t.numel() * 4 for t in sd.values()), 'tensors': len(sd)}))
`,
    ],
    { encoding: 'utf8' },
  ),
);
const shard = quick ? '20MB' : '300MB';
const peakOf = (stderr) => Number(/peak-rss: (\d+)/.exec(stderr)?.[1] ?? Number.NaN);

function ours() {
  const out = join(dir, 'npyts');
  rmSync(out, { recursive: true, force: true });
  const t0 = performance.now();
  const r = spawnSync(
    process.execPath,
    [
      '-r',
      join(root, 'test/helpers/peak-rss.cjs'),
      join(root, 'packages/cli/bin/npyts.js'),
      'convert',
      pt,
      join(out, 'model.safetensors'),
      '--max-shard-size',
      shard,
    ],
    { encoding: 'utf8' },
  );
  const seconds = (performance.now() - t0) / 1000;
  if (r.status !== 0) throw new Error(`npyts convert failed: ${r.stderr}`);
  return { seconds, peak: peakOf(r.stderr), files: readdirSync(out).length };
}

function theirs() {
  const out = join(dir, 'hf');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out);
  const t0 = performance.now();
  const r = spawnSync(
    'python3',
    [
      '-W',
      'ignore',
      '-c',
      `
import torch, re, sys
from huggingface_hub import save_torch_state_dict
save_torch_state_dict(torch.load(${JSON.stringify(pt)}, weights_only=True), ${JSON.stringify(out)}, max_shard_size=${JSON.stringify(shard)})
sys.stderr.write('peak-rss: %d\\n' % (int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)) * 1024))
`,
    ],
    { encoding: 'utf8' },
  );
  const seconds = (performance.now() - t0) / 1000;
  if (r.status !== 0) throw new Error(`save_torch_state_dict failed: ${r.stderr}`);
  return { seconds, peak: peakOf(r.stderr), files: readdirSync(out).length };
}

const rounds = quick ? 3 : 5;
const a = [];
const b = [];
for (let r = 0; r < rounds; r++) {
  if (r % 2 === 0) {
    a.push(ours());
    b.push(theirs());
  } else {
    b.push(theirs());
    a.push(ours());
  }
}
const spread = (xs) => [Math.min(...xs), Math.max(...xs)];
const ratios = a.map((x, i) => x.seconds / b[i].seconds);
const limit = made.largest + 100 * MIB;
const peaks = a.map((x) => x.peak);
console.log(
  JSON.stringify({
    op: `npyts convert .pt → sharded .safetensors (--max-shard-size ${shard})`,
    baseline: 'torch.load + huggingface_hub.save_torch_state_dict',
    bytes: made.bytes,
    largest_tensor: made.largest,
    tensors: made.tensors,
    files: a[0].files,
    rounds,
    seconds: middleOf(a.map((x) => x.seconds)),
    seconds_spread: spread(a.map((x) => x.seconds)),
    baseline_seconds: middleOf(b.map((x) => x.seconds)),
    baseline_seconds_spread: spread(b.map((x) => x.seconds)),
    time_ratio: middleOf(ratios),
    time_ratio_spread: spread(ratios),
    peak_rss: middleOf(peaks),
    peak_rss_spread: spread(peaks),
    baseline_peak_rss: middleOf(b.map((x) => x.peak)),
    rss_limit: limit,
    verdict: Math.max(...peaks) <= limit ? 'met' : 'missed',
  }),
);
