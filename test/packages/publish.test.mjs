// The packages as users get them: `npm pack` tarballs checked by publint and arethetypeswrong (and
// core by `deno publish --dry-run`, for JSR), then installed offline into a fresh project with no
// compiler on PATH (the addon's platform package brings its prebuilt binary there) and used from
// ESM, from CommonJS, from the CLI, and from TypeScript under node16, bundler and node10 resolution;
// and `npm install` of the core tarball alone from a registry on 127.0.0.1, as users will install it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';
import { packAll, serveRegistry, writeFreshProject } from './fresh-project.mjs';
import { memoryScratch, python } from '../helpers/numpy.mjs';
import { installRuntimes } from '../runtimes/install.mjs';
import { installOnce } from '../helpers/install-once.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
// The fresh project's node_modules is 55 000 files (most of them @stdlib's): in memory where it can be.
const work = memoryScratch('npyts-publish-', 2 ** 31);
const tarballs = packAll(root, join(work, 'tarballs'));
const bin = (name) => join(root, 'node_modules', '.bin', name);
/** The platform package this machine installs and loads (its tarball is packed here, as every one is). */
const PLATFORM = `@npyts/native-${process.platform}-${process.arch}-gnu`;
/** The addon's platform packages: packages/native-<platform>-<arch>-<libc>. */
const platforms = Object.keys(tarballs).filter((name) => name.startsWith('@npyts/native-'));

/** `cmd args` run without blocking this process (a registry in it answers meanwhile): its status and output. */
function run(cmd, args, options) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, options);
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
    });
    child.stderr.on('data', (c) => {
      out += c;
    });
    child.on('error', (e) => {
      out += String(e);
    });
    child.on('close', (status) => resolve({ status, out }));
  });
}

// JSR: core's jsr.json publishes its TypeScript sources. Started now, it type-checks them while the
// installs below run; offline (the proxies go nowhere), fflate from this repository's node_modules.
const deno = join(installRuntimes(), 'node_modules', '@deno', 'linux-x64-glibc', 'deno');
const jsr = run(deno, ['publish', '--dry-run', '--allow-dirty'], {
  cwd: join(root, 'packages', 'core'),
  // Without FORCE_COLOR: the test runner sets it to 0, which Deno reads as "force colours", over NO_COLOR.
  env: {
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'FORCE_COLOR')),
    NO_COLOR: '1',
    DENO_DIR: join(work, 'deno'),
    HTTP_PROXY: 'http://127.0.0.1:9',
    HTTPS_PROXY: 'http://127.0.0.1:9',
  },
});

test('each tarball ships its README, LICENSE and built files, and no sources, maps or tests', () => {
  for (const [name, t] of Object.entries(tarballs)) {
    assert.ok(t.files.includes('README.md') && t.files.includes('LICENSE') && t.files.includes('package.json'), `${name}: ${t.files}`);
    const odd = t.files.filter(
      (f) => f.endsWith('.map') || (f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.endsWith('.d.cts')) || f.startsWith('test') || f.includes('/build/'),
    );
    assert.equal(odd, [], name);
    const m = t.manifest;
    assert.ok(m.repository && m.homepage && m.keywords?.length && m.license === 'MIT' && m.engines?.node, `${name}: package metadata`);
  }
  // @npyts/native is the opt-in build from source: what it builds from, and no binary.
  const native = tarballs['@npyts/native'].files;
  assert.ok(
    ['binding.gyp', 'src/npyts_native.c', 'build-or-skip.cjs', 'libdeflate.cjs'].every((f) => native.includes(f)),
    `${native}`,
  );
  assert.equal(
    native.filter((f) => f.endsWith('.node')),
    [],
  );
  // The prebuilt binaries come one platform package each (linux x64 and arm64, glibc), each holding
  // its binary alone, with os, cpu and libc so that package managers install the one that fits, and
  // no install script; @npyts/core names every one as an optional dependency, so it brings the
  // binary itself. The addon from source stays an optional peer, installed only when asked for.
  assert.equal(platforms.sort(), ['@npyts/native-linux-arm64-gnu', '@npyts/native-linux-x64-gnu']);
  const core = tarballs['@npyts/core'].manifest;
  assert.equal(core.optionalDependencies, Object.fromEntries(platforms.map((name) => [name, core.version])));
  for (const name of platforms) {
    const m = tarballs[name].manifest;
    assert.equal(tarballs[name].files.sort(), ['LICENSE', 'README.md', 'npyts_native.node', 'package.json'], name);
    assert.equal([m.os, m.cpu, m.libc, m.main], [['linux'], [name.split('-')[2]], ['glibc'], 'npyts_native.node'], name);
    assert.equal(
      Object.keys(m.scripts ?? {}).filter((s) => /install/.test(s)),
      [],
      name,
    );
  }
  assert.is(core.peerDependenciesMeta['@npyts/native'].optional, true);
  assert.is(core.optionalDependencies['@npyts/native'], undefined);
});

