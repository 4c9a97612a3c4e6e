// A broken or mishandled widget never breaks the page around it: the WebAssembly missing or
// corrupt, the module included twice, elements upgraded before and after the module loads,
// an element removed in the middle of an animation. In every case the host page sees no
// uncaught error and its own button still works; where the widget cannot work it says so,
// as text; a removed element stops asking for frames and lets go of its memory.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  collectEvents,
  events,
  framesRequested,
  heapAfterGC,
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

/** A button of the host page's own, to show that the page still works around the widget. */
const PAGE_BUTTON = `<button id="page-button" onclick="this.textContent = 'still works'">page</button>`;

async function openWith(body, options = {}) {
  const { script, ...rest } = options;
  return open(session, { path: "fixture.html", html: pageWith(body + PAGE_BUTTON, script), ...rest });
}

async function assertPageWorks(page) {
  await page.locator("#page-button").click();
  assert.equal(await page.locator("#page-button").textContent(), "still works");
}

/** Where the fake-clock tests start: after the page has loaded, on a window boundary. */
const START = 24_000;

describe("when the WebAssembly cannot be used", () => {
  // Each answer is one a real host can give: the browser logs the failed fetch itself
  // (`expectedLog`), and nothing else may appear.
  const cases = [
    {
      name: "the wasm is missing (404)",
      url: "**/trickle_bg.wasm",
      answer: { status: 404, contentType: "text/plain", body: "not found" },
      detail: /\/trickle_bg\.wasm could not be loaded: the server answered 404/,
      expectedLog: /status of 404/,
    },
    {
      name: "the wasm is corrupt",
      url: "**/trickle_bg.wasm",
      answer: { contentType: "application/wasm", body: Buffer.from("\0asm garbage, not a module") },
      detail: /trickle_bg\.wasm is not a WebAssembly module \(the server sent application\/wasm\)/,
    },
    {
      name: "the host answers with an HTML page in place of the wasm",
      url: "**/trickle_bg.wasm",
      answer: { contentType: "text/html", body: "<!doctype html><title>Home</title>" },
      detail: /trickle_bg\.wasm is not a WebAssembly module \(the server sent text\/html\)/,
    },
  ];
  for (const { name, url, answer, detail, expectedLog } of cases) {
    it(`${name}: each widget says so, as text, and the page works`, async () => {
      const { page, problems } = await openWith(
        `<rate-limit-demo id="a"></rate-limit-demo><rate-limit-demo id="b" costs="esi"></rate-limit-demo>`,
        { routes: [[url, (route) => route.fulfill(answer)]] },
      );
      assert.deepEqual(await whenReady(page), [false, false]);
      for (const id of ["#a", "#b"]) {
        const error = await partText(page, id, "error");
        assert.match(error, /could not load its WebAssembly module/, id);
        assert.match(error, detail, id);
        assert.equal(await page.locator(`${id} [part~="panel"]`).isVisible(), false);
        assert.equal(await page.evaluate((id) => document.querySelector(id).hit(), id), null);
      }
      await assertPageWorks(page);
      const unexpected = problems.filter((problem) => !expectedLog?.test(problem));
      assert.deepEqual(unexpected, []);
      if (expectedLog) assert.equal(problems.length, 1, `one line from the browser: ${problems}`);
    });
  }
});

describe("when compare mode's module cannot be loaded", () => {
  it("the compare widget says so, as text; a plain widget and the page work", async () => {
    const { page, problems } = await openWith(
      `<rate-limit-demo id="plain"></rate-limit-demo><rate-limit-demo id="compared" compare></rate-limit-demo>`,
      {
        routes: [
          ["**/compare.js", (route) => route.fulfill({ status: 404, contentType: "text/plain", body: "not found" })],
        ],
      },
    );
    assert.deepEqual(await whenReady(page), [true, false]);
    const error = await partText(page, "#compared", "error");
    assert.match(error, /^Compare mode could not load\./);
    assert.match(error, /compare\.js/);
    assert.equal(await page.locator('#compared [part~="panel"]').isVisible(), false);
    await page.locator('#plain [part~="hit"]').click();
    assert.match(await partText(page, "#plain", "answer"), /^200 OK/);
    await assertPageWorks(page);
    // The browser logs the failed request itself; nothing else may appear.
    assert.equal(problems.length, 1, `one line from the browser: ${problems}`);
    assert.match(problems[0], /status of 404/);
  });
});

