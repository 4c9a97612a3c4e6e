// Predict mode's judging: the choices follow the window, a prediction is right only when the
// status and, for a 429, the range of the exact wait match the core's decision, and the lines
// that explain it hold the numbers the core compared.

import assert from "node:assert/strict";
import test from "node:test";

import { FakeLimiter } from "./fakes.js";
import { choices, judge, verdict, why } from "./guess.js";

const [allowed, soon, later, latest] = choices(8_000, null);

/** A floating-window decision as the core returns it, with the fields the judge reads. */
function floating({ allowed: fits, used, cost = 1, previous, overlap, current, retryAfterMs = null }) {
  return {
    allowed: fits,
    outcome: fits ? "allowed" : "denied",
    cost,
    used,
    limit: 6,
    previous,
    overlap,
    current,
    retryAfterMs,
  };
}

test("the choices: 200, then a 429 within W/4, up to W/2, or longer", () => {
  assert.deepEqual(
    choices(8_000, null).map(({ label }) => label),
    ["200 OK", "429, retry within 2 s", "429, retry in 2 to 4 s", "429, retry in more than 4 s"],
  );
  assert.deepEqual(
    choices(15 * 60_000, null).map(({ label }) => label),
    ["200 OK", "429, retry within 225 s", "429, retry in 225 to 450 s", "429, retry in more than 450 s"],
  );
  assert.deepEqual(
    choices(2_000, {}).map(({ label }) => label),
    ["Let through", "429, retry within 500 ms", "429, retry in 500 ms to 1 s", "429, retry in more than 1 s"],
    "with a cost table, the answer let through is the pressed button's status",
  );
  assert.deepEqual(
    [allowed, soon, later, latest].map(({ fromMs, toMs }) => [fromMs, toMs]),
    [[null, null], [0, 2_000], [2_000, 4_000], [4_000, null]],
  );
});

test("a prediction is right when the status, and a 429's wait range, match the core's", () => {
  const limiter = new FakeLimiter({ limit: "6/8s", algorithm: "sliding-log" });
  for (let n = 0; n < 6; n++) {
    const decision = limiter.hit(n * 100);
    assert.deepEqual(judge(allowed, decision), { status: true, correct: true }, `press ${n + 1}`);
    assert.deepEqual(judge(soon, decision), { status: false, correct: false }, `press ${n + 1}`);
  }
  // The oldest token, spent at 0, slides out at 8 s: a wait of 7.4 s at 600 ms.
  const denied = limiter.hit(600);
  assert.equal(denied.retryAfterMs, 7_400);
  assert.deepEqual(judge(allowed, denied), { status: false, correct: false });
  assert.deepEqual(judge(soon, denied), { status: true, correct: false });
  assert.deepEqual(judge(later, denied), { status: true, correct: false });
  assert.deepEqual(judge(latest, denied), { status: true, correct: true });
  // At 6 s the wait is 2 s exactly: the range up to 2 s holds it, the next does not.
  const edge = limiter.hit(6_000);
  assert.equal(edge.retryAfterMs, 2_000);
  assert.deepEqual([soon, later].map((choice) => judge(choice, edge).correct), [true, false]);
  const atFour = limiter.hit(4_000);
  assert.equal(atFour.retryAfterMs, 4_000);
  assert.deepEqual([later, latest].map((choice) => judge(choice, atFour).correct), [true, false]);
  limiter.free();
});

test("a request that can never fit is a 429 whatever the range", () => {
  const never = { allowed: false, outcome: "exceeds-limit", retryAfterMs: null, cost: 7, used: 0, limit: 6, previous: null };
  for (const choice of [soon, later, latest]) assert.equal(judge(choice, never).correct, true);
  assert.equal(judge(allowed, never).correct, false);
  assert.equal(why(never, 7), "This request needs 7 tokens, more than the whole limit of 6.");
});

test("why: the floating window's sum before the press, against the limit", () => {
  // The worked example: at 11 s, 4 × 0.625 + 2 = 4.5; a press of 1 fits, current becomes 3.
  const fits = floating({ allowed: true, used: 5.5, previous: 4, overlap: 0.625, current: 3 });
  assert.equal(why(fits, 1), "used = 4 × 0.625 + 2 = 4.5, and 4.5 + 1 ≤ 6.");
  const refused = floating({ allowed: false, used: 5.5, previous: 4, overlap: 0.625, current: 3, retryAfterMs: 1_000 });
  assert.equal(why(refused, 1), "used = 4 × 0.625 + 3 = 5.5, and 5.5 + 1 > 6.");
  // Another algorithm: the tokens in use alone.
  const limiter = new FakeLimiter({ limit: "6/8s", algorithm: "sliding-log" });
  assert.equal(why(limiter.hit(0, 2), 2), "used = 0, and 0 + 2 ≤ 6.");
  limiter.free();
});

test("why never reads as a sum that fits when the core refused by less than it shows", () => {
  const hair = floating({ allowed: false, used: 5.0001, previous: 3, overlap: 0.0, current: 5, retryAfterMs: 1 });
  assert.match(why(hair, 1), /and just over 5 \+ 1 > 6\.$/);
});

test("the verdict: right, or where the prediction and the core part", () => {
  const fits = floating({ allowed: true, used: 5.5, previous: 4, overlap: 0.625, current: 3 });
  assert.deepEqual(verdict(allowed, fits, 1, null), { correct: true, text: "Right: you said 200 OK." });
  assert.deepEqual(verdict(soon, fits, 1, 6), {
    correct: false,
    text: "Wrong: you said 429, but 1.5 of 6 tokens were free, enough for 1; 1.5 tokens had come back since the last press.",
  });
  assert.equal(
    verdict(soon, fits, 1, null).text,
    "Wrong: you said 429, but 1.5 of 6 tokens were free, enough for 1.",
    "nothing came back before the first press",
  );
  const refused = floating({ allowed: false, used: 5.5, previous: 4, overlap: 0.625, current: 3, retryAfterMs: 1_000 });
  assert.deepEqual(verdict(allowed, refused, 1, 5.5), {
    correct: false,
    text: "Wrong: you said 200 OK, but 0.5 of 6 tokens were free, and this request needs 1.",
  });
  assert.deepEqual(verdict(soon, refused, 1, 5.5), { correct: true, text: "Right: you said 429, retry within 2 s." });
  assert.deepEqual(verdict(latest, refused, 1, 5.5), {
    correct: false,
    text: "Nearly: 429 is right, but the wait was 1 s, not in more than 4 s.",
  });
  const over = floating({ allowed: false, used: 9, previous: 0, overlap: 1, current: 9, retryAfterMs: 9_000 });
  assert.match(verdict(allowed, over, 1, 9).text, /but none of the 6 tokens was free/);
});
