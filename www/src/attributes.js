// The element's attributes, read into what it builds. Each function throws an Error whose
// message says what was wrong and what is allowed; the element shows it as text.

/** Values of `compare` that turn it on: the bare attribute, and what frameworks write for true. */
const ON = new Set(["", "true", "compare"]);

/**
 * Whether compare mode is on. `compare` is a boolean attribute; `compare="false"` is off too,
 * since some frameworks write a false boolean that way.
 */
export function readCompare(text) {
  if (text === null || text === "false") return false;
  if (ON.has(text)) return true;
  throw new Error(
    `compare="${text}" is not allowed: compare is on or off (write compare, or leave it out); name the algorithms to compare in algorithms, e.g. algorithms="floating sliding-log"`,
  );
}

/**
 * The algorithms a widget runs before its mode is made: one (`algorithm`, the core's default
 * when left out) or, in compare mode, every one of `known`, the core's list, from which
 * compare mode keeps the ones it shows (readCompared).
 */
export function readAlgorithms({ compare, algorithm, algorithms }, known) {
  if (compare) return known;
  if (algorithms !== null) {
    throw new Error(
      `algorithms="${algorithms}" picks what compare mode shows: add compare, or write algorithm="…" for one algorithm`,
    );
  }
  return [algorithm ?? known[0]];
}

/**
 * The algorithms compare mode shows, in order: two or more (`algorithms`, all the core's by
 * default; `algorithm`, one, is refused). `known` is the core's list. Read by compare.js, so
 * that its messages are not in the bundle of a page without compare mode.
 */
export function readCompared({ algorithm, algorithms }, known) {
  if (algorithm !== null) {
    throw new Error(
      `algorithm="${algorithm}" cannot be used with compare, which runs several: leave algorithm out and name them in algorithms, e.g. algorithms="floating sliding-log"`,
    );
  }
  if (algorithms === null) return known;
  const allowed = `name two or more of ${known.join(", ")}, separated by spaces, or leave algorithms out for all ${known.length}`;
  const names = algorithms.split(/[\s,]+/).filter(Boolean);
  if (names.length === 0) {
    throw new Error(`algorithms="${algorithms}" names no algorithm; ${allowed}`);
  }
  const unknown = names.find((name) => !known.includes(name));
  if (unknown !== undefined) {
    throw new Error(`algorithms="${algorithms}": "${unknown}" is not an algorithm; ${allowed}`);
  }
  const twice = names.find((name, index) => names.indexOf(name) !== index);
  if (twice !== undefined) {
    throw new Error(`algorithms="${algorithms}" names ${twice} twice; name each algorithm once`);
  }
  if (names.length === 1) {
    throw new Error(
      `algorithms="${algorithms}" names one algorithm, and compare needs two or more; for one, leave compare out and write algorithm="${names[0]}"`,
    );
  }
  return names;
}

/** A whole number of tokens written in an attribute, or null. */
export function parseWholeNumber(text) {
  return /^\s*\d+\s*$/.test(text) ? Number(text) : null;
}

/**
 * Tokens each Hit spends, or, with a cost table, asks for before answering: 1 by default,
 * and never more than the limit's `tokens`, since such a press could never be allowed.
 */
export function readCost(text, tokens) {
  if (text === null) return 1;
  const cost = parseWholeNumber(text);
  if (cost === null || cost > tokens) {
    throw new Error(
      `cost "${text}" is not allowed: use a whole number of tokens from 0 to ${tokens}`,
    );
  }
  return cost;
}

/**
 * Throws unless every number of `limiter` is exact in JS: the core takes limits up to
 * 2^64 − 1 tokens and ms, but a JS number is exact only up to 2^53 − 1, and the widget would
 * show 9007199254740992 for a limit of 9007199254740993 tokens.
 */
export function assertShowable({ tokens, windowMs }, limitText) {
  if (Number.isSafeInteger(tokens) && Number.isSafeInteger(windowMs)) return;
  const most = Number.MAX_SAFE_INTEGER;
  throw new Error(
    `limit "${limitText}" is too large to show exactly: use at most ${most} tokens per window of at most ${most} ms`,
  );
}

/**
 * Whether predict mode is on: a boolean attribute, as compare is. Predict mode asks before
 * each Hit what the widget's own limiter will answer, so it refuses compare (several answers
 * at once), endpoint (the answer comes from a server, later) and replay (a log plays, no one
 * presses Hit). Read by predict.js, so that its messages are not in the bundle of a page
 * without predict mode.
 */
export function readPredict(text, { compare, endpoint, replay = null }) {
  if (text === null || text === "false") return false;
  if (text !== "" && text !== "true" && text !== "predict") {
    throw new Error(`predict="${text}" is not allowed: predict is on or off (write predict, or leave it out)`);
  }
  if (compare) {
    throw new Error(
      "predict cannot be used with compare, which answers each Hit with several algorithms: leave compare out, and name the algorithm to predict in algorithm",
    );
  }
  if (endpoint !== null) {
    throw new Error(
      `predict cannot be used with endpoint="${endpoint}": predict mode asks for the widget's own answer before each Hit, live mode shows a server's after it; leave one of them out`,
    );
  }
  if (replay !== null && replay !== "false") {
    throw new Error(
      "predict cannot be used with replay, which plays a log instead of the reader's presses: leave one of them out",
    );
  }
  return true;
}
