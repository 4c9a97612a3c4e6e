// Which mode a widget's attributes ask for, and the default mode's part of the registry.

import assert from "node:assert/strict";
import test from "node:test";

import { arrivedMode, isPolicy, loadMode, modeName } from "./modes.js";

test("endpoint asks for live mode, even beside compare, whose mode then refuses it", () => {
  assert.equal(modeName({ compare: false, endpoint: "/api" }), "live");
  assert.equal(modeName({ compare: true, endpoint: "" }), "live");
  assert.equal(modeName({ compare: true, endpoint: null }), "compare");
  assert.equal(modeName({ compare: false, endpoint: null }), "plain");
});

test("predict asks for predict mode, even beside endpoint or compare, which its mode refuses", () => {
  assert.equal(modeName({ compare: false, endpoint: null, predict: true }), "predict");
  assert.equal(modeName({ compare: false, endpoint: null, predict: false }), "plain");
  assert.equal(modeName({ compare: true, endpoint: null, predict: true }), "predict");
  assert.equal(modeName({ compare: false, endpoint: "/api", predict: true }), "predict");
});

test("replay asks for replay mode, even beside compare or endpoint, which its mode refuses", () => {
  for (const replay of ["", "true", "yes"]) {
    assert.equal(modeName({ compare: false, endpoint: null, replay }), "replay");
  }
  assert.equal(modeName({ compare: true, endpoint: null, replay: "" }), "replay");
  assert.equal(modeName({ compare: false, endpoint: "/api", replay: "" }), "replay");
  assert.equal(modeName({ compare: false, endpoint: null, replay: "false" }), "plain");
  assert.equal(modeName({ compare: true, endpoint: null, replay: null }), "compare");
  assert.equal(modeName({ compare: false, endpoint: null, predict: true, replay: "" }), "predict");
});

test("two or more limits, or a named one, are a policy; one limit, good or bad, is not", () => {
  for (const limit of ["10/1s 1000/1h", "10/1s,1000/1h", " 2/1s  3/4s ", "burst=10/1s", "burst=10/1s 1000/1h"]) {
    assert.equal(isPolicy(limit), true, limit);
  }
  // Bad policies are policies too, so that the core's policy message is shown.
  for (const limit of ["10/1s 10/1s", "10/1s garbage", "1/1s 2/1s 3/1s 4/1s 5/1s 6/1s 7/1s 8/1s 9/1s"]) {
    assert.equal(isPolicy(limit), true, limit);
  }
  // One limit keeps the single limiter's message: a limit with spaces in it, markup, nothing.
  for (const limit of ["6/8s", " 6/8s ", "6/8s,", "6 / 8s", "<img src=x onerror=alert(1)>", "", "   ", "6/8x"]) {
    assert.equal(isPolicy(limit), false, JSON.stringify(limit));
  }
});

test("a policy asks for policy mode, even beside the others' attributes, which its mode refuses", () => {
  const none = { compare: false, endpoint: null, predict: false, replay: null };
  assert.equal(modeName({ ...none, limit: "2/1s 3/4s" }), "policy");
  assert.equal(modeName({ ...none, limit: "6/8s" }), "plain");
  assert.equal(modeName({ ...none, compare: true, limit: "2/1s 3/4s" }), "policy");
  assert.equal(modeName({ ...none, predict: true, replay: "", endpoint: "/api", limit: "burst=2/1s" }), "policy");
  assert.equal(modeName({ ...none, predict: true, limit: "6/8s" }), "predict");
});

test("plain mode is in the bundle: there at once, never fetched", async () => {
  const plain = arrivedMode("plain");
  assert.equal(typeof plain?.create, "function");
  assert.equal(await loadMode("plain"), plain);
});

test("the other modes have not arrived until a widget asks for them", () => {
  assert.equal(arrivedMode("compare"), null);
  assert.equal(arrivedMode("live"), null);
  assert.equal(arrivedMode("policy"), null);
  assert.equal(arrivedMode("predict"), null);
  assert.equal(arrivedMode("replay"), null);
});
