// Clocks that misbehave: a tab put to sleep and woken days later, a clock that stands still
// while requests come, and one that goes back. Nothing throws, nothing gets in beyond the
// limit, no NaN reaches the reader, and the display recovers: after a long sleep the bucket
// is full again and the timeline empty.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { framesRequested, open, pageWith, partText, start, whenReady } from "./harness.mjs";

let session;
before(async () => {
  session = await start();
});
after(() => session?.close());

/** Where the fake clock starts: after the page has loaded, on a window boundary. */
const START = 24_000;
const DAY = 24 * 3_600_000;
const ALGORITHMS = ["floating", "sliding-log", "fixed", "token-bucket"];

async function openWidget(attributes, options = {}) {
  const opened = await open(session, {
    path: "fixture.html",
    html: pageWith(`<rate-limit-demo ${attributes}></rate-limit-demo>`),
    clock: true,
    ...options,
  });
  assert.deepEqual(await whenReady(opened.page), [true]);
  return opened;
}

const press = (page) => page.evaluate(() => document.querySelector("rate-limit-demo").hit());

/**
 * Every text and attribute in the widget's shadow DOM, and its inline styles, that shows a
 * number gone wrong: NaN, Infinity or undefined.
 */
function brokenNumbers(page) {
  return page.evaluate(() => {
    const root = document.querySelector("rate-limit-demo").shadowRoot;
    const bad = /NaN|Infinity|undefined/;
    const found = [];
    for (const element of root.querySelectorAll("*")) {
      for (const { name, value } of element.attributes) {
        if (bad.test(value)) found.push(`${element.tagName} ${name}="${value}"`);
      }
      if (bad.test(element.style?.cssText ?? "")) found.push(`${element.tagName} style ${element.style.cssText}`);
    }
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      if (bad.test(walker.currentNode.data)) found.push(`text "${walker.currentNode.data}"`);
    }
    return found;
  });
}

const marksDrawn = (page) =>
  page.evaluate(() => document.querySelector("rate-limit-demo").shadowRoot.querySelectorAll(".marks > .mark").length);

describe("a tab put to sleep and woken three days later", () => {
  for (const [algorithm, reducedMotion] of [
    ...ALGORITHMS.map((algorithm) => [algorithm, undefined]),
    ["floating", "reduce"],
  ]) {
    const motion = reducedMotion ? ", with reduced motion" : "";
    it(`${algorithm}${motion}: the widget wakes with a full bucket and numbers that make sense`, async () => {
      const { page, problems } = await openWidget(`limit="6/8s" algorithm="${algorithm}"`, { reducedMotion });
      await page.clock.pauseAt(START);
      for (let n = 0; n < 6; n++) assert.equal((await press(page)).allowed, true);
      assert.equal((await press(page)).allowed, false);
      await page.clock.runFor(1_000);
      assert.notEqual(await partText(page, "rate-limit-demo", "used"), "0.00", "tokens in use");

      // Asleep: no frame, no timer runs; then the clock has moved on by days at once.
      await page.clock.pauseAt(START + 3 * DAY);
      await page.clock.runFor(1_100);
      assert.equal(await partText(page, "rate-limit-demo", "used"), "0.00");
      assert.equal(await partText(page, "rate-limit-demo", "next"), "All 6 tokens available");
      assert.equal(await partText(page, "rate-limit-demo", "remaining"), "6 of 6 left");
      assert.equal(await marksDrawn(page), 0, "the old hits have left the timeline");
      if (algorithm === "floating") {
        assert.equal(await partText(page, "rate-limit-demo", "previous"), "0");
        assert.equal(await partText(page, "rate-limit-demo", "current"), "0");
      }
      assert.deepEqual(await brokenNumbers(page), []);
      // Nothing changes any more, so nothing is asked for.
      const frames = await framesRequested(page);
      await page.clock.runFor(3_000);
      assert.equal(await framesRequested(page), frames);

      const fresh = await press(page);
      assert.deepEqual([fresh.allowed, fresh.used, fresh.remaining], [true, 1, 5]);
      assert.equal(fresh.t, START + 3 * DAY + 4_100);
      assert.deepEqual(await brokenNumbers(page), []);
      assert.deepEqual(problems, []);
    });
  }
});

describe("a clock that stands still", () => {
  it("lets in exactly the limit at one instant, then recovers when time moves again", async () => {
    const { page, problems } = await openWidget(`limit="6/8s"`);
    await page.clock.pauseAt(START + 500);
    const decisions = [];
    for (let n = 0; n < 50; n++) decisions.push(await press(page));
    assert.equal(decisions.filter((decision) => decision.allowed).length, 6);
    const waits = new Set(decisions.slice(6).map((decision) => decision.retryAfterMs));
    // Six spent at 500 ms into the window: one is back once the next window is 8/6 s old.
    assert.deepEqual([...waits], [7_500 + Math.ceil(8_000 / 6)]);
    assert.equal(await marksDrawn(page), 50);
    assert.deepEqual(await brokenNumbers(page), []);

    await page.clock.runFor(7_500 + Math.ceil(8_000 / 6));
    assert.equal((await press(page)).allowed, true);
    assert.deepEqual(await brokenNumbers(page), []);
    assert.deepEqual(problems, []);
  });
});

describe("a clock that goes back, through the JS Limiter", () => {
  it("reads an earlier time as the latest seen: nothing extra gets in, nothing throws", async () => {
    const { page, problems } = await open(session, { path: "fixture.html", html: pageWith("") });
    const results = await page.evaluate(async (algorithms) => {
      const { load, Limiter } = await import("/limiter.js");
      await load();
      const results = {};
      for (const algorithm of algorithms) {
        const limiter = new Limiter({ limit: "3/1s", algorithm });
        const at = (t) => limiter.hit(t);
        const filled = [at(10_000), at(10_000), at(10_000)];
        const retry = at(10_000).retryAfterMs;
        const back = [9_999, 5_000, 0].map((t) => ({ sentAt: t, ...at(t) }));
        results[algorithm] = {
          filled: filled.map((decision) => decision.allowed),
          back: back.map(({ allowed, t, used }) => ({ allowed, t, used })),
          // When each request sent back in time is told it fits: the same moment for all.
          fitsAt: back.map(({ sentAt, retryAfterMs }) => sentAt + retryAfterMs),
          retry,
          early: at(10_000 + retry - 1).allowed,
          onTime: at(10_000 + retry).allowed,
          finite: [...filled, ...back].every((decision) =>
            Object.values(decision).every((value) => typeof value !== "number" || Number.isFinite(value)),
          ),
        };
        limiter.free();
      }
      return results;
    }, ALGORITHMS);
    for (const algorithm of ALGORITHMS) {
      const result = results[algorithm];
      assert.deepEqual(result.filled, [true, true, true], algorithm);
      // 1 ms back, 5 s back, back to 0: each judged at 10,000 ms, the latest seen.
      assert.deepEqual(
        result.back,
        Array(3).fill({ allowed: false, t: 10_000, used: 3 }),
        `${algorithm}: denied at the latest time seen`,
      );
      assert.ok(result.retry > 0, `${algorithm}: retry ${result.retry}`);
      // Retry-After is counted from the caller's own clock, so it is right whichever it reads.
      assert.deepEqual(result.fitsAt, Array(3).fill(10_000 + result.retry), algorithm);
      assert.deepEqual([result.early, result.onTime], [false, true], `${algorithm}: the retry is exact`);
      assert.equal(result.finite, true);
    }
    assert.deepEqual(problems, []);
  });
});
