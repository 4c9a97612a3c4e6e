/**
 * The rate-limiter core on its own, for pages and tools that want its exact decisions without
 * the element: the package's "./limiter" entry.
 *
 *   import { load, Limiter } from "rate-limit-demo/limiter";
 *   await load();
 *   const limiter = new Limiter({ limit: "6/8s", algorithm: "floating" });
 *   limiter.hit(0).allowed;        // time first, in ms, as the Rust core takes it; cost 1
 *   limiter.hit(2_500, 2).used;    // then the cost
 *   limiter.respond(3_000, 1, 5);  // reserve 1, then settle at what the answer cost: 5
 *
 * The decisions are the Rust core's, made in WebAssembly in exact integer arithmetic. This
 * module checks what JavaScript passes (a time or cost of "2", null or a BigInt is refused,
 * not coerced) and builds the decision object; the WebAssembly sees only numbers.
 */

import * as core from "../pkg/trickle.js";
import { DECISION_FIELDS, RESERVED, readDecision } from "./decision.js";

/** Beside this module in the package, and wherever a bundler copies it. */
const WASM_URL = new URL("./trickle_bg.wasm", import.meta.url);

/**
 * What a limiter calls of a module's glue, the default module's here and the other's in
 * algorithms-glue.js, named one by one: passing the glue's namespace around would keep all of
 * it in the bundle, its own loader included.
 */
const floatingCalls = {
  initSync: core.initSync,
  decision_buffer: core.decision_buffer,
  error: core.error,
  limiter_new: core.limiter_new,
  limiter_free: core.limiter_free,
  limiter_hit: core.limiter_hit,
  limiter_peek: core.limiter_peek,
  limiter_record: core.limiter_record,
  limiter_respond: core.limiter_respond,
  limiter_reset: core.limiter_reset,
  limiter_limit: core.limiter_limit,
  limiter_tokens: core.limiter_tokens,
  limiter_window_ms: core.limiter_window_ms,
};

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const OPTIONS_FORM = 'pass { limit: "6/8s", algorithm: "floating" }';

let loading = null;
let loadingFloating = null;
let loadingAlgorithms = null;
/**
 * Each module once loaded, `{ glue, wasm, fields }`: its wasm-bindgen glue, its instance's
 * exports and the view of its decision buffer. `floating` is the default module's, `all`
 * that of all four algorithms, once a page has asked for another algorithm.
 */
let floating = null;
let all = null;
let algorithmNames = null;

/**
 * Loads the WebAssembly once for the whole page, both modules: every algorithm works once it
 * resolves; every call returns the same promise. `source` is where to get the default module
 * (the floating window's): a URL, a Response (or its promise), bytes or a compiled
 * WebAssembly.Module. By default the file beside this module, read from disk under Node; the
 * module of the other three algorithms always comes from beside this module. Rejects with an
 * Error that says what went wrong: the file missing, not WebAssembly, or refused by the
 * page's Content-Security-Policy.
 */
export function load(source) {
  loading ??= loadFloating(source).then(() => loadAlgorithms());
  return loading;
}

/**
 * Loads the default module alone, enough for limiters running the floating window (the
 * element's default, which loads the other module only for a widget that asks for another
 * algorithm); `source` as `load`'s. Every call returns the same promise.
 */
export function loadFloating(source) {
  loadingFloating ??= instantiate(source ?? defaultSource(WASM_URL), floatingCalls).then((loaded) => {
    floating = loaded;
    algorithmNames = Object.freeze(core.algorithms().split(" "));
  });
  return loadingFloating;
}

/**
 * Loads the module that runs the sliding log, the fixed window and the token bucket too
 * (trickle_algorithms_bg.wasm, beside this module, with its glue in algorithms-glue.js),
 * once for the page; a failure is not kept, so that the next widget tries again.
 */
