// A fresh project that installs the packed tarballs the way a user's project would, offline: its
// package-lock lists the tarballs and, for everything else, the exact entries of this repository's
// lock (so npm takes them from the local cache, by integrity, without asking the registry). And a
// registry on 127.0.0.1 that serves the tarballs by name, as npm's registry will once they are
// published, for the installs that resolve names themselves (optional platform packages).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { homedir } from 'node:os';
import { join, relative } from 'node:path';

const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** `npm pack` of one package folder into `dir`, without blocking this process: npm's JSON answer. */
function pack(cwd, dir) {
  return new Promise((resolve, reject) => {
    const child = spawn(NPM, ['pack', '--json', '--pack-destination', dir], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => {
      out += c;
    });
    child.stderr.on('data', (c) => {
      err += c;
    });
    child.on('error', reject);
    child.on('close', (status) => (status === 0 ? resolve(JSON.parse(out)) : reject(new Error(`npm pack in ${cwd}: ${status}\n${err}`))));
  });
}

/** `npm pack` every package into `dir`, two at a time (the two platform packages compile); the tarballs by package name. */
export async function packAll(root, dir) {
  mkdirSync(dir, { recursive: true });
  const tarballs = {};
  const queue = readdirSync(join(root, 'packages'));
  const worker = async () => {
    for (let pkg = queue.shift(); pkg !== undefined; pkg = queue.shift()) {
      const out = await pack(join(root, 'packages', pkg), dir);
      tarballs[out[0].name] = {
        file: join(dir, out[0].filename),
        integrity: out[0].integrity,
        files: out[0].files.map((f) => f.path),
        manifest: JSON.parse(readFileSync(join(root, 'packages', pkg, 'package.json'), 'utf8')),
      };
    }
  };
  await Promise.all([worker(), worker()]);
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
  // A tarball that another names as an optional dependency (a platform package of the addon) is
  // installed as that dependency, where its os, cpu and libc fit, and is not one of the project's.
  const optional = new Set(Object.values(tarballs).flatMap((t) => Object.keys(t.manifest.optionalDependencies ?? {})));
  for (const [name, t] of Object.entries(tarballs)) {
    const spec = `file:${relative(dir, t.file)}`;
    if (!optional.has(name)) dependencies[name] = spec;
    const m = t.manifest;
    lock.packages[`node_modules/${name}`] = {
      version: m.version,
      resolved: spec,
      ...(optional.has(name) ? { optional: true } : {}),
      ...(m.os ? { os: m.os } : {}),
      ...(m.cpu ? { cpu: m.cpu } : {}),
      ...(m.libc ? { libc: m.libc } : {}),
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

/** The tarball of `name@version` in npm's cache (where `npm ci` of this repository left it), found by its integrity. */
function cachedTarball(name, version, integrity) {
  const [algorithm, digest] = integrity.split('-');
  const hex = Buffer.from(digest, 'base64').toString('hex');
  const cache = process.env.npm_config_cache || join(homedir(), '.npm');
  const file = join(cache, '_cacache', 'content-v2', algorithm, hex.slice(0, 2), hex.slice(2, 4), hex.slice(4));
  if (!existsSync(file)) throw new Error(`${name}@${version} is not in npm's cache (${file}): run npm ci in the repository first`);
  return readFileSync(file);
}

/**
 * A registry on 127.0.0.1 serving the tarballs (by the name and version in their manifests) and the
 * packages they need beyond each other, with the versions and tarballs of this repository's lock
 * (from npm's cache). Anything else is a 404, as for a package that is not published. Returns its
 * `url`, the `requests` it answered (paths), and `close()`.
 */
/** The date every package the registry serves says it was published: past any package manager's age gate. */
const PUBLISHED = '2026-01-01T00:00:00.000Z';

export async function serveRegistry(root, tarballs) {
  const rootLock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')).packages;
  const packages = new Map();
  for (const t of Object.values(tarballs)) packages.set(t.manifest.name, { manifest: t.manifest, integrity: t.integrity, bytes: () => readFileSync(t.file) });
  // What they need beyond each other, with what that needs, at the versions this repository's lock hoists.
  const wanted = Object.values(tarballs).flatMap((t) => Object.keys(t.manifest.dependencies ?? {}));
  while (wanted.length) {
    const dep = wanted.pop();
    const entry = rootLock[`node_modules/${dep}`];
    if (packages.has(dep)) continue;
    if (!entry) throw new Error(`${dep} is not in this repository's lock`);
    const { version, integrity, license, dependencies, engines } = entry;
    packages.set(dep, { manifest: { name: dep, version, license, engines, dependencies }, integrity, bytes: () => cachedTarball(dep, version, integrity) });
    wanted.push(...Object.keys(dependencies ?? {}));
  }
  const requests = [];
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname).slice(1);
    requests.push(path);
    const tarball = /^(.+)\/-\/[^/]+-(\d[^/]*)\.tgz$/.exec(path);
    const p = packages.get(tarball ? tarball[1] : path);
    if (!p || (tarball && tarball[2] !== p.manifest.version)) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"error":"Not found"}');
      return;
    }
    if (tarball) {
      const body = p.bytes();
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length });
      res.end(body);
      return;
    }
    const { name, version } = p.manifest;
    const dist = { tarball: `${url}/${name}/-/${name.split('/').pop()}-${version}.tgz`, integrity: p.integrity };
    // A publish date, as npm's registry gives: yarn 4 quarantines versions younger than a day (npmMinimalAgeGate), and one without a date.
    const time = { created: PUBLISHED, modified: PUBLISHED, [version]: PUBLISHED };
    const body = JSON.stringify({ name, 'dist-tags': { latest: version }, time, versions: { [version]: { ...p.manifest, _id: `${name}@${version}`, dist } } });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}`;
  return { url, requests, close: () => new Promise((resolve) => server.close(resolve)) };
}
