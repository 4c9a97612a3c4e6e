// The package's "./limiter" entry in Node, one of the environments it promises, exactly as a
// page gets it: target/site/limiter.js, laid out by `make site` from the packed tarball, with
// trickle_bg.wasm beside it. No browser is needed, so this runs in seconds.
//
// The arithmetic is the Rust core's and is tested natively (tests/*.rs). What is tested here
// is the JavaScript boundary the wrapper (www/src/limiter.js) draws around it:
// - decisions are plain objects with exactly the documented fields, every number a JS
//   number (never a BigInt), null where a field does not apply, and a copy that later calls
//   do not change;
// - arguments go time first, then cost, as the core takes them;
// - anything that is not what the API asks for (a cost of "2", 2n or null, a time left out,
//   a typo in the options) throws a plain Error whose whole message says what was wrong and
//   what is allowed, never a TypeError or a WebAssembly trap, and the limiter still works
//   afterwards;
// - the edge values that are allowed give what they should;
// - respond runs the core's flow (reserve, then settle at the answer's price): what was
//   reserved and what was charged, and a refusal that costs nothing.
// Every table has one row per case, and its test's name is the call itself.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

// Not imported from harness.mjs, which loads playwright-core: this file needs no browser.
const MODULE = new URL("../../target/site/limiter.js", import.meta.url);
if (!existsSync(MODULE)) {
  throw new Error(`${fileURLToPath(MODULE)} is missing: run \`make site\` first`);
}

// The wrapper keeps its WebAssembly memory to itself. Catch it as it is instantiated, so the
// test of memory growth below can see the memory grow.
let memory = null;
const { Instance } = WebAssembly;
WebAssembly.Instance = function (...args) {
  const instance = new Instance(...args);
  memory = instance.exports.memory;
  return instance;
};
const { load, Limiter, CostTable } = await import(MODULE.href);
try {
  await load();
} finally {
  WebAssembly.Instance = Instance;
}

const MAX_SAFE = 9007199254740991;
const OPTIONS_FORM = 'pass { limit: "6/8s", algorithm: "floating" }';
const LIMIT_FORM =
  "write a limit as TOKENS/WINDOW with a unit ms, s, m or h, as in 6/8s or 150/15m";
const TABLE_FORM =
  'write a table as STATUS:COST entries separated by spaces, where STATUS is a status from 100 to 599 or a class 1xx to 5xx and COST a whole number of tokens, as in "200:2 304:1 4xx:5 429:0 5xx:0", or name the preset "esi"';

/** The limiter every table runs on unless a row builds its own: the README's. */
function sixPerEight() {
  return new Limiter({ limit: "6/8s", algorithm: "floating" });
}

/** A row's call as written in this file, for the test's name: `limiter.hit(0, 2n)`. */
function source(call) {
  return call.toString().replace(/^(\(\w*\)|\w+)\s*=>\s*/, "");
}

/**
 * The message of what `call` threw, which must be a plain Error: wasm-bindgen's own argument
 * coercions throw TypeErrors, and a panic in the WebAssembly is a RuntimeError
 * "unreachable". Neither says what the caller did wrong.
 */
function refusal(call, label = source(call)) {
  let result;
  try {
    result = call();
  } catch (error) {
    assert.ok(error instanceof Error, `${label} threw ${String(error)}, not an Error`);
    assert.equal(
      error.constructor,
      Error,
      `${label} threw a ${error.name}, not a plain Error: ${error.message}`,
    );
    return error.message;
  }
  assert.fail(`${label} was accepted and gave ${JSON.stringify(result)}`);
}

/** A refused call must have spent nothing, and the limiter must still answer. */
function assertStillWorks(limiter, after) {
  let peeked;
  assert.doesNotThrow(() => {
    peeked = limiter.peek(0, 0);
  }, `after ${after}, peek threw`);
  assert.equal(peeked.used, 0, `after ${after}, nothing was spent`);
  assert.equal(peeked.allowed, true, `after ${after}`);
}

describe("the README's worked example: 6/8s, floating", () => {
  const limiter = sixPerEight();

  // [t, used]: four in the first window, then two in the second while the first slides out.
  const FIRST_SIX = [
    [0, 1],
    [1_000, 2],
    [2_000, 3],
    [3_000, 4],
    [9_000, 4.5],
    [10_000, 5],
  ];
  for (const [t, used] of FIRST_SIX) {
    it(`limiter.hit(${t}) is allowed with used ${used}`, () => {
      const decision = limiter.hit(t);
      assert.equal(decision.allowed, true);
      assert.equal(decision.t, t);
      assert.equal(decision.used, used);
    });
  }

  it("at 11 s one more fits: used = 4 × 0.625 + 3 = 5.5, every field", () => {
    assert.deepEqual(limiter.hit(11_000), {
      algorithm: "floating",
      allowed: true,
      status: 200,
      outcome: "allowed",
      cost: 1,
      used: 5.5,
      limit: 6,
      windowMs: 8_000,
      remaining: 0,
      retryAfterMs: null,
      retryAfter: null,
      t: 11_000,
      previous: 4,
      current: 3,
      overlap: 0.625,
      elapsedMs: 3_000,
    });
  });

  it("the next at 11 s is denied, to retry in 1000 ms (Retry-After: 1), every field", () => {
    assert.deepEqual(limiter.hit(11_000), {
      algorithm: "floating",
      allowed: false,
      status: 429,
      outcome: "denied",
      cost: 1,
      used: 5.5,
      limit: 6,
      windowMs: 8_000,
      remaining: 0,
      retryAfterMs: 1_000,
      retryAfter: 1,
      t: 11_000,
      previous: 4,
      current: 3,
      overlap: 0.625,
      elapsedMs: 3_000,
    });
  });

  it("the denial spent nothing", () => {
    assert.equal(limiter.peek(11_000, 0).used, 5.5);
  });

  it("peek at 12000 is allowed, exactly when the retry said", () => {
    const decision = limiter.peek(12_000);
    assert.equal(decision.allowed, true);
    assert.equal(decision.used, 5);
  });

  it("peek at 11999 is still denied, 1 ms early", () => {
    const decision = limiter.peek(11_999);
    assert.equal(decision.allowed, false);
    assert.equal(decision.outcome, "denied");
    assert.equal(decision.retryAfterMs, 1);
    assert.equal(decision.retryAfter, 1);
  });
});

