// Predict mode's judging, apart from the page: the answers a reader may predict before a Hit,
// whether a prediction matches the core's decision, and the lines that say why the answer was
// what it was. Pure, so that its tests run without a browser or the WebAssembly; the decision
// judged is always the core's, made by the mode exactly as plain mode makes it.

import { count, formatExactWait, formatTokens, formatWindow } from "./format.js";

/**
 * What a reader may predict for a limit of window `windowMs`: let through (200 OK, or, with a
 * cost table, whatever status the pressed button asks for), or a 429 with the wait in one of
 * three ranges, up to W/4, up to W/2, and more. A 429's wait is rarely longer than W, and a
 * reader judges it against the window, so the ranges follow the window: 2 s and 4 s at 6/8s.
 * Each range holds a wait above `fromMs` and up to `toMs` (null: no upper end).
 */
export function choices(windowMs, table) {
  const quarter = Math.max(1, Math.round(windowMs / 4));
  const half = Math.max(quarter + 1, Math.round(windowMs / 2));
  const [low, high] = [formatWindow(quarter), formatWindow(half)];
  // "2 to 4 s", but "500 ms to 1 s".
  const unit = (text) => text.slice(text.indexOf(" "));
  const from = unit(low) === unit(high) ? low.slice(0, low.indexOf(" ")) : low;
  const refusal = (id, fromMs, toMs, label) => ({ id, allowed: false, fromMs, toMs, label });
  return [
    { id: "allowed", allowed: true, fromMs: null, toMs: null, label: table ? "Let through" : "200 OK" },
    refusal("soon", 0, quarter, `429, retry within ${low}`),
    refusal("later", quarter, half, `429, retry in ${from} to ${high}`),
    refusal("latest", half, null, `429, retry in more than ${high}`),
  ];
}

/**
 * Whether `choice` predicted `decision`: the status, and for a 429 the range its exact wait
 * falls in. A request that can never fit (`exceeds-limit`) has no wait: any 429 is right.
 */
export function judge(choice, decision) {
  const status = choice.allowed === decision.allowed;
  if (!status || decision.allowed || decision.outcome === "exceeds-limit") {
    return { status, correct: status };
  }
  const wait = decision.retryAfterMs;
  const inRange = wait > choice.fromMs && (choice.toMs === null || wait <= choice.toMs);
  return { status, correct: inRange };
}

/** "1 token", "0.5 tokens": to 3 decimals, as the widget shows tokens. */
function tokens(amount) {
  return count(Number(formatTokens(amount)), "token");
}

/**
 * The tokens in use just before the press, which the core compared with the limit: the
 * decision's `used` is after it, with the cost when it was allowed. With the floating
 * window's counters, the sum that made it, the current window's before the press too.
 */
function before(decision) {
  const spent = decision.allowed ? decision.cost : 0;
  const used = decision.used - spent;
  if (decision.previous === null) return { used, sum: formatTokens(used) };
  const current = decision.current - spent;
  const overlap = decision.overlap.toFixed(3);
  return { used, sum: `${decision.previous} × ${overlap} + ${current} = ${formatTokens(used)}` };
}

/**
 * Why the core answered as it did, in one line: `used` before the press against the limit,
 * "used = 4 × 0.625 + 3 = 5.5, and 5.5 + 1 > 6". `needs` is what the press had to fit: its
 * cost, or with a cost table the reserve.
 */
export function why(decision, needs) {
  if (decision.outcome === "exceeds-limit") {
    return `This request needs ${tokens(needs)}, more than the whole limit of ${decision.limit}.`;
  }
  const { used, sum } = before(decision);
  let shown = formatTokens(used);
  // A refusal by less than the last decimal shown must not read "5 + 1 > 6".
  if (!decision.allowed && Number(shown) + needs <= decision.limit) shown = `just over ${shown}`;
  const sign = decision.allowed ? "≤" : ">";
  return `used = ${sum}, and ${shown} + ${needs} ${sign} ${decision.limit}.`;
}

/**
 * The verdict on `choice` for `decision`, in one line: right, or where the prediction and the
 * core's answer part. `lastUsed` is `used` after the previous press (null before the first):
 * a reader who expected a 429 may have missed the tokens that came back since.
 */
export function verdict(choice, decision, needs, lastUsed) {
  const { status, correct } = judge(choice, decision);
  if (correct) return { correct, text: `Right: you said ${choice.label}.` };
  const { limit } = decision;
  const used = before(decision).used;
  const free = Math.max(0, limit - used);
  const freeText =
    free > 0 ? `${formatTokens(free)} of ${limit} tokens were free` : `none of the ${limit} tokens was free`;
  if (!status && decision.allowed) {
    let text = `Wrong: you said 429, but ${freeText}, enough for ${needs}`;
    const back = lastUsed === null ? 0 : lastUsed - used;
    if (Number(formatTokens(back)) > 0) text += `; ${tokens(back)} had come back since the last press`;
    return { correct, text: `${text}.` };
  }
  if (!status) {
    const text = `Wrong: you said ${choice.label}, but ${freeText}, and this request needs ${needs}.`;
    return { correct, text };
  }
  const range = choice.label.replace(/^429, retry /, "");
  const wait = formatExactWait(decision.retryAfterMs);
  return { correct, text: `Nearly: 429 is right, but the wait was ${wait}, not ${range}.` };
}