export function loadAlgorithms() {
  loadingAlgorithms ??= import("./algorithms-glue.js")
    .then(({ WASM_URL: url, calls }) => instantiate(defaultSource(url), calls))
    .then(
      (loaded) => {
        all = loaded;
      },
      (error) => {
        loadingAlgorithms = null;
        throw error;
      },
    );
  return loadingAlgorithms;
}

/** Whether limiters of `algorithm` can be made now, without loading another module. */
export function canRun(algorithm) {
  return all !== null || (floating !== null && algorithm === algorithmNames[0]);
}

/** Whether a `CostTable` can be made now: cost tables are in the module of all four. */
export function canPrice() {
  return all !== null;
}

function defaultSource(url) {
  if (url.protocol === "file:") {
    // Node has no fetch for files. getBuiltinModule, unlike an import of "node:fs", leaves
    // nothing for a browser bundler to resolve.
    const fs = globalThis.process?.getBuiltinModule?.("node:fs");
    if (fs) return fs.readFileSync(url);
  }
  return fetch(url);
}

/**
 * Compiles the module here and hands it to the glue's `initSync`, which instantiates it: the
 * glue's own loader (streaming with a fallback, and its warnings) would be most of the glue
 * every page downloads, for a module this small.
 */
async function instantiate(source, glue) {
  let input = await source;
  if (typeof input === "string" || input instanceof URL) input = await fetch(input);
  if (input instanceof Response && !input.ok) {
    throw new Error(`${urlOf(input)} could not be loaded: the server answered ${input.status}`);
  }
  try {
    const bytes = input instanceof Response ? await input.arrayBuffer() : input;
    const module = bytes instanceof WebAssembly.Module ? bytes : await WebAssembly.compile(bytes);
    return { glue, wasm: glue.initSync({ module }), fields: new Float64Array(0) };
  } catch (error) {
    if (!(error instanceof WebAssembly.CompileError)) throw error;
    if (!wasmAllowed()) {
      throw new Error(
        "the page's Content-Security-Policy does not allow WebAssembly: add 'wasm-unsafe-eval' to its script-src",
      );
    }
    // The browser names the bytes it expected, not the file or what came instead.
    const type = input instanceof Response ? input.headers.get("content-type") : null;
    const sent = type === null ? "" : ` (the server sent ${type || "no content type"})`;
    throw new Error(`${urlOf(input)} is not a WebAssembly module${sent}: ${error.message}`);
  }
}

function urlOf(input) {
  return input instanceof Response ? new URL(input.url || WASM_URL).pathname : "the module";
}

/** The smallest valid module: it fails to compile only where the page forbids WebAssembly. */
const EMPTY_MODULE = new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);

function wasmAllowed() {
  try {
    new WebAssembly.Module(EMPTY_MODULE);
    return true;
  } catch {
    return false;
  }
}

function loaded(what) {
  if (!floating) throw new Error(`${what} needs the WebAssembly: call \`await load()\` first`);
}

/** What a caller passed, for error messages: `1.5`, `NaN`, `the string "2"`, `an array`. */
function describe(value) {
  if (typeof value === "number") return String(value);
  if (typeof value === "string") return `the string ${JSON.stringify(value)}`;
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return "an array";
  const kind = typeof value;
  return `${/^[aeiou]/.test(kind) ? "an" : "a"} ${kind}`;
}

/** A whole, non-negative JS number a double holds exactly, for costs and statuses. */
function whole(what, value) {
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) return value;
  throw new Error(`${what} must be a whole number from 0 to ${MAX_SAFE}, got ${describe(value)}`);
}

/**
 * The caller's time in ms. Fractions (as `performance.now()` gives) are dropped by the core,
 * which counts whole milliseconds.
 */
function time(now) {
  // NaN fails both comparisons.
  if (typeof now === "number" && now >= 0 && now <= MAX_SAFE) return now;
  throw new Error(
    `now must be a time in milliseconds from 0 to ${MAX_SAFE}, got ${describe(now)}`,
  );
}

/**
 * The decision the core just wrote to its buffer, as a plain object. The view is made again
 * only when the WebAssembly memory has grown, which detaches the old one.
 */
