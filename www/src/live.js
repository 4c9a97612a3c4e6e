// Live mode, loaded only by a widget with the `endpoint` attribute: each Hit goes to a real
// server as a GET, and its status and rate-limit headers (ESI's X-Ratelimit-*, the IETF's
// RateLimit-Policy and RateLimit, or both) are shown beside what the widget's own model (the
// same limit, algorithm and costs, on the reader's clock) says for the same press, with every
// field where they differ marked, each limit of the IETF's fields on its own rows. A policy
// of several limits (or a widget with `headers`) runs this on the core's policy:
// live-policy.js. That is how an API team finds out that
// its docs and its server disagree. Nothing here throws at the page: a request that fails, a
// server that sends no headers or hides them from CORS, is explained as text.

import { html, updateAttribute, updateText } from "./dom.js";
import { count, statusLine } from "./format.js";
import { CLIENT_ID, GROUP, LIMIT, RATELIMIT, RATELIMIT_POLICY, REMAINING, RETRY_AFTER, USED } from "./headers.js";
import { readIetf } from "./ratelimit-fields.js";
import { answered } from "./respond.js";
import styles from "./live.css";

export { styles };

/** How long a request may take before the widget gives up on it. */
export const TIMEOUT_MS = 10_000;
/** Presses that may wait behind one in flight; more are refused, as text. */
const MAX_WAITING = 4;
/**
 * How many earlier presses a differing press may find counted at the wrong end of their
 * round trips (#recount): the newest are the ones whose count can still tip a press, as a
 * reader presses a few times a window.
 */
const RECOUNTED = 4;
/** The fields whose agreement can hang on when the server counted earlier presses. */
const TIMED_FIELDS = new Set(["status", "remaining", "retry-after"]);

/** The rows of the table, in order: the field's name in events, and what the server sends. */
const ROWS = [
  ["status", "Status"],
  ["limit", LIMIT],
  ["remaining", REMAINING],
  ["used", USED],
  ["group", GROUP],
  ["retry-after", RETRY_AFTER],
];

/** The headers every answer must carry, and be allowed to show, for a comparison, or the IETF's. */
const REQUIRED = [LIMIT, REMAINING, USED];

/**
 * A fresh key for the server's bucket. randomUUID exists only in secure contexts (https,
 * localhost); a docs page served over plain http still has getRandomValues.
 */
export function randomClientId() {
  if (globalThis.crypto?.randomUUID) return `demo-${crypto.randomUUID()}`;
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `demo-${Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * Content-Security-Policy violations the page reported lately. A request the policy blocks
 * fails as a network error does; the violation event is the only way to tell them apart.
 */
const violations = [];
let watching = false;

function watchViolations() {
  if (watching || !globalThis.document) return;
  watching = true;
  document.addEventListener("securitypolicyviolation", (event) => {
    violations.push(event.blockedURI);
    if (violations.length > 20) violations.shift();
  });
}

/** Waits for one task to pass, so that events queued with a failure have been dispatched. */
const nextTask = () => new Promise((done) => setTimeout(done, 0));

/** A whole number of tokens or seconds as an HTTP header writes it; null if it is not one. */
function wholeHeader(text) {
  if (text === null || !/^\s*\d+\s*$/.test(text)) return null;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : null;
}

/**
 * Whether `hostname` is this machine or a private network, which Chromium lets a page from
 * elsewhere reach only once the reader allows it (Local Network Access).
 */
function isLocal(hostname) {
  return /^(localhost|.*\.localhost|127\.\d+\.\d+\.\d+|\[::1\]|10\.\d+\.\d+\.\d+|192\.168\.\d+\.\d+|172\.(1[6-9]|2\d|3[01])\.\d+\.\d+)$/.test(
    hostname,
  );
}

/** "a, b and c". */
function words(list) {
  return list.length < 2 ? list.join("") : `${list.slice(0, -1).join(", ")} and ${list.at(-1)}`;
}

const ENDPOINT_FORM = 'write the URL of a rate-limited route, as in endpoint="https://api.example.com/fittings"';

/**
 * Live mode's URL, resolved against the page (`base`): http or https only, since the widget
 * sends a request there on every press. Throws an Error that says what is allowed, which
 * the element shows in place of the widget, as it does for every attribute.
 */
export function readEndpoint(text, base, compare) {
  if (text.trim() === "") {
    throw new Error(`endpoint="${text}" is empty: ${ENDPOINT_FORM}, or leave endpoint out`);
  }
  let url;
  try {
    url = new URL(text.trim(), base);
  } catch {
    throw new Error(`endpoint="${text}" is not a URL: ${ENDPOINT_FORM}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(
      `endpoint="${text}" is not allowed: live mode sends requests over http or https only; ${ENDPOINT_FORM}`,
    );
  }
  if (url.username || url.password) {
    throw new Error(
      `endpoint="${text}" holds a user name or password, which the widget never sends: leave them out`,
    );
  }
  if (compare) {
    throw new Error(
      `endpoint="${text}" cannot be used with compare: live mode compares one algorithm with the server; leave compare out, and write the server's algorithm in algorithm`,
    );
  }
  url.hash = "";
  return url;
}

