// A static file server for www/, on 127.0.0.1 only: `make demo` runs it, and the end-to-end
// tests import `serve` to host the release build on a port of their own.
//
//   node scripts/serve.mjs [ROOT] [PORT]     defaults: www, 8000 (or the next free port)
//
// Python's http.server would do, but it may send .wasm without `application/wasm`, which
// makes the browser fall back from streaming compilation with a console warning.

import { createServer } from "node:http";
import { readFile, stat } from "node:fs/promises";
import { extname, join, normalize, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".wasm": "application/wasm",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ts": "text/plain; charset=utf-8",
};

/** The file a request path names under `root`, or null when it would leave `root`. */
function fileFor(root, urlPath) {
  let path;
  try {
    path = decodeURIComponent(urlPath.split("?")[0]);
  } catch {
    return null;
  }
  const file = normalize(join(root, path));
  return file === root || file.startsWith(root + sep) ? file : null;
}

async function respond(root, headers, request, response) {
  let file = fileFor(root, request.url ?? "/");
  if (file && (await stat(file).catch(() => null))?.isDirectory()) {
    file = join(file, "index.html");
  }
  const body = file && (await readFile(file).catch(() => null));
  if (!body || (request.method !== "GET" && request.method !== "HEAD")) {
    response.writeHead(404, { ...headers, "content-type": "text/plain; charset=utf-8" });
    response.end(`not found: ${request.url}\n`);
    return;
  }
  response.writeHead(200, {
    ...headers,
    "content-type": TYPES[extname(file)] ?? "application/octet-stream",
    "content-length": body.length,
    "cache-control": "no-cache",
    "x-content-type-options": "nosniff",
  });
  response.end(request.method === "HEAD" ? undefined : body);
}

/**
 * Serves `root` on 127.0.0.1:`port` (0 picks a free port). Resolves to `{ url, close }`.
 * A port in use is tried again one higher, up to 20 times, unless `port` is 0.
 * `headers` (names in lower case) go on every response, as a host adds a
 * Content-Security-Policy; the type and length of the file win over any given here.
 */
export async function serve(root, port = 0, { headers = {} } = {}) {
  const absoluteRoot = resolve(root);
  for (let attempt = 0; ; attempt++) {
    const server = createServer((request, response) => {
      respond(absoluteRoot, headers, request, response).catch((error) => {
        response.writeHead(500, { "content-type": "text/plain; charset=utf-8" });
        response.end(`${error.message}\n`);
      });
    });
    try {
      await new Promise((done, fail) => {
        server.once("error", fail);
        server.listen(port === 0 ? 0 : port + attempt, "127.0.0.1", done);
      });
    } catch (error) {
      if (error.code === "EADDRINUSE" && port !== 0 && attempt < 20) continue;
      throw error;
    }
    const { port: bound } = server.address();
    return {
      url: `http://127.0.0.1:${bound}/`,
      close: () => new Promise((done) => server.close(done)),
    };
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [root = "www", port = "8000"] = process.argv.slice(2);
  if (!/^\d+$/.test(port) || Number(port) > 65535) {
    console.error(`serve: port must be a whole number from 0 to 65535, got ${JSON.stringify(port)}`);
    process.exit(2);
  }
  const { url } = await serve(root, Number(port));
  console.log(`Serving ${root}/ at ${url}  (Ctrl-C to stop)`);
}