describe("however the module arrives", () => {
  it("works when the module is included twice, under one URL and under two", async () => {
    const { page, problems } = await openWith(
      `<script type="module" src="/rate-limit-demo.js"></script>
       <script type="module" src="/rate-limit-demo.js?copy=2"></script>
       <rate-limit-demo limit="2/1s"></rate-limit-demo>`,
      { clock: true },
    );
    assert.deepEqual(await whenReady(page), [true]);
    await page.clock.pauseAt(START);
    // A third copy imported later by another script on the page.
    const defined = await page.evaluate(async () => {
      const before = customElements.get("rate-limit-demo");
      const { RateLimitDemo } = await import("/rate-limit-demo.js?copy=3");
      return before === customElements.get("rate-limit-demo") && RateLimitDemo !== before;
    });
    assert.equal(defined, true, "the first definition stays; later copies do not throw");
    await collectEvents(page);
    const hit = page.locator('rate-limit-demo [part~="hit"]');
    await hit.click();
    await hit.click();
    await hit.click();
    const decisions = (await events(page)).map((event) => event.detail.allowed);
    assert.deepEqual(decisions, [true, true, false], "one limiter, one event per press");
    await assertPageWorks(page);
    assert.deepEqual(problems, []);
  });

  it("upgrades elements made before the module loads, and works for those made after", async () => {
    // No module in <head>: the page loads it later, as a deferred or lazy docs page would.
    const { page, problems } = await open(session, {
      path: "fixture.html",
      html: `<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">
        <title>late module</title></head><body>
        <rate-limit-demo id="markup" limit="2/1s"></rate-limit-demo>${PAGE_BUTTON}</body></html>`,
      clock: true,
    });
    await page.evaluate(() => {
      // Made by script before the element exists: a property set now hides the accessor.
      const early = document.createElement("rate-limit-demo");
      early.id = "early";
      early.limit = "3/1s";
      document.body.append(early);
    });
    assert.equal(await page.evaluate(() => customElements.get("rate-limit-demo")), undefined);
    await assertPageWorks(page);

    await page.evaluate(async () => {
      const script = document.createElement("script");
      script.type = "module";
      script.src = "/rate-limit-demo.js";
      document.head.append(script);
      await customElements.whenDefined("rate-limit-demo");
      const late = document.createElement("rate-limit-demo");
      late.id = "late";
      late.limit = "1/1s";
      document.body.append(late);
    });
    assert.deepEqual(await whenReady(page), [true, true, true]);
    await page.clock.pauseAt(START);
    /** How many of ten presses at one instant each widget lets in: its own limit. */
    const allowed = await page.evaluate(() =>
      Object.fromEntries(
        [...document.querySelectorAll("rate-limit-demo")].map((element) => [
          element.id,
          Array.from({ length: 10 }, () => element.hit().allowed).filter(Boolean).length,
        ]),
      ),
    );
    // The property set on `early` before the upgrade became its attribute.
    assert.deepEqual(allowed, { markup: 2, early: 3, late: 1 });
    assert.equal(await page.getAttribute("#early", "limit"), "3/1s");
    assert.deepEqual(problems, []);
  });
});

describe("an element removed from the page", () => {
  it("stops asking for animation frames mid-animation, and starts again when put back", async () => {
    const { page, problems } = await openWith("", { clock: true });
    await page.clock.pauseAt(START);
    await page.evaluate(async () => {
      window.__widget = document.createElement("rate-limit-demo");
      window.__widget.limit = "6/8s";
      document.body.append(window.__widget);
      await window.__widget.ready;
      window.__widget.hit();
    });
    await framesRequested(page);
    await page.clock.runFor(500);
    assert.ok((await framesRequested(page)) > 10, "animating while the token comes back");

    await page.evaluate(() => window.__widget.remove());
    const removed = await framesRequested(page);
    await page.clock.runFor(2_000);
    assert.equal(await framesRequested(page), removed, "no frame once removed");
    // A script may still press it while it is away: it answers, and asks for no frame.
    const away = await page.evaluate(() => window.__widget.hit());
    assert.deepEqual([away.allowed, away.used], [true, 2]);
    await page.clock.runFor(2_000);
    assert.equal(await framesRequested(page), removed, "no frame after a hit while away");

    await page.evaluate(() => document.body.append(window.__widget));
    await page.clock.runFor(500);
    assert.ok((await framesRequested(page)) > removed + 10, "animating again once back");
    assert.equal(await partText(page, "rate-limit-demo", "current"), "2");
    await assertPageWorks(page);
    assert.deepEqual(problems, []);
  });

  it("lets go of its memory: five hundred widgets made, pressed and removed", async () => {
    const { page, problems } = await openWith("");
    await whenReady(page);
    /** Makes `count` widgets, presses each a few times, lets them animate, removes them. */
    const churn = (count) =>
      page.evaluate(async (count) => {
        const widgets = [];
        for (let n = 0; n < count; n++) {
          const widget = document.createElement("rate-limit-demo");
          widget.limit = "6/8s";
          document.body.append(widget);
          widgets.push(widget);
        }
        await Promise.all(widgets.map((widget) => widget.ready));
        for (const widget of widgets) for (let n = 0; n < 8; n++) widget.hit();
        await new Promise((frame) => requestAnimationFrame(frame));
        for (const widget of widgets) widget.remove();
        // Let the finalizers that free each limiter's WebAssembly memory run.
        await new Promise((later) => setTimeout(later, 50));
      }, count);
    const heaps = [];
    for (let round = 0; round < 10; round++) {
      await churn(50);
      heaps.push(await heapAfterGC(page));
    }
    const growth = heaps.at(-1) - heaps[1];
    // Each widget kept would hold about 2 kB of JS heap (its DOM lives in Blink's own heap):
    // 400 kept would add 800 kB. What remains is the page's own noise, a few kB.
    assert.ok(growth < 256 * 1024, `heap after rounds 2 and 10: ${heaps[1]} → ${heaps.at(-1)} bytes`);
    assert.equal(await page.locator("rate-limit-demo").count(), 0);
    await assertPageWorks(page);
    assert.deepEqual(problems, []);
  });
});