describe("decisions", () => {
  /** What each documented field holds: a number is always a JS number, never a BigInt. */
  const FIELDS = {
    algorithm: "string",
    allowed: "boolean",
    status: "number",
    outcome: "string",
    cost: "number",
    used: "number",
    limit: "number",
    windowMs: "number",
    remaining: "number",
    retryAfterMs: "number only when denied, else null",
    retryAfter: "number only when denied, else null",
    t: "number",
    previous: "number only for floating, else null",
    current: "number only for floating, else null",
    overlap: "number only for floating, else null",
    elapsedMs: "number only for floating, else null",
  };

  function assertShape(decision, label) {
    assert.equal(Object.getPrototypeOf(decision), Object.prototype, `${label}: a plain object`);
    assert.deepEqual(Object.keys(decision).sort(), Object.keys(FIELDS).sort(), label);
    for (const [key, kind] of Object.entries(FIELDS)) {
      const value = decision[key];
      const applies =
        kind === "number only when denied, else null"
          ? decision.outcome === "denied"
          : kind === "number only for floating, else null"
            ? decision.algorithm === "floating"
            : true;
      if (!applies) {
        assert.equal(value, null, `${label}: ${key}`);
        continue;
      }
      const type = kind.split(" ")[0];
      assert.equal(typeof value, type, `${label}: ${key} is ${String(value)}`);
      if (type === "number") assert.ok(Number.isFinite(value), `${label}: ${key} is ${value}`);
    }
  }

  for (const algorithm of ["floating", "sliding-log", "fixed", "token-bucket"]) {
    it(`${algorithm}: every decision has exactly the documented fields, numbers as numbers`, () => {
      const limiter = new Limiter({ limit: "6/8s", algorithm });
      const decisions = {
        "hit(0)": limiter.hit(0),
        "peek(0, 5)": limiter.peek(0, 5),
        "hit(0, 7), above the limit": limiter.hit(0, 7),
        "hit(0, 5), the limit reached": limiter.hit(0, 5),
        "hit(0), denied": limiter.hit(0),
        "record(0, 3), past the limit": limiter.record(0, 3),
      };
      assert.equal(decisions["hit(0), denied"].outcome, "denied");
      for (const [label, decision] of Object.entries(decisions)) {
        assertShape(decision, `${algorithm} ${label}`);
        assert.equal(decision.algorithm, algorithm, label);
      }
    });
  }

  for (const algorithm of ["sliding-log", "fixed", "token-bucket"]) {
    it(`${algorithm}: the floating window's counters are null`, () => {
      const limiter = new Limiter({ limit: "6/8s", algorithm });
      assert.equal(limiter.algorithm, algorithm);
      assert.deepEqual(limiter.hit(0, 2), {
        algorithm,
        allowed: true,
        status: 200,
        outcome: "allowed",
        cost: 2,
        used: 2,
        limit: 6,
        windowMs: 8_000,
        remaining: 4,
        retryAfterMs: null,
        retryAfter: null,
        t: 0,
        previous: null,
        current: null,
        overlap: null,
        elapsedMs: null,
      });
    });
  }

  it("a decision is a copy: later calls do not change it", () => {
    const limiter = sixPerEight();
    const first = limiter.hit(0);
    const snapshot = { ...first };
    limiter.hit(5_000, 3);
    limiter.peek(9_000, 7);
    assert.deepEqual(first, snapshot);
    assert.notEqual(limiter.hit(0), first);
  });

  it("a cost above the limit is exceeds-limit, with no retry, and spends nothing", () => {
    const limiter = sixPerEight();
    const decision = limiter.hit(0, 7);
    assert.equal(decision.allowed, false);
    assert.equal(decision.status, 429);
    assert.equal(decision.outcome, "exceeds-limit");
    assert.equal(decision.retryAfterMs, null);
    assert.equal(decision.retryAfter, null);
    assert.equal(decision.used, 0);
    assert.equal(limiter.hit(0, 6).allowed, true, "the whole limit is still free");
  });

  it("peek spends nothing; record charges past the limit; reset forgets it", () => {
    const limiter = sixPerEight();
    const peeked = limiter.peek(0, 6);
    assert.equal(peeked.allowed, true);
    assert.equal(peeked.used, 0, "nothing was spent");
    assert.equal(limiter.peek(0, 7).outcome, "exceeds-limit");

    const recorded = limiter.record(0, 8);
    assert.equal(recorded.allowed, true, "record always charges");
    assert.equal(recorded.used, 8);
    assert.equal(recorded.remaining, 0);
    const after = limiter.hit(0);
    assert.equal(after.outcome, "denied", "later requests wait");
    assert.equal(after.used, 8);

    assert.equal(limiter.reset(), undefined);
    assert.equal(limiter.peek(0, 0).used, 0);
    assert.equal(limiter.hit(0, 6).allowed, true);
  });

  it("fractions of a millisecond are dropped", () => {
    assert.equal(sixPerEight().hit(1234.9).t, 1234);
  });

  it("decisions stay right when the WebAssembly memory grows under them", () => {
    // The wrapper reads decisions through a view of the memory, which growing detaches.
    const floating = sixPerEight();
    assert.equal(floating.hit(0).used, 1);
    // Every hit a sliding log allows is kept, so enough of them must grow the memory.
    const log = new Limiter({ limit: "1000000/1h", algorithm: "sliding-log" });
    const before = memory.buffer.byteLength;
    let t = 0;
    while (memory.buffer.byteLength === before && t < 1_000_000) {
      const decision = log.hit(t);
      t += 1;
      assert.equal(decision.used, t, `the sliding log's hit at ${t - 1}`);
    }
    assert.ok(memory.buffer.byteLength > before, "the memory grew");
    assert.deepEqual(floating.hit(1_000), {
      algorithm: "floating",
      allowed: true,
      status: 200,
      outcome: "allowed",
      cost: 1,
      used: 2,
      limit: 6,
      windowMs: 8_000,
      remaining: 4,
      retryAfterMs: null,
      retryAfter: null,
      t: 1_000,
      previous: 0,
      current: 2,
      overlap: 0.875,
      elapsedMs: 1_000,
    });
    log.free();
  });
});

