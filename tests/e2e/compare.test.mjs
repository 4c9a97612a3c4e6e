// <rate-limit-demo compare> in Debian's Chromium: one Hit sent to several algorithms at the
// same instant. The fake clock puts every press at a chosen millisecond, so that each number
// below can be worked out by hand (and is, in the comments) from the rules in the README.

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

async function openWith(body, options = {}) {
  const opened = await open(session, { path: "compare.html", html: pageWith(body), ...options });
  opened.ready = await whenReady(opened.page);
  await collectEvents(opened.page);
  return opened;
}

/** Presses Hit `times` times (at the paused clock's instant); returns the last event's detail. */
async function press(page, times = 1, status) {
  const before = (await events(page)).length;
  const button = status
    ? `rate-limit-demo [part~="hit"][data-status="${status}"]`
    : 'rate-limit-demo [part~="hit"]';
  for (let n = 0; n < times; n++) await page.locator(button).click();
  const all = await events(page);
  assert.equal(all.length, before + times, "one press dispatches exactly one event");
  return all.at(-1).detail;
}

/** A compare-mode detail's decisions by algorithm name. */
function byName(detail) {
  return Object.fromEntries(detail.decisions.map((decision) => [decision.algorithm, decision]));
}

/** The algorithms a detail's decisions come from, in order. */
function names(detail) {
  return detail.decisions.map((decision) => decision.algorithm);
}

/** Each row as shown: { algorithm: { used, admitted, over, response } }, in the order shown. */
function shownRows(page) {
  return page.locator("rate-limit-demo").evaluate((element) =>
    Object.fromEntries(
      [...element.shadowRoot.querySelectorAll('[part~="row"]')].map((row) => {
        const text = (part) => row.querySelector(`[part~="${part}"]`).textContent.trim();
        const response = text("response").replace(/\s+/g, " ");
        const cells = { used: text("used"), admitted: text("admitted"), over: text("over"), response };
        return [row.dataset.algorithm, cells];
      }),
    ),
  );
}

/** The disagreement counter as shown: [wrongly allowed, wrongly limited, presses]. */
async function shownCounts(page) {
  return [
    await partText(page, "rate-limit-demo", "wrongly-allowed"),
    await partText(page, "rate-limit-demo", "wrongly-limited"),
    await partText(page, "rate-limit-demo", "presses"),
  ];
}

/** A window boundary of every limit used here, late enough for the page to have loaded. */
const START = 24_000;

