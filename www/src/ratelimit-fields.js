// The rate-limit response headers of one answer, written as the servers this project ships
// write them (crates/trickle-tower: ESI's X-Ratelimit-* of the limit nearest to refusing,
// the IETF's RateLimit-Policy and RateLimit with every limit as Structured Fields (RFC 9651),
// Retry-After on a 429), and read back from a server's answer. Every number comes from a
// policy decision the core computed (policy-decision.js reads it); only the writing is done
// here, as the layer's `sfv` does it, and tests/e2e/ietf-strings.test.mjs holds the two
// byte for byte equal against `trickle serve`. Pure, so that its tests run without a build.

import { LIMIT, RATELIMIT, RATELIMIT_POLICY, REMAINING, RETRY_AFTER, USED } from "./headers.js";

/** The dialects, as `trickle serve`'s `headers` key and the layer name them. */
export const DIALECTS = ["esi", "ietf", "both"];

/** The `headers` attribute: one of DIALECTS. Throws an Error that says what is allowed. */
export function readDialect(text) {
  if (DIALECTS.includes(text)) return text;
  throw new Error(
    `headers="${text}" is not allowed: write esi (X-Ratelimit-*), ietf (RateLimit-Policy and RateLimit) or both, as trickle serve's headers setting does, or leave headers out`,
  );
}

/**
 * What the quotas count, for `qu`: requests when every request costs exactly 1 whatever
 * its answer, tokens otherwise (a `cost` other than 1, or a cost table), as the core's
 * `Pricing::quota_unit` says.
 */
export function quotaUnit({ cost, table }) {
  return !table && cost === 1 ? "requests" : "tokens";
}

/** The largest Structured Field integer (15 digits); the layer writes it for anything larger. */
const MAX_INTEGER = 999_999_999_999_999;

function integer(value) {
  return String(Math.min(value, MAX_INTEGER));
}

/** A Structured Field string: in quotes, with `"` and `\` escaped. */
function string(text) {
  return `"${text.replace(/[\\"]/g, "\\$&")}"`;
}

/**
 * `RateLimit-Policy` for `limits` (`[{ name, tokens, windowS }]`, `windowS` null when the
 * window is no whole number of seconds) counting `unit`: `"burst";q=10;w=1, "1000/1h";q=1000;w=3600`,
 * with `qu="tokens"` after `q` for tokens.
 */
export function policyField(limits, unit) {
  return limits
    .map(({ name, tokens, windowS }) => {
      let item = `${string(name)};q=${integer(tokens)}`;
      if (unit === "tokens") item += `;qu=${string(unit)}`;
      if (windowS !== null) item += `;w=${integer(windowS)}`;
      return item;
    })
    .join(", ");
}

/**
 * `RateLimit` after a policy decision (`readPolicyDecision`'s): `"burst";r=7;t=1, "1000/1h";r=997`,
 * each limit's whole units left and, unless every unit is free, `t`.
 */
export function limitField({ limits }) {
  return limits
    .map(({ name, remaining, resetS }) => {
      const item = `${string(name)};r=${integer(remaining)}`;
      return resetS === null ? item : `${item};t=${integer(resetS)}`;
    })
    .join(", ");
}

/**
 * ESI's fields of the limit nearest to refusing: `{ limit, remaining, used }`, the limit as
 * written (`2/1s`), its whole tokens left and what this request spent in it (nothing when
 * refused). `limits` are the policy's, with their `text`.
 */
export function nearestLimit(decision, limits) {
  const own = decision.limits[decision.nearest];
  return {
    limit: limits[decision.nearest].text,
    remaining: own.remaining,
    used: own.allowed && decision.allowed ? own.cost : 0,
  };
}

/**
 * The rate-limit headers a server in `dialect` sends with the answer `decision`, as
 * `[name, value]` pairs in the order the layer writes them. `limits` are the policy's
 * (`{ name, text, tokens, windowS }`); `unit` is quotaUnit's. `X-Ratelimit-Group`, which
 * names the server's route group, is left out: the widget cannot know it.
 */
