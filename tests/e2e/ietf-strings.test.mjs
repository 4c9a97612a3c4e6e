// The headers view writes what `trickle serve` sends, byte for byte. A real `trickle serve`
// (TRICKLE, as live.test.mjs starts it) with `headers = "both"` answers a run of requests;
// each is mirrored in the core's policy through the same binding the widget uses
// (www/pkg/trickle_extras.js, in Node), under the server's flow (reserve 1, settle at the
// status's price), and the widget's writer (www/src/ratelimit-fields.js) turns the mirror's
// decision into header values, which must equal the server's strings exactly:
// X-Ratelimit-Limit, -Remaining, -Used, RateLimit-Policy, RateLimit and Retry-After.
//
// The server decides some time between a request's sending and its answer; the mirror decides
// at both ends, and the server's value must be one of the two (each field is a step function
// of time, so a round trip of a few ms crosses at most one step). Fixed windows, and no
// request within MARGIN_MS of a window boundary, make the counts the server holds the
// mirror's; a run with a round trip that crossed one anyway starts over.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { REPO, serveApi } from "./harness.mjs";

const { initSync, RawPolicy, policy_buffer: policyBuffer } = await import(
  new URL("../../www/pkg/trickle_extras.js", import.meta.url).href
);
const { POLICY_FIELDS, readPolicyDecision } = await import("../../www/src/policy-decision.js");
const { responseHeaders } = await import("../../www/src/ratelimit-fields.js");

const wasm = initSync({ module: readFileSync(join(REPO, "www", "pkg", "trickle_extras_bg.wasm")) });

const MARGIN_MS = 150;
/** The headers compared, as the server and the writer name them. */
const COMPARED = ["X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Used", "RateLimit-Policy", "RateLimit", "Retry-After"];

/** ESI's prices, and the flat table of the `odd` group (tests/e2e/fixtures/headers.toml). */
const ESI = (status) => (status === 429 || status >= 500 ? 0 : status >= 400 ? 5 : status >= 300 ? 1 : 2);
const FLAT = (status) => (status >= 500 || status === 429 ? 0 : 1);

/**
 * The mirror of one route group: the requests the server has seen, replayed into a fresh
 * RawPolicy for each decision, so that the two ends of a round trip are decided apart.
 */
class Mirror {
  #history = [];
  constructor(text, price) {
    this.text = text;
    this.price = price;
    const raw = new RawPolicy(text, "fixed");
    this.limits = Array.from({ length: raw.count }, (_, index) => ({
      name: raw.name(index),
      text: raw.limit(index),
      tokens: raw.tokens(index),
      windowMs: raw.window_ms(index),
      windowS: raw.window_s(index) < 0 ? null : raw.window_s(index),
    }));
    raw.free();
  }

