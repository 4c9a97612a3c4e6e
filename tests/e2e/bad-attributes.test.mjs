// The element's attributes, one table each: every bad value of limit (one limit, or a policy
// of several), algorithm, cost, costs, compare, algorithms and predict is explained as text in place of the widget, and the text says what is
// allowed; no markup is parsed, no dialog opens, no NaN shows, nothing is thrown at the page,
// and the page around it keeps working; a good value brings the widget back. Each value is
// tried twice: written in the page's HTML, and set later on a working widget.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { collectEvents, events, open, pageWith, start, whenReady } from "./harness.mjs";

const MARKUP = "<img src=x onerror=alert(1)>";

const LIMIT_FORM = "write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m";
const UNITS = "the unit must be ms, s, m or h, as in 6/8s";
const TOKENS = "is not a whole number from 1 to 18446744073709551615";
const TOO_LARGE =
  "is too large to show exactly: use at most 9007199254740991 tokens per window of at most 9007199254740991 ms";
const ALGORITHMS = "use floating, sliding-log, fixed or token-bucket";
const COMPARED = "name two or more of floating, sliding-log, fixed, token-bucket, separated by spaces, or leave algorithms out for all 4";
const TABLE_FORM =
  'write a table as STATUS:COST entries separated by spaces, where STATUS is a status from 100 to 599 or a class 1xx to 5xx and COST a whole number of tokens, as in "200:2 304:1 4xx:5 429:0 5xx:0", or name the preset "esi"';

/** The message for a bad `cost` under a 6-token limit. */
const cost = (text) => `cost "${text}" is not allowed: use a whole number of tokens from 0 to 6`;
/** The message for a bad `costs`: the core's own, for the table as written. */
const costs = (text, what) => `costs="${text}": ${what}`;
/** The message for a `costs` entry with no ':'. */
const noColon = (text, entry = text) =>
  costs(text, `cost table entry "${entry}" has no ':' between a status and its cost; ${TABLE_FORM}`);
/** The message for a `compare` that is neither on nor off. */
const notOnOff = (text) =>
  `compare="${text}" is not allowed: compare is on or off (write compare, or leave it out); name the algorithms to compare in algorithms, e.g. algorithms="floating sliding-log"`;
/** The message for a `predict` that is neither on nor off. */
const predictOnOff = (text) =>
  `predict="${text}" is not allowed: predict is on or off (write predict, or leave it out)`;
const PREDICT_COMPARE =
  "predict cannot be used with compare, which answers each Hit with several algorithms: leave compare out, and name the algorithm to predict in algorithm";
/** The message for `predict` beside `endpoint`. */
const predictLive = (endpoint) =>
  `predict cannot be used with endpoint="${endpoint}": predict mode asks for the widget's own answer before each Hit, live mode shows a server's after it; leave one of them out`;
/** The message for `algorithms` that names something else. */
const notAnAlgorithm = (text, name) => `algorithms="${text}": "${name}" is not an algorithm; ${COMPARED}`;

/** Nine limits, one more than a policy may hold. */
const NINE = "1/1s 2/1s 3/1s 4/1s 5/1s 6/1s 7/1s 8/1s 9/1s";
/** The message for a bad policy: the core's own, for the attribute as written. */
const policy = (text, what) => `limit="${text}": ${what}`;
/** The message for another mode's attribute beside the policy 2/1s 3/4s. */
const policyWith = (name, why) =>
  `limit="2/1s 3/4s" is a policy of several limits, and ${name} cannot be used with one: ${why}; leave ${name} out, or write one limit`;

/**
 * One table per attribute. `good` is what makes the widget work again (null removes an
 * attribute); each row is the attributes tried, and the exact message shown for them.
 */
