// Policy mode in the three engines: a widget with `limit="2/1s 3/4s"` meets a 429 from the
// short limit first (two presses fill it, the long one still has room), then, once the short
// limit has a token back, a 429 from the long one (three in 4 s). Each answer is checked
// against the event's detail, which is the core's PolicyDecision read through the binding:
// the limit named as the one that answered, its row marked, Retry-After in the status line,
// and each row's numbers. No console error, nothing thrown.
//
// Chromium runs it on Playwright's fake clock, so the waits are exact and instant, and also
// checks that a page of plain widgets never fetches policy mode or its WebAssembly. Firefox
// ESR and WebKit (over WebDriver, as engines.test.mjs drives them) run it on their own
// clock: each wait is for the widget to draw the short limit's token back, polled, bounded
// by the Retry-After the core gave.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { launchEngine, open, pageWith, serveSiteWith, start, whenReady } from "./harness.mjs";
import { ENGINES } from "./webdriver.mjs";

const SHORT = "2/1s";
const LONG = "3/4s";
const WIDGET = `<rate-limit-demo id="policy" limit="${SHORT} ${LONG}"></rate-limit-demo>`;

// Run in the page (Playwright's evaluate and WebDriver's executeScript alike): plain DOM
// calls, the same in every engine.

/**
 * Records every decision of the widget with what its answer and rows show when the event
 * fires (the element draws a decision before dispatching it), and every console error and
 * uncaught exception, for the engines whose driver cannot read the console.
 */
function watch() {
  const element = document.getElementById("policy");
  const root = element.shadowRoot;
  window.__decisions = [];
  window.__problems = [];
  const error = console.error;
  console.error = (...args) => {
    window.__problems.push(args.map(String).join(" "));
    error.apply(console, args);
  };
  window.addEventListener("error", (event) => window.__problems.push(String(event.message)));
  window.addEventListener("unhandledrejection", (event) => window.__problems.push(String(event.reason)));
  element.addEventListener("rate-limit-decision", ({ detail }) => {
    const rows = [...root.querySelectorAll('[part~="policy-limit"]')].map((row) => ({
      name: row.dataset.limit,
      used: row.querySelector('[part~="used"]').textContent,
      remaining: row.querySelector('[part~="remaining"]').textContent,
      answered: !row.querySelector('[part~="answered-by"]').hidden,
    }));
    const { allowed, status, answeredBy, retryAfterMs, retryAfter, decisions } = detail;
    window.__decisions.push({
      detail: {
        allowed,
        status,
        answeredBy,
        retryAfterMs,
        retryAfter,
        limits: decisions.map(({ name, used, remaining, limit, retryAfterMs: wait }) => ({
          name,
          used,
          remaining,
          limit,
          retryAfterMs: wait,
        })),
      },
      rows,
      answer: root.querySelector('[part~="answer"]').textContent,
    });
  });
}

function decisions() {
  return window.__decisions;
}

function problems() {
  return window.__problems;
}

/** The widget's Hit button, scrolled into view at once (see engines.test.mjs's hitButton). */
function hitButton() {
  const button = document.getElementById("policy").shadowRoot.querySelector('[part~="hit"]');
  button.scrollIntoView({ block: "center", behavior: "instant" });
  return button;
}

/** The whole tokens the limit `name`'s row shows as left, drawn by the widget's frames. */
function tokensLeft(name) {
  const row = document.getElementById("policy").shadowRoot.querySelector(`[data-limit="${name}"]`);
  return Number.parseInt(row.querySelector('[part~="remaining"]').textContent, 10);
}

/** What one refusal must show: the core's answer, in the status line and on the rows. */
function assertRefusal({ detail, rows, answer }, limit) {
  assert.deepEqual([detail.allowed, detail.status, detail.answeredBy], [false, 429, limit], answer);
  const own = detail.limits.find((entry) => entry.name === limit);
  // The policy's Retry-After is when every limit fits: the answering limit's own wait.
  assert.equal(detail.retryAfterMs, own.retryAfterMs);
  assert.ok(detail.retryAfterMs > 0, `a wait: ${detail.retryAfterMs}`);
  assert.equal(detail.retryAfter, Math.ceil(detail.retryAfterMs / 1000));
  for (const other of detail.limits) {
    if (other.name !== limit) assert.ok(other.retryAfterMs === null || other.retryAfterMs <= own.retryAfterMs);
  }
  assert.match(answer, new RegExp(`^429 Too Many Requests · Retry-After: ${detail.retryAfter} Answered by ${limit}\\b`));
  assert.deepEqual(
    rows.map(({ name, answered }) => [name, answered]),
    [
      [SHORT, limit === SHORT],
      [LONG, limit === LONG],
    ],
    "the row of the limit that answered is marked, and only it",
  );
  assertRowsShow({ detail, rows });
}

/** Each row shows its own limit's numbers from the decision. */
function assertRowsShow({ detail, rows }) {
  assert.deepEqual(
    rows.map(({ name, used, remaining }) => [name, used, remaining]),
    detail.limits.map(({ name, used, remaining, limit }) => [name, used.toFixed(2), `${remaining} of ${limit} left`]),
  );
}

/**
 * The scenario, over `pressThree` (three presses in a row, resolving to their decisions: on
 * a real clock all within the short limit's second), `press` (one click on Hit, resolving to
 * that press's decision) and `waitForToken` (resolves once the short limit's row shows a
 * token back, given the wait the core announced). Returns the two refusals.
 */
