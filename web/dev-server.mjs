// SPDX-License-Identifier: Apache-2.0
// Serves a built UI directory and forwards /api/ to a running server, for working on the UI
// without rebuilding the server binary:
//   node build.mjs --outdir /tmp/wsui && node dev-server.mjs --dir /tmp/wsui --api http://127.0.0.1:9410
// then open http://127.0.0.1:8410/. Rebuild (node build.mjs) and reload to see changes.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';

const args = process.argv.slice(2);
const arg = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const dir = path.resolve(arg('--dir', 'dist'));
const api = new URL(arg('--api', 'http://127.0.0.1:9410'));
const port = Number(arg('--port', '8410'));
const types = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };

http
  .createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (url.pathname.startsWith('/api/')) {
      const fwd = http.request(
        { host: api.hostname, port: api.port, path: req.url, method: req.method, headers: req.headers },
        (r) => {
          res.writeHead(r.statusCode, r.headers);
          r.pipe(res);
        },
      );
      fwd.on('error', (e) => {
        res.writeHead(502, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ error: `cannot reach ${api.href}: ${e.message}` }));
      });
      req.pipe(fwd);
      return;
    }
    let file = path.join(dir, path.normalize(url.pathname).replace(/^\/+/, ''));
    if (!file.startsWith(dir) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
      file = path.join(dir, 'index.html');
    }
    res.writeHead(200, { 'Content-Type': types[path.extname(file)] ?? 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  })
  .listen(port, '127.0.0.1', () => console.log(`UI on http://127.0.0.1:${port}/ (API: ${api.href})`));