describe("respond: reserve before answering, then settle at the answer's price", () => {
  /** Every field of a settled decision, the ones `decisions` checks for any decision and `reserved`. */
  const settled = (fields) => ({
    algorithm: "floating",
    allowed: true,
    status: 200,
    outcome: "allowed",
    retryAfterMs: null,
    retryAfter: null,
    limit: 6,
    windowMs: 8_000,
    ...fields,
  });

  // ESI on 6/8s, reserving 1 before each answer, all in the first window.
  const limiter = sixPerEight();

  it("limiter.respond(0, 1, 2), a 200: reserved 1, settled at 2, every field", () => {
    assert.deepEqual(
      limiter.respond(0, 1, 2),
      settled({ cost: 2, used: 2, remaining: 4, t: 0, previous: 0, current: 2, overlap: 1, elapsedMs: 0, reserved: 1 }),
    );
  });

  it("limiter.respond(1_000, 1, 5), a 404: settled at 5, which takes the bucket past the limit", () => {
    assert.deepEqual(
      limiter.respond(1_000, 1, 5),
      settled({ cost: 5, used: 7, remaining: 0, t: 1_000, previous: 0, current: 7, overlap: 0.875, elapsedMs: 1_000, reserved: 1 }),
    );
  });

  it("limiter.respond(2_000, 1, 2), no room for the reserve: a 429 that reserves and costs nothing, every field", () => {
    assert.deepEqual(limiter.respond(2_000, 1, 2), {
      ...settled({ cost: 0, used: 7, remaining: 0, t: 2_000, previous: 0, current: 7, overlap: 0.75, elapsedMs: 2_000, reserved: 0 }),
      allowed: false,
      status: 429,
      outcome: "denied",
      // 7 in the current window: 1 fits once 7 × (1 − e/8000) ≤ 5 into the next, at e = 2286.
      retryAfterMs: 8_286,
      retryAfter: 9,
    });
    assert.equal(limiter.peek(2_000, 0).used, 7, "the refusal spent nothing");
  });

  it("a 500 (price 0) refunds the reserve, on every algorithm", () => {
    for (const algorithm of Limiter.algorithms) {
      const fresh = new Limiter({ limit: "6/8s", algorithm });
      const refunded = fresh.respond(0, 2, 0);
      assert.deepEqual([refunded.allowed, refunded.reserved, refunded.cost, refunded.used], [true, 2, 0, 0], algorithm);
      assert.equal(fresh.hit(0, 6).allowed, true, `${algorithm}: the whole limit is free again`);
      fresh.free();
    }
  });

  it("a reserve above the limit is exceeds-limit, reserving and costing nothing", () => {
    const decision = sixPerEight().respond(0, 7, 2);
    assert.deepEqual(
      [decision.outcome, decision.status, decision.reserved, decision.cost, decision.used, decision.retryAfter],
      ["exceeds-limit", 429, 0, 0, 0, null],
    );
  });

  it("a decision of respond is a plain object with every field of hit's and reserved, numbers as numbers", () => {
    for (const algorithm of Limiter.algorithms) {
      const fresh = new Limiter({ limit: "6/8s", algorithm });
      const hit = new Limiter({ limit: "6/8s", algorithm }).hit(0, 1);
      for (const decision of [fresh.respond(0, 1, 5), fresh.respond(0, 1, 2)]) {
        assert.equal(Object.getPrototypeOf(decision), Object.prototype);
        assert.deepEqual(Object.keys(decision), [...Object.keys(hit), "reserved"], algorithm);
        assert.equal(typeof decision.reserved, "number");
      }
      fresh.free();
    }
  });

  it("reserved is read right while a sliding log grows the WebAssembly memory under respond", () => {
    const log = new Limiter({ limit: "1000000/1h", algorithm: "sliding-log" });
    const before = memory.buffer.byteLength;
    let t = 0;
    while (memory.buffer.byteLength === before && t < 500_000) {
      const decision = log.respond(t, 1, 2);
      t += 1;
      assert.deepEqual([decision.reserved, decision.cost, decision.used], [1, 2, 2 * t], `at ${t - 1}`);
    }
    assert.ok(memory.buffer.byteLength > before, "the memory grew");
    log.free();
  });
});

