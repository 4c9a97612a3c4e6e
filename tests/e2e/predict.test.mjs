// Predict mode (`<rate-limit-demo predict>`) in Debian's Chromium, on the fake clock: right
// and wrong predictions against the core's answers, the score and Reset, a Hit without a
// prediction, a cost table's buttons, keyboard-only use (Tab, Space and Enter), the reveal
// heard through the polite live region, and axe-core with the mode on, idle, with a
// prediction chosen and after a wrong one, in light and forced colours.

import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { after, before, describe, it } from "node:test";
import { collectEvents, events, open, pageWith, partText, start, whenReady } from "./harness.mjs";

/** axe-core's browser build; injected as a script tag, so it runs inside the page. */
const AXE = createRequire(import.meta.url).resolve("axe-core/axe.min.js");

/** A window boundary of 6/8s, late enough for the page to have loaded on the fake clock. */
const START = 24_000;
const NO_HANG = { timeout: 180_000 };

const PAGE = pageWith(`<main>
<h1>Predict</h1>
<button id="before">before</button>
<rate-limit-demo id="predict" limit="6/8s" predict></rate-limit-demo>
<rate-limit-demo id="esi" limit="6/8s" costs="esi" predict></rate-limit-demo>
</main>`);

let session;
before(async () => {
  session = await start();
});
after(() => session?.close());

async function openPage(options = {}) {
  const opened = await open(session, { path: "fixture.html", html: PAGE, clock: true, ...options });
  assert.deepEqual(await whenReady(opened.page), [true, true]);
  await collectEvents(opened.page);
  return opened;
}

/** Chooses the prediction `guess` (allowed, soon, later, latest) of widget `#id`. */
function choose(page, id, guess) {
  return page.locator(`#${id} [part~="guess"][data-guess="${guess}"]`).click();
}

/** Presses Hit of `#id` (the button of `status`, with costs); returns the event's detail or null. */
async function hit(page, id, status) {
  const count = (await events(page)).length;
  const selector = status ? `[part~="hit"][data-status="${status}"]` : '[part~="hit"]';
  await page.locator(`#${id} ${selector}`).click();
  const all = await events(page);
  assert.ok(all.length <= count + 1, "at most one decision per press");
  return all.length === count + 1 ? all.at(-1).detail : null;
}

/** The prediction that is pressed now, by `data-guess`, or null. */
function pressed(page, id) {
  return page.evaluate((id) => {
    const buttons = document.getElementById(id).shadowRoot.querySelectorAll('[part~="guess"]');
    const on = [...buttons].filter((button) => button.getAttribute("aria-pressed") === "true");
    return on.length === 0 ? null : on.map((button) => button.dataset.guess).join(" ");
  }, id);
}

async function audit(page) {
  if (!(await page.evaluate(() => "axe" in window))) await page.addScriptTag({ path: AXE });
  return page.evaluate(async () => {
    const { violations } = await window.axe.run(document);
    return violations.map((rule) => ({
      id: rule.id,
      nodes: rule.nodes.map((node) => `${node.target.join(" >>> ")}: ${node.failureSummary}`),
    }));
  });
}

