// The floating window in plain JavaScript: the baseline that benches/wasm-hit.mjs measures
// the WebAssembly bindings against, and nothing else. It follows src/algorithms/floating.rs and
// src/algorithms/state.rs step by step and answers with the same object as `Limiter.hit`, so that the
// two do the same work; wasm-hit.mjs checks that they agree decision for decision.
//
// JS numbers are exact only below 2^53, so this is right for small limits such as 6/8s and
// no substitute for the core, which counts in 128-bit integers.

export class PlainFloating {
  #tokens;
  #windowMs;
  #previous = 0;
  #current = 0;
  #latestMs = 0;

  /** N tokens per window of `windowMs` milliseconds. */
  constructor(tokens, windowMs) {
    this.#tokens = tokens;
    this.#windowMs = windowMs;
  }

  /** Spends `cost` tokens at `now` (ms) if they fit: `previous × (W − e) + current × W ≤ N × W`. */
  hit(now, cost = 1) {
    const atMs = Math.max(Math.floor(now), this.#latestMs);
    this.#roll(atMs);
    const outcome = this.#judge(cost);
    if (outcome === "allowed") this.#current += cost;
    const retryAfterMs = outcome === "denied" ? atMs - Math.floor(now) + this.#waitMs(cost) : null;
    return this.#report(cost, outcome, retryAfterMs);
  }

  /** Into the next window, `previous = current, current = 0`; past it, both empty. */
  #roll(atMs) {
    const windows = Math.floor(atMs / this.#windowMs) - Math.floor(this.#latestMs / this.#windowMs);
    if (windows === 1) {
      this.#previous = this.#current;
      this.#current = 0;
    } else if (windows > 1) {
      this.#previous = 0;
      this.#current = 0;
    }
    this.#latestMs = atMs;
  }

  #elapsedMs() {
    return this.#latestMs % this.#windowMs;
  }

  /** `used × W`. */
  #usedScaled() {
    return this.#previous * (this.#windowMs - this.#elapsedMs()) + this.#current * this.#windowMs;
  }

  #judge(cost) {
    if (cost === 0) return "allowed";
    if (cost > this.#tokens) return "exceeds-limit";
    return this.#usedScaled() <= (this.#tokens - cost) * this.#windowMs ? "allowed" : "denied";
  }

  /** The smallest wait after which `cost` fits, as FloatingState::wait_ms finds it. */
  #waitMs(cost) {
    const window = this.#windowMs;
    const firstFit = (spent, room) => window - Math.min(Math.floor(room / spent), window);
    if (this.#current <= this.#tokens - cost) {
      const fit = firstFit(this.#previous, (this.#tokens - this.#current - cost) * window);
      return Math.max(fit - this.#elapsedMs(), 0);
    }
    return window - this.#elapsedMs() + firstFit(this.#current, (this.#tokens - cost) * window);
  }

  #report(cost, outcome, retryAfterMs) {
    const window = this.#windowMs;
    const usedScaled = this.#usedScaled();
    const allowed = outcome === "allowed";
    const elapsedMs = this.#elapsedMs();
    return {
      algorithm: "floating",
      allowed,
      status: allowed ? 200 : 429,
      outcome,
      cost,
      used: Math.floor(usedScaled / window) + (usedScaled % window) / window,
      limit: this.#tokens,
      windowMs: window,
      remaining: Math.floor(Math.max(this.#tokens * window - usedScaled, 0) / window),
      retryAfterMs,
      retryAfter: retryAfterMs === null ? null : Math.ceil(retryAfterMs / 1000),
      t: this.#latestMs,
      previous: this.#previous,
      current: this.#current,
      overlap: (window - elapsedMs) / window,
      elapsedMs,
    };
  }
}
