// Accessibility of the docs page and its widgets in Debian's Chromium: axe-core finds no
// violation in light, dark or forced colours, before and after a 429; Tab reaches Hit with a
// visible focus ring and Space and Enter press it; the answer is announced by a polite live
// region; reduced motion stops the animation but not the numbers; forced colours keep every
// state apart by text and shape, not colour. Screenshots go to target/e2e/a11y-*.png.

import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  ARTIFACTS,
  collectEvents,
  events,
  framesRequested,
  open,
  partText,
  start,
  whenReady,
} from "./harness.mjs";

/** axe-core's browser build; injected as a script tag, so it runs inside the page. */
const AXE = createRequire(import.meta.url).resolve("axe-core/axe.min.js");

/** The "Try it" widget (6/8s, floating, cost 1) and the ESI one below it. */
const TRY_IT = "#try rate-limit-demo";
const ESI = 'rate-limit-demo[costs="esi"]';

/** A window boundary of 6/8s, late enough for the page to have loaded on the fake clock. */
const START = 24_000;

/** A test that hangs (a paused fake clock, say) fails instead of stalling the suite. */
const NO_HANG = { timeout: 180_000 };

let session;
before(async () => {
  session = await start();
});
after(() => session?.close());

/** Opens the docs page with `options` (harness `open`) and waits for its widgets. */
async function openDocs(options = {}) {
  const opened = await open(session, options);
  const ready = await whenReady(opened.page);
  assert.ok(ready.length >= 2 && ready.every(Boolean), `widgets ready: ${ready}`);
  await collectEvents(opened.page);
  return opened;
}

/** Runs axe-core over the whole page, shadow roots included; returns what it found. */
async function audit(page) {
  if (!(await page.evaluate(() => "axe" in window))) await page.addScriptTag({ path: AXE });
  return page.evaluate(async () => {
    const { violations, incomplete } = await window.axe.run(document);
    const brief = (rule) => ({
      id: rule.id,
      impact: rule.impact,
      nodes: rule.nodes.map((node) => `${node.target.join(" >>> ")}: ${node.failureSummary}`),
    });
    return { violations: violations.map(brief), incomplete: incomplete.map(brief) };
  });
}

/** Presses Hit of the widget `selector` with the mouse; returns the decision it dispatched. */
async function press(page, selector, status) {
  const count = (await events(page)).length;
  const hit = status ? `${selector} [part~="hit"][data-status="${status}"]` : `${selector} [part~="hit"]`;
  await page.locator(hit).click();
  const all = await events(page);
  assert.equal(all.length, count + 1, "one press, one decision");
  return all.at(-1).detail;
}

/** Six allowed hits at START, then a 429: the state with the most on screen. */
async function playTo429(page) {
  await page.clock.pauseAt(START);
  for (let n = 0; n < 6; n++) assert.equal((await press(page, TRY_IT)).allowed, true);
  const denied = await press(page, TRY_IT);
  assert.equal(denied.status, 429);
  return denied;
}

describe("axe-core on the docs page", () => {
  for (const scheme of [
    { name: "light", options: { colorScheme: "light" } },
    { name: "dark", options: { colorScheme: "dark" } },
    { name: "forced-colors", options: { forcedColors: "active" } },
  ]) {
    it(`finds no violation in ${scheme.name}, idle and after a 429`, NO_HANG, async (t) => {
      const { page, problems, close } = await openDocs({ ...scheme.options, clock: true });
      const idle = await audit(page);
      assert.deepEqual(idle.violations, [], "idle");

      await playTo429(page);
      await page.locator("#try").screenshot({ path: join(ARTIFACTS, `a11y-${scheme.name}.png`) });
      // axe waits on timers, which the paused fake clock would never fire.
      await page.clock.resume();
      const after429 = await audit(page);
      assert.deepEqual(after429.violations, [], "after a 429");
      // axe marks text it cannot judge (over the SVG timeline) incomplete, not failed.
      const unsure = after429.incomplete.map((rule) => `${rule.id}: ${rule.nodes.length}`);
      t.diagnostic(`axe incomplete (needs a person): ${unsure.join(", ") || "none"}`);
      assert.deepEqual(problems, []);
      await close();
    });
  }
});

