// The limit from the API's own OpenAPI document (`openapi` and `route`), so that a docs page
// can never show a limit the server does not enforce: the document is fetched, the route's
// operation found, and its `x-rate-limit` read back as the policy a `limit` attribute would
// write. ESI writes one limit per operation, `{"group": "market", "window-size": "15m",
// "max-tokens": 150}`; `trickle serve` writes that object for one limit and an array of them,
// each with a `name`, for a policy of several (crates/trickle-cli/src/cli/serve/openapi.rs).
// Each entry is `max-tokens/window-size`, written `name=` first when the name is not that
// same text.
//
// Fetched on first use, by a widget with either attribute (element.js), so that a page of
// plain widgets never downloads it. Everything but `fromOpenApi` is pure, and fetching goes
// through the `fetch` it is given, so that openapi.test.js runs in Node without a server.
// Nothing here rejects with anything but an Error whose message says what was wrong and what
// is expected, which the element shows in place of the widget.

import { html } from "./dom.js";

/** How long the document may take before the widget gives up on it. */
export const TIMEOUT_MS = 10_000;

/** The core's `Policy::MAX_LIMITS` and `MAX_NAME_LEN`. */
const MAX_LIMITS = 8;
const MAX_NAME_LEN = 32;

/** The operations of an OpenAPI path item. */
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/** A window's units, as the core reads them. */
const UNITS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

const ROUTE_FORM = 'write a method and a path of the document, as in route="GET /markets/prices"';
const OPENAPI_FORM =
  'write the URL of the API\'s OpenAPI document in JSON, as in openapi="https://api.example.com/openapi.json"';
const EXTENSION_FORM =
  'ESI\'s object {"group": "market", "window-size": "15m", "max-tokens": 150}, or for several limits an array of such objects, each with a "name"';

/** A value as a message quotes it: JSON, cut short. */
function quote(value) {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}

/** What kind of JSON value `value` is, in words, for a message. */
function kind(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return value.length === 0 ? "an empty array" : "an array";
  return { object: "an object", string: "a string", number: "a number", boolean: "a boolean" }[typeof value];
}

/**
 * The `route` attribute, `METHOD /path`: `{ method, path }`, the method in lower case as an
 * OpenAPI path item keys it. Throws unless it is one of OpenAPI's methods and a path.
 */