/**
 * The `X-Client-Id` a live widget sends, or null for a random one: 1 to 64 visible ASCII
 * characters, which is what `trickle serve` takes as a bucket's key.
 */
export function readClientId(text) {
  if (text === null || /^[\x21-\x7e]{1,64}$/.test(text)) return text;
  throw new Error(
    `client-id="${text}" is not allowed: use 1 to 64 visible ASCII characters (letters, digits, punctuation; no spaces), or leave client-id out for a random id per widget`,
  );
}

/**
 * Live mode, as the element drives it (see modes.js): the single-algorithm view of the model,
 * on the epoch clock, and the session's table after the status line.
 */
export function create({ limiters: [limiter], pricing, single, attribute, baseURI, compare, host }) {
  const session = new LiveSession({
    endpoint: readEndpoint(attribute("endpoint"), baseURI, compare),
    clientId: readClientId(attribute("client-id")),
    limiter,
    pricing,
    costsText: attribute("costs"),
    clock: epochNow,
  });
  single.show(limiter, pricing.cost);
  const view = {
    remember: (decision) => single.remember(decision),
    draw: (now) => single.render(limiter.peek(now, 0)),
    reset: () => single.forget(),
  };
  return new LiveMode(session, limiter, view, host);
}

/**
 * What the single limiter predicts of the IETF fields: its one limit, named by its text as
 * the server names a limit given no name, and `r`; not `t`, which the core's policy alone
 * works out (a widget with `headers`, or a policy, runs live-policy.js, which compares it).
 */
function singleIetf(limiter) {
  return {
    quotas: [
      { name: limiter.limit, q: limiter.tokens, w: limiter.windowMs % 1000 === 0 ? limiter.windowMs / 1000 : null },
    ],
    ends: ({ peeks, charge, serverAllowed }) =>
      peeks.map((peeked) => [
        { name: limiter.limit, r: serverAllowed ? Math.max(0, peeked.remaining - charge) : peeked.remaining, t: undefined },
      ]),
    predicted: (decision) => [{ name: limiter.limit, r: decision.remaining, t: undefined }],
  };
}

/**
 * The model's clock: the Unix epoch in ms, as the server's is, so that both place their
 * windows on the same boundaries (multiples of W since the epoch). The reader's clock may
 * still be off from the server's, which shows as disagreements near a boundary.
 */
const epochNow = () => Date.now();

/**
 * Live mode, as the element drives it, over `view`, what draws the model: `remember(decision)`,
 * `draw(now)` (whether it still changes) and `reset()`. `limiter` is the model, which the
 * session charges; `shown(outcome)`, if given, is told of every compared answer.
 */
export class LiveMode {
  #session;
  #limiter;
  #view;
  #host;
  #shown;
  #closed = false;
  hint = "Press Hit to send a real request; the server's answer appears beside the model's.";
  place = "answer";

  constructor(session, limiter, view, host, { element = session.element, shown = null } = {}) {
    this.#session = session;
    this.#limiter = limiter;
    this.#view = view;
    this.#host = host;
    this.#shown = shown;
    this.element = element;
  }

  now() {
    return epochNow();
  }

