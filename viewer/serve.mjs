// `npm run viewer`: serve the viewer (and the demo's archive) on 127.0.0.1, with HTTP range support
// so that big files can be opened by URL. Options: --port N (default 8080), --data DIR (served at /data/).
import { closeSync, createReadStream, existsSync, openSync, realpathSync, statSync } from 'node:fs';
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
 * The regular file a URL path names, never outside its mount: the decoded path must stay inside it,
 * and so must the file it really is (symbolic links are followed and checked). Throws HttpError.
 */
function fileFor(mounts, pathname) {
  let decoded;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    throw new HttpError(400, 'bad request: malformed percent-encoding in the path');
  }
  if (decoded.includes('\0')) throw new HttpError(400, 'bad request: NUL in the path');
  for (const [prefix, root] of mounts) {
    if (!decoded.startsWith(prefix)) continue;
    let path = normalize(join(root, decoded.slice(prefix.length) || 'index.html'));
    if (path !== root && !path.startsWith(root + sep)) throw new HttpError(404, 'not found');
    if (!existsSync(path)) throw new HttpError(404, 'not found');
    let real = realpathSync(path);
    const realRoot = realpathSync(root);
    if (real !== realRoot && !real.startsWith(realRoot + sep)) throw new HttpError(404, 'not found');
    if (statSync(real).isDirectory()) {
      path = join(real, 'index.html');
      if (!existsSync(path)) throw new HttpError(404, 'not found');
      real = realpathSync(path);
      if (!real.startsWith(realRoot + sep)) throw new HttpError(404, 'not found');
    }
    if (!statSync(real).isFile()) throw new HttpError(404, 'not found');
    return real;
  }
  throw new HttpError(404, 'not found');
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
    try {
      const path = fileFor(mounts, new URL(req.url, 'http://x').pathname);
      const size = statSync(path).size;
      const headers = { 'content-type': types[extname(path)] ?? 'application/octet-stream', 'accept-ranges': 'bytes', 'cache-control': 'no-store' };
      // Opened before anything is answered: an unreadable file (permissions, removed meanwhile) gets
      // its own status and message, not a dropped connection; the server keeps serving.
      let fd;
      try {
        fd = openSync(path, 'r');
      } catch (e) {
        fail(res, e.code === 'EACCES' || e.code === 'EPERM' ? 403 : 404, e.code === 'EACCES' || e.code === 'EPERM' ? 'forbidden: the file cannot be read' : 'not found');
        return;
      }
      const send = (options) => {
        const stream = createReadStream(null, { ...options, fd });
        stream.on('error', () => fail(res, 500, 'cannot read the file'));
        stream.pipe(res);
      };
      const m = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? '');
      if (!m || (m[1] === '' && m[2] === '')) { res.writeHead(200, { ...headers, 'content-length': size }); send({}); return; }
      let start = m[1] === '' ? size - Number(m[2]) : Number(m[1]);
      const end = m[1] === '' || m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
      if (start < 0) start = 0;
      if (start >= size || start > end) { closeSync(fd); res.writeHead(416, { 'content-range': `bytes */${size}` }).end(); return; }
      res.writeHead(206, { ...headers, 'content-length': end - start + 1, 'content-range': `bytes ${start}-${end}/${size}` });
      send({ start, end });
    } catch (e) {
      if (e instanceof HttpError) fail(res, e.status, e.message);
      else fail(res, 500, 'internal error');
    }
  });
  return new Promise((ok) => server.listen(port, host, () => ok(server)));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const server = await startViewer({ port: Number(opt('--port', 8080)), dataDir: data });
  const { port } = server.address();
  console.log(`npyts viewer: http://127.0.0.1:${port}/  (Ctrl-C to stop)${data ? `; ${data} is served at /data/` : ''}`);
}