describe("getters", () => {
  it("limit, tokens, windowMs and algorithm describe the limit", () => {
    const limiter = new Limiter({ limit: "150/900s", algorithm: "token-bucket" });
    assert.equal(limiter.limit, "150/15m");
    assert.equal(limiter.tokens, 150);
    assert.equal(limiter.windowMs, 900_000);
    assert.equal(limiter.algorithm, "token-bucket");
  });

  it("Limiter.algorithms lists the core's, the default first, frozen", () => {
    assert.deepEqual(Limiter.algorithms, ["floating", "sliding-log", "fixed", "token-bucket"]);
    assert.ok(Object.isFrozen(Limiter.algorithms));
    assert.equal(new Limiter({ limit: "6/8s" }).algorithm, Limiter.algorithms[0]);
  });

  it("huge limits (u64::MAX tokens) arrive as numbers, not BigInts", () => {
    const limiter = new Limiter({ limit: "18446744073709551615/1ms" });
    assert.equal(limiter.limit, "18446744073709551615/1ms");
    assert.equal(typeof limiter.tokens, "number");
    assert.equal(limiter.tokens, 2 ** 64, "u64::MAX as the nearest JS number");
    const decision = limiter.hit(0, MAX_SAFE);
    assert.equal(decision.allowed, true);
    assert.equal(decision.limit, 2 ** 64);
    assert.equal(decision.cost, MAX_SAFE);
    assert.equal(decision.used, MAX_SAFE);
    assert.equal(typeof decision.remaining, "number");
  });

  it("free() releases the limiter, after which it refuses with an Error; freeing twice does nothing", () => {
    const limiter = sixPerEight();
    assert.equal(limiter.free(), undefined);
    assert.equal(limiter.free(), undefined);
    for (const use of [() => limiter.hit(0), () => limiter.peek(0), () => limiter.respond(0, 1, 1), () => limiter.reset(), () => limiter.tokens]) {
      assert.throws(use, { name: "Error", message: "this Limiter (floating) was freed" });
    }
    const table = new CostTable("esi");
    table.free();
    table.free();
    assert.throws(() => table.cost(200), { name: "Error", message: "this CostTable was freed" });
  });
});

/**
 * `new Limiter(options)`, one row per bad input, and the whole message of the Error it
 * throws. The JS-side ones come from www/src/limiter.js; a limit or an algorithm that is a
 * string but not a valid one is the Rust core's message, quoted back to the caller.
 */