  /**
   * Sends a press to the server and returns null: once it answers, the model is charged and
   * drawn, both answers announced and the events fired. Nothing it meets is thrown at the page.
   */
  hit(status) {
    const session = this.#session;
    this.#host.busy(true);
    if (session.pending === 0) {
      this.#host.announce([html("span", { class: "hint" }, "Waiting for the server…")]);
    }
    session
      .send(status)
      .then((outcome) => this.#answered(outcome))
      .catch((error) => {
        this.#host.announce([`Live mode failed: ${error?.message ?? error}`]);
      });
    return null;
  }

  #answered(outcome) {
    if (this.#closed || outcome === null) return;
    const session = this.#session;
    if (session.pending === 0) this.#host.busy(false);
    const answer = session.announce(outcome);
    if (!outcome.decision) {
      this.#host.announce(answer);
      return;
    }
    const { decision, server, model, fields, message } = outcome;
    this.#view.remember(decision);
    const extra = this.#shown?.(outcome) ?? {};
    this.#host.decided({
      decisions: (decision.limits ?? [decision]).map((own) => Object.freeze(own)),
      changing: this.draw(epochNow()),
      answer,
      extra: { ...extra, server, mismatches: fields },
      mismatch: fields.length ? Object.freeze({ fields, server, model, message }) : null,
    });
  }

  /** Also drops what is in flight; the server's bucket starts afresh under a new id. */
  reset() {
    this.#limiter.reset();
    this.#view.reset();
    this.#session.reset();
  }

  draw(now) {
    return this.#view.draw(now);
  }

  teardown() {
    this.#closed = true;
    this.#session.close();
    this.#limiter.free();
  }
}

/** `q=2 w=1`: a limit's quota and window as RateLimit-Policy says them. */
function quotaText({ q, w }) {
  return `q=${q ?? "none"} w=${w ?? "none"}`;
}

/** `r=0 t=1`: what a limit has left and when more comes, as RateLimit says them. */
function rateText({ r, t }) {
  return t === undefined ? `r=${r ?? "none"}` : `r=${r ?? "none"} t=${t ?? "none"}`;
}

/**
 * One widget's connection to its server. The element owns the limiter and gives it to the
 * session, which asks it what to predict and charges it as the server's answers come; the
 * element draws the rest of the widget from it as usual.
 */
export class LiveSession {
  #endpoint;
  /** The `client-id` attribute, or null: then a random id, new on every reset. */
  #fixedId;
  #clientId;
  #limiter;
  #esiLimit;
  #pricing;
  /** The widget's `costs` as written, for messages. */
  #costsText;
  #clock;
  /** Presses are sent one after the other; see send. */
  #tail = Promise.resolve();
  #pending = 0;
  /** Bumped by reset and close: an answer to an older request is dropped. */
  #epoch = 0;
  #controller = null;
  #cells = {};
  /** The IETF fields' model: the limits' quotas, and what each limit has left at a press. */
  #ietf;
  /** The IETF rows, made when the server first sends the IETF's fields. */
  #ietfRows = null;
  /**
   * The longest round trip of a press answered since the last reset, in ms. The server
   * counted each earlier request at some moment inside its round trip, the model at one end
   * of it; so a wait that hangs on when an earlier request was counted (the sliding log's
   * oldest entry) may be that much longer or shorter at the server, and Retry-After and the
   * IETF's `t`, whole seconds, may differ by as many seconds as that rounds up to.
   */
  #uncertainMs = 0;
  /**
   * The presses the model was charged for since the last reset, in order: when each
   * request left and its answer came (t0, t1), when the model counted it (t, one of the
   * two), what it reserved and was charged, and how the model answered it (let in or not,
   * and what was left); so that the model can be built again with one of them counted at
   * its answer (#recount).
   */
  #charged = [];
  #body;
  #address;
  element;

  /**
   * `endpoint`: the URL (a URL object) each Hit is sent to; `clientId`: the `client-id`
   * attribute or null; `limiter`, `pricing` ({ cost, table }) and `costsText`: the
   * element's model; `clock`: the time in ms since the Unix epoch, as the server counts it.
   * A model other than the single limiter (live-policy.js's) gives `esiLimit(decision)`,
   * the limit ESI's fields report for a decision, and `ietf`, as singleIetf's.
   */
  constructor({ endpoint, clientId, limiter, pricing, costsText, clock, esiLimit = null, ietf = null }) {
    this.#endpoint = endpoint;
    this.#fixedId = clientId;
    this.#clientId = clientId ?? randomClientId();
    this.#limiter = limiter;
    this.#esiLimit = esiLimit ?? (() => limiter.limit);
    this.#ietf = ietf ?? singleIetf(limiter);
    this.#pricing = pricing;
    this.#costsText = costsText;
    this.#clock = clock;
    watchViolations();
    this.element = this.#build();
  }

  /** The id sent as X-Client-Id: the server's bucket for this widget. */
  get clientId() {
    return this.#clientId;
  }

  /** Requests sent or waiting to be. */
  get pending() {
    return this.#pending;
  }

