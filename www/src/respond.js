// One request, as the server the widget stands for answers it.

/**
 * Sends one request at `now` to `limiter` and returns the decision as the event reports it.
 * Without a cost table, the request costs `cost` and is allowed if that fits. With one, the
 * server does as ESI does, and the core's flow with it (`Limiter.respond`): it does not
 * know what a response costs until it has answered, so it reserves `cost`, answers
 * `status`, and settles at what the table says that status costs; its own 429 costs
 * nothing. The table is asked first, so that a status it has no price for throws before
 * anything is charged.
 */
export function respond(limiter, { cost, table }, status, now) {
  if (!table) return limiter.hit(now, cost);
  const price = table.cost(status);
  return answered(limiter.respond(now, cost, price), status);
}

/** A settled request with the status the server answered; a refusal stays a 429. */
export function answered(decision, status) {
  return decision.allowed ? { ...decision, status } : decision;
}
