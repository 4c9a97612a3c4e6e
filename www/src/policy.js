// Policy mode: a `limit` of several limits on the same requests (`10/1s 1000/1h`), decided
// all or nothing by the core's PolicyLimiter: a press is allowed only if every limit has
// room, a 429 charges none of them and its Retry-After is when all of them fit. One row per
// limit, with its formula and live numbers, its gauge, the tokens it has left and when they
// come back, the limit that answered the last 429 marked; the answer names it.
//
// Fetched on first use (modes.js), with the opt-in modes' WebAssembly (extras.js), which
// holds the core's policies: the default module knows one limit only.

import { RawPolicy, policy_buffer as policyBuffer } from "../pkg/trickle_extras.js";
import { algorithmLabel, algorithmMeaning } from "./algorithms.js";
import { html, updateText } from "./dom.js";
import { count, formatWait, formatWindow, pricingHint } from "./format.js";
import { createGauge, showGauge } from "./gauge.js";
import { loadExtras } from "./extras.js";
import {
  POLICY_FIELDS,
  checkPolicy,
  policyAnswer,
  policyHeadline,
  readPolicyCost,
  readPolicyDecision,
} from "./policy-decision.js";
import { answered } from "./respond.js";
import policyStyles from "./policy.css";

export const styles = policyStyles;

/** The WebAssembly's exports once loaded. */
let wasm = null;

/** Awaited by modes.js before `create`: the policy's WebAssembly, once for the page. */
export async function load() {
  wasm = await loadExtras("policy");
}

/** See modes.js for what the element asks of a mode. */
export function create({ attribute, compare, pricing, single, Limiter }) {
  const limit = attribute("limit");
  checkPolicy(limit, {
    compare,
    endpoint: attribute("endpoint"),
    predict: attribute("predict"),
    replay: attribute("replay"),
  });
  const algorithm = attribute("algorithm") ?? Limiter.algorithms[0];
  let raw;
  try {
    raw = new RawPolicy(limit, algorithm);
  } catch (error) {
    // The core reads the policy before the algorithm: with an algorithm it knows, the
    // message is the policy's, and names the attribute as a bad `costs` does.
    if (!Limiter.algorithms.includes(algorithm)) throw error;
    throw new Error(`limit="${limit}": ${error.message}`);
  }
  try {
    const limits = Array.from({ length: raw.count }, (_, index) => ({
      name: raw.name(index),
      text: raw.limit(index),
      tokens: raw.tokens(index),
      windowMs: raw.window_ms(index),
    }));
    // The element knows no N to check `cost` against: the smallest of the policy's is it.
    pricing.cost = readPolicyCost(attribute("cost"), limits);
    const mode = new PolicyMode(raw, limits, pricing);
    single.hide();
    return mode;
  } catch (error) {
    raw.free();
    throw error;
  }
}

/**
 * The buffer the core writes each decision into; made again only when the WebAssembly
 * memory has grown, which detaches the old view.
 */
let fields = new Float64Array(0);
function buffer() {
  if (fields.length === 0) fields = new Float64Array(wasm.memory.buffer, policyBuffer(), POLICY_FIELDS);
  return fields;
}

class PolicyMode {
  #raw;
  #limits;
  #pricing;
  /** One per limit: its row, the elements of its numbers, and its gauge. */
  #rows;
  element;
  place = "single";

  constructor(raw, limits, pricing) {
    this.#raw = raw;
    this.#limits = limits;
    this.#pricing = pricing;
    this.limit = raw.text;
    this.algorithm = raw.algorithm;
    if (limits.length > 1) {
      this.label = `${algorithmLabel(this.algorithm)} · a request must fit all ${limits.length}`;
    }
    this.hint = pricingHint(pricing) ?? "Press Hit to send a request: it must fit every limit.";
    this.#rows = limits.map((limit) => this.#row(limit));
    this.element = html(
      "div",
      { part: "policy", class: "policy", role: "list", "aria-label": "The policy's limits" },
      ...this.#rows.map((row) => row.element),
    );
  }

