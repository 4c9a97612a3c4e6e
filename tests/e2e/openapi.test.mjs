// Widgets that take their limit from `trickle serve`'s own /openapi.json (`openapi` and
// `route`), in Debian's Chromium against the real server (fixtures/openapi.toml: groups of
// one limit and a group of two), which this file starts on free ports and stops; the pages
// are files beside a copy of the site, the API another origin, as in live.test.mjs.
//
// A live widget given the document and a one-limit route shows that limit, writes none of
// its own, and agrees with the server on every press to the 429 and its Retry-After. A
// live widget given the two-limit route (and the server's algorithm, which the document says
// only in prose) shows both limits, named as the server names them, agrees with the server on
// every press to the 429, and the server's problem body names the same limit as refusing. A `limit` beside the document that says
// otherwise is said to differ, and the document's runs. Every bad spec (a server that is
// down, one that refuses the page's origin, a page that is not JSON, a route or method the
// document lacks, an operation without x-rate-limit, one with bad numbers) is a message in
// place of the widget, the page unharmed and nothing unhandled; mending the attribute brings
// the widget back. A document that arrives after the attributes changed again is dropped. A
// page of plain widgets never fetches the document's reader.

import assert from "node:assert/strict";
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { SITE, open, pageWith, serveApi, start, whenReady } from "./harness.mjs";

let root;
let session;
let api;
let refusing;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "trickle-openapi-"));
  await cp(SITE, root, { recursive: true });
  [session, api, refusing] = await Promise.all([
    start({ root }),
    serveApi("openapi.toml"),
    // Allows only an origin no test page has.
    serveApi("live-cors.toml"),
  ]);
});
after(async () => {
  await Promise.all([session?.close(), api?.stop(), refusing?.stop()]);
  if (root) await rm(root, { recursive: true, force: true });
});

/** Runs in the page before its scripts: every decision, and anything thrown or unhandled. */
function recordEvents() {
  window.__decisions = [];
  window.__unhandled = [];
  document.addEventListener("rate-limit-decision", (event) => window.__decisions.push(event.detail));
  window.addEventListener("unhandledrejection", (event) => window.__unhandled.push(String(event.reason)));
  window.addEventListener("error", (event) => window.__unhandled.push(String(event.message)));
}

/** The browser's own lines about requests the tests make fail on purpose. */
const EXPECTED_LOGS = [
  /Failed to load resource: the server responded with a status of 429/,
  /Failed to load resource: net::ERR_CONNECTION_REFUSED/,
  /has been blocked by CORS policy/,
  /Failed to load resource: net::ERR_FAILED/,
];

let pages = 0;

/** Writes a page holding `body` beside the site, opens it (with `routes`), waits for its widgets. */
async function openPage(body, routes = []) {
  const path = `openapi-${++pages}.html`;
  await writeFile(join(root, path), pageWith(body));
  const opened = await open(session, { path, initScript: recordEvents, routes });
  opened.ready = await whenReady(opened.page);
  return opened;
}

/** Fails if anything was thrown or left unhandled, or logged but the expected network lines. */
async function assertClean({ page, problems }) {
  assert.deepEqual(await page.evaluate(() => window.__unhandled), [], "nothing thrown, no unhandled rejection");
  const unexpected = problems.filter((line) => !EXPECTED_LOGS.some((pattern) => pattern.test(line)));
  assert.deepEqual(unexpected, [], "no console error but the browser's network lines");
}

/** Presses `selector`'s Hit (or the button for `status`) and resolves to the decision's detail. */
async function press(page, selector, status) {
  const before = await page.evaluate(() => window.__decisions.length);
  const button = status ? `${selector} [part~="hit"][data-status="${status}"]` : `${selector} [part~="hit"]`;
  await page.locator(button).click();
  await page.waitForFunction((count) => window.__decisions.length > count, before);
  return page.evaluate(() => window.__decisions.at(-1));
}

const text = (page, selector) => page.locator(selector).textContent();