describe("keyboard only", () => {
  it("Tab from the top reaches Hit with a visible focus ring; Space and Enter press it", NO_HANG, async () => {
    const { page, problems, close } = await openDocs();
    /** What has focus: the element's tag, part and widget, looking into shadow roots. */
    const focused = () =>
      page.evaluate(() => {
        const host = document.activeElement;
        const inner = host?.shadowRoot?.activeElement;
        if (!inner) return { tag: host?.tagName.toLowerCase(), part: null, widget: null };
        const style = getComputedStyle(inner);
        return {
          tag: inner.tagName.toLowerCase(),
          part: inner.getAttribute("part"),
          widget: host.closest("#try") ? "try" : host.getAttribute("costs") ?? "other",
          focusVisible: inner.matches(":focus-visible"),
          outline: { style: style.outlineStyle, width: parseFloat(style.outlineWidth) },
        };
      });

    let presses = 0;
    let now;
    do {
      await page.keyboard.press("Tab");
      presses++;
      now = await focused();
    } while (now.part !== "hit" && presses < 30);
    assert.deepEqual(
      { tag: now.tag, part: now.part, widget: now.widget },
      { tag: "button", part: "hit", widget: "try" },
      `after ${presses} Tabs`,
    );
    assert.equal(now.focusVisible, true, "the keyboard focus is :focus-visible");
    assert.notEqual(now.outline.style, "none", "a focus outline is drawn");
    assert.ok(now.outline.width > 0, `outline width ${now.outline.width}`);

    await page.keyboard.press("Space");
    await page.keyboard.press("Enter");
    const decisions = (await events(page)).map((event) => event.detail);
    assert.deepEqual(
      decisions.map((detail) => [detail.allowed, detail.used]),
      [
        [true, 1],
        [true, 2],
      ],
      "Space, then Enter, each sent one request",
    );

    // The next stop is Reset, which the keyboard presses too.
    await page.keyboard.press("Tab");
    assert.equal((await focused()).part, "reset");
    await page.keyboard.press("Enter");
    assert.equal(await partText(page, TRY_IT, "used"), "0.00", "Reset emptied the bucket");
    assert.deepEqual(problems, []);
    await close();
  });
});

describe("screen readers", () => {
  it("hear each answer through the polite live region, which stays the same node", NO_HANG, async () => {
    const { page, problems, close } = await openDocs({ clock: true });
    const region = page.locator(TRY_IT).getByRole("status");
    assert.equal(await region.count(), 1, "one status region per widget");
    assert.equal(await region.getAttribute("aria-live"), "polite");
    // A live region announces changes to itself; one replaced by a new node is not heard.
    const node = await region.elementHandle();
    const before = await region.textContent();

    await page.clock.pauseAt(START);
    const allowed = await press(page, TRY_IT);
    const heardAllowed = await region.textContent();
    assert.notEqual(heardAllowed, before);
    assert.match(heardAllowed, /^200 OK /);
    assert.match(heardAllowed, new RegExp(`${allowed.remaining} of ${allowed.limit} left`));

    for (let n = 0; n < 5; n++) await press(page, TRY_IT);
    const denied = await press(page, TRY_IT);
    const heardDenied = await region.textContent();
    assert.match(heardDenied, new RegExp(`^429 Too Many Requests · Retry-After: ${denied.retryAfter} `));
    assert.match(heardDenied, new RegExp(`again in ${denied.retryAfterMs / 1000} s`));
    assert.equal(await node.evaluate((element) => element.isConnected), true, "same node");
    assert.equal(await node.textContent(), heardDenied);
    assert.deepEqual(problems, []);
    await close();
  });
});

