// What the widget says about each of the core's algorithms. The names come from the core
// (Limiter.algorithms); algorithms.test.js checks that each table here covers every algorithm
// src/algorithms/any.rs names. An algorithm the core gains before these tables do is still
// shown: by its name, with no note and no meaning. One table per use, not one object per
// algorithm, so that each bundle carries only what it shows (compare mode's notes stay out
// of the default bundle, the formula's meanings out of compare mode's).
//
// In the texts, N stands for the limit's tokens and W for its window ("8 s").

/** What a reader calls each algorithm. */
const LABELS = {
  floating: "floating window",
  "sliding-log": "sliding log",
  fixed: "fixed window",
  "token-bucket": "token bucket",
};

/** Compare mode's note on each row: how the algorithm counts `used`. */
const NOTES = {
  floating: "estimate: previous × overlap + current",
  "sliding-log": "exact: every request of the last W",
  fixed: "starts again from 0 every W",
  "token-bucket": "refills N every W, evenly",
};

/**
 * What `used` means beside the single widget's formula; null for the floating window, whose
 * formula shows its terms.
 */
const MEANINGS = {
  floating: null,
  "sliding-log": "tokens spent in the last W",
  fixed: "tokens spent in this fixed window",
  "token-bucket": "the bucket refills N tokens every W, evenly",
};

/** Each table, for algorithms.test.js. */
export const TABLES = { LABELS, NOTES, MEANINGS };

/** "floating window"; an algorithm without a label by its name, "leaky bucket". */
export function algorithmLabel(name) {
  return LABELS[name] ?? name.replaceAll("-", " ");
}

/** How the algorithm counts, N and W filled in; "" for one without a note. */
export function algorithmNote(name, tokens, windowText) {
  return fill(NOTES[name] ?? "", tokens, windowText);
}

/** What `used` means for the algorithm, N and W filled in, or null. */
export function algorithmMeaning(name, tokens, windowText) {
  const meaning = MEANINGS[name];
  return meaning ? fill(meaning, tokens, windowText) : null;
}

function fill(text, tokens, windowText) {
  return text.replace(/\bW\b/g, windowText).replace(/\bN\b/g, String(tokens));
}
