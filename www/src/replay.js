// Replay mode (`replay`): plain mode, and under it a request log the reader drops, picks or
// pastes, played against the widget's limit and algorithm by the core, a chunk at a time so
// that the page stays responsive: the timeline of what was allowed and refused, the first
// 429 marked, the figures, and the line `trickle replay` prints for the same file. The log's
// costs are its own (a cost column, or ESI's price for a status), as the CLI's are.
//
// Fetched on first use (modes.js). The opt-in modes' WebAssembly module,
// trickle_extras_bg.wasm, holds the core's log rules and replay figures, so that the default
// widget's module carries none of it; it is fetched when a reader first plays a log, and a
// failure to load it is shown as that play's error. (Not with a top-level await: some
// bundlers a docs site builds with refuse one in a module they split off.)

import { RawReplay } from "../pkg/trickle_extras.js";
import { loadExtras } from "./extras.js";
import { html, svg, updateAttribute, updateText } from "./dom.js";
import { count, formatExactWait } from "./format.js";
import * as plain from "./plain.js";
import { binOutcomes, checkReplay, harEntries, isHar, lineChunks } from "./replay-log.js";
import replayStyles from "./replay.css";

export const styles = replayStyles;

/** Lines (or HAR entries) decided between two looks at the clock. */
const CHUNK = 1_000;
/** How long a stretch of work may hold the page before it yields, in ms. */
const SLICE_MS = 30;
const BINS = 120;

/** See modes.js for what the element asks of a mode. */
export function create(context) {
  const { attribute, compare } = context;
  checkReplay({ replay: attribute("replay"), compare, endpoint: attribute("endpoint") });
  const inner = plain.create(context);
  const [limiter] = context.limiters;
  return new ReplayMode(inner, limiter.limit, limiter.algorithm);
}

