// Compare mode's counts, on a fake core: the definitions of src/analysis/compare.rs.
// tests/e2e/compare-parity.test.mjs checks the same counts against the replay CLI.

import assert from "node:assert/strict";
import test from "node:test";

import { FakeLimiter } from "./fakes.js";
import { Tally, disagreement } from "./tally.js";

const allowed = { allowed: true, cost: 1 };
const denied = { allowed: false, cost: 1 };

test("a disagreement is named from the floating window's side", () => {
  assert.equal(disagreement(allowed, denied), "wrongly-allowed");
  assert.equal(disagreement(denied, allowed), "wrongly-limited");
  assert.equal(disagreement(allowed, allowed), null);
  assert.equal(disagreement(denied, denied), null);
});

test("the floating window is judged against the sliding log wherever each is shown", () => {
  const tally = new Tally(FakeLimiter, ["fixed", "sliding-log", "floating"], 1000);
  assert.ok(tally.judged);
  assert.deepEqual(tally.add([allowed, denied, allowed], 0), {
    disagreement: "wrongly-allowed",
    wronglyAllowed: 1,
    wronglyLimited: 0,
  });
  assert.deepEqual(tally.add([denied, allowed, denied], 1), {
    disagreement: "wrongly-limited",
    wronglyAllowed: 1,
    wronglyLimited: 1,
  });
  assert.deepEqual(tally.add([denied, allowed, allowed], 2), {
    disagreement: null,
    wronglyAllowed: 1,
    wronglyLimited: 1,
  });
  assert.equal(tally.presses, 3);
  tally.free();
});

test("without both algorithms nothing is judged, and the counts are null", () => {
  const tally = new Tally(FakeLimiter, ["fixed", "token-bucket"], 1000);
  assert.equal(tally.judged, false);
  assert.deepEqual(tally.add([allowed, denied], 0), {
    disagreement: null,
    wronglyAllowed: null,
    wronglyLimited: null,
  });
  assert.equal(tally.presses, 1);
  tally.free();
});

test("let in counts the tokens each algorithm allowed in the last W, and forgets older ones", () => {
  const tally = new Tally(FakeLimiter, ["floating", "sliding-log"], 1000);
  tally.add([{ allowed: true, cost: 2 }, denied], 0);
  tally.add([allowed, allowed], 600);
  tally.add([{ allowed: true, cost: 0 }, allowed], 700);
  assert.equal(tally.admitted(0, 700), 3);
  assert.equal(tally.admitted(1, 700), 2);
  // The first press's 2 tokens leave the floating window's count at 1000 ms.
  assert.equal(tally.admitted(0, 999), 3);
  assert.equal(tally.admitted(0, 1000), 1);
  tally.free();
});

test("reset empties the counts; free releases every audit", () => {
  const before = FakeLimiter.live.size;
  const tally = new Tally(FakeLimiter, ["floating", "sliding-log"], 1000);
  assert.equal(FakeLimiter.live.size, before + 2);
  tally.add([allowed, denied], 0);
  tally.reset();
  assert.deepEqual([tally.presses, tally.wronglyAllowed, tally.wronglyLimited], [0, 0, 0]);
  assert.equal(tally.admitted(0, 1), 0);
  tally.free();
  assert.equal(FakeLimiter.live.size, before);
});

test("a tally that cannot be built frees what it made", () => {
  const before = FakeLimiter.live.size;
  let made = 0;
  class Failing extends FakeLimiter {
    constructor(options) {
      if (++made === 2) throw new Error("out of memory");
      super(options);
    }
  }
  assert.throws(() => new Tally(Failing, ["floating", "sliding-log"], 1000), /out of memory/);
  assert.equal(FakeLimiter.live.size, before);
});
