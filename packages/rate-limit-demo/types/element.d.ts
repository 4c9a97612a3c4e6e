// Types for "rate-limit-demo/element": the element's class, with no side effect.

import type { Algorithm, Decision } from "./limiter.js";

export type { Algorithm, Decision, LimiterOptions, Settled } from "./limiter.js";
export { CostTable, Limiter, load } from "./limiter.js";

/** The detail of a `rate-limit-decision` event, the same shape in both modes. */
export interface RateLimitDecisionDetail extends Decision {
  /** With `costs`, and in live mode, where a request is priced by its answer: the tokens it reserved before it was answered (`cost`, the attribute), 0 on a 429; the `cost` above is what the answer was then charged. Absent otherwise. */
  reserved?: number;
  /** Each algorithm's decision, in the order shown: one entry, or one per algorithm in compare mode; for a policy, one per limit, each also with its `name` and `nextTokenMs` (the ms until it frees one more whole token, null when all are free). The fields above are the first entry's, except those a policy answers for itself (see `answeredBy`). */
  decisions: readonly Decision[];
  /** Presses since the widget was built or reset. */
  presses: number;
  /** When the floating window and the sliding log are compared: how the floating window's answer to this press differed, if it did. Otherwise null. */
  disagreement: "wrongly-allowed" | "wrongly-limited" | null;
  /** Counts of those disagreements so far; null unless both are compared. */
  wronglyAllowed: number | null;
  wronglyLimited: number | null;
  /** Live mode only: the server's answer to this press, which the decision above predicted. */
  server?: ServerAnswer;
  /** Live mode only: the fields where the server and the model differ; empty when they agree. */
  mismatches?: readonly MismatchField[];
  /** For a policy of several limits: the name of the limit that answered a 429 (the one with the longest wait, or whose cost never fits), null when allowed. `decisions` then has one per limit, each with its `name`, and `allowed`, `status`, `outcome`, `retryAfterMs`, `retryAfter` and `remaining` above are the policy's. */
  answeredBy?: string | null;
  /** For a policy: the policy as the core writes it, "burst=10/1s 1000/1h". */
  policy?: string;
  /** With the `headers` attribute: the answer's rate-limit headers as the headers view shows them, `[name, value]` pairs; null without it. */
  headers?: readonly (readonly [string, string])[] | null;
  /** Predict mode only: what the reader predicted for this press (`allowed`, and for a 429 the `wait` range `{ fromMs, toMs }`, above `fromMs` and up to `toMs`, null for no upper end), whether it was `correct`, and the score so far, `right` of `asked`. */
  prediction?: Prediction;
}

/** A reader's prediction in predict mode, judged against the decision it came with. */
export interface Prediction {
  /** True for "200 OK" (with `costs`, let through), false for a 429. */
  allowed: boolean;
  /** For a 429, the range the reader put its wait in: above `fromMs`, up to `toMs` (null: no upper end). */
  wait: { fromMs: number; toMs: number | null } | null;
  /** The status, and for a 429 the wait's range, match the decision. */
  correct: boolean;
  /** Predictions right so far, this one included, since the widget was built or reset. */
  right: number;
  /** Predictions made so far. */
  asked: number;
}

export type RateLimitDecisionEvent = CustomEvent<RateLimitDecisionDetail>;

/** A field of an answer that live mode compares: the status (429 or not), then the headers. */
export type MismatchField =
  | "status"
  | "limit"
  | "remaining"
  | "used"
  | "retry-after"
  /** The IETF's RateLimit-Policy `q` and `w` of the limit named after the colon. */
  | `quota:${string}`
  /** The IETF's RateLimit `r` and `t` of the limit named after the colon. */
  | `ratelimit:${string}`;

/** One limit of the IETF's fields, by name: RateLimit-Policy's quota `q`, unit `qu` and window `w`, RateLimit's `r` and `t`; null where left out or unreadable. The model's `t` is undefined where it cannot tell (one limit without `headers`). */
export interface IetfLimit {
  name: string;
  q: number | null;
  w: number | null;
  qu?: string | null;
  r: number | null;
  t: number | null | undefined;
}

/** An answer to one press in live mode, the server's or the model's; null where a header was missing or not a whole number. */
export interface LiveAnswer {
  /** The HTTP status; the model's is 429 when it refuses, otherwise what it expects the server to answer. */
  status: number;
  /** X-Ratelimit-Limit, as the core writes a limit: "6/8s". */
  limit: string | null;
  /** X-Ratelimit-Remaining: whole tokens left after the decision. */
  remaining: number | null;
  /** X-Ratelimit-Used: tokens this request spent; 0 on a 429. */
  used: number | null;
  /** X-Ratelimit-Group, the server's route group; always null for the model. */
  group: string | null;
  /** Retry-After in whole seconds, on a 429. */
  retryAfter: number | null;
  /** The IETF's RateLimit-Policy and RateLimit, limit by limit; the server's is null when it sent neither. */
  ietf: readonly IetfLimit[] | null;
}

