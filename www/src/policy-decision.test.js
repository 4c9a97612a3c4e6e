// Policy mode's pure part: the buffer's slots against the Rust that writes them, a decision
// read from plain arrays laid out as the core lays them out, and the words around it.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import test from "node:test";

import { DECISION_FIELDS, LIMIT, REMAINING as OWN_REMAINING, RETRY_AFTER, RETRY_AFTER_MS, USED, WINDOW_MS, COST, RESERVED } from "./decision.js";
import * as slots from "./policy-decision.js";
import {
  checkPolicy,
  policyAnswer,
  policyHeadline,
  readPolicyCost,
  readPolicyDecision,
} from "./policy-decision.js";

const RUST = readFileSync(new URL("../../crates/trickle-wasm/src/policy.rs", import.meta.url), "utf8");
const CORE = readFileSync(new URL("../../src/values/policy.rs", import.meta.url), "utf8");

test("every slot policy.rs names has the same index here", () => {
  const named = [...RUST.matchAll(/pub const (\w+): usize = ([^;]+);/g)];
  assert.ok(named.length >= 6, "policy.rs names its slots");
  // Each value as Rust writes it, `POLICY_HEAD + Policy::MAX_LIMITS * LIMIT_FIELDS`, worked
  // out from the Rust constants before it (and the core's MAX_LIMITS, checked below).
  const rust = { DECISION_FIELDS, Policy: { MAX_LIMITS: slots.MAX_LIMITS } };
  for (const [, name, value] of named) {
    rust[name] = Function(...Object.keys(rust), `return ${value.replaceAll("::", ".")};`)(
      ...Object.values(rust),
    );
    assert.equal(slots[name], rust[name], `slot ${name} (${value})`);
  }
});

test("MAX_LIMITS is the core's", () => {
  assert.equal(Number(CORE.match(/pub const MAX_LIMITS: usize = (\d+);/)?.[1]), slots.MAX_LIMITS);
});

const LIMITS = [
  { name: "2/1s", text: "2/1s", tokens: 2, windowMs: 1_000 },
  { name: "hourly", text: "3/4s", tokens: 3, windowMs: 4_000 },
];

/**
 * A buffer as the core writes it: `answeredBy` (−1 for none), the fewest left, then each
 * limit's `{ outcome, used, remaining, retryAfterMs, nextTokenMs }`.
 */
function buffer(answeredBy, remaining, limits) {
  const fields = new Float64Array(slots.POLICY_FIELDS);
  fields[slots.ANSWERED_BY] = answeredBy;
  fields[slots.REMAINING] = remaining;
  for (const [index, own] of limits.entries()) {
    const at = slots.POLICY_HEAD + index * slots.LIMIT_FIELDS;
    fields[at + COST] = own.cost ?? 1;
    fields[at + USED] = own.used;
    fields[at + OWN_REMAINING] = own.remaining;
    fields[at + RETRY_AFTER_MS] = own.retryAfterMs ?? 0;
    fields[at + RETRY_AFTER] = Math.ceil((own.retryAfterMs ?? 0) / 1000);
    fields[at + LIMIT] = LIMITS[index].tokens;
    fields[at + WINDOW_MS] = LIMITS[index].windowMs;
    fields[at + RESERVED] = own.reserved ?? 0;
    fields[at + slots.NEXT_TOKEN_MS] = own.nextTokenMs ?? -1;
    fields[at + slots.OUTCOME] = own.outcome;
  }
  return fields;
}

test("a refusal is the answering limit's: its name, its wait, when every limit fits", () => {
  const fields = buffer(0, 0, [
    { outcome: 1, used: 2, remaining: 0, retryAfterMs: 800, nextTokenMs: 800 },
    { outcome: 0, used: 2, remaining: 1, nextTokenMs: 3_900 },
  ]);
  const decision = readPolicyDecision(fields, 1, LIMITS, "sliding-log");
  assert.deepEqual(
    [decision.allowed, decision.status, decision.outcome, decision.answeredBy],
    [false, 429, "denied", "2/1s"],
  );
  assert.deepEqual([decision.retryAfterMs, decision.retryAfter, decision.remaining], [800, 1, 0]);
  const [burst, hourly] = decision.limits;
  assert.deepEqual([burst.name, burst.allowed, burst.retryAfterMs, burst.nextTokenMs], ["2/1s", false, 800, 800]);
  assert.deepEqual([hourly.name, hourly.allowed, hourly.retryAfterMs, hourly.remaining], ["hourly", true, null, 1]);
  assert.deepEqual([hourly.limit, hourly.windowMs, hourly.algorithm], [3, 4_000, "sliding-log"]);

  const { code, explanation } = policyAnswer(decision, { cost: 1, table: null });
  assert.equal(code, "429 Too Many Requests · Retry-After: 1");
  assert.equal(explanation, "Answered by 2/1s: 1 token fits every limit again in 0.8 s. A 429 charges no limit.");
});

