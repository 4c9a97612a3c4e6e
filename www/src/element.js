import { algorithmLabel } from "./algorithms.js";
import { assertShowable, readAlgorithms, readCompare, readCost } from "./attributes.js";
import { decisionDetail } from "./detail.js";
import { html, sharedSheet } from "./dom.js";
import { count, formatWindow, statusLine } from "./format.js";
import { CostTable, Limiter, canPrice, canRun, loadAlgorithms, loadFloating } from "./limiter.js";
import { arrivedMode, isPolicy, loadMode, modeName } from "./modes.js";
import { SingleView } from "./single.js";
import styles from "./styles.css";

const DEFAULT_LIMIT = "6/8s";

const FOOTNOTE =
  "A limit is a safety net, not a target: spread requests out and honour Retry-After.";

const OBSERVED = [
  "limit",
  "algorithm",
  "algorithms",
  "cost",
  "costs",
  "compare",
  "endpoint",
  "client-id",
  "predict",
  "replay",
  "headers",
  "openapi",
  "route",
];
/** The property of each attribute: a page may set one before this module has loaded. */
const PROPERTIES = OBSERVED.map((name) =>
  name.replace(/-(\w)/g, (_, letter) => letter.toUpperCase()),
);

// Importing this module must not throw where there is no DOM (a docs site's server-side
// render imports it too), so nothing here touches the page until an element is made.
const Base = globalThis.HTMLElement ?? class {};
const reducedMotion = globalThis.matchMedia?.("(prefers-reduced-motion: reduce)");

let baseSheet = null;
let markedReady = false;

function message(error) {
  return String(error?.message ?? error);
}

