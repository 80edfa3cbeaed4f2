// `npm run viewer`: serve the viewer (and the demo's archive) on 127.0.0.1, with HTTP range support
// so that big files can be opened by URL. Options: --port N (default 8080), --data DIR (served at /data/).
import { closeSync, constants, createReadStream, fstatSync, openSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { pipeline } from 'node:stream';
import { createServer } from 'node:http';
import { dirname, extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const opt = (name, fallback) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : fallback; };
const data = opt('--data');
const types = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css', '.png': 'image/png', '.json': 'application/json' };

/** An answer with a status and a short text body. */
class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/**
 * The regular file a URL path names, opened, never outside its mount: the decoded path must stay
 * inside it, and so must the file that was opened. The file is opened first and what was opened is
 * checked (the kernel's name for it must be inside the mount), so a symbolic link swapped
 * between a check and the open cannot serve an outside file. Returns { fd, size, path }; throws HttpError.
 */
function openFileFor(mounts, pathname) {
  let decoded;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    throw new HttpError(400, 'bad request: malformed percent-encoding in the path');
  }
  if (decoded.includes('\0')) throw new HttpError(400, 'bad request: NUL in the path');
  for (const [prefix, root] of mounts) {
    if (!decoded.startsWith(prefix)) continue;
    const path = normalize(join(root, decoded.slice(prefix.length) || 'index.html'));
    if (path !== root && !path.startsWith(root + sep)) throw new HttpError(404, 'not found');
    const opened = openInside(path, root);
    if (!opened.stat.isDirectory()) return opened;
    closeSync(opened.fd);
    const index = openInside(join(path, 'index.html'), root);
    if (index.stat.isDirectory()) {
      closeSync(index.fd);
      throw new HttpError(404, 'not found');
    }
    return index;
  }
  throw new HttpError(404, 'not found');
}

/**
 * Open `path`, then check that what was opened is a file (or directory) whose real path is inside
 * `root`. On Linux the kernel names the opened file (/proc/self/fd): no later look-up by name, which a
 * swapped link could redirect. Elsewhere the real path is looked up and must name the opened inode.
 */
function openInside(path, root) {
  let fd;
  try {
    // Non-blocking: opening a FIFO for reading would wait for a writer, and hold every other request.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    if (e.code === 'EACCES' || e.code === 'EPERM') throw new HttpError(403, 'forbidden: the file cannot be read');
    throw new HttpError(404, 'not found');
  }
  try {
    const stat = fstatSync(fd);
    const real = openedPath(fd, path, stat);
    if (!(stat.isFile() || stat.isDirectory()) || real === null || !isInside(real, realpathSync(root))) throw new HttpError(404, 'not found');
    return { fd, stat, size: stat.size, path };
  } catch (e) {
    closeSync(fd);
    throw e instanceof HttpError ? e : new HttpError(404, 'not found');
  }
}

const isInside = (real, realRoot) => real === realRoot || real.startsWith(realRoot + sep);

/** The real path of the file open at `fd` (null when it cannot be told). */
function openedPath(fd, path, stat) {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    const real = realpathSync(path);
    const now = statSync(real);
    return now.dev === stat.dev && now.ino === stat.ino ? real : null;
  }
}

/** Serve the viewer on host:port (0 picks a free port); `dataDir` is served at /data/. */
export function startViewer({ port = 8080, host = '127.0.0.1', dataDir } = {}) {
  const mounts = [['/demo/', join(here, '..', 'demo')], ['/', here]];
  if (dataDir) mounts.unshift(['/data/', resolve(dataDir)]);
  const fail = (res, status, message) => {
    if (res.headersSent) { res.destroy(); return; }
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' }).end(message);
  };
  const server = createServer((req, res) => {
    let opened;
    try {
      opened = openFileFor(mounts, new URL(req.url, 'http://x').pathname);
    } catch (e) {
      if (e instanceof HttpError) fail(res, e.status, e.message);
      else fail(res, 500, 'internal error');
      return;
    }
    const { fd, size, path } = opened;
    const headers = { 'content-type': types[extname(path)] ?? 'application/octet-stream', 'accept-ranges': 'bytes', 'cache-control': 'no-store' };
    // The stream owns the descriptor from here: pipeline destroys it (and so closes the file) when
    // the client goes away mid-download, as when the file has been sent.
    const send = (options) => {
      pipeline(createReadStream(null, { ...options, fd, autoClose: true }), res, (e) => {
        if (e && !res.headersSent) fail(res, 500, 'cannot read the file');
      });
    };
    const m = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? '');
    if (!m || (m[1] === '' && m[2] === '')) {
      res.writeHead(200, { ...headers, 'content-length': size });
      send({});
      return;
    }
    let start = m[1] === '' ? size - Number(m[2]) : Number(m[1]);
    const end = m[1] === '' || m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
    if (start < 0) start = 0;
    if (start >= size || start > end) {
      closeSync(fd);
      res.writeHead(416, { 'content-range': `bytes */${size}` }).end();
      return;
    }
    res.writeHead(206, { ...headers, 'content-length': end - start + 1, 'content-range': `bytes ${start}-${end}/${size}` });
    send({ start, end });
  });
  return new Promise((ok) => server.listen(port, host, () => ok(server)));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const server = await startViewer({ port: Number(opt('--port', 8080)), dataDir: data });
  const { port } = server.address();
  console.log(`npyts viewer: http://127.0.0.1:${port}/  (Ctrl-C to stop)${data ? `; ${data} is served at /data/` : ''}`);
}
