// The decision buffer's slots against the Rust that writes them: a slot renamed, moved or
// added on one side fails here, before any page reads a wrong number.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import test from "node:test";

import * as slots from "./decision.js";
import { readDecision } from "./decision.js";

const RUST = readFileSync(new URL("../../crates/trickle-wasm/src/lib.rs", import.meta.url), "utf8");

/** `pub const NAME: usize = N;` inside `pub mod field { … }`, in order. */
function rustSlots() {
  const body = RUST.match(/pub mod field \{([\s\S]*?)\n\}/)?.[1];
  assert.ok(body, "crates/trickle-wasm/src/lib.rs has no `pub mod field`");
  return [...body.matchAll(/pub const (\w+): usize = (\d+);/g)].map(([, name, index]) => [
    name,
    Number(index),
  ]);
}

test("every slot Rust names has the same index in decision.js", () => {
  const rust = rustSlots();
  assert.ok(rust.length > 0);
  for (const [name, index] of rust) assert.equal(slots[name], index, `slot ${name}`);
});

test("decision.js names no slot that Rust does not", () => {
  const rust = new Set(rustSlots().map(([name]) => name));
  const js = Object.keys(slots).filter(
    (name) => typeof slots[name] === "number" && name !== "DECISION_FIELDS",
  );
  assert.deepEqual(js.filter((name) => !rust.has(name)), []);
});

test("the buffer's length is Rust's DECISION_FIELDS, and every slot lies inside it", () => {
  const length = Number(RUST.match(/pub const DECISION_FIELDS: usize = (\d+);/)?.[1]);
  assert.equal(slots.DECISION_FIELDS, length);
  const indexes = rustSlots().map(([, index]) => index).sort((a, b) => a - b);
  assert.deepEqual(indexes, Array.from({ length }, (_, index) => index));
});

test("the outcome codes are Rust's, in order", () => {
  const code = (name) => Number(RUST.match(new RegExp(`pub const ${name}: u32 = (\\d+);`))?.[1]);
  assert.equal(slots.OUTCOMES[code("ALLOWED")], "allowed");
  assert.equal(slots.OUTCOMES[code("DENIED")], "denied");
  assert.equal(slots.OUTCOMES[code("EXCEEDS_LIMIT")], "exceeds-limit");
});

/** A buffer whose slot i holds 100 + i, so that each field shows which slot it came from. */
const numbered = (counted) => {
  const fields = Float64Array.from({ length: slots.DECISION_FIELDS }, (_, i) => 100 + i);
  fields[slots.COUNTED] = counted ? 1 : 0;
  return fields;
};

test("a denial reads every field from its own slot", () => {
  assert.deepEqual(readDecision(numbered(true), 1, "floating"), {
    algorithm: "floating",
    allowed: false,
    status: 429,
    outcome: "denied",
    cost: 100,
    used: 101,
    limit: 111,
    windowMs: 112,
    remaining: 102,
    retryAfterMs: 103,
    retryAfter: 104,
    t: 105,
    previous: 106,
    current: 107,
    overlap: 108,
    elapsedMs: 109,
  });
});

test("an allowed decision has no wait, and counters only where the algorithm has them", () => {
  const allowed = readDecision(numbered(false), 0, "sliding-log");
  assert.equal(allowed.status, 200);
  assert.equal(allowed.outcome, "allowed");
  assert.equal(allowed.retryAfterMs, null);
  assert.equal(allowed.retryAfter, null);
  assert.deepEqual(
    [allowed.previous, allowed.current, allowed.overlap, allowed.elapsedMs],
    [null, null, null, null],
  );
  const tooLarge = readDecision(numbered(false), 2, "fixed");
  assert.equal(tooLarge.outcome, "exceeds-limit");
  assert.equal(tooLarge.allowed, false);
  assert.equal(tooLarge.status, 429);
  assert.equal(tooLarge.retryAfter, null, "no wait helps a request larger than the limit");
});
