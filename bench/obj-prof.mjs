import { loadNpySync } from '@npyts/core/node';
import { readFileSync } from 'node:fs';
const file = process.argv[2];
const n = Number(process.argv[3] ?? 30);
const ts = [];
for (let i = 0; i < n; i++) { const t = performance.now(); loadNpySync(file, { allowPickle: true }); ts.push(performance.now() - t); }
ts.sort((a, b) => a - b);
console.log('median', ts[n >> 1].toFixed(2), 'ms');
