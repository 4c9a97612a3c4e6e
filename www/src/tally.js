// What compare mode counts across presses: the tokens each algorithm let in during the last W,
// and how often the floating window answered differently from the exact sliding log, each on
// its own history, under the definitions of src/analysis/compare.rs (the replay CLI's
// `--compare`). It stays in JS, not behind the binding: compare mode is fetched only by the
// widgets that ask for it, while the WebAssembly is what every page downloads.
// tests/e2e/compare-parity.test.mjs runs one request log through both and compares the counts.

/** The most tokens a limit can hold: an audit never denies, it only counts. */
const MAX_TOKENS = "18446744073709551615";

/**
 * How the floating window's answer differs from the sliding log's: "wrongly-allowed",
 * "wrongly-limited", or null when both answered alike.
 */
export function disagreement(floating, slidingLog) {
  if (floating.allowed === slidingLog.allowed) return null;
  return floating.allowed ? "wrongly-allowed" : "wrongly-limited";
}

export class Tally {
  /** One audit per algorithm, in the order shown. */
  #audits = [];
  /** Where the floating window and the sliding log are in that order; -1 when absent. */
  #floating;
  #slidingLog;
  presses = 0;
  wronglyAllowed = 0;
  wronglyLimited = 0;

  /**
   * `Limiter`: the core's class; `names`: the algorithms, in the order their decisions will
   * come; `windowMs`: W. Frees what it made if it throws.
   */
  constructor(Limiter, names, windowMs) {
    try {
      // A sliding log that never denies: `record` every token an algorithm let in, and
      // `peek(now, 0).used` is exactly how many it let in during the last W.
      for (const _ of names) {
        this.#audits.push(new Limiter({ limit: `${MAX_TOKENS}/${windowMs}ms`, algorithm: "sliding-log" }));
      }
    } catch (error) {
      this.free();
      throw error;
    }
    this.#floating = names.indexOf("floating");
    this.#slidingLog = names.indexOf("sliding-log");
  }

  /** Whether both the floating window and the sliding log run, and so are compared. */
  get judged() {
    return this.#floating >= 0 && this.#slidingLog >= 0;
  }

  /**
   * Counts one press: `decisions`, one per algorithm in order, all made at `now`. Returns the
   * verdict the event reports: the disagreement, if any, and the counts so far (null, not
   * judged, without both algorithms).
   */
  add(decisions, now) {
    decisions.forEach((decision, index) => {
      if (decision.allowed && decision.cost > 0) this.#audits[index].record(now, decision.cost);
    });
    this.presses++;
    if (!this.judged) return { disagreement: null, wronglyAllowed: null, wronglyLimited: null };
    const found = disagreement(decisions[this.#floating], decisions[this.#slidingLog]);
    if (found === "wrongly-allowed") this.wronglyAllowed++;
    if (found === "wrongly-limited") this.wronglyLimited++;
    return {
      disagreement: found,
      wronglyAllowed: this.wronglyAllowed,
      wronglyLimited: this.wronglyLimited,
    };
  }

  /** Tokens the algorithm at `index` let in during the W up to `now`. */
  admitted(index, now) {
    return this.#audits[index].peek(now, 0).used;
  }

  reset() {
    for (const audit of this.#audits) audit.reset();
    this.presses = this.wronglyAllowed = this.wronglyLimited = 0;
  }

  free() {
    for (const audit of this.#audits) audit.free();
    this.#audits = [];
  }
}
