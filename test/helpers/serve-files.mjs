// A small HTTP file server for tests of files found beside others: byte ranges, a log of every
// request (path, query, range, authorization, every header), and per-path answers a test sets (redirects, 403s).
import { createServer } from 'node:http';
import { readFileSync, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Serve `root` on 127.0.0.1. `answer(req, url)` may return `{ status, headers }` to answer instead
 * of the file (a redirect, a 403). A multi-range request gets the whole file (as S3 answers).
 */
export async function serveFiles(root, answer = () => null) {
  const log = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    log.push({
      path: decodeURIComponent(url.pathname),
      rawPath: url.pathname,
      search: url.search,
      range: req.headers.range,
      authorization: req.headers.authorization,
      headers: { ...req.headers },
    });
    const special = answer(req, url);
    if (special) {
      res.writeHead(special.status, special.headers ?? {});
      res.end();
      return;
    }
    const path = join(root, decodeURIComponent(url.pathname));
    if (!path.startsWith(root) || !existsSync(path) || !statSync(path).isFile()) {
      res.writeHead(404);
      res.end();
      return;
    }
    const body = readFileSync(path);
    const m = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? '');
    if (!m) {
      res.writeHead(200, { 'content-length': body.length });
      res.end(body);
      return;
    }
    const start = m[1] === '' ? Math.max(0, body.length - Number(m[2])) : Number(m[1]);
    const end = m[1] === '' || m[2] === '' ? body.length - 1 : Math.min(Number(m[2]), body.length - 1);
    res.writeHead(206, { 'content-range': `bytes ${start}-${end}/${body.length}`, 'content-length': end - start + 1 });
    res.end(body.subarray(start, end + 1));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${server.address().port}`;
  return { base, log, port: server.address().port, close: () => new Promise((r) => server.close(r)) };
}