test('publint finds nothing to report in any package (the platform packages too), not even a suggestion', async () => {
  assert.ok(Object.keys(tarballs).length >= 8, Object.keys(tarballs).join(' '));
  for (const [name, t] of Object.entries(tarballs)) {
    // The tarball as packed (no second pack, which would build the platform binaries again).
    const bytes = readFileSync(t.file);
    const { messages, pkg } = await publint({ level: 'suggestion', pack: { tarball: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) } });
    assert.equal(
      messages.map((m) => formatMessage(m, pkg)),
      [],
      name,
    );
  }
});

test('arethetypeswrong: every entry of every typed package resolves to the right types under node10, node16 (ESM and CJS) and bundler', () => {
  for (const name of ['@npyts/core', '@npyts/tfjs', '@npyts/stdlib', '@npyts/onnxruntime']) {
    const r = spawnSync(bin('attw'), [tarballs[name].file, '--format', 'json'], { encoding: 'utf8' });
    const report = JSON.parse(r.stdout);
    assert.equal(report.analysis.problems ?? [], [], `${name}: ${r.stdout.slice(0, 2000)}`);
    assert.is(r.status, 0, name);
    const entries = Object.keys(report.analysis.entrypoints);
    assert.ok(entries.length >= (name === '@npyts/core' ? 3 : 1), `${name}: ${entries}`);
  }
});

const project = join(work, 'project');
mkdirSync(project);
const extra = ['@tensorflow/tfjs-backend-cpu', '@tensorflow/tfjs-layers', '@stdlib/ndarray', 'onnxruntime-common', 'typescript', '@types/node'];
// Every package but @npyts/native (the opt-in build from source): the platform packages come as core's optional dependencies.
const { '@npyts/native': _fromSource, ...installed } = tarballs;
writeFreshProject(root, project, installed, extra);
// The install sees a PATH with node and sh alone (npm runs install scripts with sh): no cc, c++,
// make or python, as on a machine without a compiler. npm runs from its own script, beside this node.
const nodeOnly = join(work, 'node-only');
mkdirSync(nodeOnly);
symlinkSync(process.execPath, join(nodeOnly, 'node'));
symlinkSync('/bin/sh', join(nodeOnly, 'sh'));
const npmCli = join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js');
const install = spawnSync(process.execPath, [npmCli, 'ci', '--offline', '--no-audit', '--no-fund', '--foreground-scripts'], {
  cwd: project,
  encoding: 'utf8',
  env: { ...process.env, PATH: nodeOnly },
});

test('the tarballs install offline into a fresh project with no compiler, and the addon is in use from its platform package, with no install script', () => {
  assert.is(install.status, 0, install.stdout + install.stderr);
  assert.not.match(install.stdout + install.stderr, /allowScripts|install script|EBADPLATFORM/i);
  const status = execFileSync(process.execPath, ['-e', "console.log(JSON.stringify(require('@npyts/core/node').nativeStatus()))"], {
    cwd: project,
    encoding: 'utf8',
  });
  const s = JSON.parse(status);
  assert.is(s.loaded, true, status);
  assert.is(s.binary, `${PLATFORM}/npyts_native.node`, status);
  // The prebuild links libdeflate where its header was there when it was built (here, by npm pack).
  assert.is(s.libdeflate, existsSync('/usr/include/libdeflate.h'), status);
  const modules = join(project, 'node_modules', '@npyts');
  assert.equal(
    readdirSync(modules).filter((d) => d.startsWith('native')),
    [PLATFORM.slice('@npyts/'.length)],
    'only the platform package that fits is installed, and nothing is compiled',
  );
  // The linux-arm64 package (cross-compiled by its npm pack with Debian's cross compiler, as .ci/run
  // installs it) holds an aarch64 binary that needs from Node just what the x64 one needs (N-API,
  // and the V8 functions it asks for by name).
  if (spawnSync('sh', ['-c', 'command -v aarch64-linux-gnu-objdump']).status === 0) {
    const dir = join(work, 'arm64');
    mkdirSync(dir);
    execFileSync('tar', ['-xzf', tarballs['@npyts/native-linux-arm64-gnu'].file, '-C', dir]);
    const arm = join(dir, 'package', 'npyts_native.node');
    assert.is(readFileSync(arm).readUInt16LE(18), 183, 'ELF machine AArch64');
    const needs = (tool, file) =>
      execFileSync(tool, ['-T', file], { encoding: 'utf8' })
        .split('\n')
        .filter((l) => l.includes('*UND*'))
        .map((l) => l.trim().split(/\s+/).pop())
        .filter((name) => name.startsWith('napi_') || name.startsWith('_ZN2v8'))
        .sort();
    const x64 = needs('objdump', join(modules, 'native-linux-x64-gnu', 'npyts_native.node'));
    assert.ok(x64.includes('napi_create_external_arraybuffer'), `${x64}`);
    assert.equal(needs('aarch64-linux-gnu-objdump', arm), x64);
  }
  // The CLI says so too.
  const version = execFileSync(join(project, 'node_modules', '.bin', 'npyts'), ['--version'], { cwd: project, encoding: 'utf8' });
  assert.match(version, new RegExp(`in use, prebuilt for ${PLATFORM.slice('@npyts/native-'.length)}\\)`));
});

