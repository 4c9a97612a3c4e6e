/**
 * <rate-limit-demo>: a rate limit a reader can press, for API docs.
 *
 * Each element runs its own limiter from trickle, the project's Rust core compiled to
 * WebAssembly, so every number it shows is the core's own answer. For the floating window it
 * shows why a request fits or not: `used = previous × overlap + current` with the real
 * numbers, and a timeline on which the previous fixed window slides out of the last W.
 *
 *   <script type="module" src="rate-limit-demo.js"></script>
 *   <rate-limit-demo limit="6/8s"></rate-limit-demo>
 *
 * The module loads ./pkg/trickle.js, ./pkg/trickle_bg.wasm and ./rate-limit-demo.css from
 * next to itself, so the three can live at any path. ESM only, no dependencies.
 *
 * Attributes (each has a property of the same name that reads and writes it):
 *   limit      N tokens per window W, as ESI writes it: "6/8s", "150/15m". Default "6/8s".
 *   algorithm  "floating" (default), "sliding-log", "fixed" or "token-bucket".
 *   cost       Tokens each Hit spends: a whole number from 0 to N. Default 1. The property
 *              reads 1 while the attribute is not a whole number.
 *   costs      "esi": one Hit button per response class, charged by ESI's table after
 *              answering (200 OK 2, 304 1, 404 5, 500 0; a 429 costs nothing). `cost` is
 *              ignored then.
 *   compare    Compare mode: every Hit goes to several algorithms at the same instant, each
 *              with its own bucket under the same limit, cost and costs, shown one row each
 *              with the tokens it let in during the last W, and a count of the presses on
 *              which the floating window disagreed with the exact sliding log. The bare
 *              attribute compares all four; "floating sliding-log" picks two or more, in
 *              that order. `algorithm` cannot be set with it.
 *   A value the element cannot use is explained, as text, in place of the widget; fixing
 *   the attribute brings the widget back. Any change starts a fresh, empty bucket.
 *
 * Properties:
 *   ready      Promise<boolean>: true once this element is interactive, false if it shows
 *              an error instead (bad attribute, WebAssembly that did not load). Never rejects.
 *
 * Methods:
 *   hit(status?)  Sends one request, as pressing Hit does. Under costs="esi", `status`
 *                 (default 200) is what the server answers. Returns the event's detail, or
 *                 null while the element is loading or shows an error.
 *   reset()       Empties the bucket and the timeline.
 *   RateLimitDemo.define(tag = "rate-limit-demo", registry = customElements)
 *                 Registers the element; does nothing if the tag is taken already.
 *
 * Events:
 *   rate-limit-decision  One per request; bubbles and crosses shadow roots. `detail` is the
 *     core's decision: allowed, status, outcome ("allowed", "denied", "exceeds-limit"), cost,
 *     used, limit (N), windowMs, remaining, retryAfterMs and retryAfter (null unless denied),
 *     t, and previous, current, overlap, elapsedMs (null unless floating). Under
 *     costs="esi", status is the answer sent and cost what it was charged (0 for a 429).
 *     In compare mode, `detail` is { algorithms, decisions, t, presses, disagreement,
 *     wronglyAllowed, wronglyLimited }: `decisions` maps each algorithm's name to its
 *     decision as above; `disagreement` is "wrongly-allowed", "wrongly-limited" or null, and
 *     the two counts are null unless both floating and sliding-log are compared.
 *
 * Parts: panel, error, heading, formula, previous, overlap, current (floating only), used,
 *   gauge, remaining, timeline, next, answer, hit (one per button; under costs="esi" each
 *   has data-status), reset, footnote. In compare mode: comparison, row (one per algorithm,
 *   with data-algorithm), used, admitted, over and response in each row, window, disagreements,
 *   wrongly-allowed, wrongly-limited, presses, disagreement-note.
 *
 * CSS custom properties, set on the element or any ancestor (defaults in the CSS file):
 *   --rate-limit-demo-accent      buttons, the sliding window, the gauge
 *   --rate-limit-demo-allowed     200 answers and allowed hits
 *   --rate-limit-demo-denied      429 answers, denied hits, a full gauge
 *   --rate-limit-demo-background  the card
 *   --rate-limit-demo-foreground  text
 *   --rate-limit-demo-muted       labels and secondary text
 *   --rate-limit-demo-border      borders and window boundaries
 *   --rate-limit-demo-font        text
 *   --rate-limit-demo-mono-font   numbers, the formula and the HTTP answer
 *   --rate-limit-demo-radius      corners
 * Colours follow the page's `color-scheme` (light, dark, or `light dark` for the reader's
 * setting), forced colours and prefers-reduced-motion.
 *
 * Performance mark "rate-limit-demo:ready": when the first element became interactive.
 */

const GLUE_URL = new URL("./pkg/trickle.js", import.meta.url);
const WASM_URL = new URL("./pkg/trickle_bg.wasm", import.meta.url);
const STYLESHEET_URL = new URL("./rate-limit-demo.css", import.meta.url);

const DEFAULT_LIMIT = "6/8s";
const DEFAULT_ALGORITHM = "floating";
const DEFAULT_COST = 1;

const ALGORITHM_NAMES = {
  floating: "floating window",
  "sliding-log": "sliding log",
  fixed: "fixed window",
  "token-bucket": "token bucket",
};

/** One response of each class in ESI's cost table, one button each under costs="esi". */
const ESI_STATUSES = [200, 304, 404, 500];
const REASONS = {
  200: "OK",
  304: "Not Modified",
  404: "Not Found",
  429: "Too Many Requests",
  500: "Internal Server Error",
};

const FOOTNOTE =
  "A limit is a safety net, not a target: spread requests out and honour Retry-After.";

/**
 * The timeline's vertical layout in CSS pixels; its width is the element's. Hits that land
 * close together stack upwards in lanes so that a quick burst stays countable.
 */
const TIMELINE = {
  height: 124,
  /** Room at either end, so that a hit made just now is drawn whole at the right edge. */
  inset: 8,
  labelY: 13,
  trackTop: 20,
  trackBottom: 86,
  baseline: 66,
  laneHeight: 12,
  lanes: 4,
  overlapLabelY: 81,
  axisY: 101,
  captionY: 119,
};
/** Hits closer than this many pixels on the timeline go in the next lane up. */
const MARK_SPACING = 15;
/**
 * A key held down on Hit sends dozens of requests a second; the timeline keeps and draws the
 * latest, so that a widget left pressed all day holds no more than this.
 */
const MAX_MARKS = 200;
/** Used before the first ResizeObserver report, and while the element has no width. */
const FALLBACK_WIDTH = 480;

const SVG_NS = "http://www.w3.org/2000/svg";
const CROSS = "M-4-4L4 4M-4 4L4-4";

const reducedMotion = globalThis.matchMedia?.("(prefers-reduced-motion: reduce)");

let corePromise = null;
let markedReady = false;

/**
 * The core's glue, imported and initialised once for every element on the page. Imported
 * dynamically so that a missing or blocked module becomes a message inside each element,
 * not an error that stops the page's other scripts. The wasm is fetched alongside the glue
 * rather than after it, which saves a round trip before the first element is interactive.
 */
