// The headers view in the three engines: a widget with `limit="burst=2/1s 3/4s"` and
// `headers="both"` shows, for each Hit, the head of the answer a server of both dialects
// sends: ESI's X-Ratelimit-* of the limit nearest to refusing, RateLimit-Policy and
// RateLimit with every limit, and Retry-After on the 429 the burst answers. What it shows is
// the event's `headers`, whose numbers are the event's decisions (the core's): `r` each
// limit's remaining, `t` its `resetS`, ESI's the nearest limit's. That the strings are the
// server's byte for byte is ietf-strings.test.mjs's job.
//
// Chromium also checks one limit with headers="ietf", a bad headers value and one beside
// compare, each explained in place of the widget, and that a page of plain widgets fetches
// no headers code; Firefox ESR and WebKit (over WebDriver, as policy.test.mjs drives them) the
// three presses.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { launchEngine, open, pageWith, serveSiteWith, start, whenReady } from "./harness.mjs";
import { ENGINES } from "./webdriver.mjs";

const WIDGET = `<rate-limit-demo id="headers" limit="burst=2/1s 3/4s" headers="both"></rate-limit-demo>`;
const POLICY_FIELD = '"burst";q=2;w=1, "3/4s";q=3;w=4';

// Run in the page (Playwright's evaluate and WebDriver's executeScript alike).

/** Records each decision's headers, decisions and the view's text when the event fires. */
function watch() {
  const element = document.getElementById("headers");
  window.__seen = [];
  element.addEventListener("rate-limit-decision", ({ detail }) => {
    window.__seen.push({
      status: detail.status,
      answeredBy: detail.answeredBy,
      retryAfter: detail.retryAfter,
      headers: detail.headers,
      limits: detail.decisions.map(({ name, remaining, cost, allowed, resetS }) => ({ name, remaining, cost, allowed, resetS })),
      lines: element.shadowRoot.querySelector('[part~="header-lines"]').textContent,
    });
  });
}

function press() {
  const element = document.getElementById("headers");
  const before = window.__seen.length;
  element.hit();
  return window.__seen.length === before + 1 ? window.__seen.at(-1) : null;
}

/** What one press must show: the view is the event's headers, and they the core's numbers. */
function assertShown(seen) {
  assert.ok(seen, "one press, one decision");
  const { status, headers, limits, lines } = seen;
  assert.equal(lines, [`HTTP/1.1 ${status === 429 ? "429 Too Many Requests" : "200 OK"}`, ...headers.map(([name, value]) => `${name}: ${value}`)].join("\n"));
  const value = Object.fromEntries(headers);
  // The limit nearest to refusing: the one that answered, else the fewest left.
  const fewest = Math.min(...limits.map((own) => own.remaining));
  const nearest = seen.answeredBy ?? limits.find((own) => own.remaining === fewest).name;
  const own = limits.find((limit) => limit.name === nearest);
  assert.equal(value["X-Ratelimit-Limit"], { burst: "2/1s", "3/4s": "3/4s" }[nearest]);
  assert.equal(value["X-Ratelimit-Remaining"], String(own.remaining));
  assert.equal(value["X-Ratelimit-Used"], status === 429 ? "0" : String(own.cost));
  assert.equal(value["RateLimit-Policy"], POLICY_FIELD);
  assert.equal(
    value.RateLimit,
    limits.map(({ name, remaining, resetS }) => `"${name}";r=${remaining}${resetS === null ? "" : `;t=${resetS}`}`).join(", "),
  );
  assert.equal(value["Retry-After"], status === 429 ? String(seen.retryAfter) : undefined);
}

/** Three quick presses: two let in, the third refused by the burst. */
function assertThreePresses(seen) {
  seen.forEach(assertShown);
  assert.deepEqual(seen.map(({ status }) => status), [200, 200, 429]);
  assert.equal(seen[2].answeredBy, "burst");
  assert.deepEqual(seen[0].headers.slice(0, 3), [
    ["X-Ratelimit-Limit", "2/1s"],
    ["X-Ratelimit-Remaining", "1"],
    ["X-Ratelimit-Used", "1"],
  ]);
  // Both limits hold a token: t for each, within the floating window's 2W.
  assert.match(Object.fromEntries(seen[0].headers).RateLimit, /^"burst";r=1;t=[12], "3\/4s";r=2;t=[1-8]$/);
  assert.equal(seen[2].headers.at(-1)[0], "Retry-After");
}