const BAD_OPTIONS = [
  // Not an options object.
  [() => new Limiter(), `Limiter options must be an object, got undefined; ${OPTIONS_FORM}`],
  [() => new Limiter(null), `Limiter options must be an object, got null; ${OPTIONS_FORM}`],
  [() => new Limiter(6), `Limiter options must be an object, got 6; ${OPTIONS_FORM}`],
  [() => new Limiter("6/8s"), `Limiter options must be an object, got the string "6/8s"; ${OPTIONS_FORM}`],
  [() => new Limiter(["6/8s"]), `Limiter options must be an object, got an array; ${OPTIONS_FORM}`],
  [() => new Limiter(6n), `Limiter options must be an object, got a bigint; ${OPTIONS_FORM}`],
  [() => new Limiter(Symbol()), `Limiter options must be an object, got a symbol; ${OPTIONS_FORM}`],
  [() => new Limiter(() => "6/8s"), `Limiter options must be an object, got a function; ${OPTIONS_FORM}`],
  [() => new Limiter({}), `Limiter options: limit is missing; ${OPTIONS_FORM}`],
  [() => new Limiter({ limit: undefined }), `Limiter options: limit is missing; ${OPTIONS_FORM}`],
  [() => new Limiter({ algorithm: "fixed" }), `Limiter options: limit is missing; ${OPTIONS_FORM}`],
  // The limit, not a string.
  [() => new Limiter({ limit: 6 }), `Limiter options: limit must be a string, got 6; ${OPTIONS_FORM}`],
  [() => new Limiter({ limit: NaN }), `Limiter options: limit must be a string, got NaN; ${OPTIONS_FORM}`],
  [() => new Limiter({ limit: null }), `Limiter options: limit must be a string, got null; ${OPTIONS_FORM}`],
  [() => new Limiter({ limit: ["6/8s"] }), `Limiter options: limit must be a string, got an array; ${OPTIONS_FORM}`],
  [() => new Limiter({ limit: 6n }), `Limiter options: limit must be a string, got a bigint; ${OPTIONS_FORM}`],
  // The limit: zero, negative, fractional, NaN, Infinity, empty.
  [() => new Limiter({ limit: "0/8s" }), "a limit needs at least 1 token per window, got 0"],
  [() => new Limiter({ limit: "6/0s" }), "a window must be at least 1 ms long, got 0"],
  [() => new Limiter({ limit: "-6/8s" }), `limit "-6/8s": tokens "-6" is not a whole number from 1 to 18446744073709551615; ${LIMIT_FORM}`],
  [() => new Limiter({ limit: "6/-8s" }), `limit "6/-8s": window "-8s" is not a whole number followed by a unit; ${LIMIT_FORM}`],
  [() => new Limiter({ limit: "1.5/8s" }), `limit "1.5/8s": tokens "1.5" is not a whole number from 1 to 18446744073709551615; ${LIMIT_FORM}`],
  [() => new Limiter({ limit: "NaN/8s" }), `limit "NaN/8s": tokens "NaN" is not a whole number from 1 to 18446744073709551615; ${LIMIT_FORM}`],
  [() => new Limiter({ limit: "6/NaNs" }), `limit "6/NaNs": window "NaNs" is not a whole number followed by a unit; ${LIMIT_FORM}`],
  [() => new Limiter({ limit: "Infinity/8s" }), `limit "Infinity/8s": tokens "Infinity" is not a whole number from 1 to 18446744073709551615; ${LIMIT_FORM}`],
  [() => new Limiter({ limit: "" }), `limit "" has no '/'; ${LIMIT_FORM}`],
  // Huge: beyond u64 (limits up to u64::MAX are allowed, beyond 2^53 included).
  [() => new Limiter({ limit: "18446744073709551616/1s" }), `limit "18446744073709551616/1s": tokens "18446744073709551616" is not a whole number from 1 to 18446744073709551615; ${LIMIT_FORM}`],
  [() => new Limiter({ limit: "6/18446744073709551616ms" }), 'limit "6/18446744073709551616ms": the window is longer than 18446744073709551615 ms, the longest allowed'],
  [() => new Limiter({ limit: "6/18446744073709551615h" }), 'limit "6/18446744073709551615h": the window is longer than 18446744073709551615 ms, the longest allowed'],
  // Wrong unit, missing parts.
  [() => new Limiter({ limit: "6/8x" }), 'limit "6/8x": unknown unit "x"; the unit must be ms, s, m or h, as in 6/8s'],
  [() => new Limiter({ limit: "6/8S" }), 'limit "6/8S": unknown unit "S"; the unit must be ms, s, m or h, as in 6/8s'],
  [() => new Limiter({ limit: "6/8" }), 'limit "6/8": unknown unit ""; the unit must be ms, s, m or h, as in 6/8s'],
  [() => new Limiter({ limit: "6/" }), `limit "6/": window "" is not a whole number followed by a unit; ${LIMIT_FORM}`],
  [() => new Limiter({ limit: "/8s" }), `limit "/8s": tokens "" is not a whole number from 1 to 18446744073709551615; ${LIMIT_FORM}`],
  [() => new Limiter({ limit: "6" }), `limit "6" has no '/'; ${LIMIT_FORM}`],
  // Whitespace inside (around the limit it is trimmed: see the accepted table).
  [() => new Limiter({ limit: "6 / 8s" }), `limit "6 / 8s": tokens "6 " is not a whole number from 1 to 18446744073709551615; ${LIMIT_FORM}`],
  [() => new Limiter({ limit: "6/8 s" }), 'limit "6/8 s": unknown unit " s"; the unit must be ms, s, m or h, as in 6/8s'],
  [() => new Limiter({ limit: "\t" }), `limit "\\t" has no '/'; ${LIMIT_FORM}`],
  // Non-ASCII: full-width and Arabic-Indic digits are not digits here; nor is 秒 a unit.
  [() => new Limiter({ limit: "６/8s" }), `limit "６/8s": tokens "６" is not a whole number from 1 to 18446744073709551615; ${LIMIT_FORM}`],
  [() => new Limiter({ limit: "6/٨s" }), `limit "6/٨s": window "٨s" is not a whole number followed by a unit; ${LIMIT_FORM}`],
  [() => new Limiter({ limit: "6/8秒" }), 'limit "6/8秒": unknown unit "秒"; the unit must be ms, s, m or h, as in 6/8s'],
  // Markup is quoted back as text.
  [() => new Limiter({ limit: "<img src=x onerror=alert(1)>" }), `limit "<img src=x onerror=alert(1)>" has no '/'; ${LIMIT_FORM}`],
  // The algorithm: unknown, empty, another case, whitespace, non-ASCII, markup, not a string.
  [() => new Limiter({ limit: "6/8s", algorithm: "leaky" }), 'unknown algorithm "leaky"; use floating, sliding-log, fixed or token-bucket'],
  [() => new Limiter({ limit: "6/8s", algorithm: "" }), 'unknown algorithm ""; use floating, sliding-log, fixed or token-bucket'],
  [() => new Limiter({ limit: "6/8s", algorithm: "Floating" }), 'unknown algorithm "Floating"; use floating, sliding-log, fixed or token-bucket'],
  [() => new Limiter({ limit: "6/8s", algorithm: " fixed" }), 'unknown algorithm " fixed"; use floating, sliding-log, fixed or token-bucket'],
  [() => new Limiter({ limit: "6/8s", algorithm: "ﬁxed" }), 'unknown algorithm "ﬁxed"; use floating, sliding-log, fixed or token-bucket'],
  [() => new Limiter({ limit: "6/8s", algorithm: "<img src=x onerror=alert(1)>" }), 'unknown algorithm "<img src=x onerror=alert(1)>"; use floating, sliding-log, fixed or token-bucket'],
  [() => new Limiter({ limit: "6/8s", algorithm: 1 }), `Limiter options: algorithm must be a string, got 1; ${OPTIONS_FORM}`],
  [() => new Limiter({ limit: "6/8s", algorithm: null }), `Limiter options: algorithm must be a string, got null; ${OPTIONS_FORM}`],
  [() => new Limiter({ limit: "6/8s", algorithm: true }), `Limiter options: algorithm must be a string, got a boolean; ${OPTIONS_FORM}`],
  // Unknown keys: a typo, another case, an option that belongs to the element.
  [() => new Limiter({ limit: "6/8s", limt: 1 }), 'Limiter options: unknown option "limt"; the options are limit and algorithm'],
  [() => new Limiter({ Limit: "6/8s" }), 'Limiter options: unknown option "Limit"; the options are limit and algorithm'],
  [() => new Limiter({ limit: "6/8s", cost: 2 }), 'Limiter options: unknown option "cost"; the options are limit and algorithm'],
];

describe("bad options throw an Error that says what is allowed", () => {
  for (const [call, expected] of BAD_OPTIONS) {
    it(source(call), () => {
      assert.equal(refusal(call), expected);
    });
  }
});