describe("reduced motion", () => {
  /** Fills the Try-it widget at START + 7 s and returns the frames asked for and `used` shown over 3 s. */
  async function watchTokensComeBack(options) {
    const { page, problems, close } = await openDocs({ clock: true, ...options });
    await page.clock.pauseAt(START + 7_000);
    await framesRequested(page);
    for (let n = 0; n < 6; n++) await press(page, TRY_IT);
    const used = [];
    for (let second = 0; second < 3; second++) {
      await page.clock.runFor(1_000);
      used.push(await partText(page, TRY_IT, "used"));
    }
    const frames = await framesRequested(page);
    const transition = await page
      .locator(`${TRY_IT} .fill`)
      .evaluate((fill) => getComputedStyle(fill).transitionDuration);
    assert.deepEqual(problems, []);
    await close();
    return { frames, used, transition };
  }

  it("turns off the animation but keeps the numbers live", NO_HANG, async (t) => {
    const reduced = await watchTokensComeBack({ reducedMotion: "reduce" });
    // The window rolls at START + 8 s; from then the six tokens slide out, 0.75 a second.
    assert.deepEqual(reduced.used, ["6.00", "5.25", "4.50"], "numbers still move");
    assert.equal(reduced.frames, 0, "no animation frames");
    assert.match(reduced.transition, /^0s(, 0s)*$/, "no CSS transition on the gauge");

    // The same three seconds without the preference animate, so the counts above mean something.
    const full = await watchTokensComeBack({ reducedMotion: "no-preference" });
    // Frames land every 16 ms, so the last one shows the tokens up to 16 ms earlier: 0.012.
    full.used.forEach((used, second) =>
      assert.ok(Math.abs(used - reduced.used[second]) <= 0.02, `${used} at ${second + 1} s`),
    );
    assert.ok(full.frames > 100, `${full.frames} frames in 3 s at full motion`);
    t.diagnostic(`animation frames in 3 s: ${full.frames} at full motion, ${reduced.frames} reduced`);
    assert.doesNotMatch(full.transition, /^0s(, 0s)*$/);
  });
});

describe("forced colours", () => {
  it("keep allowed, denied, over the limit and an error apart without colour", NO_HANG, async () => {
    const { page, problems, close } = await openDocs({ forcedColors: "active", clock: true });
    assert.equal(await page.evaluate(() => matchMedia("(forced-colors: active)").matches), true);
    const answer = page.locator(`${TRY_IT} [part~="answer"]`);
    /** What a reader can tell a state by: the status text, its colour, and the timeline's last mark. */
    const state = async (locator, selector) => ({
      text: await locator.textContent(),
      colour: await locator.locator(".code").evaluate((code) => getComputedStyle(code).color),
      mark: await page
        .locator(`${selector} .marks > g`)
        .last()
        .evaluate((mark) => mark.firstElementChild.tagName),
      picture: await locator.screenshot(),
    });

    await page.clock.pauseAt(START);
    await press(page, TRY_IT);
    const allowed = await state(answer, TRY_IT);
    for (let n = 0; n < 5; n++) await press(page, TRY_IT);
    await press(page, TRY_IT);
    const denied = await state(answer, TRY_IT);

    // Over the limit: ESI charges a 404 five tokens after answering, on top of four.
    for (let n = 0; n < 2; n++) await press(page, ESI, 200);
    await press(page, ESI, 404);
    const esiAnswer = page.locator(`${ESI} [part~="answer"]`);
    const over = await state(esiAnswer, ESI);
    const overGauge = await partText(page, ESI, "remaining");

    // In forced colours both answers are the same system colour, so the rest must tell them apart.
    assert.equal(allowed.colour, denied.colour, "forced colours replace allowed/denied colours");
    assert.match(allowed.text, /^200 OK /);
    assert.match(denied.text, /^429 Too Many Requests · Retry-After: \d+ /);
    assert.match(over.text, /over the limit until it slides out/);
    assert.match(overGauge, /^0 of 6 left · 3\.00 over$/);
    assert.equal(allowed.mark, "circle", "an allowed hit is a dot");
    assert.equal(denied.mark, "path", "a denied hit is a cross");
    assert.notDeepEqual(allowed.picture, denied.picture);
    assert.notDeepEqual(allowed.picture, over.picture);
    assert.notDeepEqual(denied.picture, over.picture);

    // An error replaces the panel with a message in a bordered box of its own.
    await page.locator(TRY_IT).evaluate((widget) => widget.setAttribute("limit", "6/8x"));
    const error = page.locator(`${TRY_IT} [part~="error"]`);
    assert.match(await error.textContent(), /unknown unit "x"; the unit must be ms, s, m or h/);
    const border = await error.evaluate((box) => {
      const style = getComputedStyle(box);
      return { width: parseFloat(style.borderLeftWidth), style: style.borderLeftStyle };
    });
    assert.deepEqual(border, { width: 4, style: "solid" }, "the error's thick left border");
    assert.equal(await page.locator(`${TRY_IT} [part~="panel"]`).isVisible(), false);
    assert.deepEqual(problems, []);
    await close();
  });
});
