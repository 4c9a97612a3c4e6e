// The single-algorithm view: the formula with live numbers, the gauge of tokens in use, the
// timeline and when tokens come back. The element makes one, once, so that the timeline keeps
// its measured width across rebuilds; plain mode and live mode show it, compare mode hides it.

import { algorithmMeaning } from "./algorithms.js";
import { html, updateText } from "./dom.js";
import { count, formatWait, formatWindow } from "./format.js";
import { createGauge, showGauge } from "./gauge.js";
import { Timeline } from "./timeline.js";

export class SingleView {
  element;
  timeline = new Timeline();
  #formula = html("p", { part: "formula", class: "formula" });
  #gaugeBox = html("div", { class: "meter" });
  #remaining = html("span", { part: "remaining", class: "remaining" });
  #next = html("p", { part: "next", class: "next" });
  #numbers = {};
  #gauge = null;
  /** The `used` and `remaining` the gauge and the tokens left show, null until drawn. */
  #shownUsed = null;
  #shownRemaining = null;
  #limiter = null;
  #cost = 1;

  constructor() {
    this.element = html(
      "div",
      { class: "single" },
      this.#formula,
      this.#gaugeBox,
      this.timeline.element,
      this.#next,
    );
  }

  /** Shows the view for `limiter`, whose tokens a press spends `cost` of (or asks to fit). */
  show(limiter, cost) {
    this.#limiter = limiter;
    this.#cost = cost;
    this.element.hidden = false;
    this.#buildFormula();
    this.#gauge = createGauge(limiter.tokens, { part: "gauge", "aria-label": "Tokens in use" });
    this.#gaugeBox.replaceChildren(this.#gauge.element, this.#remaining);
    this.#shownUsed = this.#shownRemaining = null;
    this.timeline.build(limiter.algorithm, limiter.windowMs);
  }

  hide() {
    this.element.hidden = true;
  }

  /** Adds a press to the timeline. */
  remember(decision) {
    this.timeline.remember(decision);
  }

  /** Empties the timeline; the limiter it was shown for is the caller's to free. */
  forget() {
    this.timeline.forget();
  }

  /**
   * The formula with one element per number. For the floating window every term of
   * `used = previous × overlap + current` appears, each labelled with what it means.
   */
  #buildFormula() {
    const { algorithm, tokens, windowMs } = this.#limiter;
    const term = (part, label) => {
      this.#numbers[part] = html("span", { part, class: "number" });
      return html(
        "span",
        { class: "term" },
        this.#numbers[part],
        html("span", { class: "label" }, label),
      );
    };
    const operator = (sign) => html("span", { class: "operator" }, sign);
    this.#numbers = {};
    const children = [html("span", { class: "name" }, "used"), operator("=")];
    if (algorithm === "floating") {
      children.push(
        term("previous", "previous window"),
        operator("×"),
        term("overlap", "share still inside"),
        operator("+"),
        term("current", "this window"),
        operator("="),
        term("used", `of ${tokens} in use`),
      );
    } else {
      children.push(term("used", `of ${tokens} in use`));
      const meaning = algorithmMeaning(algorithm, tokens, formatWindow(windowMs));
      if (meaning) children.push(html("span", { class: "meaning" }, meaning));
    }
    this.#formula.replaceChildren(...children);
  }

  /**
   * Shows `decision`: the formula, the gauge, the timeline and when tokens come back; returns
   * whether the picture still changes with time. Called on every animation frame while tokens
   * come back, so it writes only what changed.
   */
  render(decision) {
    const { used, remaining, limit: tokens } = decision;
    const numbers = this.#numbers;
    updateText(numbers.used, used.toFixed(2));
    if (numbers.previous) {
      updateText(numbers.previous, String(decision.previous));
      updateText(numbers.overlap, decision.overlap.toFixed(3));
      updateText(numbers.current, String(decision.current));
    }
    if (used !== this.#shownUsed || remaining !== this.#shownRemaining) {
      this.#shownUsed = used;
      this.#shownRemaining = remaining;
      showGauge(this.#gauge, used, remaining, this.#cost);
      // Only a cost table's charge after answering can take `used` past the limit.
      updateText(
        this.#remaining,
        used > tokens
          ? `0 of ${tokens} left · ${(used - tokens).toFixed(2)} over`
          : `${remaining} of ${tokens} left`,
      );
    }
    updateText(this.#next, this.#whenTokensComeBack(decision));
    this.timeline.draw(decision);
    return used > 0 || this.timeline.busy;
  }

  #whenTokensComeBack({ used, limit: tokens, remaining, t }) {
    if (used === 0) return `All ${count(tokens, "token")} available`;
    // `remaining` whole tokens fit now; the next whole one is back when one more would fit.
    const nextMs = this.#limiter.peek(t, Math.floor(remaining) + 1).retryAfterMs;
    const allMs = this.#limiter.peek(t, tokens).retryAfterMs;
    return `1 token back in ${formatWait(nextMs)} · all ${tokens} back in ${formatWait(allMs)}`;
  }
}
