// The docs' client examples (docs/src/clients/: fetch.mjs, client.py and the Rust crate in
// rust/) run against a local server that limits with the package's own core, the "./limiter"
// entry as target/site lays it out from the packed tarball. The server answers a refused
// request 429 with Retry-After in seconds, as an HTTP date, or with none; other scenarios
// answer 503 every time, 404, or ask for a day's wait. In the first three, another client of
// the same key spends the whole limit just before the first request arrives, as a second
// process of an application would: the client meets a 429 however politely it paces itself.
// The server records when every request arrives, and from those times the test checks what
// the chapter (docs/src/understanding.md) promises of each client:
// - it waits at least what Retry-After says before sending the same request again, so that
//   (Retry-After being exact) no request is refused twice;
// - without Retry-After it backs off exponentially: after the k-th refusal in a row it waits
//   at least min(8 s, 1 s × 2^(k−1)), plus a random part;
// - requests come at a steady pace, at least 1 s apart, never in a burst: below the limit,
//   so that once the first request is through, no later one meets a 429;
// - it gives up after five attempts, at once on a 4XX other than 429, and on a Retry-After
//   longer than it is willing to wait, saying so;
// - it prints one line per request and exits 0 only when every request succeeded.
// All three clients share these constants and this output, so one oracle checks them all.
// The scenarios run side by side, each client against a server and a limiter of its own.

import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const CLIENTS = join(REPO, "docs", "src", "clients");

// Not imported from harness.mjs, which loads playwright-core: this file needs no browser.
const MODULE = new URL("../../target/site/limiter.js", import.meta.url);
if (!existsSync(MODULE)) {
  throw new Error(`${fileURLToPath(MODULE)} is missing: run \`make site\` first`);
}
const { load, Limiter } = await import(MODULE.href);
await load();

/**
 * Small, so that a run takes seconds, and twice the clients' pace of one request a second:
 * they pace themselves below it, as the chapter tells them to.
 */
const LIMIT = "4/2s";
/** The tokens another client of the same key spends just before the first request: all. */
const SPENT_BY_ANOTHER = 4;
// The clients' constants, the same in all three.
const PACE_MS = 1_000;
const MAX_ATTEMPTS = 5;
const BACKOFF_BASE_MS = 1_000;
const BACKOFF_CAP_MS = 8_000;
const MAX_WAIT_S = 60; // the longest Retry-After they wait for
/**
 * How early an arrival may come, and nothing more: Node's timers count whole milliseconds
 * from a clock truncated to the millisecond, so one may fire up to 1 ms before its time.
 * Late is always allowed: the machine may be busy.
 */
const TIMER_SLACK_MS = 1;

/** The backoff's step after the k-th refusal in a row; a client waits all of it, and more. */
const backoffStep = (k) => Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (k - 1));

/**
 * Every request allowed in the end; the first only after a 429, since another client had
 * spent the limit, and none after it: a pace below the limit never meets one.
 */
function firstWaitsThenNone(groups) {
  assert.ok(
    groups.every((attempts) => attempts.at(-1).status === 200),
    "a request did not succeed",
  );
  assert.ok(groups[0].length > 1, "the first request was not refused, so no wait was tested");
  const refusedLater = groups.slice(1).flatMap((attempts, i) => (attempts.length > 1 ? [i + 2] : []));
  assert.deepEqual(refusedLater, [], "requests sent at the pace met a 429: the pace is not below the limit");
}

/** The statuses the server sent, request by request. */
const statuses = (groups) => groups.map((attempts) => attempts.map(({ status }) => status));

/**
 * How the server answers, by scenario: `answer(decision, wall)` gives the status and the
 * Retry-After for a request the core decided at wall-clock time `wall` (ms); `expect(groups)`
 * checks the arrivals, split into requests, beyond what every scenario checks.
 */
