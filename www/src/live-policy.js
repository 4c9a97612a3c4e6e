// Live mode on the core's policy, loaded only by a widget with `endpoint` and a `limit` of
// several limits, or `headers`: each Hit goes to the server as in live mode (live.js), and the
// model is the core's PolicyLimiter (policy.js), drawn one row per limit. Its answers are
// compared with the server's in both dialects: ESI's fields with those of the limit nearest
// to refusing, the IETF's limit by limit (each limit's quota and window, what it has left
// and when more comes back), with `t` from the core at both ends of the round trip. With
// `headers`, the model's answer is also shown as the headers a server would send.

import { checkPolicy, readPolicyCost } from "./policy-decision.js";
import { PolicyMode, load as loadPolicy, openPolicy, readHeaders, readPolicy } from "./policy.js";
import { LiveMode, LiveSession, readClientId, readEndpoint, styles as liveStyles } from "./live.js";
import { nearestLimit } from "./ratelimit-fields.js";
import { html } from "./dom.js";
import policyStyles from "./policy.css";

export const styles = `${liveStyles}\n${policyStyles}`;

/** The policy's WebAssembly, once for the page, as policy mode fetches it. */
export const load = loadPolicy;

/** See modes.js for what the element asks of a mode. */
export function create({ limit, attribute, baseURI, compare, pricing, single, Limiter, host }) {
  const dialect = readHeaders(attribute);
  checkPolicy(limit, {
    compare,
    predict: attribute("predict"),
    replay: attribute("replay"),
    headers: attribute("headers"),
  });
  const endpoint = readEndpoint(attribute("endpoint"), baseURI, compare);
  const clientId = readClientId(attribute("client-id"));
  const { raw, limits } = openPolicy(limit, attribute, Limiter);
  try {
    pricing.cost = readPolicyCost(attribute("cost"), limits);
    const view = new PolicyMode(raw, limits, pricing, dialect);
    const model = {
      limit: raw.text,
      peek: (now, cost) => readPolicy(raw, raw.peek(now, cost), limits),
      respond: (now, reserve, cost) => readPolicy(raw, raw.respond(now, reserve, cost), limits),
      reset: () => raw.reset(),
      free: () => raw.free(),
    };
    const predicted = (decision) => decision.limits.map(({ name, remaining, resetS }) => ({ name, r: remaining, t: resetS }));
    const session = new LiveSession({
      endpoint,
      clientId,
      limiter: model,
      pricing,
      costsText: attribute("costs"),
      clock: Date.now,
      esiLimit: (decision) => nearestLimit(decision, limits).limit,
      ietf: {
        quotas: limits.map(({ name, tokens, windowS }) => ({ name, q: tokens, w: windowS })),
        // What the server would have answered at each end: the same flow on a copy, which
        // charges the model nothing.
        ends: ({ t0, t1, cost, charge }) =>
          [t0, t1].map((now) => {
            const copy = raw.copy();
            try {
              return predicted(readPolicy(copy, copy.respond(now, cost, charge), limits));
            } finally {
              copy.free();
            }
          }),
        predicted,
      },
    });
    single.hide();
    const mode = new LiveMode(
      session,
      model,
      {
        remember: () => {},
        draw: (now) => view.draw(now),
        reset: () => view.reset(),
      },
      host,
      {
        element: html("div", { class: "live-policy" }, view.element, session.element),
        shown: ({ decision }) => view.show(decision),
      },
    );
    Object.assign(mode, {
      limit: raw.text,
      algorithm: raw.algorithm,
      label: view.label,
      headline: (unit) => view.headline(unit),
    });
    return mode;
  } catch (error) {
    raw.free();
    throw error;
  }
}
