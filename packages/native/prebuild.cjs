// Build the binary of one platform package (packages/native-<platform>-<arch>-<libc>: run by its
// `npm pack` through prepack, in its folder) from this folder's C sources, into that folder's
// npyts_native.node. The target is read from the package's own os, cpu and libc fields, so the
// manifest is the one place that names it. The addon uses N-API only (the V8 functions of
// external_buffer.cc are checked for at run time), so one binary serves every Node from 20 on.
// linux-x64 is built with this machine's compiler and linux-arm64 with Debian's cross compiler
// (gcc-aarch64-linux-gnu, g++-aarch64-linux-gnu, and libdeflate-dev:arm64 for its static libdeflate).
// A missing compiler fails the pack: a platform package without its binary must never be made. It
// reports on stderr, as `npm pack --json` keeps stdout for its own answer.
'use strict';
const { spawnSync } = require('node:child_process');
const { createHash } = require('node:crypto');
const { copyFileSync, cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } = require('node:fs');
const { arch: hostArch, tmpdir } = require('node:os');
const { join } = require('node:path');

/** The GNU triple's machine and the ELF e_machine of each npm cpu, and the triple's system of each libc. */
const CPUS = { x64: { machine: 'x86_64', elf: 62 }, arm64: { machine: 'aarch64', elf: 183 } };
const LIBCS = { glibc: 'gnu' };

/** The target of the package in `dir`, from its manifest (one os, one cpu, one libc). */
function targetOf(dir) {
  const m = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const [platform, arch, libc] = [m.os, m.cpu, m.libc].map((v) => (Array.isArray(v) && v.length === 1 ? v[0] : null));
  if (platform !== 'linux' || !Object.hasOwn(CPUS, arch) || !Object.hasOwn(LIBCS, libc)) {
    console.error(`@npyts/native prebuild: ${m.name} names os ${m.os}, cpu ${m.cpu}, libc ${m.libc}; this script builds linux with one cpu of ${Object.keys(CPUS)} and libc ${Object.keys(LIBCS)}`);
    process.exit(1);
  }
  return { name: m.name, platform, arch, triple: `${CPUS[arch].machine}-linux-${LIBCS[libc]}`, machine: CPUS[arch].elf };
}

const here = __dirname;
const prefix = join(process.execPath, '..', '..');
const bundled = join(prefix, 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
const gyp = process.env.npm_config_node_gyp || bundled;
const nodedir = process.env.npm_config_nodedir || (existsSync(join(prefix, 'include', 'node', 'node_api.h')) ? prefix : null);

const onPath = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;

/** The compilers for `target`: the triple's own, or on its own architecture the plain cc and c++. */
function compilers(target) {
  if (onPath(`${target.triple}-gcc`) && onPath(`${target.triple}-g++`)) return { cc: `${target.triple}-gcc`, cxx: `${target.triple}-g++`, strip: `${target.triple}-strip` };
  if (target.arch === hostArch() && process.platform === target.platform && onPath('cc') && onPath('c++')) return { cc: 'cc', cxx: 'c++', strip: 'strip' };
  return null;
}

/** The highest GLIBC_x.y symbol version the binary needs (the oldest glibc it loads on). */
function glibcNeeded(file, triple) {
  const tool = onPath(`${triple}-objdump`) ? `${triple}-objdump` : 'objdump';
  const out = spawnSync(tool, ['-T', file], { encoding: 'utf8' }).stdout || '';
  const versions = [...out.matchAll(/GLIBC_(\d+)\.(\d+)/g)].map((m) => [Number(m[1]), Number(m[2])]);
  versions.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  return versions.length ? versions[versions.length - 1].join('.') : 'unknown';
}

const out = process.argv[2] ?? process.cwd();
const target = targetOf(out);
const name = `${target.platform}-${target.arch}`;
const tools = compilers(target);
if (!tools) {
  console.error(`@npyts/native prebuild: ${target.name}: no ${target.triple}-gcc and ${target.triple}-g++ on PATH (Debian: apt-get install gcc-${target.triple} g++-${target.triple}); not packed`);
  process.exit(1);
}
// What the binary is built from: the sources and this script, the target, the compiler and the
// libdeflate it would link, the Node headers. A binary built from exactly these (its digest beside it,
// not packed) is packed as it is: the tests pack every package on each run, and the two compiles were
// most of that time. Anything changed, and it is built again.
function inputsDigest() {
  const hash = createHash('sha256');
  for (const f of ['binding.gyp', 'libdeflate.cjs', 'prebuild.cjs', ...readdirSync(join(here, 'src')).sort().map((f) => join('src', f))]) {
    hash.update(`${f}\0`).update(readFileSync(join(here, f))).update('\0');
  }
  const ask = (cmd, args) => spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, CC: tools.cc } }).stdout ?? '';
  const libdeflate = [ask(process.execPath, [join(here, 'libdeflate.cjs')]), ask(process.execPath, [join(here, 'libdeflate.cjs'), 'found'])];
  hash.update(JSON.stringify([target, tools, ask(tools.cc, ['--version']), ask(tools.cxx, ['--version']), libdeflate, nodedir, process.version]));
  return hash.digest('hex');
}
const digest = inputsDigest();
const stamp = join(out, '.npyts_native.sha256');
if (existsSync(join(out, 'npyts_native.node')) && existsSync(stamp) && readFileSync(stamp, 'utf8') === digest) {
  console.error(`@npyts/native prebuild: ${target.name} is built from these sources already`);
  process.exit(0);
}
rmSync(stamp, { force: true });
// A copy of the sources, so that the prebuild never disturbs build/ (this checkout's own build).
const work = mkdtempSync(join(tmpdir(), 'npyts-prebuild-'));
try {
  for (const f of ['binding.gyp', 'libdeflate.cjs']) copyFileSync(join(here, f), join(work, f));
  cpSync(join(here, 'src'), join(work, 'src'), { recursive: true });
  const args = [gyp, 'rebuild', `--arch=${target.arch}`, ...(nodedir ? [`--nodedir=${nodedir}`] : [])];
  const env = { ...process.env, CC: tools.cc, CXX: tools.cxx, LINK: tools.cxx };
  const run = spawnSync(process.execPath, args, { cwd: work, env, encoding: 'utf8' });
  const built = join(work, 'build', 'Release', 'npyts_native.node');
  if (run.status !== 0 || !existsSync(built)) {
    console.error(`@npyts/native prebuild: ${name} failed:\n${(run.stderr || run.stdout || '').trim().split('\n').slice(-8).join('\n')}`);
    process.exit(1);
  }
  spawnSync(tools.strip, ['--strip-unneeded', built], { stdio: 'inherit' });
  const machine = readFileSync(built).readUInt16LE(18);
  if (machine !== target.machine) {
    console.error(`@npyts/native prebuild: ${name} came out for ELF machine ${machine}, not ${target.machine}`);
    process.exit(1);
  }
  // Copied beside, then renamed over: two packs at once (the tests make several) never see half a file.
  const partial = join(out, `.npyts_native.node.${process.pid}`);
  copyFileSync(built, partial);
  renameSync(partial, join(out, 'npyts_native.node'));
  writeFileSync(stamp, digest);
  console.error(`@npyts/native prebuild: ${target.name} (glibc ${glibcNeeded(built, target.triple)} or newer) with ${tools.cc}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