const SCENARIOS = [
  {
    name: "429 with Retry-After in whole seconds",
    count: 8,
    answer: (decision) =>
      decision.allowed
        ? { status: 200 }
        : { status: 429, retryAfter: String(Math.ceil(decision.retryAfterMs / 1000)) },
    expect: firstWaitsThenNone,
  },
  {
    name: "429 with Retry-After as an HTTP date",
    count: 8,
    // The first whole second at or after the moment the core names: an HTTP date has no ms.
    answer: (decision, wall) =>
      decision.allowed
        ? { status: 200 }
        : {
            status: 429,
            retryAfter: new Date(
              Math.ceil((wall + decision.retryAfterMs) / 1000) * 1000,
            ).toUTCString(),
          },
    expect: firstWaitsThenNone,
  },
  {
    name: "429 without Retry-After",
    count: 8,
    answer: (decision) => ({ status: decision.allowed ? 200 : 429 }),
    expect: firstWaitsThenNone,
  },
  {
    name: "503 every time, without Retry-After",
    count: 1,
    answer: () => ({ status: 503 }),
    expect: (groups) => assert.deepEqual(statuses(groups), [Array(MAX_ATTEMPTS).fill(503)]),
  },
  {
    name: "404",
    count: 2,
    answer: () => ({ status: 404 }),
    expect: (groups) => assert.deepEqual(statuses(groups), [[404], [404]]),
  },
  {
    name: "429 asking for a day",
    count: 2,
    answer: () => ({ status: 429, retryAfter: "86400" }),
    expect: (groups) => assert.deepEqual(statuses(groups), [[429], [429]]),
  },
];

const CLIENTS_RUN = {
  "fetch.mjs": () => [process.execPath, [join(CLIENTS, "fetch.mjs")]],
  "client.py": () => ["python3", [join(CLIENTS, "client.py")]],
  "rust/": () => [rustClient, []],
};

/** The Rust client's executable, built by cargo wherever its target folder is. */
let rustClient;
before(async () => {
  const { stdout } = await promisify(execFile)(
    process.env.CARGO ?? "cargo",
    ["build", "--locked", "--quiet", "-p", "polite-client", "--message-format=json"],
    { cwd: REPO, maxBuffer: 64 * 1024 * 1024 },
  );
  rustClient = stdout
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line))
    .find((message) => message.reason === "compiler-artifact" && message.executable)?.executable;
  assert.ok(rustClient, "cargo built no executable for polite-client");
});

/**
 * A server on 127.0.0.1 answering as `scenario` says, with a limiter of its own; every
 * arrival is recorded with its monotonic time (`at`, ms), its wall-clock time (`wall`, ms)
 * and its answer.
 */