/** A cost, the second argument: how it is written, the value, and the whole message. */
const BAD_COSTS = [
  ["-1", -1, "cost must be a whole number from 0 to 9007199254740991, got -1"],
  ["1.5", 1.5, "cost must be a whole number from 0 to 9007199254740991, got 1.5"],
  ["NaN", NaN, "cost must be a whole number from 0 to 9007199254740991, got NaN"],
  ["Infinity", Infinity, "cost must be a whole number from 0 to 9007199254740991, got Infinity"],
  ["-Infinity", -Infinity, "cost must be a whole number from 0 to 9007199254740991, got -Infinity"],
  ["2 ** 53", 2 ** 53, "cost must be a whole number from 0 to 9007199254740991, got 9007199254740992"],
  ["2 ** 64", 2 ** 64, "cost must be a whole number from 0 to 9007199254740991, got 18446744073709552000"],
  ['"2"', "2", 'cost must be a whole number from 0 to 9007199254740991, got the string "2"'],
  ['""', "", 'cost must be a whole number from 0 to 9007199254740991, got the string ""'],
  ['"<img src=x onerror=alert(1)>"', "<img src=x onerror=alert(1)>", 'cost must be a whole number from 0 to 9007199254740991, got the string "<img src=x onerror=alert(1)>"'],
  ["2n", 2n, "cost must be a whole number from 0 to 9007199254740991, got a bigint"],
  ["true", true, "cost must be a whole number from 0 to 9007199254740991, got a boolean"],
  ["{}", {}, "cost must be a whole number from 0 to 9007199254740991, got an object"],
  ["[1]", [1], "cost must be a whole number from 0 to 9007199254740991, got an array"],
  ["Symbol()", Symbol(), "cost must be a whole number from 0 to 9007199254740991, got a symbol"],
];

/** A time, the first argument: how it is written, the value, and the whole message. */
const BAD_TIMES = [
  ["-1", -1, "now must be a time in milliseconds from 0 to 9007199254740991, got -1"],
  ["-0.5", -0.5, "now must be a time in milliseconds from 0 to 9007199254740991, got -0.5"],
  ["NaN", NaN, "now must be a time in milliseconds from 0 to 9007199254740991, got NaN"],
  ["Infinity", Infinity, "now must be a time in milliseconds from 0 to 9007199254740991, got Infinity"],
  ["-Infinity", -Infinity, "now must be a time in milliseconds from 0 to 9007199254740991, got -Infinity"],
  ["2 ** 53", 2 ** 53, "now must be a time in milliseconds from 0 to 9007199254740991, got 9007199254740992"],
  ["2 ** 64", 2 ** 64, "now must be a time in milliseconds from 0 to 9007199254740991, got 18446744073709552000"],
  ['"2"', "2", 'now must be a time in milliseconds from 0 to 9007199254740991, got the string "2"'],
  ['"<img src=x onerror=alert(1)>"', "<img src=x onerror=alert(1)>", 'now must be a time in milliseconds from 0 to 9007199254740991, got the string "<img src=x onerror=alert(1)>"'],
  ["2n", 2n, "now must be a time in milliseconds from 0 to 9007199254740991, got a bigint"],
  ["new Date(0)", new Date(0), "now must be a time in milliseconds from 0 to 9007199254740991, got an object"],
  ["[0]", [0], "now must be a time in milliseconds from 0 to 9007199254740991, got an array"],
];

/**
 * Arguments left out or null. There is no default clock, so a time is always required; a
 * left-out cost is 1 for hit and peek, but record charges what was spent and needs it; null
 * is never a left-out value.
 */
const LEFT_OUT = [
  [(limiter) => limiter.hit(), "now must be a time in milliseconds from 0 to 9007199254740991, got undefined"],
  [(limiter) => limiter.peek(), "now must be a time in milliseconds from 0 to 9007199254740991, got undefined"],
  [(limiter) => limiter.record(), "now must be a time in milliseconds from 0 to 9007199254740991, got undefined"],
  [(limiter) => limiter.hit(undefined, 1), "now must be a time in milliseconds from 0 to 9007199254740991, got undefined"],
  [(limiter) => limiter.hit(null), "now must be a time in milliseconds from 0 to 9007199254740991, got null"],
  [(limiter) => limiter.peek(null, 1), "now must be a time in milliseconds from 0 to 9007199254740991, got null"],
  [(limiter) => limiter.record(null, 1), "now must be a time in milliseconds from 0 to 9007199254740991, got null"],
  [(limiter) => limiter.record(0), "cost must be a whole number from 0 to 9007199254740991, got undefined"],
  [(limiter) => limiter.record(0, undefined), "cost must be a whole number from 0 to 9007199254740991, got undefined"],
  [(limiter) => limiter.hit(0, null), "cost must be a whole number from 0 to 9007199254740991, got null"],
  [(limiter) => limiter.peek(0, null), "cost must be a whole number from 0 to 9007199254740991, got null"],
  [(limiter) => limiter.record(0, null), "cost must be a whole number from 0 to 9007199254740991, got null"],
  // respond has no defaults: what to reserve and what the answer cost are both the caller's.
  [(limiter) => limiter.respond(), "now must be a time in milliseconds from 0 to 9007199254740991, got undefined"],
  [(limiter) => limiter.respond(0), "reserve must be a whole number from 0 to 9007199254740991, got undefined"],
  [(limiter) => limiter.respond(0, 1), "cost must be a whole number from 0 to 9007199254740991, got undefined"],
  [(limiter) => limiter.respond(0, null, 1), "reserve must be a whole number from 0 to 9007199254740991, got null"],
  [(limiter) => limiter.respond(0, 1, null), "cost must be a whole number from 0 to 9007199254740991, got null"],
  // Checked in the order they come: the time, the reserve, the cost.
  [(limiter) => limiter.respond("0", "1", "2"), 'now must be a time in milliseconds from 0 to 9007199254740991, got the string "0"'],
  [(limiter) => limiter.respond(0, "1", "2"), 'reserve must be a whole number from 0 to 9007199254740991, got the string "1"'],
  // The old order, cost then time, is refused rather than read as a time of 2 ms.
  [(limiter) => limiter.hit(2, "now"), 'cost must be a whole number from 0 to 9007199254740991, got the string "now"'],
  // Both wrong: the time is checked first, as it comes first.
  [(limiter) => limiter.hit("2", "1"), 'now must be a time in milliseconds from 0 to 9007199254740991, got the string "2"'],
];