  /** The headers the writer makes for a request answered `status`, decided at `now`. */
  expected(now, status, dialect = "both") {
    const raw = new RawPolicy(this.text, "fixed");
    try {
      for (const { t, status: past } of this.#history) raw.respond(t, 1, this.price(past));
      const code = raw.respond(now, 1, this.price(status));
      const fields = new Float64Array(wasm.memory.buffer, policyBuffer(), POLICY_FIELDS);
      const decision = readPolicyDecision(fields, code, this.limits, "fixed");
      return { decision, headers: new Map(responseHeaders(decision, { limits: this.limits, unit: "tokens", dialect })) };
    } finally {
      raw.free();
    }
  }

  seen(t, status) {
    this.#history.push({ t, status });
  }

  /** Forgets every request, for a run over again on a new client's buckets. */
  forget() {
    this.#history = [];
  }
}

/** A round trip that crossed a window boundary: the server decided in one window or the other. */
class Straddled extends Error {}

/** Sleeps until no window of `windowsMs` starts or ends within MARGIN_MS. */
async function awayFromBoundaries(windowsMs) {
  for (;;) {
    const now = Date.now();
    const wait = Math.max(
      0,
      ...windowsMs.map((window) => {
        const into = now % window;
        if (into < MARGIN_MS) return MARGIN_MS - into;
        return window - into < MARGIN_MS ? window - into + MARGIN_MS : 0;
      }),
    );
    if (wait === 0) return;
    await new Promise((done) => setTimeout(done, wait));
  }
}

let api;
before(async () => {
  api = await serveApi("headers.toml");
});
after(() => api?.stop());

/**
 * Sends `statuses` (each asked for with `?status=`) to `route` as one client, compares every
 * answer's headers with the writer's from the mirror, and returns the answers' statuses and
 * the values compared. A run with a round trip that crossed a window boundary (on a loaded
 * machine one can outlast MARGIN_MS) cannot know which window the server counted it in, so
 * it starts over as a new client, up to three times.
 */
async function run(route, mirror, statuses) {
  const crossed = [];
  for (let attempt = 0; attempt < 3; attempt++) {
    mirror.forget();
    try {
      return await runOnce(route, mirror, statuses);
    } catch (error) {
      if (!(error instanceof Straddled)) throw error;
      crossed.push(error.message);
    }
  }
  assert.fail(`every run had a round trip cross a window boundary: ${crossed.join("; ")}`);
}

async function runOnce(route, mirror, statuses) {
  const client = `strings-${route}-${Date.now()}`;
  const windowsMs = [1_000, ...mirror.limits.map(({ windowMs }) => windowMs)];
  const answers = [];
  for (const asked of statuses) {
    await awayFromBoundaries(windowsMs);
    const sent = Date.now();
    const response = await fetch(`${api.url}/${route}?status=${asked}`, { headers: { "X-Client-Id": client } });
    const answered = Date.now();
    await response.arrayBuffer();
    if (windowsMs.some((window) => Math.floor(sent / window) !== Math.floor(answered / window))) {
      throw new Straddled(`${route} ${asked}: sent at ${sent}, answered at ${answered}`);
    }
    const { status } = response;
    const ends = [mirror.expected(sent, status), mirror.expected(answered, status)];
    for (const { decision } of ends) {
      assert.equal(decision.status === 429, status === 429, `${route} ${asked}: the mirror's answer is the server's (${status})`);
    }
    const server = Object.fromEntries(COMPARED.map((name) => [name, response.headers.get(name)]));
    const matching = ends.find(({ headers }) => COMPARED.every((name) => (headers.get(name) ?? null) === server[name]));
    assert.ok(
      matching,
      `${route} ${asked} → ${status}: the server sent ${JSON.stringify(server)}, the writer ${ends
        .map(({ headers }) => JSON.stringify(Object.fromEntries(headers)))
        .join(" or ")}`,
    );
    mirror.seen(sent, status);
    answers.push({ status, headers: server });
  }
  return answers;
}

describe("the writer's strings are trickle serve's", () => {
  it("for a burst and a sustained limit, to a 429 from each", async () => {
    const mirror = new Mirror("burst=2/1s 6/1h", ESI);
    const answers = await run("pair", mirror, [200, 200, 404, 200, 200, 200]);
    // A 200 costs 2, all of the burst: the next press in the same second is refused by it.
    const statuses = answers.map(({ status }) => status);
    assert.ok(statuses.includes(429), `a 429 among ${statuses}`);
    const refused = answers.find(({ status }) => status === 429);
    assert.match(refused.headers["Retry-After"], /^\d+$/);
    assert.match(refused.headers.RateLimit, /^"burst";r=\d+;t=\d+, "6\/1h";r=\d+;t=\d+$/);
    assert.equal(refused.headers["RateLimit-Policy"], '"burst";q=2;qu="tokens";w=1, "6/1h";q=6;qu="tokens";w=3600');
  });

  it("for one limit whose window is no whole number of seconds", async () => {
    const mirror = new Mirror("3/90500ms", FLAT);
    const answers = await run("odd", mirror, [200, 200, 200, 200]);
    assert.equal(answers[0].headers["RateLimit-Policy"], '"3/90500ms";q=3;qu="tokens"');
    assert.equal(answers[0].headers["X-Ratelimit-Limit"], "3/90500ms");
  });
});