describe("Chromium", () => {
  let session;
  before(async () => {
    session = await start();
  });
  after(() => session?.close());

  it("each Hit's headers in both dialects, to the burst's 429", async () => {
    const opened = await open(session, { path: "headers.html", html: pageWith(WIDGET), clock: true });
    const { page } = opened;
    try {
      assert.deepEqual(await whenReady(page), [true]);
      assert.equal(
        await page.locator('#headers [part~="header-lines"]').textContent(),
        "Press Hit to see the headers of its answer.",
      );
      await page.evaluate(watch);
      const seen = [];
      for (let n = 0; n < 3; n++) seen.push(await page.evaluate(press));
      assertThreePresses(seen);
      assert.equal(await page.locator('#headers [part~="headers"]').getAttribute("data-dialect"), "both");
      await page.locator('#headers [part~="reset"]').click();
      assert.equal(
        await page.locator('#headers [part~="header-lines"]').textContent(),
        "Press Hit to see the headers of its answer.",
      );
      assert.deepEqual(opened.problems, []);
    } finally {
      await opened.close();
    }
  });

  it("one limit with headers=ietf: the IETF's fields alone, named by the limit's text", async () => {
    const body = `<rate-limit-demo id="headers" limit="6/8s" cost="2" headers="ietf"></rate-limit-demo>`;
    const opened = await open(session, { path: "one.html", html: pageWith(body), clock: true });
    try {
      assert.deepEqual(await whenReady(opened.page), [true]);
      await opened.page.evaluate(watch);
      const seen = await opened.page.evaluate(press);
      // A cost of 2 counts tokens, not requests.
      assert.deepEqual(seen.headers, [
        ["RateLimit-Policy", '"6/8s";q=6;qu="tokens";w=8'],
        ["RateLimit", `"6/8s";r=4;t=${seen.limits[0].resetS}`],
      ]);
      // The floating window frees its next token within 2W.
      assert.ok(seen.limits[0].resetS >= 1 && seen.limits[0].resetS <= 16);
      assert.deepEqual(opened.problems, []);
    } finally {
      await opened.close();
    }
  });

  it("a bad headers value, and headers beside compare, are explained in place of the widget", async () => {
    const body = `<rate-limit-demo id="bad" headers="x-ratelimit"></rate-limit-demo><rate-limit-demo id="both" headers="both" compare></rate-limit-demo>`;
    const opened = await open(session, { path: "bad.html", html: pageWith(body) });
    try {
      assert.deepEqual(await whenReady(opened.page), [false, false]);
      assert.equal(
        await opened.page.locator('#bad [part~="error"]').textContent(),
        `headers="x-ratelimit" is not allowed: write esi (X-Ratelimit-*), ietf (RateLimit-Policy and RateLimit) or both, as trickle serve's headers setting does, or leave headers out`,
      );
      assert.match(
        await opened.page.locator('#both [part~="error"]').textContent(),
        /^headers="both" cannot be used with compare: the headers view shows the one answer to each Hit, and compare mode answers each Hit with several algorithms; leave one of them out$/,
      );
      // A good value brings the widget back.
      await opened.page.evaluate(() => document.getElementById("bad").setAttribute("headers", "esi"));
      await opened.page.locator('#bad [part~="headers"][data-dialect="esi"]').waitFor();
    } finally {
      await opened.close();
    }
  });

  it("a page of plain widgets fetches no headers code", async () => {
    const requested = [];
    const opened = await open(session, { path: "plain.html", html: pageWith(`<rate-limit-demo limit="6/8s"></rate-limit-demo>`) });
    opened.page.on("request", (request) => requested.push(new URL(request.url()).pathname));
    try {
      await opened.page.reload();
      assert.deepEqual(await whenReady(opened.page), [true]);
      assert.deepEqual(requested.filter((path) => /policy|extras|headers/.test(path)), []);
      await opened.page.evaluate(() => document.querySelector("rate-limit-demo").setAttribute("headers", "both"));
      await opened.page.locator('rate-limit-demo [part~="header-lines"]').waitFor();
      assert.deepEqual(requested.filter((path) => /policy|extras|headers/.test(path)), ["/policy.js", "/trickle_extras_bg.wasm"]);
    } finally {
      await opened.close();
    }
  });
});

describe("Firefox ESR and WebKit", () => {
  let server;
  before(async () => {
    server = await serveSiteWith("trickle-headers-", { "headers.html": pageWith(WIDGET) });
  });
  after(() => server?.close());

  for (const engine of ENGINES) {
    describe(engine.name, () => {
      let browser;
      before(async () => {
        browser = await launchEngine(engine, "headers");
      });
      after(() => browser?.close());

      it("each Hit's headers in both dialects, to the burst's 429", async () => {
        const { driver } = browser;
        await driver.get(`${server.url}/headers.html`);
        const ready = await driver.executeAsyncScript((done) => {
          customElements
            .whenDefined("rate-limit-demo")
            .then(() => document.getElementById("headers").ready)
            .then(done, (error) => done(String(error)));
        });
        assert.equal(ready, true);
        await driver.executeScript(watch);
        // Three presses in one script: within the burst's second on the engine's own clock.
        const seen = await driver.executeScript(`${press}; return [press(), press(), press()];`);
        assertThreePresses(seen);
      });
    });
  }
});
