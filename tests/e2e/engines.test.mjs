// The docs page in the engines readers use besides Chromium: Firefox ESR (headless, through
// geckodriver) and WebKit (WebKitGTK's MiniBrowser in an Xvfb, through WebKitWebDriver), over
// W3C WebDriver (webdriver.mjs). A smoke test of what a reader does, on the release build as
// `make site` lays it out: every widget gets ready, Hit pressed until a 429, the formula's
// numbers, the Retry-After, and a token back once it has passed; and predict mode, right and
// wrong predictions and the score, chosen and pressed from the keyboard, then axe-core. The page's clock is
// the engine's own (WebDriver has no fake one), so the wait is real: at most 8 s + 8/6 s.
//
// What each session reported (engine, version, driver) is written to target/e2e/engines.json;
// the README's browser list is that file. A missing browser or driver fails the suite with
// the command that installs it.

import assert from "node:assert/strict";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { serve } from "../../scripts/serve.mjs";
import { ARTIFACTS, SITE } from "./harness.mjs";
import { ENGINES, launch } from "./webdriver.mjs";

/** The "Try it" widget of the docs page: `limit="6/8s"`, the floating window, cost 1. */
const WIDGET = "#try rate-limit-demo";
const LIMIT = 6;
/** The predict widget of the docs page, at the same limit. */
const PREDICT = "rate-limit-demo[predict]";

const require = createRequire(import.meta.url);
const { Key } = require("selenium-webdriver");
/** axe-core's browser build, run in the page by a script, as WebDriver runs any. */
const AXE = require.resolve("axe-core/axe.min.js");

let server;
const ran = [];
before(async () => {
  await mkdir(ARTIFACTS, { recursive: true });
  server = await serve(SITE, 0);
});
after(async () => {
  await server?.close();
  await writeFile(join(ARTIFACTS, "engines.json"), `${JSON.stringify({ engines: ran }, null, 2)}\n`);
});

// Run in the page, these read the shadow DOM with plain DOM calls: the engines' WebDriver
// shadow-root commands differ, and a script is the same everywhere.

/**
 * axe-core's violations on the whole page, each rule with the nodes it found, as
 * predict.test.mjs reads them in Chromium. Loads axe into the page first.
 */
function axeViolations(source, done) {
  if (!("axe" in window)) {
    const script = document.createElement("script");
    script.textContent = source;
    document.head.append(script);
  }
  window.axe
    .run(document)
    .then(({ violations }) =>
      done(
        violations.map((rule) => ({
          id: rule.id,
          nodes: rule.nodes.map((node) => `${node.target.join(" >>> ")}: ${node.failureSummary}`),
        })),
      ),
    )
    .catch((error) => done([{ id: "axe failed", nodes: [String(error)] }]));
}

/** Resolves with each widget's `ready` once the element is defined. */
function allReady(done) {
  customElements
    .whenDefined("rate-limit-demo")
    .then(() => Promise.all([...document.querySelectorAll("rate-limit-demo")].map((element) => element.ready)))
    .then(done, (error) => done(String(error)));
}

/**
 * Records every decision of the widget with the formula and answer as they stand when the
 * event fires: the element draws a decision before dispatching it, and the next animation
 * frame would already show a later time.
 */
function collectDecisions(selector) {
  const element = document.querySelector(selector);
  const text = (part) => element.shadowRoot.querySelector(`[part~="${part}"]`)?.textContent ?? null;
  window.__decisions = [];
  element.addEventListener("rate-limit-decision", ({ detail }) => {
    const { allowed, status, used, previous, overlap, current, limit, remaining, retryAfterMs, prediction } = detail;
    window.__decisions.push({
      detail: { allowed, status, used, previous, overlap, current, limit, remaining, retryAfterMs, prediction },
      shown: { previous: text("previous"), overlap: text("overlap"), current: text("current"), used: text("used") },
      answer: text("answer"),
    });
  });
}

function decisions() {
  return window.__decisions;
}

/**
 * The widget's Hit button, scrolled into view at once. The docs page scrolls smoothly
 * (`scroll-behavior: smooth` unless the reader asks for less motion), and WebKitWebDriver's
 * click scrolls the way the page says: it then finds the button still off screen and
 * refuses it as not interactable. Firefox scrolls instantly, as the WebDriver spec says.
 */
function hitButton(selector) {
  const button = document.querySelector(selector).shadowRoot.querySelector('[part~="hit"]');
  button.scrollIntoView({ block: "center", behavior: "instant" });
  return button;
}

/** The widget's part `part` (`[data-guess=…]` narrows it), scrolled into view as hitButton does. */
function partOf(selector, part, guess) {
  const narrow = guess ? `[data-guess="${guess}"]` : "";
  const element = document.querySelector(selector).shadowRoot.querySelector(`[part~="${part}"]${narrow}`);
  element.scrollIntoView({ block: "center", behavior: "instant" });
  return element;
}

