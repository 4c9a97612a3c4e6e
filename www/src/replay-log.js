// Replay mode's handling of a log before the core sees it: which format it is, a CSV log cut
// into chunks of whole lines, a HAR's entries read out of its JSON, and the timeline's bins.
// The rows' rules and messages are the core's (crates/trickle-wasm/src/replay.rs): nothing
// here judges a row.

/**
 * Checks a replay widget's attributes: `replay` is on (the bare attribute, "true" or
 * "replay"), and neither `compare` nor `endpoint` is beside it, since a log is replayed in
 * the widget through one algorithm. Throws an Error that says what to write instead.
 */
export function checkReplay({ replay, compare, endpoint }) {
  if (replay !== "" && replay !== "true" && replay !== "replay") {
    throw new Error(
      `replay="${replay}" is not allowed: replay is on or off (write replay, or leave it out)`,
    );
  }
  if (compare) {
    throw new Error(
      'replay cannot be used with compare: a log is replayed through one algorithm; leave compare out and name it in algorithm, e.g. algorithm="sliding-log"',
    );
  }
  if (endpoint !== null) {
    throw new Error(
      "replay cannot be used with endpoint: a log is replayed in the widget, not sent to a server; leave one of them out",
    );
  }
}

/** A HAR when the first character that is not white space is `{`, as `trickle replay` decides. */
export function isHar(text) {
  return /^\s*\{/.test(text);
}

/**
 * The text cut into chunks of `lines` lines each, without the line breaks that separate them,
 * so that the core numbers the lines as the file does (`\r\n` is left to the core, which
 * drops the `\r`). A final line break ends the last line and starts none.
 */
export function* lineChunks(text, lines) {
  const body = text.endsWith("\n") ? text.slice(0, -1) : text;
  let start = 0;
  for (;;) {
    let at = start - 1;
    for (let count = 0; count < lines && (count === 0 || at !== -1); count++) {
      at = body.indexOf("\n", at + 1);
    }
    if (at === -1) {
      yield body.slice(start);
      return;
    }
    yield body.slice(start, at);
    start = at + 1;
  }
}

/** The message `trickle replay` gives for JSON that is no HAR. */
const NO_ENTRIES =
  "the input is JSON but not a HAR: it has no log.entries list; export the requests from the browser's network panel as HAR, or give a CSV log, t_ms,cost or t_ms,status";

/**
 * Each entry of a HAR's text as `{ started, status }`: its `startedDateTime` (undefined unless
 * a string) and `response.status` (NaN unless a number), for the core to judge. Throws an
 * Error for text that is not JSON or has no `log.entries` list.
 */
export function harEntries(text) {
  let json;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`the input starts with { but is not JSON, as a HAR is: ${error.message}`);
  }
  const entries = json?.log?.entries;
  if (!Array.isArray(entries)) throw new Error(NO_ENTRIES);
  return entries.map((entry) => {
    const started = entry?.startedDateTime;
    const status = entry?.response?.status;
    return {
      started: typeof started === "string" ? started : undefined,
      status: typeof status === "number" ? status : Number.NaN,
    };
  });
}

/**
 * The timeline's bars: `bins` counts of allowed and refused requests (denied or never
 * fitting, codes 1 and 2), each bin an equal share of [0, `last`] ms. `times` and `codes`
 * are the first `length` requests' times and outcome codes.
 */
export function binOutcomes(times, codes, length, last, bins) {
  const allowed = new Uint32Array(bins);
  const refused = new Uint32Array(bins);
  const scale = last > 0 ? bins / last : 0;
  for (let index = 0; index < length; index++) {
    const bin = Math.min(bins - 1, Math.floor(times[index] * scale));
    if (codes[index] === 0) allowed[bin]++;
    else refused[bin]++;
  }
  return { allowed, refused };
}
