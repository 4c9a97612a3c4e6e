// Live mode in Debian's Chromium against the real `trickle serve` (target/release/trickle,
// `make cli`), which this file starts on free ports and stops: the pages are files served by
// the harness's static server (a copy of target/site with the test pages written beside the
// docs page), the API another origin, so CORS is the browser's own. The pages are real files,
// not routed by Playwright: Chromium places a routed page in no address space, and then
// refuses it the loopback server unless the reader allows it (Local Network Access).
// A widget whose limit and costs are the server's agrees with it on every press, to the 429
// and its Retry-After, under each of the four algorithms; one that says 6/8s in front of a server limiting at 4/8s flags the
// limit on the first press and the status when the server refuses what the model lets in,
// and one with other costs flags Used; a press whose answer changes during its round trip
// (a stand-in server on the page's fake clock) is not flagged; a server that is down, never
// answers, refuses the page's origin, hides its headers, or is not allowed by the page's
// Content-Security-Policy is explained as text, and the page keeps working.

import assert from "node:assert/strict";
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { SITE, open, pageWith, serveApi, start, whenReady } from "./harness.mjs";

// The core from the package, in Node, for a stand-in server whose every moment the test sets.
const { Limiter, load } = await import(new URL("../../target/site/limiter.js", import.meta.url).href);
await load();

const AXE = createRequire(import.meta.url).resolve("axe-core/axe.min.js");

/** A loopback port nothing listens on: bound, then let go. */
async function closedPort() {
  const server = createServer();
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address();
  await new Promise((done) => server.close(done));
  return port;
}

let root;
let session;
let api;
let refusing;
let both;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "trickle-live-"));
  await cp(SITE, root, { recursive: true });
  [session, api, refusing, both] = await Promise.all([
    start({ root }),
    serveApi("live.toml"),
    serveApi("live-cors.toml"),
    serveApi("headers.toml"),
  ]);
});
after(async () => {
  await Promise.all([session?.close(), api?.stop(), refusing?.stop(), both?.stop()]);
  if (root) await rm(root, { recursive: true, force: true });
});

/** Runs in the page before its scripts: records both events, in order, as they bubble. */
function recordEvents() {
  window.__decisions = [];
  window.__mismatches = [];
  document.addEventListener("rate-limit-decision", (event) => window.__decisions.push(event.detail));
  document.addEventListener("rate-limit-mismatch", (event) => window.__mismatches.push(event.detail));
}

/**
 * Console lines a live widget makes the browser write that are not problems of the page:
 * Chromium logs every answer of 400 and above, and every request it refuses, by itself.
 */
const EXPECTED_LOGS = [
  // A 404 and a 429 the tests ask for; the 400 answers the HEAD request the widget sends,
  // without X-Client-Id, to find out whether a server that failed CORS is up at all.
  /Failed to load resource: the server responded with a status of (400|404|429)/,
  /Failed to load resource: net::ERR_CONNECTION_REFUSED/,
  /has been blocked by CORS policy/,
  /Failed to load resource: net::ERR_FAILED/,
  /violates the following Content Security Policy directive: "connect-src 'self'"/,
  /Refused to connect because it violates the document's Content Security Policy/,
];
const unexpected = (problems) =>
  problems.filter((problem) => !EXPECTED_LOGS.some((pattern) => pattern.test(problem)));

let pages = 0;

/** Writes a page holding `body` (and `head`) beside the docs page, opens it, waits for its widgets. */
async function openLive(body, { head = "", ...options } = {}) {
  const html = pageWith(
    `${body}\n<button id="page-button" onclick="this.textContent = 'still works'">page</button>`,
  ).replace("</head>", `${head}</head>`);
  const path = `live-${++pages}.html`;
  await writeFile(join(root, path), html);
  const opened = await open(session, { path, initScript: recordEvents, ...options });
  opened.ready = await whenReady(opened.page);
  return opened;
}

const decisions = (page) => page.evaluate(() => window.__decisions);
const mismatches = (page) => page.evaluate(() => window.__mismatches);

/** The widget's live region: the answer to the last press. */
const answerText = (page, selector) =>
  page.locator(`${selector} [part~="answer"]`).textContent();

/** Presses Hit (or the button for `status`) and waits for the server's answer to be shown. */
async function press(page, selector, status) {
  const before = (await decisions(page)).length;
  const button = status
    ? `${selector} [part~="hit"][data-status="${status}"]`
    : `${selector} [part~="hit"]`;
  await page.locator(button).click();
  await page.waitForFunction((count) => window.__decisions.length > count, before);
  const all = await decisions(page);
  assert.equal(all.length, before + 1, "one answer, one event");
  return all.at(-1);
}