describe("compare mode", () => {
  it("shows the four algorithms by default, each answering the same press", async () => {
    const { page, problems, ready } = await openWith(
      `<rate-limit-demo compare limit="6/8s"></rate-limit-demo>`,
      { clock: true },
    );
    assert.deepEqual(ready, [true]);
    await page.clock.pauseAt(START + 1_000);
    assert.deepEqual(Object.keys(await shownRows(page)), [
      "floating",
      "sliding-log",
      "fixed",
      "token-bucket",
    ]);
    assert.match(
      await partText(page, "rate-limit-demo", "heading"),
      /6 requests per 8 s · 4 algorithms side by side/,
    );
    assert.equal(await page.locator('rate-limit-demo [part~="formula"]').isVisible(), false);

    const detail = await press(page);
    assert.deepEqual(names(detail), ["floating", "sliding-log", "fixed", "token-bucket"]);
    assert.equal(detail.t, START + 1_000);
    // The same shape as one algorithm's event: the first decision's fields, and the array.
    const { decisions, presses: _, disagreement: __, wronglyAllowed: ___, wronglyLimited: ____, ...top } = detail;
    assert.deepEqual(top, decisions[0]);
    for (const name of names(detail)) {
      const decision = byName(detail)[name];
      assert.deepEqual(
        [decision.allowed, decision.status, decision.used, decision.t],
        [true, 200, 1, START + 1_000],
        name,
      );
    }
    const { presses, disagreement, wronglyAllowed, wronglyLimited } = detail;
    assert.deepEqual([presses, disagreement, wronglyAllowed, wronglyLimited], [1, null, 0, 0]);
    const live = page.locator('rate-limit-demo [part~="answer"]');
    assert.equal(await live.getAttribute("role"), "status");
    assert.equal(await live.getAttribute("aria-live"), "polite");
    assert.match(
      await live.textContent(),
      /floating window 200 · sliding log 200 · fixed window 200 · token bucket 200All agree\./,
    );
    assert.deepEqual(problems, []);
  });

  it("compares the subset compare names, in its order", async () => {
    const { page, problems } = await openWith(
      `<rate-limit-demo compare algorithms="sliding-log floating" limit="6/8s"></rate-limit-demo>`,
    );
    assert.deepEqual(Object.keys(await shownRows(page)), ["sliding-log", "floating"]);
    assert.match(await partText(page, "rate-limit-demo", "heading"), /2 algorithms side by side/);
    assert.equal((await press(page)).wronglyLimited, 0, "both shown: the counter runs");

    // Without the sliding log there is no truth to judge the floating window by.
    await page.evaluate(() => (document.querySelector("rate-limit-demo").algorithms = "fixed,token-bucket"));
    assert.deepEqual(Object.keys(await shownRows(page)), ["fixed", "token-bucket"]);
    assert.equal(await page.locator('rate-limit-demo [part~="disagreements"]').count(), 0);
    const detail = await press(page);
    assert.deepEqual(names(detail), ["fixed", "token-bucket"]);
    assert.deepEqual([detail.wronglyAllowed, detail.wronglyLimited], [null, null]);
    assert.equal(byName(detail).fixed.used, 1, "a fresh bucket after the change");
    assert.deepEqual(problems, []);
  });

  it("shows the fixed window's double burst across a boundary, which the others refuse", async () => {
    const { page, problems } = await openWith(
      `<rate-limit-demo compare limit="6/8s"></rate-limit-demo>`,
      { clock: true },
    );
    // Windows of 8 s start at 24 s and 32 s. Six presses at 31.5 s, half a second before the
    // boundary, fit everywhere: every bucket starts empty (the token bucket full).
    await page.clock.pauseAt(START + 7_500);
    const first = await press(page, 6);
    for (const name of names(first)) assert.equal(byName(first)[name].used, 6, name);

    // Six more at 32.5 s, half a second into the next window:
    // - fixed: a new window, counted from 0: all six fit, used = 6, and 12 were let in
    //   within one second;
    // - sliding log: the six of 31.5 s count until 39.5 s: used = 6, each press denied,
    //   Retry-After = 39.5 − 32.5 = 7 s;
    // - floating: previous = 6, 0.5 s into the window overlap = 7.5/8, used = 6 × 0.9375 =
    //   5.625, and 5.625 + 1 > 6: denied. One fits once 6 × (8000 − e)/8000 + 1 ≤ 6, at
    //   e ≥ 1333.3, so e = 1334 ms: a wait of 834 ms, Retry-After: 1;
    // - token bucket: 1 s of refill at 6 per 8 s is 0.75 token, used = 6 − 0.75 = 5.25,
    //   and one token is back after 1333.3 ms, at 1334: a wait of 334 ms, Retry-After: 1.
    await page.clock.pauseAt(START + 8_500);
    const events12 = [];
    for (let n = 0; n < 6; n++) events12.push(await press(page));
    for (const detail of events12) {
      assert.equal(byName(detail).fixed.allowed, true, "fixed lets the second six in");
      for (const name of ["floating", "sliding-log", "token-bucket"]) {
        assert.equal(byName(detail)[name].allowed, false, `${name} refuses press ${detail.presses}`);
      }
    }
    const last = events12.at(-1);
    assert.deepEqual(
      Object.fromEntries(
        last.decisions.map(({ algorithm, used, retryAfterMs }) => [algorithm, [used, retryAfterMs]]),
      ),
      { floating: [5.625, 834], "sliding-log": [6, 7_000], fixed: [6, null], "token-bucket": [5.25, 334] },
    );
    assert.deepEqual(await shownRows(page), {
      floating: { used: "5.625", admitted: "6", over: "", response: "429 Retry-After: 1" },
      "sliding-log": { used: "6", admitted: "6", over: "", response: "429 Retry-After: 7" },
      // 12 tokens let in within the last 8 s: twice the limit.
      fixed: { used: "6", admitted: "12", over: "2× the limit", response: "200" },
      "token-bucket": { used: "5.25", admitted: "6", over: "", response: "429 Retry-After: 1" },
    });
    assert.equal(
      await page.locator('rate-limit-demo [part~="row"][data-algorithm="fixed"]').getAttribute("class"),
      "over",
    );
    // The floating window and the log refused alike: no disagreement in twelve presses.
    assert.deepEqual(await shownCounts(page), ["0", "0", "12 presses"]);
    assert.match(await partText(page, "rate-limit-demo", "window"), /0\.5 s in · the next starts in 7\.5 s/);
    // The bar that shows the fixed window passing is a CSS animation set to the same clock.
    const bar = await page
      .locator("rate-limit-demo")
      .evaluate((element) => element.shadowRoot.querySelector(".window-progress").style.cssText);
    assert.match(bar, /animation-duration: 8000ms; animation-delay: -500ms/);
    assert.match(
      await partText(page, "rate-limit-demo", "answer"),
      /Let in by the fixed window; refused by the floating window, sliding log, token bucket\./,
    );
    assert.deepEqual(problems, []);
  });

  it("counts the presses on which the floating window disagrees with the log, both ways", async () => {
    const { page, problems } = await openWith(
      `<rate-limit-demo compare algorithms="floating sliding-log" limit="6/8s"></rate-limit-demo>`,
      { clock: true },
    );
    // Wrongly limited: six presses at 24 s, the very start of a window. At 33 s, 1 s into the
    // next window, the log has let all six go (each counted until 32 s), but the floating
    // window still counts previous × overlap = 6 × 7/8 = 5.25, and 5.25 + 1 > 6.
    await page.clock.pauseAt(START);
    await press(page, 6);
    await page.clock.pauseAt(START + 9_000);
    const limited = await press(page);
    assert.equal(limited.disagreement, "wrongly-limited");
    assert.deepEqual(
      [byName(limited).floating.allowed, byName(limited).floating.used],
      [false, 5.25],
    );
    assert.deepEqual(
      [byName(limited)["sliding-log"].allowed, byName(limited)["sliding-log"].used],
      [true, 1],
    );
    assert.deepEqual([limited.wronglyAllowed, limited.wronglyLimited], [0, 1]);
    assert.deepEqual(await shownCounts(page), ["0", "1", "7 presses"]);
    assert.match(await partText(page, "rate-limit-demo", "answer"), /refused a request the exact log let in: wrongly limited/);

    // Reset empties both buckets and the counter.
    await page.locator('rate-limit-demo [part~="reset"]').click();
    assert.deepEqual(await shownCounts(page), ["0", "0", "0 presses"]);

    // Wrongly allowed: six presses at 47.9 s, the last 100 ms of the window 40–48 s. At 52 s,
    // 4 s into the next, the floating window counts 6 × 4/8 = 3 and lets one in (used 4);
    // the log still holds all six until 55.9 s and refuses, Retry-After 3.9 s → 4.
    await page.clock.pauseAt(START + 23_900);
    await press(page, 6);
    await page.clock.pauseAt(START + 28_000);
    const allowed = await press(page);
    assert.equal(allowed.disagreement, "wrongly-allowed");
    assert.deepEqual(
      [byName(allowed).floating.allowed, byName(allowed).floating.used],
      [true, 4],
    );
    assert.deepEqual(
      [byName(allowed)["sliding-log"].allowed, byName(allowed)["sliding-log"].retryAfterMs],
      [false, 3_900],
    );
    assert.deepEqual([allowed.wronglyAllowed, allowed.wronglyLimited], [1, 0]);
    assert.deepEqual(await shownCounts(page), ["1", "0", "7 presses"]);
    assert.deepEqual(await shownRows(page), {
      // The floating window let 7 in within 4.1 s: more than the limit, which the log refused.
      floating: { used: "4", admitted: "7", over: "1 over the limit", response: "200" },
      "sliding-log": { used: "6", admitted: "6", over: "", response: "429 Retry-After: 4" },
    });
    assert.match(await partText(page, "rate-limit-demo", "answer"), /let in a request the exact log refused: wrongly allowed/);
    assert.deepEqual(problems, []);
  });

  it("keeps cost and costs=\"esi\" for every algorithm", async () => {
    const { page, problems } = await openWith(
      `<rate-limit-demo compare limit="6/8s" cost="2"></rate-limit-demo>`,
      { clock: true },
    );
    await page.clock.pauseAt(START + 100);
    // Three presses of 2 tokens fill 6; the fourth fits nowhere.
    const third = await press(page, 3);
    const fourth = await press(page);
    for (const name of names(third)) {
      const { allowed, cost, used } = byName(third)[name];
      assert.deepEqual([allowed, cost, used], [true, 2, 6], name);
      assert.equal(byName(fourth)[name].allowed, false, name);
    }

    await page.evaluate(() => {
      const element = document.querySelector("rate-limit-demo");
      element.removeAttribute("cost");
      element.costs = "esi";
    });
    assert.equal(await page.locator('rate-limit-demo [part~="hit"]').count(), 4);
    // Each reserves one token, then settles by status: 404 → 5, 200 → 2 (used 7, over the
    // limit), then no room for the reserve: a 429 that reserves and costs nothing, whatever
    // the server would have answered.
    const announced = () => partText(page, "rate-limit-demo", "answer");
    const notFound = await press(page, 1, 404);
    assert.match(await announced(), /All agree\. Reserved 1 token, charged 5 after answering\.$/);
    const ok = await press(page, 1, 200);
    assert.match(await announced(), /All agree\. Reserved 1 token, charged 2 after answering\.$/);
    const refused = await press(page, 1, 500);
    assert.match(await announced(), /All agree\.$/, "nothing reserved, nothing charged");
    for (const name of names(notFound)) {
      const row = [notFound, ok, refused].map((detail) => {
        const { status, reserved, cost, used } = byName(detail)[name];
        return [status, reserved, cost, used];
      });
      assert.deepEqual(row, [[404, 1, 5, 5], [200, 1, 2, 7], [429, 0, 0, 7]], name);
    }
    assert.deepEqual([refused.reserved, refused.cost], [0, 0], "the detail's fields are the first row's");
    assert.deepEqual(problems, []);
  });

  it("with costs, says what was reserved and charged where the request was let in", async () => {
    const { page, problems } = await openWith(
      `<rate-limit-demo compare algorithms="fixed sliding-log" limit="2/1s" costs="esi"></rate-limit-demo>`,
      { clock: true },
    );
    // A 200 late in one fixed window spends both tokens everywhere; just after the boundary
    // the fixed window has started again and lets the next in, while the log still holds
    // both and refuses it.
    await page.clock.pauseAt(START + 900);
    await press(page, 1, 200);
    await page.clock.runFor(200);
    const split = await press(page, 1, 200);
    const fixed = byName(split).fixed;
    const log = byName(split)["sliding-log"];
    assert.deepEqual([fixed.status, fixed.reserved, fixed.cost, fixed.used], [200, 1, 2, 2]);
    assert.deepEqual([log.status, log.reserved, log.cost, log.used], [429, 0, 0, 2]);
    assert.match(
      await partText(page, "rate-limit-demo", "answer"),
      /Let in by the fixed window; refused by the sliding log\. Reserved 1 token, charged 2 after answering where let in\.$/,
    );
    assert.deepEqual(problems, []);
  });

  it("shows tokens trickling back for every algorithm, then asks for no more frames", async () => {
    const { page, problems } = await openWith(
      `<rate-limit-demo compare limit="6/8s"></rate-limit-demo>`,
      { clock: true },
    );
    await page.clock.pauseAt(START + 100);
    await framesRequested(page);
    await page.clock.runFor(2_000);
    assert.equal(await framesRequested(page), 0, "no frames before any hit");

    await page.clock.pauseAt(START + 6_000);
    await press(page, 6);
    // At 34 s, 2 s into the next window (the fake clock runs frames every 16 ms; 34 s is one):
    // floating 6 × 6/8 = 4.5; the log holds the six until 38 s; the fixed window starts from
    // 0; the token bucket has refilled 4 s × 6/8 = 3.
    await page.clock.runFor(4_000);
    const used = (rows) => Object.values(rows).map((row) => row.used);
    assert.deepEqual(used(await shownRows(page)), ["4.5", "6", "0", "3"]);
    assert.ok((await framesRequested(page)) > 0, "frames while tokens come back");
    assert.match(await partText(page, "rate-limit-demo", "window"), /2\.0 s in · the next starts in 6\.0 s/);

    // By 40 s everything is back; the floating window's previous six are out of view too.
    await page.clock.runFor(6_000);
    assert.deepEqual(used(await shownRows(page)), ["0", "0", "0", "0"]);
    const settled = await framesRequested(page);
    await page.clock.runFor(5_000);
    assert.equal(await framesRequested(page), settled, "no frames once nothing changes");
    assert.match(
      await partText(page, "rate-limit-demo", "window"),
      /Fixed windows start every 8 s; the bar fills over each one/,
    );
    assert.deepEqual(problems, []);
  });

  it("keeps the numbers live once a second without frames for reduced motion", async () => {
    const { page } = await openWith(`<rate-limit-demo compare limit="6/8s"></rate-limit-demo>`, {
      clock: true,
      reducedMotion: "reduce",
    });
    await page.clock.pauseAt(START + 7_000);
    await framesRequested(page);
    await press(page, 6);
    // 2 s into the next window: floating 6 × 6/8 = 4.5, token bucket refilled 3 × 6/8.
    await page.clock.runFor(3_000);
    const rows = await shownRows(page);
    assert.deepEqual([rows.floating.used, rows["token-bucket"].used], ["4.5", "3.75"]);
    assert.equal(await framesRequested(page), 0);
  });

  it("shows its loading note, not the old widget, while compare mode's module is on its way", async () => {
    let release;
    const arrived = new Promise((resolve) => (release = resolve));
    const { page, problems } = await openWith(`<rate-limit-demo limit="6/8s"></rate-limit-demo>`, {
      routes: [
        [
          "**/compare.js",
          async (route) => {
            await arrived;
            await route.continue();
          },
        ],
      ],
    });
    await press(page);
    await page.evaluate(() => (document.querySelector("rate-limit-demo").compare = true));
    const shown = () =>
      page.locator("rate-limit-demo").evaluate((element) => {
        const visible = (selector) => !element.shadowRoot.querySelector(selector).hidden;
        return { loading: visible(".loading"), panel: visible('[part~="panel"]'), hit: element.hit() };
      });
    assert.deepEqual(await shown(), { loading: true, panel: false, hit: null });
    release();
    await page.locator('rate-limit-demo [part~="row"]').first().waitFor();
    assert.deepEqual(await shown().then(({ loading, panel }) => ({ loading, panel })), {
      loading: false,
      panel: true,
    });
    assert.equal(Object.keys(await shownRows(page)).length, 4);
    assert.deepEqual(problems, []);
  });

  it("goes back to one algorithm when compare is removed", async () => {
    const { page, problems } = await openWith(`<rate-limit-demo compare limit="6/8s"></rate-limit-demo>`);
    await press(page);
    await page.evaluate(() => document.querySelector("rate-limit-demo").removeAttribute("compare"));
    assert.equal(await page.locator('rate-limit-demo [part~="comparison"]').count(), 0);
    assert.equal(await page.locator('rate-limit-demo [part~="formula"]').isVisible(), true);
    const detail = await press(page);
    assert.deepEqual([detail.allowed, detail.used, names(detail)], [true, 1, ["floating"]]);
    assert.deepEqual(problems, []);
  });
});