describe("a widget given trickle serve's OpenAPI document", () => {
  it("in live mode, shows a one-limit route's limit and agrees with the server to the 429", async () => {
    const document = `${api.url}/openapi.json`;
    const opened = await openPage(
      `<rate-limit-demo id="market" openapi="${document}" route="GET /markets/prices" costs="esi" endpoint="${api.url}/markets/prices"></rate-limit-demo>`,
    );
    const { page } = opened;
    assert.deepEqual(opened.ready, [true]);
    assert.equal(await text(page, "#market .limit-code"), "6/10m", "the document's limit, none written");
    assert.equal(
      await text(page, '#market [part~="source"]'),
      "The limit of GET /markets/prices (group prices), from the API's OpenAPI document.",
    );
    assert.equal(await page.locator('#market [part~="source"] a').getAttribute("href"), document);

    // ESI's costs: a 200 costs 2, so three fit the server's 6, and the fourth is refused.
    for (const left of [4, 2, 0]) {
      const detail = await press(page, "#market", 200);
      assert.deepEqual(detail.mismatches, [], `agrees with ${left} left`);
      assert.deepEqual([detail.server.status, detail.server.limit, detail.server.remaining, detail.server.group], [200, "6/10m", left, "prices"]);
      assert.deepEqual([detail.status, detail.remaining], [200, left]);
    }
    const denied = await press(page, "#market", 200);
    assert.deepEqual(denied.mismatches, [], "the 429 agrees, Retry-After included");
    assert.deepEqual([denied.server.status, denied.status], [429, 429]);
    assert.ok(Number.isInteger(denied.server.retryAfter) && denied.server.retryAfter > 0, `Retry-After ${denied.server.retryAfter}`);
    await assertClean(opened);
    await opened.close();
  });

  it("in live mode, shows a two-limit route's policy and agrees with the server to the 429 from the same limit", async () => {
    const opened = await openPage(
      `<rate-limit-demo id="pair" openapi="${api.url}/openapi.json" route="GET /pair" algorithm="sliding-log"
         endpoint="${api.url}/pair" client-id="openapi-e2e-pair"></rate-limit-demo>`,
    );
    const { page } = opened;
    assert.deepEqual(opened.ready, [true]);
    assert.equal(await text(page, "#pair .limit-code"), "burst=2/1m 5/1h");
    const rows = await page.locator('#pair [part~="policy-limit"]').evaluateAll((each) => each.map((row) => row.dataset.limit));
    assert.deepEqual(rows, ["burst", "5/1h"], "the limits named as the server names them");

    // Every answer but a 429 costs 1: the burst's two fit, and the third is the burst's 429.
    for (const left of [1, 0]) {
      const detail = await press(page, "#pair");
      assert.deepEqual(detail.mismatches, [], `agrees with the burst's ${left} left`);
      assert.deepEqual([detail.server.status, detail.status, detail.remaining], [200, 200, left]);
    }
    const denied = await press(page, "#pair");
    assert.deepEqual(denied.mismatches, [], "the 429 agrees, Retry-After included");
    assert.deepEqual([denied.server.status, denied.status, denied.answeredBy], [429, 429, "burst"]);
    assert.ok(Number.isInteger(denied.server.retryAfter) && denied.server.retryAfter > 0, `Retry-After ${denied.server.retryAfter}`);

    // The server's own word on which limit refused: its problem body, for the same client id
    // (a 429 costs nothing, so asking charges no limit).
    const violated = await page.evaluate(async (url) => {
      const response = await fetch(url, { headers: { "X-Client-Id": "openapi-e2e-pair" } });
      return [response.status, (await response.json())["violated-policies"]];
    }, `${api.url}/pair`);
    assert.deepEqual(violated, [429, ["burst"]], "the server refuses it by burst too");
    await assertClean(opened);
    await opened.close();
  });

  it("with limit beside it, says when they differ, and runs the document's", async () => {
    const route = `openapi="${api.url}/openapi.json" route="GET /markets/orders"`;
    const opened = await openPage(
      `<rate-limit-demo id="same" limit="6/8000ms" ${route}></rate-limit-demo>
       <rate-limit-demo id="other" limit="150/15m" ${route}></rate-limit-demo>`,
    );
    const { page } = opened;
    assert.deepEqual(opened.ready, [true, true]);
    assert.equal(await page.locator('#same [part~="differs"]').count(), 0, "6/8000ms is 6/8s");
    assert.equal(
      await text(page, '#other [part~="source"]'),
      'Differs: limit="150/15m" is not what the API\'s OpenAPI document says for GET /markets/orders (group market), 6/8s: this widget shows the document\'s.',
    );
    assert.equal(await page.locator('#other [part~="differs"]').count(), 1);
    assert.equal(await text(page, "#other .limit-code"), "6/8s");
    // Mended, the note goes.
    await page.evaluate(() => document.getElementById("other").setAttribute("limit", "6/8s"));
    await page.locator('#other [part~="source"]').getByText("The limit of GET /markets/orders").waitFor();
    await assertClean(opened);
    await opened.close();
  });
});