/** Lets the page draw and handle input before the next stretch of work. */
function pause() {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

class ReplayMode {
  #inner;
  #limit;
  #algorithm;
  /** The replay running or shown, or null. */
  #raw = null;
  /** Counts plays, so that a play a newer one replaced stops. */
  #play = 0;
  /** Every decided request's time and outcome code, for the timeline. */
  #times = new Float64Array(1024);
  #codes = new Uint8Array(1024);
  #length = 0;

  #file;
  #paste;
  #progress;
  #figures;
  #summary;
  #error;
  #timeline;
  #allowedBars;
  #refusedBars;
  #firstMark;
  #end;
  element;
  place = "answer";

  constructor(inner, limit, algorithm) {
    this.#inner = inner;
    this.#limit = limit;
    this.#algorithm = algorithm;
    this.hint = inner.hint;

    this.#file = html("input", {
      part: "replay-file",
      type: "file",
      accept: ".csv,.har,.json,.txt,text/csv,application/json,text/plain",
    });
    this.#file.addEventListener("change", () => {
      const [file] = this.#file.files;
      if (file) this.#read(file);
    });
    this.#paste = html("textarea", {
      part: "replay-input",
      rows: "4",
      spellcheck: "false",
      placeholder: "t_ms,status\n0,200\n250,429",
    });
    const play = html("button", { part: "replay-play", class: "hit", type: "button" }, "Play the log");
    play.addEventListener("click", () => this.play(this.#paste.value));
    this.#progress = html("progress", {
      part: "replay-progress",
      max: "1",
      value: "0",
      "aria-label": "Requests replayed",
      hidden: "",
    });
    this.#allowedBars = svg("path", { class: "replay-allowed" });
    this.#refusedBars = svg("path", { class: "replay-refused" });
    this.#firstMark = svg("line", { class: "replay-first", y1: "0", y2: "40", hidden: "" });
    this.#timeline = svg(
      "svg",
      {
        part: "replay-timeline",
        class: "replay-timeline",
        viewBox: `0 0 ${BINS} 40`,
        preserveAspectRatio: "none",
        role: "img",
        "aria-label": "No log replayed yet",
      },
      this.#allowedBars,
      this.#refusedBars,
      this.#firstMark,
    );
    this.#end = html("span", {}, "");
    // The timeline's scale and key, for sight; its aria-label says the same in words.
    const axis = html(
      "p",
      { class: "replay-axis", "aria-hidden": "true" },
      html("span", {}, "0 s"),
      html(
        "span",
        {},
        html("span", { class: "replay-key-allowed" }, "■"),
        " allowed ",
        html("span", { class: "replay-key-refused" }, "■"),
        " refused ┆ first 429",
      ),
      this.#end,
    );
    this.#figures = html("dl", { part: "replay-figures", class: "replay-figures", hidden: "" });
    this.#summary = html("p", {
      part: "replay-summary",
      class: "replay-summary",
      role: "status",
      "aria-live": "polite",
    });
    this.#error = html("p", { part: "replay-error", class: "replay-error", role: "alert", hidden: "" });

    this.element = html(
      "section",
      { part: "replay", class: "replay", "aria-label": "Replay a request log" },
      html(
        "p",
        { class: "replay-title" },
        html("strong", {}, "Replay a request log"),
        " against this limit: a CSV log (",
        html("code", {}, "t_ms,cost"),
        " or ",
        html("code", {}, "t_ms,status"),
        ") or a HAR export. Drop it here, pick it, or paste it.",
      ),
      html("label", { class: "replay-field" }, "Log file ", this.#file),
      html("label", { class: "replay-field" }, "Or paste the log", this.#paste),
      html("div", { class: "controls" }, play, this.#progress),
      this.#timeline,
      axis,
      this.#figures,
      this.#summary,
      this.#error,
    );
    this.element.addEventListener("dragover", (event) => event.preventDefault());
    this.element.addEventListener("drop", (event) => {
      const file = event.dataTransfer?.files?.[0];
      if (!file) return;
      event.preventDefault();
      this.#read(file);
    });
  }

  get label() {
    return this.#inner.label;
  }

  async #read(file) {
    let text;
    try {
      text = await file.text();
    } catch (error) {
      this.#fail(`cannot read ${file.name}: ${error.message}`);
      return;
    }
    await this.play(text);
  }

  /** Says why a file could not even be read, as a play that stopped does. */
  #fail(text) {
    ++this.#play;
    this.#progress.hidden = true;
    this.#figures.hidden = true;
    updateText(this.#error, text);
    this.#error.hidden = false;
    updateText(this.#summary, "The log could not be replayed.");
    this.element.dataset.state = "error";
  }

  /**
   * Plays `text`, a CSV log or a HAR, against a fresh limiter; resolves to the figures once
   * it is played (and an event has said so), or to null when a newer play replaced it.
   */
  async play(text) {
    const run = ++this.#play;
    this.#raw?.free();
    this.#raw = null;
    this.#length = 0;
    this.element.dataset.state = "playing";
    this.#error.hidden = true;
    this.#figures.hidden = true;
    updateText(this.#summary, "Replaying…");
    this.#progress.hidden = false;
    this.#progress.value = 0;
    this.#draw();
    let raw;
    let error = null;
    try {
      await loadExtras("replay");
      if (run !== this.#play) return null;
      raw = this.#raw = new RawReplay(this.#limit, this.#algorithm);
      if (isHar(text)) await this.#playHar(raw, text, run);
      else await this.#playCsv(raw, text, run);
    } catch (thrown) {
      error = String(thrown?.message ?? thrown);
    }
    if (run !== this.#play) return null;
    this.#progress.hidden = true;
    const detail = raw ? this.#detail(raw, error) : { error };
    this.#show(detail);
    this.element.dataset.state = error === null ? "done" : "error";
    this.element.dispatchEvent(
      new CustomEvent("rate-limit-replay", { bubbles: true, composed: true, detail }),
    );
    return detail;
  }

  async #playCsv(raw, text, run) {
    let started = performance.now();
    let done = 0;
    for (const chunk of lineChunks(text, CHUNK)) {
      if (performance.now() - started > SLICE_MS) {
        this.#progress.value = done / text.length;
        this.#draw();
        await pause();
        if (run !== this.#play) return;
        started = performance.now();
      }
      done += chunk.length + 1;
      raw.csv(chunk);
      this.#keep(raw);
    }
    raw.finish();
  }

  async #playHar(raw, text, run) {
    const entries = harEntries(text);
    let started = performance.now();
    const total = entries.length * 2;
    for (let at = 0; at < entries.length; at++) {
      raw.har_entry(entries[at].started, entries[at].status);
      if (at % CHUNK === CHUNK - 1 && performance.now() - started > SLICE_MS) {
        this.#progress.value = at / total;
        await pause();
        if (run !== this.#play) return;
        started = performance.now();
      }
    }
    let played = 0;
    while (raw.har_play(CHUNK) > 0) {
      this.#keep(raw);
      played += CHUNK;
      if (performance.now() - started > SLICE_MS) {
        this.#progress.value = (entries.length + played) / total;
        this.#draw();
        await pause();
        if (run !== this.#play) return;
        started = performance.now();
      }
    }
  }

  /** Keeps the times and outcomes `raw` just decided, for the timeline. */
  #keep(raw) {
    const times = raw.times();
    const codes = raw.codes();
    const needed = this.#length + times.length;
    if (needed > this.#times.length) {
      const size = Math.max(needed, this.#times.length * 2);
      const grownTimes = new Float64Array(size);
      const grownCodes = new Uint8Array(size);
      grownTimes.set(this.#times.subarray(0, this.#length));
      grownCodes.set(this.#codes.subarray(0, this.#length));
      this.#times = grownTimes;
      this.#codes = grownCodes;
    }
    this.#times.set(times, this.#length);
    this.#codes.set(codes, this.#length);
    this.#length = needed;
  }

  #detail(raw, error) {
    const first = raw.first_refused_request;
    const wait = raw.longest_wait_ms;
    return {
      requests: raw.allowed + raw.denied + raw.never_fit,
      allowed: raw.allowed,
      denied: raw.denied,
      neverFit: raw.never_fit,
      firstRefused: first < 0 ? null : { request: first, tMs: raw.first_refused_t },
      longestWaitMs: wait < 0 ? null : wait,
      summary: error === null ? raw.summary() : null,
      error,
    };
  }

  /** The figures, the summary line or the error, and the timeline, once a play ends. */
  #show(detail) {
    this.#draw(detail.firstRefused?.tMs);
    if (detail.error !== null) {
      updateText(this.#error, detail.error);
      this.#error.hidden = false;
      updateText(
        this.#summary,
        detail.requests === undefined
          ? "The log could not be replayed."
          : `Stopped after ${count(detail.requests, "request")}: the log has a line the replay cannot read.`,
      );
      return;
    }
    const figure = (name, value) => html("div", {}, html("dt", {}, name), html("dd", {}, value));
    const first = detail.firstRefused;
    this.#figures.replaceChildren(
      figure("Requests", String(detail.requests)),
      figure("Allowed", String(detail.allowed)),
      figure("Denied", String(detail.denied)),
      figure("Never fit", String(detail.neverFit)),
      figure("First 429", first ? `request ${first.request}, at ${first.tMs} ms` : "none"),
      figure(
        "Longest wait",
        detail.longestWaitMs === null ? "none" : formatExactWait(detail.longestWaitMs),
      ),
    );
    this.#figures.hidden = false;
    updateText(this.#summary, detail.summary);
  }

  /** The timeline of what is decided so far, the first 429 marked when known. */
  #draw(firstT) {
    const length = this.#length;
    const last = length ? this.#times[length - 1] : 0;
    const { allowed, refused } = binOutcomes(this.#times, this.#codes, length, last, BINS);
    let most = 1;
    for (let bin = 0; bin < BINS; bin++) most = Math.max(most, allowed[bin] + refused[bin]);
    let allowedPath = "";
    let refusedPath = "";
    for (let bin = 0; bin < BINS; bin++) {
      const allowedHeight = (allowed[bin] / most) * 40;
      const refusedHeight = (refused[bin] / most) * 40;
      if (allowedHeight) allowedPath += `M${bin} 40v${-allowedHeight.toFixed(2)}h0.8v${allowedHeight.toFixed(2)}z`;
      if (refusedHeight) {
        const top = 40 - allowedHeight;
        refusedPath += `M${bin} ${top.toFixed(2)}v${-refusedHeight.toFixed(2)}h0.8v${refusedHeight.toFixed(2)}z`;
      }
    }
    updateText(this.#end, formatExactWait(last));
    updateAttribute(this.#allowedBars, "d", allowedPath);
    updateAttribute(this.#refusedBars, "d", refusedPath);
    if (firstT === undefined || firstT === null) {
      this.#firstMark.setAttribute("hidden", "");
    } else {
      const x = last > 0 ? Math.min(BINS - 0.5, (firstT / last) * BINS) : 0.4;
      updateAttribute(this.#firstMark, "x1", x.toFixed(2));
      updateAttribute(this.#firstMark, "x2", x.toFixed(2));
      this.#firstMark.removeAttribute("hidden");
    }
    const denied = this.#codes.subarray(0, length).reduce((sum, code) => sum + (code !== 0), 0);
    updateAttribute(
      this.#timeline,
      "aria-label",
      length === 0
        ? "No log replayed yet"
        : `Timeline of ${count(length, "request")} over ${last} ms: ${length - denied} allowed, ${denied} refused` +
            (firstT === undefined || firstT === null ? "" : `; the first 429 at ${firstT} ms`),
    );
  }

  now() {
    return this.#inner.now();
  }

  hit(status, now) {
    return this.#inner.hit(status, now);
  }

  reset() {
    this.#inner.reset();
  }

  draw(now, resync) {
    return this.#inner.draw(now, resync);
  }

  teardown() {
    this.#play++;
    this.#raw?.free();
    this.#raw = null;
    this.#inner.teardown();
  }
}
