// The <rate-limit-demo> element in Debian's Chromium, against the release build: what a
// reader does (press Hit until a 429, wait it out) and what a docs author relies on (the
// event, several widgets on a page, the ESI buttons, errors that stay inside the element).

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  collectEvents,
  events,
  framesRequested,
  open,
  pageWith,
  partText,
  start,
  whenReady,
} from "./harness.mjs";

let session;
before(async () => {
  session = await start();
});
after(() => session?.close());

/**
 * Opens a test page holding `body` (at `options.path`, by default a page at the root),
 * waits for its widgets, and starts collecting events.
 */
async function openWith(body, options = {}) {
  const { path = "fixture.html", script, ...rest } = options;
  const opened = await open(session, { path, html: pageWith(body, script), ...rest });
  opened.ready = await whenReady(opened.page);
  await collectEvents(opened.page);
  return opened;
}

/** Clicks the Hit button of the widget `selector` and returns the decision it dispatched. */
async function press(page, selector = "rate-limit-demo", status) {
  const before = (await events(page)).length;
  const button = status
    ? `${selector} [part~="hit"][data-status="${status}"]`
    : `${selector} [part~="hit"]`;
  await page.locator(button).click();
  const all = await events(page);
  assert.equal(all.length, before + 1, "one press dispatches exactly one event");
  return all.at(-1).detail;
}

/** The formula as shown, one string per number. */
async function shownFormula(page, selector = "rate-limit-demo") {
  const parts = {};
  for (const part of ["previous", "overlap", "current", "used"]) {
    parts[part] = await partText(page, selector, part);
  }
  return parts;
}

/**
 * Where the fake-clock tests start: late enough that every page has loaded by then (the
 * clock runs while the page loads, and cannot be sent back), and a whole number of every
 * window used here, so that window boundaries fall where the comments say.
 */
const START = 24_000;

const DETAIL_FIELDS = {
  allowed: "boolean",
  status: "number",
  cost: "number",
  used: "number",
  previous: "number",
  current: "number",
  overlap: "number",
  limit: "number",
  remaining: "number",
  t: "number",
};

