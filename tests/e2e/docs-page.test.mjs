// The docs page as a reader meets it: target/site/index.html, which scripts/consumer-page.mjs
// writes from the docs site's chapter docs/src/understanding.md into www/page.html's frame. It
// loads clean, every widget on it becomes interactive with no request chain deeper than page
// → module → WebAssembly, its sections keep the order an API's readers need, it follows the
// reader's colour scheme, and its worked example plays as written. Compare mode lives in the
// docs site's "Choosing an algorithm" chapter (docs/src/algorithms.md): its widget is put on a
// test page and played as that chapter, and the worked example's chapter, tell the reader.
// Screenshots are written under target/e2e/; the time to interactive is measured by
// benches/time-to-interactive.mjs.

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ARTIFACTS, REPO, open, pageWith, start, whenReady } from "./harness.mjs";

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

/** The chapter on algorithms, whose compare widget and recipes the tests below play. */
const ALGORITHMS = join(REPO, "docs", "src", "algorithms.md");
/** The chapter the docs page is written from. */
const UNDERSTANDING = join(REPO, "docs", "src", "understanding.md");

/** The chapter's compare widget, as written in it. */
async function chapterWidget() {
  const chapter = await readFile(ALGORITHMS, "utf8");
  const widget = chapter.match(/^<rate-limit-demo compare[^>]*><\/rate-limit-demo>$/m);
  assert.ok(widget, "docs/src/algorithms.md shows a <rate-limit-demo compare> widget");
  return widget[0];
}

/**
 * Checks that the chapter's section `heading` still tells the reader `steps` (whitespace and
 * line breaks aside), so that a test playing them plays what the reader is told.
 */
async function chapterSays(heading, steps, file = ALGORITHMS) {
  const chapter = await readFile(file, "utf8");
  const name = `docs/src/${file.split("/").at(-1)}`;
  const start = chapter.indexOf(`\n### ${heading}\n`);
  assert.ok(start >= 0, `${name} has a section "${heading}"`);
  const end = chapter.indexOf("\n#", start + 1);
  const section = chapter.slice(start, end < 0 ? undefined : end).replace(/\s+/g, " ");
  for (const step of steps) assert.ok(section.includes(step), `"${heading}" says: ${step}`);
}

/** Opens the chapter's compare widget on a page of its own, at 0 on the fake clock. */
async function openChapterWidget() {
  const opened = await open(session, {
    path: "algorithms.html",
    html: pageWith(await chapterWidget()),
    clock: true,
  });
  assert.deepEqual(await whenReady(opened.page), [true]);
  return opened;
}

