// The docs page (www/index.html) as a reader meets it: it loads clean, every widget on it
// becomes interactive with no request chain deeper than page → module → WebAssembly, it
// follows the reader's colour scheme. Screenshots are written under target/e2e/; the time to
// interactive is measured by benches/time-to-interactive.mjs.

import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ARTIFACTS, open, start, whenReady } from "./harness.mjs";

/**
 * How many requests deep each script and wasm a page loads is, from the browser's own network
 * log: 1 for what the page asks for, 2 for what those ask for, and so on. `html` serves that
 * page at `path` instead of the site's file.
 */
async function requestDepths(session, path, html) {
  const context = await session.browser.newContext();
  const address = new URL(path, session.url).href;
  if (html !== undefined) {
    await context.route(address, (route) => route.fulfill({ contentType: "text/html", body: html }));
  }
  const tab = await context.newPage();
  const devtools = await context.newCDPSession(tab);
  await devtools.send("Network.enable");
  await devtools.send("Network.setCacheDisabled", { cacheDisabled: true });
  const initiators = new Map();
  devtools.on("Network.requestWillBeSent", ({ request, initiator }) => {
    const by =
      initiator.url ?? initiator.stack?.callFrames?.[0]?.url ?? initiator.stack?.parent?.callFrames?.[0]?.url;
    initiators.set(request.url.split("?")[0], by ?? null);
  });
  await tab.goto(address);
  await whenReady(tab);
  await context.close();
  const depth = (url, seen = new Set()) => {
    const by = initiators.get(url);
    if (!by || seen.has(url) || !initiators.has(by)) return 0;
    seen.add(url);
    return depth(by, seen) + 1;
  };
  return Object.fromEntries(
    [...initiators.keys()]
      .filter((url) => /\.(js|wasm)$/.test(url))
      .map((url) => [new URL(url).pathname.slice(1), depth(url)]),
  );
}

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

  it("asks for nothing deeper than page → module → (WebAssembly, compare mode's module)", async () => {
    // The docs page preloads the wasm, as the embed section advises: it starts with the page.
    assert.deepEqual(await requestDepths(session, "index.html"), {
      "rate-limit-demo.js": 1,
      "trickle_bg.wasm": 1,
      "compare.js": 2,
    });
    // The two lines alone: the module asks for the wasm, and nothing else is asked for.
    const twoLines = `<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>t</title>
<script type="module" src="rate-limit-demo.js"></script></head>
<body><rate-limit-demo limit="6/8s"></rate-limit-demo></body></html>`;
    assert.deepEqual(await requestDepths(session, "two-lines.html", twoLines), {
      "rate-limit-demo.js": 1,
      "trickle_bg.wasm": 2,
    });
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
