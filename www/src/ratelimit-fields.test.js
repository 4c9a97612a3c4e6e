// The headers view's writing and live mode's reading of the rate-limit fields, on decisions
// laid out as readPolicyDecision gives them. That the strings are the server's byte for byte
// is tests/e2e/ietf-strings.test.mjs's job, against a real `trickle serve`.

import assert from "node:assert/strict";
import test from "node:test";

import {
  limitField,
  nearestLimit,
  parseList,
  policyField,
  quotaUnit,
  readDialect,
  readIetf,
  responseHeaders,
} from "./ratelimit-fields.js";

const LIMITS = [
  { name: "burst", text: "2/1s", tokens: 2, windowS: 1 },
  { name: "3/1500ms", text: "3/1500ms", tokens: 3, windowS: null },
];

/** A policy decision: `limits` as `[allowed, cost, remaining, resetS]`. */
function decision({ allowed = true, nearest = 0, retryAfter = null, limits }) {
  return {
    allowed,
    status: allowed ? 200 : 429,
    retryAfter,
    nearest,
    limits: limits.map(([own, cost, remaining, resetS], index) => ({
      name: LIMITS[index].name,
      allowed: own,
      cost,
      remaining,
      resetS,
    })),
  };
}

test("RateLimit-Policy: each limit's name, q, qu for tokens, and w only in whole seconds", () => {
  assert.equal(policyField(LIMITS, "requests"), '"burst";q=2;w=1, "3/1500ms";q=3');
  assert.equal(policyField(LIMITS, "tokens"), '"burst";q=2;qu="tokens";w=1, "3/1500ms";q=3;qu="tokens"');
  // A Structured Field integer has at most 15 digits: the layer writes the largest.
  assert.equal(policyField([{ name: "big", tokens: 2 ** 53 - 1, windowS: 1 }], "requests"), '"big";q=999999999999999;w=1');
});

test("RateLimit: r for each limit, t unless every unit is free", () => {
  assert.equal(
    limitField(decision({ limits: [[true, 1, 1, 1], [true, 1, 2, null]] })),
    '"burst";r=1;t=1, "3/1500ms";r=2',
  );
});

test("ESI's fields are the nearest limit's; a refusal spends nothing", () => {
  const allowed = decision({ nearest: 1, limits: [[true, 2, 5, 1], [true, 2, 1, 2]] });
  assert.deepEqual(nearestLimit(allowed, LIMITS), { limit: "3/1500ms", remaining: 1, used: 2 });
  const refused = decision({ allowed: false, retryAfter: 1, limits: [[false, 1, 0, 1], [true, 1, 2, 2]] });
  assert.deepEqual(nearestLimit(refused, LIMITS), { limit: "2/1s", remaining: 0, used: 0 });
});

test("the headers of each dialect, in the layer's order, Retry-After on a 429 only", () => {
  const refused = decision({ allowed: false, retryAfter: 1, limits: [[false, 1, 0, 1], [true, 1, 2, 2]] });
  const options = { limits: LIMITS, unit: "requests" };
  assert.deepEqual(responseHeaders(refused, { ...options, dialect: "both" }), [
    ["X-Ratelimit-Limit", "2/1s"],
    ["X-Ratelimit-Remaining", "0"],
    ["X-Ratelimit-Used", "0"],
    ["RateLimit-Policy", '"burst";q=2;w=1, "3/1500ms";q=3'],
    ["RateLimit", '"burst";r=0;t=1, "3/1500ms";r=2;t=2'],
    ["Retry-After", "1"],
  ]);
  assert.deepEqual(
    responseHeaders(refused, { ...options, dialect: "esi" }).map(([name]) => name),
    ["X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Used", "Retry-After"],
  );
  const allowed = decision({ limits: [[true, 1, 1, 1], [true, 1, 2, 2]] });
  assert.deepEqual(
    responseHeaders(allowed, { ...options, dialect: "ietf" }).map(([name]) => name),
    ["RateLimit-Policy", "RateLimit"],
  );
  // A request too large ever to fit gets no Retry-After: no wait helps.
  const never = decision({ allowed: false, retryAfter: null, limits: [[false, 3, 2, null], [true, 3, 3, null]] });
  assert.ok(!responseHeaders(never, { ...options, dialect: "esi" }).some(([name]) => name === "Retry-After"));
});