describe("bad compare and algorithms values", () => {
  const allowed = /name two or more of floating, sliding-log, fixed, token-bucket/;
  for (const [attributes, message] of [
    [`compare="floating sliding-log"`, /compare="floating sliding-log" is not allowed: compare is on or off .*algorithms="floating sliding-log"/],
    [`compare algorithms="leaky"`, /algorithms="leaky": "leaky" is not an algorithm; name two or more of/],
    [`compare algorithms="floating Floating"`, /"Floating" is not an algorithm; name two or more of/],
    [`compare algorithms="floating floating"`, /algorithms="floating floating" names floating twice; name each algorithm once/],
    [`compare algorithms=" "`, /algorithms=" " names no algorithm; name two or more of .*or leave algorithms out for all 4/],
    [`compare algorithms=","`, /algorithms="," names no algorithm/],
    [`compare algorithms="fixed"`, /algorithms="fixed" names one algorithm, and compare needs two or more; for one, leave compare out and write algorithm="fixed"/],
    [`algorithms="fixed floating"`, /algorithms="fixed floating" picks what compare mode shows: add compare/],
    [`compare algorithm="fixed"`, /algorithm="fixed" cannot be used with compare.*algorithms="floating sliding-log"/],
    [`compare cost="7"`, /cost "7".*from 0 to 6/],
    [`compare costs="github"`, /costs="github": cost table entry "github" has no ':'/],
    [`compare limit="6/8x"`, /unit/],
  ]) {
    it(`is explained as text: ${attributes}`, async () => {
      const { page, problems, ready } = await openWith(
        `<rate-limit-demo ${attributes.includes("limit=") ? "" : `limit="6/8s" `}${attributes}></rate-limit-demo>`,
      );
      assert.deepEqual(ready, [false]);
      const error = await partText(page, "rate-limit-demo", "error");
      assert.match(error, message);
      assert.equal(await page.locator('rate-limit-demo [part~="panel"]').isVisible(), false);
      assert.deepEqual(problems, []);
    });
  }

  it("is shown as text, never parsed as markup, and fixing it brings the widget back", async () => {
    const { page, problems } = await openWith(
      `<rate-limit-demo compare algorithms="&lt;img src=x onerror=alert(1)&gt;"></rate-limit-demo>
       <button id="page-button" onclick="this.textContent = 'still works'">page</button>`,
    );
    let dialogs = 0;
    page.on("dialog", (dialog) => {
      dialogs++;
      dialog.dismiss();
    });
    const error = await partText(page, "rate-limit-demo", "error");
    assert.match(error, /algorithms="<img src=x onerror=alert\(1\)>": "<img" is not an algorithm/);
    assert.match(error, allowed);
    assert.equal(await page.locator("rate-limit-demo img").count(), 0);
    await page.locator("#page-button").click();
    assert.equal(await page.locator("#page-button").textContent(), "still works");

    await page.evaluate(() => (document.querySelector("rate-limit-demo").algorithms = null));
    assert.equal(Object.keys(await shownRows(page)).length, 4, "no algorithms: all four");
    assert.equal(byName(await press(page)).floating.allowed, true);
    assert.equal(dialogs, 0);
    assert.deepEqual(problems, []);
  });
});
