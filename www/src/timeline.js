// The single widget's timeline: the last 2W up to now, now at the right edge, so that the
// sliding window of the last W is always the right half and the fixed windows move through
// it. A reader sees the previous window slide out of the band, and with it the overlap shrink.

import { setAttributes, svg, updateText } from "./dom.js";
import { count, formatWindow } from "./format.js";

/**
 * The vertical layout in CSS pixels; the width is the element's. Hits that land close
 * together stack upwards in lanes so that a quick burst stays countable.
 */
const LAYOUT = {
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
/** Hits closer than this many pixels go in the next lane up. */
const MARK_SPACING = 15;
/**
 * A key held down on Hit sends dozens of requests a second; the timeline keeps and draws the
 * latest, so that a widget left pressed all day holds no more than this.
 */
const MAX_MARKS = 200;
/** Used before the first ResizeObserver report, and while the element has no width. */
const FALLBACK_WIDTH = 480;
const CROSS = "M-4-4L4 4M-4 4L4-4";

/**
 * Shows a fixed window's count with the long name of the window while it fits in the
 * window's visible part, `room` px (about 7 px a character), so that the count stays
 * readable in a narrow element or a window just begun.
 */
function showWindowLabel(label, tokens, room) {
  const shown = String(tokens);
  const fits = (name) => `${name} · ${shown}`.length * 7 + 8 <= room;
  updateText(label.name, label.names.find(fits) ?? label.names.at(-1));
  updateText(label.countText, shown);
}

/**
 * An allowed request is a dot, with its cost in it when not 1 (hollow when it spent
 * nothing); a denied one is a cross, so the two differ by shape, not only by colour.
 */
function mark({ allowed, cost }) {
  const classes = ["mark", allowed ? "allowed" : "denied"];
  if (allowed && cost === 0) classes.push("free");
  const node = svg("g", { class: classes.join(" ") });
  if (!allowed) {
    node.append(svg("path", { d: CROSS }));
  } else if (cost === 1) {
    node.append(svg("circle", { r: 4.5 }));
  } else {
    node.append(
      svg("circle", { r: 6.5 }),
      svg("text", { "text-anchor": "middle", dy: "0.35em" }, String(cost)),
    );
  }
  return node;
}

export class Timeline {
  element = svg("svg", { part: "timeline", class: "timeline", role: "img" });
  /** The element's width in px, from its ResizeObserver; 0 until known. */
  width = 0;
  #algorithm;
  #windowMs;
  /**
   * Requests still shown, oldest first: `{ t, cost, allowed, lane, node, expired, layout }`,
   * with the mark drawn for each, whether it is drawn faded, and the layout it was placed in.
   */
  #history = [];
  /**
   * Tokens charged in the last fixed windows, by window number (t / W), counted as requests
   * come: the fixed window reports only this window's count, and the timeline, which keeps
   * at most MAX_MARKS requests, may no longer hold all of the previous one's.
   */
  #spentByWindow = new Map();
  #track = {};

  /** True while hits are still on the picture, so that it changes as they slide left. */
  get busy() {
    return this.#history.length > 0;
  }

  /**
   * The shapes for `algorithm`, created once and moved on every frame. Only the floating and
   * fixed windows have fixed windows to draw; every algorithm has the band of the last W.
   */
  build(algorithm, windowMs) {
    this.forget();
    this.#algorithm = algorithm;
    this.#windowMs = windowMs;
    const floating = algorithm === "floating";
    const windowed = floating || algorithm === "fixed";
    const { trackTop, trackBottom, axisY, captionY } = LAYOUT;
    const band = { y: trackTop, height: trackBottom - trackTop };
    // A label lives in a nested <svg>, which clips it to its window as the window slides
    // out. `names` is long, then short for narrow windows.
    const windowLabel = (names) => {
      const name = svg("tspan");
      const countText = svg("tspan", { class: "count" });
      const box = svg(
        "svg",
        { y: 0, height: trackTop, class: "window-label" },
        svg("text", { x: 5, y: LAYOUT.labelY }, name, " · ", countText),
      );
      return { box, name, names, countText };
    };
    const tick = (anchor, text) =>
      svg("text", { class: "tick", y: axisY, "text-anchor": anchor }, text);

    const track = {
      windowed,
      // Shaded only where it still counts, in part: the fixed window forgets it entirely.
      previousWindow: floating ? svg("rect", { class: "previous-window", ...band }) : null,
      // What is placed in time (the fixed windows and the requests) sits in these groups,
      // so that a frame moves it all by setting one transform on each; see draw.
      behind: floating ? svg("g") : null,
      lines: windowed ? svg("g") : null,
      slide: svg("g"),
      band: svg("rect", { class: "band", ...band }),
      overlap: floating ? svg("rect", { class: "overlap", ...band }) : null,
      overlapLabel: floating
        ? svg("text", { class: "overlap-label", y: LAYOUT.overlapLabelY, "text-anchor": "middle" })
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
      start: tick("start", `−${formatWindow(2 * windowMs)}`),
      middle: tick("middle", `−${formatWindow(windowMs)}`),
      end: tick("end", "now"),
      caption: svg("text", { class: "caption", y: captionY, "text-anchor": "middle" }),
      legend: svg(
        "g",
        { class: "legend", transform: `translate(${LAYOUT.inset + 4} ${captionY - 4})` },
        mark({ allowed: true, cost: 1 }),
        svg("text", { x: 9, y: 4 }, "allowed"),
        svg("g", { transform: "translate(62 0)" }, mark({ allowed: false })),
        svg("text", { x: 71, y: 4 }, "denied"),
      ),
      // The band's caption, longest first: the first that fits is shown.
      captions: [
        `sliding window · the last ${formatWindow(windowMs)}`,
        `the last ${formatWindow(windowMs)}`,
      ],
      // The screen reader's summary: what stays the same, and what was last said.
      summaryStart: `Timeline of the last ${formatWindow(2 * windowMs)}, now at the right.`,
      summary: null,
      // Set by #layOut for the element's width, and by draw.
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
    this.element.replaceChildren(
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
    this.element.removeAttribute("aria-label");
  }

  /** Empties the timeline and the fixed windows' counts. */
  forget() {
    this.#history = [];
    this.#spentByWindow.clear();
    this.#track.marks?.replaceChildren();
  }

  /** Adds a request, in the lane above the one before if the two would touch. */
  remember({ t, cost, allowed }) {
    const windowMs = this.#windowMs;
    const closeMs = (MARK_SPACING * 2 * windowMs) / (this.width || FALLBACK_WIDTH);
    const last = this.#history.at(-1);
    const lane = last && t - last.t < closeMs ? (last.lane + 1) % LAYOUT.lanes : 0;
    // Drawn once, and placed by the next draw.
    const hit = { t, cost, allowed, lane, node: mark({ allowed, cost }), expired: false, layout: -1 };
    this.#track.marks.append(hit.node);
    this.#history.push(hit);
    if (this.#history.length > MAX_MARKS) this.#history.shift().node.remove();
    if (allowed && cost > 0) {
      const number = Math.floor(t / windowMs);
      this.#spentByWindow.set(number, (this.#spentByWindow.get(number) ?? 0) + cost);
      // Only this window and the one before are ever shown.
      for (const old of this.#spentByWindow.keys()) {
        if (old < number - 1) this.#spentByWindow.delete(old);
      }
    }
  }

  /**
   * Places what does not move for a timeline `width` px wide: the band of the last W (always
   * the right half), its edges, the axis and its ticks; and, relative to the start of the
   * current fixed window, the fixed windows' shapes.
   */
  #layOut(width) {
    const windowMs = this.#windowMs;
    const track = this.#track;
    const left = LAYOUT.inset;
    const right = width - LAYOUT.inset;
    const middle = left + (right - left) / 2;
    track.width = width;
    track.nowX = right;
    track.bandX = middle;
    track.scale = (right - left) / (2 * windowMs);
    track.layout++;

    this.element.setAttribute("viewBox", `0 0 ${width} ${LAYOUT.height}`);
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
   * Draws the picture as of `decision` (a peek at its time). The fixed windows and the marks
   * are placed once, relative to the start of the current fixed window, in groups that a
   * frame slides left by setting one transform each; only a new W (or a new width) places
   * them again. So a frame costs the same with 200 marks as with none, and reads no layout.
   */
  draw(decision) {
    const { t: now } = decision;
    const windowMs = this.#windowMs;
    // Hits older than the timeline's 2W no longer show.
    while (this.#history.length && this.#history[0].t < now - 2 * windowMs) {
      this.#history.shift().node.remove();
    }
    const track = this.#track;
    const width = this.width || FALLBACK_WIDTH;
    if (width !== track.width) this.#layOut(width);
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
        summary += ` The sliding window of the last ${formatWindow(windowMs)} still covers`;
        summary += ` ${decision.overlap.toFixed(2)} of the previous window.`;
      }
    } else {
      summary += ` The band is the last ${formatWindow(windowMs)}.`;
      // The sliding log counts a request made at s until s + W; the token bucket has no
      // request that stops counting all at once.
      if (this.#algorithm === "sliding-log") countsFrom = now - windowMs + 1;
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
      this.element.setAttribute("aria-label", summary);
    }
  }

  /** Puts `hit`'s mark at its time and in its lane, relative to the current fixed window. */
  #place(hit) {
    const { origin, scale, layout } = this.#track;
    const y = LAYOUT.baseline - hit.lane * LAYOUT.laneHeight;
    hit.node.setAttribute("transform", `translate(${(hit.t - origin) * scale} ${y})`);
    hit.layout = layout;
  }
}
