// The event detail every mode fires, built in one place.

import assert from "node:assert/strict";
import test from "node:test";

import { decisionDetail } from "./detail.js";

const first = Object.freeze({ algorithm: "floating", allowed: true, status: 200, cost: 1 });
const second = Object.freeze({ algorithm: "sliding-log", allowed: false, status: 429, cost: 1 });

test("one algorithm: its decision, spread, with decisions, presses and no verdict", () => {
  const detail = decisionDetail({ decisions: [first] }, 3);
  assert.deepEqual(Object.keys(detail), [
    "algorithm",
    "allowed",
    "status",
    "cost",
    "decisions",
    "presses",
    "disagreement",
    "wronglyAllowed",
    "wronglyLimited",
  ]);
  assert.deepEqual(detail.decisions, [first]);
  assert.equal(detail.presses, 3);
  assert.deepEqual([detail.disagreement, detail.wronglyAllowed, detail.wronglyLimited], [null, null, null]);
});

test("compare mode: the first algorithm's decision and the floating window's verdict", () => {
  const verdict = { disagreement: "wrongly-allowed", wronglyAllowed: 1, wronglyLimited: 0 };
  const detail = decisionDetail({ decisions: [first, second], verdict }, 1);
  assert.equal(detail.algorithm, "floating");
  assert.equal(detail.decisions.length, 2);
  assert.equal(detail.disagreement, "wrongly-allowed");
  assert.equal(detail.wronglyAllowed, 1);
  assert.equal(detail.wronglyLimited, 0, "0 wrongly limited is a count, not null");
});

test("live mode: what the mode adds comes last", () => {
  const server = { status: 200 };
  const detail = decisionDetail({ decisions: [first], extra: { server, mismatches: [] } }, 1);
  assert.deepEqual(Object.keys(detail).slice(-2), ["server", "mismatches"]);
  assert.equal(detail.server, server);
});

test("the detail and its decisions are frozen, as a page receives them", () => {
  const detail = decisionDetail({ decisions: [first] }, 1);
  assert.ok(Object.isFrozen(detail));
  assert.ok(Object.isFrozen(detail.decisions));
});