describe("a reader pressing Hit", () => {
  it("is allowed six times, then gets a 429 whose numbers the widget shows", async () => {
    const { page, problems, ready } = await openWith(`<rate-limit-demo limit="6/8s"></rate-limit-demo>`, {
      clock: true,
    });
    assert.deepEqual(ready, [true]);
    await page.clock.pauseAt(START + 1_000);

    for (let n = 1; n <= 6; n++) {
      const detail = await press(page);
      assert.equal(detail.allowed, true, `press ${n}`);
      assert.equal(detail.status, 200);
      assert.equal(detail.used, n);
      assert.equal(detail.remaining, 6 - n);
      assert.equal(detail.retryAfterMs, null);
      if (n === 1) {
        const said = await partText(page, "rate-limit-demo", "answer");
        assert.equal(said, "200 OK Cost 1 token: 5 of 6 left.", "no reserve to speak of without costs");
      }
    }
    const denied = await press(page);
    for (const [field, type] of Object.entries(DETAIL_FIELDS)) {
      assert.equal(typeof denied[field], type, `detail.${field}`);
    }
    // Without costs a Hit costs what it asks, known before answering: nothing is reserved,
    // and the detail has the fields it always had.
    assert.deepEqual(Object.keys(denied).sort(), [
      "algorithm", "allowed", "cost", "current", "decisions", "disagreement", "elapsedMs", "limit",
      "outcome", "overlap", "presses", "previous", "remaining", "retryAfter", "retryAfterMs",
      "status", "t", "used", "windowMs", "wronglyAllowed", "wronglyLimited",
    ]);
    assert.equal(denied.allowed, false);
    assert.equal(denied.status, 429);
    assert.equal(denied.cost, 1);
    assert.equal(denied.limit, 6);
    assert.equal(denied.used, 6, "a denied request spends nothing");
    assert.equal(denied.previous, 0);
    assert.equal(denied.current, 6);
    // Six tokens spent in the window that began at START: one comes back only once the
    // window has rolled and 1/6 of it has slid out of view, at 8 s + 8/6 s.
    assert.equal(denied.t, START + 1_000);
    assert.equal(denied.t + denied.retryAfterMs, START + 8_000 + Math.ceil(8_000 / 6));

    assert.deepEqual(await shownFormula(page), {
      previous: String(denied.previous),
      overlap: denied.overlap.toFixed(3),
      current: String(denied.current),
      used: denied.used.toFixed(2),
    });
    const answer = await partText(page, "rate-limit-demo", "answer");
    assert.match(answer, /429 Too Many Requests/);
    assert.match(answer, new RegExp(`Retry-After: ${Math.ceil(denied.retryAfterMs / 1000)}\\b`));
    assert.deepEqual(problems, []);
  });

  it("is allowed again exactly when Retry-After has passed, not a millisecond sooner", async () => {
    const { page, problems } = await openWith(`<rate-limit-demo limit="3/1s"></rate-limit-demo>`, {
      clock: true,
    });
    await page.clock.pauseAt(START + 500);
    for (let n = 0; n < 3; n++) await press(page);
    const denied = await press(page);
    assert.equal(denied.allowed, false);

    await page.clock.runFor(denied.retryAfterMs - 1);
    const early = await press(page);
    assert.equal(early.allowed, false, "1 ms early");
    assert.equal(early.retryAfterMs, 1);

    await page.clock.runFor(1);
    const again = await press(page);
    assert.equal(again.allowed, true);
    assert.match(await partText(page, "rate-limit-demo", "answer"), /200 OK/);
    assert.deepEqual(problems, []);
  });

  it("shows the tokens trickling back as the previous window slides out", async () => {
    const { page, problems } = await openWith(`<rate-limit-demo limit="6/8s"></rate-limit-demo>`, {
      clock: true,
    });
    await page.clock.pauseAt(START + 7_000);
    for (let n = 0; n < 6; n++) await press(page);

    // From 8 s on (after START), the six tokens sit in the previous window and slide out
    // over 8 s. The fake clock runs animation frames every 16 ms; these times are frames.
    const seen = [];
    for (let t = 8_000; t < 16_000; t += 2_000) {
      await page.clock.runFor(t === 8_000 ? 1_000 : 2_000);
      const { used, overlap, previous, current } = await shownFormula(page);
      seen.push(Number(used));
      assert.equal(previous, "6", `at ${t} ms`);
      assert.equal(current, "0", `at ${t} ms`);
      assert.equal(overlap, ((16_000 - t) / 8_000).toFixed(3), `at ${t} ms`);
    }
    assert.deepEqual(seen, [6, 4.5, 3, 1.5]);
    // At 16 s that window is no longer the previous one: nothing is left in use.
    await page.clock.runFor(2_000);
    assert.deepEqual(await shownFormula(page), { previous: "0", overlap: "1.000", current: "0", used: "0.00" });
    assert.match(await partText(page, "rate-limit-demo", "next"), /All 6 tokens available/);
    assert.deepEqual(problems, []);
  });

  it("waits out a real Retry-After on the page's own clock", async () => {
    const { page, problems } = await openWith(`<rate-limit-demo limit="2/1500ms"></rate-limit-demo>`);
    let denied;
    for (let n = 0; n < 5 && !denied; n++) {
      const detail = await press(page);
      if (!detail.allowed) denied = detail;
    }
    assert.ok(denied, "a 429 within five quick presses");
    await page.waitForTimeout(denied.retryAfterMs + 20);
    assert.equal((await press(page)).allowed, true);
    assert.deepEqual(problems, []);
  });

  it("works from the keyboard", async () => {
    const { page } = await openWith(`<rate-limit-demo limit="6/8s"></rate-limit-demo>`);
    await page.keyboard.press("Tab");
    const focused = await page.evaluate(
      () => document.activeElement?.shadowRoot?.activeElement?.getAttribute("part"),
    );
    assert.match(focused, /\bhit\b/, "Tab reaches the Hit button first");
    await page.keyboard.press("Enter");
    await page.keyboard.press(" ");
    const decisions = await events(page);
    assert.equal(decisions.length, 2);
    assert.equal(decisions[1].detail.used, 2);
  });

  it("has a Hit button by name and a polite live region for the answer", async () => {
    const { page } = await openWith(`<rate-limit-demo></rate-limit-demo>`);
    await page.getByRole("button", { name: /^Hit/ }).click();
    assert.equal((await events(page)).length, 1);
    const live = page.locator('rate-limit-demo [part~="answer"]');
    assert.equal(await live.getAttribute("role"), "status");
    assert.equal(await live.getAttribute("aria-live"), "polite");
    assert.match(await live.textContent(), /200 OK/);
  });
});

