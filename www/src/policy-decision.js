// A policy's decisions as policy mode shows them, read from the buffer the WebAssembly writes
// (crates/trickle-wasm/src/policy.rs), and the words around them. Pure, so that its tests
// run on plain arrays without the build. The rule is the core's alone: whether a request
// fits, which limit answered, when all of them fit again and what each has left are read
// from the buffer, never worked out here.

import { readCost } from "./attributes.js";
import { DECISION_FIELDS, readDecision } from "./decision.js";
import { count, formatExactWait, formatWindow, statusLine } from "./format.js";

/** The buffer's slots: policy.rs's constants, under the same names (policy-decision.test.js). */
export const ANSWERED_BY = 0;
export const REMAINING = 1;
export const POLICY_HEAD = 2;
export const NEXT_TOKEN_MS = DECISION_FIELDS;
export const OUTCOME = DECISION_FIELDS + 1;
export const LIMIT_FIELDS = DECISION_FIELDS + 2;
/** The core's `Policy::MAX_LIMITS`. */
export const MAX_LIMITS = 8;
export const POLICY_FIELDS = POLICY_HEAD + MAX_LIMITS * LIMIT_FIELDS;

/**
 * The decision in `fields` (the buffer, or any array of its numbers) for a policy of
 * `limits` (`[{ name }]`, in its order), whose call returned `outcome`: the policy's
 * answer, `{ allowed, status, outcome, answeredBy, retryAfterMs, retryAfter, remaining }`,
 * with `limits`, each limit's own decision as the single limiter reports one, plus its
 * `name` and `nextTokenMs` (null when every token is free). `retryAfterMs` is when every
 * limit fits again: the answering limit's own wait, the longest.
 */
export function readPolicyDecision(fields, outcome, limits, algorithm) {
  const own = limits.map(({ name }, index) => {
    const start = POLICY_HEAD + index * LIMIT_FIELDS;
    const slots = Array.prototype.slice.call(fields, start, start + LIMIT_FIELDS);
    const next = slots[NEXT_TOKEN_MS];
    return {
      name,
      ...readDecision(slots, slots[OUTCOME], algorithm),
      nextTokenMs: next < 0 ? null : next,
    };
  });
  const answering = fields[ANSWERED_BY] < 0 ? null : own[fields[ANSWERED_BY]];
  return {
    allowed: outcome === 0,
    status: outcome === 0 ? 200 : 429,
    outcome: answering?.outcome ?? "allowed",
    answeredBy: answering?.name ?? null,
    retryAfterMs: answering?.retryAfterMs ?? null,
    retryAfter: answering?.retryAfter ?? null,
    remaining: fields[REMAINING],
    limits: own,
  };
}

/** What the widget calls attribute `name` when it refuses it beside a policy. */
const REFUSED = {
  compare: "compare runs one limit through several algorithms",
  endpoint: "live mode compares a server's headers for one limit",
  predict: "predict mode asks about one limit",
  replay: "replay mode plays a log against one limit, as trickle replay does",
};

/**
 * Throws unless the attributes beside a policy `limit` are ones policy mode runs with:
 * `algorithm`, `cost` and `costs`, not another mode's. `compare` is read already (a
 * boolean); the others are the attributes' text, or null.
 */
export function checkPolicy(limit, { compare, endpoint, predict, replay }) {
  const on = (text) => text !== null && text !== "false";
  const asked = { compare, endpoint: endpoint !== null, predict: on(predict), replay: on(replay) };
  const other = Object.keys(REFUSED).find((name) => asked[name]);
  if (other) {
    throw new Error(
      `limit="${limit}" is a policy of several limits, and ${other} cannot be used with one: ${REFUSED[other]}; leave ${other} out, or write one limit`,
    );
  }
}

/**
 * Tokens each Hit spends (or reserves, with `costs`): readCost's rule against the smallest
 * N of the policy, since a cost above any limit could never be allowed.
 */
export function readPolicyCost(text, limits) {
  return readCost(text, Math.min(...limits.map((limit) => limit.tokens)));
}

/** "2 requests per 1 s and 3 per 4 s": every limit in words, the unit named once. */
export function policyHeadline(limits, unit) {
  const each = limits.map(
    ({ tokens, windowMs }, index) =>
      `${index === 0 ? count(tokens, unit) : tokens} per ${formatWindow(windowMs)}`,
  );
  return each.length > 1 ? `${each.slice(0, -1).join(", ")} and ${each.at(-1)}` : each[0];
}

/**
 * The answer to one press, as text: `code`, the status line (with Retry-After on a 429),
 * and `explanation`, which limit answered and when every limit fits again, or what each has
 * left. `asked` is what the press asked for; `table`, the cost table, if any.
 */
export function policyAnswer(decision, { cost: asked, table }) {
  const { answeredBy, limits } = decision;
  let code = statusLine(decision.status);
  let explanation;
  if (decision.outcome === "exceeds-limit") {
    const { cost, limit: tokens } = limits.find((own) => own.name === answeredBy);
    explanation = `Answered by ${answeredBy}: this request costs ${count(cost, "token")}, more than its whole limit of ${tokens}; no wait helps.`;
  } else if (!decision.allowed) {
    code += ` · Retry-After: ${decision.retryAfter}`;
    const refused = limits.filter((own) => !own.allowed).length;
    const which = refused > 1 ? `, the longest wait of the ${refused} limits that refused` : "";
    const verb = asked === 1 ? "fits" : "fit";
    explanation =
      `Answered by ${answeredBy}${which}: ${count(asked, "token")} ${verb} every limit again in ` +
      `${formatExactWait(decision.retryAfterMs)}. A 429 charges no limit${table ? ", and nothing was reserved" : ""}.`;
  } else {
    const left = limits
      .map(({ name, used, limit: tokens, remaining }) =>
        used > tokens ? `${name} ${used.toFixed(2)} of ${tokens}, over` : `${name} ${remaining} of ${tokens}`,
      )
      .join(" · ");
    const [{ cost, reserved }] = limits;
    const spent = table
      ? `Reserved ${count(reserved, "token")}, charged ${cost} after answering, in every limit`
      : `Cost ${count(cost, "token")} in every limit`;
    explanation = `${spent}. Left: ${left}.`;
  }
  return { code, explanation };
}