function loadCore() {
  corePromise ??= Promise.all([import(GLUE_URL.href), fetch(WASM_URL)]).then(
    async ([glue, wasm]) => {
      try {
        await glue.default({ module_or_path: wasm });
      } catch (error) {
        if (!(error instanceof WebAssembly.CompileError)) throw error;
        if (!wasmAllowed()) {
          throw new Error(
            "the page's Content-Security-Policy does not allow WebAssembly: add 'wasm-unsafe-eval' to its script-src",
          );
        }
        // The browser names the bytes it expected, not the file or what came instead.
        const type = wasm.headers.get("content-type") ?? "no content type";
        throw new Error(
          `${WASM_URL.pathname} is not a WebAssembly module (the server sent ${type}): ${error.message}`,
        );
      }
      return glue;
    },
  );
  return corePromise;
}

/** The smallest valid module: it fails to compile only where the page forbids WebAssembly. */
const EMPTY_MODULE = new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);

function wasmAllowed() {
  try {
    new WebAssembly.Module(EMPTY_MODULE);
    return true;
  } catch {
    return false;
  }
}

/** An HTML element; `children` are nodes or plain text (never parsed as HTML). */
function html(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  setAttributes(element, attributes);
  element.append(...children);
  return element;
}

function svg(tag, attributes = {}, ...children) {
  const element = document.createElementNS(SVG_NS, tag);
  setAttributes(element, attributes);
  element.append(...children);
  return element;
}

function setAttributes(element, attributes) {
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
}

/**
 * Sets `element`'s text unless it reads so already. While tokens come back the widget is
 * redrawn on every animation frame, and most frames change few of its numbers: each write
 * skipped is script and style work the frame does not do.
 */
function updateText(element, text) {
  if (element.textContent !== text) element.textContent = text;
}

/** Sets an attribute unless it holds `value` already; see updateText. */
function updateAttribute(element, name, value) {
  const text = String(value);
  if (element.getAttribute(name) !== text) element.setAttribute(name, text);
}

/** "1 token", "6 tokens". */
function count(amount, noun) {
  return `${amount} ${noun}${amount === 1 ? "" : "s"}`;
}

/** Units a window is shown in, largest first. */
const UNITS = { h: 3_600_000, min: 60_000, s: 1_000 };

/** A window as people say it, in the largest unit that divides it exactly: "8 s", "15 min". */
function formatWindow(ms) {
  for (const [unit, size] of Object.entries(UNITS)) {
    if (ms % size === 0) return `${ms / size} ${unit}`;
  }
  return `${ms} ms`;
}

/** A wait in seconds with one decimal, rounded up: a reader who waits that long is not early. */
function formatWait(ms) {
  return `${(Math.ceil(ms / 100) / 10).toFixed(1)} s`;
}

/** An exact wait in seconds: 2410 ms is "2.41 s", 1000 ms is "1 s". */
function formatExactWait(ms) {
  return `${ms / 1000} s`;
}

function statusLine(status) {
  return REASONS[status] ? `${status} ${REASONS[status]}` : String(status);
}

/**
 * Shows a fixed window's count on the timeline, with the long name of the window while it
 * fits in the window's visible part, `room` px (about 7 px a character), so that the count
 * stays readable in a narrow element or a window just begun.
 */
function showWindowLabel(label, tokens, room) {
  const shown = String(tokens);
  const fits = (name) => `${name} · ${shown}`.length * 7 + 8 <= room;
  updateText(label.name, label.names.find(fits) ?? label.names.at(-1));
  updateText(label.countText, shown);
}

/** A whole number of tokens written in an attribute, or null. */
function parseWholeNumber(text) {
  return /^\s*\d+\s*$/.test(text) ? Number(text) : null;
}

/**
 * Throws unless every number of `limiter` is exact in JS: the core takes limits up to
 * 2^64 − 1 tokens and ms, but a JS number is exact only up to 2^53 − 1, and the widget would
 * show 9007199254740992 for a limit of 9007199254740993 tokens.
 */
function assertShowable({ tokens, windowMs }, limitText) {
  if (Number.isSafeInteger(tokens) && Number.isSafeInteger(windowMs)) return;
  const most = Number.MAX_SAFE_INTEGER;
  throw new Error(
    `limit "${limitText}" is too large to show exactly: use at most ${most} tokens per window of at most ${most} ms`,
  );
}

/**
 * The algorithms compare mode knows, in the order it shows them by default, and a few words
 * on how each counts `used`.
 */
const COMPARED = {
  floating: "estimate: previous × overlap + current",
  "sliding-log": "exact: every request of the last W",
  fixed: "starts again from 0 every W",
  "token-bucket": "refills N every W, evenly",
};
const COMPARED_NAMES = Object.keys(COMPARED);

/** The most tokens a limit can hold: the audit log below never denies, it only counts. */
const MAX_TOKENS = "18446744073709551615";

/**
 * The algorithms a `compare` attribute names, in its order. The bare attribute (an empty
 * value) means all four; names are separated by spaces or commas. Throws an Error that says
 * what is allowed.
 */
function parseCompare(text) {
  if (text === "") return COMPARED_NAMES;
  const allowed = `name two or more of ${COMPARED_NAMES.join(", ")}, separated by spaces, or write compare with no value for all four`;
  const names = text.split(/[\s,]+/).filter(Boolean);
  if (names.length === 0) throw new Error(`compare="${text}" names no algorithm; ${allowed}`);
  const unknown = names.find((name) => !Object.hasOwn(COMPARED, name));
  if (unknown !== undefined) {
    throw new Error(`compare="${text}": "${unknown}" is not an algorithm; ${allowed}`);
  }
  const twice = names.find((name, index) => names.indexOf(name) !== index);
  if (twice !== undefined) {
    throw new Error(`compare="${text}" names ${twice} twice; name each algorithm once`);
  }
  if (names.length === 1) {
    throw new Error(
      `compare="${text}" names one algorithm, and compare needs two or more; for one, write algorithm="${names[0]}" instead`,
    );
  }
  return names;
}

/** Tokens as a reader checks them by hand: 6, 5.25, 5.625; never more than 3 decimals. */
function formatTokens(amount) {
  return String(Number(amount.toFixed(3)));
}

/**
 * Compare mode: the same presses sent to several algorithms at once, each with its own
 * limiter and the same limit, shown one row each. It also counts, for each algorithm, the
 * tokens it actually let in during the last W (a burst on either side of a fixed window's
 * boundary shows as twice the limit), and how often the floating window answered
 * differently from the exact sliding log.
 *
 * Owned by the element, which gives it the clock reading and the status of each press and
 * asks it to draw; `free()` releases the WebAssembly memory.
 */
class Comparison {
  #core;
  /**
   * One per algorithm, in the order shown: `{ name, limiter, audit, cells, shownUsed,
   * shownAdmitted }`, the last two what its cells show, null until drawn.
   */
  #rows;
  #esi;
  #cost;
  #tokens;
  #windowMs;
  /** W as the widget writes it, "8 s". */
  #windowText;
  /** Whether both the floating window and the sliding log are shown, and so compared. */
  #judged;
  #presses = 0;
  #wronglyAllowed = 0;
  #wronglyLimited = 0;