/**
 * A rate limit a reader can press, for API docs. Each element runs its own limiter from
 * trickle's Rust core compiled to WebAssembly, so every number it shows is the core's own
 * answer. For the floating window it shows why a request fits or not, `used = previous ×
 * overlap + current` with the real numbers, and a timeline on which the previous fixed
 * window slides out of the last W. A value it cannot use is explained, as text, in place of
 * the widget; fixing the attribute brings the widget back. Any change starts a fresh bucket.
 * In live mode (`endpoint`) each Hit is also sent to a real server, whose answer is shown
 * beside the widget's prediction, with whatever differs marked.
 *
 * @tagname rate-limit-demo
 * @summary A rate limit a reader can press: the formula with live numbers, the 429 and its Retry-After, the tokens coming back.
 *
 * @attr {string} limit - N tokens per window W, in the form of ESI's `X-Ratelimit-Limit` header: `150/15m`, `6/8s`. ESI's windows are in `m` and `h`; the widget also takes `s` and `ms`. Default `6/8s`. Or a policy: two to eight limits separated by spaces, all of which a request must fit, as APIs publish a burst and a sustained rate (`10/1s 1000/1h`), each optionally named (`burst=10/1s 1000/1h`; names of a-z, 0-9, `_`, `-`, `.`, starting with a letter). A policy shows one row per limit, its formula, tokens left and when they come back, and a 429 names the limit that answered it, with a Retry-After for when every limit fits again; a refused request charges no limit. Decided by the Rust core's `PolicyLimiter`, fetched (with its own WebAssembly module) only by a widget given a policy. Works with `algorithm` (every limit runs it), `cost` (at most the smallest N), `costs`, `endpoint` (each limit compared with the server's) and `headers`; not with `compare`, `predict` or `replay`.
 * @attr {string} algorithm - One of the core's algorithms: `floating` (default), `sliding-log`, `fixed`, `token-bucket`. Not with `compare`.
 * @attr {string} cost - Tokens each Hit spends, a whole number from 0 to N. Default 1. With `costs`, the tokens a request reserves before the server answers: if they do not fit, a 429 that costs nothing.
 * @attr {string} costs - What each response costs, by status: `esi`, EVE Online ESI's costs, or a table such as `200:2 304:1 4xx:5 429:0 5xx:0`. One Hit button per status; after answering, the request is settled at what its status costs (the reserve's difference charged, even past the limit, or refunded), as the Rust core's flow does.
 * @attr {boolean} compare - Compare mode: each Hit goes to several algorithms at the same instant, one row each, with the tokens each let in during the last W and how often the floating window disagreed with the exact sliding log. `compare="false"` is off.
 * @attr {string} algorithms - In compare mode, the algorithms to show, in order: two or more names separated by spaces. Default: all of the core's.
 * @attr {string} endpoint - Live mode: the URL of a rate-limited route, http or https, absolute or relative to the page. Each Hit is sent there as a GET with an `X-Client-Id` header (with `costs`, `?status=` asks for the pressed button's status), and the server's status and rate-limit headers, ESI's `X-Ratelimit-*` or the IETF's `RateLimit-Policy` and `RateLimit` (each limit on its own rows, by name) or both, are shown beside what the widget predicts, every field that differs marked. With a policy or `headers`, the prediction is the core's policy, whose `t` is compared too. The server must allow the page's origin (CORS) and expose its headers; a page's Content-Security-Policy must allow the URL in `connect-src`. Not with `compare`.
 * @attr {boolean} predict - Predict mode: before each Hit the reader predicts the answer, `200 OK` (with `costs`, let through) or a 429 with the wait in one of three ranges (up to W/4, up to W/2, longer), and the Hit reveals the core's answer with whether the prediction was right, the sum that decided it, and the score. A Hit without a prediction sends nothing and asks for one. Works with `algorithm`, `cost` and `costs`; not with `compare`, `endpoint` or `replay`. `predict="false"` is off.
 * @attr {boolean} replay - Replay mode: under the widget, a reader drops, picks or pastes a request log and watches the core play it against the widget's `limit` and `algorithm`, a chunk at a time with a progress bar: a timeline of the requests allowed and refused, the first 429 marked, the counts allowed, denied and never fitting, the longest wait, and the summary line `trickle replay` prints for the same file. Logs are the CLI's CSV (`t_ms,cost`, or `t_ms,status` priced by ESI's table) or a browser's HAR export; a row the replay cannot read is named with the CLI's message and line. The log's own costs are charged, not `cost` or `costs`. Fetched only by a widget that asks for it, and its own WebAssembly module when a log first plays. Not with `compare`, `endpoint` or `predict`. `replay="false"` is off.
 * @attr {string} headers - The headers view: under the widget, the head of the answer each Hit gets, exactly as a server with `trickle serve`'s `headers` setting writes it: `esi`, ESI's `X-Ratelimit-Limit`, `-Remaining` and `-Used` of the limit nearest to refusing; `ietf`, the IETF's `RateLimit-Policy` and `RateLimit` with every limit (draft-ietf-httpapi-ratelimit-headers-11, as Structured Fields); `both`; and `Retry-After` on a 429. Every number is the Rust core's (`trickle_core::ietf`, `PolicyDecision::nearest`). Runs the widget on the core's policy, fetched as a policy is, even for one limit. Works with `limit`, `algorithm`, `cost`, `costs` and `endpoint` (the model's headers); not with `compare`, `predict` or `replay`.
 * @attr {string} openapi - The URL of the API's OpenAPI document (JSON, absolute or relative to the page), to take the limit from, so that the docs can never show a limit the server does not enforce: the `x-rate-limit` of `route`'s operation, as ESI writes it (`{"group": "market", "window-size": "15m", "max-tokens": 150}`, read as `150/15m`) or, for several limits, an array of such objects each with a `name`, as `trickle serve`'s `/openapi.json` writes it (read as a policy, `burst=2/1s 6/1h`). The widget then runs exactly what `limit` would with that text, in every mode, and says under the heading where its limit came from. `limit` beside it is only checked: if it gives other limits (names and order aside), the widget shows the document's, and says that they differ. `algorithm`, `cost` and `costs` still apply, since a document says those in prose. A document that cannot be fetched (the network, CORS: the server must allow the page's origin), is not JSON, has no such route or method, no `x-rate-limit` or one that is not a limit, is explained in place of the widget. The reader is fetched only by a widget that uses it. Needs `route`.
 * @attr {string} route - With `openapi`: the operation whose limit to show, a method and a path as the document writes it, `GET /markets/prices`; a path matching one of the document's templates (`GET /markets/10000002/orders` for `/markets/{region_id}/orders`) is found too.
 * @attr {string} client-id - In live mode, the `X-Client-Id` sent, which keys the server's bucket: 1 to 64 visible ASCII characters. Default: a random id per widget, new on every Reset, so that the server's bucket starts empty when the model's does.
 *
 * @fires {CustomEvent<RateLimitDecisionDetail>} rate-limit-decision - One per request; bubbles and crosses shadow roots. Its detail is the core's decision for the first algorithm shown (with `costs`, and in live mode, with the tokens it `reserved` before it was answered), with `decisions` (one per algorithm), `presses` and, when the floating window is compared with the sliding log, `disagreement`, `wronglyAllowed` and `wronglyLimited`. For a policy, `decisions` has one per limit, each with its `name`, and `allowed`, `status`, `outcome`, `retryAfterMs`, `retryAfter` and `remaining` are the policy's, with `answeredBy`, the name of the limit that answered a 429 (null when allowed), and `policy`, the policy as the core writes it. With `headers`, `headers`: the answer's rate-limit headers as `[name, value]` pairs, as the headers view shows them (null without). In live mode, one per answer from the server, with the model's decision, the `server`'s answer (its IETF fields, if any, in `server.ietf`: `{ name, q, w, qu, r, t }` per limit) and the `mismatches`; a request that got no answer fires none. In predict mode, with the reader's `prediction` and the score.
 * @fires {CustomEvent<RateLimitMismatchDetail>} rate-limit-mismatch - Live mode: the server's answer to a press differs from the model's; bubbles and crosses shadow roots. Its detail names the `fields` that differ (`status`, `limit`, `remaining`, `used`, `retry-after`, and for the IETF's fields, limit by limit, `quota:<name>` for `q` and `w` and `ratelimit:<name>` for `r` and `t`), with the `server`'s answer, the `model`'s and the `message` the widget shows.
 *
 * @fires {CustomEvent<RateLimitReplayDetail>} rate-limit-replay - Replay mode: a log has been played, or stopped at a row it cannot read; bubbles and crosses shadow roots. Its detail has the counts (`requests`, `allowed`, `denied`, `neverFit`), `firstRefused` (`{ request, tMs }`, or null), `longestWaitMs` (or null), the CLI's `summary` line, and the `error` message (null when the whole log was played).
 *
 * @csspart panel - The card holding the live widget.
 * @csspart error - The message shown in place of the widget when it cannot run.
 * @csspart heading - The limit in words and as written.
 * @csspart source - With `openapi`: where the limit came from, a link to the document, and whether `limit` differs from it (then it is also `differs`).
 * @csspart formula - `used = previous × overlap + current` with live numbers (one term for the other algorithms).
 * @csspart previous - The floating window's previous-window count.
 * @csspart overlap - The share of the previous window still inside the sliding window.
 * @csspart current - The current window's count.
 * @csspart used - Tokens in use (in each row, in compare mode).
 * @csspart gauge - The bar of tokens in use.
 * @csspart remaining - Whole tokens left.
 * @csspart timeline - The last 2W, now at the right edge.
 * @csspart next - When the next token, and all of them, come back.
 * @csspart answer - The answer to the last press: the status line, and Retry-After on a 429.
 * @csspart hit - A Hit button; with `costs`, one per status, each with `data-status`.
 * @csspart reset - The Reset button.
 * @csspart footnote - The reminder that a limit is a safety net, not a target.
 * @csspart comparison - Compare mode's table and notes.
 * @csspart row - One algorithm's row in compare mode, with `data-algorithm`.
 * @csspart admitted - Tokens an algorithm let in during the last W.
 * @csspart over - How far past the limit that was.
 * @csspart response - An algorithm's answer to the last press.
 * @csspart window - Where the clock is in the fixed windows.
 * @csspart disagreements - The floating window's disagreements with the sliding log.
 * @csspart wrongly-allowed - Presses the floating window let in and the log refused.
 * @csspart wrongly-limited - Presses the floating window refused and the log let in.
 * @csspart presses - Presses so far.
 * @csspart disagreement-note - What a disagreement means.
 * @csspart live - Live mode: where each Hit is sent, and the table of the last press.
 * @csspart endpoint - Live mode: the URL and the `X-Client-Id` each Hit is sent with.
 * @csspart server - Live mode: a cell of the server's answer; its row has `data-field`.
 * @csspart model - Live mode: a cell of the model's answer.
 * @csspart match - Live mode: whether a field agrees: `same`, `differs`, or `–` when not compared.
 * @csspart differs - Live mode: a `match` cell whose field differs.
 * @csspart prediction - Predict mode: the question before each Hit, its answers and the score.
 * @csspart guess - Predict mode: an answer to predict, a toggle button with `aria-pressed` and `data-guess` (`allowed`, `soon`, `later`, `latest`).
 * @csspart score - Predict mode: predictions right so far, of those made.
 * @csspart verdict - Predict mode: in the answer, whether the prediction was right, and where it and the limiter's answer part.
 * @csspart policy - A policy of several limits: the list of its limits.
 * @csspart policy-limit - One limit of a policy, with `data-limit` (its name); its `formula`, `previous`, `overlap`, `current`, `used`, `gauge`, `remaining` and `next` parts are as the single limit's.
 * @csspart answered-by - On a policy's limit: the badge of the limit that answered the last 429.
 * @csspart headers - The headers view (`headers`): its caption and lines, with `data-dialect`.
 * @csspart header-lines - The headers view: the status line and one header a line.
 * @csspart replay - Replay mode: the log's inputs, its timeline and figures.
 * @csspart replay-file - Replay mode: the file input for a log.
 * @csspart replay-input - Replay mode: the text area a log may be pasted into.
 * @csspart replay-play - Replay mode: the button that plays the pasted log.
 * @csspart replay-progress - Replay mode: how much of the log is played.
 * @csspart replay-timeline - Replay mode: the requests allowed and refused over the log's span, the first 429 marked.
 * @csspart replay-figures - Replay mode: the counts, the first 429 and the longest wait.
 * @csspart replay-summary - Replay mode: the line `trickle replay` prints for the same log.
 * @csspart replay-error - Replay mode: the message for a row the replay cannot read, with its line.
 *
 * @cssprop --rate-limit-demo-accent - Buttons, the sliding window, the gauge.
 * @cssprop --rate-limit-demo-allowed - 200 answers and allowed hits.
 * @cssprop --rate-limit-demo-denied - 429 answers, denied hits, a full gauge.
 * @cssprop --rate-limit-demo-background - The card.
 * @cssprop --rate-limit-demo-foreground - The colour of text.
 * @cssprop --rate-limit-demo-muted - Labels and secondary text.
 * @cssprop --rate-limit-demo-border - Borders and window boundaries.
 * @cssprop --rate-limit-demo-font - The font of text (numbers use the mono font).
 * @cssprop --rate-limit-demo-mono-font - Numbers, the formula and the HTTP answer.
 * @cssprop --rate-limit-demo-radius - Corners.
 */
