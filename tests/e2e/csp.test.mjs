// The docs page, and a page with a widget in compare mode, under the strict
// Content-Security-Policy docs/src/embedding.md tells embedding sites to use: no inline script
// or style, nothing from other origins, WebAssembly allowed. The widget must work with no
// violation reported, by the page's own `securitypolicyviolation` events or by the console.
// The server adds the policy to every file it serves from disk, so both pages are files: a
// copy of target/site with the compare page written beside the docs page.

import assert from "node:assert/strict";
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { SITE, open, pageWith, partText, start, whenReady } from "./harness.mjs";

const POLICY = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'";

/** A window boundary of 6/8s, late enough that the page has loaded on the fake clock. */
const START = 24_000;

let root;
let session;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "trickle-csp-"));
  await cp(SITE, root, { recursive: true });
  // pageWith's data: icon is not 'self': the site's own icon instead.
  const compare = pageWith(`<rate-limit-demo compare limit="6/8s"></rate-limit-demo>`);
  await writeFile(join(root, "compare.html"), compare.replace(`href="data:,"`, `href="/favicon.svg"`));
  session = await start({ headers: { "content-security-policy": POLICY }, root });
});
after(async () => {
  await session?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

/** Runs in the page before its scripts: records every violation the browser reports. */
function recordViolations() {
  window.__violations = [];
  document.addEventListener("securitypolicyviolation", (event) => {
    window.__violations.push(`${event.violatedDirective} blocked ${event.blockedURI || "inline"}`);
  });
}

const violations = (page) => page.evaluate(() => window.__violations);

describe("under a strict Content-Security-Policy", () => {
  it("the docs page loads, every widget works, and nothing is blocked", async () => {
    const { page, problems } = await open(session, { clock: true, initScript: recordViolations });
    const served = await page.evaluate(async () => (await fetch(location.href)).headers.get("content-security-policy"));
    assert.equal(served, POLICY, "the page really is served with the policy");

    const ready = await whenReady(page);
    assert.ok(ready.length >= 2 && ready.every(Boolean), `every widget interactive: ${ready}`);

    // A reader presses Hit until the 429, as in the page's "Try it".
    await page.clock.pauseAt(START);
    const widget = page.locator('rate-limit-demo[limit="6/8s"]:not([costs])').first();
    const hit = widget.locator('[part~="hit"]');
    for (let n = 0; n < 6; n++) await hit.click();
    assert.match(await widget.locator('[part~="answer"]').textContent(), /^200 OK/);
    await hit.click();
    assert.match(await widget.locator('[part~="answer"]').textContent(), /^429 Too Many Requests · Retry-After: 10\b/);
    // The gauge's width is set through the CSSOM, which style-src 'self' allows.
    assert.equal(await widget.locator('[part~="gauge"] .fill').evaluate((fill) => fill.style.width), "100%");
    // Frames keep drawing the tokens coming back.
    await page.clock.runFor(9_000);
    assert.match(await widget.locator('[part~="used"]').textContent(), /^[0-9.]+$/);

    // Predict mode's module and its stylesheet, under the same policy.
    const predict = page.locator("rate-limit-demo[predict]");
    await predict.locator('[part~="guess"][data-guess="allowed"]').click();
    await predict.locator('[part~="hit"]').click();
    assert.match(await predict.locator('[part~="answer"]').textContent(), /^✓ Right: you said 200 OK\. 200 OK/);
    assert.equal(await predict.locator('[part~="prediction"]').evaluate((box) => getComputedStyle(box).borderTopStyle), "solid");

    const esi = page.locator('rate-limit-demo[costs="esi"]');
    await esi.locator('[part~="hit"][data-status="404"]').click();
    assert.match(await esi.locator('[part~="answer"]').textContent(), /^404 Not Found/);

    assert.deepEqual(await violations(page), []);
    assert.deepEqual(problems, []);

    // The probe can fail: an inline script, which this policy forbids, is reported both ways.
    await page.evaluate(() => {
      const script = document.createElement("script");
      script.textContent = "window.__inlineRan = true;";
      document.head.append(script);
    });
    await page.waitForFunction(() => window.__violations.length > 0);
    assert.deepEqual(await violations(page), ["script-src-elem blocked inline"]);
    assert.equal(await page.evaluate(() => window.__inlineRan), undefined);
    assert.ok(
      problems.some((problem) => problem.includes("Content Security Policy")),
      `the console reports it: ${problems}`,
    );
  });

  it("compare mode loads its module (script-src 'self') and works, and nothing is blocked", async () => {
    let fetched = 0;
    const { page, problems } = await open(session, {
      path: "compare.html",
      clock: true,
      initScript: recordViolations,
      // Passed through to the server untouched, only counted.
      routes: [["**/compare.js", (route) => (fetched++, route.continue())]],
    });
    const served = await page.evaluate(async () => (await fetch(location.href)).headers.get("content-security-policy"));
    assert.equal(served, POLICY, "the page really is served with the policy");
    assert.deepEqual(await whenReady(page), [true]);
    assert.equal(fetched, 1, "compare mode's module was fetched");

    await page.clock.pauseAt(START);
    const compare = page.locator("rate-limit-demo[compare]");
    assert.equal(await compare.locator('[part~="row"]').count(), 4, "all four algorithms");
    await compare.locator('[part~="hit"]').click();
    assert.match(await compare.locator('[part~="answer"]').textContent(), /200/);
    // Compare mode sets its window bar's animation through the CSSOM, which style-src 'self'
    // allows.
    const bar = await compare.evaluate((element) => element.shadowRoot.querySelector(".window-progress").style.animationDuration);
    assert.equal(bar, "8000ms");

    assert.deepEqual(await violations(page), []);
    assert.deepEqual(problems, []);
  });

  it("without 'wasm-unsafe-eval', each widget says what the policy lacks, and the page works", async () => {
    const policy = "default-src 'self'; script-src 'self'; style-src 'self'";
    const body = `<rate-limit-demo></rate-limit-demo>
      <button id="page-button" type="button">page</button>
      <script type="module" src="/page-button.js"></script>`;
    // A page of its own, with a stricter policy than the server's, which forbids a data: icon.
    const fixture = (route) =>
      route.fulfill({
        contentType: "text/html; charset=utf-8",
        headers: { "content-security-policy": policy },
        body: pageWith(body).replace(`href="data:,"`, `href="/favicon.svg"`),
      });
    // The page's own script, as a file: the policy forbids inline handlers.
    const pageScript = (route) =>
      route.fulfill({
        contentType: "text/javascript",
        body: `document.getElementById("page-button").addEventListener("click", (event) => {
          event.target.textContent = "still works";
        });`,
      });
    const { page, problems } = await open(session, {
      path: "fixture.html",
      initScript: recordViolations,
      routes: [
        ["**/fixture.html", fixture],
        ["**/page-button.js", pageScript],
      ],
    });
    assert.deepEqual(await whenReady(page), [false]);
    assert.match(
      await partText(page, "rate-limit-demo", "error"),
      /Content-Security-Policy does not allow WebAssembly: add 'wasm-unsafe-eval' to its script-src/,
    );
    await page.locator("#page-button").click();
    assert.equal(await page.locator("#page-button").textContent(), "still works");
    const blocked = await violations(page);
    assert.ok(blocked.length > 0, "the browser reports the blocked compilation");
    assert.deepEqual(new Set(blocked), new Set(["script-src blocked wasm-eval"]));
    assert.deepEqual(problems, []);
  });
});
