// Compare mode, loaded only by a widget with the `compare` attribute: the same presses sent to
// several algorithms at once, each with its own limiter under the same limit, shown one row
// each. It also counts, for each algorithm, the tokens it actually let in during the last W
// (a burst on either side of a fixed window's boundary shows as twice the limit), and how
// often the floating window answered differently from the exact sliding log (tally.js).

import { algorithmLabel, algorithmNote } from "./algorithms.js";
import { readCompared } from "./attributes.js";
import { html, updateText } from "./dom.js";
import { count, formatWait, formatWindow, formatTokens, pricingHint } from "./format.js";
import { createGauge, showGauge } from "./gauge.js";
import { respond } from "./respond.js";
import { Tally } from "./tally.js";
import styles from "./compare.css";

export { styles };

const EXPLANATIONS = {
  "wrongly-allowed": "The floating window let in a request the exact log refused: wrongly allowed.",
  "wrongly-limited": "The floating window refused a request the exact log let in: wrongly limited.",
};

/**
 * See modes.js for what the element asks of a mode. The element made one limiter for every
 * algorithm of the core's; the ones `algorithms` names are kept, in its order, and the
 * others freed, so that the attribute's messages stay out of the default bundle.
 */
export function create({ Limiter, limiters, pricing, single, attribute }) {
  const names = readCompared(
    { algorithm: attribute("algorithm"), algorithms: attribute("algorithms") },
    Limiter.algorithms,
  );
  const shown = names.map((name) => limiters.find((limiter) => limiter.algorithm === name));
  for (const limiter of limiters) if (!shown.includes(limiter)) limiter.free();
  limiters.splice(0, limiters.length, ...shown);
  const comparison = new Comparison(Limiter, limiters, pricing);
  single.hide();
  return comparison;
}

/** The mode: owned by the element, which gives it the clock reading and each press's status. */
class Comparison {
  /**
   * One per algorithm, in the order shown: `{ name, limiter, cells, gauge, shownUsed,
   * shownAdmitted }`, the last two what its cells show, null until drawn.
   */
  #rows = [];
  #tally;
  #pricing;
  #tokens;
  #windowMs;
  /** W as the widget writes it, "8 s". */
  #windowText;

  #window;
  /** A bar that fills over each fixed window, moved by CSS alone so that idle costs nothing. */
  #windowProgress;
  #counts = {};
  element;
  place = "single";

  /**
   * `limiters`: one Limiter per algorithm, in the order shown, all under the same limit;
   * the comparison owns them from here. `pricing`: `{ cost, table }` as respond() takes it.
   */
  constructor(Limiter, limiters, pricing) {
    this.#rows = limiters.map((limiter) => ({ name: limiter.algorithm, limiter }));
    const { tokens, windowMs } = limiters[0];
    // Frees its own audits if it throws; the element frees the limiters.
    this.#tally = new Tally(Limiter, this.algorithms, windowMs);
    this.#tokens = tokens;
    this.#windowMs = windowMs;
    this.#windowText = formatWindow(windowMs);
    this.#pricing = pricing;
    this.label = `${limiters.length} algorithms side by side`;
    this.hint =
      pricingHint(pricing) ?? "Press Hit to send one request to every algorithm at the same instant.";
    this.element = this.#build();
  }

  /** The algorithms shown, in order. */
  get algorithms() {
    return this.#rows.map((row) => row.name);
  }

  /** The page's own clock, which never jumps. */
  now() {
    return performance.now();
  }