const TABLES = {
  limit: {
    good: { limit: "6/8s" },
    rows: [
      // Zero, negative, fractional, NaN, Infinity, empty.
      [{ limit: "0/8s" }, "a limit needs at least 1 token per window, got 0"],
      [{ limit: "6/0s" }, "a window must be at least 1 ms long, got 0"],
      [{ limit: "-6/8s" }, `limit "-6/8s": tokens "-6" ${TOKENS}; ${LIMIT_FORM}`],
      [{ limit: "1.5/8s" }, `limit "1.5/8s": tokens "1.5" ${TOKENS}; ${LIMIT_FORM}`],
      [{ limit: "6/1.5s" }, `limit "6/1.5s": unknown unit ".5s"; ${UNITS}`],
      [{ limit: "NaN/8s" }, `limit "NaN/8s": tokens "NaN" ${TOKENS}; ${LIMIT_FORM}`],
      [{ limit: "Infinity/8s" }, `limit "Infinity/8s": tokens "Infinity" ${TOKENS}; ${LIMIT_FORM}`],
      [{ limit: "" }, `limit "" has no '/'; ${LIMIT_FORM}`],
      // Huge: beyond u64, and beyond 2^53, which the core takes but JS cannot show exactly.
      [
        { limit: "18446744073709551616/1s" },
        `limit "18446744073709551616/1s": tokens "18446744073709551616" ${TOKENS}; ${LIMIT_FORM}`,
      ],
      [
        { limit: "6/18446744073709551616ms" },
        `limit "6/18446744073709551616ms": the window is longer than 18446744073709551615 ms, the longest allowed`,
      ],
      [{ limit: "9007199254740993/1s" }, `limit "9007199254740993/1s" ${TOO_LARGE}`],
      [{ limit: "6/9007199254740992ms" }, `limit "6/9007199254740992ms" ${TOO_LARGE}`],
      // Wrong unit, missing parts, whitespace inside, non-ASCII, markup.
      [{ limit: "6/8x" }, `limit "6/8x": unknown unit "x"; ${UNITS}`],
      [{ limit: "6/" }, `limit "6/": window "" is not a whole number followed by a unit; ${LIMIT_FORM}`],
      [{ limit: "/8s" }, `limit "/8s": tokens "" ${TOKENS}; ${LIMIT_FORM}`],
      [{ limit: "6 / 8s" }, `limit "6 / 8s": tokens "6 " ${TOKENS}; ${LIMIT_FORM}`],
      [{ limit: "   " }, `limit "   " has no '/'; ${LIMIT_FORM}`],
      [{ limit: "６/8s" }, `limit "６/8s": tokens "６" ${TOKENS}; ${LIMIT_FORM}`],
      [{ limit: "6/8秒" }, `limit "6/8秒": unknown unit "秒"; ${UNITS}`],
      [{ limit: MARKUP }, `limit "${MARKUP}" has no '/'; ${LIMIT_FORM}`],
    ],
  },
  algorithm: {
    good: { algorithm: null },
    rows: [
      [{ algorithm: "leaky" }, `unknown algorithm "leaky"; ${ALGORITHMS}`],
      [{ algorithm: "" }, `unknown algorithm ""; ${ALGORITHMS}`],
      [{ algorithm: "0" }, `unknown algorithm "0"; ${ALGORITHMS}`],
      [{ algorithm: "NaN" }, `unknown algorithm "NaN"; ${ALGORITHMS}`],
      [{ algorithm: "Floating" }, `unknown algorithm "Floating"; ${ALGORITHMS}`],
      [{ algorithm: " fixed" }, `unknown algorithm " fixed"; ${ALGORITHMS}`],
      [{ algorithm: "ﬁxed" }, `unknown algorithm "ﬁxed"; ${ALGORITHMS}`],
      [{ algorithm: MARKUP }, `unknown algorithm "${MARKUP}"; ${ALGORITHMS}`],
    ],
  },
  cost: {
    good: { cost: null },
    rows: [
      [{ cost: "-1" }, cost("-1")],
      [{ cost: "1.5" }, cost("1.5")],
      [{ cost: "NaN" }, cost("NaN")],
      [{ cost: "Infinity" }, cost("Infinity")],
      [{ cost: "" }, cost("")],
      [{ cost: "7" }, cost("7")],
      [{ cost: "99999999999999999999" }, cost("99999999999999999999")],
      [{ cost: "9007199254740993" }, cost("9007199254740993")],
      [{ cost: "1e3" }, cost("1e3")],
      [{ cost: "2 tokens" }, cost("2 tokens")],
      [{ cost: "   " }, cost("   ")],
      [{ cost: "１" }, cost("１")],
      [{ cost: MARKUP }, cost(MARKUP)],
    ],
  },
  costs: {
    good: { costs: null },
    rows: [
      [{ costs: "" }, costs("", `a cost table needs at least one entry; ${TABLE_FORM}`)],
      [{ costs: "github" }, noColon("github")],
      [{ costs: "ESI" }, noColon("ESI")],
      [{ costs: "0" }, noColon("0")],
      [{ costs: "ｅｓｉ" }, noColon("ｅｓｉ")],
      [{ costs: "esi 500:1" }, noColon("esi 500:1", "esi")],
      [{ costs: MARKUP }, noColon(MARKUP, "<img")],
      [
        { costs: "200:2 6xx:1" },
        costs("200:2 6xx:1", `cost table entry "6xx:1": "6xx" is not an HTTP class; the classes are 1xx, 2xx, 3xx, 4xx and 5xx`),
      ],
      [
        { costs: "200:2 200:3" },
        costs("200:2 200:3", "cost table prices 200 twice; write each status or class once"),
      ],
      [
        { costs: "429:0" },
        `costs="429:0" prices no answer but 429, which the limiter gives itself and which costs nothing: add the statuses a request can get, e.g. costs="200:2 429:0"`,
      ],
      [
        { costs: "200:-1" },
        costs("200:-1", `cost table entry "200:-1": cost "-1" is not a whole number of tokens from 0 to 18446744073709551615; ${TABLE_FORM}`),
      ],
    ],
  },
  compare: {
    good: { compare: null, algorithms: null },
    rows: [
      [{ compare: "floating sliding-log" }, notOnOff("floating sliding-log")],
      [{ compare: "floating" }, notOnOff("floating")],
      [{ compare: "0" }, notOnOff("0")],
      [{ compare: "yes" }, notOnOff("yes")],
      [{ compare: MARKUP }, notOnOff(MARKUP)],
      [
        { algorithms: "floating sliding-log" },
        `algorithms="floating sliding-log" picks what compare mode shows: add compare, or write algorithm="…" for one algorithm`,
      ],
    ],
  },
  algorithms: {
    good: { compare: "", algorithms: "floating sliding-log", algorithm: null, cost: null, costs: null, limit: "6/8s" },
    rows: [
      [{ algorithms: "floating" }, `algorithms="floating" names one algorithm, and compare needs two or more; for one, leave compare out and write algorithm="floating"`],
      [{ algorithms: "fixed fixed" }, `algorithms="fixed fixed" names fixed twice; name each algorithm once`],
      [{ algorithms: ", ," }, `algorithms=", ," names no algorithm; ${COMPARED}`],
      [{ algorithms: "leaky fixed" }, notAnAlgorithm("leaky fixed", "leaky")],
      [{ algorithms: "0" }, notAnAlgorithm("0", "0")],
      [{ algorithms: "NaN" }, notAnAlgorithm("NaN", "NaN")],
      [{ algorithms: "ﬂoating fixed" }, notAnAlgorithm("ﬂoating fixed", "ﬂoating")],
      [{ algorithms: MARKUP }, notAnAlgorithm(MARKUP, "<img")],
      // With the other attributes.
      [
        { algorithm: "fixed" },
        `algorithm="fixed" cannot be used with compare, which runs several: leave algorithm out and name them in algorithms, e.g. algorithms="floating sliding-log"`,
      ],
      [{ cost: "7" }, cost("7")],
      [{ costs: "github" }, noColon("github")],
      [{ limit: "6/8x" }, `limit "6/8x": unknown unit "x"; ${UNITS}`],
      [{ limit: "9007199254740993/1s" }, `limit "9007199254740993/1s" ${TOO_LARGE}`],
    ],
  },
  predict: {
    good: { predict: null, compare: null, endpoint: null, replay: null, limit: "6/8s" },
    rows: [
      [{ predict: "yes" }, predictOnOff("yes")],
      [{ predict: "0" }, predictOnOff("0")],
      [{ predict: MARKUP }, predictOnOff(MARKUP)],
      [{ predict: "", compare: "" }, PREDICT_COMPARE],
      [{ predict: "true", compare: "true" }, PREDICT_COMPARE],
      [{ predict: "", endpoint: "http://127.0.0.1:9/fittings" }, predictLive("http://127.0.0.1:9/fittings")],
      [{ predict: "", endpoint: MARKUP }, predictLive(MARKUP)],
      [
        { replay: "", predict: "" },
        "predict cannot be used with replay, which plays a log instead of the reader's presses: leave one of them out",
      ],
      // The widget's own checks come first.
      [{ predict: "", limit: "6/8x" }, `limit "6/8x": unknown unit "x"; ${UNITS}`],
    ],
  },
  // A policy of several limits: the core's PolicyError, named by the attribute.
  policy: {
    good: { limit: "2/1s 3/4s", algorithm: null, cost: null, compare: null, predict: null, replay: null },
    rows: [
      [{ limit: "10/1s 10/1s" }, policy("10/1s 10/1s", 'two limits named "10/1s" in one policy; give each limit its own name, as in burst=10/1s')],
      [{ limit: NINE }, policy(NINE, "a policy holds at most 8 limits")],
      [{ limit: "10/1s garbage" }, policy("10/1s garbage", `limit 2 of the policy: limit "garbage" has no '/'; ${LIMIT_FORM}`)],
      [{ limit: "10/1s 0/1h" }, policy("10/1s 0/1h", "limit 2 of the policy: a limit needs at least 1 token per window, got 0")],
      [
        { limit: "Burst=10/1s 1000/1h" },
        policy("Burst=10/1s 1000/1h", 'limit name "Burst" must be 1 to 32 characters of a-z, 0-9, _, - and ., starting with a letter'),
      ],
      [{ limit: `10/1s ${MARKUP}` }, policy(`10/1s ${MARKUP}`, `limit 2 of the policy: limit "<img" has no '/'; ${LIMIT_FORM}`)],
      // With the other attributes: cost against the smallest limit, the other modes refused.
      [{ limit: "2/1s 3/4s", cost: "3" }, 'cost "3" is not allowed: use a whole number of tokens from 0 to 2'],
      [{ limit: "2/1s 3/4s", algorithm: "leaky" }, `unknown algorithm "leaky"; ${ALGORITHMS}`],
      [{ limit: "2/1s 3/4s", compare: "" }, policyWith("compare", "compare runs one limit through several algorithms")],
      [{ limit: "2/1s 3/4s", predict: "" }, policyWith("predict", "predict mode asks about one limit")],
      [
        { limit: "2/1s 3/4s", replay: "" },
        policyWith("replay", "replay mode plays a log against one limit, as trickle replay does"),
      ],
    ],
  },
};