/** Presses Hit where no answer can come, and waits for the widget to say why. */
async function pressUnanswered(page, selector) {
  await page.locator(`${selector} [part~="hit"]`).click();
  await page.locator(`${selector} [part~="answer"]`).getByText("No answer").waitFor();
  return answerText(page, selector);
}

/** The table of the last press, by field: what the server sent, the model, and whether they match. */
function shownTable(page, selector) {
  return page.evaluate((selector) => {
    const root = document.querySelector(selector).shadowRoot;
    const rows = {};
    for (const row of root.querySelectorAll("[data-field]")) {
      const cell = (part) => row.querySelector(`[part~="${part}"]`).textContent;
      rows[row.dataset.field] = [cell("server"), cell("model"), cell("match")];
    }
    return rows;
  }, selector);
}

/** Fails unless the page's own button still works and nothing unexpected was logged or thrown. */
async function assertPageUnharmed(page, problems) {
  await page.locator("#page-button").click();
  assert.equal(await page.locator("#page-button").textContent(), "still works");
  assert.deepEqual(unexpected(problems), [], "no console error but the browser's own network lines");
}

describe("against a server with the widget's limit", () => {
  it("agrees on every press, to the 429 and its Retry-After, and shows the real headers", async () => {
    const widget = "#flat";
    const { page, problems, ready, close } = await openLive(
      `<rate-limit-demo id="flat" limit="6/10m" endpoint="${api.url}/flat-long"></rate-limit-demo>`,
    );
    assert.deepEqual(ready, [true]);
    const shownId = await page.locator(`${widget} [part~="endpoint"] code`).nth(1).textContent();
    assert.match(shownId, /^demo-[0-9a-f-]{32,36}$/, "a random client id, shown");

    for (let n = 1; n <= 6; n++) {
      const detail = await press(page, widget);
      assert.deepEqual(detail.mismatches, [], `press ${n} agrees`);
      assert.deepEqual(
        [detail.server.status, detail.server.limit, detail.server.remaining, detail.server.used, detail.server.group],
        [200, "6/10m", 6 - n, 1, "flat-long"],
        `press ${n}: the server's answer`,
      );
      assert.deepEqual([detail.allowed, detail.status, detail.remaining, detail.cost], [true, 200, 6 - n, 1]);
      assert.equal(detail.server.clientId, shownId, "sent as X-Client-Id");
      assert.equal(detail.server.url, `${api.url}/flat-long`);
      assert.equal(detail.presses, n);
      assert.deepEqual(await shownTable(page, widget), {
        status: ["200 OK", "200 OK", "same"],
        limit: ["6/10m", "6/10m", "same"],
        remaining: [String(6 - n), String(6 - n), "same"],
        used: ["1", "1", "same"],
        group: ["flat-long", "–", "–"],
        "retry-after": ["–", "–", "–"],
      });
      assert.match(await answerText(page, widget), /^Server 200 OK · model 200 OK The server agrees with the model\.$/);
    }

    const denied = await press(page, widget);
    assert.deepEqual(denied.mismatches, [], "the 429 agrees");
    assert.deepEqual(
      [denied.server.status, denied.server.remaining, denied.server.used],
      [429, 0, 0],
    );
    assert.deepEqual([denied.allowed, denied.status, denied.cost], [false, 429, 0]);
    // Six in this window: one fits again once the window ends and a sixth of the next has passed.
    const wait = denied.server.retryAfter;
    assert.ok(Number.isInteger(wait) && wait >= 100 && wait <= 700, `Retry-After ${wait} is between 100 and 700 s`);
    assert.ok(Math.abs(denied.retryAfter - wait) <= 1, `the model's Retry-After ${denied.retryAfter} is the server's`);
    const table = await shownTable(page, widget);
    assert.deepEqual(table.status, ["429 Too Many Requests", "429 Too Many Requests", "same"]);
    assert.deepEqual(table["retry-after"], [String(wait), String(denied.retryAfter), "same"]);
    assert.deepEqual(table.used, ["0", "0", "same"]);
    assert.match(await answerText(page, widget), /^Server 429 Too Many Requests · model 429 Too Many Requests The server agrees/);
    assert.deepEqual(await mismatches(page), [], "no mismatch event");
    // The model is drawn as usual: six tokens in use, on the epoch clock.
    assert.equal(await page.locator(`${widget} [part~="remaining"]`).textContent(), "0 of 6 left");
    assert.ok(Math.abs(denied.t - Date.now()) < 60_000, "the model's time is the epoch's");
    await assertPageUnharmed(page, problems);
    await close();
  });

  it("with ESI's costs, charges each status what the server does; Reset starts both buckets afresh", async () => {
    const widget = "#esi";
    const { page, problems, close } = await openLive(
      `<rate-limit-demo id="esi" limit="6/10m" costs="esi" endpoint="${api.url}/fittings-long"></rate-limit-demo>`,
    );
    // The model runs the core's flow on the server's answers: reserve 1, settle at the price.
    const ok = await press(page, widget, 200);
    assert.deepEqual(ok.mismatches, []);
    assert.deepEqual([ok.server.status, ok.server.remaining, ok.server.used, ok.server.group], [200, 4, 2, "fittings-long"]);
    assert.deepEqual([ok.status, ok.reserved, ok.cost, ok.used], [200, 1, 2, 2]);
    assert.equal(ok.server.url, `${api.url}/fittings-long?status=200`, "the button's status is asked for");
    // A 404 costs 5: charged after answering, past the limit.
    const missing = await press(page, widget, 404);
    assert.deepEqual(missing.mismatches, []);
    assert.deepEqual([missing.server.status, missing.server.remaining, missing.server.used], [404, 0, 5]);
    assert.deepEqual([missing.status, missing.reserved, missing.cost], [404, 1, 5]);
    // 7 in use, or a little less when the presses straddle a window boundary of the real
    // clock and part of the first slides out: past the limit either way.
    assert.ok(missing.used > 6 && missing.used <= 7, `used ${missing.used} is past the limit`);
    const denied = await press(page, widget, 200);
    assert.deepEqual(denied.mismatches, []);
    assert.deepEqual([denied.server.status, denied.status], [429, 429]);
    assert.deepEqual([denied.reserved, denied.cost], [0, 0], "the 429 reserves and costs nothing");
    assert.ok(denied.used <= missing.used, "and spent nothing");

    const before = await page.locator(`${widget} [part~="endpoint"] code`).nth(1).textContent();
    await page.locator(`${widget} [part~="reset"]`).click();
    const after = await page.locator(`${widget} [part~="endpoint"] code`).nth(1).textContent();
    assert.notEqual(after, before, "a new client id: a new bucket on the server");
    assert.deepEqual((await shownTable(page, widget)).status, ["–", "–", "–"]);
    const fresh = await press(page, widget, 200);
    assert.deepEqual([fresh.server.status, fresh.server.remaining, fresh.mismatches], [200, 4, []]);
    assert.equal(fresh.server.clientId, after);
    assert.equal(fresh.presses, 1);
    await assertPageUnharmed(page, problems);
    await close();
  });

  for (const [algorithm, route] of [
    ["sliding-log", "log"],
    ["fixed", "fixed"],
    ["token-bucket", "bucket"],
  ]) {
    it(`agrees with the ${algorithm} too`, async () => {
      const widget = `#${route}`;
      const { page, problems, close } = await openLive(
        `<rate-limit-demo id="${route}" limit="4/10m" algorithm="${algorithm}" endpoint="${api.url}/${route}"></rate-limit-demo>`,
      );
      const answers = [];
      for (let n = 0; n < 6; n++) {
        const detail = await press(page, widget);
        assert.deepEqual(detail.mismatches, [], `press ${n + 1} agrees`);
        assert.equal(detail.algorithm, algorithm);
        answers.push(detail.server.status);
      }
      assert.deepEqual(answers.slice(0, 4), [200, 200, 200, 200]);
      // A fixed window may start again during the test; the other two refill too slowly.
      if (algorithm !== "fixed") assert.deepEqual(answers.slice(4), [429, 429]);
      await assertPageUnharmed(page, problems);
      await close();
    });
  }

  it("sends the client-id it is given", async () => {
    const { page, problems, close } = await openLive(
      `<rate-limit-demo id="named" client-id="docs-reader-1" endpoint="${api.url}/flat"></rate-limit-demo>`,
    );
    const detail = await press(page, "#named");
    assert.equal(detail.server.clientId, "docs-reader-1");
    assert.match(await page.locator(`#named [part~="endpoint"]`).textContent(), /as X-Client-Id docs-reader-1\.$/);
    await page.locator(`#named [part~="reset"]`).click();
    assert.match(await page.locator(`#named [part~="endpoint"]`).textContent(), /docs-reader-1\.$/, "kept on Reset");
    await assertPageUnharmed(page, problems);
    await close();
  });
});

