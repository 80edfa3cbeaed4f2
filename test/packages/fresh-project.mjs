// A fresh project that installs the packed tarballs the way a user's project would, offline: its
// package-lock lists the tarballs and, for everything else, the exact entries of this repository's
// lock (so npm takes them from the local cache, by integrity, without asking the registry).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** `npm pack` every package into `dir`; the tarballs by package name. */
export function packAll(root, dir) {
  mkdirSync(dir, { recursive: true });
  const tarballs = {};
  for (const pkg of readdirSync(join(root, 'packages'))) {
    const out = JSON.parse(
      execFileSync(NPM, ['pack', '--json', '--pack-destination', dir], {
        cwd: join(root, 'packages', pkg),
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }),
    );
    tarballs[out[0].name] = {
      file: join(dir, out[0].filename),
      files: out[0].files.map((f) => f.path),
      manifest: JSON.parse(readFileSync(join(root, 'packages', pkg, 'package.json'), 'utf8')),
    };
  }
  return tarballs;
}

/** The lock entry path a package `name` resolves to from the entry at `from` (Node's lookup, in lock paths). */
function lookup(packages, from, name) {
  for (let base = from; ; ) {
    const p = `${base ? `${base}/` : ''}node_modules/${name}`;
    if (packages[p]) return p;
    if (!base) return null;
    const i = base.lastIndexOf('node_modules/');
    base = i <= 0 ? '' : base.slice(0, i - 1);
  }
}

/**
 * Write a project in `dir` depending on the tarballs and on `extra` (names installed in this
 * repository), with a lock that npm can install offline; returns the lock's package count.
 */
export function writeFreshProject(root, dir, tarballs, extra) {
  const rootLock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
  const packages = rootLock.packages;
  const lock = { name: 'fresh', lockfileVersion: 3, requires: true, packages: {} };
  const dependencies = {};
  const wanted = [];
  for (const [name, t] of Object.entries(tarballs)) {
    const spec = `file:${relative(dir, t.file)}`;
    dependencies[name] = spec;
    const m = t.manifest;
    lock.packages[`node_modules/${name}`] = {
      version: m.version,
      resolved: spec,
      integrity: `sha512-${createHash('sha512').update(readFileSync(t.file)).digest('base64')}`,
      ...(m.license ? { license: m.license } : {}),
      ...(m.dependencies ? { dependencies: m.dependencies } : {}),
      ...(m.optionalDependencies ? { optionalDependencies: m.optionalDependencies } : {}),
      ...(m.peerDependencies ? { peerDependencies: m.peerDependencies } : {}),
      ...(m.peerDependenciesMeta ? { peerDependenciesMeta: m.peerDependenciesMeta } : {}),
      ...(m.bin ? { bin: m.bin } : {}),
      ...(m.engines ? { engines: m.engines } : {}),
      ...(m.scripts?.install ? { hasInstallScript: true } : {}),
    };
    const optionalPeer = (dep) => m.peerDependenciesMeta?.[dep]?.optional;
    for (const dep of Object.keys({ ...m.dependencies, ...m.peerDependencies })) if (!tarballs[dep] && !optionalPeer(dep)) wanted.push(['', dep]);
  }
  for (const name of extra) {
    dependencies[name] = packages[`node_modules/${name}`].version;
    wanted.push(['', name]);
  }
  // Everything those need, at the same places in the tree as in this repository.
  const seen = new Set();
  while (wanted.length) {
    const [from, name] = wanted.pop();
    const at = lookup(packages, from, name);
    if (!at || seen.has(at)) continue;
    seen.add(at);
    const entry = { ...packages[at] };
    delete entry.dev;
    delete entry.devOptional;
    delete entry.peer;
    if (entry.link) throw new Error(`${name} is a workspace link in the repository's lock`);
    // This repository's lock records no download addresses; with the registry's usual one, npm
    // finds the tarball in its cache by integrity instead of asking the registry for the package.
    const real = at.slice(at.lastIndexOf('node_modules/') + 'node_modules/'.length);
    entry.resolved ??= `https://registry.npmjs.org/${real}/-/${real.split('/').pop()}-${entry.version}.tgz`;
    lock.packages[at] = entry;
    for (const dep of Object.keys({ ...entry.dependencies, ...entry.optionalDependencies })) wanted.push([at, dep]);
    for (const [dep, range] of Object.entries(entry.peerDependencies ?? {})) if (!entry.peerDependenciesMeta?.[dep]?.optional && range) wanted.push([at, dep]);
  }
  lock.packages[''] = { name: 'fresh', dependencies };
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'fresh', private: true, dependencies }, null, 2));
  writeFileSync(join(dir, 'package-lock.json'), JSON.stringify(lock, null, 2));
  return Object.keys(lock.packages).length;
}