/** Each row of a compare widget as shown: [algorithm, tokens in use, tokens let in, answer]. */
function shownRows(widget) {
  return widget.locator('[part~="row"]').evaluateAll((rows) =>
    rows.map((row) => {
      const text = (part) => row.querySelector(`[part~="${part}"]`).textContent.trim();
      return [row.dataset.algorithm, text("used"), text("admitted"), text("response").replace(/\s+/g, " ")];
    }),
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
    assert.deepEqual(ready, [true, true, true, true], "the 6/8s widget, the predict one, the ESI one and the policy");
    assert.equal(await page.locator('#counting rate-limit-demo[limit="6/8s"][predict]').count(), 1);
    assert.equal(await page.locator('#try rate-limit-demo[limit="6/8s"]:not([costs])').count(), 1);
    assert.equal(await page.locator('rate-limit-demo[costs="esi"]').count(), 1);
    assert.equal(await page.locator('#several-limits rate-limit-demo [part~="policy-limit"]').count(), 2);
    assert.equal(await page.locator("rate-limit-demo[compare]").count(), 0, "compare mode is the docs site's");
    assert.equal(await page.locator("h1").count(), 1);
    assert.deepEqual(problems, []);
  });

  it("keeps a reader's order, each section in the contents and named by its heading, and points docs authors to the docs", async () => {
    const { page, close } = await open(session);
    const outline = await page.evaluate(() => ({
      sections: [...document.querySelectorAll("main > section")].map((section) => {
        const heading = document.getElementById(section.getAttribute("aria-labelledby"));
        return { id: section.id, labelledByItsHeading: heading?.parentElement === section && heading.tagName === "H2" };
      }),
      contents: [...document.querySelectorAll("nav.toc a")].map((link) => link.getAttribute("href")),
      levels: [...document.querySelectorAll("h1, h2, h3, h4, h5, h6")].map((heading) => Number(heading.tagName[1])),
      landmarks: ["header", "nav", "main", "footer"].map((tag) => document.querySelectorAll(tag).length),
      footer: document.querySelector("footer").textContent.replace(/\s+/g, " "),
    }));
    const order = ["why", "try", "counting", "costs", "headers", "several-limits", "safety-net", "handling-429"];
    assert.deepEqual(outline.sections, order.map((id) => ({ id, labelledByItsHeading: true })));
    assert.deepEqual(outline.contents, order.map((id) => `#${id}`));
    assert.equal(outline.levels[0], 1);
    const skipped = outline.levels.filter((level, n) => n > 0 && level > outline.levels[n - 1] + 1);
    assert.deepEqual(skipped, [], `no heading level skipped: ${outline.levels}`);
    assert.deepEqual(outline.landmarks, [1, 1, 1, 1]);
    assert.match(outline.footer, /Embedding chapter \(docs\/src\/embedding\.md\)/);
    const handling = (await page.locator("#handling-429").textContent()).replace(/\s+/g, " ");
    for (const point of [/Retry-After/, /HTTP date/, /exponentially/, /jitter/, /cap/, /5XX/, /other 4XX/, /Give up/, /Spread/]) {
      assert.match(handling, point, "the 429 section tells a client what to do");
    }
    await close();
  });

  it("asks for nothing deeper than page → module → (WebAssembly, a mode → its WebAssembly), and never for compare mode's module", async () => {
    // The docs page preloads the wasm, as docs/src/embedding.md advises: it starts with the
    // page. No widget on it is in compare mode, so compare.js is never fetched; its predict
    // widget fetches predict mode's module, its policy widget policy mode's, which fetches
    // the WebAssembly of the core's policies, and its costs="esi" widget the module that
    // holds cost tables, which the element's module asks for once that module's glue has
    // arrived (a round trip later, though the network log counts it as the module's).
    assert.deepEqual(await requestDepths(session, "index.html"), {
      "rate-limit-demo.js": 1,
      "trickle_bg.wasm": 1,
      "predict.js": 2,
      "policy.js": 2,
      "algorithms-glue.js": 2,
      "trickle_extras_bg.wasm": 3,
      "trickle_algorithms_bg.wasm": 2,
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

describe("the compare widget of docs/src/algorithms.md, on a page of its own", () => {
  it("asks for nothing deeper than page → module → (WebAssembly, compare mode's module, the other algorithms' glue and WebAssembly)", async () => {
    // Compare mode runs all four algorithms: the element's module asks for the module of the
    // other three once its glue has arrived, one round trip later than the default module.
    assert.deepEqual(await requestDepths(session, "algorithms.html", pageWith(await chapterWidget())), {
      "rate-limit-demo.js": 1,
      "trickle_bg.wasm": 2,
      "compare.js": 2,
      "algorithms-glue.js": 2,
      "trickle_algorithms_bg.wasm": 2,
    });
  });

  it("plays the double burst as the chapter tells the reader to", async () => {
    await chapterSays("The double burst", [
      "When the bar is nearly full, press **Hit** six times, quickly: all four answer 200.",
      "As soon as the bar starts again, press **Hit** six more times.",
      "it let 12 tokens in within a few seconds, twice the limit, and its row says so.",
      "The sliding log refuses all six",
      "The floating window refuses them too",
    ]);
    const { page, problems, close } = await openChapterWidget();
    const widget = page.locator("rate-limit-demo[compare]");
    const hit = widget.locator('[part~="hit"]');
    // "When the bar is nearly full, press Hit six times": 31.5 s, in the window 24–32 s.
    await page.clock.pauseAt(31_500);
    for (let n = 0; n < 6; n++) await hit.click();
    assert.deepEqual(await shownRows(widget), [
      ["floating", "6", "6", "200"],
      ["sliding-log", "6", "6", "200"],
      ["fixed", "6", "6", "200"],
      ["token-bucket", "6", "6", "200"],
    ]);
    // "As soon as the bar starts again, press Hit six more times": 32.5 s.
    await page.clock.pauseAt(32_500);
    for (let n = 0; n < 6; n++) await hit.click();
    // Only the fixed window let the second six in: 12 within one second. The floating window
    // still counts 6 × 7.5/8 = 5.625, close to the log's exact 6.
    assert.deepEqual(await shownRows(widget), [
      ["floating", "5.625", "6", "429 Retry-After: 1"],
      ["sliding-log", "6", "6", "429 Retry-After: 7"],
      ["fixed", "6", "12", "200"],
      ["token-bucket", "5.25", "6", "429 Retry-After: 1"],
    ]);
    assert.equal(await widget.locator('[part~="row"][data-algorithm="fixed"] [part~="over"]').textContent(), "2× the limit");
    await widget.screenshot({ path: join(ARTIFACTS, "compare.png") });
    assert.deepEqual(problems, []);
    await close();
  });

  it("plays the worked example of docs/src/understanding.md: the floating window's 429 is one the log allows", async () => {
    await chapterSays(
      "That 429 comes from the estimate",
      [
        "the last 8 seconds hold only the requests of 9, 10 and 11 s, 3 tokens.",
        "the last request at 11 s would make 4 of 6 and get `200 OK`. The floating window answers it 429.",
        "given these eight presses, its floating window answers the last one 429 and its sliding log 200, and it counts that press **wrongly limited**.",
      ],
      UNDERSTANDING,
    );
    const { page, problems, close } = await openChapterWidget();
    const widget = page.locator("rate-limit-demo[compare]");
    const hit = widget.locator('[part~="hit"]');
    // The worked example's presses at 0, 1, 2, 3, 9, 10, 11 and 11 s, from 24 s, a window
    // boundary of 6/8s.
    for (const t of [0, 1_000, 2_000, 3_000, 9_000, 10_000, 11_000, 11_000]) {
      await page.clock.pauseAt(24_000 + t);
      await hit.click();
    }
    const rows = await shownRows(widget);
    assert.deepEqual(
      rows.filter(([name]) => name === "floating" || name === "sliding-log"),
      [
        ["floating", "5.5", "3", "429 Retry-After: 1"],
        ["sliding-log", "4", "4", "200"],
      ],
    );
    const counts = await Promise.all(
      ["wrongly-allowed", "wrongly-limited"].map((part) => widget.locator(`[part~="${part}"]`).textContent()),
    );
    assert.deepEqual(counts, ["0", "1"]);
    assert.deepEqual(problems, []);
    await close();
  });

  it("plays 'wrongly allowed', then after Reset 'wrongly limited', as the chapter tells the reader to", async () => {
    await chapterSays("Where the floating window's estimate is wrong", [
      "Press **Reset**. When the bar is nearly full, press **Hit** six times; then once more when the bar is about half full again.",
      "the floating window let 7 tokens in within 8 seconds.",
      "Press **Reset**. As soon as the bar starts again, press **Hit** six times, as fast as you can; when it starts again after that, press once more within about a second.",
      "The log answers 200",
      "answers 429.",
    ]);
    const { page, problems, close } = await openChapterWidget();
    const widget = page.locator("rate-limit-demo[compare]");
    const hit = widget.locator('[part~="hit"]');
    const reset = widget.locator('[part~="reset"]');
    const counts = () =>
      Promise.all(["wrongly-allowed", "wrongly-limited"].map((part) => widget.locator(`[part~="${part}"]`).textContent()));
    /** The floating window's and the log's rows, which the disagreement is between. */
    const floatingAndLog = async () => (await shownRows(widget)).filter(([name]) => name === "floating" || name === "sliding-log");

    // Wrongly allowed. "Press Reset. When the bar is nearly full, press Hit six times": 47.5 s,
    // in the window 40–48 s.
    await page.clock.pauseAt(40_000);
    await reset.click();
    await page.clock.pauseAt(47_500);
    for (let n = 0; n < 6; n++) await hit.click();
    // "then once more when the bar is about half full again": 52 s. The floating window
    // counts 6 × 4/8 = 3 and lets it in (used 4): 7 let in within 4.5 s. The log holds all
    // six until 55.5 s.
    await page.clock.pauseAt(52_000);
    await hit.click();
    assert.deepEqual(await floatingAndLog(), [
      ["floating", "4", "7", "200"],
      ["sliding-log", "6", "6", "429 Retry-After: 4"],
    ]);
    assert.deepEqual(await counts(), ["1", "0"]);

    // Wrongly limited. "Press Reset. As soon as the bar starts again, press Hit six times, as
    // fast as you can": 56.2 s, in the window 56–64 s.
    await page.clock.pauseAt(53_000);
    await reset.click();
    assert.deepEqual(await counts(), ["0", "0"]);
    await page.clock.pauseAt(56_200);
    for (let n = 0; n < 6; n++) await hit.click();
    // "when it starts again after that, press once more within about a second": 64.8 s. The
    // log let the six go at 64.2 s; the floating window still counts 6 × 7.2/8 = 5.4, though
    // it let none in during the last 8 s.
    await page.clock.pauseAt(64_800);
    await hit.click();
    assert.deepEqual(await floatingAndLog(), [
      ["floating", "5.4", "0", "429 Retry-After: 1"],
      ["sliding-log", "1", "1", "200"],
    ]);
    assert.deepEqual(await counts(), ["0", "1"]);
    assert.deepEqual(problems, []);
    await close();
  });
});