let session;
before(async () => {
  session = await start();
});
after(() => session?.close());

/** `attributes` as HTML, escaped so that each value arrives exactly as written. */
function attributeHTML(attributes) {
  const escape = (text) =>
    text.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
  return Object.entries(attributes)
    .filter(([, value]) => value !== null)
    .map(([name, value]) => ` ${name}="${escape(value)}"`)
    .join("");
}

/** Sets (or, for null, removes) each attribute of the widget `#id`. */
function setAttributes(page, id, attributes) {
  return page.evaluate(
    ([id, attributes]) => {
      const widget = document.getElementById(id);
      for (const [name, value] of Object.entries(attributes)) {
        if (value === null) widget.removeAttribute(name);
        else widget.setAttribute(name, value);
      }
    },
    [id, attributes],
  );
}

/**
 * What the widget `#id` shows: its error text, whether the error and the panel are visible,
 * and every text and attribute value in the shown part of its shadow root (labels and the
 * timeline's coordinates included), where a NaN would show.
 */
function shown(page, id) {
  return page.evaluate((id) => {
    const root = document.getElementById(id).shadowRoot;
    const visible = (part) => {
      const element = root.querySelector(`[part~="${part}"]`);
      return Boolean(element) && !element.hidden && element.getClientRects().length > 0;
    };
    const everything = [];
    const walk = (node) => {
      if (node.nodeType === Node.TEXT_NODE) return everything.push(node.data);
      if (node.hidden) return;
      for (const attribute of node.attributes ?? []) everything.push(attribute.value);
      for (const child of node.childNodes) walk(child);
    };
    walk(root);
    return {
      error: root.querySelector('[part~="error"]').textContent,
      errorVisible: visible("error"),
      panelVisible: visible("panel"),
      everything: everything.join("\n"),
    };
  }, id);
}