/** The text of the widget's part `part`. */
function partTextOf(selector, part) {
  return document.querySelector(selector).shadowRoot.querySelector(`[part~="${part}"]`).textContent;
}

/** Puts the focus on the prediction `guess`, as a reader's Tab would, and returns nothing. */
function focusGuess(selector, guess) {
  document.querySelector(selector).shadowRoot.querySelector(`[data-guess="${guess}"]`).focus();
}

/** Whether the prediction `guess` is chosen: its `aria-pressed`. */
function guessPressed(selector, guess) {
  return document.querySelector(selector).shadowRoot.querySelector(`[data-guess="${guess}"]`).getAttribute("aria-pressed");
}

/** What has the focus inside the widget: its part and its `data-guess`, or null. */
function focusedPart(selector) {
  const inner = document.querySelector(selector).shadowRoot.activeElement;
  return inner ? [inner.getAttribute("part"), inner.dataset.guess ?? null].join(":") : null;
}

/** What the widget shows now, as text. */
function shown(selector) {
  const root = document.querySelector(selector).shadowRoot;
  const text = (part) => root.querySelector(`[part~="${part}"]`)?.textContent ?? null;
  return {
    previous: text("previous"),
    overlap: text("overlap"),
    current: text("current"),
    used: text("used"),
    next: text("next"),
  };
}

/**
 * The shown formula adds up: used = previous × overlap + current, to the digits shown
 * (overlap to 3 places, used to 2), so an error of half a unit in each last place.
 */
function assertFormulaAddsUp({ previous, overlap, current, used }, when) {
  for (const [name, value] of Object.entries({ previous, overlap, current, used })) {
    assert.match(value ?? "", /^\d+(\.\d+)?$/, `${name} is a number ${when}: ${value}`);
  }
  const share = Number(overlap);
  assert.ok(share >= 0 && share <= 1, `overlap ${overlap} is a share ${when}`);
  const sum = Number(previous) * share + Number(current);
  const slack = Number(previous) * 0.0005 + 0.005 + 1e-9;
  assert.ok(
    Math.abs(sum - Number(used)) <= slack,
    `${previous} × ${overlap} + ${current} = ${sum.toFixed(4)}, shown used ${used} ${when}`,
  );
}