describe("bad costs and times throw an Error, and the limiter still works", () => {
  const limiter = sixPerEight();
  for (const method of ["hit", "peek", "record"]) {
    for (const [written, cost, expected] of BAD_COSTS) {
      const call = `limiter.${method}(0, ${written})`;
      it(call, () => {
        assert.equal(refusal(() => limiter[method](0, cost), call), expected);
        assertStillWorks(limiter, call);
      });
    }
    for (const [written, now, expected] of BAD_TIMES) {
      const call = `limiter.${method}(${written}, 1)`;
      it(call, () => {
        assert.equal(refusal(() => limiter[method](now, 1), call), expected);
        assertStillWorks(limiter, call);
      });
    }
  }
  for (const [written, bad, expected] of BAD_COSTS) {
    const asReserve = `limiter.respond(0, ${written}, 1)`;
    it(asReserve, () => {
      const message = expected.replace(/^cost /, "reserve ");
      assert.equal(refusal(() => limiter.respond(0, bad, 1), asReserve), message);
      assertStillWorks(limiter, asReserve);
    });
    const asCost = `limiter.respond(0, 1, ${written})`;
    it(asCost, () => {
      assert.equal(refusal(() => limiter.respond(0, 1, bad), asCost), expected);
      assertStillWorks(limiter, asCost);
    });
  }
  for (const [written, now, expected] of BAD_TIMES) {
    const call = `limiter.respond(${written}, 1, 1)`;
    it(call, () => {
      assert.equal(refusal(() => limiter.respond(now, 1, 1), call), expected);
      assertStillWorks(limiter, call);
    });
  }
  for (const [call, expected] of LEFT_OUT) {
    it(source(call), () => {
      assert.equal(refusal(() => call(limiter), source(call)), expected);
      assertStillWorks(limiter, source(call));
    });
  }
  it("the whole limit is still free after every refusal", () => {
    assert.equal(limiter.hit(0, 6).allowed, true);
  });
});

/** Inputs at the edge that are accepted, each run on a fresh 6/8s floating limiter. */
const ACCEPTED = [
  // Whitespace around a limit is trimmed; a limit beyond 2^53 tokens is exact in Rust and
  // its `tokens` is the nearest JS number.
  [() => new Limiter({ limit: " 6/8s\n" }).limit, "6/8s"],
  [() => new Limiter({ limit: "9007199254740993/1s" }).limit, "9007199254740993/1s"],
  [() => new Limiter({ limit: "9007199254740993/1s" }).tokens, 9007199254740992],
  [() => new Limiter({ limit: "6/8s", algorithm: undefined }).algorithm, "floating"],
  [() => new Limiter({ limit: "6/8s" }).algorithm, "floating"],
  // A left-out cost is 1; -0 is 0.
  [(limiter) => limiter.hit(0).cost, 1],
  [(limiter) => limiter.hit(0, undefined).cost, 1],
  [(limiter) => limiter.peek(0).cost, 1],
  [(limiter) => limiter.peek(0, 0).cost, 0],
  [(limiter) => limiter.hit(0, -0).cost, 0],
  [(limiter) => limiter.hit(-0).t, 0],
  // Fractions of a millisecond are dropped; the largest whole JS numbers are fine.
  [(limiter) => limiter.hit(1.5).t, 1],
  [(limiter) => limiter.hit(0.999).t, 0],
  [(limiter) => limiter.hit(2 ** 53 - 1).t, 9007199254740991],
  [(limiter) => limiter.hit(0, 2 ** 53 - 1).outcome, "exceeds-limit"],
  [(limiter) => limiter.record(0, 2 ** 53 - 1).used, 9007199254740991],
  [(limiter) => limiter.record(2 ** 53 - 1, 2 ** 53 - 1).t, 9007199254740991],
];

describe("inputs at the edge that are accepted", () => {
  for (const [call, expected] of ACCEPTED) {
    it(source(call), () => {
      assert.equal(call(sixPerEight()), expected);
    });
  }
});