/** The server's answer to one press in live mode. */
export interface ServerAnswer extends LiveAnswer {
  /** The URL requested. */
  url: string;
  /** The X-Client-Id sent: the server's bucket. */
  clientId: string;
  /** Milliseconds from sending the request to its answer. */
  roundTripMs: number;
}

/** The detail of a `rate-limit-mismatch` event: a press the server answered otherwise than the model. */
export interface RateLimitMismatchDetail {
  /** The fields that differ, never empty. */
  fields: readonly MismatchField[];
  /** What the server answered. */
  server: ServerAnswer;
  /** What the model answered for the same press. */
  model: LiveAnswer;
  /** What the widget says about it, in words. */
  message: string;
}

export type RateLimitMismatchEvent = CustomEvent<RateLimitMismatchDetail>;

/** The detail of a `rate-limit-replay` event: a log played in replay mode, or stopped at a row it cannot read. */
export interface RateLimitReplayDetail {
  /** Requests replayed: allowed, denied and never fitting. */
  requests: number;
  /** Let through. */
  allowed: number;
  /** Refused, and would fit after a wait. */
  denied: number;
  /** Larger than the whole limit: refused whatever the wait. */
  neverFit: number;
  /** The first request refused (its place in the log, from 1, and its time), or null. */
  firstRefused: { request: number; tMs: number } | null;
  /** The longest wait a denial asked for, in ms, or null when none was denied. */
  longestWaitMs: number | null;
  /** The line `trickle replay` prints for the same log; null when the log stopped at an error. */
  summary: string | null;
  /** The message for the row the replay could not read, with its line; null when the whole log was played. */
  error: string | null;
}

export type RateLimitReplayEvent = CustomEvent<RateLimitReplayDetail>;

/** `<rate-limit-demo>`: a rate limit a reader can press, for API docs. */
export class RateLimitDemo extends HTMLElement {
  static readonly observedAttributes: readonly string[];
  /** Registers the element; does nothing when `tag` is taken already. */
  static define(tag?: string, registry?: CustomElementRegistry): typeof RateLimitDemo;
  /** True once interactive, false if the element shows an error instead. Never rejects. */
  readonly ready: Promise<boolean>;
  /** N per W, e.g. "6/8s"; "6/8s" when the attribute is absent. */
  limit: string;
  /** The attribute as written; null for the core's default. */
  algorithm: Algorithm | (string & {}) | null;
  /** In compare mode, the algorithms shown, separated by spaces; null for all. An array is joined. */
  algorithms: string | readonly Algorithm[] | null;
  /** The attribute as written; null for 1. */
  cost: string | number | null;
  /** "esi" or a table such as "200:2 304:1 4xx:5 429:0 5xx:0"; null for none. */
  costs: string | null;
  /** Compare mode; true adds the attribute, false removes it. */
  compare: boolean;
  /** The `replay` attribute as written ("" when bare); null when replay mode is off. */
  replay: string | null;
  /** Live mode's URL as written; null when live mode is off. */
  endpoint: string | null;
  /** The headers view's dialect as written, "esi", "ietf" or "both"; null for no headers view. */
  headers: string | null;
  /** The `client-id` attribute as written; null for a random id per widget. */
  clientId: string | null;
  /** Predict mode; true adds the attribute, false removes it. */
  predict: boolean;
  /** The URL of the API's OpenAPI document whose `x-rate-limit` for `route` is the limit shown; null for `limit`'s. */
  openapi: string | null;
  /** The operation of `openapi`'s document, "GET /markets/prices"; null when absent. */
  route: string | null;
  /** Sends one request as pressing Hit does; with `costs`, `status` is what the server answers. Null while loading or showing an error, in live mode, where the event follows the server's answer, and in predict mode before the reader has predicted. */
  hit(status?: number): RateLimitDecisionDetail | null;
  /** Empties the bucket and the timeline; in live mode, the server's bucket too unless `client-id` is set. */
  reset(): void;
  addEventListener<K extends keyof RateLimitDemoEventMap>(
    type: K,
    listener: (this: RateLimitDemo, event: RateLimitDemoEventMap[K]) => unknown,
    options?: boolean | AddEventListenerOptions,
  ): void;
  addEventListener(
    type: string,
    listener: EventListenerOrEventListenerObject,
    options?: boolean | AddEventListenerOptions,
  ): void;
}

export interface RateLimitDemoEventMap extends HTMLElementEventMap {
  "rate-limit-decision": RateLimitDecisionEvent;
  "rate-limit-mismatch": RateLimitMismatchEvent;
  "rate-limit-replay": RateLimitReplayEvent;
}

/** Registers `<rate-limit-demo>` (or `tag`); does nothing when the tag is taken already. */
export function define(tag?: string, registry?: CustomElementRegistry): typeof RateLimitDemo;

declare global {
  interface HTMLElementTagNameMap {
    "rate-limit-demo": RateLimitDemo;
  }
  interface GlobalEventHandlersEventMap {
    "rate-limit-decision": RateLimitDecisionEvent;
    "rate-limit-mismatch": RateLimitMismatchEvent;
    "rate-limit-replay": RateLimitReplayEvent;
  }
}
