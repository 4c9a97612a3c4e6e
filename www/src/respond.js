// One request, as the server the widget stands for answers it.

/**
 * Sends one request at `now` to `limiter` and returns the decision as the event reports it.
 * Without a cost table, the request costs `cost` and is allowed if that fits. With one, the
 * server does as ESI does: it does not know what a response costs until it has answered, so
 * it checks that `cost` fits, answers `status`, and then charges what the table says that
 * status costs; its own 429 costs nothing. The table is asked first, so that a status it has
 * no price for throws before anything is charged.
 */
export function respond(limiter, { cost, table }, status, now) {
  if (!table) return limiter.hit(now, cost);
  return admit(limiter, cost, table.cost(status), status, now);
}

/**
 * ESI's step with the charge already known: if `cost` fits at `now`, the request is
 * answered `status` and `charge` is recorded (which may take the bucket past the limit);
 * otherwise it is a 429 that costs nothing. Live mode charges what the real server's answer
 * costs, which it learns only from that answer.
 */
export function admit(limiter, cost, charge, status, now) {
  const check = limiter.peek(now, cost);
  return check.allowed
    ? { ...limiter.record(now, charge), status }
    : { ...check, status: 429, cost: 0 };
}
