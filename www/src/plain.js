// Plain mode, the default: one algorithm, pressed on the reader's clock, each answer shown as
// the server the widget stands for would send it.

import { html } from "./dom.js";
import { count, formatExactWait, pricingHint, statusLine } from "./format.js";
import { respond } from "./respond.js";

/** See modes.js for what the element asks of a mode. */
export function create({ limiters: [limiter], pricing, single }) {
  return new PlainMode(limiter, pricing, single);
}

class PlainMode {
  #limiter;
  #pricing;
  #single;
  element = null;
  sheet = null;

  constructor(limiter, pricing, single) {
    this.#limiter = limiter;
    this.#pricing = pricing;
    this.#single = single;
    this.hint = pricingHint(pricing) ?? "Press Hit to send a request.";
    single.show(limiter, pricing.cost);
  }

  /** The page's own clock, which never jumps. */
  now() {
    return performance.now();
  }

  hit(status, now) {
    const decision = Object.freeze({ ...respond(this.#limiter, this.#pricing, status, now) });
    this.#single.remember(decision);
    const changing = this.#single.render(decision);
    return { decisions: [decision], changing, answer: answer(decision, this.#pricing) };
  }

  reset() {
    this.#limiter.reset();
    this.#single.forget();
  }

  draw(now) {
    return this.#single.render(this.#limiter.peek(now, 0));
  }

  teardown() {
    this.#limiter.free();
  }
}

/** The answer the server would send, and what it means for the client. */
function answer(decision, { cost: asked, table }) {
  const { status, cost, used, limit: tokens, remaining } = decision;
  let code = statusLine(status);
  let explanation;
  if (decision.outcome === "exceeds-limit") {
    explanation = `This request costs ${count(cost, "token")}, more than the whole limit of ${tokens}: no wait helps.`;
  } else if (!decision.allowed) {
    code += ` · Retry-After: ${decision.retryAfter}`;
    // The header rounds up to whole seconds; the exact wait is what the core computed.
    const verb = asked === 1 ? "fits" : "fit";
    explanation = `${count(asked, "token")} ${verb} again in ${formatExactWait(decision.retryAfterMs)}`;
    explanation += table ? "; nothing was reserved, and the 429 costs nothing." : ".";
  } else {
    const left =
      used > tokens
        ? `${used.toFixed(2)} of ${tokens} in use, over the limit until it slides out`
        : `${remaining} of ${tokens} left`;
    // With costs, the core's flow: what was held before answering, then what the answer cost.
    const spent = table
      ? `Reserved ${count(decision.reserved, "token")}, charged ${cost} after answering`
      : `Cost ${count(cost, "token")}`;
    explanation = `${spent}: ${left}.`;
  }
  return [
    html("span", { class: `code ${decision.allowed ? "allowed" : "denied"}` }, code),
    " ",
    html("span", { class: "explanation" }, explanation),
  ];
}