/** Everything a bad value must not do to the page: markup, dialogs, console errors. */
async function assertPageUnharmed(page, problems, dialogs) {
  // Playwright's locators look inside open shadow roots too.
  assert.equal(await page.locator("img").count(), 0, "no <img> was parsed from any attribute");
  assert.deepEqual(dialogs, [], "no alert or other dialog");
  assert.deepEqual(problems, [], "no console error and nothing thrown");
  await page.locator("#page-button").click();
  assert.equal(await page.locator("#page-button").textContent(), "still works");
}

/**
 * Checks that `#id` shows exactly `message` as its error, and no NaN anywhere else: the
 * message may quote a value such as "NaN/8s" back, the rest of the widget may not.
 */
async function assertExplains(page, id, message) {
  // A mode's own checks (predict mode's) run once its module has arrived.
  await page.waitForFunction((id) => document.getElementById(id).shadowRoot.querySelector(".loading").hidden, id);
  const view = await shown(page, id);
  assert.equal(view.error, message, `${id}: the message`);
  assert.equal(view.errorVisible, true, `${id}: the error shows`);
  assert.equal(view.panelVisible, false, `${id}: the widget is replaced by the error`);
  const rest = view.everything.replaceAll(message, "");
  assert.doesNotMatch(rest, /NaN|undefined|\[object /, `${id}: no NaN or undefined shown`);
}

/** Presses Hit on `#id` and checks that the working widget answered with one event. */
async function assertWorks(page, id) {
  const before = (await events(page)).length;
  await page.locator(`#${id} [part~="hit"]`).first().click();
  const all = await events(page);
  assert.equal(all.length, before + 1, `${id}: one press, one decision`);
  assert.equal(all.at(-1).widget, id);
  const view = await shown(page, id);
  assert.deepEqual([view.errorVisible, view.panelVisible], [false, true], `${id}: the widget is back`);
  assert.doesNotMatch(view.everything, /NaN|undefined|\[object /, `${id}: no NaN or undefined shown`);
}

for (const [attribute, table] of Object.entries(TABLES)) {
  describe(`${attribute}: ${table.rows.length} bad values`, () => {
    it("each one written in the page: explained as text, the page unharmed, fixed by a good value", async () => {
      const base = { limit: "6/8s", ...(attribute === "algorithms" ? table.good : {}) };
      const widgets = table.rows
        .map(([attributes], index) => `<rate-limit-demo id="row-${index}"${attributeHTML({ ...base, ...attributes })}></rate-limit-demo>`)
        .join("\n");
      const body = `${widgets}
        <button id="page-button" onclick="this.textContent = 'still works'">page</button>`;
      const { page, problems, close } = await open(session, { path: "fixture.html", html: pageWith(body) });
      const dialogs = [];
      page.on("dialog", (dialog) => {
        dialogs.push(dialog.message());
        dialog.dismiss();
      });
      const ready = await whenReady(page);
      assert.deepEqual(ready, table.rows.map(() => false), "no widget with a bad value is ready");
      await collectEvents(page);

      for (const [index, [, message]] of table.rows.entries()) {
        await assertExplains(page, `row-${index}`, message);
      }
      await assertPageUnharmed(page, problems, dialogs);

      for (const index of table.rows.keys()) {
        await setAttributes(page, `row-${index}`, table.good);
        await assertWorks(page, `row-${index}`);
      }
      assert.deepEqual(problems, []);
      await close();
    });

    it("each one set on a working widget: the same message, and back to work after", async () => {
      const good = { limit: "6/8s", ...table.good };
      const body = `<rate-limit-demo id="widget"${attributeHTML(good)}></rate-limit-demo>
        <button id="page-button" onclick="this.textContent = 'still works'">page</button>`;
      const { page, problems, close } = await open(session, { path: "fixture.html", html: pageWith(body) });
      const dialogs = [];
      page.on("dialog", (dialog) => {
        dialogs.push(dialog.message());
        dialog.dismiss();
      });
      assert.deepEqual(await whenReady(page), [true]);
      await collectEvents(page);
      await assertWorks(page, "widget");

      for (const [attributes, message] of table.rows) {
        await setAttributes(page, "widget", attributes);
        await assertExplains(page, "widget", message);
        assert.equal(await page.evaluate(() => document.getElementById("widget").hit()), null, "hit() does nothing");
        await setAttributes(page, "widget", good);
        await assertWorks(page, "widget");
      }
      await assertPageUnharmed(page, problems, dialogs);
      await close();
    });
  });
}

describe("values at the edge that are accepted", () => {
  it("whitespace around a limit or cost, cost 0, the largest limit shown exactly", async () => {
    const accepted = [
      { limit: " 6/8s\n" },
      { limit: "6/8s", cost: " 2 " },
      { limit: "6/8s", cost: "0" },
      { limit: "9007199254740991/1s", cost: "9007199254740991" },
      { limit: "6/9007199254740991ms" },
      { limit: "6/8s", compare: "", algorithms: " floating,sliding-log " },
      { limit: "6/8s", compare: "true" },
      { limit: "6/8s", compare: "false" },
      { limit: "6/8s", costs: " esi" },
      { limit: "6/8s", costs: "200:2  4xx:5 404:1" },
      { limit: "6/8s", predict: "false", compare: "" },
    ];
    const body = accepted
      .map((attributes, index) => `<rate-limit-demo id="edge-${index}"${attributeHTML(attributes)}></rate-limit-demo>`)
      .join("\n");
    const { page, problems, close } = await open(session, { path: "fixture.html", html: pageWith(body) });
    assert.deepEqual(await whenReady(page), accepted.map(() => true));
    await collectEvents(page);
    for (const index of accepted.keys()) await assertWorks(page, `edge-${index}`);
    const details = (await events(page)).map((event) => event.detail);
    assert.deepEqual(
      details.slice(0, 4).map((detail) => [detail.limit, detail.cost, detail.allowed]),
      [
        [6, 1, true],
        [6, 2, true],
        [6, 0, true],
        [9007199254740991, 9007199254740991, true],
      ],
    );
    assert.deepEqual(
      details.slice(5, 8).map((detail) => detail.decisions.map((decision) => decision.algorithm)),
      [["floating", "sliding-log"], ["floating", "sliding-log", "fixed", "token-bucket"], ["floating"]],
      "compare with algorithms, compare=\"true\", compare=\"false\"",
    );
    assert.deepEqual(
      details.slice(8, 10).map((detail) => [detail.status, detail.cost]),
      [
        [200, 2],
        [200, 2],
      ],
      "the first button of each cost table",
    );
    assert.equal(details[10].decisions.length, 4, 'predict="false" is off: compare mode runs');
    assert.equal(details[10].prediction, undefined);
    const buttons = await page.evaluate(() =>
      [...document.getElementById("edge-9").shadowRoot.querySelectorAll('[part~="hit"]')].map(
        (button) => button.textContent,
      ),
    );
    assert.deepEqual(buttons, ["Hit → 200 OK 2 tokens", "Hit → 400 Bad Request 5 tokens", "Hit → 404 Not Found 1 token"]);
    assert.deepEqual(problems, []);
    await close();
  });
});
