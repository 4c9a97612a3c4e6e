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
    assert.ok(ready.length >= 2, "the 6/8s widget and the ESI one");
    assert.ok(ready.every(Boolean), `ready: ${ready}`);
    assert.equal(await page.locator('rate-limit-demo[costs="esi"]').count(), 1);
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

  it("shows a 429 and its Retry-After after seven quick hits (screenshot for the README)", async () => {
    const { page, problems } = await open(session);
    await whenReady(page);
    const widget = page.locator('rate-limit-demo[limit="6/8s"]:not([costs])').first();
    for (let n = 0; n < 7; n++) await widget.locator('[part~="hit"]').click();
    const answer = widget.locator('[part~="answer"]');
    assert.match(await answer.textContent(), /429 Too Many Requests.*Retry-After: \d+/s);
    await widget.screenshot({ path: join(ARTIFACTS, "widget.png") });
    assert.deepEqual(problems, []);
  });
});