  #window;
  /** A bar that fills over each fixed window, moved by CSS alone so that idle costs nothing. */
  #windowProgress;
  #counts = {};
  element;

  /**
   * `names` from parseCompare; `limit` as written. Throws the core's error for a bad limit,
   * having freed whatever it had built.
   */
  constructor(core, names, limit, { cost, esi }) {
    this.#rows = [];
    try {
      for (const name of names) {
        const limiter = new core.Limiter({ limit, algorithm: name });
        this.#rows.push({
          name,
          limiter,
          audit: null,
          cells: null,
          shownUsed: null,
          shownAdmitted: null,
        });
      }
      const { tokens, windowMs } = this.#rows[0].limiter;
      assertShowable(this.#rows[0].limiter, limit);
      // A sliding log that never denies: `record` every token an algorithm let in, and
      // `peek(0).used` is exactly how many it let in during the last W.
      for (const row of this.#rows) {
        row.audit = new core.Limiter({
          limit: `${MAX_TOKENS}/${windowMs}ms`,
          algorithm: "sliding-log",
        });
      }
      this.#tokens = tokens;
      this.#windowMs = windowMs;
      this.#windowText = formatWindow(windowMs);
    } catch (error) {
      this.free();
      throw error;
    }
    this.#core = core;
    this.#esi = esi;
    this.#cost = cost;
    this.#judged = names.includes("floating") && names.includes("sliding-log");
    this.element = this.#build();
  }

  get tokens() {
    return this.#tokens;
  }

  get windowMs() {
    return this.#windowMs;
  }

  get size() {
    return this.#rows.length;
  }

  /** The limit as the core writes it, e.g. "6/8s". */
  get limit() {
    return this.#rows[0].limiter.limit;
  }

  free() {
    for (const row of this.#rows) {
      row.limiter.free();
      row.audit?.free();
    }
    this.#rows = [];
  }

  reset() {
    for (const row of this.#rows) {
      row.limiter.reset();
      row.audit.reset();
      this.#showResponse(row, null);
    }
    this.#presses = this.#wronglyAllowed = this.#wronglyLimited = 0;
    this.#showCounts();
  }

  /**
   * Sends one request to every algorithm at the same instant `now`; under costs="esi",
   * `status` is what the server answers when a limiter lets it through. Returns the event's
   * detail: see the README's widget section.
   */
  hit(status, now) {
    const decisions = {};
    for (const row of this.#rows) {
      const decision = Object.freeze(this.#decide(row.limiter, status, now));
      if (decision.allowed && decision.cost > 0) row.audit.record(decision.cost, now);
      decisions[row.name] = decision;
      this.#showResponse(row, decision);
    }
    this.#presses++;
    let disagreement = null;
    if (this.#judged) {
      const estimate = decisions.floating.allowed;
      const truth = decisions["sliding-log"].allowed;
      if (estimate && !truth) {
        disagreement = "wrongly-allowed";
        this.#wronglyAllowed++;
      } else if (!estimate && truth) {
        disagreement = "wrongly-limited";
        this.#wronglyLimited++;
      }
      this.#showCounts();
    }
    return Object.freeze({
      algorithms: this.#rows.map((row) => row.name),
      decisions: Object.freeze(decisions),
      t: decisions[this.#rows[0].name].t,
      presses: this.#presses,
      disagreement,
      wronglyAllowed: this.#judged ? this.#wronglyAllowed : null,
      wronglyLimited: this.#judged ? this.#wronglyLimited : null,
    });
  }

  /**
   * What the live region announces for a press: every algorithm's status, then what the
   * disagreement, if any, means.
   */
  announce({ algorithms, decisions, disagreement }) {
    const codes = algorithms.flatMap((name, index) => {
      const { allowed, status } = decisions[name];
      return [
        index === 0 ? "" : " · ",
        `${ALGORITHM_NAMES[name]} `,
        html("span", { class: `code ${allowed ? "allowed" : "denied"}` }, String(status)),
      ];
    });
    const allowed = algorithms.filter((name) => decisions[name].allowed);
    const refused = algorithms.filter((name) => !decisions[name].allowed);
    const names = (list) => list.map((name) => ALGORITHM_NAMES[name]).join(", ");
    const explanation =
      {
        "wrongly-allowed":
          "The floating window let in a request the exact log refused: wrongly allowed.",
        "wrongly-limited":
          "The floating window refused a request the exact log let in: wrongly limited.",
      }[disagreement] ??
      (allowed.length === 0 || refused.length === 0
        ? "All agree."
        : `Let in by the ${names(allowed)}; refused by the ${names(refused)}.`);
    return [...codes, html("span", { class: "explanation" }, explanation)];
  }

  /** One algorithm's answer, as the single-algorithm element gives it. */
  #decide(limiter, status, now) {
    if (!this.#esi) return { ...limiter.hit(this.#cost, now) };
    // As in the single widget: check that one token fits, answer, then charge by status.
    const check = limiter.peek(this.#cost, now);
    return check.allowed
      ? { ...limiter.record(this.#core.esiCost(status), now), status }
      : { ...check, status: 429, cost: 0 };
  }

  /**
   * Draws every row as of `now`; returns whether anything still changes with time. Called
   * on every animation frame while it does, so a row's cells are written only when its
   * numbers moved.
   */
  render(now) {
    let changing = false;
    for (const row of this.#rows) {
      const { used, remaining } = row.limiter.peek(0, now);
      const admitted = row.audit.peek(0, now).used;
      if (used !== row.shownUsed) {
        row.shownUsed = used;
        this.#showUsed(row.cells, used, remaining);
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

  /** A row's tokens in use: the number and the gauge. */
  #showUsed({ gauge, fill, used: usedText }, used, remaining) {
    const shown = formatTokens(used);
    updateText(usedText, shown);
    fill.style.width = `${Math.min(used / this.#tokens, 1) * 100}%`;
    gauge.classList.toggle("full", remaining < this.#cost);
    gauge.setAttribute("aria-valuenow", String(Math.min(used, this.#tokens)));
    gauge.setAttribute("aria-valuetext", `${shown} of ${this.#tokens} tokens in use`);
  }

  /** A row's tokens let in during the last W, and by how much that passed the limit. */
  #showAdmitted({ admitted: admittedText, over, row }, admitted) {
    admittedText.textContent = String(admitted);
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
   * Where the clock is in the fixed windows, so that a reader can time a burst at the end of
   * one and the start of the next: the countdown in words, live only while something
   * changes. The bar beside it keeps time by itself; see syncWindowBar.
   */
  #showWindow(now, changing) {
    if (!this.#window) return;
    const windowText = this.#windowText;
    if (!changing) {
      const text = `Fixed windows start every ${windowText}; the bar fills over each one.`;
      updateText(this.#window, text);
      return;
    }
    const elapsed = Math.floor(now) % this.#windowMs;
    // Tenths of a second gone, rounded down, and to go, rounded up: they add up to W.
    const gone = `${(Math.floor(elapsed / 100) / 10).toFixed(1)} s`;
    const toGo = formatWait(this.#windowMs - elapsed);
    const text = `This ${windowText} fixed window: ${gone} in · the next starts in ${toGo}`;
    updateText(this.#window, text);
  }

  /**
   * Sets the bar that fills over each fixed window to the clock `now`. It is a CSS
   * animation, left running from there, so that it shows the windows passing even while the
   * widget asks for no frames; the element sets it again whenever it draws for a reason other
   * than time passing (built, pressed, reset, put back on the page), never on every frame.
   */
  syncWindowBar(now) {
    if (!this.#window) return;
    this.#windowProgress.style.animationDelay = `-${Math.floor(now) % this.#windowMs}ms`;
  }

  #showCounts() {
    if (!this.#judged) return;
    this.#counts.allowed.textContent = String(this.#wronglyAllowed);
    this.#counts.limited.textContent = String(this.#wronglyLimited);
    this.#counts.presses.textContent = `${this.#presses} press${this.#presses === 1 ? "" : "es"}`;
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
      const label = ALGORITHM_NAMES[row.name];
      const fill = html("div", { class: "fill" });
      const gauge = html(
        "div",
        {
          class: "gauge",
          role: "meter",
          "aria-label": `${label}: tokens in use`,
          "aria-valuemin": "0",
          "aria-valuemax": String(tokens),
        },
        fill,
      );
      gauge.style.setProperty("--tokens", String(tokens));
      gauge.classList.toggle("segmented", tokens <= 30);
      const cells = {
        gauge,
        fill,
        used: html("span", { part: "used", class: "number" }),
        admitted: html("span", { part: "admitted", class: "number" }),
        over: html("span", { part: "over", class: "over-note" }),
        response: html("td", { part: "response", class: "response" }),
      };
      const note = COMPARED[row.name]
        .replace(/\bW\b/g, windowText)
        .replace(/\bN\b/g, String(tokens));
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
          gauge,
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
    const parts = [
      html("table", { class: "comparison" }, caption, html("thead", {}, head), body),
    ];
    if (this.#rows.some((row) => row.name === "fixed" || row.name === "floating")) {
      this.#window = html("p", { part: "window", class: "window" });
      this.#windowProgress = html("div", { class: "window-progress" });
      this.#windowProgress.style.animationDuration = `${this.#windowMs}ms`;
      // Decorative: the line under it says the same in words.
      const bar = html("div", { class: "window-bar", "aria-hidden": "true" }, this.#windowProgress);
      parts.push(bar, this.#window);
    }
    if (this.#judged) {
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

export class RateLimitDemo extends HTMLElement {
  static observedAttributes = ["limit", "algorithm", "cost", "costs", "compare"];

  /** Registers the element. A docs page may load this script twice; the second copy must not throw. */
  static define(tag = "rate-limit-demo", registry = customElements) {
    if (!registry.get(tag)) registry.define(tag, this);
    return this;
  }

  #core = null;
  #limiter = null;
  /** In compare mode, the algorithms side by side; then #limiter is null. */
  #comparison = null;
  #esi = false;
  /** Tokens one Hit spends; under costs="esi", what the check before answering asks for. */
  #cost = DEFAULT_COST;
  /**
   * Requests still on the timeline, oldest first: `{ t, cost, allowed, lane, node,
   * expired, layout }`, with the mark drawn for each, whether it is drawn faded, and the
   * timeline layout it was placed in.
   */
  #history = [];
  /**
   * Tokens charged in the last fixed windows, by window number (t / W), counted as requests
   * come: the fixed window reports only this window's count, and the timeline, which keeps
   * at most MAX_MARKS requests, may no longer hold all of the previous one's.
   */
  #spentByWindow = new Map();
  /** True while the picture changes with time: tokens in use, or hits still sliding left. */
  #changing = false;
  #onScreen = true;
  /** The animation frame (or, for reduced motion, the timer) the next redraw waits for, or 0. */
  #frame = 0;
  #timer = 0;
  #timelineWidth = 0;
  #ready;

  #loading;
  #error;
  #panel;
  #heading;
  /** What only the single-algorithm widget shows: the formula, gauge, timeline, next. */
  #single;
  #formula;
  #numbers = {};
  #gauge;
  #gaugeFill;
  /** The `used` and `remaining` the gauge and the tokens left show, null until drawn. */
  #shownUsed = null;
  #shownRemaining = null;
  #remaining;
  #timeline;
  #track = {};
  #next;
  #answer;
  #buttons;

  #visibility = new IntersectionObserver(([entry]) => {
    this.#onScreen = entry.isIntersecting;
    if (this.#onScreen) this.#schedule();
    else this.#stop();
  });

  #resize = new ResizeObserver(([entry]) => {
    this.#timelineWidth = entry.contentRect.width;
    if (this.#limiter) this.#renderNow();
  });

  constructor() {
    super();
    const root = this.attachShadow({ mode: "open" });
    const stylesheet = html("link", { rel: "stylesheet", href: STYLESHEET_URL.href });
    // Until the stylesheet is in, the widget would flash unstyled; an error still lets it show.
    const stylesheetSettled = new Promise((settle) => {
      stylesheet.addEventListener("load", settle, { once: true });
      stylesheet.addEventListener("error", settle, { once: true });
    });

    this.#loading = html("p", { class: "loading" }, "Loading the rate-limit demo…");
    this.#error = html("div", { part: "error", class: "error", hidden: "" });
    this.#heading = html("p", { part: "heading", class: "heading" });
    this.#formula = html("p", { part: "formula", class: "formula" });
    this.#gaugeFill = html("div", { class: "fill" });
    this.#gauge = html(
      "div",
      {
        part: "gauge",
        class: "gauge",
        role: "meter",
        "aria-label": "Tokens in use",
        "aria-valuemin": "0",
      },
      this.#gaugeFill,
    );
    this.#remaining = html("span", { part: "remaining", class: "remaining" });
    this.#timeline = svg("svg", { part: "timeline", class: "timeline", role: "img" });
    this.#next = html("p", { part: "next", class: "next" });
    this.#answer = html("p", {
      part: "answer",
      class: "answer",
      role: "status",
      "aria-live": "polite",
    });
    this.#buttons = html("div", { class: "hits" });
    const reset = html("button", { part: "reset", class: "reset", type: "button" }, "Reset");
    reset.addEventListener("click", () => this.reset());

    this.#panel = html(
      "div",
      { part: "panel", class: "panel", hidden: "" },
      this.#heading,
      (this.#single = html(
        "div",
        { class: "single" },
        this.#formula,
        html("div", { class: "meter" }, this.#gauge, this.#remaining),
        this.#timeline,
        this.#next,
      )),
      html("div", { class: "controls" }, this.#buttons, reset),
      this.#answer,
      html("p", { part: "footnote", class: "footnote" }, FOOTNOTE),
    );
    root.append(stylesheet, this.#loading, this.#error, this.#panel);
    this.#ready = this.#start(stylesheetSettled);
  }

  get ready() {
    return this.#ready;
  }

  get limit() {
    return this.getAttribute("limit") ?? DEFAULT_LIMIT;
  }
  set limit(value) {
    this.#reflect("limit", value);
  }

  get algorithm() {
    return this.getAttribute("algorithm") ?? DEFAULT_ALGORITHM;
  }
  set algorithm(value) {
    this.#reflect("algorithm", value);
  }

  get cost() {
    return parseWholeNumber(this.getAttribute("cost") ?? "") ?? DEFAULT_COST;
  }
  set cost(value) {
    this.#reflect("cost", value);
  }

  get costs() {
    return this.getAttribute("costs");
  }
  set costs(value) {
    this.#reflect("costs", value);
  }

  /** The attribute as written; "" (the bare attribute) compares all four, null none. */
  get compare() {
    return this.getAttribute("compare");
  }
  set compare(value) {
    this.#reflect("compare", value);
  }

  /** True while the element shows a working widget, of either kind. */
  get #live() {
    return this.#limiter !== null || this.#comparison !== null;
  }

  connectedCallback() {
    // A page may set properties before this module has loaded; they then sit on the
    // instance and hide the accessors. Pass them through so that they become attributes.
    for (const name of RateLimitDemo.observedAttributes) {
      if (Object.hasOwn(this, name)) {
        const value = this[name];
        delete this[name];
        this[name] = value;
      }
    }
    this.#visibility.observe(this);
    this.#resize.observe(this.#timeline);
    if (this.#live) {
      // Time went on while the element was away from the page.
      this.#renderNow();
      this.#schedule();
    }
  }

  disconnectedCallback() {
    this.#stop();
    this.#visibility.disconnect();
    this.#resize.disconnect();
  }

  attributeChangedCallback(name, oldValue, newValue) {
    if (oldValue === newValue) return;
    this.#rebuild();
  }

  /** Sends one request; see the header comment. */
  hit(status) {
    if (this.#comparison) return this.#hitAll(status);
    if (!this.#limiter) return null;
    const now = performance.now();
    let detail;
    if (this.#esi) {
      const answered = Number(status ?? 200);
      // First, so that a status ESI has no price for throws before anything is charged.
      const charge = this.#core.esiCost(answered);
      // ESI does not know what a response costs until it has answered, so it only checks
      // that one token fits, then charges by status. Its own 429 costs nothing.
      const check = this.#limiter.peek(this.#cost, now);
      detail = check.allowed
        ? { ...this.#limiter.record(charge, now), status: answered }
        : { ...check, status: 429, cost: 0 };
    } else {
      detail = { ...this.#limiter.hit(this.#cost, now) };
    }
    Object.freeze(detail);

    this.#remember(detail);
    this.#render(detail);
    this.#showAnswer(detail);
    this.dispatchEvent(
      new CustomEvent("rate-limit-decision", { bubbles: true, composed: true, detail }),
    );
    this.#schedule();
    return detail;
  }

  /**
   * Compare mode's hit: one clock reading for every algorithm, one event carrying each
   * one's decision.
   */
  #hitAll(status) {
    // Under costs="esi" the status comes first, so that one ESI has no price for throws
    // before any algorithm is charged.
    const answered = this.#esi ? Number(status ?? 200) : undefined;
    if (this.#esi) this.#core.esiCost(answered);
    const detail = this.#comparison.hit(answered, performance.now());
    this.#comparison.syncWindowBar(detail.t);
    this.#changing = this.#comparison.render(detail.t);
    this.#answer.replaceChildren(...this.#comparison.announce(detail));
    this.dispatchEvent(
      new CustomEvent("rate-limit-decision", { bubbles: true, composed: true, detail }),
    );
    this.#schedule();
    return detail;
  }

  /** Empties the bucket and the timeline. */
  reset() {
    if (this.#comparison) {
      this.#comparison.reset();
      this.#showHint();
      this.#renderNow();
      return;
    }
    if (!this.#limiter) return;
    this.#limiter.reset();
    this.#forget();
    this.#showHint();
    this.#renderNow();
  }

  async #start(stylesheetSettled) {
    try {
      [this.#core] = await Promise.all([loadCore(), stylesheetSettled]);
    } catch (error) {
      this.#showError(
        "This rate-limit demo could not load its WebAssembly module.",
        String(error?.message ?? error),
      );
      return false;
    }
    this.#rebuild();
    if (this.#live && !markedReady) {
      markedReady = true;
      performance.mark("rate-limit-demo:ready");
    }
    return this.#live;
  }

  /** Empties the timeline and the fixed windows' counts. */
  #forget() {
    this.#history = [];
    this.#spentByWindow.clear();
    this.#track.marks?.replaceChildren();
  }

  #reflect(name, value) {
    if (value === null || value === undefined) this.removeAttribute(name);
    else this.setAttribute(name, String(value));
  }

  /** Builds a fresh limiter from the attributes and the panel around it, or shows why not. */
  #rebuild() {
    if (!this.#core) return;
    this.#stop();
    this.#limiter?.free();
    this.#limiter = null;
    this.#comparison?.free();
    this.#comparison?.element.remove();
    this.#comparison = null;
    this.#forget();
    if (this.compare !== null) {
      this.#rebuildComparison();
      return;
    }

    const { costs, limit, algorithm } = this;
    // The raw text, not the `cost` property: a bad value must be shown, not replaced by 1.
    const costText = this.getAttribute("cost");
    let limiter;
    try {
      if (costs !== null && costs !== "esi") {
        throw new Error(
          `costs "${costs}" is not allowed: use costs="esi" or leave the attribute out`,
        );
      }
      limiter = new this.#core.Limiter({ limit, algorithm });
      assertShowable(limiter, limit);
    } catch (error) {
      limiter?.free();
      this.#showError(String(error?.message ?? error));
      return;
    }
    const esi = costs === "esi";
    const cost = esi ? 1 : costText === null ? DEFAULT_COST : parseWholeNumber(costText);
    const tokens = limiter.tokens;
    if (cost === null || cost > tokens) {
      limiter.free();
      this.#showError(
        `cost "${costText}" is not allowed: use a whole number of tokens from 0 to ${tokens}`,
      );
      return;
    }

    this.#limiter = limiter;
    this.#esi = esi;
    this.#cost = cost;
    this.#single.hidden = false;
    this.#buildHeading();
    this.#buildFormula();
    this.#buildGauge();
    this.#buildButtons();
    this.#buildTimeline();
    this.#showPanel();
  }

  /** Shows the built panel in place of the loading note or an old error, and draws it. */
  #showPanel() {
    this.#showHint();
    this.#loading.hidden = true;
    this.#error.hidden = true;
    this.#panel.hidden = false;
    this.#renderNow();
    this.#schedule();
  }

  /**
   * Compare mode: the algorithms `compare` names, side by side, under the same `limit`,
   * `cost` and `costs`. `algorithm` would contradict it, so the two together are an error.
   */
  #rebuildComparison() {
    const { costs, limit } = this;
    const costText = this.getAttribute("cost");
    const algorithmText = this.getAttribute("algorithm");
    let comparison;
    try {
      if (algorithmText !== null) {
        throw new Error(
          `algorithm="${algorithmText}" cannot be used with compare, which picks the algorithms: leave algorithm out and name them in compare, e.g. compare="floating sliding-log"`,
        );
      }
      if (costs !== null && costs !== "esi") {
        throw new Error(
          `costs "${costs}" is not allowed: use costs="esi" or leave the attribute out`,
        );
      }
      const names = parseCompare(this.compare);
      const esi = costs === "esi";
      const cost = esi ? 1 : costText === null ? DEFAULT_COST : parseWholeNumber(costText);
      comparison = new Comparison(this.#core, names, limit, { cost, esi });
      if (cost === null || cost > comparison.tokens) {
        const tokens = comparison.tokens;
        comparison.free();
        throw new Error(
          `cost "${costText}" is not allowed: use a whole number of tokens from 0 to ${tokens}`,
        );
      }
      this.#esi = esi;
      this.#cost = cost;
    } catch (error) {
      this.#showError(String(error?.message ?? error));
      return;
    }
    this.#comparison = comparison;
    this.#single.hidden = true;
    this.#single.after(comparison.element);
    this.#buildHeading();
    this.#buildButtons();
    this.#showPanel();
  }

  /** Shows `message` (and a detail, such as the browser's own error) in place of the widget. */
  #showError(message, detail) {
    this.#loading.hidden = true;
    this.#panel.hidden = true;
    const lines = [html("p", {}, message)];
    if (detail) lines.push(html("p", { class: "error-detail" }, detail));
    this.#error.replaceChildren(...lines);
    this.#error.hidden = false;
  }

  #buildHeading() {
    const { tokens, windowMs, limit } = this.#limiter ?? this.#comparison;
    // With costs that vary, a token is no longer a request.
    const unit = this.#esi || this.#cost !== 1 ? "token" : "request";
    const perRequest =
      this.#esi || this.#cost === 1 ? "" : ` · each request costs ${count(this.#cost, "token")}`;
    const what = this.#comparison
      ? `${this.#comparison.size} algorithms side by side`
      : ALGORITHM_NAMES[this.#limiter.algorithm];
    this.#heading.replaceChildren(
      html("strong", {}, `${count(tokens, unit)} per ${formatWindow(windowMs)}`),
      ` · ${what}${perRequest} `,
      html("code", { class: "limit-code" }, limit),
    );
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
      const meaning = {
        "sliding-log": `tokens spent in the last ${formatWindow(windowMs)}`,
        fixed: "tokens spent in this fixed window",
        "token-bucket": `the bucket refills ${tokens} tokens every ${formatWindow(windowMs)}, evenly`,
      }[algorithm];
      children.push(
        term("used", `of ${tokens} in use`),
        html("span", { class: "meaning" }, meaning),
      );
    }
    this.#formula.replaceChildren(...children);
  }

  /** What the gauge shows of the limit itself: one segment per token while they are few. */
  #buildGauge() {
    const tokens = this.#limiter.tokens;
    this.#gauge.style.setProperty("--tokens", String(tokens));
    this.#gauge.classList.toggle("segmented", tokens <= 30);
    this.#gauge.setAttribute("aria-valuemax", String(tokens));
    this.#shownUsed = this.#shownRemaining = null;
  }

  #buildButtons() {
    const button = (label, cost, status) => {
      const element = html(
        "button",
        { part: "hit", class: "hit", type: "button" },
        label,
        " ",
        html("span", { class: "hit-cost" }, count(cost, "token")),
      );
      if (status !== undefined) element.dataset.status = String(status);
      element.addEventListener("click", () => this.hit(status));
      return element;
    };
    this.#buttons.replaceChildren(
      ...(this.#esi
        ? ESI_STATUSES.map((status) =>
            button(`Hit → ${statusLine(status)}`, this.#core.esiCost(status), status),
          )
        : [button("Hit", this.#cost)]),
    );
  }

  /**
   * The timeline's shapes for this algorithm, created once and moved on every frame. Only
   * the floating and fixed windows have fixed windows to draw; every algorithm has the
   * sliding window of the last W, the right half of the picture.
   */
  #buildTimeline() {
    const { algorithm, windowMs } = this.#limiter;
    const floating = algorithm === "floating";
    const windowed = floating || algorithm === "fixed";
    const { trackTop, trackBottom } = TIMELINE;
    const trackHeight = trackBottom - trackTop;
    const band = { y: trackTop, height: trackHeight };
    // A label lives in a nested <svg>, which clips it to its window as the window slides
    // out. `names` is long, then short for narrow windows.
    const windowLabel = (names) => {
      const name = svg("tspan");
      const countText = svg("tspan", { class: "count" });
      const box = svg(
        "svg",
        { y: 0, height: trackTop, class: "window-label" },
        svg("text", { x: 5, y: TIMELINE.labelY }, name, " · ", countText),
      );
      return { box, name, names, countText };
    };

    const track = {
      windowed,
      // Shaded only where it still counts, in part: the fixed window forgets it entirely.
      previousWindow: floating ? svg("rect", { class: "previous-window", ...band }) : null,
      // What is placed in time (the fixed windows and the requests) sits in these groups,
      // so that a frame moves it all by setting one transform on each; see #drawTimeline.
      behind: floating ? svg("g") : null,
      lines: windowed ? svg("g") : null,
      slide: svg("g"),
      band: svg("rect", { class: "band", ...band }),
      overlap: floating ? svg("rect", { class: "overlap", ...band }) : null,
      overlapLabel: floating
        ? svg("text", {
            class: "overlap-label",
            y: TIMELINE.overlapLabelY,
            "text-anchor": "middle",
          })
        : null,
      boundaries: windowed
        ? [0, 1].map(() => svg("line", { class: "boundary", y1: 2, y2: trackBottom }))
        : [],
      previousLabel: windowed ? windowLabel(["previous window", "previous"]) : null,
      currentLabel: windowed ? windowLabel(["this window", "current"]) : null,
      marks: svg("g", { class: "marks" }),
      bandEdge: svg("line", { class: "band-edge", y1: trackTop, y2: trackBottom }),
      now: svg("line", { class: "now", y1: trackTop, y2: trackBottom }),
      axis: svg("line", { class: "axis", y1: trackBottom, y2: trackBottom }),
      start: svg("text", { class: "tick", y: TIMELINE.axisY }, `−${formatWindow(2 * windowMs)}`),
      middle: svg(
        "text",
        { class: "tick", y: TIMELINE.axisY, "text-anchor": "middle" },
        `−${formatWindow(windowMs)}`,
      ),
      end: svg("text", { class: "tick", y: TIMELINE.axisY, "text-anchor": "end" }, "now"),
      caption: svg("text", { class: "caption", y: TIMELINE.captionY, "text-anchor": "middle" }),
      legend: svg(
        "g",
        { class: "legend", transform: `translate(${TIMELINE.inset + 4} ${TIMELINE.captionY - 4})` },
        svg("g", { class: "mark allowed" }, svg("circle", { r: 4.5 })),
        svg("text", { x: 9, y: 4 }, "allowed"),
        svg("g", { class: "mark denied", transform: "translate(62 0)" }, svg("path", { d: CROSS })),
        svg("text", { x: 71, y: 4 }, "denied"),
      ),
      // The band's caption, longest first: the first that fits is shown.
      captions: [
        `sliding window · the last ${formatWindow(windowMs)}`,
        `the last ${formatWindow(windowMs)}`,
      ],
      // The screen reader's summary: what stays the same, and what was last said.
      summaryStart: `Timeline of the last ${formatWindow(2 * windowMs)}, now at the right.`,
      summaryWindow: formatWindow(windowMs),
      summary: null,
      // Set by #layOutTimeline for the element's width, and by #drawTimeline.
      width: 0,
      /** Where now is drawn, and the band of the last W begins, in px. */
      nowX: 0,
      bandX: 0,
      /** Pixels per ms. */
      scale: 0,
      /** The start of the fixed window shapes and marks are placed from, in ms. */
      origin: null,
      /** Counts the times every mark had to be placed again: on resizing, and each new W. */
      layout: 0,
    };
    track.behind?.append(track.previousWindow);
    track.lines?.append(...track.boundaries);
    track.slide.append(
      ...[track.previousLabel?.box, track.currentLabel?.box, track.marks].filter(Boolean),
    );
    track.sliding = [track.behind, track.lines, track.slide].filter(Boolean);
    this.#track = track;
    this.#timeline.replaceChildren(
      ...[
        track.behind,
        track.band,
        track.overlap,
        track.lines,
        track.bandEdge,
        track.now,
        track.axis,
        track.overlapLabel,
        track.slide,
        track.start,
        track.middle,
        track.end,
        track.legend,
        track.caption,
      ].filter(Boolean),
    );
    this.#timeline.removeAttribute("aria-label");
  }

  #showHint() {
    const hint = this.#esi
      ? "Press a Hit button to send a request; ESI charges for the answer after sending it."
      : this.#comparison
        ? "Press Hit to send one request to every algorithm at the same instant."
        : "Press Hit to send a request.";
    this.#answer.replaceChildren(html("span", { class: "hint" }, hint));
  }

  /** The answer the server would send, and what it means for the client. */
  #showAnswer(detail) {
    const { status, cost, used, limit: tokens, remaining } = detail;
    let code = statusLine(status);
    let explanation;
    if (detail.outcome === "exceeds-limit") {
      explanation = `This request costs ${count(cost, "token")}, more than the whole limit of ${tokens}: no wait helps.`;
    } else if (!detail.allowed) {
      code += ` · Retry-After: ${detail.retryAfter}`;
      // The header rounds up to whole seconds; the exact wait is what the core computed.
      const verb = this.#cost === 1 ? "fits" : "fit";
      explanation = `${count(this.#cost, "token")} ${verb} again in ${formatExactWait(detail.retryAfterMs)}`;
      explanation += this.#esi ? "; the 429 itself costs nothing." : ".";
    } else {
      const left =
        used > tokens
          ? `${used.toFixed(2)} of ${tokens} in use, over the limit until it slides out`
          : `${remaining} of ${tokens} left`;
      explanation = `${this.#esi ? "Charged" : "Cost"} ${count(cost, "token")}${this.#esi ? " after answering" : ""}: ${left}.`;
    }
    this.#answer.replaceChildren(
      html("span", { class: `code ${detail.allowed ? "allowed" : "denied"}` }, code),
      " ",
      html("span", { class: "explanation" }, explanation),
    );
  }

  /** Adds a request to the timeline, in the lane above the one before if they would touch. */
  #remember(detail) {
    const windowMs = this.#limiter.windowMs;
    const closeMs = (MARK_SPACING * 2 * windowMs) / (this.#timelineWidth || FALLBACK_WIDTH);
    const last = this.#history.at(-1);
    const lane = last && detail.t - last.t < closeMs ? (last.lane + 1) % TIMELINE.lanes : 0;
    const { t, cost, allowed } = detail;
    const hit = { t, cost, allowed, lane, node: null, expired: false, layout: -1 };
    // Drawn once, and placed by the next #drawTimeline.
    hit.node = this.#mark(hit);
    this.#track.marks.append(hit.node);
    this.#history.push(hit);
    if (this.#history.length > MAX_MARKS) this.#history.shift().node.remove();
    if (detail.allowed && detail.cost > 0) {
      const number = Math.floor(detail.t / windowMs);
      this.#spentByWindow.set(number, (this.#spentByWindow.get(number) ?? 0) + detail.cost);
      // Only this window and the one before are ever shown.
      for (const old of this.#spentByWindow.keys()) {
        if (old < number - 1) this.#spentByWindow.delete(old);
      }
    }
  }

  /**
   * Draws the widget after a change other than time passing: built, reset, put back on the
   * page or resized. Compare mode's window bar is set to the clock then (see syncWindowBar).
   */
  #renderNow() {
    const now = performance.now();
    this.#comparison?.syncWindowBar(now);
    this.#draw(now);
  }

  /** Draws the widget as of `now`: all an animation frame does. */
  #draw(now) {
    if (this.#comparison) this.#changing = this.#comparison.render(now);
    else this.#render(this.#limiter.peek(0, now));
  }

  /**
   * Shows `decision`: the formula, the gauge, the timeline and when tokens come back. Called
   * on every animation frame while tokens come back, so it writes only what changed.
   */
  #render(decision) {
    const { used, remaining, t, windowMs } = decision;
    // Hits older than the timeline's 2W no longer show.
    while (this.#history.length && this.#history[0].t < t - 2 * windowMs) {
      this.#history.shift().node.remove();
    }

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
      this.#showGauge(decision);
    }
    updateText(this.#next, this.#whenTokensComeBack(decision));
    this.#drawTimeline(decision);
    this.#changing = used > 0 || this.#history.length > 0;
  }

  /** The gauge and the tokens left. */
  #showGauge({ used, limit: tokens, remaining }) {
    // `used` may pass the limit after ESI charges a response; the bar stops at full.
    this.#gaugeFill.style.width = `${Math.min(used / tokens, 1) * 100}%`;
    this.#gauge.classList.toggle("full", remaining < this.#cost);
    this.#gauge.setAttribute("aria-valuenow", String(Math.min(used, tokens)));
    this.#gauge.setAttribute("aria-valuetext", `${used.toFixed(2)} of ${tokens} tokens in use`);
    // Only ESI's charge after answering can take `used` past the limit; say by how much.
    updateText(
      this.#remaining,
      used > tokens
        ? `0 of ${tokens} left · ${(used - tokens).toFixed(2)} over`
        : `${remaining} of ${tokens} left`,
    );
  }

  #whenTokensComeBack({ used, limit: tokens, remaining, t }) {
    if (used === 0) return `All ${count(tokens, "token")} available`;
    // `remaining` whole tokens fit now; the next whole one is back when one more would fit.
    const nextMs = this.#limiter.peek(Math.floor(remaining) + 1, t).retryAfterMs;
    const allMs = this.#limiter.peek(tokens, t).retryAfterMs;
    return `1 token back in ${formatWait(nextMs)} · all ${tokens} back in ${formatWait(allMs)}`;
  }

  /**
   * Places what does not move for a timeline `width` px wide: the band of the last W (always
   * the right half), its edges, the axis and its ticks; and, relative to the start of the
   * current fixed window, the fixed windows' shapes.
   */
  #layOutTimeline(width, windowMs) {
    const track = this.#track;
    const left = TIMELINE.inset;
    const right = width - TIMELINE.inset;
    const middle = left + (right - left) / 2;
    track.width = width;
    track.nowX = right;
    track.bandX = middle;
    track.scale = (right - left) / (2 * windowMs);
    track.layout++;

    this.#timeline.setAttribute("viewBox", `0 0 ${width} ${TIMELINE.height}`);
    setAttributes(track.band, { x: middle, width: right - middle });
    setAttributes(track.bandEdge, { x1: middle, x2: middle });
    setAttributes(track.now, { x1: right, x2: right });
    setAttributes(track.axis, { x1: left, x2: right });
    track.start.setAttribute("x", left);
    track.middle.setAttribute("x", middle);
    track.end.setAttribute("x", right);
    // The long caption needs about 6.5 px a character; a narrow element gets the short one.
    const caption =
      track.captions.find((text) => text.length * 6.5 <= right - middle) ?? track.captions.at(-1);
    track.caption.setAttribute("x", (middle + right) / 2);
    track.caption.textContent = caption;
    if (!track.windowed) return;

    // The current fixed window starts at 0, the previous one at −W.
    const windowWidth = windowMs * track.scale;
    setAttributes(track.boundaries[0], { x1: -windowWidth, x2: -windowWidth });
    setAttributes(track.boundaries[1], { x1: 0, x2: 0 });
    setAttributes(track.previousLabel.box, { x: -windowWidth, width: windowWidth });
    track.currentLabel.box.setAttribute("x", 0);
    if (track.overlap) {
      setAttributes(track.previousWindow, { x: -windowWidth, width: windowWidth });
      track.overlap.setAttribute("x", middle);
    }
  }

  /**
   * Draws the last 2W up to now, now at the right edge, so the sliding window of the last W
   * is always the right half and the fixed windows move through it: a reader sees the
   * previous window slide out of the band, and with it the overlap shrink.
   *
   * The fixed windows and the marks are placed once, relative to the start of the current
   * fixed window, in groups that a frame slides left by setting one transform each; only a
   * new W (or a new width) places them again. So a frame costs the same with 200 marks as
   * with none, and it reads no layout.
   */
  #drawTimeline(decision) {
    const { t: now, windowMs } = decision;
    const track = this.#track;
    const width = this.#timelineWidth || FALLBACK_WIDTH;
    if (width !== track.width) this.#layOutTimeline(width, windowMs);
    // Windows are aligned to multiples of W from time 0.
    const currentStart = now - (decision.elapsedMs ?? now % windowMs);
    if (currentStart !== track.origin) {
      track.origin = currentStart;
      track.layout++;
    }
    const { nowX: right, bandX: middle, scale } = track;
    const currentX = right - (now - currentStart) * scale;
    const slide = `translate(${currentX} 0)`;
    for (const group of track.sliding) group.setAttribute("transform", slide);

    let summary = track.summaryStart;
    // Requests before this time no longer count towards `used`, and are drawn faded.
    let countsFrom = -Infinity;
    if (track.windowed) {
      // Only the floating window reports its counters. For the fixed window, `used` is this
      // window's count, and the previous one's was counted as its requests came.
      const fixed = decision.previous === null;
      const previous = fixed
        ? (this.#spentByWindow.get(currentStart / windowMs - 1) ?? 0)
        : decision.previous;
      const current = fixed ? decision.used : decision.current;
      countsFrom = fixed ? currentStart : currentStart - windowMs;
      // The current window's label is cut off at now.
      track.currentLabel.box.setAttribute("width", right - currentX);
      showWindowLabel(track.previousLabel, previous, windowMs * scale);
      showWindowLabel(track.currentLabel, current, right - currentX);
      summary += ` Previous fixed window: ${count(previous, "token")};`;
      summary += ` this window: ${count(current, "token")}.`;

      if (track.overlap) {
        // The part of the previous window still inside the sliding window: `overlap` of it.
        const overlapWidth = currentX - middle;
        track.overlap.setAttribute("width", overlapWidth);
        track.overlapLabel.setAttribute("x", middle + overlapWidth / 2);
        const factor = overlapWidth >= 48 ? `× ${decision.overlap.toFixed(3)}` : "";
        updateText(track.overlapLabel, factor);
        summary += ` The sliding window of the last ${track.summaryWindow} still covers`;
        summary += ` ${decision.overlap.toFixed(2)} of the previous window.`;
      }
    } else {
      summary += ` The band is the last ${track.summaryWindow}.`;
      // The sliding log counts a request made at s until s + W; the token bucket has no
      // request that stops counting all at once.
      if (this.#limiter.algorithm === "sliding-log") countsFrom = now - windowMs + 1;
    }

    let allowed = 0;
    for (const hit of this.#history) {
      if (hit.allowed) allowed++;
      if (hit.layout !== track.layout) this.#place(hit);
      const expired = hit.t < countsFrom;
      if (expired !== hit.expired) {
        hit.expired = expired;
        hit.node.classList.toggle("expired", expired);
      }
    }
    summary += ` Requests shown: ${allowed} allowed, ${this.#history.length - allowed} denied.`;
    if (summary !== track.summary) {
      track.summary = summary;
      this.#timeline.setAttribute("aria-label", summary);
    }
  }

  /** Puts `hit`'s mark at its time and in its lane, relative to the current fixed window. */
  #place(hit) {
    const { origin, scale, layout } = this.#track;
    const y = TIMELINE.baseline - hit.lane * TIMELINE.laneHeight;
    hit.node.setAttribute("transform", `translate(${(hit.t - origin) * scale} ${y})`);
    hit.layout = layout;
  }

  /**
   * An allowed request is a dot, with its cost in it when not 1 (hollow when it spent
   * nothing); a denied one is a cross, so the two differ by shape, not only by colour.
   */
  #mark(hit) {
    const classes = ["mark", hit.allowed ? "allowed" : "denied"];
    if (hit.allowed && hit.cost === 0) classes.push("free");
    const mark = svg("g", { class: classes.join(" ") });
    if (!hit.allowed) {
      mark.append(svg("path", { d: CROSS }));
    } else if (hit.cost === 1) {
      mark.append(svg("circle", { r: 4.5 }));
    } else {
      mark.append(
        svg("circle", { r: 6.5 }),
        svg("text", { "text-anchor": "middle", dy: "0.35em" }, String(hit.cost)),
      );
    }
    return mark;
  }

  /**
   * Keeps the picture moving while it changes: every frame, or once a second for readers
   * who asked for less motion. Idle, hidden or off-screen elements ask for nothing.
   */
  #schedule() {
    if (
      this.#frame ||
      this.#timer ||
      !this.#changing ||
      !this.#live ||
      !this.isConnected ||
      !this.#onScreen
    )
      return;
    if (reducedMotion?.matches) this.#timer = setTimeout(this.#tick, 1000);
    else this.#frame = requestAnimationFrame(this.#tick);
  }

  /** One redraw; made once per element, not once per frame. */
  #tick = () => {
    this.#frame = this.#timer = 0;
    if (!this.#live) return;
    this.#draw(performance.now());
    this.#schedule();
  };

  #stop() {
    cancelAnimationFrame(this.#frame);
    clearTimeout(this.#timer);
    this.#frame = this.#timer = 0;
  }
}

RateLimitDemo.define();
