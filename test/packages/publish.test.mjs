// The packages as users get them: `npm pack` tarballs checked by publint and arethetypeswrong (and
// core by `deno publish --dry-run`, for JSR), then installed offline into a fresh project with no
// compiler on PATH (the addon's platform package brings its prebuilt binary there) and used from
// ESM, from CommonJS, from the CLI, and from TypeScript under node16, bundler and node10 resolution;
// and `npm install` of the core tarball alone from a registry on 127.0.0.1, as users will install it
// (with npm, pnpm, yarn and bun).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkPackage, createPackageFromTarballData } from '@arethetypeswrong/core';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';
import { packAll, serveRegistry, writeFreshProject } from './fresh-project.mjs';
import { memoryScratch, python } from '../helpers/numpy.mjs';
import { installRuntimes } from '../runtimes/install.mjs';
import { installOnce } from '../helpers/install-once.mjs';
import { transformSync } from 'esbuild';
import { blocksOf } from './guide-blocks.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
// The fresh project's node_modules is 55 000 files (most of them @stdlib's): in memory where it can be.
const work = memoryScratch('npyts-publish-', 2 ** 31);
const tarballs = await packAll(root, join(work, 'tarballs'));
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

test('arethetypeswrong: every entry of every typed package resolves to the right types under node10, node16 (ESM and CJS) and bundler', async () => {
  // attw's own checks (the CLI's), in this process: one TypeScript for the four packages.
  for (const name of ['@npyts/core', '@npyts/tfjs', '@npyts/stdlib', '@npyts/onnxruntime']) {
    const analysis = await checkPackage(createPackageFromTarballData(new Uint8Array(readFileSync(tarballs[name].file))));
    assert.ok(analysis.types, `${name}: no types found`);
    assert.equal(analysis.problems, [], `${name}: ${JSON.stringify(analysis.problems).slice(0, 2000)}`);
    const entries = Object.keys(analysis.entrypoints);
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
// Started now, without blocking: publint's and attw's checks run meanwhile.
const install = run(process.execPath, [npmCli, 'ci', '--offline', '--no-audit', '--no-fund', '--foreground-scripts'], {
  cwd: project,
  env: { ...process.env, PATH: nodeOnly },
});

// Four new users, each from the docs and the installed tarballs (the fresh project above): a Keras 3
// user loads a transformer block (MultiHeadAttention, a residual from an inner layer) with one
// kerasHandler call; an ONNX Runtime user swaps fine-tuned PyTorch weights into a TorchScript export
// (docs/onnxruntime.md's code); a llama.cpp user lists a GGUF's metadata and tensors, dequantizes one
// and prints it with `npyts info` (docs/gguf.md's code); a Hugging Face user maps a `.safetensors`
// and feeds its tensors to ONNX Runtime (docs/larger-than-memory.md's code). The Python side writes
// every file with the real writers (Keras with KERAS_BACKEND=torch, torch.onnx, gguf-py,
// safetensors) in one process, started now beside the install. onnxruntime-node (not ours, 290 MB)
// is linked from this repository's node_modules instead of installed again: ORT takes tensors from
// any copy of onnxruntime-common (docs/onnxruntime.md).
const personas = join(project, 'personas');
/** The block of a guide in `lang` whose code holds `text`: its code and the output the guide shows. */
function docBlock(path, lang, text) {
  const found = blocksOf(path).filter((b) => b.lang === lang && b.code.includes(text));
  assert.is(found.length, 1, `${path}: ${lang} blocks holding ${text}`);
  return found[0];
}
const PERSONA_PYTHON = {
  keras: `
import os
os.environ['KERAS_BACKEND'] = 'torch'
import keras, numpy as np
from keras import layers as L
keras.utils.set_random_seed(0)
inp = keras.Input((5, 6))
d = L.Dense(8)(inp)
h = L.LayerNormalization()(L.Add()([d, L.MultiHeadAttention(num_heads=2, key_dim=4)(d, d)]))
out = L.LayerNormalization()(L.Add()([h, L.Dense(8)(L.Dense(16, activation='relu')(h))]))
model = keras.Model(inp, out)
x = np.random.default_rng(0).standard_normal((2, 5, 6)).astype('float32')
model.save('block.keras')
np.save('x.npy', x)
np.save('y.npy', np.asarray(model.predict(x, verbose=0), dtype='float32'))
`,
  ort: docBlock('docs/onnxruntime.md', 'python', "torch.onnx.export(model, (x,), 'cnn.onnx'").code,
  gguf: `${docBlock('docs/gguf.md', 'python', 'GGUFWriter').code}
r = gguf.GGUFReader('model.gguf')
t = next(t for t in r.tensors if t.name == 'blk.0.attn_q.weight')
np.save('q.npy', gguf.quants.dequantize(t.data, t.tensor_type).reshape(2, 32))
`,
  hf: `${docBlock('docs/larger-than-memory.md', 'python', 'model.safetensors').code}
import torch
from safetensors.torch import load_file
class Linear(torch.nn.Module):
    def forward(self, x, w, b):
        return torch.nn.functional.linear(x, w, b)
sd = load_file('model.safetensors')
x = torch.randn(2, 4, generator=torch.Generator().manual_seed(0))
torch.onnx.export(Linear(), (x, sd['fc.weight'], sd['fc.bias']), 'linear.onnx', input_names=['x', 'w', 'b'], output_names=['y'], dynamo=False)
np.save('x.npy', x.numpy())
np.save('y.npy', Linear()(x, sd['fc.weight'], sd['fc.bias']).numpy())
`,
};
mkdirSync(personas);
const personaDriver = `
import os, sys, json
for name, code in json.load(open(sys.argv[1])).items():
    os.makedirs(name, exist_ok=True)
    os.chdir(name)
    exec(compile(code, name, 'exec'), {'__name__': '__main__'})
    os.chdir('..')
`;
writeFileSync(join(personas, 'make.json'), JSON.stringify(PERSONA_PYTHON));
const personaFiles = run('python3', ['-W', 'ignore', '-c', personaDriver, 'make.json'], { cwd: personas, env: { ...process.env, KERAS_BACKEND: 'torch' } });

test('the tarballs install offline into a fresh project with no compiler, and the addon is in use from its platform package, with no install script', async () => {
  const ci = await install;
  assert.is(ci.status, 0, ci.out);
  assert.not.match(ci.out, /allowScripts|install script|EBADPLATFORM/i);
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

// `npm install` (pnpm add, yarn add, bun add) of the core tarball alone into a fresh project, every
// name resolved by a registry on 127.0.0.1 that serves the tarballs (nothing by this machine's caches
// or the internet: each manager has a cache of its own here). pnpm and yarn are installed once into a
// cache, as the runtimes are; bun is one of the runtimes. yarn links node_modules (nodeLinker): with
// its default Plug'n'Play the addon loads too (through `yarn node`), but yarn warns of its
// experimental ESM loader (YN0092) for any package written as ES modules.
const runtimes = join(installRuntimes(), 'node_modules');
const PNPM = '10.34.8';
const pnpmDir = installOnce(
  join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'npyts-pnpm', PNPM),
  (d) => existsSync(join(d, 'node_modules', 'pnpm', 'bin', 'pnpm.cjs')),
  (partial) =>
    execFileSync(process.execPath, [npmCli, 'install', '--prefix', partial, '--no-save', '--no-audit', '--no-fund', `pnpm@${PNPM}`], { stdio: 'ignore' }),
);
const YARN = '4.18.1';
const yarnDir = installOnce(
  join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'npyts-yarn', YARN),
  (d) => existsSync(join(d, 'node_modules', '@yarnpkg', 'cli-dist', 'bin', 'yarn.js')),
  (partial) =>
    execFileSync(process.execPath, [npmCli, 'install', '--prefix', partial, '--no-save', '--no-audit', '--no-fund', `@yarnpkg/cli-dist@${YARN}`], {
      stdio: 'ignore',
    }),
);
/** Each manager's command, given the registry's URL and the project's folder (where it may write its settings first). */
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
  yarn: (url, dir) => {
    // yarn 4 reads its registry from .yarnrc.yml; plain http only for hosts it is told of.
    const settings = {
      npmRegistryServer: url,
      unsafeHttpWhitelist: ['127.0.0.1'],
      nodeLinker: 'node-modules',
      enableGlobalCache: false,
      cacheFolder: join(dir, '..', 'yarn-cache'),
      globalFolder: join(dir, '..', 'yarn-global'),
      enableTelemetry: false,
    };
    writeFileSync(
      join(dir, '.yarnrc.yml'),
      Object.entries(settings)
        .map(([k, v]) => `${k}: ${JSON.stringify(v)}\n`)
        .join(''),
    );
    return [
      process.execPath,
      [join(yarnDir, 'node_modules', '@yarnpkg', 'cli-dist', 'bin', 'yarn.js'), 'add', `@npyts/core@file:${tarballs['@npyts/core'].file}`],
    ];
  },
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
        // CI=1 as on a CI machine (yarn then refuses to change a lock: it is told it may, as a user adding a package).
        const env = {
          ...process.env,
          PATH: `${nodeOnly}`,
          BUN_INSTALL_CACHE_DIR: join(dir, '..', 'bun-cache'),
          NO_COLOR: '1',
          CI: '1',
          YARN_ENABLE_IMMUTABLE_INSTALLS: 'false',
        };
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
    // npm 11: "install scripts not yet covered by allowScripts"; pnpm: "Ignored build scripts … approve-builds";
    // yarn: "YN0004 … all build scripts have been disabled", "YN0007 … must be built"; bun: "Blocked 1 postinstall … untrusted".
    assert.not.match(r.out, /allowScripts|install script|build script|approve|blocked|untrusted|YN0004|YN0007|YN0008/i, r.out);
    if (manager === 'yarn') assert.match(r.out, /Done in/, 'yarn: no "Done with warnings"');
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

test("npm in this repository warns of no unknown setting: onnxruntime-node's download is denied by allowScripts, not .npmrc", () => {
  // This machine's npm, with no npm_config_* of a calling npm: only the repository's own settings.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
  const r = spawnSync(process.execPath, [npmCli, 'config', 'get', 'registry'], { cwd: root, encoding: 'utf8', env });
  assert.is(r.status, 0, r.stderr);
  assert.not.match(r.stderr, /warn|unknown/i, r.stderr);
  // npm 11 skips a script denied here without a word (docs/onnxruntime.md; npm 10 needs ONNXRUNTIME_NODE_INSTALL=skip).
  assert.is(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).allowScripts['onnxruntime-node'], false);
});

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

test('TypeScript in the fresh project: node16 (.mts and .cts), bundler and node10 resolution, strict, our declaration files checked', async () => {
  for (const [file, text] of Object.entries(typed)) writeFileSync(join(project, file), text);
  const base = { strict: true, noEmit: true, skipLibCheck: false, target: 'ES2022', lib: ['ES2022', 'DOM', 'ESNext.Disposable'], types: ['node'] };
  const configs = {
    node16: { compilerOptions: { ...base, module: 'node16', moduleResolution: 'node16' }, files: ['esm.mts', 'cjs.cts'] },
    bundler: { compilerOptions: { ...base, module: 'esnext', moduleResolution: 'bundler' }, files: ['bundler.ts'] },
    node10: { compilerOptions: { ...base, module: 'commonjs', moduleResolution: 'node10' }, files: ['node10.ts'] },
  };
  // The three compilers at once: each is one thread, and most of this file's time was theirs, one after another.
  const results = await Promise.all(
    Object.entries(configs).map(([name, config]) => {
      writeFileSync(join(project, `tsconfig.${name}.json`), JSON.stringify(config));
      return run(process.execPath, [join(project, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', `tsconfig.${name}.json`], { cwd: project });
    }),
  );
  for (const [i, name] of Object.keys(configs).entries()) {
    const r = results[i];
    // skipLibCheck is off so that our .d.ts/.d.cts files are checked too; tfjs's and stdlib's own
    // declarations have errors of their own under strict, which are not ours to report.
    const errors = r.out.split('\n').filter((l) => /error TS/.test(l) && !/^node_modules\/(@tensorflow|@stdlib)\//.test(l));
    assert.equal(errors, [], name);
    assert.ok(r.status === 0 || /node_modules\/(@tensorflow|@stdlib)\//.test(r.out), `${name}: ${r.out}`);
  }
});

/** Run a persona's script (TypeScript as the docs write it, its types stripped: an ES module) in its folder of the fresh project: its stdout. */
function asUser(name, file, code, args = []) {
  writeFileSync(join(personas, name, file), transformSync(code, { loader: 'ts', format: 'esm', target: 'node20' }).code);
  const r = spawnSync(process.execPath, [file, ...args], { cwd: join(personas, name), encoding: 'utf8' });
  assert.is(r.status, 0, `${name}/${file}: ${r.stderr}`);
  return r.stdout;
}

test('personas: the Python side writes every file with the real writers', async () => {
  const r = await personaFiles;
  assert.is(r.status, 0, r.out.slice(-3000));
  if (!existsSync(join(project, 'node_modules', 'onnxruntime-node')))
    symlinkSync(join(root, 'node_modules', 'onnxruntime-node'), join(project, 'node_modules', 'onnxruntime-node'));
});

test('persona, Keras 3: a transformer block (MultiHeadAttention, a residual from an inner layer) loads with one kerasHandler call and predicts what Keras predicts', () => {
  const out = asUser(
    'keras',
    'predict.mjs',
    `
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import * as tfl from '@tensorflow/tfjs-layers';
import { kerasHandler, toTensor } from '@npyts/tfjs';
import { loadNpy } from '@npyts/core/node';

const model = await tfl.loadLayersModel(kerasHandler('block.keras'));
const y = model.predict(toTensor(await loadNpy('x.npy'))) as tf.Tensor;
const want = await loadNpy('y.npy', { expect: '<f4' });
const got = y.dataSync();
let worst = 0;
for (let i = 0; i < got.length; i++) worst = Math.max(worst, Math.abs(got[i]! - want.data[i]!) / (2e-5 + 2e-5 * Math.abs(want.data[i]!)));
console.log(JSON.stringify({ shape: y.shape, want: want.shape, worst }));
`,
  );
  const r = JSON.parse(out);
  assert.equal(r.shape, r.want);
  assert.ok(r.worst <= 1, `off by ${r.worst}× |tfjs − keras| ≤ 2e-5 + 2e-5·|keras|`);
});

test("persona, ONNX Runtime: docs/onnxruntime.md's withWeights swaps fine-tuned PyTorch weights into a TorchScript export, and ORT's outputs are PyTorch's", () => {
  const block = docBlock('docs/onnxruntime.md', 'ts', "withWeights(readFileSync('cnn.onnx'), 'finetuned.safetensors')");
  assert.is(asUser('ort', 'swap.mjs', block.code), block.output);
});

test("persona, GGUF: docs/gguf.md's code lists the metadata and tensors and dequantizes one as gguf-py does, and `npyts info` prints them", () => {
  const api = docBlock('docs/gguf.md', 'ts', "console.log(f.metadata['tokenizer.ggml.tokens']");
  assert.is(asUser('gguf', 'list.mjs', api.code), api.output);
  // Every dequantized value is gguf-py's (gguf.quants.dequantize), bit for bit.
  const same = asUser(
    'gguf',
    'dequantize.mjs',
    `
import { loadNpy, openWeights } from '@npyts/core/node';
await using f = await openWeights('model.gguf');
const q = await f.get('blk.0.attn_q.weight', { expect: '<f4' });
const want = await loadNpy('q.npy', { expect: '<f4' });
console.log(q.data.length === want.data.length && q.data.every((v, i) => Object.is(v, want.data[i])));
`,
  );
  assert.is(same.trim(), 'true');
  const cli = docBlock('docs/gguf.md', 'sh', 'npyts info model.gguf');
  const shown = execFileSync('bash', ['-c', cli.code], {
    cwd: join(personas, 'gguf'),
    encoding: 'utf8',
    env: { ...process.env, PATH: `${join(project, 'node_modules', '.bin')}:${process.env.PATH}` },
  });
  assert.is(shown, cli.output);
});

test("persona, Hugging Face: a .safetensors mapped (docs/larger-than-memory.md's code) and its tensors fed to ONNX Runtime give PyTorch's output", () => {
  const mapped = docBlock('docs/larger-than-memory.md', 'ts', "loadWeights('model.safetensors', { mmap })");
  assert.is(asUser('hf', 'map.mjs', mapped.code), mapped.output);
  const out = asUser(
    'hf',
    'run.mjs',
    `
import * as ort from 'onnxruntime-node';
import { loadNpy, loadWeights, nativeStatus } from '@npyts/core/node';
import { toFloat32 } from '@npyts/core';
import { fromOrtTensor, toOrtTensor } from '@npyts/onnxruntime';

const mmap = nativeStatus().mmap?.available ? 'r' : undefined;
const weights = await loadWeights('model.safetensors', { mmap });
const session = await ort.InferenceSession.create('linear.onnx');
const { y } = await session.run({ x: toOrtTensor(await loadNpy('x.npy')), w: toOrtTensor(weights.get('fc.weight')!), b: toOrtTensor(weights.get('fc.bias')!) });
const want = await loadNpy('y.npy', { expect: '<f4' });
const got = toFloat32(fromOrtTensor(y!)).data;
console.log(JSON.stringify({ mmap, close: got.length === want.data.length && got.every((v, i) => Math.abs(v - want.data[i]!) <= 1e-5 * (1 + Math.abs(want.data[i]!))) }));
`,
  );
  assert.equal(JSON.parse(out), { mmap: 'r', close: true });
});

test.run();
