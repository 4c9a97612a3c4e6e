// A polite API client: it sends COUNT requests to URL at a steady pace, and when the server
// answers 429 Too Many Requests it waits as long as Retry-After says before sending the same
// request again. `send` uses only fetch and timers, so it works in a browser as in Node 18 or
// later; from a shell: node fetch.mjs URL [COUNT]

const PACE_MS = 1_000; // one request a second: set it well below your API's limit
const MAX_ATTEMPTS = 5; // a server still refusing after this many is not coming back soon
const BACKOFF_BASE_MS = 1_000; // without Retry-After, wait 1 s, then 2 s, 4 s, ...
const BACKOFF_CAP_MS = 8_000; // ... never more than 8 s, each plus up to half again at random
const MAX_WAIT_MS = 60_000; // a client asked to wait longer would look hung: stop and say so

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Retry-After in ms: either whole seconds ("120") or an HTTP date; null if absent or garbled. */
function parseRetryAfter(value) {
  if (value === null) return null;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - Date.now());
}

/** Exponential backoff plus a random part, so that clients refused together spread out. */
function backoff(attempt) {
  const step = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (attempt - 1));
  return step + (Math.random() * step) / 2;
}

/** Sends one GET (safe to repeat) until it succeeds or there is no point trying again. */
export async function send(url) {
  let last;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    let retryAfter = null;
    try {
      // A request that hangs is retried like one that failed.
      const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
      await response.body?.cancel(); // this client needs only the status: free the connection
      const status = response.status;
      if (response.ok) return { ok: true, line: `${status} on attempt ${attempt}` };
      // 429 and 5XX may pass later; any other 4XX is our mistake and would fail again.
      if (status !== 429 && status < 500) return { ok: false, line: `${status}, not retried` };
      last = status;
      // Across origins a browser shows this header only if the server lists it in
      // Access-Control-Expose-Headers; otherwise it reads null and the backoff applies.
      retryAfter = parseRetryAfter(response.headers.get("Retry-After"));
    } catch (error) {
      // The network failed, not the server: like a 5XX, try again later.
      last = error.cause?.message ?? error.message; // Node's reason ("connect ECONNREFUSED")
    }
    const wait = retryAfter ?? backoff(attempt);
    if (wait > MAX_WAIT_MS) return { ok: false, line: "gave up, Retry-After is too long" };
    if (attempt < MAX_ATTEMPTS) await sleep(wait);
  }
  return { ok: false, line: `gave up after ${MAX_ATTEMPTS} attempts: ${last}` };
}

// Run as a script by Node; a page has no `process`, and calls `send` itself.
if (globalThis.process?.argv) {
  const url = process.argv[2];
  const count = Number(process.argv[3] ?? 8);
  const usable = /^https?:\/\//.test(url) && Number.isInteger(count) && count >= 1;
  if (!usable || process.argv.length > 4) {
    console.error("usage: node fetch.mjs URL [COUNT]");
    process.exit(2);
  }
  let allOk = true;
  for (let n = 1; n <= count; n++) {
    if (n > 1) await sleep(PACE_MS);
    const { ok, line } = await send(url);
    allOk &&= ok;
    console.log(`request ${n}: ${line}`);
  }
  process.exitCode = allOk ? 0 : 1;
}