// `npm install` (pnpm add, bun add) of the core tarball alone into a fresh project, every name
// resolved by a registry on 127.0.0.1 that serves the tarballs (nothing by this machine's caches or
// the internet: each manager has a cache of its own here). pnpm is installed once into a cache, as
// the runtimes are; bun is one of the runtimes.
const runtimes = join(installRuntimes(), 'node_modules');
const PNPM = '10.34.8';
const pnpmDir = installOnce(
  join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'npyts-pnpm', PNPM),
  (d) => existsSync(join(d, 'node_modules', 'pnpm', 'bin', 'pnpm.cjs')),
  (partial) =>
    execFileSync(process.execPath, [npmCli, 'install', '--prefix', partial, '--no-save', '--no-audit', '--no-fund', `pnpm@${PNPM}`], { stdio: 'ignore' }),
);
const MANAGERS = {
  npm: (url, dir) => [
    process.execPath,
    [npmCli, 'install', tarballs['@npyts/core'].file, `--registry=${url}`, `--cache=${join(dir, '..', 'npm-cache')}`, '--no-audit', '--no-fund'],
  ],
  pnpm: (url, dir) => [
    process.execPath,
    [
      join(pnpmDir, 'node_modules', 'pnpm', 'bin', 'pnpm.cjs'),
      'add',
      tarballs['@npyts/core'].file,
      `--registry=${url}`,
      `--store-dir=${join(dir, '..', 'pnpm-store')}`,
      `--cache-dir=${join(dir, '..', 'pnpm-cache')}`,
    ],
  ],
  bun: (url) => [join(runtimes, '@oven', 'bun-linux-x64', 'bin', 'bun'), ['add', tarballs['@npyts/core'].file, `--registry=${url}`]],
};
let registryRuns = null;
function registryInstalls() {
  registryRuns ??= (async () => {
    const registry = await serveRegistry(root, tarballs);
    const runs = await Promise.all(
      Object.entries(MANAGERS).map(async ([manager, command]) => {
        const dir = join(work, `registry-${manager}`, 'project');
        mkdirSync(dir, { recursive: true });
        writeFileSync(join(dir, 'package.json'), '{ "name": "fresh-registry", "private": true }');
        const [cmd, args] = command(registry.url, dir);
        const env = { ...process.env, PATH: `${nodeOnly}`, BUN_INSTALL_CACHE_DIR: join(dir, '..', 'bun-cache'), NO_COLOR: '1', CI: '1' };
        const r = await run(cmd, args, { cwd: dir, env });
        return [manager, { ...r, dir }];
      }),
    );
    await registry.close();
    return { requests: registry.requests, runs: Object.fromEntries(runs) };
  })();
  return registryRuns;
}

for (const manager of Object.keys(MANAGERS)) {
  test(`${manager} installs the core tarball alone from a registry: it brings the platform package that fits, the addon is in use, and no install script is there to warn of`, async () => {
    const { requests, runs } = await registryInstalls();
    const r = runs[manager];
    assert.is(r.status, 0, r.out);
    // npm 11: "install scripts not yet covered by allowScripts"; pnpm: "Ignored build scripts … approve-builds"; bun: "Blocked 1 postinstall … untrusted".
    assert.not.match(r.out, /allowScripts|install script|build script|approve|blocked|untrusted/i, r.out);
    // Each platform package was asked for by name; only the one that fits was fetched.
    for (const name of platforms) assert.ok(requests.includes(name), `${name}: ${requests}`);
    assert.equal([...new Set(requests.filter((p) => p.includes('/-/native-')))], [`${PLATFORM}/-/${PLATFORM.slice('@npyts/'.length)}-0.1.0.tgz`]);
    const said = execFileSync(process.execPath, ['-e', "console.log(JSON.stringify(require('@npyts/core/node').nativeStatus()))"], {
      cwd: r.dir,
      encoding: 'utf8',
    });
    const s = JSON.parse(said);
    assert.equal([s.loaded, s.binary, s.reason], [true, `${PLATFORM}/npyts_native.node`, undefined], said);
  });
}