  teardown() {
    for (const row of this.#rows) row.limiter.free();
    this.#rows = [];
    this.#tally.free();
  }

  reset() {
    for (const row of this.#rows) {
      row.limiter.reset();
      this.#showResponse(row, null);
    }
    this.#tally.reset();
    this.#showCounts();
  }

  /**
   * Sends one request to every algorithm at the same instant `now`; with a cost table,
   * `status` is what the server answers when a limiter lets it through. Each algorithm's
   * decision, in the order shown, and how the floating window's compared.
   */
  hit(status, now) {
    const decisions = this.#rows.map((row) => {
      const decision = Object.freeze(respond(row.limiter, this.#pricing, status, now));
      this.#showResponse(row, decision);
      return decision;
    });
    const verdict = this.#tally.add(decisions, now);
    this.#showCounts();
    return {
      decisions,
      verdict,
      changing: this.draw(now, true),
      answer: this.#announce(decisions, verdict.disagreement),
    };
  }

  /**
   * What the live region announces for a press: every algorithm's status, then what the
   * disagreement, if any, means; with costs, what the request reserved and was charged
   * where it was let in (the same everywhere: one reserve, one answer).
   */
  #announce(decisions, disagreement) {
    const codes = decisions.flatMap(({ algorithm, allowed, status }, index) => [
      index === 0 ? "" : " · ",
      `${algorithmLabel(algorithm)} `,
      html("span", { class: `code ${allowed ? "allowed" : "denied"}` }, String(status)),
    ]);
    const names = (list) => list.map((d) => algorithmLabel(d.algorithm)).join(", ");
    const allowed = decisions.filter((d) => d.allowed);
    const refused = decisions.filter((d) => !d.allowed);
    let explanation =
      EXPLANATIONS[disagreement] ??
      (allowed.length === 0 || refused.length === 0
        ? "All agree."
        : `Let in by the ${names(allowed)}; refused by the ${names(refused)}.`);
    const settled = this.#pricing.table && allowed[0];
    if (settled) {
      const where = refused.length ? " where let in" : "";
      explanation += ` Reserved ${count(settled.reserved, "token")}, charged ${settled.cost} after answering${where}.`;
    }
    return [...codes, html("span", { class: "explanation" }, explanation)];
  }

