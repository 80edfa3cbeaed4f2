// `node bench/torch-fresh.mjs DIR [ROUNDS]`: a fresh process opens a torch.save .pt with a map and reads one
// 64 MiB float32 tensor (its first and last value), against a fresh Python doing the same with
// torch.load(mmap=True, weights_only=True) (issue 68: "a fresh process opens a mapped .pt and reads one tensor at
// most as fast as torch.load(mmap=True)"). The .pt (made here by torch: the 64 MiB tensor among a few smaller
// ones) is read from the page cache. Each round runs both, taking turns going first. Three ratios, each the median
// over the rounds with its spread: `process`, the whole process as the parent sees it (start, imports, the read,
// exit); `imports_and_read`, npyts timed from the process's start (Node's own start-up, then importing
// @npyts/core/node, opening and reading) against torch timed from after `import torch` (torch.load and the read
// alone: the import of torch is not counted, so npyts's own module loading is); `read`, the open and read alone
// on each side. Needs @npyts/native (the map). Prints one JSON object; its `line` is the report's paragraph.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { middleOf } from './timing.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const [dir, roundsArg] = process.argv.slice(2);
if (!dir) throw new Error('usage: node bench/torch-fresh.mjs DIR [ROUNDS]');
const rounds = Number(roundsArg ?? 5);
mkdirSync(dir, { recursive: true });
const file = join(dir, 'fresh.pt');
const name = 'big';
if (!existsSync(file)) {
  execFileSync('python3', [
    '-c',
    `import torch
g = torch.Generator().manual_seed(0)
torch.save({'embed': torch.randn(1000, 64, generator=g), '${name}': torch.randn(4096, 4096, generator=g), 'head': torch.randn(2048, 1024, generator=g), 'bias': torch.zeros(1024)}, ${JSON.stringify(file)})`,
  ]);
}

const nodeSide = `
const t0 = performance.now();
const { openWeights } = await import('@npyts/core/node');
const t1 = performance.now();
const w = await openWeights(${JSON.stringify(file)}, { mmap: 'r' });
const t = await w.get(${JSON.stringify(name)});
const value = Number(t.data[0]) + Number(t.data[t.data.length - 1]);
await w.close();
const t2 = performance.now();
console.log(JSON.stringify({ fromStart: t2 / 1000, read: (t2 - t1) / 1000, imports: (t1 - t0) / 1000, value }));
`;
const pythonSide = `
import json, time
import torch
t = time.perf_counter()
x = torch.load(${JSON.stringify(file)}, mmap=True, weights_only=True)[${JSON.stringify(name)}]
value = float(x[0, 0]) + float(x[-1, -1])
s = time.perf_counter() - t
print(json.dumps({'fromStart': s, 'read': s, 'value': value}))
`;
const timed = (run) => {
  const t = performance.now();
  const out = JSON.parse(run());
  return { ...out, process: (performance.now() - t) / 1000 };
};
const sides = {
  npyts: () =>
    timed(() => execFileSync(process.execPath, ['--input-type=module', '-e', nodeSide], { cwd: here, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })),
  torch: () => timed(() => execFileSync('python3', ['-c', pythonSide], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })),
};
const results = { npyts: [], torch: [] };
for (let i = 0; i < rounds; i++) {
  const order = i % 2 ? ['torch', 'npyts'] : ['npyts', 'torch'];
  for (const who of order) results[who].push(sides[who]());
}
const values = new Set(Object.values(results).flatMap((rs) => rs.map((r) => r.value.toPrecision(6))));
if (values.size !== 1) throw new Error(`the two sides read different values: ${[...values].join(', ')}`);
const ratio = (key) => {
  const ratios = results.npyts.map((r, i) => r[key] / results.torch[i][key]);
  return { ratio: middleOf(ratios), spread: [Math.min(...ratios), Math.max(...ratios)] };
};
const summary = {
  rounds,
  seconds: {
    npyts: {
      process: middleOf(results.npyts.map((r) => r.process)),
      fromStart: middleOf(results.npyts.map((r) => r.fromStart)),
      imports: middleOf(results.npyts.map((r) => r.imports)),
      read: middleOf(results.npyts.map((r) => r.read)),
    },
    torch: { process: middleOf(results.torch.map((r) => r.process)), read: middleOf(results.torch.map((r) => r.read)) },
  },
  process: ratio('process'),
  imports_and_read: ratio('fromStart'),
  read: ratio('read'),
};
const ms = (s) => `${(s * 1000).toFixed(0)} ms`;
const cell = (p) =>
  `${p.ratio.toFixed(2)} × (spread ${p.spread[0].toFixed(2)}–${p.spread[1].toFixed(2)}; target ≤ 1: ${p.spread[1] <= 1 ? 'met' : p.spread[0] > 1 ? '**missed**' : '**crosses**'})`;
const s = summary.seconds;
summary.line =
  `Fresh process, a mapped .pt, one 64 MiB tensor: npyts ${ms(s.npyts.process)} a process (from its start to the value ${ms(s.npyts.fromStart)}, ` +
  `of which importing @npyts/core/node ${ms(s.npyts.imports)}, opening and reading ${ms(s.npyts.read)}), torch.load(mmap=True) ${ms(s.torch.process)} a process ` +
  `(${ms(s.torch.read)} after import torch). Whole process ${cell(summary.process)}; npyts from its start against torch after its import ${cell(summary.imports_and_read)}; ` +
  `the read alone ${cell(summary.read)}. ${rounds} interleaved rounds.`;
console.log(JSON.stringify(summary));
