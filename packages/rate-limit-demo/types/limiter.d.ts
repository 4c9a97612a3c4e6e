// Types for "rate-limit-demo/limiter": the rate-limiter core alone.

/** One of the core's algorithms; `Limiter.algorithms` lists them, the default first. */
export type Algorithm = "floating" | "sliding-log" | "fixed" | "token-bucket";

export interface LimiterOptions {
  /** N tokens per window W, as ESI writes it: "6/8s", "150/15m" (units ms, s, m, h). */
  limit: string;
  /** Default "floating". */
  algorithm?: Algorithm;
}

/** What the core answered one request. Every number is a plain JS number. */
export interface Decision {
  algorithm: Algorithm;
  /** True when the request fits; then status 200, otherwise 429. */
  allowed: boolean;
  status: number;
  /** "exceeds-limit": the cost is above the whole limit, and no wait helps. */
  outcome: "allowed" | "denied" | "exceeds-limit";
  /** Tokens the request spent (0 when denied); with a cost table, what the answer was charged. */
  cost: number;
  /** Tokens in use after the decision; fractional for the floating window and the token bucket. */
  used: number;
  /** N, the tokens one window holds. */
  limit: number;
  /** W, the window's length in ms. */
  windowMs: number;
  /** Whole tokens left. */
  remaining: number;
  /** The exact wait before the same request fits; null unless denied. */
  retryAfterMs: number | null;
  /** The Retry-After header: whole seconds, rounded up; null unless denied. */
  retryAfter: number | null;
  /** When the decision was made, in ms. */
  t: number;
  /** The floating window's counters (null for the other algorithms): tokens spent in the previous and the current fixed window, */
  previous: number | null;
  current: number | null;
  /** the share of the previous window still counted (1 down to 1/W), */
  overlap: number | null;
  /** and how far into the current window `t` is, in ms. */
  elapsedMs: number | null;
}

/** What `Limiter.respond` answers: the settle's decision, or the refusal's (status 429, cost 0). */
export interface Settled extends Decision {
  /** Tokens the request reserved before it was answered: the `reserve` asked for, or 0 when refused. `cost` is what its answer was charged. */
  reserved: number;
}

/**
 * Loads the WebAssembly once for the page, both modules, so that every algorithm and
 * `CostTable` work (every call returns the same promise). `source` is where the default
 * module comes from, by default trickle_bg.wasm beside the module, read from disk under Node;
 * trickle_algorithms_bg.wasm always comes from beside the module.
 */
export function load(
  source?: string | URL | Response | PromiseLike<Response> | BufferSource | WebAssembly.Module,
): Promise<void>;

/**
 * Loads the default module alone (every call returns the same promise): enough for limiters
 * running the floating window. `source` as `load`'s.
 */
export function loadFloating(
  source?: string | URL | Response | PromiseLike<Response> | BufferSource | WebAssembly.Module,
): Promise<void>;

/**
 * Loads trickle_algorithms_bg.wasm, beside the module: the sliding log, the fixed window, the
 * token bucket and `CostTable`. Every call returns the same promise; a failure is not kept.
 */
export function loadAlgorithms(): Promise<void>;

/** Whether a `Limiter` running `algorithm` can be made now, without loading another module. */
export function canRun(algorithm: string): boolean;

/** Whether a `CostTable` can be made now: it runs in trickle_algorithms_bg.wasm. */
export function canPrice(): boolean;

/**
 * One rate-limited bucket. Every method takes the time first, in ms (whole numbers from 0 to
 * 2^53 − 1; fractions are dropped), then the cost in tokens (default 1), as the Rust core does.
 * Anything else is refused with an Error that says what is allowed: "2", null and BigInt are
 * not coerced.
 */
export class Limiter {
  /** The core's algorithm names, the default first. Needs `load()`. */
  static readonly algorithms: readonly Algorithm[];
  constructor(options: LimiterOptions);
  /** Spends `cost` tokens at `now` if they fit. */
  hit(now: number, cost?: number): Decision;
  /** What `hit` would answer, spending nothing; `peek(now, 0)` shows what is in use. */
  peek(now: number, cost?: number): Decision;
  /** Charges `cost` tokens whether or not they fit, as a server does after answering. */
  record(now: number, cost: number): Decision;
  /**
   * One request to a server that prices its answer, the Rust core's flow (ESI's): reserves
   * `reserve` tokens before answering and, if they fit, settles at `cost`, the answer's
   * price, charging (even past the limit) or refunding the difference. Otherwise a 429
   * that costs nothing. Its status is 200 when let in: the caller knows the real one.
   */
  respond(now: number, reserve: number, cost: number): Settled;
  /** Forgets everything spent. */
  reset(): void;
  /** The limit as the core writes it, e.g. "6/8s". */
  readonly limit: string;
  readonly tokens: number;
  readonly windowMs: number;
  readonly algorithm: Algorithm;
  /** Releases the WebAssembly memory now. */
  free(): void;
}

/**
 * What each response costs by HTTP status: "esi" (2XX 2, 3XX 1, 4XX 5, 429 0, 5XX 0) or a
 * table such as "200:2 304:1 4xx:5 429:0 5xx:0", where an exact status wins over its class.
 */
export class CostTable {
  constructor(text: string);
  /** One status per entry to offer as an answer, in the table's order; never 429. */
  readonly statuses: readonly number[];
  /** Tokens a response with `status` costs; throws for a status the table does not price. */
  cost(status: number): number;
  free(): void;
}