describe("predicting", () => {
  it("judges right and wrong predictions against the core, keeps the score, and Reset clears it", NO_HANG, async () => {
    const { page, problems, close } = await openPage();
    const answer = page.locator('#predict [part~="answer"]');
    assert.equal(await partText(page, "#predict", "score"), "No predictions yet.");
    const next = page.locator('#predict [part~="next"]');
    assert.equal(await next.isVisible(), false, "when tokens come back is not given away");
    assert.deepEqual(
      await page.locator('#predict [part~="guess"]').allTextContents(),
      ["200 OK", "429, retry within 2 s", "429, retry in 2 to 4 s", "429, retry in more than 4 s"],
    );
    await page.clock.pauseAt(START);

    // Right: an empty bucket lets the first request through.
    await choose(page, "predict", "allowed");
    assert.equal(await pressed(page, "predict"), "allowed");
    let detail = await hit(page, "predict");
    assert.equal(detail.allowed, true);
    assert.deepEqual(detail.prediction, { allowed: true, wait: null, correct: true, right: 1, asked: 1 });
    assert.equal(await pressed(page, "predict"), null, "each Hit asks for a new prediction");
    let text = await answer.textContent();
    assert.match(text, /^✓ Right: you said 200 OK\. 200 OK /);
    assert.match(text, /used = 0 × 1\.000 \+ 0 = 0, and 0 \+ 1 ≤ 6\./);
    assert.match(text, /Score: 1 of 1 right\.$/);
    assert.equal(await partText(page, "#predict", "score"), "Score: 1 of 1 right.");

    // Wrong: a 429 predicted where 5 tokens were free.
    await choose(page, "predict", "soon");
    detail = await hit(page, "predict");
    assert.equal(detail.allowed, true);
    assert.deepEqual(detail.prediction, {
      allowed: false,
      wait: { fromMs: 0, toMs: 2_000 },
      correct: false,
      right: 1,
      asked: 2,
    });
    text = await answer.textContent();
    assert.match(text, /^✗ Wrong: you said 429, but 5 of 6 tokens were free, enough for 1\. 200 OK /);
    assert.equal(await partText(page, "#predict", "score"), "Score: 1 of 2 right.");
    assert.equal(await page.locator('#predict [part~="verdict"]').getAttribute("class"), "verdict wrong");

    for (let n = 3; n <= 6; n++) {
      await choose(page, "predict", "allowed");
      assert.equal((await hit(page, "predict")).prediction.correct, true, `press ${n}`);
    }

    // Full: 200 predicted, 429 answered, with the sum that refused it.
    await choose(page, "predict", "allowed");
    detail = await hit(page, "predict");
    assert.equal(detail.status, 429);
    assert.equal(detail.prediction.correct, false);
    text = await answer.textContent();
    assert.match(text, /^✗ Wrong: you said 200 OK, but none of the 6 tokens was free, and this request needs 1\. 429 Too Many Requests · Retry-After: /);
    assert.match(text, /used = 0 × 1\.000 \+ 6 = 6, and 6 \+ 1 > 6\./);

    // The wait: the 6 tokens spent at the window's start slide out over the next window,
    // and one fits again once 5 of them are left, over 9 s away: more than 4 s.
    assert.ok(detail.retryAfterMs > 4_000, `wait ${detail.retryAfterMs}`);
    await choose(page, "predict", "soon");
    detail = await hit(page, "predict");
    assert.equal(detail.status, 429);
    assert.deepEqual([detail.prediction.correct, detail.prediction.right, detail.prediction.asked], [false, 5, 8]);
    assert.match(
      await answer.textContent(),
      new RegExp(`^✗ Nearly: 429 is right, but the wait was ${detail.retryAfterMs / 1000} s, not within 2 s\\.`),
    );
    await choose(page, "predict", "latest");
    detail = await hit(page, "predict");
    assert.deepEqual([detail.prediction.correct, detail.prediction.right, detail.prediction.asked], [true, 6, 9]);
    assert.match(await answer.textContent(), /^✓ Right: you said 429, retry in more than 4 s\./);

    // A Hit without a prediction sends nothing and says why.
    assert.equal(await hit(page, "predict"), null, "no decision without a prediction");
    assert.equal(await answer.textContent(), "Predict first: choose an answer above, then press Hit.");
    assert.equal(await page.evaluate(() => document.getElementById("predict").hit()), null);
    assert.equal(await partText(page, "#predict", "score"), "Score: 6 of 9 right.");

    // The formula and timeline are plain mode's: they show the core's state.
    assert.equal(await partText(page, "#predict", "used"), "6.00");
    await choose(page, "predict", "later");
    await page.locator('#predict [part~="reset"]').click();
    assert.equal(await partText(page, "#predict", "score"), "No predictions yet.");
    assert.equal(await pressed(page, "predict"), null, "Reset clears the prediction");
    assert.equal(await partText(page, "#predict", "used"), "0.00");
    await choose(page, "predict", "allowed");
    detail = await hit(page, "predict");
    assert.deepEqual([detail.presses, detail.prediction.right, detail.prediction.asked], [1, 1, 1]);

    // Without predict, the widget is plain again: no question, and the next token shown.
    await page.locator("#predict").evaluate((widget) => widget.removeAttribute("predict"));
    assert.equal(await page.locator('#predict [part~="prediction"]').count(), 0);
    assert.equal(await next.isVisible(), true);
    assert.equal((await hit(page, "predict")).prediction, undefined);
    assert.deepEqual(problems, []);
    await close();
  });

  it("tells of tokens that came back since the last press", NO_HANG, async () => {
    const { page, problems, close } = await openPage();
    await page.clock.pauseAt(START);
    for (let n = 0; n < 6; n++) {
      await choose(page, "predict", "allowed");
      await hit(page, "predict");
    }
    // Two windows on, all six have slid out.
    await page.clock.runFor(16_000);
    await choose(page, "predict", "soon");
    const detail = await hit(page, "predict");
    assert.equal(detail.allowed, true);
    assert.match(
      await partText(page, "#predict", "answer"),
      /^✗ Wrong: you said 429, but 6 of 6 tokens were free, enough for 1; 6 tokens had come back since the last press\./,
    );
    assert.deepEqual(problems, []);
    await close();
  });

  it("with costs: a Hit button per status, each judged; let through is the button's status", NO_HANG, async () => {
    const { page, problems, close } = await openPage();
    assert.equal(await page.locator('#esi [part~="guess"]').first().textContent(), "Let through");
    await page.clock.pauseAt(START);
    await choose(page, "esi", "allowed");
    let detail = await hit(page, "esi", 404);
    assert.deepEqual([detail.status, detail.cost, detail.reserved, detail.prediction.correct], [404, 5, 1, true]);
    // 5 of 6 in use: the reserve of 1 fits, and a 200 is charged 2, past the limit.
    await choose(page, "esi", "soon");
    detail = await hit(page, "esi", 200);
    assert.deepEqual([detail.status, detail.used, detail.prediction.correct], [200, 7, false]);
    assert.match(await partText(page, "#esi", "answer"), /used = 0 × 1\.000 \+ 5 = 5, and 5 \+ 1 ≤ 6\./);
    await choose(page, "esi", "allowed");
    detail = await hit(page, "esi", 304);
    assert.deepEqual([detail.status, detail.prediction.correct], [429, false]);
    assert.match(await partText(page, "#esi", "answer"), /but none of the 6 tokens was free, and this request needs 1\./);
    assert.deepEqual(problems, []);
    await close();
  });
});