  /**
   * Draws every row as of `now`; returns whether anything still changes with time. Called
   * on every animation frame while it does, so a row's cells are written only when its
   * numbers moved. `resync` sets the window bar to the clock first (see syncWindowBar).
   */
  draw(now, resync) {
    if (resync) this.#syncWindowBar(now);
    let changing = false;
    for (const [index, row] of this.#rows.entries()) {
      const { used, remaining } = row.limiter.peek(now, 0);
      const admitted = this.#tally.admitted(index, now);
      if (used !== row.shownUsed) {
        row.shownUsed = used;
        updateText(row.cells.used, formatTokens(used));
        showGauge(row.gauge, used, remaining, this.#pricing.cost);
      }
      if (admitted !== row.shownAdmitted) {
        row.shownAdmitted = admitted;
        this.#showAdmitted(row.cells, admitted);
      }
      changing ||= used > 0 || admitted > 0;
    }
    this.#showWindow(now, changing);
    return changing;
  }

  /** A row's tokens let in during the last W, and by how much that passed the limit. */
  #showAdmitted({ admitted: admittedText, over, row }, admitted) {
    updateText(admittedText, String(admitted));
    updateText(over, this.#overLimit(admitted));
    row.classList.toggle("over", admitted > this.#tokens);
  }

  /**
   * How far past the limit an algorithm let tokens in within one W; empty when it held. A
   * whole multiple reads as one ("2× the limit": the fixed window's double burst).
   */
  #overLimit(admitted) {
    if (admitted <= this.#tokens) return "";
    const times = admitted / this.#tokens;
    return Number.isInteger(times)
      ? `${times}× the limit`
      : `${admitted - this.#tokens} over the limit`;
  }

  /**
   * Where the clock is in the fixed windows, so that a reader can see a burst at the end of
   * one and the start of the next: the countdown in words, live only while something
   * changes. The bar beside it keeps time by itself; see syncWindowBar.
   */
  #showWindow(now, changing) {
    if (!this.#window) return;
    const windowText = this.#windowText;
    if (!changing) {
      updateText(this.#window, `Fixed windows start every ${windowText}; the bar fills over each one.`);
      return;
    }
    const elapsed = Math.floor(now) % this.#windowMs;
    // Tenths of a second gone, rounded down, and to go, rounded up: they add up to W.
    const gone = `${(Math.floor(elapsed / 100) / 10).toFixed(1)} s`;
    const toGo = formatWait(this.#windowMs - elapsed);
    updateText(this.#window, `This ${windowText} fixed window: ${gone} in · the next starts in ${toGo}`);
  }

  /**
   * Sets the bar that fills over each fixed window to the clock `now`. It is a CSS
   * animation, left running from there, so that it shows the windows passing even while the
   * widget asks for no frames; the element sets it again whenever it draws for a reason other
   * than time passing (built, pressed, reset, put back on the page), never on every frame.
   */
  #syncWindowBar(now) {
    if (!this.#window) return;
    this.#windowProgress.style.animationDelay = `-${Math.floor(now) % this.#windowMs}ms`;
  }

  #showCounts() {
    const { judged, wronglyAllowed, wronglyLimited, presses } = this.#tally;
    if (!judged) return;
    updateText(this.#counts.allowed, String(wronglyAllowed));
    updateText(this.#counts.limited, String(wronglyLimited));
    updateText(this.#counts.presses, `${presses} press${presses === 1 ? "" : "es"}`);
  }

  /** The row's answer to the last press: the status, and Retry-After on a 429. */
  #showResponse(row, decision) {
    const cell = row.cells.response;
    if (!decision) {
      cell.replaceChildren(html("span", { class: "hint" }, "–"));
      return;
    }
    const code = html(
      "span",
      { class: `code ${decision.allowed ? "allowed" : "denied"}` },
      String(decision.status),
    );
    const children = [code];
    if (decision.retryAfter !== null) {
      children.push(" ", html("span", { class: "retry" }, `Retry-After: ${decision.retryAfter}`));
    }
    cell.replaceChildren(...children);
  }

  #build() {
    const tokens = this.#tokens;
    const windowText = this.#windowText;
    const head = html(
      "tr",
      {},
      ...["algorithm", "in use", `let in, last ${windowText}`, "this press"].map((label) =>
        html("th", { scope: "col" }, label),
      ),
    );
    const body = html("tbody");
    for (const row of this.#rows) {
      const label = algorithmLabel(row.name);
      row.gauge = createGauge(tokens, { "aria-label": `${label}: tokens in use` });
      row.shownUsed = row.shownAdmitted = null;
      const cells = {
        used: html("span", { part: "used", class: "number" }),
        admitted: html("span", { part: "admitted", class: "number" }),
        over: html("span", { part: "over", class: "over-note" }),
        response: html("td", { part: "response", class: "response" }),
      };
      const note = algorithmNote(row.name, tokens, windowText);
      cells.row = html(
        "tr",
        { part: "row", "data-algorithm": row.name },
        html(
          "th",
          { scope: "row" },
          html("span", { class: "algorithm" }, label),
          html("span", { class: "algorithm-note" }, note),
        ),
        html(
          "td",
          { class: "in-use" },
          row.gauge.element,
          cells.used,
          html("span", { class: "of" }, ` of ${tokens}`),
        ),
        html("td", { class: "admitted" }, cells.admitted, " ", cells.over),
        cells.response,
      );
      row.cells = cells;
      this.#showResponse(row, null);
      body.append(cells.row);
    }

    const caption = html(
      "caption",
      {},
      "Each Hit goes to every algorithm at the same instant. “Let in” counts the tokens " +
        `each one allowed in the last ${windowText}: above ${tokens}, a burst got through.`,
    );
    const parts = [html("table", { class: "comparison" }, caption, html("thead", {}, head), body)];
    if (this.#rows.some((row) => row.name === "fixed" || row.name === "floating")) {
      this.#window = html("p", { part: "window", class: "window" });
      this.#windowProgress = html("div", { class: "window-progress" });
      this.#windowProgress.style.animationDuration = `${this.#windowMs}ms`;
      // Decorative: the line under it says the same in words.
      const bar = html("div", { class: "window-bar", "aria-hidden": "true" }, this.#windowProgress);
      parts.push(bar, this.#window);
    }
    if (this.#tally.judged) {
      this.#counts = {
        allowed: html("strong", { part: "wrongly-allowed" }),
        limited: html("strong", { part: "wrongly-limited" }),
        presses: html("span", { part: "presses" }),
      };
      parts.push(
        html(
          "p",
          { part: "disagreements", class: "disagreements" },
          "Floating window against the exact log: ",
          this.#counts.allowed,
          " wrongly allowed · ",
          this.#counts.limited,
          " wrongly limited, in ",
          this.#counts.presses,
        ),
        html(
          "p",
          { part: "disagreement-note", class: "disagreement-note" },
          "A disagreement is a press the floating window answered differently from the " +
            `sliding log, which knows when each request of the last ${windowText} was made. ` +
            "The floating window assumes the previous window's requests were spread evenly " +
            "across it: if they came late, it lets a request in too soon (wrongly allowed); " +
            "if they came early, it refuses one the log would take (wrongly limited).",
        ),
      );
      this.#showCounts();
    }
    return html("div", { part: "comparison", class: "compare" }, ...parts);
  }
}