export class RateLimitDemo extends Base {
  static observedAttributes = OBSERVED;

  /**
   * Registers the element as `tag` in `registry`. A docs page may load the package twice;
   * when the tag is taken already, this does nothing.
   * @param {string} [tag]
   * @param {CustomElementRegistry} [registry]
   */
  static define(tag = "rate-limit-demo", registry = customElements) {
    if (!registry.get(tag)) registry.define(tag, this);
    return this;
  }

  /**
   * What the widget runs, plain, compare or live mode (see modes.js), or null while it loads
   * or shows an error. It owns the limiters; the element draws the panel around it.
   */
  #mode = null;
  /** `{ cost, table }`: what a press spends, or asks to fit, and the cost table, if any. */
  #pricing = { cost: 1, table: null };
  #presses = 0;
  /**
   * What `openapi` and `route` say, read by openapi.js for this build: `{ limit, element,
   * detail }` (the line saying where the limit came from, and the same for a message), or
   * `{ error }`; null without them.
   */
  #spec = null;
  /** Counts rebuilds, so that one waiting for a mode's module knows if it is stale. */
  #generation = 0;
  /** True while the picture changes with time: tokens in use, or hits still sliding left. */
  #changing = false;
  #onScreen = true;
  /** The animation frame (or, for reduced motion, the timer) the next redraw waits for, or 0. */
  #frame = 0;
  #timer = 0;
  #loaded = false;
  #ready;