test("core's jsr.json passes `deno publish --dry-run` (JSR's type check, explicit types in the public API, the files it would publish)", async () => {
  const r = await jsr;
  assert.is(r.status, 0, r.out.slice(-4000));
  assert.match(r.out, /Success Dry run complete/);
  assert.match(r.out, /src\/node\/native\.ts/);
});

const esm = `
import { encodeNpy, decodeNpy, arrayFromValues } from '@npyts/core';
import { saveNpy, loadNpy, nativeStatus } from '@npyts/core/node';
import { pickle } from '@npyts/core/pickle';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import * as tfl from '@tensorflow/tfjs-layers';
import { toTensor, npzHandler } from '@npyts/tfjs';
import { toStdlib } from '@npyts/stdlib';
const a = arrayFromValues([[1, 2, 3], [4, 5, 6]], '<f4');
await saveNpy(process.argv[2], a);
const back = await loadNpy(process.argv[2], { expect: '<f4' });
const model = tfl.sequential({ layers: [tfl.layers.dense({ units: 1, inputShape: [3], name: 'd' })] });
await model.save(npzHandler(process.argv[3]));
console.log(JSON.stringify({
  values: Array.from(decodeNpy(encodeNpy(back)).data), pickled: pickle(['x']).length > 0,
  tensor: Array.from(await toTensor(back).data()), stdlib: toStdlib(back).get(1, 2), native: nativeStatus().loaded,
  weights: (await tfl.loadLayersModel(npzHandler(process.argv[3]))).weights.map((w) => w.originalName),
}));
`;
const cjs = `
const { decodeNpy, encodeNpy, encodeNpz, arrayFromValues, NpyError } = require('@npyts/core');
const { loadNpySync } = require('@npyts/core/node');
const { unpickle } = require('@npyts/core/pickle');
const { toTensor, npzHandler, assignWeights } = require('@npyts/tfjs');
const { toStdlib } = require('@npyts/stdlib');
require('@tensorflow/tfjs-backend-cpu');
const tfl = require('@tensorflow/tfjs-layers');
(async () => {
  const a = loadNpySync(process.argv[2]);
  // A model saved and loaded through npzHandler: the CommonJS adapter must meet core's CommonJS build only.
  const model = tfl.sequential({ layers: [tfl.layers.dense({ units: 1, inputShape: [3], name: 'c' })] });
  await model.save(npzHandler(process.argv[3]));
  const loaded = await tfl.loadLayersModel(npzHandler(process.argv[3]));
  // The adapter's errors are core's NpyError class: one copy of every class in a CommonJS program.
  const refused = await assignWeights(model, encodeNpz({ 'fc.weight': arrayFromValues([[1, 2, 3]], '<f4') }), { layout: 'pytorch' }).then(() => null, (e) => e);
  console.log(JSON.stringify({ values: Array.from(decodeNpy(encodeNpy(a)).data), tfjs: typeof toTensor, stdlib: toStdlib(a).get(0, 0), pickle: typeof unpickle, weights: loaded.weights.map((w) => w.originalName), npyError: refused instanceof NpyError && refused.code }));
})();
`;