describe("a docs author", () => {
  it("gets independent widgets when a page has several", async () => {
    const { page, problems } = await openWith(
      `<rate-limit-demo id="a" limit="6/8s"></rate-limit-demo>
       <rate-limit-demo id="b" limit="2/1s" algorithm="sliding-log"></rate-limit-demo>`,
      { clock: true },
    );
    await page.clock.pauseAt(START + 100);
    for (let n = 0; n < 3; n++) await press(page, "#b");
    const first = await press(page, "#a");
    assert.equal(first.allowed, true);
    assert.equal(first.used, 1, "hits on b did not touch a");
    const targets = (await events(page)).map((event) => event.widget);
    assert.deepEqual(targets, ["b", "b", "b", "a"]);
    assert.equal((await events(page))[2].detail.allowed, false, "b's own third hit was denied");
    assert.deepEqual(problems, []);
  });

  it("shows ESI's response-dependent costs with costs=\"esi\"", async () => {
    const { page, problems } = await openWith(`<rate-limit-demo limit="6/8s" costs="esi"></rate-limit-demo>`, {
      clock: true,
    });
    await page.clock.pauseAt(START + 100);
    const buttons = page.getByRole("button", { name: /^Hit/ });
    assert.equal(await buttons.count(), 4);
    const statuses = await page
      .locator('rate-limit-demo [part~="hit"]')
      .evaluateAll((all) => all.map((button) => button.dataset.status));
    assert.deepEqual(statuses, ["200", "304", "404", "500"]);

    // ESI reserves one token before answering, then settles at what the answer cost.
    const notFound = await press(page, "rate-limit-demo", 404);
    assert.deepEqual(
      [notFound.allowed, notFound.status, notFound.reserved, notFound.cost, notFound.used],
      [true, 404, 1, 5, 5],
    );
    const answer = () => partText(page, "rate-limit-demo", "answer");
    assert.equal(await answer(), "404 Not Found Reserved 1 token, charged 5 after answering: 1 of 6 left.");
    const ok = await press(page, "rate-limit-demo", 200);
    assert.deepEqual([ok.allowed, ok.status, ok.reserved, ok.cost, ok.used], [true, 200, 1, 2, 7]);
    assert.equal(
      await answer(),
      "200 OK Reserved 1 token, charged 2 after answering: 7.00 of 6 in use, over the limit until it slides out.",
    );
    const serverError = await press(page, "rate-limit-demo", 500);
    assert.deepEqual(
      [serverError.allowed, serverError.status, serverError.reserved, serverError.cost],
      [false, 429, 0, 0],
    );
    assert.equal(serverError.used, 7, "a 429 costs nothing");
    assert.deepEqual(serverError.decisions[0], { ...serverError.decisions[0], reserved: 0, cost: 0 });
    assert.match(
      await answer(),
      /^429 Too Many Requests · Retry-After: \d+ 1 token fits again in [\d.]+ s; nothing was reserved, and the 429 costs nothing\.$/,
    );
    assert.deepEqual(problems, []);
  });

  it("in costs mode, shows what each Hit reserved and what its answer was charged", async () => {
    const { page, problems } = await openWith(
      `<rate-limit-demo limit="6/8s" cost="2" costs="esi" algorithm="sliding-log"></rate-limit-demo>`,
      { clock: true },
    );
    await page.clock.pauseAt(START + 100);
    const answer = () => partText(page, "rate-limit-demo", "answer");
    assert.equal(
      await answer(),
      "Press a Hit button to send a request; the server reserves 2 tokens, answers, then charges what the answer costs.",
    );
    // [status pressed, reserved, charged, used after, the status line]: a 200 settles above
    // the reserve, a 304 below it, a 500 refunds it all, a 404 goes past the limit, and then
    // the reserve of 2 no longer fits.
    const PRESSES = [
      [200, 2, 2, 2, "200 OK Reserved 2 tokens, charged 2 after answering: 4 of 6 left."],
      [304, 2, 1, 3, "304 Not Modified Reserved 2 tokens, charged 1 after answering: 3 of 6 left."],
      [500, 2, 0, 3, "500 Internal Server Error Reserved 2 tokens, charged 0 after answering: 3 of 6 left."],
      [404, 2, 5, 8, "404 Not Found Reserved 2 tokens, charged 5 after answering: 8.00 of 6 in use, over the limit until it slides out."],
    ];
    for (const [status, reserved, charged, used, said] of PRESSES) {
      await page.clock.runFor(100);
      const detail = await press(page, "rate-limit-demo", status);
      assert.deepEqual(
        [detail.allowed, detail.status, detail.reserved, detail.cost, detail.used],
        [true, status, reserved, charged, used],
        `${status}`,
      );
      assert.equal(detail.decisions[0].reserved, reserved);
      assert.equal(await answer(), said);
      assert.equal(await partText(page, "rate-limit-demo", "used"), used.toFixed(2), "the formula follows the settle");
    }
    const refused = await press(page, "rate-limit-demo", 200);
    assert.deepEqual(
      [refused.allowed, refused.status, refused.reserved, refused.cost, refused.used],
      [false, 429, 0, 0, 8],
    );
    // The log holds 2 at +200 ms, 1 at +300 and 5 at +500 (the 500's reserve came back):
    // 2 fit again only once the 5 slides out, a whole window after this press at +500.
    assert.equal(refused.retryAfterMs, 8_000);
    assert.match(await answer(), /2 tokens fit again in [\d.]+ s; nothing was reserved, and the 429 costs nothing\.$/);
    const status = await page.locator('rate-limit-demo [part~="answer"]').evaluate((line) => [
      line.getAttribute("role"),
      line.getAttribute("aria-live"),
    ]);
    assert.deepEqual(status, ["status", "polite"], "read out as it changes");
    assert.deepEqual(problems, []);
  });

  it("is reconfigured by changing an attribute", async () => {
    const { page } = await openWith(`<rate-limit-demo limit="6/8s"></rate-limit-demo>`);
    await press(page);
    await page.evaluate(() => document.querySelector("rate-limit-demo").setAttribute("limit", "1/1h"));
    const first = await press(page);
    assert.deepEqual([first.allowed, first.limit, first.used], [true, 1, 1], "a fresh bucket of 1");
    assert.equal((await press(page)).allowed, false);
  });

  it("sees a bad attribute as text inside the element, and the page keeps working", async () => {
    const { page, problems, ready } = await openWith(
      `<rate-limit-demo limit="&lt;img src=x onerror=alert(1)&gt;"></rate-limit-demo>
       <button id="page-button" onclick="this.textContent = 'still works'">page</button>`,
    );
    assert.deepEqual(ready, [false]);
    const error = await partText(page, "rate-limit-demo", "error");
    assert.match(error, /limit "<img src=x onerror=alert\(1\)>" has no '\/'; write a limit as TOKENS\/WINDOW/);
    assert.equal(await page.locator("rate-limit-demo img").count(), 0, "shown as text, never as HTML");
    assert.equal(await page.locator('rate-limit-demo [part~="panel"]').isVisible(), false);

    await page.locator("#page-button").click();
    assert.equal(await page.locator("#page-button").textContent(), "still works");

    await page.evaluate(() => document.querySelector("rate-limit-demo").setAttribute("limit", "6/8s"));
    assert.equal(await page.locator('rate-limit-demo [part~="panel"]').isVisible(), true);
    assert.equal((await press(page)).allowed, true, "fixing the attribute brings the widget back");
    assert.deepEqual(problems, []);
  });

  for (const [attribute, message] of [
    [`algorithm="leaky"`, /unknown algorithm "leaky"; use floating, sliding-log, fixed or token-bucket/],
    [`cost="1.5"`, /cost "1\.5".*whole number/],
    [`cost="7"`, /cost "7".*from 0 to 6/],
    [`costs="github"`, /costs="github": cost table entry "github" has no .*or name the preset "esi"/],
  ]) {
    it(`explains ${attribute}`, async () => {
      const { page, problems } = await openWith(`<rate-limit-demo limit="6/8s" ${attribute}></rate-limit-demo>`);
      assert.match(await partText(page, "rate-limit-demo", "error"), message);
      assert.deepEqual(problems, []);
    });
  }

  it("sees a short message when the wasm cannot load, and the page around it works", async () => {
    const { page, problems, ready } = await openWith(
      `<p id="before">before</p>
       <rate-limit-demo limit="6/8s"></rate-limit-demo>
       <button id="page-button" onclick="this.textContent = 'still works'">page</button>`,
      { blockWasm: true },
    );
    assert.deepEqual(ready, [false]);
    assert.match(await partText(page, "rate-limit-demo", "error"), /could not load/i);
    await page.locator("#page-button").click();
    assert.equal(await page.locator("#page-button").textContent(), "still works");
    // The failed request itself is logged by the browser; nothing else may be.
    assert.deepEqual(
      problems.filter((problem) => !problem.includes("net::ERR_FAILED")),
      [],
    );
  });

  it("runs the floating window from the default module, and fetches the other algorithms' only when asked", async () => {
    const fetched = [];
    const { page, ready, problems } = await openWith(`<rate-limit-demo limit="2/1h"></rate-limit-demo>`, {
      routes: [["**/*.{js,wasm}", (route) => (fetched.push(new URL(route.request().url()).pathname), route.continue())]],
    });
    assert.deepEqual(ready, [true]);
    assert.equal((await press(page)).allowed, true);
    const algorithmsModule = (paths) => paths.filter((path) => /algorithms-glue\.js|trickle_algorithms_bg\.wasm/.test(path));
    assert.deepEqual(algorithmsModule(fetched), [], "a default widget fetches only the default module");
    await page.evaluate(() => document.querySelector("rate-limit-demo").setAttribute("algorithm", "token-bucket"));
    await page.locator('rate-limit-demo [part~="panel"]').waitFor();
    await page.waitForFunction(() => !document.querySelector("rate-limit-demo").shadowRoot.querySelector(".loading") ||
      document.querySelector("rate-limit-demo").shadowRoot.querySelector(".loading").hidden);
    assert.equal(await page.locator('rate-limit-demo [part~="error"]').isVisible(), false);
    assert.equal((await press(page)).allowed, true);
    assert.equal((await press(page)).allowed, true);
    // A token bucket of 2 per hour refills one token in 30 minutes.
    const refused = await press(page);
    assert.equal(refused.allowed, false);
    assert.ok(refused.retryAfter > 0 && refused.retryAfter <= 1_800, `Retry-After ${refused.retryAfter}`);
    assert.deepEqual(algorithmsModule(fetched), ["/algorithms-glue.js", "/trickle_algorithms_bg.wasm"]);
    assert.deepEqual(problems, []);
  });

  it("loads from any path: the module finds its wasm next to itself", async () => {
    const { page, ready, problems } = await openWith(`<rate-limit-demo></rate-limit-demo>`, {
      path: "guide/limits/page.html",
      script: "../../rate-limit-demo.js",
    });
    assert.deepEqual(ready, [true]);
    assert.equal((await press(page)).allowed, true);
    assert.deepEqual(problems, []);
  });

  it("survives the script being included twice", async () => {
    const { page, ready, problems } = await openWith(
      `<script type="module" src="/rate-limit-demo.js?copy=2"></script>
       <rate-limit-demo></rate-limit-demo>`,
    );
    assert.deepEqual(ready, [true]);
    assert.equal((await press(page)).allowed, true);
    assert.deepEqual(problems, []);
  });
});