describe("a document that comes after the attributes changed again", () => {
  it("is dropped: the widget shows what its attributes say now", async () => {
    // A document the test holds back until it says so, with another limit for the route.
    const slow = `${api.url}/held/openapi.json`;
    let asked;
    const requested = new Promise((done) => (asked = done));
    let release;
    const released = new Promise((done) => (release = done));
    const hold = async (route) => {
      asked();
      await released;
      const body = { paths: { "/markets/prices": { get: { "x-rate-limit": { "window-size": "1h", "max-tokens": 99 } } } } };
      await route.fulfill({ contentType: "application/json", headers: { "access-control-allow-origin": "*" }, body: JSON.stringify(body) });
    };
    const opened = await openPage(
      `<rate-limit-demo id="switch" openapi="${api.url}/openapi.json" route="GET /markets/prices"></rate-limit-demo>`,
      [[slow, hold]],
    );
    const { page } = opened;
    assert.deepEqual(opened.ready, [true]);
    await page.evaluate((url) => document.getElementById("switch").setAttribute("openapi", url), slow);
    await requested;
    await page.evaluate((url) => document.getElementById("switch").setAttribute("openapi", url), `${api.url}/openapi.json`);
    await page.locator('#switch [part~="panel"]').waitFor();
    assert.equal(await text(page, "#switch .limit-code"), "6/10m");
    // A second widget reading the held document is ready only after the first's read of it
    // has come back: by then, the first has dropped it.
    await page.evaluate((url) => {
      document.body.insertAdjacentHTML("beforeend", `<rate-limit-demo id="witness" openapi="${url}" route="GET /markets/prices"></rate-limit-demo>`);
    }, slow);
    release();
    assert.equal(await page.evaluate(() => document.getElementById("witness").ready), true);
    assert.equal(await text(page, "#witness .limit-code"), "99/1h", "the held document came");
    assert.equal(await text(page, "#switch .limit-code"), "6/10m", "and the widget that asked before kept what it says now");
    await assertClean(opened);
    await opened.close();
  });
});

/** A loopback port nothing listens on: bound, then let go. */
async function closedPort() {
  const server = createServer();
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address();
  await new Promise((done) => server.close(done));
  return port;
}