test('ESM and CommonJS programs use every entry; numpy reads what they write; the CLI runs', () => {
  const npy = join(project, 'a.npy');
  const npz = join(project, 'model.npz');
  writeFileSync(join(project, 'check.mjs'), esm);
  writeFileSync(join(project, 'check.cjs'), cjs);
  const e = JSON.parse(execFileSync(process.execPath, ['check.mjs', npy, npz], { cwd: project, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  assert.equal(e, { values: [1, 2, 3, 4, 5, 6], pickled: true, tensor: [1, 2, 3, 4, 5, 6], stdlib: 6, native: true, weights: ['d/kernel', 'd/bias'] });
  assert.is(
    python(`print(np.load(${JSON.stringify(npy)}).sum(), sorted(np.load(${JSON.stringify(npz)}).files))`).trim(),
    "21.0 ['d/bias', 'd/kernel', 'model.json']",
  );
  const c = JSON.parse(
    execFileSync(process.execPath, ['check.cjs', npy, join(project, 'cjs-model.npz')], { cwd: project, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }),
  );
  assert.equal(c, {
    values: [1, 2, 3, 4, 5, 6],
    tfjs: 'function',
    stdlib: 1,
    pickle: 'function',
    weights: ['c/kernel', 'c/bias'],
    npyError: 'WEIGHT_MISMATCH',
  });
  const info = execFileSync(join(project, 'node_modules', '.bin', 'npyts'), ['info', npy], { cwd: project, encoding: 'utf8' });
  assert.match(info, /<f4/);
});

const typed = {
  'esm.mts': `
import { arrayFromValues, type NdArray } from '@npyts/core';
import { loadNpy } from '@npyts/core/node';
import { unpickle } from '@npyts/core/pickle';
import { npzHandler, assignWeights } from '@npyts/tfjs';
import { toStdlib } from '@npyts/stdlib';
import { toOrtTensor, withWeights } from '@npyts/onnxruntime';
import * as tfl from '@tensorflow/tfjs-layers';
const a: NdArray<'<f4'> = arrayFromValues([1, 2], '<f4');
export const dims: readonly number[] = toOrtTensor(a).dims;
export const swapped: Promise<Uint8Array> = withWeights(new Uint8Array(0), 'w.safetensors').then((r) => r.model);
const f: Float32Array = a.data;
export async function run(): Promise<void> {
  const b = await loadNpy('x.npy', { expect: '<i8' });
  const big: BigInt64Array = b.data;
  await assignWeights(tfl.sequential(), 'w.npz');
  await tfl.loadLayersModel(npzHandler('m.npz'));
  void [f, big, unpickle, toStdlib];
}
`,
  'cjs.cts': `
import { arrayFromValues } from '@npyts/core';
import { loadNpySync } from '@npyts/core/node';
import { pickleCodec } from '@npyts/core/pickle';
import { toTensor } from '@npyts/tfjs';
import { toStdlib } from '@npyts/stdlib';
import { fromOrtTensor } from '@npyts/onnxruntime';
const data: Float64Array = arrayFromValues([1], '<f8').data;
export const used = [data, loadNpySync, pickleCodec, toTensor, toStdlib, fromOrtTensor];
`,
  'bundler.ts': `
import { arrayFromValues } from '@npyts/core';
import { openNpz } from '@npyts/core/node';
import { toTensor } from '@npyts/tfjs';
export const t = toTensor(arrayFromValues([1], '<f4'));
export const o = openNpz;
`,
  'node10.ts': `
import { arrayFromValues } from '@npyts/core';
import { loadNpySync } from '@npyts/core/node';
import { unpickle } from '@npyts/core/pickle';
import { toStdlib } from '@npyts/stdlib';
const data: Int32Array = arrayFromValues([1], '<i4').data;
export const used = [data, loadNpySync, unpickle, toStdlib];
`,
};

test('TypeScript in the fresh project: node16 (.mts and .cts), bundler and node10 resolution, strict, our declaration files checked', () => {
  for (const [file, text] of Object.entries(typed)) writeFileSync(join(project, file), text);
  const base = { strict: true, noEmit: true, skipLibCheck: false, target: 'ES2022', lib: ['ES2022', 'DOM', 'ESNext.Disposable'], types: ['node'] };
  const configs = {
    node16: { compilerOptions: { ...base, module: 'node16', moduleResolution: 'node16' }, files: ['esm.mts', 'cjs.cts'] },
    bundler: { compilerOptions: { ...base, module: 'esnext', moduleResolution: 'bundler' }, files: ['bundler.ts'] },
    node10: { compilerOptions: { ...base, module: 'commonjs', moduleResolution: 'node10' }, files: ['node10.ts'] },
  };
  for (const [name, config] of Object.entries(configs)) {
    writeFileSync(join(project, `tsconfig.${name}.json`), JSON.stringify(config));
    const r = spawnSync(process.execPath, [join(project, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', `tsconfig.${name}.json`], {
      cwd: project,
      encoding: 'utf8',
    });
    // skipLibCheck is off so that our .d.ts/.d.cts files are checked too; tfjs's and stdlib's own
    // declarations have errors of their own under strict, which are not ours to report.
    const errors = (r.stdout + r.stderr).split('\n').filter((l) => /error TS/.test(l) && !/^node_modules\/(@tensorflow|@stdlib)\//.test(l));
    assert.equal(errors, [], name);
    assert.ok(r.status === 0 || /node_modules\/(@tensorflow|@stdlib)\//.test(r.stdout), `${name}: ${r.stdout}`);
  }
});

test.run();