test("qu counts tokens unless every request costs exactly 1", () => {
  assert.equal(quotaUnit({ cost: 1, table: null }), "requests");
  assert.equal(quotaUnit({ cost: 2, table: null }), "tokens");
  assert.equal(quotaUnit({ cost: 1, table: {} }), "tokens");
});

test("headers takes esi, ietf or both, and says so", () => {
  for (const dialect of ["esi", "ietf", "both"]) assert.equal(readDialect(dialect), dialect);
  for (const bad of ["", "IETF", "x-ratelimit"]) {
    assert.throws(() => readDialect(bad), {
      message: `headers="${bad}" is not allowed: write esi (X-Ratelimit-*), ietf (RateLimit-Policy and RateLimit) or both, as trickle serve's headers setting does, or leave headers out`,
    });
  }
});

test("a list written by policyField and limitField reads back as written", () => {
  const written = `${policyField(LIMITS, "tokens")}`;
  assert.deepEqual(parseList(written), [
    { name: "burst", params: { q: 2, qu: "tokens", w: 1 } },
    { name: "3/1500ms", params: { q: 3, qu: "tokens" } },
  ]);
});

test("parseList reads what RFC 9651 allows in these fields, and refuses the rest", () => {
  // Tokens, booleans, escapes, spaces and tabs around commas.
  assert.deepEqual(parseList(' default;q=100;w=60 ,\t"a\\"b";r=?1;x '), [
    { name: "default", params: { q: 100, w: 60 } },
    { name: 'a"b', params: { r: true, x: true } },
  ]);
  for (const [text, message] of [
    ['"burst";q=2,', /a comma at the end/],
    ['"burst" "other"', /no comma between items/],
    ['"burst', /closing quote/],
    ['"burst";q=1.5', /not a string, token, integer or boolean/],
    ["(1 2)", /not a string, token, integer or boolean/],
    ['"burst";=1', /a parameter without a key/],
    ["1;q=2", /an item that is not a string or token/],
    ['"b\\x"', /a bad escape/],
    ['"burst";q=1234567890123456', /not a string, token, integer or boolean/],
  ]) {
    assert.throws(() => parseList(text), message, text);
  }
});

test("readIetf joins the two fields by name, and says what it could not read", () => {
  const { limits, problems } = readIetf('"burst";q=2;w=1, "hourly";q=6;qu="tokens";w=3600', '"burst";r=0;t=1, "hourly";r=4;t=3599');
  assert.deepEqual(problems, []);
  assert.deepEqual(limits, [
    { name: "burst", q: 2, w: 1, qu: null, r: 0, t: 1 },
    { name: "hourly", q: 6, w: 3600, qu: "tokens", r: 4, t: 3599 },
  ]);
  assert.deepEqual(readIetf(null, null), { limits: null, problems: [] });
  const half = readIetf('"burst";q=2;w=1', null);
  assert.deepEqual(half.problems, ["The server sent no RateLimit header this page can read."]);
  assert.deepEqual(half.limits, [{ name: "burst", q: 2, w: 1, qu: null, r: null, t: null }]);
  const bad = readIetf('"burst";q=2;w=1', "burst;r=-1, (x)");
  assert.match(bad.problems[0], /^RateLimit is not a Structured Field list: .* at "\(x\)"\.$/);
  // A negative r reads as nothing rather than as a number the model could match.
  assert.equal(readIetf(null, '"burst";r=-1').limits[0].r, null);
});
