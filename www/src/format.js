// How the widget writes numbers, times and HTTP answers for a reader.

/** "1 token", "6 tokens". */
export function count(amount, noun) {
  return `${amount} ${noun}${amount === 1 ? "" : "s"}`;
}

/** Units a window is shown in, largest first. */
const UNITS = { h: 3_600_000, min: 60_000, s: 1_000 };

/** A window as people say it, in the largest unit that divides it exactly: "8 s", "15 min". */
export function formatWindow(ms) {
  for (const [unit, size] of Object.entries(UNITS)) {
    if (ms % size === 0) return `${ms / size} ${unit}`;
  }
  return `${ms} ms`;
}

/** A wait in seconds with one decimal, rounded up: a reader who waits that long is not early. */
export function formatWait(ms) {
  return `${(Math.ceil(ms / 100) / 10).toFixed(1)} s`;
}

/** An exact wait in seconds: 2410 ms is "2.41 s", 1000 ms is "1 s". */
export function formatExactWait(ms) {
  return `${ms / 1000} s`;
}

/** Tokens as a reader checks them by hand: 6, 5.25, 5.625; never more than 3 decimals. */
export function formatTokens(amount) {
  return String(Number(amount.toFixed(3)));
}

const REASONS = {
  100: "Continue",
  200: "OK",
  201: "Created",
  204: "No Content",
  304: "Not Modified",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  420: "Error Limited",
  429: "Too Many Requests",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
};

/** "429 Too Many Requests"; a status without a well-known reason is the number alone. */
export function statusLine(status) {
  return REASONS[status] ? `${status} ${REASONS[status]}` : String(status);
}

/**
 * The status line's hint before the first press when a cost table prices the answers, or
 * null without one: the press then reserves, is answered, and is charged what that costs.
 */
export function pricingHint({ cost, table }) {
  return table
    ? `Press a Hit button to send a request; the server reserves ${count(cost, "token")}, answers, then charges what the answer costs.`
    : null;
}
