// Predict mode (`predict`): before each Hit the reader says what the limiter will answer, 200
// or a 429 with roughly when to retry; the Hit then reveals the core's answer with the verdict,
// why the answer was what it was, and the score. The decision is plain mode's, made the same
// way through the same binding: this mode wraps plain mode and only adds the question, the
// reveal and the score. The reveal goes to the element's status line, a polite live region,
// so that a screen reader announces it as it announces any answer.

import { readPredict } from "./attributes.js";
import { html } from "./dom.js";
import { choices, verdict, why } from "./guess.js";
import * as plain from "./plain.js";
import styles from "./predict.css";

export { styles };

/** See modes.js for what the element asks of a mode. */
export function create(context) {
  // The mode is asked for by any value but "false"; a value it cannot take, or an attribute
  // of another mode beside it, is refused here, where the element shows the message.
  readPredict(context.attribute("predict"), {
    compare: context.compare,
    endpoint: context.attribute("endpoint"),
    replay: context.attribute("replay"),
  });
  return new PredictMode(context);
}

class PredictMode {
  /** Plain mode, which decides each press and draws the single-algorithm view. */
  #plain;
  #host;
  /** What a press needs to fit: its cost, or with a cost table the reserve. */
  #needs;
  #choices;
  #buttons;
  #score = html("p", { part: "score", class: "score" });
  /** The answer predicted for the next press, or null: a Hit asks for one first. */
  #chosen = null;
  #right = 0;
  #asked = 0;
  /** `used` after the last press, null before the first: what came back since is part of why. */
  #lastUsed = null;
  element;
  place = "single";
  hint = "Predict the answer above, then press Hit to see the limiter's.";

  constructor(context) {
    this.#plain = plain.create(context);
    this.#host = context.host;
    this.#needs = context.pricing.cost;
    this.#choices = choices(context.limiters[0].windowMs, context.pricing.table);
    // Toggle buttons, not radios: each is reached with Tab and chosen with Space or Enter,
    // where a radio group's other answers need the arrow keys.
    this.#buttons = this.#choices.map((choice) => {
      const button = html(
        "button",
        { part: "guess", class: "guess", type: "button", "aria-pressed": "false" },
        choice.label,
      );
      button.dataset.guess = choice.id;
      button.addEventListener("click", () => this.#choose(choice));
      return button;
    });
    this.element = html(
      "fieldset",
      { part: "prediction", class: "prediction" },
      html("legend", {}, "Your prediction for the next Hit"),
      html("div", { class: "guesses" }, ...this.#buttons),
      this.#score,
    );
    this.#showScore();
  }

  #choose(choice) {
    this.#chosen = choice;
    for (const [index, button] of this.#buttons.entries()) {
      button.setAttribute("aria-pressed", String(this.#choices[index] === choice));
    }
  }

  #showScore() {
    this.#score.textContent = this.#asked === 0 ? "No predictions yet." : this.#scoreText();
  }

  #scoreText() {
    return `Score: ${this.#right} of ${this.#asked} right.`;
  }

  now() {
    return this.#plain.now();
  }

  /** A press needs a prediction first; without one, nothing is sent and the reader is told. */
  hit(status, now) {
    const choice = this.#chosen;
    if (!choice) {
      this.#host.announce([
        html("span", { class: "hint" }, "Predict first: choose an answer above, then press Hit."),
      ]);
      return null;
    }
    const press = this.#plain.hit(status, now);
    const [decision] = press.decisions;
    const { correct, text } = verdict(choice, decision, this.#needs, this.#lastUsed);
    this.#lastUsed = decision.used;
    this.#asked++;
    if (correct) this.#right++;
    this.#choose(null);
    this.#showScore();
    const prediction = Object.freeze({
      allowed: choice.allowed,
      wait: choice.allowed ? null : Object.freeze({ fromMs: choice.fromMs, toMs: choice.toMs }),
      correct,
      right: this.#right,
      asked: this.#asked,
    });
    return {
      ...press,
      answer: [
        html(
          "span",
          { part: "verdict", class: `verdict ${correct ? "right" : "wrong"}` },
          // The mark is for the eye; the words say it to everyone.
          html("span", { "aria-hidden": "true" }, correct ? "✓ " : "✗ "),
          text,
        ),
        " ",
        ...press.answer,
        " ",
        html("span", { class: "why" }, why(decision, this.#needs)),
        " ",
        html("span", { class: "tally" }, this.#scoreText()),
      ],
      extra: { prediction },
    };
  }

  reset() {
    this.#plain.reset();
    this.#right = this.#asked = 0;
    this.#lastUsed = null;
    this.#choose(null);
    this.#showScore();
  }

  draw(now, resync) {
    return this.#plain.draw(now, resync);
  }

  teardown() {
    this.#plain.teardown();
  }
}