test("when several limits refuse, the one the core names answers, not the first", () => {
  const fields = buffer(1, 0, [
    { outcome: 1, used: 2, remaining: 0, retryAfterMs: 200 },
    { outcome: 1, used: 3, remaining: 0, retryAfterMs: 2_500 },
  ]);
  const decision = readPolicyDecision(fields, 1, LIMITS, "sliding-log");
  assert.deepEqual([decision.answeredBy, decision.retryAfterMs, decision.retryAfter], ["hourly", 2_500, 3]);
  assert.equal(
    policyAnswer(decision, { cost: 2, table: {} }).explanation,
    "Answered by hourly, the longest wait of the 2 limits that refused: 2 tokens fit every limit again in 2.5 s. A 429 charges no limit, and nothing was reserved.",
  );
});

test("an allowed press says what every limit has left; none answered", () => {
  const fields = buffer(-1, 1, [
    { outcome: 0, used: 1, remaining: 1, nextTokenMs: 1_000 },
    { outcome: 0, used: 1, remaining: 2, nextTokenMs: 4_000 },
  ]);
  const decision = readPolicyDecision(fields, 0, LIMITS, "sliding-log");
  assert.deepEqual(
    [decision.allowed, decision.status, decision.outcome, decision.answeredBy, decision.retryAfterMs],
    [true, 200, "allowed", null, null],
  );
  assert.deepEqual(policyAnswer(decision, { cost: 1, table: null }), {
    code: "200 OK",
    explanation: "Cost 1 token in every limit. Left: 2/1s 1 of 2 · hourly 2 of 3.",
  });
});

test("a cost above a limit never fits: that limit answers, with no Retry-After", () => {
  const fields = buffer(0, 0, [
    { outcome: 2, used: 0, remaining: 2, cost: 3 },
    { outcome: 0, used: 0, remaining: 3, cost: 3 },
  ]);
  const decision = readPolicyDecision(fields, 2, LIMITS, "fixed");
  assert.deepEqual([decision.outcome, decision.answeredBy, decision.retryAfter], ["exceeds-limit", "2/1s", null]);
  assert.deepEqual(policyAnswer(decision, { cost: 3, table: null }), {
    code: "429 Too Many Requests",
    explanation: "Answered by 2/1s: this request costs 3 tokens, more than its whole limit of 2; no wait helps.",
  });
});

test("the headline names every limit, the unit once", () => {
  assert.equal(policyHeadline(LIMITS, "request"), "2 requests per 1 s and 3 per 4 s");
  assert.equal(
    policyHeadline([...LIMITS, { tokens: 1_000, windowMs: 3_600_000 }], "token"),
    "2 tokens per 1 s, 3 per 4 s and 1000 per 1 h",
  );
  assert.equal(policyHeadline(LIMITS.slice(0, 1), "request"), "2 requests per 1 s");
});

test("cost is checked against the smallest limit", () => {
  assert.equal(readPolicyCost(null, LIMITS), 1);
  assert.equal(readPolicyCost("2", LIMITS), 2);
  assert.throws(() => readPolicyCost("3", LIMITS), {
    message: 'cost "3" is not allowed: use a whole number of tokens from 0 to 2',
  });
});

test("another mode's attribute beside a policy is refused, saying which and why", () => {
  const none = { compare: false, endpoint: null, predict: null, replay: null };
  checkPolicy("2/1s 3/4s", none);
  checkPolicy("2/1s 3/4s", { ...none, predict: "false", replay: "false" });
  for (const [asked, name] of [
    [{ compare: true }, "compare"],
    [{ endpoint: "/api" }, "endpoint"],
    [{ predict: "" }, "predict"],
    [{ replay: "" }, "replay"],
  ]) {
    assert.throws(() => checkPolicy("2/1s 3/4s", { ...none, ...asked }), {
      message: new RegExp(`^limit="2/1s 3/4s" is a policy of several limits, and ${name} cannot be used with one: .+; leave ${name} out, or write one limit$`),
    });
  }
});