describe("the page stays quiet", () => {
  it("asks for no animation frames while idle, and stops once the tokens are back", async () => {
    const { page } = await openWith(`<rate-limit-demo limit="2/1s"></rate-limit-demo>`, { clock: true });
    await page.clock.pauseAt(START + 100);
    const frames = () => framesRequested(page);
    await frames();
    await page.clock.runFor(2_000);
    assert.equal(await frames(), 0, "no frames before any hit");

    await press(page);
    await page.clock.runFor(500);
    assert.ok((await frames()) > 0, "frames while the token comes back");

    // The hit slides off the 2-window timeline 2 s after it was made; then all is still.
    await page.clock.runFor(3_000);
    const settled = await frames();
    await page.clock.runFor(5_000);
    assert.equal(await frames(), settled, "no frames once nothing changes");
  });

  it("keeps the numbers live once a second, without animation frames, for reduced motion", async () => {
    const { page } = await openWith(`<rate-limit-demo limit="6/8s"></rate-limit-demo>`, {
      clock: true,
      reducedMotion: "reduce",
    });
    await page.clock.pauseAt(START + 7_000);
    await framesRequested(page);
    for (let n = 0; n < 6; n++) await press(page);
    // Two seconds into the next window, the six tokens have slid out by a quarter.
    await page.clock.runFor(3_000);
    assert.equal((await shownFormula(page)).used, "4.50");
    assert.equal(await framesRequested(page), 0);
  });
});
