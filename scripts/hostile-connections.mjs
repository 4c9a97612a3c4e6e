// Hostile connections against `trickle serve`, as docs/src/reliability.md reports them: 25
// connections that send nothing, 25 kept alive after one request, 25 that send half a
// request head; after WAIT seconds, how many of each the server has closed, and how long
// a SIGTERM then takes to end the process. Then how long a config of 30,000 routes takes
// to load (until `listening on`). On 127.0.0.1 only, with the server's defaults unless
// flags are given after the binary.
//
//   node scripts/hostile-connections.mjs [--routes-only] [--json OUT] [TRICKLE_BINARY] [SERVE_FLAGS...]
//   WAIT=40 node scripts/hostile-connections.mjs target/debug/trickle --header-timeout 2s
//
// The binary defaults to target/release/trickle (`make cli`); an older build shows the
// figures before the timeouts (it takes no new flags). `--routes-only` times only the
// 30,000 routes; `--json OUT` also writes what was measured to OUT (`make bench` keeps the
// routes' time in target/bench/routes.json for benches/report.mjs).

import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

const args = process.argv.slice(2);
const routesOnly = args[0] === "--routes-only" ? Boolean(args.shift()) : false;
const jsonOut = args[0] === "--json" ? args.splice(0, 2)[1] : null;
const [binary = "target/release/trickle", ...flags] = args;
/** What was measured, for `--json`. */
const measured = {};
const WAIT_S = Number(process.env.WAIT ?? 40);
const EACH = 25;

const CONFIG = '[[group]]\nname = "demo"\nlimit = "10000/1h"\nroutes = ["/demo"]\n';

/** Starts `trickle serve` on a free port with `config`; resolves with the process and its
 * address once it announces it. */
async function start(configText, extra = []) {
  const dir = mkdtempSync(join(tmpdir(), "trickle-hostile-"));
  const config = join(dir, "serve.toml");
  writeFileSync(config, configText);
  const started = performance.now();
  const child = spawn(
    binary,
    ["serve", "--config", config, "--listen", "127.0.0.1:0", ...extra],
    { stdio: ["ignore", "pipe", "ignore"] },
  );
  const lines = createInterface({ input: child.stdout });
  const [line] = await Promise.race([
    once(lines, "line"),
    once(child, "exit").then(() => {
      throw new Error(`${binary} exited before listening`);
    }),
  ]);
  const [host, port] = line.replace("listening on http://", "").split(":");
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  return { child, host, port: Number(port), ms: performance.now() - started, cleanup };
}

/** A connection that records when the server closed it (`closedAt`, null while open). */
function open(server) {
  const socket = connect(server.port, server.host);
  socket.closedAt = null;
  socket.on("data", () => {});
  socket.on("error", () => {});
  socket.on("close", () => {
    socket.closedAt ??= performance.now();
  });
  return once(socket, "connect").then(() => socket);
}

const request = (client) =>
  `GET /demo HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Client-Id: ${client}\r\n\r\n`;

/** The three kinds of connection, WAIT seconds, then SIGTERM. */
async function connections() {
  const server = await start(CONFIG, flags);
  const silent = [];
  const kept = [];
  const half = [];
  for (let i = 0; i < EACH; i++) {
    silent.push(await open(server));
    const socket = await open(server);
    socket.write(request(`kept-${i}`));
    await once(socket, "data");
    kept.push(socket);
    const halfSent = await open(server);
    halfSent.write("GET /demo HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Cli");
    half.push(halfSent);
  }
  const opened = performance.now();
  await new Promise((resolve) => setTimeout(resolve, WAIT_S * 1000));

  const summary = (name, sockets) => {
    const closed = sockets.filter((socket) => socket.closedAt !== null);
    const latest = Math.max(...closed.map((socket) => socket.closedAt - opened));
    const when = closed.length ? `, the last ${(latest / 1000).toFixed(2)} s after opening` : "";
    return `${closed.length}/${sockets.length} ${name}${when}`;
  };
  console.log(
    `after ${WAIT_S} s: closed ${summary("silent", silent)}; ${summary("kept alive", kept)}; ` +
      `${summary("half-sent", half)}`,
  );

  const signalled = performance.now();
  server.child.kill("SIGTERM");
  await once(server.child, "exit");
  measured.sigtermToExitMs = performance.now() - signalled;
  console.log(`SIGTERM to exit: ${(measured.sigtermToExitMs / 1000).toFixed(3)} s`);
  for (const socket of [...silent, ...kept, ...half]) socket.destroy();
  server.cleanup();
}

if (!routesOnly) await connections();

// 30 groups of 1,000 routes, one a line.
let routes = "";
for (let group = 0; group < 30; group++) {
  routes += `[[group]]\nname = "g${group}"\nlimit = "6/8s"\nroutes = [\n`;
  for (let route = 0; route < 1000; route++) routes += `  "/g${group}/r${route}",\n`;
  routes += "]\n\n";
}
const many = await start(routes, flags);
console.log(`30,000 routes: listening after ${(many.ms / 1000).toFixed(3)} s`);
measured.routes = 30_000;
measured.routesListeningMs = many.ms;
many.child.kill("SIGTERM");
await once(many.child, "exit");
many.cleanup();
if (jsonOut) writeFileSync(jsonOut, `${JSON.stringify(measured, null, 2)}\n`);