describe("against a server with another limit", () => {
  it("flags the limit on the first press and the status when the server refuses what the model allows", async () => {
    const widget = "#docs";
    const { page, problems, close } = await openLive(
      `<rate-limit-demo id="docs" limit="6/8s" costs="esi" endpoint="${api.url}/strict"></rate-limit-demo>`,
    );
    // The server limits at 4/8s: a 200 (2 tokens) leaves it 2, the model 4.
    const first = await press(page, widget, 200);
    assert.deepEqual(first.mismatches, ["limit", "remaining"]);
    assert.deepEqual([first.server.limit, first.server.remaining], ["4/8s", 2]);
    assert.deepEqual([first.limit, first.remaining], [6, 4]);
    let table = await shownTable(page, widget);
    assert.deepEqual(table.limit, ["4/8s", "6/8s", "differs"]);
    assert.deepEqual(table.remaining, ["2", "4", "differs"]);
    assert.deepEqual(table.status, ["200 OK", "200 OK", "same"]);
    assert.match(
      await answerText(page, widget),
      /They differ\. The server's limit is 4\/8s; the widget's is 6\/8s\. The server has 2 tokens left; the model 4\./,
    );
    let events = await mismatches(page);
    assert.equal(events.length, 1, "one mismatch event");
    assert.deepEqual(events[0].fields, ["limit", "remaining"]);
    assert.deepEqual([events[0].server.limit, events[0].model.limit], ["4/8s", "6/8s"]);
    assert.match(events[0].message, /^They differ\. The server's limit is 4\/8s/);

    await press(page, widget, 200);
    // The server's 4 tokens are spent; the model's 6 are not.
    const refused = await press(page, widget, 200);
    assert.deepEqual(refused.mismatches, ["status", "limit"]);
    assert.equal(refused.server.status, 429);
    assert.ok(refused.server.retryAfter >= 1, "the server's Retry-After");
    assert.deepEqual([refused.allowed, refused.status], [true, 200], "the model lets it in");
    table = await shownTable(page, widget);
    assert.deepEqual(table.status, ["429 Too Many Requests", "200 OK", "differs"]);
    assert.match(await answerText(page, widget), /The server refused the request \(429\); the model lets it in\./);
    events = await mismatches(page);
    assert.equal(events.length, 3);
    assert.deepEqual(
      [events[2].fields, events[2].server.status, events[2].model.status],
      [["status", "limit"], 429, 200],
    );

    // A widget showing mismatches is still accessible.
    await page.addScriptTag({ path: AXE });
    const violations = await page.evaluate(async () =>
      (await window.axe.run(document.getElementById("docs"))).violations.map(
        (rule) => `${rule.id}: ${rule.nodes.map((node) => node.target.join(" >>> ")).join(", ")}`,
      ),
    );
    assert.deepEqual(violations, [], "axe finds no violation");
    await assertPageUnharmed(page, problems);
    await close();
  });
});

describe("against a server with other costs", () => {
  it("flags Used, and the Remaining it leads to", async () => {
    // The widget charges 1 for any answer; the server ESI's 2 for a 200.
    const { page, problems, close } = await openLive(
      `<rate-limit-demo id="cheap" limit="6/8s" endpoint="${api.url}/fittings"></rate-limit-demo>`,
    );
    const detail = await press(page, "#cheap");
    assert.deepEqual(detail.mismatches, ["remaining", "used"]);
    assert.deepEqual([detail.server.used, detail.cost], [2, 1]);
    const table = await shownTable(page, "#cheap");
    assert.deepEqual(table.used, ["2", "1", "differs"]);
    assert.deepEqual(table.limit, ["6/8s", "6/8s", "same"]);
    assert.match(
      await answerText(page, "#cheap"),
      /The server has 4 tokens left; the model 5\. The server charged 2 tokens for 200; the model 1: are the costs the same\?$/,
    );
    assert.deepEqual((await mismatches(page)).map((event) => event.fields), [["remaining", "used"]]);
    await assertPageUnharmed(page, problems);
    await close();
  });
});

describe("against a server of both dialects", () => {
  it("a policy agrees limit by limit, to a 429 from the burst, and shows the model's headers", async () => {
    const widget = "#pair";
    const { page, problems, close } = await openLive(
      `<rate-limit-demo id="pair" limit="burst=2/1s 6/1h" algorithm="fixed" costs="esi" headers="both" endpoint="${both.url}/pair"></rate-limit-demo>`,
    );
    // A 200 costs 2, the whole burst: the next press is refused by it unless its second ends
    // in between, when it is let in and the one after is refused.
    // The model cannot know when, inside the first press's round trip, the server counted it
    // (embedding.md says so): had that round trip crossed the end of a second, the server's
    // burst window and the model's could hold the first press apart, and the second press be
    // refused by one and let in by the other. So the first press leaves as a second begins.
    await new Promise((done) => setTimeout(done, 1_000 - (Date.now() % 1_000) + 5));
    const seen = [];
    for (let n = 0; n < 4 && !seen.some((detail) => detail.status === 429); n++) {
      const detail = await press(page, widget, 200);
      assert.deepEqual(detail.mismatches, [], `press ${n + 1} agrees: ${await answerText(page, widget)}`);
      seen.push(detail);
    }
    const refused = seen.at(-1);
    assert.deepEqual([refused.server.status, refused.status, refused.answeredBy], [429, 429, "burst"]);
    assert.deepEqual(
      refused.server.ietf.map(({ name, q, w, qu }) => [name, q, w, qu]),
      [
        ["burst", 2, 1, "tokens"],
        ["6/1h", 6, 3600, "tokens"],
      ],
    );
    assert.equal(refused.server.limit, "2/1s", "ESI's fields are the burst's, which answered");
    const table = await shownTable(page, widget);
    for (const field of ["quota:burst", "ratelimit:burst", "quota:6/1h", "ratelimit:6/1h", "status", "limit", "retry-after"]) {
      assert.equal(table[field]?.[2], "same", `${field}: ${table[field]}`);
    }
    assert.deepEqual(table["quota:burst"], ["q=2 w=1", "q=2 w=1", "same"]);
    // The model's own answer, as a server of both dialects sends it.
    const lines = await page.locator(`${widget} [part~="header-lines"]`).textContent();
    assert.match(lines, /^HTTP\/1\.1 429 Too Many Requests\nX-Ratelimit-Limit: 2\/1s\nX-Ratelimit-Remaining: 0\nX-Ratelimit-Used: 0\n/);
    assert.match(lines, /\nRateLimit-Policy: "burst";q=2;qu="tokens";w=1, "6\/1h";q=6;qu="tokens";w=3600\n/);
    assert.match(lines, /\nRateLimit: "burst";r=0;t=1, "6\/1h";r=\d;t=\d+\nRetry-After: 1$/);
    assert.deepEqual(refused.headers.at(-1), ["Retry-After", "1"]);
    assert.deepEqual(await mismatches(page), []);
    await assertPageUnharmed(page, problems);
    await close();
  });

  it("flags each limit the server has otherwise, by name", async () => {
    // The server's burst is 2/1s; this widget says 3/1s.
    const { page, problems, close } = await openLive(
      `<rate-limit-demo id="wrong" limit="burst=3/1s 6/1h" algorithm="fixed" costs="esi" endpoint="${both.url}/pair"></rate-limit-demo>`,
    );
    const detail = await press(page, "#wrong", 200);
    assert.deepEqual(detail.mismatches, ["limit", "remaining", "quota:burst", "ratelimit:burst"]);
    const table = await shownTable(page, "#wrong");
    assert.deepEqual(table["quota:burst"], ["q=2 w=1", "q=3 w=1", "differs"]);
    assert.equal(table["quota:6/1h"][2], "same");
    assert.equal(table["ratelimit:6/1h"][2], "same");
    assert.match(await answerText(page, "#wrong"), /The server's limit "burst" is q=2 w=1; the widget's q=3 w=1\./);
    const [event] = await mismatches(page);
    assert.deepEqual(event.fields, detail.mismatches);
    await assertPageUnharmed(page, problems);
    await close();
  });

  it("a single limit's live mode reads the IETF's fields too", async () => {
    const { page, problems, close } = await openLive(
      `<rate-limit-demo id="odd" limit="3/90500ms" algorithm="fixed" costs="2xx:1 3xx:1 4xx:1 5xx:0" endpoint="${both.url}/odd"></rate-limit-demo>`,
    );
    for (let n = 0; n < 4; n++) {
      const detail = await press(page, "#odd", 200);
      assert.deepEqual(detail.mismatches, [], `press ${n + 1}: ${await answerText(page, "#odd")}`);
      assert.deepEqual(detail.server.ietf.map(({ name, q, w }) => [name, q, w]), [["3/90500ms", 3, null]]);
    }
    const table = await shownTable(page, "#odd");
    assert.deepEqual(table["quota:3/90500ms"], ["q=3 w=none", "q=3 w=none", "same"]);
    assert.equal(table["ratelimit:3/90500ms"][2], "same");
    await assertPageUnharmed(page, problems);
    await close();
  });
});

/** When the round-trip tests' widgets open: a window boundary of 6/8s, and the next one. */
const START = 80_000;
const BOUNDARY = START + 8_000;

/**
 * A stand-in server at 6/8s, answered by Playwright on the page's own origin, on the page's
 * fake clock: the test says when each request leaves (the page's clock, at START when the
 * widget opens), when the server decides it (`timing.decideAt`) and when its answer comes
 * back (`timing.answerAt`, or null to leave the clock where it is); `timing.refuse` makes it
 * refuse whatever its bucket holds. `open(html)` opens the widget in front of it, and the
 * `close` it gives also frees the server.
 */
function standIn() {
  const server = new Limiter({ limit: "6/8s" });
  const timing = { decideAt: START, answerAt: null, refuse: false };
  let page;
  const answer = async (route) => {
    if (timing.answerAt !== null) await page.clock.setFixedTime(timing.answerAt);
    // The core's flow, reserve 1 and then settle the answer at 1; or a 429 that says nothing
    // is left.
    const decision = timing.refuse
      ? { status: 429, allowed: false, remaining: 0, cost: 0, retryAfter: 1 }
      : server.respond(timing.decideAt, 1, 1);
    const headers = {
      "x-ratelimit-limit": "6/8s",
      "x-ratelimit-remaining": String(decision.remaining),
      "x-ratelimit-used": String(decision.cost),
    };
    if (!decision.allowed) headers["retry-after"] = String(decision.retryAfter);
    await route.fulfill({ status: decision.status, headers, body: "" });
  };
  const open = async (html) => {
    const opened = await openLive(html, { clock: true, routes: [["**/api/flat", answer]] });
    page = opened.page;
    await page.clock.setFixedTime(START);
    const close = async () => {
      await opened.close();
      server.free();
    };
    return { ...opened, close };
  };
  return { server, timing, open };
}

describe("a press whose answer changes during its round trip", () => {
  it("agrees when the server's answer is the model's at either end", async () => {
    const { server, timing, open } = standIn();
    const { page, problems, close } = await open(
      `<rate-limit-demo id="timed" limit="6/8s" endpoint="/api/flat"></rate-limit-demo>`,
    );
    for (let n = 0; n < 6; n++) assert.deepEqual((await press(page, "#timed")).mismatches, []);

    // Six spent in [80 s, 88 s): in the next window one fits again once
    // 6 × (8000 − e) / 8000 + 1 ≤ 6, at e = 1334 ms. The request leaves at e = 1330, when the
    // model still refuses it; the server decides at 1336 and lets it in; the answer is back
    // at 1340, when the model lets it in too. Judged at the press alone, a mismatch.
    await page.clock.setFixedTime(BOUNDARY + 1_330);
    timing.decideAt = BOUNDARY + 1_336;
    timing.answerAt = BOUNDARY + 1_340;
    const straddling = await press(page, "#timed");
    assert.equal(straddling.server.status, 200);
    assert.deepEqual(straddling.mismatches, [], "no mismatch: the model lets it in by the time the answer is back");
    assert.deepEqual([straddling.allowed, straddling.t], [true, BOUNDARY + 1_340], "the model decided at the answer's end");
    assert.deepEqual([straddling.server.remaining, straddling.remaining], [0, 0]);

    // The same press answered 429 agrees too: the model refused it when it left.
    await page.evaluate(() => document.getElementById("timed").reset());
    server.reset();
    timing.decideAt = START;
    timing.answerAt = null;
    await page.clock.setFixedTime(START);
    for (let n = 0; n < 6; n++) await press(page, "#timed");
    await page.clock.setFixedTime(BOUNDARY + 1_330);
    timing.decideAt = BOUNDARY + 1_332;
    timing.answerAt = BOUNDARY + 1_340;
    const refused = await press(page, "#timed");
    assert.equal(refused.server.status, 429);
    assert.deepEqual(refused.mismatches, [], "no mismatch: the model refused it when it left");
    assert.deepEqual([refused.allowed, refused.t], [false, BOUNDARY + 1_330]);
    await assertPageUnharmed(page, problems);
    await close();
  });

  it("agrees on a later press when the server counted an earlier one at its answer's end", async () => {
    const { timing, open } = standIn();
    const { page, problems, close } = await open(
      `<rate-limit-demo id="recounted" limit="6/8s" endpoint="/api/flat"></rate-limit-demo>`,
    );
    for (let n = 0; n < 5; n++) assert.deepEqual((await press(page, "#recounted")).mismatches, []);

    // The sixth leaves 10 ms before the window ends and the server counts it 10 ms after, in
    // the next window; both ends let it in, so the model counts it when it left.
    await page.clock.setFixedTime(BOUNDARY - 10);
    timing.decideAt = BOUNDARY + 10;
    timing.answerAt = BOUNDARY + 20;
    const sixth = await press(page, "#recounted");
    assert.deepEqual([sixth.server.status, sixth.mismatches, sixth.t], [200, [], BOUNDARY - 10]);

    // 1.4 s on, the model (six in the window before) lets a seventh in: 6 × 6600 / 8000 + 1
    // = 5.95 ≤ 6. The server (five there, one in this window) refuses it: 5 × 6600 / 8000 +
    // 1 + 1 = 6.125. Counting the sixth at its answer instead, the model refuses it too.
    await page.clock.setFixedTime(BOUNDARY + 1_400);
    timing.decideAt = BOUNDARY + 1_400;
    timing.answerAt = null;
    const seventh = await press(page, "#recounted");
    assert.equal(seventh.server.status, 429);
    assert.deepEqual([seventh.allowed, seventh.mismatches], [false, []], "the sixth recounted, as the server counted it");
    assert.equal(await page.locator('#recounted [part~="remaining"]').textContent(), "0 of 6 left");
    // And the model now holds what the server does: at 1.6 s one fits both.
    await page.clock.setFixedTime(BOUNDARY + 1_600);
    timing.decideAt = BOUNDARY + 1_600;
    const eighth = await press(page, "#recounted");
    assert.deepEqual([eighth.server.status, eighth.allowed, eighth.mismatches], [200, true, []]);
    assert.deepEqual(await mismatches(page), [], "no mismatch event");
    await assertPageUnharmed(page, problems);
    await close();
  });

  it("still flags a server that decides otherwise, whatever the recount", async () => {
    const { timing, open } = standIn();
    const { page, problems, close } = await open(
      `<rate-limit-demo id="refusing" limit="6/8s" endpoint="/api/flat"></rate-limit-demo>`,
    );
    // A first press across the BOUNDARY, counted by the model when it left: one the recount
    // may move. Then a server that refuses with five tokens left.
    await page.clock.setFixedTime(BOUNDARY - 10);
    timing.decideAt = BOUNDARY + 10;
    timing.answerAt = BOUNDARY + 20;
    const first = await press(page, "#refusing");
    assert.deepEqual([first.server.status, first.mismatches, first.t], [200, [], BOUNDARY - 10]);
    await page.clock.setFixedTime(BOUNDARY + 100);
    timing.answerAt = null;
    timing.refuse = true;
    const refused = await press(page, "#refusing");
    assert.deepEqual([refused.server.status, refused.allowed, refused.mismatches], [429, true, ["status"]]);
    assert.equal((await mismatches(page)).length, 1, "one mismatch event");
    await assertPageUnharmed(page, problems);
    await close();
  });
});

describe("a request that gets no usable answer is explained as text", () => {
  it("a server that is down", async () => {
    const port = await closedPort();
    const { page, problems, close } = await openLive(
      `<rate-limit-demo id="down" endpoint="http://127.0.0.1:${port}/flat"></rate-limit-demo>`,
    );
    const text = await pressUnanswered(page, "#down");
    assert.equal(
      text,
      `No answer http://127.0.0.1:${port} could not be reached: is the server running, and is the address right?`,
    );
    assert.deepEqual(await decisions(page), [], "no decision without an answer");
    assert.equal(await page.locator("#down [part~=remaining]").textContent(), "6 of 6 left", "the model charged nothing");
    assert.equal(await page.evaluate(() => document.querySelector("#down").hit()), null);
    await assertPageUnharmed(page, problems);
    await close();
  });

  it("a server that never answers, after the 10 s timeout", async () => {
    // Takes every connection and says nothing, not even to the preflight.
    const sockets = new Set();
    const silent = createServer((socket) => sockets.add(socket));
    await new Promise((done) => silent.listen(0, "127.0.0.1", done));
    const { port } = silent.address();
    try {
      const { page, problems, close } = await openLive(
        `<rate-limit-demo id="silent" endpoint="http://127.0.0.1:${port}/flat"></rate-limit-demo>`,
      );
      // Before the click, so that the 10 s the page waits all fall after it, however slowly
      // the checks below run.
      const started = Date.now();
      await page.locator('#silent [part~="hit"]').click();
      assert.equal(await answerText(page, "#silent"), "Waiting for the server…");
      assert.equal(await page.locator('#silent [part~="answer"]').getAttribute("aria-busy"), "true");
      await page.locator('#silent [part~="answer"]').getByText("No answer").waitFor({ timeout: 20_000 });
      assert.ok(Date.now() - started >= 9_900, "not before the timeout");
      assert.equal(
        await answerText(page, "#silent"),
        `No answer http://127.0.0.1:${port} did not answer within 10 s; nothing was charged in the model.`,
      );
      assert.equal(await page.locator('#silent [part~="answer"]').getAttribute("aria-busy"), null);
      assert.deepEqual(await decisions(page), []);
      await assertPageUnharmed(page, problems);
      await close();
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((done) => silent.close(done));
    }
  });

  it("a server that refuses the page's origin (CORS)", async () => {
    const { page, problems, close } = await openLive(
      `<rate-limit-demo id="cors" endpoint="${refusing.url}/flat"></rate-limit-demo>`,
    );
    const text = await pressUnanswered(page, "#cors");
    const origin = new URL(session.url).origin;
    assert.equal(
      text,
      `No answer ${refusing.url} answered, but not to this page's origin (${origin}): the server must allow it with Access-Control-Allow-Origin and answer the preflight for the X-Client-Id header (CORS).`,
    );
    assert.deepEqual(await decisions(page), []);
    await assertPageUnharmed(page, problems);
    await close();
  });

  it("a page whose Content-Security-Policy does not allow the server", async () => {
    const head = `<meta http-equiv="Content-Security-Policy" content="connect-src 'self'">`;
    const { page, problems, close } = await openLive(
      `<rate-limit-demo id="csp" endpoint="${api.url}/flat"></rate-limit-demo>`,
      { head },
    );
    const text = await pressUnanswered(page, "#csp");
    assert.equal(
      text,
      `No answer This page's Content-Security-Policy does not allow requests to ${api.url}: add it to connect-src.`,
    );
    await assertPageUnharmed(page, problems);
    await close();
  });

  it("a URL that answers without the headers (the page's own server), relative to the page", async () => {
    const { page, problems, close } = await openLive(
      `<rate-limit-demo id="plain" endpoint="favicon.svg"></rate-limit-demo>`,
    );
    const detail = await press(page, "#plain");
    assert.equal(detail.server.url, new URL("favicon.svg", session.url).href);
    assert.deepEqual(
      [detail.server.status, detail.server.limit, detail.server.remaining, detail.server.used],
      [200, null, null, null],
    );
    assert.deepEqual(detail.mismatches, [], "only the status could be compared, and it agrees");
    assert.equal(
      await answerText(page, "#plain"),
      "Server 200 OK · model 200 OK The server answered 200 OK without X-Ratelimit-Limit, X-Ratelimit-Remaining and X-Ratelimit-Used headers (or the IETF's RateLimit-Policy and RateLimit) this page can read: it must send them, and, on another origin, list them with Retry-After in Access-Control-Expose-Headers. The status agrees with the model's; nothing else could be compared.",
    );
    const table = await shownTable(page, "#plain");
    assert.deepEqual(table.limit, ["none", "6/8s", "–"], "not compared");
    assert.deepEqual(table.status, ["200 OK", "200 OK", "same"]);
    assert.doesNotMatch(JSON.stringify(table), /NaN|undefined|null/);
    await assertPageUnharmed(page, problems);
    await close();
  });
});

describe("bad endpoint and client-id values", () => {
  const FORM = 'write the URL of a rate-limited route, as in endpoint="https://api.example.com/fittings"';
  const ID = "use 1 to 64 visible ASCII characters (letters, digits, punctuation; no spaces), or leave client-id out for a random id per widget";
  const ROWS = [
    [{ endpoint: "" }, `endpoint="" is empty: ${FORM}, or leave endpoint out`],
    [{ endpoint: "   " }, `endpoint="   " is empty: ${FORM}, or leave endpoint out`],
    [{ endpoint: "http://" }, `endpoint="http://" is not a URL: ${FORM}`],
    [{ endpoint: "https://example.com:99999/x" }, `endpoint="https://example.com:99999/x" is not a URL: ${FORM}`],
    [
      { endpoint: "ftp://example.com/x" },
      `endpoint="ftp://example.com/x" is not allowed: live mode sends requests over http or https only; ${FORM}`,
    ],
    [
      { endpoint: "javascript:alert(1)" },
      `endpoint="javascript:alert(1)" is not allowed: live mode sends requests over http or https only; ${FORM}`,
    ],
    [
      { endpoint: "http://user:secret@127.0.0.1/flat" },
      `endpoint="http://user:secret@127.0.0.1/flat" holds a user name or password, which the widget never sends: leave them out`,
    ],
    [
      { endpoint: "/flat", compare: "" },
      `endpoint="/flat" cannot be used with compare: live mode compares one algorithm with the server; leave compare out, and write the server's algorithm in algorithm`,
    ],
    [{ endpoint: "/flat", "client-id": "" }, `client-id="" is not allowed: ${ID}`],
    [{ endpoint: "/flat", "client-id": "two words" }, `client-id="two words" is not allowed: ${ID}`],
    [{ endpoint: "/flat", "client-id": "x".repeat(65) }, `client-id="${"x".repeat(65)}" is not allowed: ${ID}`],
    [{ endpoint: "/flat", "client-id": "café" }, `client-id="café" is not allowed: ${ID}`],
  ];

  it("each is explained in place of the widget, and a good value brings it back", async () => {
    const { page, problems, close } = await openLive(
      `<rate-limit-demo id="widget" limit="6/8s" endpoint="${api.url}/flat"></rate-limit-demo>`,
    );
    const good = { endpoint: `${api.url}/flat`, compare: null, "client-id": null };
    const set = (attributes) =>
      page.evaluate((attributes) => {
        const widget = document.getElementById("widget");
        for (const [name, value] of Object.entries(attributes)) {
          if (value === null) widget.removeAttribute(name);
          else widget.setAttribute(name, value);
        }
      }, attributes);
    const error = page.locator('#widget [part~="error"]');
    for (const [attributes, message] of ROWS) {
      await set({ ...good, ...attributes });
      await error.waitFor();
      assert.equal(await error.textContent(), message);
      assert.equal(await page.locator('#widget [part~="panel"]').isVisible(), false);
      await set(good);
      await page.locator('#widget [part~="panel"]').waitFor();
      assert.equal(await error.isVisible(), false);
    }
    // A good value works again: a real answer from the server.
    const detail = await press(page, "#widget");
    assert.deepEqual([detail.server.status, detail.mismatches], [200, []]);
    await assertPageUnharmed(page, problems);
    await close();
  });
});