for (const engine of ENGINES) {
  describe(engine.name, () => {
    let browser;
    let denied;
    const record = { engine: engine.name };

    before(async () => {
      const log = join(ARTIFACTS, `${engine.name.toLowerCase().replace(/\W+/g, "-")}.log`);
      const started = Date.now();
      browser = await launch(engine, log);
      Object.assign(record, browser.capabilities, { passed: [] });
      ran.push(record);
      record.sessionStartMs = Date.now() - started;
      await browser.driver.manage().setTimeouts({ script: 30_000, pageLoad: 30_000 });
    });
    after(() => browser?.close());

    /** An `it` that notes in engines.json that this check passed in this engine. */
    const check = (name, body) =>
      it(name, async () => {
        await body();
        record.passed.push(name);
      });

    /** Presses Hit as a reader does, with a WebDriver click; returns that press's decision. */
    async function press() {
      const { driver } = browser;
      const before = (await driver.executeScript(decisions)).length;
      const button = await driver.executeScript(hitButton, WIDGET);
      await button.click();
      const all = await driver.executeScript(decisions);
      assert.equal(all.length, before + 1, "one click, one decision");
      return all.at(-1);
    }

    check("loads the docs page with every widget ready", async () => {
      const { driver } = browser;
      await driver.get(`${server.url}/`);
      assert.equal(await driver.getTitle(), "Understanding a rate limit · trickle");
      const ready = await driver.executeAsyncScript(allReady);
      assert.ok(Array.isArray(ready) && ready.length >= 1, `widgets found: ${JSON.stringify(ready)}`);
      assert.deepEqual(ready, ready.map(() => true), "every widget loaded its wasm and is interactive");
    });

    check("answers 429 with a Retry-After, the formula showing why", async () => {
      const { driver } = browser;
      await driver.executeScript(collectDecisions, WIDGET);
      const presses = [];
      while (presses.length < 2 * LIMIT && !denied) {
        const decision = await press();
        presses.push(decision);
        if (!decision.detail.allowed) denied = decision;
      }
      // From an empty bucket, used never exceeds the hits made so far: the first six fit.
      for (const [n, { detail, answer }] of presses.slice(0, LIMIT).entries()) {
        assert.deepEqual([detail.allowed, detail.status], [true, 200], `press ${n + 1}`);
        assert.match(answer, /200 OK/, `press ${n + 1}`);
      }
      assert.ok(denied, `a 429 within ${2 * LIMIT} presses`);

      const { detail, shown: formula, answer } = denied;
      assert.equal(detail.status, 429);
      assert.equal(detail.limit, LIMIT);
      assert.ok(detail.used + 1 > LIMIT, `used ${detail.used} leaves no room for one more`);
      assert.ok(detail.retryAfterMs > 0 && detail.retryAfterMs <= 8_000 + Math.ceil(8_000 / LIMIT));
      // What the reader sees is the decision's own numbers...
      assert.deepEqual(formula, {
        previous: String(detail.previous),
        overlap: detail.overlap.toFixed(3),
        current: String(detail.current),
        used: detail.used.toFixed(2),
      });
      // ...and they add up.
      assertFormulaAddsUp(formula, "at the 429");
      assert.match(answer, /429 Too Many Requests/);
      assert.match(answer, new RegExp(`Retry-After: ${Math.ceil(detail.retryAfterMs / 1000)}\\b`));
    });

    check("gives a token back once Retry-After has passed", async () => {
      assert.ok(denied, "needs the 429 of the test before");
      const { driver } = browser;
      await driver.sleep(denied.detail.retryAfterMs);
      // Drawn by the engine's animation frames since the 429, with nothing pressed: polled,
      // as a loaded machine may draw the frame after the token late.
      let now;
      await driver.wait(
        async () => {
          now = await driver.executeScript(shown, WIDGET);
          return Number(now.used) <= LIMIT - 1;
        },
        2_000,
        "a token drawn back after Retry-After",
        50,
      );
      assertFormulaAddsUp(now, "after Retry-After");
      assert.ok(Number(now.used) <= LIMIT - 1, `a token is free again: used ${now.used}`);
      assert.match(now.next, /token/);

      const again = await press();
      assert.deepEqual([again.detail.allowed, again.detail.status], [true, 200]);
      assert.match(again.answer, /200 OK/);
      assertFormulaAddsUp(again.shown, "at the press after");
    });

    check("predict mode: a right and a wrong prediction, the score, from the mouse and the keyboard", async () => {
      const { driver } = browser;
      await driver.executeScript(collectDecisions, PREDICT);
      const latest = async (count) => {
        const all = await driver.executeScript(decisions);
        assert.equal(all.length, count, `${count} decisions`);
        return all.at(-1);
      };
      const text = (part) => driver.executeScript(partTextOf, PREDICT, part);

      // A Hit without a prediction sends nothing.
      await (await driver.executeScript(partOf, PREDICT, "hit")).click();
      assert.equal(await text("answer"), "Predict first: choose an answer above, then press Hit.");
      assert.equal((await driver.executeScript(decisions)).length, 0);

      // Clicked: 200 OK, and an empty bucket lets the request through.
      await (await driver.executeScript(partOf, PREDICT, "guess", "allowed")).click();
      await (await driver.executeScript(partOf, PREDICT, "hit")).click();
      let decision = await latest(1);
      assert.equal(decision.detail.allowed, true);
      assert.deepEqual(decision.detail.prediction, { allowed: true, wait: null, correct: true, right: 1, asked: 1 });
      assert.match(decision.answer, /^✓ Right: you said 200 OK\. 200 OK /);
      assert.match(decision.answer, /and 0 \+ 1 ≤ 6\./);

      // From the keyboard: Space on "429 within 2 s", Tab to Hit, Enter. Wrong: 5 were free.
      await driver.executeScript(focusGuess, PREDICT, "soon");
      await driver.actions().sendKeys(Key.SPACE).perform();
      assert.equal(await driver.executeScript(guessPressed, PREDICT, "soon"), "true", "Space chose the prediction");
      for (let n = 0; n < 3; n++) await driver.actions().sendKeys(Key.TAB).perform();
      assert.equal(await driver.executeScript(focusedPart, PREDICT), "hit:", "Tab reaches Hit after the predictions");
      await driver.actions().sendKeys(Key.ENTER).perform();
      decision = await latest(2);
      assert.equal(decision.detail.allowed, true);
      assert.deepEqual(decision.detail.prediction, {
        allowed: false,
        wait: { fromMs: 0, toMs: 2_000 },
        correct: false,
        right: 1,
        asked: 2,
      });
      assert.match(decision.answer, /^✗ Wrong: you said 429, but 5(\.\d+)? of 6 tokens were free, enough for 1/);
      assert.match(decision.answer, /Score: 1 of 2 right\.$/);
      assert.equal(await text("score"), "Score: 1 of 2 right.");

      // After a right and a wrong prediction, with the verdict and the score shown.
      const axe = await readFile(AXE, "utf8");
      assert.deepEqual(await driver.executeAsyncScript(axeViolations, axe), [], "axe-core's violations");
    });
  });
}
