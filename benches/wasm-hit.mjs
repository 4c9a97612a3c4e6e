// The cost of one `hit()` through the WebAssembly bindings, against the same floating
// window written in plain JS (plain-floating.mjs), in the same Node process, on the same
// stream of times. Both answer with the same object; before timing anything, the two are
// replayed side by side and must agree on every decision, so the baseline does the same
// work and is not a shortcut.
//
// Needs the package's build (`make package`): it times the "./limiter" entry as shipped. `node benches/wasm-hit.mjs` prints the figures
// and writes them to target/bench/wasm-hit.json for `make bench`'s table.

import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { Limiter, load } from "../packages/rate-limit-demo/dist/limiter.js";
import { PlainFloating } from "./plain-floating.mjs";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const LIMIT = { text: "6/8s", tokens: 6, windowMs: 8_000 };
const HITS = 50_000;
const WARM_UP = 4;
const ROUNDS = 11;

/**
 * Times in ms, each a gap after the last drawn evenly from 0 to twice the gap that asks
 * 1.5 × N per W (as benches/common/mod.rs does for the native benchmarks), so that about a
 * third of the hits are denied. A fixed xorshift seed: every run sees the same stream.
 */
function stream(length) {
  const meanGapMs = Math.floor((LIMIT.windowMs * 2) / (LIMIT.tokens * 3));
  let state = 0x5eed;
  let now = 0;
  const times = new Float64Array(length);
  for (let n = 0; n < length; n++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    now += (state >>> 0) % (2 * meanGapMs + 1);
    times[n] = now;
  }
  return times;
}

const limiters = {
  wasm: () => new Limiter({ limit: LIMIT.text }),
  plain: () => new PlainFloating(LIMIT.tokens, LIMIT.windowMs),
};

/** The two limiters answer every hit of the stream with equal objects. */
function assertAgree(times) {
  const wasm = limiters.wasm();
  const plain = limiters.plain();
  for (const t of times) {
    assert.deepStrictEqual(plain.hit(t, 1), wasm.hit(t, 1), `the decisions differ at t = ${t} ms`);
  }
  wasm.free();
}

/**
 * One pass over the stream with a fresh limiter, timed in the process's CPU time rather
 * than the wall clock's, so that time the machine gives to other processes is not counted
 * against either side. Every decision is kept (the last 64, in a ring) as a page keeps what
 * it shows: the whole object must be built, so neither side's can be optimised away as
 * unused when the loop reads only `allowed`.
 *
 * The loop's source is compiled once per side (below): one loop shared by both would see
 * two kinds of limiter and two shapes of decision at the same call, and the engine's
 * slower code for mixed calls would weigh on each side by a different amount. The clock is
 * read outside it, so that the loop's optimised code never meets code it has not run yet.
 */
const PASS = `
  let allowed = 0;
  for (let n = 0; n < times.length; n++) {
    const decision = limiter.hit(times[n], 1);
    kept[n & 63] = decision;
    if (decision.allowed) allowed++;
  }
  return allowed;
`;

/**
 * A pass of its own for each side: the same source, with the side's name in a comment so
 * that the engine compiles it afresh instead of sharing one compiled function and its
 * type feedback between the two.
 */
const passes = Object.fromEntries(
  Object.keys(limiters).map((name) => [
    name,
    new Function("limiter", "times", "kept", `// ${name}\n${PASS}`),
  ]),
);

function timePass(name, times) {
  const limiter = limiters[name]();
  const kept = new Array(64);
  const start = process.cpuUsage();
  const allowed = passes[name](limiter, times, kept);
  const { user, system } = process.cpuUsage(start);
  limiter.free?.();
  return { nsPerHit: ((user + system) * 1000) / times.length, allowed };
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

await load();
const times = stream(HITS);
assertAgree(times);

// The first rounds warm the JIT up and are dropped. The two alternate, each going first
// in every other round, so that whatever else the machine does falls on both alike.
const samples = { wasm: [], plain: [] };
let allowedShare;
for (let round = 0; round < WARM_UP + ROUNDS; round++) {
  const order = round % 2 === 0 ? ["wasm", "plain"] : ["plain", "wasm"];
  for (const name of order) {
    const { nsPerHit, allowed } = timePass(name, times);
    if (round >= WARM_UP) samples[name].push(nsPerHit);
    allowedShare = allowed / HITS;
  }
}

const result = {
  limit: LIMIT.text,
  hits: HITS,
  warmUp: WARM_UP,
  rounds: ROUNDS,
  allowedShare,
  wasmNsPerHit: median(samples.wasm),
  plainNsPerHit: median(samples.plain),
};
result.ratio = result.wasmNsPerHit / result.plainNsPerHit;

await mkdir(`${REPO}/target/bench`, { recursive: true });
await writeFile(`${REPO}/target/bench/wasm-hit.json`, `${JSON.stringify(result, null, 2)}\n`);
console.log(
  `wasm hit(): ${result.wasmNsPerHit.toFixed(0)} ns, plain JS: ${result.plainNsPerHit.toFixed(0)} ns, ` +
    `ratio ${result.ratio.toFixed(2)} (median of ${ROUNDS} rounds of ${HITS} hits, ` +
    `${(100 * allowedShare).toFixed(1)}% allowed; the two agreed on every decision)`,
);