  /**
   * Sends one request, after those still waiting: one at a time, so that the server meets
   * them in the order pressed and each answer is compared with a model that has seen every
   * earlier one. With a cost table, `status` is the answer asked for (`?status=`, which
   * `trickle serve`'s demo routes honour). Resolves to the outcome, or to null if the
   * widget was reset or rebuilt meanwhile; never rejects.
   */
  send(status) {
    if (this.#pending > MAX_WAITING) {
      return Promise.resolve({
        error: `Still waiting for the server's answers to ${this.#pending} earlier presses: this press was not sent.`,
      });
    }
    this.#pending++;
    const epoch = this.#epoch;
    const result = this.#tail
      .then(() => (epoch === this.#epoch ? this.#exchange(status, epoch) : null))
      .catch((error) => ({ error: `Live mode failed: ${error?.message ?? error}` }))
      .finally(() => this.#pending--);
    this.#tail = result;
    return result.then((outcome) => (epoch === this.#epoch ? outcome : null));
  }

  /**
   * Drops what is in flight and, unless `client-id` fixes it, takes a new id: the server
   * then starts a fresh bucket, as the model does.
   */
  reset() {
    this.#abandon();
    this.#uncertainMs = 0;
    this.#charged = [];
    if (this.#fixedId === null) this.#clientId = randomClientId();
    updateText(this.#address.id, this.#clientId);
    this.#show(null);
  }

  /** Stops for good: the widget was rebuilt or its limiter freed. */
  close() {
    this.#abandon();
    this.#limiter = null;
  }

  #abandon() {
    this.#epoch++;
    this.#controller?.abort();
    this.#controller = null;
  }

  /**
   * What the live region announces for an outcome: the two statuses, then whether they
   * agree, what differs, or what went wrong.
   */
  announce({ server, model, error, message }) {
    const code = (answer) =>
      html(
        "span",
        { class: `code ${answer.status === 429 ? "denied" : "allowed"}` },
        statusLine(answer.status),
      );
    const lines = [];
    if (server) lines.push("Server ", code(server), " · model ", code(model), " ");
    else lines.push(html("span", { class: "code denied" }, "No answer"), " ");
    const text = [error, message].filter(Boolean).join(" ");
    lines.push(html("span", { class: "explanation" }, text));
    return lines;
  }

  /**
   * One request and its comparison. Runs alone: see send. The timeout covers the whole
   * exchange, reading an error's body included, so that no server can hold up the presses
   * waiting behind it.
   */
  async #exchange(requested, epoch) {
    const controller = new AbortController();
    this.#controller = controller;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, TIMEOUT_MS);
    try {
      return await this.#request(requested, epoch, controller.signal, () => timedOut);
    } finally {
      clearTimeout(timer);
    }
  }

  async #request(requested, epoch, signal, timedOut) {
    const url = new URL(this.#endpoint);
    if (requested !== undefined) url.searchParams.set("status", String(requested));
    const before = violations.length;
    const t0 = this.#clock();
    let response;
    try {
      response = await fetch(url, {
        method: "GET",
        mode: "cors",
        credentials: "omit",
        cache: "no-store",
        headers: { [CLIENT_ID]: this.#clientId },
        signal,
      });
    } catch (error) {
      if (epoch !== this.#epoch) return null;
      const text = timedOut()
        ? `${url.origin} did not answer within ${TIMEOUT_MS / 1000} s; nothing was charged in the model.`
        : await this.#diagnose(url, error, before, signal);
      this.#show(null);
      return { error: text };
    }
    const t1 = this.#clock();
    if (epoch !== this.#epoch) {
      response.body?.cancel().catch(() => {});
      return null;
    }
    const { server, raw, problems } = this.#read(response, url, t1 - t0);
    let outcome = this.#judge(server, requested, t0, t1);
    if (outcome.fields.length > 0) outcome = this.#recount(outcome, () => this.#judge(server, requested, t0, t1));
    this.#charged.push(outcome.charged);
    this.#uncertainMs = Math.max(this.#uncertainMs, t1 - t0);
    this.#show(outcome, raw);
    if (problems.length === 0) {
      response.body?.cancel().catch(() => {});
      return { ...outcome, error: null };
    }
    const error = `${problems.join(" ")} ${await this.#said(response)}`.trim();
    let { message } = outcome;
    if (outcome.fields.length === 0) {
      message =
        outcome.compared.length === 1
          ? "The status agrees with the model's; nothing else could be compared."
          : `The server agrees with the model on ${words(outcome.compared)}.`;
    }
    return { ...outcome, message, error };
  }

  /**
   * Why a request failed. The browser says only "Failed to fetch" whether the server is down,
   * refused this page's origin, or the page's own policy stopped the request; the policy's
   * violation event, and one HEAD request sent without CORS (its answer is opaque, but it
   * arrives only if the server is up), tell them apart.
   */
  async #diagnose(url, error, before, signal) {
    if (!(error instanceof TypeError)) {
      return `The request to ${url.origin}${url.pathname} failed: ${error?.message ?? error}.`;
    }
    const blocked = () => violations.slice(before).some((uri) => uri.startsWith(url.origin));
    const policy = `This page's Content-Security-Policy does not allow requests to ${url.origin}: add it to connect-src.`;
    await nextTask();
    if (blocked()) return policy;
    const reached = await fetch(url, {
      method: "HEAD",
      mode: "no-cors",
      credentials: "omit",
      cache: "no-store",
      signal,
    }).then(
      () => true,
      () => false,
    );
    // In case the violation was reported later than the failure: the policy blocks the HEAD too.
    if (!reached && blocked()) return policy;
    let also = "";
    if (globalThis.location?.protocol === "https:" && url.protocol === "http:") {
      also = " An https page cannot call an http endpoint on another host (mixed content).";
    }
    if (!reached && isLocal(url.hostname) && !isLocal(globalThis.location?.hostname ?? "")) {
      also += ` A browser may also keep a page from elsewhere away from ${url.hostname} until the reader allows it (Local Network Access).`;
    }
    if (reached) {
      return (
        `${url.origin} answered, but not to this page's origin (${globalThis.location?.origin}): ` +
        "the server must allow it with Access-Control-Allow-Origin and answer the preflight " +
        `for the X-Client-Id header (CORS).${also}`
      );
    }
    return `${url.origin} could not be reached: is the server running, and is the address right?${also}`;
  }

  /** The server's answer from its status and headers, and what is missing or malformed. */
  #read(response, url, roundTripMs) {
    const header = (name) => response.headers.get(name);
    const raw = {
      limit: header(LIMIT)?.trim() ?? null,
      remaining: header(REMAINING),
      used: header(USED),
      group: header(GROUP),
      retryAfter: header(RETRY_AFTER),
      policy: header(RATELIMIT_POLICY),
      ratelimit: header(RATELIMIT),
    };
    const ietf = readIetf(raw.policy, raw.ratelimit);
    const server = Object.freeze({
      status: response.status,
      limit: raw.limit,
      remaining: wholeHeader(raw.remaining),
      used: wholeHeader(raw.used),
      group: raw.group,
      retryAfter: wholeHeader(raw.retryAfter),
      ietf: ietf.limits && Object.freeze(ietf.limits.map((limit) => Object.freeze(limit))),
      url: url.href,
      clientId: this.#clientId,
      roundTripMs,
    });
    const problems = [...ietf.problems];
    // A server of the IETF's dialect alone sends no X-Ratelimit-*: nothing is missing then.
    const missing = ietf.limits ? [] : REQUIRED.filter((name) => header(name) === null);
    if (missing.length) {
      const plural = missing.length > 1;
      problems.push(
        `The server answered ${statusLine(response.status)} without ${words(missing)} ` +
          `${plural ? "headers" : "header"} (or the IETF's ${RATELIMIT_POLICY} and ${RATELIMIT}) this page can read: it must send ${plural ? "them" : "it"}, ` +
          "and, on another origin, list them with Retry-After in Access-Control-Expose-Headers.",
      );
    }
    for (const [name, text, value] of [
      [REMAINING, raw.remaining, server.remaining],
      [USED, raw.used, server.used],
      [RETRY_AFTER, raw.retryAfter, server.retryAfter],
    ]) {
      if (text !== null && value === null) {
        problems.push(`${name} is ${JSON.stringify(text)}, not a whole number.`);
      }
    }
    return { server, raw, problems };
  }

  /**
   * What the server said went wrong, for a message: an RFC 9457 problem's `detail` (as
   * trickle's layer answers), or a JSON body's `error`; or "".
   */
  async #said(response) {
    if (!/json/i.test(response.headers.get("content-type") ?? "")) {
      response.body?.cancel().catch(() => {});
      return "";
    }
    try {
      const { detail, error } = JSON.parse(await response.text());
      const said = typeof detail === "string" ? detail : error;
      return typeof said === "string" ? `It said: ${said.slice(0, 200)}` : "";
    } catch {
      return "";
    }
  }

  /**
   * The model's answer to the press that `server` answered, and where they differ; charges
   * the model with the server's flow (ESI's, the core's `Limiter.respond`): if the model's
   * reserve fits, the request is settled at what the server's actual answer costs under the
   * widget's costs (a 429 costs nothing); if it does not, nothing.
   *
   * The server decided at some moment between t0, when the request left, and t1, when the
   * answer came back, and the model cannot know which. Near a window boundary, or as a token
   * comes back, the answer can change inside that round trip; so a field agrees when the
   * model gives the server's value at t0, at t1 or (for the numbers, which move one way as
   * time passes with no request) anywhere between. Without this, a press a few milliseconds
   * from a boundary would be flagged as a mismatch that no server could avoid.
   */
  #judge(server, requested, t0, t1) {
    const limiter = this.#limiter;
    const { cost, table } = this.#pricing;
    const ends = [limiter.peek(t0, cost), limiter.peek(t1, cost)];
    const serverAllowed = server.status !== 429;
    let charge = serverAllowed ? cost : 0;
    let unpriced = false;
    if (table && serverAllowed) {
      try {
        charge = table.cost(server.status);
      } catch {
        charge = 0;
        unpriced = true;
      }
    }
    const agreeing = ends.findIndex((end) => end.allowed === serverAllowed);
    const index = agreeing === -1 ? 0 : agreeing;
    const t = index === 0 ? t0 : t1;
    // What the handler answered, as far as the model knows: the server's own answer, or
    // when the server refused, what the press asked for.
    const handled = serverAllowed ? server.status : (requested ?? table?.statuses[0] ?? 200);
    // The IETF fields at both ends, asked before the model is charged.
    const ietfEnds = server.ietf ? this.#ietf.ends({ peeks: ends, t0, t1, cost, charge, serverAllowed }) : null;
    const decision = Object.freeze(answered(limiter.respond(t, cost, charge), handled));
    const charged = Object.freeze({ t, t0, t1, reserve: cost, charge, allowed: decision.allowed, remaining: decision.remaining });
    const model = Object.freeze({
      status: decision.status,
      limit: this.#esiLimit(decision),
      remaining: decision.remaining,
      used: decision.allowed ? decision.cost : 0,
      group: null,
      retryAfter: decision.retryAfter,
      ietf: Object.freeze(this.#ietf.predicted(decision).map((own, index) => Object.freeze({ ...this.#ietf.quotas[index], ...own }))),
    });

    /** The fields compared, and those of them that differ. */
    const compared = ["status"];
    const fields = [];
    const reasons = [];
    if (agreeing === -1) {
      fields.push("status");
      reasons.push(
        serverAllowed
          ? `The server let the request in (${server.status}); the model refuses it (429).`
          : "The server refused the request (429); the model lets it in.",
      );
    }
    if (server.limit !== null) compared.push("limit");
    if (server.limit !== null && server.limit !== model.limit) {
      fields.push("limit");
      reasons.push(`The server's limit is ${server.limit}; the widget's is ${model.limit}.`);
    }
    // Remaining, Used and Retry-After follow from the status: compared only when it agrees.
    if (agreeing !== -1) {
      const left = (peeked) => (serverAllowed ? Math.max(0, peeked.remaining - charge) : peeked.remaining);
      const [early, late] = ends.map(left);
      if (server.remaining !== null) compared.push("remaining");
      if (server.remaining !== null && (server.remaining < early || server.remaining > late)) {
        fields.push("remaining");
        reasons.push(`The server has ${count(server.remaining, "token")} left; the model ${model.remaining}.`);
      }
      const spent = serverAllowed ? charge : 0;
      if (server.used !== null) compared.push("used");
      if (server.used !== null && (unpriced || server.used !== spent)) {
        fields.push("used");
        reasons.push(
          unpriced
            ? `The server charged ${count(server.used, "token")} for ${server.status}; costs="${this.#costsText}" prices no ${server.status}.`
            : `The server charged ${count(server.used, "token")} for ${server.status}; the model ${spent}: are the costs the same?`,
        );
      }
      if (!serverAllowed) {
        // A wait shrinks as time passes: the server's lies between the model's at t1 and at t0.
        const [longest, shortest] = ends.map((peeked) => (peeked.allowed ? 0 : peeked.retryAfter));
        const wait = server.retryAfter;
        compared.push("retry-after");
        const slack = this.#slackSeconds();
        if (wait === null || wait < shortest - slack || wait > longest + slack) {
          fields.push("retry-after");
          reasons.push(
            wait === null
              ? `The server's 429 has no Retry-After; the model says ${model.retryAfter}.`
              : `The server says Retry-After ${wait}; the model ${model.retryAfter}.`,
          );
        }
      }
    }
    if (server.ietf) this.#judgeIetf(server.ietf, agreeing === -1 ? null : ietfEnds, { compared, fields, reasons });
    const message = fields.length
      ? `They differ. ${reasons.join(" ")}`
      : "The server agrees with the model.";
    return { decision, server, model, fields: Object.freeze(fields), compared, message, charged };
  }

  /**
   * A press that differs from the server may differ only because the model counted an
   * earlier press when its request left while the server counted it later in its round
   * trip: across a window boundary, in another window. So each of the last RECOUNTED
   * earlier presses the model counted at departure, newest first, is counted at its answer
   * instead, the model built again from the presses since the reset, and this press judged
   * again (`judge`, which charges it); the first that makes it agree is kept. A count that
   * changes the answer to any earlier press (whether it was let in, and for the presses
   * after the moved one what was left) is not the server's, whose answers were compared
   * already, and is not tried further. Fields that do not hang on when presses were counted
   * (the limit, what a status costs, the IETF quotas) are not recounted. If nothing agrees,
   * the model is built back as it was and `first`, the press's judgement on it, stands.
   */
  #recount(first, judge) {
    if (!first.fields.every((field) => TIMED_FIELDS.has(field) || field.startsWith("ratelimit:"))) return first;
    const limiter = this.#limiter;
    const charged = this.#charged;
    /**
     * Charges every press again, `moved` at its answer; whether each was answered as before:
     * `moved` let in or refused as it was, each later one with the same tokens left too.
     */
    const replay = (moved) => {
      limiter.reset();
      let same = true;
      for (const [index, { t, t1, reserve, charge, allowed, remaining }] of charged.entries()) {
        const again = limiter.respond(index === moved ? t1 : t, reserve, charge);
        same &&= again.allowed === allowed && (index <= moved || again.remaining === remaining);
      }
      return same;
    };
    const oldest = Math.max(0, charged.length - RECOUNTED);
    for (let index = charged.length - 1; index >= oldest; index--) {
      const { t, t0, t1 } = charged[index];
      if (t !== t0 || t1 === t0 || !replay(index)) continue;
      const outcome = judge();
      if (outcome.fields.length === 0) {
        charged[index] = { ...charged[index], t: t1 };
        return outcome;
      }
    }
    replay(-1);
    const { t, reserve, charge } = first.charged;
    limiter.respond(t, reserve, charge);
    return first;
  }

  /** How many whole seconds a wait may differ by, for #uncertainMs. */
  #slackSeconds() {
    return Math.ceil(this.#uncertainMs / 1000);
  }

  /**
   * The IETF fields, limit by limit, by name: `quota:<name>`, the quota and window
   * (RateLimit-Policy's `q` and `w`), always; `ratelimit:<name>`, what is left and when more
   * comes (RateLimit's `r` and `t`), when the status agrees (`ends` not null). As for ESI's,
   * a number agrees anywhere between the model's at the two ends of the round trip; `t`
   * is compared when the model knows it.
   */
  #judgeIetf(sent, ends, { compared, fields, reasons }) {
    const between = (value, values, slack = 0) =>
      value >= Math.min(...values) - slack && value <= Math.max(...values) + slack;
    const quotas = this.#ietf.quotas;
    for (const [index, { name, q, w }] of quotas.entries()) {
      const field = `quota:${name}`;
      const own = sent.find((limit) => limit.name === name);
      compared.push(field);
      if (!own) {
        fields.push(field);
        reasons.push(`The server's RateLimit-Policy has no limit "${name}".`);
        continue;
      }
      if (own.q !== q || own.w !== w) {
        fields.push(field);
        reasons.push(`The server's limit "${name}" is ${quotaText(own)}; the widget's ${quotaText({ q, w })}.`);
      }
      if (!ends) continue;
      const rate = `ratelimit:${name}`;
      const [early, late] = ends.map((end) => end[index]);
      compared.push(rate);
      const tKnown = early.t !== undefined;
      const ts = [early.t, late.t].filter((t) => t !== null);
      const tAgrees =
        !tKnown ||
        (own.t === null ? ts.length < 2 : ts.length > 0 && between(own.t, ts, this.#slackSeconds()));
      if (own.r === null || !between(own.r, [early.r, late.r]) || !tAgrees) {
        fields.push(rate);
        reasons.push(
          `The server's "${name}" has ${rateText(own)}; the model ${rateText(late)}${early.r === late.r && early.t === late.t ? "" : ` to ${rateText(early)}`}.`,
        );
      }
    }
    for (const { name } of sent) {
      if (!quotas.some((quota) => quota.name === name)) {
        fields.push(`quota:${name}`);
        reasons.push(`The server has a limit "${name}" that the widget does not.`);
      }
    }
  }

  /** Fills the table with the last outcome and the headers as sent, or with dashes. */
  #show(outcome, raw) {
    for (const [field] of ROWS) {
      let shown = ["–", "–"];
      let differs = false;
      let compared = false;
      if (outcome) {
        const { server: answer, model: predicted, fields } = outcome;
        differs = fields.includes(field);
        compared = outcome.compared.includes(field);
        shown = {
          status: [statusLine(answer.status), statusLine(predicted.status)],
          limit: [raw.limit ?? "none", predicted.limit],
          remaining: [raw.remaining ?? "none", String(predicted.remaining)],
          used: [raw.used ?? "none", String(predicted.used)],
          group: [raw.group ?? "none", "–"],
          "retry-after": [
            raw.retryAfter ?? (answer.status === 429 ? "none" : "–"),
            predicted.retryAfter === null ? "–" : String(predicted.retryAfter),
          ],
        }[field];
      }
      this.#fill(this.#cells[field], shown, differs, compared);
    }
    if (outcome?.server.ietf && !this.#ietfRows) this.#addIetfRows();
    for (const field of this.#ietfRows ?? []) {
      const [kind, name] = [field.slice(0, field.indexOf(":")), field.slice(field.indexOf(":") + 1)];
      let shown = ["–", "–"];
      if (outcome) {
        const sent = outcome.server.ietf?.find((limit) => limit.name === name);
        const predicted = outcome.model.ietf.find((limit) => limit.name === name);
        const text = kind === "quota" ? quotaText : rateText;
        shown = [sent ? text(sent) : "none", text(predicted)];
      }
      this.#fill(this.#cells[field], shown, outcome?.fields.includes(field), outcome?.compared.includes(field));
    }
  }

  #fill({ server, model, match, row }, shown, differs, compared) {
    updateText(server, shown[0]);
    updateText(model, shown[1]);
    updateText(match, differs ? "differs" : compared ? "same" : "–");
    updateAttribute(match, "part", differs ? "match differs" : "match");
    row.classList.toggle("differs", Boolean(differs));
  }

  /** A row for each limit's quota and each limit's RateLimit, under ESI's rows. */
  #addIetfRows() {
    this.#ietfRows = [];
    for (const { name } of this.#ietf.quotas) {
      for (const [kind, label] of [
        ["quota", RATELIMIT_POLICY],
        ["ratelimit", RATELIMIT],
      ]) {
        const field = `${kind}:${name}`;
        this.#ietfRows.push(field);
        this.#body.append(this.#row(field, [html("code", {}, label), " ", html("code", {}, `"${name}"`)]));
      }
    }
  }

  #row(field, label) {
    const cells = {
      server: html("td", { part: "server" }),
      model: html("td", { part: "model" }),
      match: html("td", { part: "match", class: "match" }),
    };
    cells.row = html(
      "tr",
      { "data-field": field },
      html("th", { scope: "row" }, ...label),
      cells.server,
      cells.model,
      cells.match,
    );
    this.#cells[field] = cells;
    return cells.row;
  }

  #build() {
    const rows = ROWS.map(([field, label]) => this.#row(field, [html("code", {}, label)]));
    this.#body = html("tbody", {}, ...rows);
    const head = html(
      "tr",
      {},
      ...["Field", "Server", "Model", "Same?"].map((label) => html("th", { scope: "col" }, label)),
    );
    this.#address = {
      url: html("code", {}, this.#endpoint.href),
      id: html("code", {}, this.#clientId),
    };
    const table = html(
      "table",
      { class: "live-table" },
      html("caption", {}, "The last press: the server's answer beside the model's"),
      html("thead", {}, head),
      this.#body,
    );
    this.#show(null);
    return html(
      "div",
      { part: "live", class: "live" },
      html(
        "p",
        { part: "endpoint", class: "endpoint" },
        "Each Hit is sent to ",
        this.#address.url,
        ` as ${CLIENT_ID} `,
        this.#address.id,
        ".",
      ),
      table,
    );
  }
}