async function shortThenLong(pressThree, press, waitForToken) {
  const [one, two, short] = await pressThree();
  for (const decision of [one, two]) {
    assert.deepEqual([decision.detail.allowed, decision.detail.status], [true, 200], decision.answer);
    assert.match(decision.answer, /^200 OK /);
    assertRowsShow(decision);
  }
  // The short limit is full, the long one has a token left: the short one answers.
  assertRefusal(short, SHORT);
  assert.equal(short.detail.limits[1].remaining, 1, "the long limit had room, and was not charged");

  // Once the short limit has a token back, the long one is what stops the next requests:
  // one more fits it, then it answers. (The floating window may still count some of the
  // short limit's previous window, so the short one may refuse again first: wait again.)
  let long = null;
  for (let round = 0; round < 6 && !long; round++) {
    await waitForToken(short.detail.retryAfterMs);
    const decision = await press();
    if (!decision.detail.allowed && decision.detail.answeredBy === LONG) long = decision;
    else if (!decision.detail.allowed) assertRefusal(decision, SHORT);
  }
  assert.ok(long, "a 429 answered by the long limit");
  assertRefusal(long, LONG);
  assert.ok(long.detail.retryAfterMs > 0);
  return { short, long };
}

describe("Chromium", () => {
  let session;
  before(async () => {
    session = await start();
  });
  after(() => session?.close());

  it("a 429 from the short limit, then from the long one, each named with its Retry-After", async () => {
    const opened = await open(session, { path: "policy.html", html: pageWith(WIDGET), clock: true });
    const { page } = opened;
    try {
      assert.deepEqual(await whenReady(page), [true]);
      await page.evaluate(watch);
      const press = async () => {
        const count = (await page.evaluate(decisions)).length;
        await page.locator('#policy [part~="hit"]').click();
        const all = await page.evaluate(decisions);
        assert.equal(all.length, count + 1, "one click, one decision");
        return all.at(-1);
      };
      // The fake clock moves only when told: to the short limit's token, then a frame at a
      // time until the row has drawn it (a loaded machine may need a few), at most 30.
      const waitForToken = async (waitMs) => {
        await page.clock.runFor(waitMs + 16);
        for (let frame = 0; frame < 30 && (await page.evaluate(tokensLeft, SHORT)) < 1; frame++) {
          await page.clock.runFor(16);
        }
        assert.ok((await page.evaluate(tokensLeft, SHORT)) >= 1, "the short limit shows a token back");
      };
      // The fake clock stands still between presses.
      const pressThree = async () => [await press(), await press(), await press()];
      await shortThenLong(pressThree, press, waitForToken);
      assert.deepEqual(await page.evaluate(problems), []);
      assert.deepEqual(opened.problems, []);
    } finally {
      await opened.close();
    }
  });

  it("a page of single-limit widgets fetches neither policy mode nor its WebAssembly", async () => {
    const requested = [];
    const body = `<rate-limit-demo limit="6/8s"></rate-limit-demo><rate-limit-demo limit=" 6/8s "></rate-limit-demo>`;
    const opened = await open(session, { path: "single.html", html: pageWith(body) });
    opened.page.on("request", (request) => requested.push(new URL(request.url()).pathname));
    try {
      // Loaded again with the listener in place, so that every request is seen.
      await opened.page.reload();
      assert.deepEqual(await whenReady(opened.page), [true, true]);
      assert.deepEqual(requested.filter((path) => /policy|extras/.test(path)), []);
      // The same widget given a policy fetches both, once.
      await opened.page.evaluate(() => {
        document.querySelector("rate-limit-demo").limit = "2/1s 3/4s";
      });
      await opened.page.locator('rate-limit-demo [part~="policy"]').waitFor();
      assert.deepEqual(requested.filter((path) => /policy|extras/.test(path)), [
        "/policy.js",
        "/trickle_extras_bg.wasm",
      ]);
      assert.deepEqual(opened.problems, []);
    } finally {
      await opened.close();
    }
  });
});

describe("Firefox ESR and WebKit", () => {
  let server;
  before(async () => {
    server = await serveSiteWith("trickle-policy-", { "policy.html": pageWith(WIDGET) });
  });
  after(() => server?.close());

  for (const engine of ENGINES) {
    describe(engine.name, () => {
      let browser;
      before(async () => {
        browser = await launchEngine(engine, "policy");
      });
      after(() => browser?.close());

      it("a 429 from the short limit, then from the long one, each named with its Retry-After", async () => {
        const { driver } = browser;
        await driver.get(`${server.url}/policy.html`);
        const ready = await driver.executeAsyncScript((done) => {
          customElements
            .whenDefined("rate-limit-demo")
            .then(() => document.getElementById("policy").ready)
            .then(done, (error) => done(String(error)));
        });
        assert.equal(ready, true);
        await driver.executeScript(watch);
        const press = async () => {
          const count = (await driver.executeScript(decisions)).length;
          await (await driver.executeScript(hitButton)).click();
          const all = await driver.executeScript(decisions);
          assert.equal(all.length, count + 1, "one click, one decision");
          return all.at(-1);
        };
        // The engine's own clock: poll what the widget draws, for at most the announced
        // wait and a margin for a slow frame.
        const waitForToken = (waitMs) =>
          driver.wait(async () => (await driver.executeScript(tokensLeft, SHORT)) >= 1, waitMs + 2_000, "the short limit's token back", 50);
        // One script, so that three WebDriver round trips on a loaded machine cannot spread
        // the presses over a second's end, when the first ones' tokens start to slide out.
        const pressThree = async () => {
          const count = (await driver.executeScript(decisions)).length;
          await driver.executeScript(`${hitButton}; for (let n = 0; n < 3; n++) hitButton().click();`);
          const all = await driver.executeScript(decisions);
          assert.equal(all.length, count + 3, "three clicks, three decisions");
          return all.slice(-3);
        };
        await shortThenLong(pressThree, press, waitForToken);
        assert.deepEqual(await driver.executeScript(problems), []);
      });
    });
  }
});
