// The `rate-limit-decision` event's detail, built in one place for every mode.

/**
 * The detail of one press: the first algorithm's decision, spread, then `decisions` (one per
 * algorithm shown), `presses` so far, the floating window's disagreement with the sliding log
 * where compare mode judges one (else null), and whatever the mode adds (live mode: the
 * `server`'s answer and the `mismatches`). Frozen, as a page receives it.
 */
export function decisionDetail({ decisions, verdict = null, extra = null }, presses) {
  return Object.freeze({
    ...decisions[0],
    decisions: Object.freeze(decisions),
    presses,
    disagreement: verdict?.disagreement ?? null,
    wronglyAllowed: verdict?.wronglyAllowed ?? null,
    wronglyLimited: verdict?.wronglyLimited ?? null,
    ...extra,
  });
}