async function startServer(scenario) {
  const limiter = new Limiter({ limit: LIMIT, algorithm: "floating" });
  const started = performance.now();
  const arrivals = [];
  const server = createServer((request, response) => {
    const at = performance.now();
    const wall = Date.now();
    if (arrivals.length === 0) limiter.hit(at - started, SPENT_BY_ANOTHER);
    const answer = scenario.answer(limiter.hit(at - started, 1), wall);
    arrivals.push({ at, wall, ...answer });
    const headers = answer.retryAfter === undefined ? {} : { "Retry-After": answer.retryAfter };
    response.writeHead(answer.status, headers).end();
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/items`,
    arrivals,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** Runs a client to the end; a client still running after a minute is killed and fails. */
function runClient(command, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill(), 60_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/**
 * Whether the client must stop at this answer: a success, a 4XX other than 429, a wait longer
 * than it accepts, or its last attempt.
 */
function final({ status, retryAfter }, attempt) {
  return (
    status < 300 ||
    (status !== 429 && status < 500) ||
    Number(retryAfter) > MAX_WAIT_S ||
    attempt === MAX_ATTEMPTS
  );
}

/** The arrivals split into requests, by what the client must do with each answer. */
function requests(arrivals) {
  const groups = [];
  let current = [];
  for (const arrival of arrivals) {
    current.push(arrival);
    if (final(arrival, current.length)) {
      groups.push(current);
      current = [];
    }
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

/** The line the client must print for a request the server saw as `attempts`. */
function expectedLine(n, attempts) {
  const last = attempts.at(-1);
  if (last.status < 300) return `request ${n}: ${last.status} on attempt ${attempts.length}`;
  if (last.status !== 429 && last.status < 500) return `request ${n}: ${last.status}, not retried`;
  if (Number(last.retryAfter) > MAX_WAIT_S) return `request ${n}: gave up, Retry-After is too long`;
  return `request ${n}: gave up after ${MAX_ATTEMPTS} attempts: ${last.status}`;
}

/**
 * The earliest the retry of `refused`, the k-th refusal in a row, may arrive, in ms on the
 * clock the answer names: `at`, or `wall` for an HTTP date.
 */
function earliestRetry(refused, k) {
  const header = refused.retryAfter;
  if (header === undefined) return { clock: "at", earliest: refused.at + backoffStep(k) };
  if (/^\d+$/.test(header)) return { clock: "at", earliest: refused.at + Number(header) * 1000 };
  return { clock: "wall", earliest: Date.parse(header) };
}

/** Checks the client's run against what the server saw; `n` counts requests from 1. */
function checkRun(result, arrivals, scenario) {
  const groups = requests(arrivals);
  assert.equal(result.stderr, "", "the client wrote to stderr");
  assert.equal(groups.length, scenario.count, "the server saw a different number of requests");
  assert.deepEqual(
    result.stdout.split("\n").filter(Boolean),
    groups.map((attempts, i) => expectedLine(i + 1, attempts)),
    "the client's lines do not match what the server answered",
  );
  const allSucceeded = groups.every((attempts) => attempts.at(-1).status < 300);
  assert.equal(result.code, allSucceeded ? 0 : 1, `exit code (signal ${result.signal})`);

  for (const [i, attempts] of groups.entries()) {
    const n = i + 1;
    for (let k = 1; k < attempts.length; k++) {
      const [refused, retry] = [attempts[k - 1], attempts[k]];
      const { clock, earliest } = earliestRetry(refused, k);
      const waited = (retry[clock] - refused[clock]).toFixed(1);
      const asked = refused.retryAfter ?? `no Retry-After (backoff ≥ ${backoffStep(k)} ms)`;
      assert.ok(
        retry[clock] >= earliest - TIMER_SLACK_MS,
        `request ${n}: attempt ${k + 1} came ${waited} ms after a ${refused.status} with ${asked}`,
      );
    }
    // Retry-After is the exact moment the request fits, so a client that honours it is
    // refused at most once a request: the server sees no more than two tries of each.
    if (attempts[0].retryAfter !== undefined) {
      assert.ok(attempts.length <= 2, `request ${n} was refused ${attempts.length - 1} times`);
    }
    if (i > 0) {
      const gap = attempts[0].at - groups[i - 1].at(-1).at;
      const late = `${gap.toFixed(1)} ms after the previous answer, under the pace's ${PACE_MS} ms`;
      assert.ok(gap >= PACE_MS - TIMER_SLACK_MS, `request ${n} came ${late}`);
    }
  }
  return groups;
}

describe(`the docs' clients against a server limiting at ${LIMIT}`, { concurrency: true }, () => {
  for (const scenario of SCENARIOS) {
    for (const [client, command] of Object.entries(CLIENTS_RUN)) {
      it(`${client}: ${scenario.name}`, async () => {
        const server = await startServer(scenario);
        let result;
        try {
          const [program, args] = command();
          result = await runClient(program, [...args, server.url, String(scenario.count)]);
        } finally {
          await server.close();
        }
        const groups = checkRun(result, server.arrivals, scenario);
        scenario.expect(groups);
      });
    }
  }
});

describe("the docs' clients given a bad command line", { concurrency: true }, () => {
  const BAD = [[], ["not-a-url"], ["http://127.0.0.1:9/", "0"], ["http://127.0.0.1:9/", "1", "2"]];
  for (const [client, command] of Object.entries(CLIENTS_RUN)) {
    for (const args of BAD) {
      it(`${client} ${args.join(" ")}: usage on stderr, exit code 2, no request`, async () => {
        const [program, programArgs] = command();
        const result = await runClient(program, [...programArgs, ...args]);
        assert.equal(result.code, 2);
        assert.equal(result.stdout, "");
        assert.match(result.stderr, /^usage: .* URL \[COUNT\]\n$/);
      });
    }
  }
});
