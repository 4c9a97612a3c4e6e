// A tiny stand-in for the WebAssembly core, for the unit tests beside the modules
// (`node --test www/src`), which run without building it. FakeLimiter is an exact sliding
// log in plain JS with the Limiter's methods and decision objects; it is the core's answer
// only for the sliding log, which is all the tests ask of it. Never bundled: no module of the
// widget imports it.

const UNITS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

function parseLimit(text) {
  const match = /^(\d+)\/(\d+)(ms|s|m|h)$/.exec(text);
  if (!match) throw new Error(`fake limit "${text}" is not N/W`);
  return { tokens: Number(match[1]), windowMs: Number(match[2]) * UNITS[match[3]] };
}

export class FakeLimiter {
  static algorithms = Object.freeze(["floating", "sliding-log", "fixed", "token-bucket"]);
  /** Every limiter made and not yet freed, so that a test can see that nothing leaks. */
  static live = new Set();

  #spent = [];
  constructor({ limit, algorithm = "floating" }) {
    Object.assign(this, parseLimit(limit), { limit, algorithm });
    FakeLimiter.live.add(this);
  }

  #used(now) {
    this.#spent = this.#spent.filter(({ t }) => t + this.windowMs > now);
    return this.#spent.reduce((sum, { cost }) => sum + cost, 0);
  }

  #decision(now, cost, outcome, reserved = 0) {
    const used = this.#used(now);
    let retryAfterMs = null;
    if (outcome === "denied") {
      let freed = this.tokens - used;
      retryAfterMs = 0;
      for (const { t, cost: spent } of this.#spent) {
        if (freed >= cost) break;
        freed += spent;
        retryAfterMs = t + this.windowMs - now;
      }
    }
    return {
      algorithm: this.algorithm,
      allowed: outcome === "allowed",
      status: outcome === "allowed" ? 200 : 429,
      outcome,
      cost,
      used,
      limit: this.tokens,
      windowMs: this.windowMs,
      remaining: Math.max(0, this.tokens - used),
      retryAfterMs,
      retryAfter: retryAfterMs === null ? null : Math.ceil(retryAfterMs / 1000),
      t: now,
      previous: null,
      current: null,
      overlap: null,
      elapsedMs: null,
      reserved,
    };
  }

  #outcome(now, cost) {
    if (cost > this.tokens) return "exceeds-limit";
    return this.#used(now) + cost <= this.tokens ? "allowed" : "denied";
  }

  hit(now, cost = 1) {
    const outcome = this.#outcome(now, cost);
    if (outcome === "allowed" && cost > 0) this.#spent.push({ t: now, cost });
    return this.#decision(now, cost, outcome);
  }

  peek(now, cost = 1) {
    return this.#decision(now, cost, this.#outcome(now, cost));
  }

  record(now, cost) {
    if (cost > 0) this.#spent.push({ t: now, cost });
    return this.#decision(now, cost, "allowed");
  }

  respond(now, reserve, cost) {
    const outcome = this.#outcome(now, reserve);
    if (outcome !== "allowed") return this.#decision(now, 0, outcome);
    if (cost > 0) this.#spent.push({ t: now, cost });
    return this.#decision(now, cost, "allowed", reserve);
  }

  reset() {
    this.#spent = [];
  }

  free() {
    FakeLimiter.live.delete(this);
  }
}

/** A cost table from `{ status: cost }`, offering its statuses in that order. */
export class FakeCostTable {
  #costs;
  constructor(costs) {
    this.#costs = new Map(Object.entries(costs).map(([status, cost]) => [Number(status), cost]));
    this.statuses = Object.freeze([...this.#costs.keys()].filter((status) => status !== 429));
  }

  cost(status) {
    if (!this.#costs.has(status)) throw new Error(`the table prices no ${status}`);
    return this.#costs.get(status);
  }

  free() {}
}
