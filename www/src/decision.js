// The decision buffer the WebAssembly writes each decision into, read by name. Its slots are
// the `field` constants of crates/trickle-wasm/src/lib.rs, under the same names, and
// decision.test.js reads that file so that a slot moved on one side fails there, not as a
// wrong number on a page. Plain constants, not an object, so that the bundler writes the
// bare index in place of each name.

/** How many `f64` the buffer holds: DECISION_FIELDS in Rust. */
export const DECISION_FIELDS = 14;

export const COST = 0;
export const USED = 1;
export const REMAINING = 2;
export const RETRY_AFTER_MS = 3;
export const RETRY_AFTER = 4;
export const T = 5;
export const PREVIOUS = 6;
export const CURRENT = 7;
export const OVERLAP = 8;
export const ELAPSED_MS = 9;
export const COUNTED = 10;
export const LIMIT = 11;
export const WINDOW_MS = 12;
export const RESERVED = 13;

/** The outcome codes the binding's calls return (ALLOWED, DENIED, EXCEEDS_LIMIT), by index. */
export const OUTCOMES = ["allowed", "denied", "exceeds-limit"];

/**
 * The decision in `fields` (the buffer, or any array of its 14 numbers) as the plain object
 * the limiter returns and the event reports. `outcome` is the call's code.
 */
export function readDecision(fields, outcome, algorithm) {
  const denied = outcome === 1;
  const counted = fields[COUNTED] === 1;
  return {
    algorithm,
    allowed: outcome === 0,
    status: outcome === 0 ? 200 : 429,
    outcome: OUTCOMES[outcome],
    cost: fields[COST],
    used: fields[USED],
    limit: fields[LIMIT],
    windowMs: fields[WINDOW_MS],
    remaining: fields[REMAINING],
    retryAfterMs: denied ? fields[RETRY_AFTER_MS] : null,
    retryAfter: denied ? fields[RETRY_AFTER] : null,
    t: fields[T],
    previous: counted ? fields[PREVIOUS] : null,
    current: counted ? fields[CURRENT] : null,
    overlap: counted ? fields[OVERLAP] : null,
    elapsedMs: counted ? fields[ELAPSED_MS] : null,
  };
}
