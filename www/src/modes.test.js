// Which mode a widget's attributes ask for, and the default mode's part of the registry.

import assert from "node:assert/strict";
import test from "node:test";

import { arrivedMode, loadMode, modeName } from "./modes.js";

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

test("plain mode is in the bundle: there at once, never fetched", async () => {
  const plain = arrivedMode("plain");
  assert.equal(typeof plain?.create, "function");
  assert.equal(await loadMode("plain"), plain);
});

test("the other modes have not arrived until a widget asks for them", () => {
  assert.equal(arrivedMode("compare"), null);
  assert.equal(arrivedMode("live"), null);
  assert.equal(arrivedMode("predict"), null);
  assert.equal(arrivedMode("replay"), null);
});
