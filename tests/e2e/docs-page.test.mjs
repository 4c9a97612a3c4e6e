// The docs page (www/index.html) as a reader meets it: it loads clean, every widget on it
// becomes interactive, it follows the reader's colour scheme. Screenshots and the time from
// navigation to an interactive widget are written under target/e2e/.

import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ARTIFACTS, open, start, whenReady } from "./harness.mjs";

let session;
before(async () => {
  session = await start();
});
after(() => session?.close());

describe("the docs page", () => {
  it("loads without a console error and every widget becomes interactive", async () => {
    const { page, problems } = await open(session);
    const ready = await whenReady(page);
    assert.ok(ready.length >= 3, "the 6/8s widget, the ESI one and the comparison");
    assert.ok(ready.every(Boolean), `ready: ${ready}`);
    assert.equal(await page.locator('rate-limit-demo[costs="esi"]').count(), 1);
    const compare = page.locator('rate-limit-demo[compare][limit="6/8s"]');
    assert.equal(await compare.count(), 1);
    assert.equal(await compare.locator('[part~="row"]').count(), 4, "all four algorithms");
    assert.equal(await page.locator("h1").count(), 1);
    assert.deepEqual(problems, []);
  });

  it("is interactive soon after navigation (measured, reported, not asserted)", async (t) => {
    const samples = [];
    for (let run = 0; run < 5; run++) {
      const { page } = await open(session);
      await whenReady(page);
      // performance.now() counts from navigation start.
      samples.push(
        await page.evaluate(() => performance.getEntriesByName("rate-limit-demo:ready")[0]?.startTime),
      );
      await page.close();
    }
    assert.ok(
      samples.every((ms) => Number.isFinite(ms) && ms > 0),
      `the element marks rate-limit-demo:ready: ${samples}`,
    );
    const sorted = [...samples].sort((a, b) => a - b);
    const timing = { runs: samples.length, medianMs: sorted[2], minMs: sorted[0], maxMs: sorted[4] };
    await writeFile(join(ARTIFACTS, "time-to-interactive.json"), JSON.stringify(timing, null, 2) + "\n");
    t.diagnostic(
      `navigation to interactive widget: median ${timing.medianMs.toFixed(0)} ms ` +
        `(min ${timing.minMs.toFixed(0)}, max ${timing.maxMs.toFixed(0)}, ${timing.runs} loads)`,
    );
  });

  it("follows the reader's light or dark scheme", async () => {
    const backgrounds = {};
    for (const colorScheme of ["light", "dark"]) {
      const { page } = await open(session, { colorScheme });
      await whenReady(page);
      backgrounds[colorScheme] = await page
        .locator('rate-limit-demo [part~="panel"]')
        .first()
        .evaluate((panel) => getComputedStyle(panel).backgroundColor);
      await page.screenshot({ path: join(ARTIFACTS, `docs-page-${colorScheme}.png`), fullPage: true });
      await page.close();
    }
    assert.notEqual(backgrounds.light, backgrounds.dark);
  });

  it("plays the comparison section's double burst as the page tells the reader to", async () => {
    const { page, problems } = await open(session, { clock: true });
    await whenReady(page);
    const widget = page.locator('rate-limit-demo[compare][limit="6/8s"]');
    const hit = widget.locator('[part~="hit"]');
    // "When the bar is nearly full, press Hit six times": 31.5 s, in the window 24–32 s.
    await page.clock.pauseAt(31_500);
    for (let n = 0; n < 6; n++) await hit.click();
    // "As soon as the bar starts again, press Hit six more times": 32.5 s.
    await page.clock.pauseAt(32_500);
    for (let n = 0; n < 6; n++) await hit.click();
    const admitted = await widget.locator('[part~="row"]').evaluateAll((rows) =>
      rows.map((row) => [row.dataset.algorithm, row.querySelector('[part~="admitted"]').textContent]),
    );
    // Only the fixed window let the second six in: 12 within one second.
    assert.deepEqual(admitted, [
      ["floating", "6"],
      ["sliding-log", "6"],
      ["fixed", "12"],
      ["token-bucket", "6"],
    ]);
    await widget.screenshot({ path: join(ARTIFACTS, "compare.png") });
    assert.deepEqual(problems, []);
  });

  it("plays the README's worked example to a 429 (the screenshot in the README)", async () => {
    const { page, problems } = await open(session, { clock: true });
    await whenReady(page);
    const widget = page.locator('rate-limit-demo[limit="6/8s"]:not([costs]):not([compare])').first();
    const hit = widget.locator('[part~="hit"]');
    // 24 s is a window boundary of 6/8s and late enough for the page to have loaded.
    const start = 24_000;
    for (const t of [0, 1_000, 2_000, 3_000, 9_000, 10_000, 11_000, 11_000]) {
      await page.clock.pauseAt(start + t);
      await hit.click();
    }
    const shown = await widget.locator('[part~="formula"]').evaluate((formula) =>
      ["previous", "overlap", "current", "used"].map(
        (part) => formula.querySelector(`[part~="${part}"]`).textContent,
      ),
    );
    assert.deepEqual(shown, ["4", "0.625", "3", "5.50"]);
    assert.match(
      await widget.locator('[part~="answer"]').textContent(),
      /429 Too Many Requests · Retry-After: 1\b.*1 s/,
    );
    await widget.screenshot({ path: join(ARTIFACTS, "widget.png") });
    assert.deepEqual(problems, []);
  });
});
