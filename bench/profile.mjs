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

// The bench's own cases (bench/timing.mjs), by name, with the labels of the README table.
const cases = {
  loadNpy: 'loadNpySync f4',
  byteswap: 'load big-endian f8',
  toC_inmemory: 'F → C in memory',
  saveNpy: 'saveNpySync f4',
  loadNpz: 'openNpzSync deflated',
  objects: 'object array (allowPickle)',
};

// Shares of the samples (with children) spent under these kernel entry points.
const groups = {
  'page faults (first touch)': /^asm_exc_page_fault$/,
  'of which zeroing pages': /^clear_(huge_)?page/,
  'kernel copy (page cache ↔ memory)': /^(_copy_to_iter|_copy_from_iter|copy_page_from_iter_atomic)$/,
  'freeing memory (munmap)': /^__x64_sys_munmap$/,
  'file write path': /^(ext4_buffered_write_iter|ext4_file_write_iter)$/,
};

function profile(name, label, native) {
  const driver = join(here, '.profile-driver.mjs');
  // Inputs are loaded (one untimed run) before the 12 timed ones.
  writeFileSync(
    driver,
    `
    import { benchCases } from './timing.mjs';
    const { cases, cleanup } = benchCases(${JSON.stringify(dir)});
    const run = cases[${JSON.stringify(name)}];
    run();
    const t0 = performance.now();
    for (let i = 0; i < 12; i++) run();
    console.log(((performance.now() - t0) / 12).toFixed(1));
    cleanup();
  `,
  );
  const data = join(tmpdir(), 'npyts-profile.data');
  const env = { ...process.env, NPYTS_NATIVE: native ? '1' : '0' };
  const rec = spawnSync('perf', ['record', '-q', '-e', 'cpu-clock', '-F', '1999', '-g', '-o', data, process.execPath, driver], { env, encoding: 'utf8' });
  if (rec.status !== 0) throw new Error(`perf record failed: ${rec.stderr}`);
  const perMs = rec.stdout.trim();
  const report = execFileSync('perf', ['report', '-i', data, '--children', '--sort', 'sym', '--stdio', '-g', 'none'], {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
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
  return { name: label, native, ms: perMs, shares, self: self.sort((a, b) => parseFloat(b.split(' ').pop()) - parseFloat(a.split(' ').pop())).slice(0, 4) };
}

const rows = [];
for (const [name, label] of Object.entries(cases)) {
  for (const native of [true, false]) rows.push(profile(name, label, native));
}

console.log(`| case | @npyts/native | ms per run (under perf) | ${Object.keys(groups).join(' | ')} | largest self shares |`);
console.log(
  `|---|---|---|${Object.keys(groups)
    .map(() => '---|')
    .join('')}---|`,
);
for (const r of rows) {
  const cells = Object.keys(groups).map((g) => (r.shares[g] ? `${r.shares[g].toFixed(0)}%` : '–'));
  console.log(`| ${r.name} | ${r.native ? 'on' : 'off'} | ${r.ms} | ${cells.join(' | ')} | ${r.self.join(', ')} |`);
}