function decision(module, outcome, algorithm) {
  if (module.fields.length === 0) {
    const { glue, wasm } = module;
    module.fields = new Float64Array(wasm.memory.buffer, glue.decision_buffer(), DECISION_FIELDS);
  }
  return readDecision(module.fields, outcome, algorithm);
}

/** Reads `{ limit, algorithm }`, refusing anything else so that a typo is not ignored. */
function readOptions(options) {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new Error(`Limiter options must be an object, got ${describe(options)}; ${OPTIONS_FORM}`);
  }
  for (const key of Object.keys(options)) {
    if (key !== "limit" && key !== "algorithm") {
      throw new Error(
        `Limiter options: unknown option ${JSON.stringify(key)}; the options are limit and algorithm`,
      );
    }
  }
  const { limit, algorithm = algorithmNames[0] } = options;
  if (limit === undefined) throw new Error(`Limiter options: limit is missing; ${OPTIONS_FORM}`);
  for (const [key, value] of [
    ["limit", limit],
    ["algorithm", algorithm],
  ]) {
    if (typeof value !== "string") {
      throw new Error(
        `Limiter options: ${key} must be a string, got ${describe(value)}; ${OPTIONS_FORM}`,
      );
    }
  }
  return { limit, algorithm };
}

/**
 * The core's objects cross as handles (see crates/trickle-wasm/src/lib.rs), each kept in one
 * private field: a limiter or table the page drops without `free()` is freed when the
 * garbage collector takes it.
 */
const limiters = new FinalizationRegistry(([glue, handle]) => glue.limiter_free(handle));
const tables = new FinalizationRegistry((handle) => all.glue.cost_table_free(handle));

/** `handle`, or the core's message for the refusal it stands for (0). */
function made(handle, glue = floatingCalls) {
  if (handle === 0) throw new Error(glue.error());
  return handle;
}

/**
 * One rate-limited bucket running one of the core's algorithms. Every method takes the time
 * first, in ms, then the cost, as the Rust core does; a left-out cost is 1.
 */
export class Limiter {
  /** The core's limiter; 0 once freed. */
  #raw;
  /** The module it lives in (see `floating`), and that module's glue. */
  #module;
  #core;
  #algorithm;

  /** The core's algorithm names, the default first. Needs `load()`. */
  static get algorithms() {
    loaded("Limiter.algorithms");
    return algorithmNames;
  }