  headline(unit) {
    return policyHeadline(this.#limits, unit);
  }

  /** The page's own clock, which never jumps. */
  now() {
    return performance.now();
  }

  hit(status, now) {
    const { cost, table } = this.#pricing;
    const code = table ? this.#raw.respond(now, cost, table.cost(status)) : this.#raw.hit(now, cost);
    const policy = this.#read(code);
    const decision = table ? answered(policy, status) : policy;
    this.#mark(decision.answeredBy);
    const { code: line, explanation } = policyAnswer(decision, this.#pricing);
    const { allowed, outcome, answeredBy, retryAfterMs, retryAfter, remaining } = decision;
    return {
      decisions: decision.limits.map((own) => Object.freeze(own)),
      extra: { allowed, status: decision.status, outcome, answeredBy, retryAfterMs, retryAfter, remaining, policy: this.limit },
      changing: this.draw(now),
      answer: [
        html("span", { class: `code ${allowed ? "allowed" : "denied"}` }, line),
        " ",
        html("span", { class: "explanation" }, explanation),
      ],
    };
  }

  reset() {
    this.#raw.reset();
    this.#mark(null);
  }

  /** Draws every limit as of `now`; returns whether any still has tokens in use. */
  draw(now) {
    const { limits } = this.#read(this.#raw.peek(now, 0));
    let changing = false;
    for (const [index, own] of limits.entries()) {
      this.#render(this.#rows[index], own, now, index);
      changing ||= own.used > 0;
    }
    return changing;
  }

  teardown() {
    this.#raw.free();
  }

  #read(code) {
    return readPolicyDecision(buffer(), code, this.#limits, this.algorithm);
  }

  /** Marks the row of the limit that answered the last press; none when it was allowed. */
  #mark(answeredBy) {
    for (const row of this.#rows) {
      const marked = row.name === answeredBy;
      row.element.classList.toggle("answered", marked);
      row.badge.hidden = !marked;
    }
  }

  /** One limit's row: its name and N per W, the formula, the gauge, tokens left and back. */
  #row({ name, text, tokens, windowMs }) {
    const numbers = {};
    const term = (part, label) => {
      numbers[part] = html("span", { part, class: "number" });
      return html("span", { class: "term" }, numbers[part], html("span", { class: "label" }, label));
    };
    const operator = (sign) => html("span", { class: "operator" }, sign);
    const formula = [html("span", { class: "name" }, "used"), operator("=")];
    if (this.algorithm === "floating") {
      formula.push(
        term("previous", "previous window"),
        operator("×"),
        term("overlap", "share still inside"),
        operator("+"),
        term("current", "this window"),
        operator("="),
      );
    }
    formula.push(term("used", `of ${tokens} in use`));
    const meaning = algorithmMeaning(this.algorithm, tokens, formatWindow(windowMs));
    if (meaning) formula.push(html("span", { class: "meaning" }, meaning));

    const gauge = createGauge(tokens, { part: "gauge", "aria-label": `${name}: tokens in use` });
    const remaining = html("span", { part: "remaining", class: "remaining" });
    const next = html("p", { part: "next", class: "next" });
    const badge = html("span", { part: "answered-by", class: "answered-by", hidden: "" }, "answered the 429");
    const title = name === text ? text : `${name}: ${text}`;
    const element = html(
      "div",
      { part: "policy-limit", class: "policy-limit", role: "listitem", "data-limit": name },
      html(
        "p",
        { class: "policy-name" },
        html("code", {}, title),
        ` ${count(tokens, "token")} per ${formatWindow(windowMs)} `,
        badge,
      ),
      html("p", { part: "formula", class: "formula" }, ...formula),
      html("div", { class: "meter" }, gauge.element, remaining),
      next,
    );
    return { name, element, numbers, gauge, remaining, next, badge, shownUsed: null };
  }

  /** Shows limit `index`'s decision `own` in `row`, writing only what changed. */
  #render(row, own, now, index) {
    const { used, remaining, limit: tokens } = own;
    const { numbers } = row;
    updateText(numbers.used, used.toFixed(2));
    if (numbers.previous) {
      updateText(numbers.previous, String(own.previous));
      updateText(numbers.overlap, own.overlap.toFixed(3));
      updateText(numbers.current, String(own.current));
    }
    if (used !== row.shownUsed) {
      row.shownUsed = used;
      showGauge(row.gauge, used, remaining, this.#pricing.cost);
      updateText(
        row.remaining,
        used > tokens ? `0 of ${tokens} left · ${(used - tokens).toFixed(2)} over` : `${remaining} of ${tokens} left`,
      );
    }
    let back = `All ${count(tokens, "token")} available`;
    if (used > 0) {
      // When this limit alone has all of its tokens again: its own wait for a cost of N.
      const all = this.#read(this.#raw.peek(now, tokens)).limits[index].retryAfterMs ?? 0;
      back = `1 token back in ${formatWait(own.nextTokenMs ?? 0)} · all ${tokens} back in ${formatWait(all)}`;
    }
    updateText(row.next, back);
  }
}