describe("a bad or missing spec", () => {
  it("is a message in place of the widget, and mending it brings the widget back", async () => {
    await writeFile(
      join(root, "bad-numbers.json"),
      JSON.stringify({ openapi: "3.1.0", paths: { "/x": { get: { "x-rate-limit": { group: "x", "window-size": "15m", "max-tokens": "150" } } } } }),
    );
    const port = await closedPort();
    const doc = `${api.url}/openapi.json`;
    const cases = [
      ["down", `openapi="http://127.0.0.1:${port}/openapi.json" route="GET /x"`, /could not be fetched .*: is the server running and the address right/],
      ["cors", `openapi="${refusing.url}/openapi.json" route="GET /flat"`, /answered, but not to this page's origin \(http:\/\/127\.0\.0\.1:\d+\): the server must allow it with Access-Control-Allow-Origin \(CORS\)/],
      ["html", `openapi="/index.html" route="GET /x"`, /^The OpenAPI document at http:\/\/127\.0\.0\.1:\d+\/index\.html is HTML, not JSON: write the URL of the API's OpenAPI document in JSON/],
      ["path", `openapi="${doc}" route="GET /nope"`, /has no path \/nope: its paths are \/markets\/orders, \/markets\/prices, \/openapi\.json, \/pair$/],
      ["method", `openapi="${doc}" route="POST /pair"`, /has no POST operation on \/pair: it has GET$/],
      ["unlimited", `openapi="${doc}" route="GET /openapi.json"`, /^GET \/openapi\.json in \S+ has no x-rate-limit: the document does not say this route's limit/],
      ["numbers", `openapi="/bad-numbers.json" route="GET /x"`, /x-rate-limit's max-tokens is "150"; expected a whole number of tokens/],
      ["no-openapi", `route="GET /pair"`, /^route="GET \/pair" needs openapi/],
      ["no-route", `openapi="${doc}"`, /needs route, the operation whose limit to show/],
      // The document's policy is refused by a mode as a written one would be, with where it came from.
      ["compare", `openapi="${doc}" route="GET /pair" compare`, /^limit="burst=2\/1m 5\/1h" is a policy of several limits, and compare cannot be used with one/],
    ];
    const opened = await openPage(
      cases.map(([id, attributes]) => `<rate-limit-demo id="${id}" ${attributes}></rate-limit-demo>`).join("\n"),
    );
    const { page } = opened;
    assert.deepEqual(opened.ready, cases.map(() => false), "every one shows an error instead");
    for (const [id, , message] of cases) {
      assert.equal(await page.locator(`#${id} [part~="panel"]`).isHidden(), true, `${id}: no widget`);
      assert.match(await text(page, `#${id} [part~="error"] p:first-child`), message, id);
    }
    assert.equal(
      await text(page, "#compare .error-detail"),
      `The limit burst=2/1m 5/1h is GET /pair's x-rate-limit in the OpenAPI document at ${doc}.`,
    );
    // Mended, the widget comes back.
    await page.evaluate(() => document.getElementById("path").setAttribute("route", "GET /pair"));
    await page.locator('#path [part~="policy-limit"]').first().waitFor();
    assert.equal(await page.locator("#path [part~='error']").isHidden(), true);
    await assertClean(opened);
    await opened.close();
  });
});

describe("what a page downloads", () => {
  it("the reader once for the page, the document once per URL; a page of plain widgets neither", async () => {
    const requested = [];
    const watch = ({ page }) => page.on("request", (request) => requested.push(new URL(request.url()).pathname));
    const plain = await openPage(`<rate-limit-demo></rate-limit-demo><rate-limit-demo limit="150/15m"></rate-limit-demo>`);
    watch(plain);
    await plain.page.reload();
    assert.deepEqual(await whenReady(plain.page), [true, true]);
    assert.ok(requested.includes("/rate-limit-demo.js"), "the requests were seen");
    assert.equal(requested.filter((path) => path === "/openapi.js").length, 0, "no reader for plain widgets");
    await plain.close();

    requested.length = 0;
    const spec = `openapi="${api.url}/openapi.json"`;
    const several = await openPage(
      `<rate-limit-demo ${spec} route="GET /markets/prices"></rate-limit-demo>
       <rate-limit-demo ${spec} route="GET /markets/orders"></rate-limit-demo>`,
    );
    watch(several);
    await several.page.reload();
    assert.deepEqual(await whenReady(several.page), [true, true]);
    assert.equal(requested.filter((path) => path === "/openapi.js").length, 1, "the reader, once");
    assert.equal(requested.filter((path) => path === "/openapi.json").length, 1, "the document, once for both");
    await assertClean(several);
    await several.close();
  });
});