  /** `new Limiter({ limit: "6/8s", algorithm: "floating" })`; `algorithm` may be left out. */
  constructor(options) {
    loaded("new Limiter()");
    const { limit, algorithm } = readOptions(options);
    // The default module runs the floating window; it still names a bad limit or an unknown
    // algorithm first, as the other would.
    const other = algorithm !== algorithmNames[0] && algorithmNames.includes(algorithm);
    if (other && !all) {
      core.limiter_free(made(core.limiter_new(limit, algorithmNames[0])));
      throw new Error(
        `new Limiter() with the ${algorithm} algorithm needs its WebAssembly: call \`await load()\` (or \`await loadAlgorithms()\`) first`,
      );
    }
    this.#module = other ? all : floating;
    this.#core = this.#module.glue;
    this.#raw = made(this.#core.limiter_new(limit, algorithm), this.#core);
    limiters.register(this, [this.#core, this.#raw], this);
    // The core takes a name only as it writes it.
    this.#algorithm = algorithm;
  }

  /** Spends `cost` tokens at `now` if they fit, and says what happened. */
  hit(now, cost = 1) {
    const at = time(now);
    return decision(this.#module, this.#core.limiter_hit(this.#live, at, whole("cost", cost)), this.#algorithm);
  }

  /** What `hit` would answer, spending nothing. `peek(now, 0)` shows what is in use. */
  peek(now, cost = 1) {
    const at = time(now);
    return decision(this.#module, this.#core.limiter_peek(this.#live, at, whole("cost", cost)), this.#algorithm);
  }

  /**
   * Charges `cost` tokens whether or not they fit, as a server does once it knows what a
   * response cost (ESI charges by status after answering).
   */
  record(now, cost) {
    const at = time(now);
    return decision(this.#module, this.#core.limiter_record(this.#live, at, whole("cost", cost)), this.#algorithm);
  }

  /**
   * One request to a server that prices its answer (ESI's flow, the core's): before
   * answering it reserves `reserve` tokens, spent at once if they fit; once answered it is
   * settled at `cost`, the answer's price, the difference charged (even past the limit) or
   * refunded. A request the reserve does not fit is a 429 that costs nothing. The decision
   * is the settle's, or the refusal's with a cost of 0, plus `reserved`: what the request
   * held before it was priced, 0 when refused.
   */
  respond(now, reserve, cost) {
    const at = time(now);
    const held = whole("reserve", reserve);
    const settled = decision(
      this.#module,
      this.#core.limiter_respond(this.#live, at, held, whole("cost", cost)),
      this.#algorithm,
    );
    settled.reserved = this.#module.fields[RESERVED];
    return settled;
  }

  /** Forgets everything spent. */
  reset() {
    this.#core.limiter_reset(this.#live);
  }

  /** The limit as the core writes it, e.g. "6/8s". */
  get limit() {
    return this.#core.limiter_limit(this.#live);
  }

  /** N, the tokens one window holds. */
  get tokens() {
    return this.#core.limiter_tokens(this.#live);
  }

  /** W, the window's length in ms. */
  get windowMs() {
    return this.#core.limiter_window_ms(this.#live);
  }

  get algorithm() {
    return this.#algorithm;
  }

  /**
   * Releases the WebAssembly memory now rather than when the garbage collector gets to it.
   * Freeing twice does nothing; using a freed limiter throws.
   */
  free() {
    if (this.#raw === 0) return;
    limiters.unregister(this);
    this.#core.limiter_free(this.#raw);
    this.#raw = 0;
  }

  get #live() {
    if (this.#raw === 0) throw new Error(`this Limiter (${this.#algorithm}) was freed`);
    return this.#raw;
  }
}

/**
 * What each response costs, by HTTP status: ESI's preset ("esi": 2XX 2, 3XX 1, 4XX 5 but a
 * 429 nothing, 5XX 0), or a table such as "200:2 304:1 4xx:5 429:0 5xx:0", where an exact
 * status wins over its class.
 */
export class CostTable {
  #raw;
  #statuses;

  constructor(text) {
    loaded("new CostTable()");
    if (typeof text !== "string") {
      throw new Error(
        `a cost table must be a string such as "esi" or "200:2 304:1 4xx:5 429:0 5xx:0", got ${describe(text)}`,
      );
    }
    if (!all) {
      throw new Error("new CostTable() needs its WebAssembly: call `await load()` (or `await loadAlgorithms()`) first");
    }
    this.#raw = made(all.glue.cost_table_new(text), all.glue);
    tables.register(this, this.#raw, this);
    const statuses = all.glue.cost_table_statuses(this.#raw);
    this.#statuses = Object.freeze(statuses === "" ? [] : statuses.split(" ").map(Number));
  }

  /**
   * One status per entry to offer as an answer, in the table's order; never 429, which only
   * the limiter answers. Empty for a table that prices only 429.
   */
  get statuses() {
    return this.#statuses;
  }

  /** Tokens a response with `status` costs; throws for a status the table does not price. */
  cost(status) {
    if (this.#raw === 0) throw new Error("this CostTable was freed");
    const cost = all.glue.cost_table_cost(this.#raw, whole("status", status));
    // -1 is the core's "no price": the message says which statuses the table prices.
    if (cost < 0) throw new Error(all.glue.error());
    return cost;
  }

  /** Releases the WebAssembly memory now; freeing twice does nothing. */
  free() {
    if (this.#raw === 0) return;
    tables.unregister(this);
    all.glue.cost_table_free(this.#raw);
    this.#raw = 0;
  }
}
