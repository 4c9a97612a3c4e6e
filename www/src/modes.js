// The widget's modes, and the one way a mode other than the default is fetched: by a dynamic
// import the first time a widget on the page asks for it, so that a page of plain widgets
// never downloads compare, live, policy, predict or replay mode. www/build.mjs finds the modes' files from the
// dynamic imports below, each bundled as a file of its own.
//
// A mode module exports `create(context)`, when it has one `styles` (its stylesheet's text),
// and when it needs more than the default WebAssembly before it can be made, `load()`, which
// the loader awaits. `context` is what the element built: `{ limiters, pricing, single, Limiter,
// attribute, baseURI, compare, host }` (see element.js). The mode it returns owns the
// limiters from then on, and offers:
//
//   label              what runs, for the heading, "4 algorithms side by side"; left out, the
//                      first algorithm's name in words, "floating window"
//   headline(unit)     the heading's limits in words, "10 requests per 1 s and 1000 per 1 h";
//                      left out, the first limiter's N per W. A mode without limiters in
//                      `context` (policy mode makes its own) also has `limit` and `algorithm`
//   hint               the status line before the first press
//   element, place     its own part of the panel, or null; placed after "single" (the
//                      single-algorithm view) or after "answer" (the status line)
//   now()              its clock, in ms
//   hit(status, now)   one press: { decisions, changing, answer, verdict?, extra?, mismatch? }
//                      (see detail.js), or null when the answer comes later through
//                      host.decided (live mode)
//   reset()            empties the buckets and what is drawn of them
//   draw(now, resync)  draws as of `now`; returns whether it still changes with time. `resync`
//                      is true when drawing for a reason other than time passing
//   teardown()         stops, and frees its limiters; its element is removed by the element

import { sharedSheet } from "./dom.js";
import * as plain from "./plain.js";

/** The modes fetched on first use. */
const LAZY = {
  compare: () => import("./compare.js"),
  live: () => import("./live.js"),
  policy: () => import("./policy.js"),
  predict: () => import("./predict.js"),
  replay: () => import("./replay.js"),
};

/** Each mode module once it has arrived, with its stylesheet made: `{ create, sheet }`. */
const arrived = { plain: { create: plain.create, sheet: null } };
const loading = {};

/**
 * Whether `limit` is a policy rather than one limit: two or more parts, separated by spaces
 * or commas as the core reads a policy, the first a limit (`10/1s 1000/1h`), or one limit
 * given a name (`burst=10/1s`). Anything else, good or bad, is one limit, for the default
 * module's limiter and its messages: `6 / 8s` is a limit with spaces in it, not a policy.
 */
export function isPolicy(limit) {
  // Past any separators, a first part with a '/' in it, which holds a '=' or has another
  // part after it.
  return /^[\s,]*(?=[^\s,]*\/)([^\s,]*=|[^\s,]+[\s,]+[^\s,])/.test(limit);
}

/**
 * The mode a widget's attributes ask for: policy for a `limit` of several limits (which
 * refuses `compare`, `endpoint`, `predict` and `replay`, with a message, once built),
 * predict with `predict` (which refuses `compare`, `endpoint` and `replay`), replay with `replay` (the
 * attribute's text, on unless absent or "false"; its mode refuses `compare` and `endpoint`),
 * live with `endpoint` (which refuses `compare`), compare with `compare`, else plain. A
 * mode's own checks live in its module, which a page of plain widgets never fetches.
 */
export function modeName({ compare, endpoint, predict, replay = null, limit = "" }) {
  if (isPolicy(limit)) return "policy";
  if (predict) return "predict";
  if (replay !== null && replay !== "false") return "replay";
  if (endpoint !== null) return "live";
  return compare ? "compare" : "plain";
}

/** The mode module `name` if it has arrived, else null. */
export function arrivedMode(name) {
  return arrived[name] ?? null;
}

/** Fetches the mode module `name` once for the whole page; every call gets the same promise. */
export function loadMode(name) {
  loading[name] ??= arrived[name]
    ? Promise.resolve(arrived[name])
    : LAZY[name]().then(async (module) => {
        await module.load?.();
        arrived[name] = { create: module.create, sheet: sharedSheet(module.styles) };
        return arrived[name];
      });
  return loading[name];
}