describe("CostTable", () => {
  // [status, cost]: 2XX 2, 3XX 1, 4XX 5 but a 429 nothing, 5XX 0.
  const ESI = [
    [200, 2],
    [204, 2],
    [304, 1],
    [404, 5],
    [420, 5],
    [429, 0],
    [500, 0],
    [503, 0],
  ];
  const esi = new CostTable("esi");

  it('"esi" offers one status per entry, never 429, frozen', () => {
    assert.deepEqual(esi.statuses, [200, 304, 404, 500]);
    assert.ok(Object.isFrozen(esi.statuses));
  });
  for (const [status, cost] of ESI) {
    it(`"esi": cost(${status}) is ${cost}`, () => {
      assert.equal(esi.cost(status), cost);
    });
  }

  it('"esi" is trimmed like a limit', () => {
    assert.deepEqual(new CostTable(" esi\n").statuses, [200, 304, 404, 500]);
  });

  it('a custom table: "200:2 304:1 4xx:5 429:0 5xx:0", an exact status over its class', () => {
    const table = new CostTable("200:2 304:1 4xx:5 429:0 5xx:0");
    assert.deepEqual(table.statuses, [200, 304, 404, 500]);
    const costs = [200, 304, 404, 420, 429, 500, 503].map((status) => table.cost(status));
    assert.deepEqual(costs, [2, 1, 5, 5, 0, 0, 0]);
  });

  it("an exact status wins over its class whichever comes first", () => {
    const table = new CostTable("2xx:7 200:2");
    assert.deepEqual([200, 201, 299].map((status) => table.cost(status)), [2, 7, 7]);
    // 200 answers for its own entry, so the class needs another representative.
    assert.deepEqual(table.statuses, [201, 200]);
  });

  it("each class has a representative status that costs what its entry says", () => {
    const table = new CostTable("1xx:1 2xx:2 3xx:3 4xx:4 5xx:5");
    assert.deepEqual(table.statuses, [100, 200, 304, 404, 500]);
    assert.deepEqual(table.statuses.map((status) => table.cost(status)), [1, 2, 3, 4, 5]);
  });

  it("a table that prices only 429 offers no status, and its statuses cannot be overwritten", () => {
    const table = new CostTable("429:0");
    assert.deepEqual(table.statuses, []);
    assert.throws(() => {
      "use strict";
      table.statuses = [200];
    }, TypeError);
    assert.deepEqual(table.statuses, []);
  });

  const BAD_TABLES = [
    [() => new CostTable(""), `a cost table needs at least one entry; ${TABLE_FORM}`],
    [() => new CostTable("200"), `cost table entry "200" has no ':' between a status and its cost; ${TABLE_FORM}`],
    [() => new CostTable("ESI"), `cost table entry "ESI" has no ':' between a status and its cost; ${TABLE_FORM}`],
    [() => new CostTable("6xx:1"), 'cost table entry "6xx:1": "6xx" is not an HTTP class; the classes are 1xx, 2xx, 3xx, 4xx and 5xx'],
    [() => new CostTable("99:1"), `cost table entry "99:1": "99" is not a status from 100 to 599 or a class 1xx to 5xx; ${TABLE_FORM}`],
    [() => new CostTable("600:1"), `cost table entry "600:1": "600" is not a status from 100 to 599 or a class 1xx to 5xx; ${TABLE_FORM}`],
    [() => new CostTable("200:1 200:2"), "cost table prices 200 twice; write each status or class once"],
    [() => new CostTable("2xx:1 2xx:2"), "cost table prices 2xx twice; write each status or class once"],
    [() => new CostTable("200:-1"), `cost table entry "200:-1": cost "-1" is not a whole number of tokens from 0 to 18446744073709551615; ${TABLE_FORM}`],
    [() => new CostTable("200:1.5"), `cost table entry "200:1.5": cost "1.5" is not a whole number of tokens from 0 to 18446744073709551615; ${TABLE_FORM}`],
    [() => new CostTable(), 'a cost table must be a string such as "esi" or "200:2 304:1 4xx:5 429:0 5xx:0", got undefined'],
    [() => new CostTable(null), 'a cost table must be a string such as "esi" or "200:2 304:1 4xx:5 429:0 5xx:0", got null'],
    [() => new CostTable(5), 'a cost table must be a string such as "esi" or "200:2 304:1 4xx:5 429:0 5xx:0", got 5'],
    [() => new CostTable(["esi"]), 'a cost table must be a string such as "esi" or "200:2 304:1 4xx:5 429:0 5xx:0", got an array'],
  ];
  for (const [call, expected] of BAD_TABLES) {
    it(source(call), () => {
      assert.equal(refusal(call), expected);
    });
  }

  const custom = new CostTable("200:2 4xx:5");
  const BAD_STATUSES = [
    [() => esi.cost(101), "status 101 has no cost in this table, which prices 2xx, 3xx, 4xx, 429 and 5xx"],
    [() => esi.cost(600), "status 600 has no cost in this table, which prices 2xx, 3xx, 4xx, 429 and 5xx"],
    [() => esi.cost(70_000), "status 70000 has no cost in this table, which prices 2xx, 3xx, 4xx, 429 and 5xx"],
    [() => esi.cost(2 ** 53 - 1), "status 9007199254740991 has no cost in this table, which prices 2xx, 3xx, 4xx, 429 and 5xx"],
    [() => custom.cost(500), "status 500 has no cost in this table, which prices 200 and 4xx"],
    [() => custom.cost(201), "status 201 has no cost in this table, which prices 200 and 4xx"],
    [() => esi.cost(200.5), "status must be a whole number from 0 to 9007199254740991, got 200.5"],
    [() => esi.cost(-200), "status must be a whole number from 0 to 9007199254740991, got -200"],
    [() => esi.cost(NaN), "status must be a whole number from 0 to 9007199254740991, got NaN"],
    [() => esi.cost("200"), 'status must be a whole number from 0 to 9007199254740991, got the string "200"'],
    [() => esi.cost(200n), "status must be a whole number from 0 to 9007199254740991, got a bigint"],
    [() => esi.cost(null), "status must be a whole number from 0 to 9007199254740991, got null"],
    [() => esi.cost(), "status must be a whole number from 0 to 9007199254740991, got undefined"],
  ];
  for (const [call, expected] of BAD_STATUSES) {
    it(source(call), () => {
      assert.equal(refusal(call), expected);
    });
  }
});

/**
 * Before `load()` nothing can reach the WebAssembly. This process has loaded it, so each row
 * runs in a fresh Node that imports the module and does not call `load()`.
 */
describe("before load(), a plain Error says to call it", () => {
  const BEFORE_LOAD = [
    ['new Limiter({ limit: "6/8s" })', "new Limiter() needs the WebAssembly: call `await load()` first"],
    ["Limiter.algorithms", "Limiter.algorithms needs the WebAssembly: call `await load()` first"],
    ['new CostTable("esi")', "new CostTable() needs the WebAssembly: call `await load()` first"],
  ];
  for (const [call, expected] of BEFORE_LOAD) {
    it(call, () => {
      // After the refusal, load() must still work: the refusal leaves nothing half-made.
      const script = `
        import { load, Limiter, CostTable } from ${JSON.stringify(MODULE.href)};
        let refused = null;
        try {
          ${call};
        } catch (error) {
          refused = { constructor: error.constructor.name, message: error.message };
        }
        await load();
        ${call};
        console.log(JSON.stringify(refused));
      `;
      const output = execFileSync(process.execPath, ["--input-type=module", "-e", script], {
        encoding: "utf8",
      });
      assert.deepEqual(JSON.parse(output), { constructor: "Error", message: expected });
    });
  }
});
