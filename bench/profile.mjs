// `node bench/profile.mjs [DIR]`: where the time of the bench's main cases goes, from Linux perf
// (software cpu-clock sampling with call graphs; needs `perf`, from Debian's linux-perf). Each case
// runs 12 times in a fresh process, with @npyts/native and with NPYTS_NATIVE=0, and the output is a
// markdown table of the shares that explain the gaps in the README. Inputs are the bench's own
// (run `npm run bench` once first, or pass the directory it printed).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const dir = process.argv[2] ?? join(tmpdir(), 'npyts-bench-256');
if (!existsSync(join(dir, 'f4.npy'))) throw new Error(`no bench inputs in ${dir}: run npm run bench first`);

const cases = {
  'loadNpy f4': `loadNpy(file('f4.npy'))`,
  'load big-endian f8': `loadNpy(file('f8_be.npy'))`,
  'F → C in memory': `toOrder(F, 'C')`,
  'saveNpy f4': `saveNpy(file('profile_out.npy'), f4)`,
  'loadNpz deflated': `{ const a = loadNpz(file('deflated.npz')); a.get('member'); a.close(); }`,
  'object array (allowPickle)': `loadNpy(file('objects.npy'), { allowPickle: true })`,
};

// Shares of the samples (with children) spent under these kernel entry points.
const groups = {
  'page faults (first touch)': /^asm_exc_page_fault$/,
  'of which zeroing pages': /^clear_(huge_)?page/,
  'kernel copy (page cache ↔ memory)': /^(_copy_to_iter|_copy_from_iter|copy_page_from_iter_atomic)$/,
  'freeing memory (munmap)': /^__x64_sys_munmap$/,
  'file write path': /^(ext4_buffered_write_iter|ext4_file_write_iter)$/,
};

function profile(name, code, native) {
  const driver = join(here, '.profile-driver.mjs');
  writeFileSync(driver, `
    import { toOrder } from '@npyts/core';
    import { loadNpy, saveNpy, loadNpz } from '@npyts/core/node';
    import { join } from 'node:path';
    const file = (n) => join(${JSON.stringify(dir)}, n);
    const f4 = ${code.includes('f4)') ? "loadNpy(file('f4.npy'))" : 'null'};
    const F = ${code.includes('(F,') ? "loadNpy(file('f4_F.npy'))" : 'null'};
    const t0 = performance.now();
    for (let i = 0; i < 12; i++) ${code};
    console.log(((performance.now() - t0) / 12).toFixed(1));
  `);
  const data = join(tmpdir(), 'npyts-profile.data');
  const env = { ...process.env, NPYTS_NATIVE: native ? '1' : '0' };
  const rec = spawnSync('perf', ['record', '-q', '-e', 'cpu-clock', '-F', '1999', '-g', '-o', data, process.execPath, driver], { env, encoding: 'utf8' });
  if (rec.status !== 0) throw new Error(`perf record failed: ${rec.stderr}`);
  const perMs = rec.stdout.trim();
  const report = execFileSync('perf', ['report', '-i', data, '--children', '--sort', 'sym', '--stdio', '-g', 'none'], { encoding: 'utf8', maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'ignore'] });
  const shares = {};
  const self = [];
  for (const line of report.split('\n')) {
    const m = /^\s+([\d.]+)%\s+([\d.]+)%\s+\[([k.])\]\s+(\S+)/.exec(line);
    if (!m) continue;
    const [, children, selfPct, where, sym] = m;
    for (const [g, re] of Object.entries(groups)) if (re.test(sym)) shares[g] = Math.max(shares[g] ?? 0, Number(children));
    if (Number(selfPct) >= 3) self.push(`${sym}${where === 'k' ? ' (kernel)' : ''} ${selfPct}%`);
  }
  rmSync(data, { force: true });
  rmSync(driver, { force: true });
  return { name, native, ms: perMs, shares, self: self.sort((a, b) => parseFloat(b.split(' ').pop()) - parseFloat(a.split(' ').pop())).slice(0, 4) };
}

const rows = [];
for (const [name, code] of Object.entries(cases)) {
  for (const native of [true, false]) rows.push(profile(name, code, native));
}
rmSync(join(dir, 'profile_out.npy'), { force: true });

console.log(`| case | @npyts/native | ms per run (under perf) | ${Object.keys(groups).join(' | ')} | largest self shares |`);
console.log(`|---|---|---|${Object.keys(groups).map(() => '---|').join('')}---|`);
for (const r of rows) {
  const cells = Object.keys(groups).map((g) => (r.shares[g] ? `${r.shares[g].toFixed(0)}%` : '–'));
  console.log(`| ${r.name} | ${r.native ? 'on' : 'off'} | ${r.ms} | ${cells.join(' | ')} | ${r.self.join(', ')} |`);
}