  #root;
  #loading;
  #error;
  #panel;
  #heading;
  /** The formula, gauge, timeline and next line, which plain and live mode show. */
  #single = new SingleView();
  #answer;
  #buttons;
  /** What a mode may do to the element between presses: live mode's answers come later. */
  #host = {
    announce: (nodes) => this.#answer.replaceChildren(...nodes),
    busy: (on) =>
      on ? this.#answer.setAttribute("aria-busy", "true") : this.#answer.removeAttribute("aria-busy"),
    decided: (press) => this.#decided(press),
  };

  #visibility;
  #resize;

  constructor() {
    super();
    this.#root = this.attachShadow({ mode: "open" });
    baseSheet ??= sharedSheet(styles);
    this.#root.adoptedStyleSheets = [baseSheet];

    this.#loading = html("p", { class: "loading" }, "Loading the rate-limit demo…");
    this.#error = html("div", { part: "error", class: "error", hidden: "" });
    this.#heading = html("p", { part: "heading", class: "heading" });
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
      this.#single.element,
      html("div", { class: "controls" }, this.#buttons, reset),
      this.#answer,
      html("p", { part: "footnote", class: "footnote" }, FOOTNOTE),
    );
    this.#root.append(this.#loading, this.#error, this.#panel);

    this.#visibility = new IntersectionObserver(([entry]) => {
      this.#onScreen = entry.isIntersecting;
      if (this.#onScreen) this.#schedule();
      else this.#stop();
    });
    const timeline = this.#single.timeline;
    this.#resize = new ResizeObserver(([entry]) => {
      timeline.width = entry.contentRect.width;
      if (this.#mode) this.#renderNow();
    });
    this.#ready = this.#start();
  }

  /**
   * Resolves to true once this element is interactive, or false if it shows an error
   * instead (a bad attribute, WebAssembly that did not load). Never rejects.
   * @type {Promise<boolean>}
   */
  get ready() {
    return this.#ready;
  }

  /** The `limit` attribute, or `6/8s` when it is absent. @type {string} */
  get limit() {
    return this.getAttribute("limit") ?? DEFAULT_LIMIT;
  }
  set limit(value) {
    this.#reflect("limit", value);
  }

  /** The attribute as written, or null for the default. @type {string | null} */
  get algorithm() {
    return this.getAttribute("algorithm");
  }
  set algorithm(value) {
    this.#reflect("algorithm", value);
  }

  /** The attribute as written, or null for all of the core's. @type {string | null} */
  get algorithms() {
    return this.getAttribute("algorithms");
  }
  set algorithms(value) {
    this.#reflect("algorithms", Array.isArray(value) ? value.join(" ") : value);
  }

  /** The attribute as written, or null for 1. @type {string | null} */
  get cost() {
    return this.getAttribute("cost");
  }
  set cost(value) {
    this.#reflect("cost", value);
  }

  /** The `costs` attribute as written, or null for none. @type {string | null} */
  get costs() {
    return this.getAttribute("costs");
  }
  set costs(value) {
    this.#reflect("costs", value);
  }

  /** The `endpoint` attribute as written, or null: live mode is off. @type {string | null} */
  get endpoint() {
    return this.getAttribute("endpoint");
  }
  set endpoint(value) {
    this.#reflect("endpoint", value);
  }

  /** The `client-id` attribute as written, or null for a random id per widget. @type {string | null} */
  get clientId() {
    return this.getAttribute("client-id");
  }
  set clientId(value) {
    this.#reflect("client-id", value);
  }

  /** The `openapi` attribute as written, or null: the limit is `limit`'s. @type {string | null} */
  get openapi() {
    return this.getAttribute("openapi");
  }
  set openapi(value) {
    this.#reflect("openapi", value);
  }

  /** The `route` attribute as written, or null. @type {string | null} */
  get route() {
    return this.getAttribute("route");
  }
  set route(value) {
    this.#reflect("route", value);
  }

  /** Whether predict mode is asked for; setting true or false adds or removes the attribute. @type {boolean} */
  get predict() {
    const text = this.getAttribute("predict");
    return text !== null && text !== "false";
  }
  set predict(value) {
    this.#toggle("predict", value);
  }

  /** Whether compare mode is asked for; setting true or false adds or removes the attribute. @type {boolean} */
  get compare() {
    const text = this.getAttribute("compare");
    return text !== null && text !== "false";
  }
  set compare(value) {
    this.#toggle("compare", value);
  }

  /** The `headers` attribute as written, or null: no headers view. @type {string | null} */
  get headers() {
    return this.getAttribute("headers");
  }
  set headers(value) {
    this.#reflect("headers", value);
  }

  /** The `replay` attribute as written, or null: replay mode is off. @type {string | null} */
  get replay() {
    return this.getAttribute("replay");
  }
  set replay(value) {
    this.#reflect("replay", value);
  }

  connectedCallback() {
    // A page may set properties before this module has loaded; they then sit on the
    // instance and hide the accessors. Pass them through so that they become attributes.
    for (const name of PROPERTIES) {
      if (Object.hasOwn(this, name)) {
        const value = this[name];
        delete this[name];
        this[name] = value;
      }
    }
    this.#visibility.observe(this);
    this.#resize.observe(this.#single.timeline.element);
    if (this.#mode) {
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

  /**
   * Sends one request, as pressing Hit does, and returns the event's detail; null while the
   * element is loading or shows an error. With `costs`, `status` (default: the table's first)
   * is what the server answers, and must be one the table prices. In live mode the request
   * goes to the server and this returns null: the event follows its answer. In predict mode,
   * until the reader has chosen a prediction, nothing is sent and this returns null.
   * @param {number} [status]
   */
  hit(status) {
    const mode = this.#mode;
    if (!mode) return null;
    const { table } = this.#pricing;
    const answered = table ? (status ?? table.statuses[0]) : undefined;
    // Asked first, so that a status the table has no price for throws before any charge.
    table?.cost(answered);
    const press = mode.hit(answered, mode.now());
    return press && this.#decided(press);
  }

  /** Shows a press the mode has decided, and fires its events; returns the decision's detail. */
  #decided(press) {
    this.#presses++;
    const detail = decisionDetail(press, this.#presses);
    this.#changing = press.changing;
    this.#answer.replaceChildren(...press.answer);
    this.dispatchEvent(
      new CustomEvent("rate-limit-decision", { bubbles: true, composed: true, detail }),
    );
    if (press.mismatch) {
      this.dispatchEvent(
        new CustomEvent("rate-limit-mismatch", {
          bubbles: true,
          composed: true,
          detail: press.mismatch,
        }),
      );
    }
    this.#schedule();
    return detail;
  }

  /**
   * Empties the bucket and the timeline. In live mode the server's bucket starts afresh too,
   * under a new random id, unless `client-id` fixes the id.
   */
  reset() {
    if (!this.#mode) return;
    this.#presses = 0;
    this.#mode.reset();
    this.#answer.removeAttribute("aria-busy");
    this.#showHint();
    this.#renderNow();
  }

  async #start() {
    try {
      await loadFloating();
    } catch (error) {
      this.#showError("This rate-limit demo could not load its WebAssembly module.", message(error));
      return false;
    }
    this.#loaded = true;
    // Awaited, so that `ready` covers an OpenAPI document and a mode's module being fetched.
    await this.#rebuild();
    if (this.#mode && !markedReady) {
      markedReady = true;
      performance.mark("rate-limit-demo:ready");
    }
    return this.#mode !== null;
  }

  /**
   * Sets a boolean attribute from a property: true (or "", "true") adds it, false (or null,
   * undefined, "false") removes it, and any other value is written as it is.
   */
  #toggle(name, value) {
    if (value === true || value === "" || value === "true") this.setAttribute(name, "");
    else if (value === false || value === null || value === undefined || value === "false") {
      this.removeAttribute(name);
    } else this.setAttribute(name, String(value));
  }

  #reflect(name, value) {
    if (value === null || value === undefined) this.removeAttribute(name);
    else this.setAttribute(name, String(value));
  }

  /** Frees what the widget runs on: its limiters and their WebAssembly memory. */
  #teardown() {
    this.#stop();
    this.#mode?.teardown();
    this.#mode?.element?.remove();
    this.#mode = null;
    this.#answer.removeAttribute("aria-busy");
    this.#pricing.table?.free();
    this.#pricing = { cost: 1, table: null };
    this.#presses = 0;
    this.#single.forget();
  }

  /**
   * Builds fresh limiters from the attributes and the panel around them, or shows why not.
   * Returns a promise while it waits for the OpenAPI document or a mode's module. `spec` is
   * what `openapi` and `route` say, once read (see #spec).
   */
  #rebuild(spec = null) {
    if (!this.#loaded) return;
    const generation = ++this.#generation;
    this.#teardown();
    this.#spec = spec;
    // The document is read first (openapi.js, fetched only by a widget that asks; each
    // document once for the page), and its limit then stands in for `limit` everywhere.
    if (!spec && (this.openapi ?? this.route) !== null) {
      this.#showLoading();
      return import("./openapi.js")
        .then((module) => module.fromOpenApi(this))
        .catch((error) => ({ error: message(error) }))
        .then((read) => generation === this.#generation && this.#rebuild(read));
    }
    if (spec?.error) return this.#showError(spec.error);
    const attribute = (name) => (spec && name === "limit" ? spec.limit : this.getAttribute(name));
    const limit = attribute("limit") ?? DEFAULT_LIMIT;
    // A policy's limiter is its mode's (policy or live-policy mode), from WebAssembly the
    // default module leaves out; the mode checks `cost` against its limits and sets it. The
    // headers view's figures come from there too.
    const policy = isPolicy(limit) || attribute("headers") !== null;
    let limiters = [];
    let table = null;
    let compare;
    try {
      compare = readCompare(attribute("compare"));
      const names = readAlgorithms(
        { compare, algorithm: attribute("algorithm"), algorithms: attribute("algorithms") },
        Limiter.algorithms,
      );
      // The sliding log, the fixed window, the token bucket and cost tables are in a module
      // of their own, fetched the first time a widget on the page asks for one of them.
      if ((!policy && !names.every(canRun)) || (attribute("costs") !== null && !canPrice())) {
        this.#showLoading();
        return loadAlgorithms().then(
          () => generation === this.#generation && this.#rebuild(spec),
          (error) => {
            if (generation === this.#generation) {
              this.#showError("This rate-limit demo could not load its WebAssembly module.", message(error));
            }
          },
        );
      }
      if (!policy) {
        for (const algorithm of names) limiters.push(new Limiter({ limit, algorithm }));
        assertShowable(limiters[0], limit);
      }
      const costs = attribute("costs");
      if (costs !== null) table = this.#costTable(costs);
      this.#pricing = { cost: policy ? 1 : readCost(attribute("cost"), limiters[0].tokens), table };
    } catch (error) {
      for (const limiter of limiters) limiter.free();
      table?.free();
      this.#showError(message(error));
      return;
    }
    // A mode's own attributes (live mode's endpoint) are read by its module, which a page of
    // plain widgets never fetches. Properties written out in full: the manifest analyzer takes
    // a shorthand one (`{ limiters }`) for a declaration of the module's and lists it.
    const context = {
      limit: limit,
      limiters: limiters,
      pricing: this.#pricing,
      single: this.#single,
      Limiter: Limiter,
      attribute: attribute,
      baseURI: this.ownerDocument.baseURI,
      compare: compare,
      host: this.#host,
    };
    const name = modeName({
      compare,
      endpoint: attribute("endpoint"),
      predict: this.predict,
      replay: attribute("replay"),
      limit,
      headers: attribute("headers"),
    });
    const module = arrivedMode(name);
    if (module) {
      this.#build(module, context);
      return;
    }
    this.#showLoading();
    return loadMode(name).then(
      (loaded) => {
        if (generation === this.#generation) this.#build(loaded, context);
        else for (const limiter of limiters) limiter.free();
      },
      (error) => {
        for (const limiter of limiters) limiter.free();
        if (generation === this.#generation) {
          const title = name[0].toUpperCase() + name.slice(1);
          this.#showError(`${title} mode could not load.`, message(error));
        }
      },
    );
  }

  /** Builds the mode from `module` and the panel around it, or shows why it cannot run. */
  #build(module, context) {
    let mode;
    try {
      mode = module.create(context);
    } catch (error) {
      for (const limiter of context.limiters) limiter.free();
      this.#showError(message(error));
      return;
    }
    this.#mode = mode;
    // A mode's sheet goes when another mode takes over: predict mode's hides a part of plain's.
    this.#root.adoptedStyleSheets = module.sheet ? [baseSheet, module.sheet] : [baseSheet];
    if (mode.element) (mode.place === "answer" ? this.#answer : this.#single.element).after(mode.element);
    this.#buildHeading(context.limiters[0] ?? mode);
    this.#buildButtons();
    this.#showHint();
    this.#loading.hidden = true;
    this.#error.hidden = true;
    this.#panel.hidden = false;
    this.#renderNow();
    this.#schedule();
  }

  #costTable(text) {
    let table;
    try {
      table = new CostTable(text);
    } catch (error) {
      throw new Error(`costs="${text}": ${message(error)}`);
    }
    if (table.statuses.length === 0) {
      table.free();
      throw new Error(
        `costs="${text}" prices no answer but 429, which the limiter gives itself and which costs nothing: add the statuses a request can get, e.g. costs="200:2 ${text}"`,
      );
    }
    return table;
  }

  /** Until a module or a document arrives, the loading note stands in for the old panel. */
  #showLoading() {
    this.#error.hidden = this.#panel.hidden = true;
    this.#loading.hidden = false;
  }

  /**
   * Shows `text` (and a detail, such as the browser's own error, or where an OpenAPI
   * document's limit came from) in place of the widget.
   */
  #showError(text, detail = this.#spec?.detail) {
    this.#loading.hidden = true;
    this.#panel.hidden = true;
    const lines = [html("p", {}, text)];
    if (detail) lines.push(html("p", { class: "error-detail" }, detail));
    this.#error.replaceChildren(...lines);
    this.#error.hidden = false;
  }

  /**
   * The limit in words and as written, from the first limiter's numbers (or the mode's
   * headline, for a mode that makes its own limiters), and what runs; with `openapi`, where
   * the limit came from.
   */
  #buildHeading({ tokens, windowMs, limit, algorithm }) {
    const { cost, table } = this.#pricing;
    // With costs that vary, a token is no longer a request.
    const unit = table || cost !== 1 ? "token" : "request";
    const perRequest = table || cost === 1 ? "" : ` · each request costs ${count(cost, "token")}`;
    this.#heading.replaceChildren(
      html("strong", {}, this.#mode.headline?.(unit) ?? `${count(tokens, unit)} per ${formatWindow(windowMs)}`),
      ` · ${this.#mode.label ?? algorithmLabel(algorithm)}${perRequest} `,
      html("code", { class: "limit-code" }, limit),
      this.#spec?.element ?? "",
    );
  }

  #buildButtons() {
    const { cost, table } = this.#pricing;
    const button = (label, spends, status) => {
      const element = html(
        "button",
        { part: "hit", class: "hit", type: "button" },
        label,
        " ",
        html("span", { class: "hit-cost" }, count(spends, "token")),
      );
      if (status !== undefined) element.dataset.status = String(status);
      element.addEventListener("click", () => this.hit(status));
      return element;
    };
    this.#buttons.replaceChildren(
      ...(table
        ? table.statuses.map((status) =>
            button(`Hit → ${statusLine(status)}`, table.cost(status), status),
          )
        : [button("Hit", cost)]),
    );
  }

  #showHint() {
    this.#answer.replaceChildren(html("span", { class: "hint" }, this.#mode.hint));
  }

  /**
   * Draws the widget after a change other than time passing: built, reset, put back on the
   * page or resized.
   */
  #renderNow() {
    this.#changing = this.#mode.draw(this.#mode.now(), true);
  }

  /**
   * Keeps the picture moving while it changes: every frame, or once a second for readers
   * who asked for less motion. Idle, hidden or off-screen elements ask for nothing.
   */
  #schedule() {
    if (this.#frame || this.#timer || !this.#changing || !this.#mode) return;
    if (!this.isConnected || !this.#onScreen) return;
    if (reducedMotion?.matches) this.#timer = setTimeout(this.#tick, 1000);
    else this.#frame = requestAnimationFrame(this.#tick);
  }

  /** One redraw; made once per element, not once per frame. */
  #tick = () => {
    this.#frame = this.#timer = 0;
    if (!this.#mode) return;
    this.#changing = this.#mode.draw(this.#mode.now(), false);
    this.#schedule();
  };

  #stop() {
    cancelAnimationFrame(this.#frame);
    clearTimeout(this.#timer);
    this.#frame = this.#timer = 0;
  }
}

/**
 * Registers the element as `tag` (default `rate-limit-demo`) in `registry` (default the
 * page's); does nothing if the tag is taken already.
 */
export function define(tag, registry) {
  return RateLimitDemo.define(tag, registry);
}