export function readRoute(text) {
  const match = /^\s*(\S+)\s+(\S+)\s*$/.exec(text);
  if (!match) {
    const alone = text.trim();
    const also = alone.startsWith("/") ? `; for a GET, route="GET ${alone}"` : "";
    throw new Error(`route="${text}" is not a route: ${ROUTE_FORM}${also}`);
  }
  const [, method, path] = match;
  if (!METHODS.includes(method.toLowerCase())) {
    throw new Error(
      `route="${text}": "${method}" is not an HTTP method an OpenAPI document describes; use one of ${METHODS.join(", ").toUpperCase()}, as in route="GET ${path}"`,
    );
  }
  if (!path.startsWith("/") || /[?#]/.test(path)) {
    throw new Error(
      `route="${text}": "${path}" is not a path of the document: start it with / and leave out any ?query, as in route="${method} /markets/prices"`,
    );
  }
  return { method: method.toLowerCase(), path };
}

/**
 * The `openapi` attribute as a URL against the page's `base`: http or https, since the widget
 * fetches it.
 */
export function readDocumentUrl(text, base) {
  let url;
  try {
    url = text.trim() === "" ? null : new URL(text.trim(), base);
  } catch {
    url = null;
  }
  if (url === null || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw new Error(`openapi="${text}" is not a URL the widget can fetch: ${OPENAPI_FORM}`);
  }
  url.hash = "";
  return url;
}

/**
 * The body of the document at `url` as an OpenAPI document: JSON whose `paths` is an object.
 * Throws, saying what it is instead, when it is not.
 */
export function readDocument(text, url) {
  let document;
  try {
    document = JSON.parse(text);
  } catch (error) {
    const start = text.trimStart();
    let what = `not JSON (${error.message})`;
    if (start === "") what = "empty";
    else if (start.startsWith("<")) what = "HTML, not JSON";
    else if (/^(openapi|swagger)\s*:/m.test(start)) what = "YAML; the widget reads JSON";
    throw new Error(`The OpenAPI document at ${url} is ${what}: ${OPENAPI_FORM}, such as trickle serve's /openapi.json`);
  }
  const paths = document?.paths;
  if (typeof paths !== "object" || paths === null || Array.isArray(paths)) {
    throw new Error(
      `${url} is JSON but not an OpenAPI document: it has no "paths" object (it is ${kind(document)}${
        typeof document === "object" && document !== null && !Array.isArray(document)
          ? ` with ${Object.keys(document).slice(0, 4).map(quote).join(", ") || "no members"}`
          : ""
      }). ${OPENAPI_FORM}`,
    );
  }
  return document;
}

/** Whether `path` is one of the paths `template` describes: each `{parameter}` one segment. */
function matchesTemplate(template, path) {
  const pattern = template
    .split(/(\{[^/{}]+\})/)
    .map((part, index) => (index % 2 ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("");
  return new RegExp(`^${pattern}$`).test(path);
}

/**
 * The operation `route` names in `document`: `{ operation, template }`, the path as the
 * document writes it. A path is found as written, else as one of the document's templates
 * (`/markets/10000002/orders` under `/markets/{region_id}/orders`). Throws, naming the paths
 * or methods there are, when there is none.
 */
export function findOperation(document, { method, path }, url) {
  const paths = Object.keys(document.paths);
  const template = paths.includes(path) ? path : paths.find((each) => matchesTemplate(each, path));
  if (template === undefined) {
    // ESI's older documents end every path with a slash; a route written without one is
    // the likeliest miss.
    const other = path.endsWith("/") ? path.slice(0, -1) : `${path}/`;
    const near = paths.find((each) => each === other || matchesTemplate(each, other));
    const listed = paths.slice(0, 6).join(", ");
    const hint = near
      ? `did you mean ${near}?`
      : paths.length === 0
        ? "it lists no paths at all"
        : `its paths are ${listed}${paths.length > 6 ? `, … (${paths.length} in all)` : ""}`;
    throw new Error(`The OpenAPI document at ${url} has no path ${path}: ${hint}`);
  }
  const item = document.paths[template];
  const operation = item?.[method];
  if (typeof operation !== "object" || operation === null) {
    const methods = METHODS.filter((name) => typeof item?.[name] === "object" && item[name] !== null);
    const has = methods.length
      ? `it has ${methods.map((name) => name.toUpperCase()).join(", ")}`
      : "it has no operation at all";
    throw new Error(
      `The OpenAPI document at ${url} has no ${method.toUpperCase()} operation on ${template}: ${has}`,
    );
  }
  return { operation, template };
}

/** Whether `name` is one the core takes for a limit: a-z, 0-9, `_`, `-`, `.`, from a letter. */
function isName(name) {
  return name.length <= MAX_NAME_LEN && /^[a-z][a-z0-9_.-]*$/.test(name);
}

/**
 * An `x-rate-limit` value as a policy written the way the `limit` attribute takes it:
 * `{ policy, group }`. `where` names the operation for messages ("GET /pair in …"). Throws,
 * naming the entry and member, for anything the core could not run exactly.
 */
export function readRateLimit(extension, where) {
  if (extension === undefined) {
    throw new Error(
      `${where} has no x-rate-limit: the document does not say this route's limit. A server announces it on the operation as ${EXTENSION_FORM}; or write the limit in limit, without openapi and route`,
    );
  }
  const several = Array.isArray(extension);
  const entries = several ? extension : [extension];
  if (entries.length === 0 || entries.length > MAX_LIMITS || entries.some((entry) => kind(entry) !== "an object")) {
    const shape =
      entries.length > MAX_LIMITS
        ? `an array of ${entries.length} limits, more than the ${MAX_LIMITS} a policy may hold`
        : `${kind(extension)}${several || extension === null ? "" : ` (${quote(extension)})`}${
            several && entries.length ? ` holding ${kind(entries.find((entry) => kind(entry) !== "an object"))}` : ""
          }`;
    throw new Error(`${where}: x-rate-limit is ${shape}; expected ${EXTENSION_FORM}`);
  }
  const written = [];
  const names = new Set();
  for (const [index, entry] of entries.entries()) {
    const which = several ? `x-rate-limit[${index}]` : "x-rate-limit";
    const tokens = entry["max-tokens"];
    if (!Number.isSafeInteger(tokens) || tokens < 1) {
      throw new Error(
        `${where}: ${which}'s max-tokens is ${tokens === undefined ? "missing" : quote(tokens)}; expected a whole number of tokens from 1 to ${Number.MAX_SAFE_INTEGER}, as in "max-tokens": 150`,
      );
    }
    const window = entry["window-size"];
    const [, amount, unit] = /^(\d+)(ms|s|m|h)$/.exec(typeof window === "string" ? window : "") ?? [];
    const windowMs = Number(amount) * UNITS[unit];
    if (!(windowMs >= 1 && Number.isSafeInteger(windowMs))) {
      throw new Error(
        `${where}: ${which}'s window-size is ${window === undefined ? "missing" : quote(window)}; expected a window as a limit writes it, a whole number from 1 and ms, s, m or h, as in "window-size": "15m"`,
      );
    }
    const limit = `${tokens}/${window}`;
    const name = entry.name ?? limit;
    if (typeof name !== "string" || (name !== limit && !isName(name))) {
      throw new Error(
        `${where}: ${which}'s name is ${quote(name)}; expected the limit's own text (${limit}) or a name of a-z, 0-9, _, - and ., starting with a letter, at most ${MAX_NAME_LEN} characters`,
      );
    }
    if (names.has(name)) {
      throw new Error(`${where}: x-rate-limit has two limits named "${name}"; each limit of a policy needs a name of its own`);
    }
    names.add(name);
    written.push(name === limit ? limit : `${name}=${limit}`);
  }
  const group = entries.map((entry) => entry.group).find((value) => typeof value === "string") ?? null;
  return { policy: written.join(" "), group };
}

/**
 * Each limit of a policy written as the `limit` attribute takes it, as `[tokens, windowMs]`
 * sorted, names left out; null when the text is not one the widget could run.
 */
function limitsOf(text) {
  const limits = [];
  for (const part of text.split(/[\s,]+/).filter(Boolean)) {
    const match = /^(?:[^=]+=)?(\d+)\/(\d+)(ms|s|m|h)$/.exec(part);
    if (!match) return null;
    limits.push([Number(match[1]), Number(match[2]) * UNITS[match[3]]]);
  }
  return limits.length ? limits.sort(([a, x], [b, y]) => a - b || x - y) : null;
}

/**
 * Whether two policies enforce the same limits: the same tokens per the same windows (`6/8s`
 * and `6/8000ms` alike), whatever their names and order.
 */
export function samePolicy(a, b) {
  const [left, right] = [limitsOf(a), limitsOf(b)];
  return left !== null && right !== null && JSON.stringify(left) === JSON.stringify(right);
}

/**
 * The body at `url`, through `fetch`, within TIMEOUT_MS. A request that fails is told apart,
 * as far as a page can tell: a server that answered but not to this origin (CORS), from one
 * that could not be reached.
 */
async function download(url, fetch) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), TIMEOUT_MS);
  try {
    let response;
    try {
      response = await fetch(url, { mode: "cors", credentials: "omit", signal: controller.signal });
    } catch (error) {
      if (controller.signal.aborted) {
        throw new Error(`The OpenAPI document at ${url} did not come within ${TIMEOUT_MS / 1000} s: is the server up?`);
      }
      // The answer to a request sent without CORS is opaque, but it comes only if the server is up.
      const reached = await fetch(url, { mode: "no-cors", credentials: "omit", signal: controller.signal }).then(
        () => true,
        () => false,
      );
      const origin = globalThis.location?.origin;
      throw new Error(
        reached
          ? `${url.origin} answered, but not to this page's origin${origin ? ` (${origin})` : ""}: the server must allow it with Access-Control-Allow-Origin (CORS) for the widget to read the OpenAPI document at ${url}`
          : `The OpenAPI document at ${url} could not be fetched (${error?.message ?? error}): is the server running and the address right, and does this page's Content-Security-Policy allow it in connect-src?`,
      );
    }
    if (!response.ok) {
      response.body?.cancel().catch(() => {});
      throw new Error(
        `The OpenAPI document at ${url} could not be read: the server answered ${response.status}${
          response.statusText ? ` ${response.statusText}` : ""
        }. ${OPENAPI_FORM}`,
      );
    }
    return await response.text();
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Each document once for the page, by URL: the promise of its parsed JSON. A failure is
 * dropped, so that the next widget, or the next change of attribute, tries again.
 */
const documents = new Map();

function documentAt(url, fetch) {
  const key = url.href;
  if (!documents.has(key)) {
    const reading = download(url, fetch).then((text) => readDocument(text, url));
    reading.catch(() => documents.delete(key));
    documents.set(key, reading);
  }
  return documents.get(key);
}

/**
 * The limit a widget's `openapi` and `route` say, and how it stands beside its `limit`
 * attribute (null when absent): `{ limit, group, route, url, differs }`, `route` as the
 * document writes it (`GET /markets/{region_id}/orders`). Rejects with an Error whose message
 * is for the reader of the page: a missing attribute, a document that cannot be fetched or
 * read, a route it does not have, an `x-rate-limit` that is not a limit.
 */
export async function readSpec({ openapi, route, limit = null, base, fetch = globalThis.fetch }) {
  if (openapi === null) {
    throw new Error(
      `route="${route}" needs openapi, the URL of the API's OpenAPI document: ${OPENAPI_FORM}; or leave route out and write the limit in limit`,
    );
  }
  const url = readDocumentUrl(openapi, base);
  if (route === null) {
    throw new Error(`openapi="${openapi}" needs route, the operation whose limit to show: ${ROUTE_FORM}`);
  }
  const wanted = readRoute(route);
  const document = await documentAt(url, fetch);
  const { operation, template } = findOperation(document, wanted, url);
  const named = `${wanted.method.toUpperCase()} ${template}`;
  const { policy, group } = readRateLimit(operation["x-rate-limit"], `${named} in ${url}`);
  return { limit: policy, group, route: named, url, differs: limit !== null && !samePolicy(limit, policy) };
}

/**
 * What element.js asks of this module for `element`, from its `openapi`, `route` and `limit`:
 * `{ limit, element, detail }`, the limit to run in place of `limit`, the line under the
 * heading that says where it came from (and, when `limit` gives other limits, that they
 * differ), and the same said for a message shown in place of the widget.
 */
export async function fromOpenApi(element) {
  const [openapi, route, limit] = ["openapi", "route", "limit"].map((name) => element.getAttribute(name));
  const spec = await readSpec({ openapi, route, limit, base: element.ownerDocument.baseURI });
  const link = html("a", { href: spec.url.href }, "OpenAPI document");
  const group = spec.group === null ? "" : ` (group ${spec.group})`;
  // A line of the heading: a paragraph may not hold another.
  const line = spec.differs
    ? html(
        "span",
        { part: "source differs", class: "footnote" },
        html("br"),
        html("span", { class: "code denied" }, "Differs:"),
        ` limit="${limit}" is not what the API's `,
        link,
        ` says for ${spec.route}${group}, ${spec.limit}: this widget shows the document's.`,
      )
    : html(
        "span",
        { part: "source", class: "footnote" },
        html("br"),
        `The limit of ${spec.route}${group}, from the API's `,
        link,
        ".",
      );
  return {
    limit: spec.limit,
    element: line,
    detail: `The limit ${spec.limit} is ${spec.route}'s x-rate-limit in the OpenAPI document at ${spec.url}.`,
  };
}