describe("keyboard and screen readers", () => {
  it("Tab reaches each prediction, then Hit and Reset; Space and Enter choose and press", NO_HANG, async () => {
    const { page, problems, close } = await openPage();
    await page.clock.pauseAt(START);
    const focused = () =>
      page.evaluate(() => {
        const host = document.activeElement;
        const inner = host?.shadowRoot?.activeElement;
        if (!inner) return host?.id ?? null;
        return `${host.id}:${inner.getAttribute("part")}${inner.dataset.guess ? `:${inner.dataset.guess}` : ""}`;
      });
    await page.locator("#before").focus();
    const order = [];
    for (let n = 0; n < 6; n++) {
      await page.keyboard.press("Tab");
      order.push(await focused());
    }
    assert.deepEqual(order, [
      "predict:guess:allowed",
      "predict:guess:soon",
      "predict:guess:later",
      "predict:guess:latest",
      "predict:hit",
      "predict:reset",
    ]);
    const visible = await page.evaluate(() =>
      document.getElementById("predict").shadowRoot.activeElement.matches(":focus-visible"),
    );
    assert.equal(visible, true, "the keyboard focus is visible");

    const region = page.locator("#predict").getByRole("status");
    assert.equal(await region.getAttribute("aria-live"), "polite");
    const node = await region.elementHandle();

    // Back to the first answer: Shift+Tab is Tab too.
    for (let n = 0; n < 5; n++) await page.keyboard.press("Shift+Tab");
    assert.equal(await focused(), "predict:guess:allowed");
    await page.keyboard.press("Space");
    assert.equal(await pressed(page, "predict"), "allowed");
    for (let n = 0; n < 4; n++) await page.keyboard.press("Tab");
    assert.equal(await focused(), "predict:hit");
    await page.keyboard.press("Enter");
    assert.match(await region.textContent(), /^✓ Right: you said 200 OK\. 200 OK /);

    // Enter on a prediction, Space on Hit.
    for (let n = 0; n < 3; n++) await page.keyboard.press("Shift+Tab");
    assert.equal(await focused(), "predict:guess:soon");
    await page.keyboard.press("Enter");
    assert.equal(await pressed(page, "predict"), "soon");
    for (let n = 0; n < 3; n++) await page.keyboard.press("Tab");
    await page.keyboard.press("Space");
    assert.match(await region.textContent(), /^✗ Wrong: you said 429, but 5 of 6 tokens were free/);
    assert.match(await region.textContent(), /Score: 1 of 2 right\.$/);
    assert.equal(await node.evaluate((element) => element.isConnected), true, "the same live region");

    const details = (await events(page)).map((event) => event.detail.prediction.correct);
    assert.deepEqual(details, [true, false]);
    // The pressed state is exposed to assistive technology, not shown by colour alone.
    const guess = page.locator('#predict [part~="guess"][data-guess="later"]');
    await guess.click();
    assert.equal(await guess.getAttribute("aria-pressed"), "true");
    const looks = await guess.evaluate((button) => {
      const style = getComputedStyle(button);
      const mark = getComputedStyle(button, "::before").content;
      return { border: style.borderTopWidth, weight: style.fontWeight, mark };
    });
    assert.deepEqual(looks, { border: "2px", weight: "650", mark: '"● " / ""' });
    const group = page.locator("#predict").getByRole("group", { name: "Your prediction for the next Hit" });
    assert.equal(await group.count(), 1, "the answers are a named group");
    assert.deepEqual(problems, []);
    await close();
  });

  for (const scheme of [
    { name: "light", options: { colorScheme: "light" } },
    { name: "dark", options: { colorScheme: "dark" } },
    { name: "forced-colors", options: { forcedColors: "active" } },
  ]) {
    it(`axe-core finds no violation in ${scheme.name}: idle, chosen, after right and wrong`, NO_HANG, async () => {
      const { page, problems, close } = await openPage(scheme.options);
      assert.deepEqual(await audit(page), [], "idle");
      await page.clock.pauseAt(START);
      await choose(page, "predict", "allowed");
      await choose(page, "esi", "later");
      await hit(page, "predict");
      await choose(page, "predict", "soon");
      await hit(page, "predict");
      await hit(page, "esi", 404);
      await choose(page, "predict", "latest");
      await page.clock.resume();
      assert.deepEqual(await audit(page), [], "after right and wrong predictions, one chosen");
      assert.deepEqual(problems, []);
      await close();
    });
  }
});
