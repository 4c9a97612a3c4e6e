// One request as the server the widget stands for answers it, on a fake core.

import assert from "node:assert/strict";
import test from "node:test";

import { FakeCostTable, FakeLimiter } from "./fakes.js";
import { answered, respond } from "./respond.js";

test("without a table a request spends its cost if that fits", () => {
  const limiter = new FakeLimiter({ limit: "2/1s" });
  assert.equal(respond(limiter, { cost: 2, table: null }, undefined, 0).allowed, true);
  const refused = respond(limiter, { cost: 1, table: null }, undefined, 10);
  assert.equal(refused.status, 429);
});

test("with a table: reserve, answer the status, settle at its price", () => {
  const limiter = new FakeLimiter({ limit: "6/1s" });
  const table = new FakeCostTable({ 200: 2, 404: 5 });
  const decision = respond(limiter, { cost: 1, table }, 404, 0);
  assert.equal(decision.status, 404);
  assert.equal(decision.reserved, 1);
  assert.equal(decision.cost, 5);
  assert.equal(limiter.peek(0, 0).used, 5, "the bucket is charged what the answer cost");
});

test("a status the table has no price for throws before anything is charged", () => {
  const limiter = new FakeLimiter({ limit: "6/1s" });
  const table = new FakeCostTable({ 200: 2 });
  assert.throws(() => respond(limiter, { cost: 1, table }, 500, 0), /prices no 500/);
  assert.equal(limiter.peek(0, 0).used, 0);
});

test("a refusal stays a 429 whatever the status asked for", () => {
  assert.equal(answered({ allowed: false, status: 429 }, 200).status, 429);
  assert.equal(answered({ allowed: true, status: 200 }, 304).status, 304);
});
