// The element's attributes, read: each bad value is refused with a message that says what is
// allowed.

import assert from "node:assert/strict";
import test from "node:test";

import {
  assertShowable,
  readAlgorithms,
  readCompare,
  readCompared,
  readCost,
  readPredict,
} from "./attributes.js";

const KNOWN = ["floating", "sliding-log", "fixed", "token-bucket"];
const none = { compare: false, algorithm: null, algorithms: null };

test("compare is a boolean attribute, and compare=\"false\" is off", () => {
  for (const on of ["", "true", "compare"]) assert.equal(readCompare(on), true, on);
  for (const off of [null, "false"]) assert.equal(readCompare(off), false, String(off));
  assert.throws(() => readCompare("yes"), /compare="yes" is not allowed/);
});

test("one algorithm: the attribute, or the core's default", () => {
  assert.deepEqual(readAlgorithms(none, KNOWN), ["floating"]);
  assert.deepEqual(readAlgorithms({ ...none, algorithm: "fixed" }, KNOWN), ["fixed"]);
  assert.throws(
    () => readAlgorithms({ ...none, algorithms: "fixed floating" }, KNOWN),
    /picks what compare mode shows/,
  );
});

test("compare mode: every algorithm runs until the mode keeps the ones it shows", () => {
  assert.deepEqual(readAlgorithms({ ...none, compare: true }, KNOWN), KNOWN);
  assert.deepEqual(readAlgorithms({ ...none, compare: true, algorithm: "fixed" }, KNOWN), KNOWN);
});

test("compare mode shows all of the core's, or two or more named once each", () => {
  const compared = { algorithm: null, algorithms: null };
  assert.deepEqual(readCompared(compared, KNOWN), KNOWN);
  assert.deepEqual(readCompared({ ...compared, algorithms: "fixed, floating" }, KNOWN), [
    "fixed",
    "floating",
  ]);
  for (const [algorithms, message] of [
    ["  ", /names no algorithm/],
    ["fixed leaky", /"leaky" is not an algorithm/],
    ["fixed fixed", /names fixed twice/],
    ["fixed", /names one algorithm/],
  ]) {
    assert.throws(() => readCompared({ ...compared, algorithms }, KNOWN), message, algorithms);
  }
  assert.throws(
    () => readCompared({ ...compared, algorithm: "fixed" }, KNOWN),
    /cannot be used with compare/,
  );
});

test("a cost is a whole number from 0 to the limit's tokens", () => {
  assert.equal(readCost(null, 6), 1);
  assert.equal(readCost(" 6 ", 6), 6);
  assert.equal(readCost("0", 6), 0);
  for (const text of ["7", "1.5", "-1", "", "two"]) {
    assert.throws(() => readCost(text, 6), /from 0 to 6/, text);
  }
});

test("a limit past 2^53 − 1 tokens or ms is refused: JS could not show it exactly", () => {
  assertShowable({ tokens: 6, windowMs: 8000 }, "6/8s");
  assert.throws(
    () => assertShowable({ tokens: 2 ** 53, windowMs: 8000 }, "9007199254740993/8s"),
    /too large to show exactly/,
  );
});

test("predict is a boolean attribute, refused beside compare or endpoint", () => {
  const alone = { compare: false, endpoint: null };
  for (const on of ["", "true", "predict"]) assert.equal(readPredict(on, alone), true, on);
  for (const off of [null, "false"]) assert.equal(readPredict(off, alone), false, String(off));
  assert.throws(() => readPredict("yes", alone), /predict="yes" is not allowed: predict is on or off/);
  assert.throws(() => readPredict("", { ...alone, compare: true }), /predict cannot be used with compare/);
  assert.throws(
    () => readPredict("", { ...alone, endpoint: "/api" }),
    /predict cannot be used with endpoint="\/api"/,
  );
  assert.throws(() => readPredict("", { ...alone, replay: "" }), /predict cannot be used with replay/);
  assert.equal(readPredict("", { ...alone, replay: "false" }), true);
  // Off, it refuses nothing: compare and live mode keep their own checks.
  assert.equal(readPredict("false", { compare: true, endpoint: "/api" }), false);
});
