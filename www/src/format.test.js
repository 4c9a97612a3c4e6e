// How the widget writes numbers, times and answers.

import assert from "node:assert/strict";
import test from "node:test";

import {
  count,
  formatExactWait,
  formatTokens,
  formatWait,
  formatWindow,
  pricingHint,
  statusLine,
} from "./format.js";

test("a window in the largest unit that divides it", () => {
  assert.equal(formatWindow(8_000), "8 s");
  assert.equal(formatWindow(900_000), "15 min");
  assert.equal(formatWindow(7_200_000), "2 h");
  assert.equal(formatWindow(1_500), "1500 ms");
});

test("a wait rounds up to a tenth: a reader who waits that long is not early", () => {
  assert.equal(formatWait(2_401), "2.5 s");
  assert.equal(formatWait(2_400), "2.4 s");
  assert.equal(formatExactWait(2_410), "2.41 s");
});

test("tokens to at most three decimals, counts with their plural", () => {
  assert.equal(formatTokens(5.6254), "5.625");
  assert.equal(formatTokens(6), "6");
  assert.equal(count(1, "token"), "1 token");
  assert.equal(count(0, "token"), "0 tokens");
});

test("a status line with its reason, or the bare number", () => {
  assert.equal(statusLine(429), "429 Too Many Requests");
  assert.equal(statusLine(418), "418");
});

test("the hint for a cost table says what is reserved; none without a table", () => {
  assert.match(pricingHint({ cost: 2, table: {} }), /reserves 2 tokens, answers/);
  assert.equal(pricingHint({ cost: 1, table: null }), null);
});