export function responseHeaders(decision, { limits, unit, dialect }) {
  const headers = [];
  if (dialect !== "ietf") {
    const { limit, remaining, used } = nearestLimit(decision, limits);
    headers.push([LIMIT, limit], [REMAINING, String(remaining)], [USED, String(used)]);
  }
  if (dialect !== "esi") {
    headers.push([RATELIMIT_POLICY, policyField(limits, unit)], [RATELIMIT, limitField(decision)]);
  }
  if (!decision.allowed && decision.retryAfter !== null) {
    headers.push([RETRY_AFTER, String(decision.retryAfter)]);
  }
  return headers;
}

const TOKEN = /^[A-Za-z*][\w!#$%&'*+\-.^`|~:/]*/;
const KEY = /^[a-z*][a-z0-9_\-.*]*/;

/**
 * A Structured Field list of items (RFC 9651 §4.2.1), as `[{ name, params }]`: each item a
 * string or token, its parameters integers, strings, tokens or booleans. What the IETF's
 * fields hold; anything else (an inner list, a decimal, a byte sequence) is refused. Throws
 * an Error that says where the text stops being one.
 */
export function parseList(text) {
  let rest = text.replace(/^ +| +$/g, "");
  const items = [];
  const fail = (what) => {
    throw new Error(`${what} at "${rest.slice(0, 20)}"`);
  };
  const bare = () => {
    if (rest.startsWith('"')) {
      let value = "";
      for (let at = 1; at < rest.length; at++) {
        const char = rest[at];
        if (char === "\\") {
          const next = rest[++at];
          if (next !== '"' && next !== "\\") fail("a bad escape in a string");
          value += next;
        } else if (char === '"') {
          rest = rest.slice(at + 1);
          return value;
        } else if (char < " " || char > "~") fail("a character a string may not hold");
        else value += char;
      }
      fail("a string without its closing quote");
    }
    const number = /^-?\d{1,15}(?![\d.])/.exec(rest);
    if (number) {
      rest = rest.slice(number[0].length);
      return Number(number[0]);
    }
    if (rest.startsWith("?0") || rest.startsWith("?1")) {
      const value = rest[1] === "1";
      rest = rest.slice(2);
      return value;
    }
    const token = TOKEN.exec(rest);
    if (token) {
      rest = rest.slice(token[0].length);
      return token[0];
    }
    return fail("not a string, token, integer or boolean");
  };
  while (rest.length) {
    const name = bare();
    if (typeof name !== "string") fail("an item that is not a string or token");
    const params = {};
    while (rest.startsWith(";")) {
      rest = rest.slice(1).replace(/^ +/, "");
      const key = KEY.exec(rest)?.[0] ?? fail("a parameter without a key");
      rest = rest.slice(key.length);
      params[key] = rest.startsWith("=") ? ((rest = rest.slice(1)), bare()) : true;
    }
    items.push({ name, params });
    rest = rest.replace(/^[ \t]+/, "");
    if (!rest.length) break;
    if (!rest.startsWith(",")) fail("no comma between items");
    rest = rest.slice(1).replace(/^[ \t]+/, "");
    if (!rest.length) fail("a comma at the end");
  }
  return items;
}

/**
 * The IETF fields of an answer, read: each limit the server names, in its order, with `q`,
 * `w` (null when left out) and `qu` from `RateLimit-Policy`, and `r` and `t` (null when
 * left out) from `RateLimit`; `null` when the answer carries neither field. `problems`
 * says what could not be read, for a message.
 */
export function readIetf(policyText, limitText) {
  if (policyText === null && limitText === null) return { limits: null, problems: [] };
  const problems = [];
  const read = (name, text) => {
    if (text === null) {
      problems.push(`The server sent no ${name} header this page can read.`);
      return [];
    }
    try {
      return parseList(text);
    } catch (error) {
      problems.push(`${name} is not a Structured Field list: ${error.message}.`);
      return [];
    }
  };
  const whole = (value) => (Number.isSafeInteger(value) && value >= 0 ? value : null);
  const limits = new Map();
  const limit = (name) => {
    if (!limits.has(name)) limits.set(name, { name, q: null, w: null, qu: null, r: null, t: null });
    return limits.get(name);
  };
  for (const { name, params } of read(RATELIMIT_POLICY, policyText)) {
    Object.assign(limit(name), { q: whole(params.q), w: whole(params.w), qu: params.qu ?? null });
  }
  for (const { name, params } of read(RATELIMIT, limitText)) {
    Object.assign(limit(name), { r: whole(params.r), t: whole(params.t) });
  }
  return { limits: [...limits.values()], problems };
}
