// Build the prebuilt binaries that ship inside the package (run by `npm pack` through prepack):
// prebuilds/<platform>-<arch>/node.napi.glibc.node, the layout node-gyp-build looks up at load time.
// The addon uses N-API only (the V8 functions of external_buffer.cc are checked for at run time), so
// one binary serves every Node from 20 on. linux-x64 is built with this machine's compiler and
// linux-arm64 with Debian's cross compiler (gcc-aarch64-linux-gnu, g++-aarch64-linux-gnu, and
// libdeflate-dev:arm64 for its static libdeflate). A target whose compiler is missing is skipped
// with a warning, unless NPYTS_PREBUILD_REQUIRE=1, when it fails. It reports on stderr, as `npm pack --json`
// keeps stdout for its own answer.
'use strict';
const { spawnSync } = require('node:child_process');
const { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } = require('node:fs');
const { arch: hostArch, tmpdir } = require('node:os');
const { join } = require('node:path');

/** What each prebuild is built with: its GNU triple names the compiler and strip; `machine` is its ELF e_machine. */
const TARGETS = [
  { platform: 'linux', arch: 'x64', triple: 'x86_64-linux-gnu', machine: 62 },
  { platform: 'linux', arch: 'arm64', triple: 'aarch64-linux-gnu', machine: 183 },
];

const here = __dirname;
const prefix = join(process.execPath, '..', '..');
const bundled = join(prefix, 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
const gyp = process.env.npm_config_node_gyp || bundled;
const nodedir = process.env.npm_config_nodedir || (existsSync(join(prefix, 'include', 'node', 'node_api.h')) ? prefix : null);
const require_ = process.env.NPYTS_PREBUILD_REQUIRE === '1';

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

let failed = 0;
for (const target of TARGETS) {
  const name = `${target.platform}-${target.arch}`;
  const tools = compilers(target);
  if (!tools) {
    const why = `${name}: skipped, no ${target.triple}-gcc and ${target.triple}-g++ on PATH`;
    if (require_) {
      console.error(`@npyts/native prebuild: ${why}`);
      failed++;
    } else console.warn(`@npyts/native prebuild: ${why} (the package then builds from source there, where it can)`);
    continue;
  }
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
      failed++;
      continue;
    }
    spawnSync(tools.strip, ['--strip-unneeded', built], { stdio: 'inherit' });
    const machine = readFileSync(built).readUInt16LE(18);
    if (machine !== target.machine) {
      console.error(`@npyts/native prebuild: ${name} came out for ELF machine ${machine}, not ${target.machine}`);
      failed++;
      continue;
    }
    // Copied beside, then renamed over: two packs at once (the tests make several) never see half a file.
    const dir = join(here, 'prebuilds', name);
    mkdirSync(dir, { recursive: true });
    const partial = join(dir, `.node.napi.glibc.node.${process.pid}`);
    copyFileSync(built, partial);
    renameSync(partial, join(dir, 'node.napi.glibc.node'));
    console.error(`@npyts/native prebuild: ${name} (glibc ${glibcNeeded(built, target.triple)} or newer) with ${tools.cc}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
process.exit(failed ? 1 : 0);
