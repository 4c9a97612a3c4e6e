// Load in Debian's Chromium: a million hits through the JS `Limiter`, and ten thousand
// presses through one element. Decisions stay exact and memory stays flat: the heap after
// the whole run is what it was a tenth of the way in. The figures are written to
// target/e2e/load.json and quoted in the README.

import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ARTIFACTS, heapAfterGC, open, pageWith, partText, start, whenReady } from "./harness.mjs";

let session;
before(async () => {
  session = await start();
});
after(() => session?.close());

/**
 * JS heap the page may gain between a tenth of the run and the end, once garbage is
 * collected. Anything kept per hit or per press would be far above it: 900,000 hits keeping
 * even one byte each, or 9,000 presses keeping a timeline entry of tens of bytes each.
 */
const HEAP_BOUND = 128 * 1024;

const figures = {};
after(() => writeFile(join(ARTIFACTS, "load.json"), JSON.stringify(figures, null, 2) + "\n"));

describe("a million hits through the JS Limiter", () => {
  it("decides every one exactly, with memory flat from the first 100,000 to the millionth", async (t) => {
    const { page, problems } = await open(session, {
      path: "fixture.html",
      html: pageWith(""),
      // The package does not hand out its WebAssembly memory; catch it as it is made.
      initScript: () => {
        const { Instance } = WebAssembly;
        WebAssembly.Instance = function (...args) {
          const instance = new Instance(...args);
          window.__memory = instance.exports.memory;
          return instance;
        };
      },
    });
    await page.evaluate(async () => {
      const { load, Limiter } = await import("/limiter.js");
      await load();
      window.__load = {
        memory: window.__memory,
        // One limiter per algorithm, one hit every millisecond, each limiter at its own pace.
        limiters: ["floating", "sliding-log", "fixed", "token-bucket"].map((algorithm) => ({
          algorithm,
          limiter: new Limiter({ limit: "100/1s", algorithm }),
          allowed: 0,
          t: 0,
        })),
      };
    });
    /** 25,000 hits for each algorithm; returns the wasm memory's size after them. */
    const chunk = () =>
      page.evaluate(() => {
        for (const entry of window.__load.limiters) {
          for (const end = entry.t + 25_000; entry.t < end; entry.t++) {
            if (entry.limiter.hit(entry.t).allowed) entry.allowed++;
          }
        }
        return window.__load.memory.buffer.byteLength;
      });

    const wasmAfterTenth = await chunk();
    const heapAfterTenth = await heapAfterGC(page);
    let wasmAtEnd;
    for (let done = 1; done < 10; done++) wasmAtEnd = await chunk();
    const heapAtEnd = await heapAfterGC(page);
    const allowed = await page.evaluate(() =>
      Object.fromEntries(window.__load.limiters.map((entry) => [entry.algorithm, entry.allowed])),
    );

    // 250,000 hits each, one per millisecond, against 100 per second:
    assert.deepEqual(allowed, {
      // 100 in the first window. Then the previous window's 100 slide out one per 10 ms,
      // and one fits each time: 99 more in the second window (at 10, 20 … 990 ms into it).
      // From the third on, 99 behind: 99 × (1000 − e)/1000 + j ≤ 100 lets the j-th in at
      // e ≥ (j − 1)/0.099 ms, and j reaches 99 by e = 990. 100 + 249 × 99:
      floating: 24_751,
      // Each hit is counted until exactly 1 s after it: the first 100 of every second.
      "sliding-log": 25_000,
      // The first 100 of each of 250 windows.
      fixed: 25_000,
      // Full at first, then a token every 10 ms: 100 + ⌊249,999 / 10⌋.
      "token-bucket": 25_099,
    });
    assert.equal(wasmAtEnd, wasmAfterTenth, "the WebAssembly memory did not grow");
    assert.ok(
      heapAtEnd - heapAfterTenth < HEAP_BOUND,
      `JS heap after 100,000 hits ${heapAfterTenth} bytes, after 1,000,000 ${heapAtEnd}`,
    );
    figures.limiter = { hits: 1_000_000, heapAfterTenth, heapAtEnd, wasmAfterTenth, wasmAtEnd };
    t.diagnostic(`JS heap ${heapAfterTenth} → ${heapAtEnd} bytes, wasm memory ${wasmAfterTenth} → ${wasmAtEnd}`);
    assert.deepEqual(problems, []);
  });
});

describe("ten thousand presses through one element", () => {
  /** Where the fake clock starts: after the page has loaded, on a window boundary. */
  const START = 24_000;
  const SELECTOR = "rate-limit-demo";

  it("keeps a bounded timeline, exact counts and a flat heap", async (t) => {
    const { page, problems } = await open(session, {
      path: "fixture.html",
      html: pageWith(`<rate-limit-demo limit="1000/8s" algorithm="fixed"></rate-limit-demo>`),
      clock: true,
    });
    assert.deepEqual(await whenReady(page), [true]);
    await page.clock.pauseAt(START);
    /** 100 presses at one instant, then 200 ms of animation frames. */
    const batch = async () => {
      const allowed = await page.evaluate(() => {
        const element = document.querySelector("rate-limit-demo");
        let allowed = 0;
        for (let n = 0; n < 100; n++) if (element.hit().allowed) allowed++;
        return allowed;
      });
      await page.clock.runFor(200);
      return allowed;
    };
    const marks = () =>
      page.evaluate(
        () => document.querySelector("rate-limit-demo").shadowRoot.querySelectorAll(".marks > .mark").length,
      );

    let allowed = 0;
    for (let n = 0; n < 10; n++) allowed += await batch();
    const heapAfterTenth = await heapAfterGC(page);
    const drawn = [await marks()];
    for (let n = 10; n < 100; n++) {
      allowed += await batch();
      if (n % 10 === 9) drawn.push(await marks());
    }
    const heapAtEnd = await heapAfterGC(page);

    // 40 batches, 4,000 presses, in each 8 s window from START, and 20 in the last: the
    // first 1,000 of each window are allowed.
    assert.equal(allowed, 3_000);
    // The timeline keeps the latest 200, and says so to a screen reader.
    assert.ok(drawn.every((count) => count === 200), `marks drawn: ${drawn}`);
    assert.match(
      await page.locator(`${SELECTOR} [part~="timeline"]`).getAttribute("aria-label"),
      /Requests shown: 0 allowed, 200 denied\./,
    );
    // The previous window's 1,000 are no longer on the timeline, and still counted.
    const windowCounts = await page.evaluate(() =>
      [...document.querySelector("rate-limit-demo").shadowRoot.querySelectorAll(".window-label .count")].map(
        (count) => count.textContent,
      ),
    );
    assert.deepEqual(windowCounts, ["1000", "1000"], "previous and current fixed window");
    assert.equal(await partText(page, SELECTOR, "used"), "1000.00");
    assert.ok(
      heapAtEnd - heapAfterTenth < HEAP_BOUND,
      `JS heap after 1,000 presses ${heapAfterTenth} bytes, after 10,000 ${heapAtEnd}`,
    );
    figures.element = { presses: 10_000, heapAfterTenth, heapAtEnd, marksDrawn: 200 };
    t.diagnostic(`JS heap ${heapAfterTenth} → ${heapAtEnd} bytes`);
    assert.deepEqual(problems, []);
  });
});
